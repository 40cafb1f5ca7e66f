use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use linerate_port::{Port, QueueConfig, TxQueue};
use linerate_stream::{Pacing, Plan, WorkerPlan};

use crate::EngineError;
use crate::counters::{Counters, Slots, Snapshot};
use crate::report::{PacingStats, Report, StreamCount, WorkerReport};
use crate::worker::{
    CountersHandle, Lane, LaneTotals, Pace, fill_lanes, fill_slots, transmit, transmit_lanes,
};

/// Slots an interleaved plan's lanes share at least: a 2048-entry ring with as many in flight.
const MIN_SLOTS: u32 = 4096;

/// Slots each lane of an interleaved plan gets at least.
const MIN_LANE_SLOTS: u32 = 512;

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
/// period that is at least `minimum` (the port's `min_slots`), so every slot keeps its frame lap
/// after lap.
pub fn slots_for(period: usize, minimum: u32) -> u32 {
    let period = period.max(1) as u32;
    minimum.max(1).div_ceil(period) * period
}

/// The first worker core this process may not run on, with how many it may: the affinity mask
/// (taskset, cgroups) decides, not the machine's core count.
pub fn unavailable_core(workers: &[WorkerSpec]) -> Option<(usize, usize)> {
    let allowed: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    workers
        .iter()
        .filter_map(|w| w.core)
        .find(|core| !allowed.contains(core))
        .map(|core| (core, allowed.len()))
}

/// Opens one queue per worker (all before any frame is sent, so a busy or missing queue fails
/// the run cleanly), fills their slots, starts the workers together and waits for them.
/// A plan with lanes (interleaved streams) runs `transmit_lanes` on every worker, else `transmit`.
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
    if let Some((core, available)) = unavailable_core(&config.workers) {
        return Err(EngineError::Pin { core, available });
    }
    let lanes = lane_pacing(plan)?;
    // Whole cache lines, and no more: backends with their own alignment (AF_XDP chunks) round
    // up themselves, and packed slots keep the frames the loop patches in cache.
    let slot_size = (plan.max_len() as u32).next_multiple_of(64);
    let mut queues = Vec::with_capacity(workers);
    let mut jobs = Vec::with_capacity(workers);
    for (i, w) in config.workers.iter().enumerate() {
        let job = if lanes.is_empty() {
            Job::One(plan.for_worker(i, workers, config.count))
        } else {
            Job::Lanes(split_slots(
                plan.lanes_for_worker(i, workers, config.count),
                &lanes,
            ))
        };
        let queue = port.open_queue(&QueueConfig {
            queue_id: w.queue,
            slots: job.slots(port.min_slots()),
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
        // Filled here, before any thread exists: a fill that panicked inside a worker would leave
        // the others waiting at the start barrier for good.
        let mut queue = queue;
        match &job {
            Job::One(wp) => fill_slots(&mut queue, wp),
            Job::Lanes(lanes) => fill_lanes(&mut queue, lanes),
        }
        queues.push(queue);
        jobs.push(job);
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
        for (i, (mut queue, job)) in queues.into_iter().zip(&jobs).enumerate() {
            let spec = config.workers[i];
            let (counters, halt, finished, barrier, epoch) =
                (&counters[i], &halt, &finished, &barrier, &epoch);
            handles.push(scope.spawn(move || {
                // Counts this worker as finished however it ends, a panic included, so the
                // supervisor stops waiting and the join reports the panic.
                let _done = Finished(finished);
                if let Some(core) = spec.core {
                    core_affinity::set_for_current(core_affinity::CoreId { id: core });
                }
                barrier.wait();
                let handle = CountersHandle(counters);
                let result = match job {
                    Job::One(wp) => {
                        let pace = plan.pacing.as_ref().map(|pacing| Pace {
                            pacing,
                            epoch: *epoch.get_or_init(Instant::now),
                        });
                        transmit(&mut queue, wp, config.batch, halt, Some(&handle), pace)
                    }
                    Job::Lanes(lanes) => {
                        let epoch = *epoch.get_or_init(Instant::now);
                        transmit_lanes(&mut queue, lanes, config.batch, halt, Some(&handle), epoch)
                    }
                };
                result.map(|totals| {
                    let report = WorkerReport {
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
                    };
                    (report, totals.lanes)
                })
            }));
        }
        barrier.wait();
        supervise(
            config,
            || finished.load(Ordering::Acquire) < workers,
            || halt.store(true, Ordering::Relaxed),
            || {
                counters
                    .iter()
                    .map(|c| c.read())
                    .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
            },
            observer,
        );
        let mut reports = Vec::with_capacity(workers);
        let mut sent = vec![LaneTotals::default(); plan.lanes.len()];
        for (i, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(r) => {
                    let (report, lanes) = r?;
                    for (sum, lane) in sent.iter_mut().zip(lanes) {
                        sum.submitted += lane.submitted;
                        sum.bytes += lane.bytes;
                    }
                    reports.push(report);
                }
                Err(_) => return Err(EngineError::WorkerPanicked(i)),
            }
        }
        let mut report = Report::new(info.backend, &info.name, reports);
        report.requested_pps = plan.requested_pps();
        let elapsed = report.elapsed_s.max(1e-9);
        report.per_stream = plan
            .lanes
            .iter()
            .zip(&sent)
            .map(|(lane, sent)| StreamCount {
                name: lane
                    .streams
                    .first()
                    .map_or_else(String::new, |s| s.name.clone()),
                frames: sent.submitted,
                bytes: sent.bytes,
                requested_pps: lane.requested_pps().unwrap_or(0.0),
                pps: sent.submitted as f64 / elapsed,
            })
            .collect();
        Ok(report)
    })
}

/// Marks a worker finished when dropped: at the end of its thread, or while it unwinds.
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// What one worker runs: its share of a plan, or of every lane of an interleaved plan.
enum Job<'a> {
    One(WorkerPlan<'a>),
    Lanes(Vec<Lane<'a>>),
}

impl Job<'_> {
    fn slots(&self, minimum: u32) -> u32 {
        match self {
            Self::One(wp) => slots_for(wp.frames.len(), minimum),
            Self::Lanes(lanes) => lanes.iter().map(|l| l.slots).sum(),
        }
    }
}

/// The schedule of every lane of an interleaved plan (empty for any other plan).
fn lane_pacing(plan: &Plan) -> Result<Vec<&Pacing>, EngineError> {
    plan.lanes
        .iter()
        .map(|lane| {
            lane.pacing
                .as_ref()
                .ok_or_else(|| EngineError::UnpacedLane {
                    stream: lane
                        .streams
                        .first()
                        .map_or_else(String::new, |s| s.name.clone()),
                })
        })
        .collect()
}

/// Gives each lane its own run of slots: a multiple of its period, so its slots keep their
/// frames, and at least `MIN_SLOTS` split between the lanes.
fn split_slots<'a>(plans: Vec<WorkerPlan<'a>>, pacing: &[&'a Pacing]) -> Vec<Lane<'a>> {
    let share = (MIN_SLOTS / plans.len().max(1) as u32).max(MIN_LANE_SLOTS);
    let mut first_slot = 0;
    plans
        .into_iter()
        .zip(pacing)
        .map(|(plan, &pacing)| {
            let period = plan.frames.len().max(1) as u32;
            let slots = share.div_ceil(period) * period;
            let lane = Lane {
                plan,
                pacing,
                first_slot,
                slots,
            };
            first_slot += slots;
            lane
        })
        .collect()
}

/// The run thread's job while workers send: call `halt` once the deadline passes or the stop
/// flag is raised, and tell the observer how it goes once per tick, until `running` says the
/// workers are done. `totals` sums what the workers have published: (frames, bytes). Every
/// backend's runner shares it, so the live line and the deadline behave the same everywhere.
pub fn supervise(
    config: &RunConfig,
    running: impl Fn() -> bool,
    halt: impl Fn(),
    totals: impl Fn() -> (u64, u64),
    observer: &dyn Observer,
) {
    let start = Instant::now();
    let deadline = config.duration.map(|d| start + d);
    let mut last = Snapshot::default();
    let mut next_tick = start + config.tick;
    // Short naps keep the deadline and Ctrl-C sharp without stealing a worker's core.
    let nap = Duration::from_millis(2);
    while running() {
        let now = Instant::now();
        if config.stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d) {
            halt();
        }
        if now >= next_tick {
            let (frames, bytes) = totals();
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
        assert_eq!(slots_for(1, 4096), 4096);
        assert_eq!(slots_for(10, 4096), 4100);
        assert_eq!(slots_for(4096, 4096), 4096);
        assert_eq!(slots_for(3000, 4096), 6000);
        assert_eq!(slots_for(10, 256), 260);
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

    fn interleaved(a: Option<u64>, b: Option<u64>) -> Plan {
        use linerate_stream::Mode;
        let lane = |name: &str, port: u16, rate: &str, count| StreamSpec {
            name: name.into(),
            src_port: port,
            rate: rate.into(),
            count,
            mode: Mode::Interleaved,
            ..StreamSpec::seed()
        };
        Plan::compile(
            &[lane("fast", 1, "20k", a), lane("slow", 2, "5k", b)],
            &Limits::default(),
        )
        .unwrap()
    }

    #[test]
    fn interleaved_lanes_send_their_exact_counts_across_workers() {
        let plan = interleaved(Some(401), Some(99));
        for workers in 1..=3 {
            let report = run(&NullPort::new(4), &plan, &config(workers, None), &()).unwrap();
            assert_eq!((report.submitted, report.completed), (500, 500));
            let counts: Vec<_> = report
                .per_stream
                .iter()
                .map(|s| (s.name.as_str(), s.frames, s.bytes))
                .collect();
            assert_eq!(counts, [("fast", 401, 401 * 60), ("slow", 99, 99 * 60)]);
            assert_eq!(report.requested_pps, Some(25_000.0));
            assert_eq!(report.per_stream[1].requested_pps, 5_000.0);
            assert!(report.pacing.is_some());
        }
    }

    #[test]
    fn a_count_caps_interleaved_lanes_by_due_time() {
        let plan = interleaved(None, None);
        for workers in 1..=2 {
            let report = run(&NullPort::new(2), &plan, &config(workers, Some(64)), &()).unwrap();
            assert_eq!(report.completed, 64);
            let frames: Vec<u64> = report.per_stream.iter().map(|s| s.frames).collect();
            // The frames due by 2.5 ms: 51 at one per 50 µs and 13 at one per 200 µs.
            assert_eq!(frames, [51, 13]);
        }
        let mut c = config(1, None);
        c.duration = Some(Duration::from_millis(200));
        let report = run(&NullPort::new(1), &plan, &c, &()).unwrap();
        // However much of the 200 ms a busy machine leaves the worker, what it sent is a prefix
        // of the merged schedule: four frames of one lane to one of the other.
        let (fast, slow) = (report.per_stream[0].frames, report.per_stream[1].frames);
        assert!(slow > 0 && fast.abs_diff(4 * slow) <= 4, "{fast} {slow}");
    }
}
