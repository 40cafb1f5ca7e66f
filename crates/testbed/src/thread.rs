//! A test bed on a thread of its own, for a server (the OTG API, an agent): the thread opens
//! and compiles the bed, then runs it each time it is told to start, while any other thread
//! reads its counts and its progress. Dropping the handle ends it, and the bed with it (its
//! ports, programs and agents' setups go).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use linerate_engine::{Observer, Snapshot};

use crate::bed::{Go, TestBed};
use crate::control::BedControl;
use crate::counts::LiveCounts;
use crate::error::{Result, TestBedError};
use crate::{FlowAt, RunResult};

/// What the running (or last) run has done, written by the bed's thread.
#[derive(Debug, Default)]
pub struct Progress {
    running: AtomicBool,
    frames: AtomicU64,
    bytes: AtomicU64,
    started: Mutex<Option<Instant>>,
    ended: Mutex<Option<Instant>>,
    result: Mutex<Option<RunResult>>,
}

/// A thread that panicked mid-update leaves the value as it was written: still usable.
pub(crate) fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Progress {
    /// Waits until the run has ended, `wait` at the most; whether it has.
    pub fn wait_ended(&self, wait: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + wait;
        while self.running() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        !self.running()
    }

    /// A run is under way (or waiting for its start instant).
    pub fn running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Frames and bytes (without FCS) sent so far, all places.
    pub fn sent(&self) -> (u64, u64) {
        (
            self.frames.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    /// Seconds the run has lasted (to now while it runs); None before any.
    pub fn elapsed(&self) -> Option<f64> {
        let started = (*locked(&self.started))?;
        let ended = *locked(&self.ended);
        Some(
            ended
                .unwrap_or_else(Instant::now)
                .duration_since(started)
                .as_secs_f64(),
        )
    }

    /// The last run's result, once it ended.
    pub fn result(&self) -> Option<RunResult> {
        locked(&self.result).clone()
    }

    fn begin(&self) {
        self.running.store(true, Ordering::Release);
        *locked(&self.started) = Some(Instant::now());
    }

    fn end(&self, result: RunResult) {
        self.frames.store(result.frames, Ordering::Relaxed);
        self.bytes.store(result.bytes, Ordering::Relaxed);
        *locked(&self.result) = Some(result);
        *locked(&self.ended) = Some(Instant::now());
        self.running.store(false, Ordering::Release);
    }
}

impl Observer for Progress {
    fn tick(&self, s: &Snapshot) {
        self.frames.store(s.frames, Ordering::Relaxed);
        self.bytes.store(s.bytes, Ordering::Relaxed);
    }
}

/// Run once: until `stop`, writing `progress`, from `at` when given.
#[derive(Debug)]
struct Start {
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
    at: Option<Instant>,
    cleared: bool,
}

/// The handle of a bed's thread; dropped, the thread ends and takes the bed with it.
#[derive(Debug)]
pub struct BedThread {
    cmd: Option<mpsc::Sender<Start>>,
    thread: Option<std::thread::JoinHandle<()>>,
    counts: LiveCounts,
    places: Vec<String>,
    flows: Vec<FlowAt>,
    control: BedControl,
}

impl Drop for BedThread {
    fn drop(&mut self) {
        self.cmd.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl BedThread {
    /// Runs `setup` on a thread of its own (it opens, resolves and compiles the bed there);
    /// returns once it is done. Each run waits up to `drain` for what is on its way.
    pub fn spawn(
        setup: impl FnOnce() -> Result<TestBed> + Send + 'static,
        drain: Duration,
    ) -> Result<BedThread> {
        type Ready = Result<(LiveCounts, Vec<String>, Vec<FlowAt>, BedControl)>;
        let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
        let (cmd_tx, cmd_rx) = mpsc::channel::<Start>();
        let thread = std::thread::Builder::new()
            .name("test-bed".into())
            .spawn(move || {
                let mut bed = match setup() {
                    Ok(bed) => {
                        let ready = (
                            bed.counts(),
                            bed.places().to_vec(),
                            bed.flows().to_vec(),
                            bed.control().clone(),
                        );
                        let _ = ready_tx.send(Ok(ready));
                        bed
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Ok(start) = cmd_rx.recv() {
                    let go = Go {
                        stop: &start.stop,
                        observer: &*start.progress,
                        drain,
                        start_at: start.at,
                        cleared: start.cleared,
                    };
                    let result = match bed.run(go) {
                        Ok(ran) => ran.summary,
                        Err(e) => RunResult {
                            error: Some(error_line(&e)),
                            ..RunResult::default()
                        },
                    };
                    start.progress.end(result);
                }
            })
            .map_err(|e| TestBedError::Thread(format!("start the test bed's thread: {e}")))?;
        let mut handle = BedThread {
            cmd: Some(cmd_tx),
            thread: Some(thread),
            counts: LiveCounts::default(),
            places: Vec::new(),
            flows: Vec::new(),
            control: BedControl::default(),
        };
        match ready_rx.recv() {
            Ok(Ok((counts, places, flows, control))) => {
                handle.counts = counts;
                handle.places = places;
                handle.flows = flows;
                handle.control = control;
                Ok(handle)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(TestBedError::Thread(
                "the test bed's thread ended before it was ready".into(),
            )),
        }
    }

    /// Starts a run: until `stop`, writing `progress` (marked running now), its workers
    /// started at `at` when given; the receivers are cleared by the run unless `cleared`.
    pub fn start(
        &self,
        stop: Arc<AtomicBool>,
        progress: Arc<Progress>,
        at: Option<Instant>,
        cleared: bool,
    ) -> Result<()> {
        progress.begin();
        let sent = self.cmd.as_ref().map(|c| {
            c.send(Start {
                stop,
                progress: Arc::clone(&progress),
                at,
                cleared,
            })
        });
        if matches!(sent, Some(Ok(()))) {
            Ok(())
        } else {
            progress.end(RunResult::default());
            Err(TestBedError::Thread(
                "the test bed's thread is gone: set the config again".into(),
            ))
        }
    }

    pub fn counts(&self) -> &LiveCounts {
        &self.counts
    }

    pub fn places(&self) -> &[String] {
        &self.places
    }

    pub fn flows(&self) -> &[FlowAt] {
        &self.flows
    }

    /// The control of the bed's flows (see [`TestBed::set_controlled`]).
    pub fn control(&self) -> &BedControl {
        &self.control
    }
}

/// An error and its causes on one line.
pub(crate) fn error_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !line.ends_with(&s_text) {
            line.push_str(": ");
            line.push_str(&s_text);
        }
        source = s.source();
    }
    line
}
