use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use linerate_port::{Port, PortError, PortInfo, QueueConfig, TxQueue};
use linerate_stream::lanes_for_worker;

use crate::EngineError;
use crate::control::FlowControl;
use crate::pace::{Pacer, Wall};
use crate::report::{PacingStats, WorkerReport};
use crate::runner::WorkerContext;
use crate::transmitter::{Done, Job, Runner, Transmitter, Work};
use crate::worker::{
    LaneShare, Steer, WorkerTotals, fill_lanes, fill_slots, transmit, transmit_lanes,
    transmit_streamed,
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

impl WorkerSpec {
    /// One worker per queue `0..queues`, each left to the scheduler.
    pub fn unpinned(queues: u32) -> Vec<WorkerSpec> {
        (0..queues)
            .map(|queue| WorkerSpec { core: None, queue })
            .collect()
    }
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
    /// The workers, ready (queues open and filled, threads pinned), start at this instant:
    /// a start shared with other hosts' runs (their agents' clocks, converted here).
    pub start_at: Option<std::time::Instant>,
    /// The flows' control, one lane a stream of the plan: held, resumed or re-rated while the
    /// run goes on. Lanes then run as lanes (never merged into one cycle), so each is its own.
    pub control: Option<Arc<FlowControl>>,
}

/// Slot count for a worker whose cycle has `period` frames: the smallest multiple of the
/// period that is at least `minimum` (the port's `min_slots`), so every slot keeps its frame lap
/// after lap.
pub fn slots_for(period: usize, minimum: u32) -> u32 {
    let period = period.max(1) as u32;
    minimum.max(1).div_ceil(period) * period
}

/// What one worker runs: its share of the plan's cycle, or of every lane.
enum Share<'a> {
    Cycle(
        linerate_stream::WorkerPlan<'a>,
        Option<&'a linerate_stream::Pacing>,
    ),
    Lanes(Vec<LaneShare<'a>>),
    Streamed(
        linerate_stream::StreamShare<'a>,
        Option<&'a linerate_stream::Pacing>,
    ),
}

impl<'a> Share<'a> {
    /// Worker `i`'s share of `work`, of `config`'s workers.
    fn of(work: Work<'a>, i: usize, config: &RunConfig) -> Self {
        let workers = config.workers.len();
        match work {
            Work::Cycle { cycle, pacing } => {
                Self::Cycle(cycle.for_worker(i, workers, config.count), pacing)
            }
            Work::Lanes(lanes) => Self::Lanes(split_slots(
                lanes_for_worker(lanes, i, workers, config.count),
                lanes,
            )),
            Work::Streamed {
                frames,
                pacing,
                count,
            } => Self::Streamed(frames.for_worker(i, workers, count, config.count), pacing),
        }
    }

    fn slots(&self, minimum: u32) -> u32 {
        match self {
            Self::Cycle(wp, _) => slots_for(wp.frames.len(), minimum),
            Self::Lanes(lanes) => lanes.iter().map(|l| l.slots).sum(),
            // No slot keeps a frame: the port's own minimum keeps its ring full.
            Self::Streamed(..) => minimum.max(1),
        }
    }

    /// Runs the share on `queue` with the hot loop made for it: a cycle with `transmit`, lanes
    /// with `transmit_lanes`, a streamed capture with `transmit_streamed`.
    fn send(
        &self,
        queue: &mut Box<dyn TxQueue>,
        batch: u32,
        ctx: &WorkerContext<'_>,
        control: Option<&FlowControl>,
    ) -> Result<WorkerTotals, PortError> {
        let stop = ctx.halt();
        let steer = Steer { stop, control };
        let pacer = |p, first_seq, stride| {
            Pacer::new(p, ctx.epoch, first_seq, stride, batch.into()).measuring()
        };
        match self {
            Self::Cycle(wp, pacing) => {
                let pacer = pacing.map(|p| pacer(p, wp.first_seq, wp.stride));
                transmit(queue, wp, batch, steer, Some(ctx), pacer)
            }
            Self::Streamed(share, pacing) => {
                let pacer = pacing.map(|p| pacer(p, share.first_seq, share.stride));
                transmit_streamed(queue, share, batch, stop, Some(ctx), pacer)
            }
            Self::Lanes(lanes) => {
                let clock = Wall(ctx.epoch);
                transmit_lanes(queue, lanes, batch, steer, Some(ctx), &clock, ctx.epoch)
            }
        }
    }
}

/// A port is a transmitter whose workers the engine drives: one queue per worker, opened and
/// filled before any thread exists (so a busy or missing queue fails the run cleanly), then the
/// hot loop made for the worker's share.
impl<P: Port + ?Sized> Transmitter for P {
    fn info(&self) -> &PortInfo {
        Port::info(self)
    }

    fn transmit(&self, work: Work<'_>, runner: &Runner<'_>) -> Result<Vec<Done>, EngineError> {
        let config = runner.config();
        // Whole cache lines, and no more: backends with their own alignment (AF_XDP chunks)
        // round up themselves, and packed slots keep the frames the loop patches in cache.
        let max_len = work.max_len();
        let slot_size = (max_len as u32).next_multiple_of(64);
        let mut jobs = Vec::with_capacity(config.workers.len());
        for (i, w) in config.workers.iter().enumerate() {
            let share = Share::of(work, i, config);
            let mut queue = self.open_queue(&QueueConfig {
                queue_id: w.queue,
                slots: share.slots(self.min_slots()),
                slot_size,
                batch: config.batch,
            })?;
            if (queue.slot_size() as usize) < max_len {
                return Err(EngineError::SlotTooSmall {
                    len: max_len,
                    slot_size: queue.slot_size(),
                    queue: w.queue,
                });
            }
            // Filled here, before any thread exists: the runner's workers only send.
            match &share {
                Share::Cycle(wp, _) => fill_slots(&mut queue, wp),
                Share::Lanes(lanes) => fill_lanes(&mut queue, lanes),
                Share::Streamed(..) => {}
            }
            let batch = config.batch;
            let control = config.control.as_deref();
            let job: Job<'_> = Box::new(move |ctx: &WorkerContext<'_>| {
                let totals = share.send(&mut queue, batch, ctx, control)?;
                Ok(Done {
                    report: worker_report(ctx, queue.as_ref(), &totals),
                    lanes: totals.lanes,
                })
            });
            jobs.push(job);
        }
        Ok(runner.run(jobs, &|| {})?)
    }
}

fn worker_report(
    ctx: &WorkerContext<'_>,
    queue: &dyn TxQueue,
    totals: &WorkerTotals,
) -> WorkerReport {
    WorkerReport {
        pacing: PacingStats::of(totals),
        worker: ctx.worker,
        core: ctx.spec.core,
        queue: ctx.spec.queue,
        mode: queue.mode(),
        submitted: totals.submitted,
        completed: totals.completed,
        bytes: totals.bytes,
        elapsed_s: totals.elapsed.as_secs_f64(),
        cpu: None,
        stats: queue
            .stats()
            .extra
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    }
}

/// Gives each lane its own run of slots: a multiple of its period, so its slots keep their
/// frames, and at least `MIN_SLOTS` split between the lanes.
fn split_slots<'a>(
    plans: Vec<linerate_stream::WorkerPlan<'a>>,
    lanes: &'a [linerate_stream::Lane],
) -> Vec<LaneShare<'a>> {
    let share = (MIN_SLOTS / plans.len().max(1) as u32).max(MIN_LANE_SLOTS);
    let mut first_slot = 0;
    plans
        .into_iter()
        .zip(lanes)
        .map(|(plan, lane)| {
            let period = plan.frames.len().max(1) as u32;
            let slots = share.div_ceil(period) * period;
            let share = LaneShare {
                plan,
                pacing: &lane.pacing,
                first_slot,
                slots,
            };
            first_slot += slots;
            share
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run;
    use linerate_port::NullPort;
    use linerate_stream::Plan;
    use linerate_stream::{Limits, StreamSpec};
    use std::sync::atomic::Ordering;

    fn config(workers: usize, count: Option<u64>) -> RunConfig {
        RunConfig {
            workers: WorkerSpec::unpinned(workers as u32),
            batch: 64,
            duration: None,
            count,
            stop: Arc::new(AtomicBool::new(false)),
            tick: Duration::from_millis(50),
            start_at: None,
            control: None,
        }
    }

    /// A run stopped while its workers wait for the start instant sends nothing.
    #[test]
    fn a_stop_before_the_start_instant_sends_nothing() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        for workers in 1..=2 {
            let mut c = config(workers, None);
            c.start_at = Some(std::time::Instant::now() + Duration::from_secs(30));
            let stop = Arc::clone(&c.stop);
            let stopper = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(150));
                stop.store(true, Ordering::Relaxed);
            });
            let began = std::time::Instant::now();
            let report = run(&NullPort::new(4), &plan, &c, &()).unwrap();
            stopper.join().unwrap();
            assert_eq!(report.completed, 0, "{workers} workers");
            assert!(began.elapsed() < Duration::from_secs(5));
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
            rate: rate.parse().unwrap(),
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

#[cfg(test)]
mod failure_tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::run;
    use linerate_port::NullPort;
    use linerate_port::Usage;
    use linerate_port::fault::{Fault, FaultyPort, quiet_injected_panics};
    use linerate_stream::Plan;
    use linerate_stream::{Limits, StreamSpec};

    use crate::WorkerFailure;

    /// Two workers on an endless plan, the second of which fails at its 1001st submit; how long
    /// the run went on after that.
    fn interrupted(panic: bool) -> (crate::Interrupted, Duration) {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        let config = RunConfig {
            workers: WorkerSpec::unpinned(2),
            batch: 64,
            duration: None,
            count: None,
            stop: Arc::new(AtomicBool::new(false)),
            tick: Duration::from_millis(50),
            start_at: None,
            control: None,
        };
        let fault = if panic {
            Fault::Panic
        } else {
            Fault::InterfaceDown
        };
        let port = FaultyPort::new(NullPort::new(2), 1, 1000, fault);
        quiet_injected_panics();
        let err = run(&port, &plan, &config, &()).expect_err("the run must fail");
        let took = port.at.get().expect("the fault struck").elapsed();
        assert!(!config.stop.load(Ordering::Relaxed));
        assert!(!err.is_usage(), "a failure mid-run is a system error");
        match err {
            EngineError::Interrupted(i) => (i, took),
            other => panic!("not interrupted: {other}"),
        }
    }

    #[test]
    fn a_worker_that_panics_ends_the_run_with_the_counts_so_far() {
        let (i, took) = interrupted(true);
        assert!(took < Duration::from_secs(1), "took {took:?}");
        assert!(
            matches!(&i.failure, WorkerFailure::Panicked { worker: 1, message } if message == "injected fault"),
            "{}",
            i.failure
        );
        let r = &i.report;
        assert_eq!(r.workers.len(), 2);
        // The failed worker's share is what it published: its 1000 submits of 64.
        assert_eq!(r.workers[1].submitted, 64_000);
        // The healthy worker was halted and drained (on a loaded machine it may not have
        // started sending before the fault).
        assert_eq!(r.workers[0].completed, r.workers[0].submitted);
        assert_eq!(r.submitted, r.workers[0].submitted + 64_000);
        assert!(i.to_string().contains("panicked: injected fault"), "{i}");
    }

    #[test]
    fn a_worker_that_fails_ends_the_run_with_the_cause_and_the_report() {
        let (i, took) = interrupted(false);
        assert!(took < Duration::from_secs(1), "took {took:?}");
        let text = i.to_string();
        assert!(
            text.contains("worker 1 stopped: interface null is down"),
            "{text}"
        );
        assert_eq!(i.report.workers[1].submitted, 64_000);
        assert_eq!(i.report.workers[1].bytes, 64_000 * 60);
    }
}
