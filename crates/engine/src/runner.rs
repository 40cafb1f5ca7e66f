//! The one worker runner every backend uses: pins one thread per worker, starts them together
//! from one epoch, watches the deadline, the stop flag and the status tick, ends the run when a
//! worker fails or panics, joins them and hands back their reports — or the report so far and
//! why it stopped.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::counters::{Counters, Snapshot};
use crate::pace::PaceLog;
use crate::report::{Report, WorkerReport};
use crate::transmitter::{Done, Job, WorkerError};
use crate::{EngineError, RunConfig, WorkerSpec};

/// Hears about a run while it goes (the live status line).
pub trait Observer: Sync {
    fn tick(&self, snapshot: &Snapshot);
}

impl Observer for () {
    fn tick(&self, _: &Snapshot) {}
}

/// Why a worker ended the run early.
#[derive(Debug, thiserror::Error)]
pub enum WorkerFailure {
    #[error("worker {worker} panicked: {message}")]
    Panicked { worker: usize, message: String },
    /// The cause is in the message, not the error chain: whatever type raised it, a failure in
    /// the middle of a run is the system failing (exit 1), even an error that would be the
    /// user's to fix at the start (an interface that is down).
    #[error("worker {worker} stopped: {cause}")]
    Failed { worker: usize, cause: WorkerError },
}

/// A run that a worker ended early: why, and what every worker had done by then (a failed
/// worker's share is what it had published: its last batch or call may be missing).
#[derive(Debug, thiserror::Error)]
#[error("{failure} (the run stopped after {} frames)", report.submitted)]
pub struct Interrupted {
    pub failure: WorkerFailure,
    pub report: Box<Report>,
}

/// What the runner hands each worker's thread.
#[derive(Debug)]
pub struct WorkerContext<'a> {
    pub worker: usize,
    pub spec: WorkerSpec,
    /// The instant every worker's schedule counts from, taken once all of them are ready.
    pub epoch: Instant,
    halt: &'a AtomicBool,
    counters: &'a Counters,
    /// The pace log, made before the epoch: its histograms are half a MiB each worker, written
    /// through when made (measured: 330 µs), which would make a paced run's first frame late.
    log: RefCell<Option<PaceLog>>,
}

impl WorkerContext<'_> {
    /// Raised when the worker must stop (deadline, Ctrl-C, another worker failed).
    pub fn halt(&self) -> &AtomicBool {
        self.halt
    }

    /// Makes the worker's totals so far visible to the status line and to the report of a run
    /// that fails.
    #[inline]
    pub fn publish(&self, submitted: u64, completed: u64, bytes: u64) {
        self.counters.publish(submitted, completed, bytes);
    }

    /// The worker's pace log, made before its schedule began (a second one is made now).
    pub fn pace_log(&self) -> PaceLog {
        self.log.borrow_mut().take().unwrap_or_default()
    }
}

/// Refuses a run that cannot start: no worker, or a core this process may not run on.
pub fn check_workers(workers: &[WorkerSpec]) -> Result<(), EngineError> {
    if workers.is_empty() {
        return Err(EngineError::NoWorkers);
    }
    if let Some((core, available)) = unavailable_core(workers) {
        return Err(EngineError::Pin { core, available });
    }
    Ok(())
}

/// The cores this process may run on, in order: the affinity mask (taskset, cgroups) decides,
/// not the machine's core count. Empty when it cannot be read.
pub fn allowed_cores() -> Vec<usize> {
    let mut cores: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    cores.sort_unstable();
    cores
}

/// The first worker core this process may not run on, with how many it may.
pub fn unavailable_core(workers: &[WorkerSpec]) -> Option<(usize, usize)> {
    let allowed = allowed_cores();
    workers
        .iter()
        .filter_map(|w| w.core)
        .find(|core| !allowed.contains(core))
        .map(|core| (core, allowed.len()))
}

/// Where a run's threads meet: per worker its counters, and the flags that end the run.
struct Shared {
    counters: Vec<CachePadded<Counters>>,
    /// When each worker's thread ended, in ns after the epoch.
    ended_ns: Vec<AtomicU64>,
    halt: AtomicBool,
    failed: AtomicBool,
    finished: AtomicUsize,
}

/// Marks a worker finished when dropped, at the end of its thread or while it unwinds, so the
/// supervisor stops waiting for it and, if it failed, halts the others.
struct Finished<'a> {
    shared: &'a Shared,
    worker: usize,
    epoch: Instant,
    ok: bool,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        let s = self.shared;
        s.ended_ns[self.worker].store(self.epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if !self.ok || std::thread::panicking() {
            s.failed.store(true, Ordering::Release);
        }
        s.finished.fetch_add(1, Ordering::Release);
    }
}

/// Runs one thread per `jobs` entry (worker `i` runs `jobs[i]` with `config.workers[i]`):
/// pinned, started together. `on_halt` runs with every halt, for backends whose workers wait in
/// the kernel (live raises a stop flag the program reads). A worker that returns an error or
/// panics halts the others; the run then ends with `Interrupted`, holding the report so far for
/// `backend` on `port`.
pub(crate) fn run_workers(
    config: &RunConfig,
    (backend, port): (&str, &str),
    jobs: Vec<Job<'_>>,
    on_halt: &(dyn Fn() + Sync),
    observer: &dyn Observer,
) -> Result<Vec<Done>, Interrupted> {
    let workers = jobs.len();
    debug_assert_eq!(workers, config.workers.len());
    let shared = Shared {
        counters: (0..workers).map(|_| CachePadded::default()).collect(),
        ended_ns: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        halt: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        finished: AtomicUsize::new(0),
    };
    let barrier = Barrier::new(workers + 1);
    let epoch = OnceLock::new();
    let cores_before = crate::cpu::CoreTimes::read();
    let joined = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .into_iter()
            .enumerate()
            .map(|(i, job)| {
                let (shared, barrier, epoch) = (&shared, &barrier, &epoch);
                let spec = config.workers[i];
                let start = config.start_at.map(|at| (at, &*config.stop));
                scope.spawn(move || worker_thread(i, spec, job, shared, (barrier, start), epoch))
            })
            .collect();
        barrier.wait();
        supervise(config, &shared, on_halt, observer);
        handles.into_iter().map(|h| h.join()).collect::<Vec<_>>()
    });

    let mut done = Vec::with_capacity(workers);
    let mut reports = Vec::with_capacity(workers);
    let mut failure = None;
    for (i, outcome) in joined.into_iter().enumerate() {
        let failed = match outcome {
            Ok(Ok(d)) => {
                reports.push(d.report.clone());
                done.push(d);
                continue;
            }
            Ok(Err(cause)) => WorkerFailure::Failed { worker: i, cause },
            Err(payload) => WorkerFailure::Panicked {
                worker: i,
                message: panic_message(payload.as_ref()),
            },
        };
        reports.push(failed_report(config, &shared, i));
        failure.get_or_insert(failed);
    }
    match failure {
        None => Ok(done),
        Some(failure) => {
            let mut report = Report::new(backend, port, reports);
            report.cores = cores_before.load_until(&crate::cpu::CoreTimes::read());
            Err(Interrupted {
                failure,
                report: Box::new(report),
            })
        }
    }
}

/// Waits for `at`, or a stop. Sleeps, without spinning: every port of every agent of a test
/// bed wakes at the same instant, and spinners on shared cores would wake each other late by
/// whole scheduler slices (measured: 2.5–5 ms with four on two cores; a sleeper wakes late by
/// the timer's slack, 50 µs).
fn wait_until(at: Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// A paced worker sleeps before most frames at low rates (`pace::wait_until`): its sleeps end at
/// their deadline, not up to the default timer slack (50 µs) later, which its sleep margin
/// (100 µs) would have to absorb on top of a VM's wake-up. Best effort: a kernel that refuses
/// leaves the default.
fn exact_sleeps() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_timerslack(1);
}

/// One worker's thread: pinned, waits for the start instant when there is one and for the
/// others, then runs its job from the shared epoch and records how it ended (also while it
/// unwinds). The instant is waited for here, on the worker's own core, not by the supervising
/// thread: that one may wake on a core busy with another port's worker and start late by a
/// scheduler slice (measured: up to 2 ms on two cores).
fn worker_thread(
    i: usize,
    spec: WorkerSpec,
    job: Job<'_>,
    shared: &Shared,
    (barrier, start): (&Barrier, Option<(Instant, &AtomicBool)>),
    epoch: &OnceLock<Instant>,
) -> Result<Done, WorkerError> {
    if let Some(core) = spec.core {
        core_affinity::set_for_current(core_affinity::CoreId { id: core });
    }
    exact_sleeps();
    // Stopped before its instant: the run ends with nothing sent (issue 40 #9), not with the
    // first batch the job would send before it looks at the halt.
    let stopped = start.is_some_and(|(at, stop)| {
        wait_until(at, stop);
        stop.load(Ordering::Relaxed)
    });
    let log = PaceLog::new();
    barrier.wait();
    if stopped {
        shared.halt.store(true, Ordering::Relaxed);
    }
    let epoch = *epoch.get_or_init(Instant::now);
    let mut finished = Finished {
        shared,
        worker: i,
        epoch,
        ok: false,
    };
    let ctx = WorkerContext {
        worker: i,
        spec,
        epoch,
        halt: &shared.halt,
        counters: &shared.counters[i],
        log: RefCell::new(Some(log)),
    };
    let (result, cpu) = crate::cpu::measure(|| job(&ctx));
    finished.ok = result.is_ok();
    result.map(|mut d| {
        d.report.cpu = cpu;
        d
    })
}

/// A failed worker's share: what it had published by the time it ended.
fn failed_report(config: &RunConfig, shared: &Shared, i: usize) -> WorkerReport {
    let (submitted, completed, bytes) = shared.counters[i].read();
    WorkerReport {
        worker: i,
        core: config.workers[i].core,
        queue: config.workers[i].queue,
        mode: "failed".into(),
        submitted,
        completed,
        bytes,
        elapsed_s: shared.ended_ns[i].load(Ordering::Relaxed) as f64 / 1e9,
        stats: Default::default(),
        pacing: None,
        cpu: None,
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The run thread's job while workers send: halt them once the deadline passes, the stop flag
/// is raised or a worker failed, and tell the observer how it goes once per tick, until every
/// worker's thread has ended.
fn supervise(config: &RunConfig, shared: &Shared, on_halt: &dyn Fn(), observer: &dyn Observer) {
    let workers = shared.counters.len();
    let start = Instant::now();
    let deadline = config.duration.map(|d| start + d);
    let mut last = Snapshot::default();
    let mut next_tick = start + config.tick;
    // Short naps keep the deadline and Ctrl-C sharp without stealing a worker's core.
    let nap = Duration::from_millis(2);
    while shared.finished.load(Ordering::Acquire) < workers {
        let now = Instant::now();
        if config.stop.load(Ordering::Relaxed)
            || deadline.is_some_and(|d| now >= d)
            || shared.failed.load(Ordering::Acquire)
        {
            shared.halt.store(true, Ordering::Relaxed);
            on_halt();
        }
        if now >= next_tick {
            let (frames, bytes) = shared
                .counters
                .iter()
                .map(|c| c.read())
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.2));
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
