use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use linerate_port::{Port, QueueConfig, TxQueue};
use linerate_stream::Plan;

use crate::EngineError;
use crate::counters::{Counters, Slots, Snapshot};
use crate::report::{PacingStats, Report, WorkerReport};
use crate::worker::{CountersHandle, Pace, fill_slots, transmit};

/// Slots a queue gets at least: enough for a 2048-entry ring with as many in flight again.
const MIN_SLOTS: u32 = 4096;

/// Where one worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerSpec {
    /// Core to pin to; None leaves the thread to the scheduler.
    pub core: Option<usize>,
    pub queue: u32,
}

/// How to run a plan.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub workers: Vec<WorkerSpec>,
    pub batch: u32,
    pub duration: Option<Duration>,
    /// Caps the plan's own count.
    pub count: Option<u64>,
    /// Raised by Ctrl-C/SIGTERM: workers stop, drain, and the report is still made.
    pub stop: Arc<AtomicBool>,
    /// How often the observer hears about progress.
    pub tick: Duration,
}

/// Hears about a run while it goes (the live status line).
pub trait Observer: Sync {
    fn tick(&self, snapshot: &Snapshot);
}

impl Observer for () {
    fn tick(&self, _: &Snapshot) {}
}

/// Slot count for a worker whose cycle has `period` frames: the smallest multiple of the
/// period that is at least `MIN_SLOTS`, so every slot keeps its frame lap after lap.
pub fn slots_for(period: usize) -> u32 {
    let period = period.max(1) as u32;
    MIN_SLOTS.div_ceil(period) * period
}

/// Opens one queue per worker (all before any frame is sent, so a busy or missing queue fails
/// the run cleanly), fills their slots, starts the workers together and waits for them.
pub fn run(
    port: &dyn Port,
    plan: &Plan,
    config: &RunConfig,
    observer: &dyn Observer,
) -> Result<Report, EngineError> {
    let workers = config.workers.len();
    if workers == 0 {
        return Err(EngineError::NoWorkers);
    }
    let available = core_affinity::get_core_ids().map_or(0, |c| c.len());
    for w in &config.workers {
        if let Some(core) = w.core
            && core >= available
        {
            return Err(EngineError::Pin { core, available });
        }
    }
    let slot_size = (plan.max_len() as u32).next_power_of_two().max(2048);
    let mut queues = Vec::with_capacity(workers);
    let mut plans = Vec::with_capacity(workers);
    for (i, w) in config.workers.iter().enumerate() {
        let wp = plan.for_worker(i, workers, config.count);
        let queue = port.open_queue(&QueueConfig {
            queue_id: w.queue,
            slots: slots_for(wp.frames.len()),
            slot_size,
            batch: config.batch,
        })?;
        if (queue.slot_size() as usize) < plan.max_len() {
            return Err(EngineError::SlotTooSmall {
                len: plan.max_len(),
                slot_size: queue.slot_size(),
                queue: w.queue,
            });
        }
        queues.push(queue);
        plans.push(wp);
    }

    let counters: Slots = (0..workers)
        .map(|_| CachePadded::new(Counters::default()))
        .collect();
    let halt = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    let barrier = Barrier::new(workers + 1);
    let info = port.info();
    // Every worker counts its schedule from one instant, taken once all slots are filled.
    let epoch = std::sync::OnceLock::new();

    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(workers);
        for (i, (mut queue, wp)) in queues.into_iter().zip(&plans).enumerate() {
            let spec = config.workers[i];
            let (counters, halt, finished, barrier, epoch) =
                (&counters[i], &halt, &finished, &barrier, &epoch);
            handles.push(scope.spawn(move || {
                if let Some(core) = spec.core {
                    core_affinity::set_for_current(core_affinity::CoreId { id: core });
                }
                fill_slots(&mut queue, wp);
                barrier.wait();
                let pace = plan.pacing.as_ref().map(|pacing| Pace {
                    pacing,
                    epoch: *epoch.get_or_init(Instant::now),
                });
                let result = transmit(
                    &mut queue,
                    wp,
                    config.batch,
                    halt,
                    Some(&CountersHandle(counters)),
                    pace,
                );
                finished.fetch_add(1, Ordering::Release);
                result.map(|totals| WorkerReport {
                    pacing: PacingStats::of(&totals),
                    worker: i,
                    core: spec.core,
                    queue: spec.queue,
                    mode: queue.mode(),
                    submitted: totals.submitted,
                    completed: totals.completed,
                    bytes: totals.bytes,
                    elapsed_s: totals.elapsed.as_secs_f64(),
                    stats: queue
                        .stats()
                        .extra
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect(),
                })
            }));
        }
        barrier.wait();
        supervise(config, &counters, &halt, &finished, workers, observer);
        let mut reports = Vec::with_capacity(workers);
        for (i, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(r) => reports.push(r?),
                Err(_) => return Err(EngineError::WorkerPanicked(i)),
            }
        }
        let mut report = Report::new(info.backend, &info.name, reports);
        report.requested_pps = plan.pacing.as_ref().map(|p| p.pps());
        Ok(report)
    })
}

/// The run thread's job while workers send: stop them at the deadline or on request, and tell
/// the observer how it goes once per tick.
fn supervise(
    config: &RunConfig,
    counters: &Slots,
    halt: &AtomicBool,
    finished: &AtomicUsize,
    workers: usize,
    observer: &dyn Observer,
) {
    let start = Instant::now();
    let deadline = config.duration.map(|d| start + d);
    let mut last = Snapshot::default();
    let mut next_tick = start + config.tick;
    // Short naps keep the deadline and Ctrl-C sharp without stealing a worker's core.
    let nap = Duration::from_millis(2);
    while finished.load(Ordering::Acquire) < workers {
        let now = Instant::now();
        if config.stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d) {
            halt.store(true, Ordering::Relaxed);
        }
        if now >= next_tick {
            let (frames, bytes) = counters
                .iter()
                .map(|c| c.read())
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
            let snap = Snapshot {
                elapsed: now - start,
                frames,
                bytes,
                interval: (now - start) - last.elapsed,
                interval_frames: frames - last.frames,
                interval_bytes: bytes - last.bytes,
            };
            observer.tick(&snap);
            last = snap;
            next_tick += config.tick;
        }
        std::thread::sleep(nap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_port::NullPort;
    use linerate_stream::{Limits, StreamSpec};

    fn config(workers: usize, count: Option<u64>) -> RunConfig {
        RunConfig {
            workers: (0..workers)
                .map(|q| WorkerSpec {
                    core: None,
                    queue: q as u32,
                })
                .collect(),
            batch: 64,
            duration: None,
            count,
            stop: Arc::new(AtomicBool::new(false)),
            tick: Duration::from_millis(50),
        }
    }

    #[test]
    fn slot_counts_are_multiples_of_the_period() {
        assert_eq!(slots_for(1), 4096);
        assert_eq!(slots_for(10), 4100);
        assert_eq!(slots_for(4096), 4096);
        assert_eq!(slots_for(3000), 6000);
    }

    #[test]
    fn exact_counts_across_workers() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        for workers in 1..=3 {
            let report = run(
                &NullPort::new(4),
                &plan,
                &config(workers, Some(100_003)),
                &(),
            )
            .unwrap();
            assert_eq!(report.submitted, 100_003);
            assert_eq!(report.completed, 100_003);
            assert_eq!(report.bytes, 100_003 * 60);
            assert_eq!(report.workers.len(), workers);
        }
    }

    #[test]
    fn duration_and_stop_end_an_endless_plan() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        let mut c = config(1, None);
        c.duration = Some(Duration::from_millis(100));
        let report = run(&NullPort::new(1), &plan, &c, &()).unwrap();
        assert!(report.completed > 0 && report.completed == report.submitted);
        let c = config(1, None);
        c.stop.store(true, Ordering::Relaxed);
        let report = run(&NullPort::new(1), &plan, &c, &()).unwrap();
        assert_eq!(report.missing(), 0);
    }

    #[test]
    fn a_core_that_does_not_exist_is_refused() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        let mut c = config(1, Some(1));
        c.workers[0].core = Some(4096);
        assert!(matches!(
            run(&NullPort::new(1), &plan, &c, &()),
            Err(EngineError::Pin { core: 4096, .. })
        ));
    }
}
