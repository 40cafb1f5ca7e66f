//! The one transmit path: `run` turns the plan's shape into the work the workers do (once),
//! hands it to a `Transmitter` — a port whose queues the engine's hot loops drive, or a backend
//! whose workers call into the kernel (live) — and builds the report from what they did (once).

use std::error::Error;

use linerate_port::PortInfo;
use linerate_stream::{Cycle, Lane, MappedFrames, Merged, Pacing, Plan, Shape, merge};

use crate::report::{Report, StreamCount, WorkerReport};
use crate::runner::{Interrupted, Observer, WorkerContext, check_workers, run_workers};
use crate::worker::LaneTotals;
use crate::{EngineError, RunConfig};

/// A plan's shape as the workers run it. Lanes whose schedules merge ahead of time run as one
/// cycle: a frame costs the same however many streams there are.
#[derive(Debug, Clone, Copy)]
pub enum Work<'a> {
    /// One cycle every worker takes its share of (frame `n` to worker `n mod W`).
    Cycle {
        cycle: &'a Cycle,
        pacing: Option<&'a Pacing>,
    },
    /// Interleaved lanes that did not merge: each worker runs its share of every lane.
    Lanes(&'a [Lane]),
    /// A capture streamed from its file, lap after lap.
    Streamed {
        frames: &'a MappedFrames,
        pacing: Option<&'a Pacing>,
        /// Frames to send in all (None: until stopped).
        count: Option<u64>,
    },
}

impl<'a> Work<'a> {
    /// The work of `plan`, with its lanes' merged cycle when `merged` holds one.
    pub fn of(plan: &'a Plan, merged: Option<&'a Merged>) -> Self {
        match (&plan.shape, merged) {
            (_, Some(m)) => Self::Cycle {
                cycle: &m.cycle,
                pacing: Some(&m.pacing),
            },
            (Shape::Cycle { cycle, pacing }, None) => Self::Cycle {
                cycle,
                pacing: pacing.as_ref(),
            },
            (Shape::Lanes(lanes), None) => Self::Lanes(lanes),
            (
                Shape::Streamed {
                    frames,
                    pacing,
                    count,
                },
                None,
            ) => Self::Streamed {
                frames,
                pacing: pacing.as_ref(),
                count: *count,
            },
        }
    }

    /// The longest frame the workers send.
    pub fn max_len(&self) -> usize {
        match self {
            Self::Cycle { cycle, .. } => cycle.max_len(),
            Self::Lanes(lanes) => lanes.iter().map(|l| l.cycle.max_len()).max().unwrap_or(0),
            Self::Streamed { frames, .. } => frames.max_len(),
        }
    }
}

/// Why a worker stopped early, whatever the backend: the runner reports it as the run's cause.
pub type WorkerError = Box<dyn Error + Send + Sync>;

/// What one worker did: its report and, when it ran interleaved lanes itself, what each lane
/// sent (empty otherwise).
#[derive(Debug)]
pub struct Done {
    pub report: WorkerReport,
    pub lanes: Vec<LaneTotals>,
}

/// One worker's share of a run, readied before any thread starts and run on the worker's own
/// pinned thread.
pub type Job<'a> = Box<dyn FnOnce(&WorkerContext<'_>) -> Result<Done, WorkerError> + Send + 'a>;

/// Sends a plan's frames: what `run` needs of any backend. Object safe, so a caller may hold
/// "some transmitter" as `Box<dyn Transmitter>`; every `Port` is one (its queues driven by the
/// engine's hot loops).
pub trait Transmitter: Send + Sync {
    /// The port's name and backend, as reports show them.
    fn info(&self) -> &PortInfo;

    /// Readies every worker's share of `work` (one a worker of `runner.config()`) — all of
    /// them before any frame leaves, so a busy queue or a plan the backend cannot send fails
    /// the run cleanly — and runs them on `runner`, the engine's one runner.
    fn transmit(&self, work: Work<'_>, runner: &Runner<'_>) -> Result<Vec<Done>, EngineError>;
}

/// Names the port, so a caller's types that hold a `Box<dyn Transmitter>` derive `Debug`.
impl std::fmt::Debug for dyn Transmitter + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Transmitter")
            .field(&self.info().name)
            .finish()
    }
}

/// The engine's runner as a transmitter gets it: the run's settings, its observer and whose
/// report it is.
pub struct Runner<'a> {
    config: &'a RunConfig,
    observer: &'a dyn Observer,
    info: &'a PortInfo,
}

impl std::fmt::Debug for Runner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("port", &self.info.name)
            .finish()
    }
}

impl Runner<'_> {
    /// The run's settings: its workers, batch, count and duration.
    pub fn config(&self) -> &RunConfig {
        self.config
    }

    /// Runs `jobs[i]` as worker `i` (see `run_workers`); `on_halt` runs with every halt, for
    /// backends whose workers wait in the kernel.
    pub fn run(
        &self,
        jobs: Vec<Job<'_>>,
        on_halt: &(dyn Fn() + Sync),
    ) -> Result<Vec<Done>, Interrupted> {
        run_workers(
            self.config,
            (self.info.backend, &self.info.name),
            jobs,
            on_halt,
            self.observer,
        )
    }
}

/// Runs `plan` on `tx`: the workers' work from the plan's shape, their threads from the one
/// runner, and the report (per stream for interleaved lanes, the cores' load) from what they
/// did. A worker that fails or panics ends the run with `Interrupted`, which holds the report
/// so far.
pub fn run<T: Transmitter + ?Sized>(
    tx: &T,
    plan: &Plan,
    config: &RunConfig,
    observer: &dyn Observer,
) -> Result<Report, EngineError> {
    check_workers(&config.workers)?;
    // A controlled run's lanes stay apart: a merged cycle could not hold one of them.
    let merged = match &plan.shape {
        Shape::Lanes(lanes) if config.control.is_none() => merge(lanes),
        Shape::Lanes(_) | Shape::Cycle { .. } | Shape::Streamed { .. } => None,
    };
    let info = tx.info();
    let runner = Runner {
        config,
        observer,
        info,
    };
    let cores = crate::cpu::CoreTimes::read();
    let done = tx.transmit(Work::of(plan, merged.as_ref()), &runner)?;

    let workers = done.len();
    let mut sent = Vec::<LaneTotals>::new();
    let mut reports = Vec::with_capacity(workers);
    for d in done {
        let lanes = match &merged {
            Some(m) => merged_lanes(m, d.report.worker, workers, d.report.submitted),
            None => d.lanes,
        };
        sent.resize(lanes.len().max(sent.len()), LaneTotals::default());
        for (sum, lane) in sent.iter_mut().zip(lanes) {
            sum.submitted += lane.submitted;
            sum.bytes += lane.bytes;
        }
        reports.push(d.report);
    }
    let mut report = Report::new(info.backend, &info.name, reports);
    report.cores = cores.load_until(&crate::cpu::CoreTimes::read());
    report.requested_pps = plan.requested_pps();
    set_per_stream(&mut report, plan, &sent);
    Ok(report)
}

/// The report's per-stream counts of a plan of lanes, from what each lane sent (all workers).
fn set_per_stream(report: &mut Report, plan: &Plan, sent: &[LaneTotals]) {
    if let Shape::Lanes(lanes) = &plan.shape {
        let elapsed = report.elapsed_s.max(1e-9);
        report.per_stream = lanes
            .iter()
            .zip(&plan.streams)
            .zip(sent)
            .map(|((lane, info), sent)| StreamCount {
                name: info.name.clone(),
                frames: sent.submitted,
                bytes: sent.bytes,
                requested_pps: lane.pacing.pps(),
                pps: sent.submitted as f64 / elapsed,
            })
            .collect();
    }
}

/// What each lane sent of a merged cycle when worker `worker` of `workers` sent `submitted`
/// frames of it: frames `worker + k · workers` for k below `submitted`, whose positions in the
/// cycle repeat every `period / gcd(period, workers)` frames.
pub fn merged_lanes(m: &Merged, worker: usize, workers: usize, submitted: u64) -> Vec<LaneTotals> {
    let lanes = m.lane_of.iter().max().map_or(0, |&l| l as usize + 1);
    let mut totals = vec![LaneTotals::default(); lanes];
    let period = m.lane_of.len() as u64;
    let (w, n) = (worker as u64, workers as u64);
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a.max(1)
    };
    let repeat = period / gcd(period, n);
    let (full, rest) = (submitted / repeat, submitted % repeat);
    for k in 0..repeat.min(submitted) {
        let at = ((w + k * n) % period) as usize;
        let times = full + u64::from(k < rest);
        let lane = &mut totals[m.lane_of[at] as usize];
        lane.submitted += times;
        lane.bytes += times * m.cycle.frames[at].len() as u64;
    }
    totals
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use linerate_port::{NullPort, Port, Usage};
    use linerate_stream::{Limits, StreamSpec};

    use super::*;
    use crate::WorkerSpec;

    fn config(count: u64) -> RunConfig {
        RunConfig {
            workers: WorkerSpec::unpinned(2),
            batch: 64,
            duration: None,
            count: Some(count),
            stop: Arc::new(AtomicBool::new(false)),
            tick: Duration::from_millis(50),
            start_at: None,
            control: None,
        }
    }

    #[test]
    fn a_boxed_port_runs_as_some_transmitter() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        let tx: Box<dyn Transmitter> = Box::new(NullPort::new(2));
        let report = run(&*tx, &plan, &config(1000), &()).unwrap();
        assert_eq!(
            (report.backend.as_str(), report.port.as_str()),
            ("null", "null")
        );
        assert_eq!((report.submitted, report.completed), (1000, 1000));
        assert_eq!(format!("{tx:?}"), r#"Transmitter("null")"#);
    }

    /// A backend that refuses every plan with its own error, the user's to fix or not.
    struct Refusing {
        info: PortInfo,
        usage: bool,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("refused: usage {0}")]
    struct Refusal(bool);

    impl Usage for Refusal {
        fn is_usage(&self) -> bool {
            self.0
        }
    }

    impl Transmitter for Refusing {
        fn info(&self) -> &PortInfo {
            &self.info
        }

        fn transmit(&self, _: Work<'_>, _: &Runner<'_>) -> Result<Vec<Done>, EngineError> {
            Err(EngineError::Transmitter(Box::new(Refusal(self.usage))))
        }
    }

    #[test]
    fn a_transmitters_own_error_keeps_its_words_and_whose_fix_it_is() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        for usage in [true, false] {
            let tx = Refusing {
                info: Port::info(&NullPort::new(1)).clone(),
                usage,
            };
            let err = run(&tx, &plan, &config(10), &()).unwrap_err();
            assert_eq!(err.to_string(), format!("refused: usage {usage}"));
            assert_eq!(err.is_usage(), usage);
        }
    }
}
