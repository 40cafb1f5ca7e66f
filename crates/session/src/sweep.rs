//! A sweep's measuring: at each frame size a warm-up run and the repetitions, on one sender,
//! counted at the sink when there is one. What was measured before a stop or a failure is
//! kept, with why it ended.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use linerate_engine::{Observer, Report, RunConfig, WorkerSpec};
use linerate_report::{Repetition, SizePoint};
use linerate_stream::{Plan, StreamSpec};

use crate::compile::compile;
use crate::error::{Result, SessionError};
use crate::sender::Sender;
use crate::sink::{Sink, SinkResult};

/// Watches a sweep: each run's ticks (as the engine's observer), its start and end, and the
/// warnings a run raises.
pub trait SweepObserver: Observer {
    /// A run at `size` begins.
    fn run_starts(&self, size: usize);
    /// A run ended and counted (the warm-up too).
    fn run_done(&self);
    /// Something the user should know about a run that still counts.
    fn warn(&self, text: &str);
}

/// Why a sweep ended before its last size.
#[derive(Debug)]
pub enum Cut {
    /// The stop flag was raised.
    Stopped,
    /// A run failed.
    Failed(SessionError),
}

/// What a sweep measured.
#[derive(Debug)]
pub struct Swept {
    pub points: Vec<SizePoint>,
    /// The workers' mode (e.g. zero-copy) as the last run reported it.
    pub mode: String,
    /// None when every size ran in full.
    pub cut: Option<Cut>,
}

/// One sweep on one sender.
#[derive(Debug)]
pub struct Sweep<'a> {
    pub sender: &'a Sender,
    /// The interface, as the user named it (for errors).
    pub interface: &'a str,
    /// Where the frames are counted; None: at the sender's completions.
    pub sink: Option<&'a Sink>,
    pub workers: Vec<WorkerSpec>,
    pub batch: u32,
    pub duration: Duration,
    pub warmup: Duration,
    /// Measured runs per size, after the warm-up.
    pub repeat: u32,
    pub stop: Arc<AtomicBool>,
}

/// The plan of each size: the seed stream at that size, compiled for the sender (every size
/// is checked before the first frame goes out).
pub fn plans(
    sizes: &[usize],
    sender: &Sender,
    sink: Option<&Sink>,
    link_mbps: Option<u64>,
) -> Result<Vec<Plan>> {
    sizes
        .iter()
        .map(|&size| {
            let spec = StreamSpec {
                size,
                ..StreamSpec::seed()
            };
            compile(&[spec], sender.info(), sink, link_mbps)
                .map_err(|e| e.context(format!("size {size}")))
        })
        .collect()
}

impl Sweep<'_> {
    /// Runs every size of `sizes` with its plan, in order, until done, stopped or failed.
    pub fn run(&self, sizes: &[usize], plans: &[Plan], observer: &dyn SweepObserver) -> Swept {
        let mut swept = Swept {
            points: Vec::new(),
            mode: String::new(),
            cut: None,
        };
        for (plan, &size) in plans.iter().zip(sizes) {
            let repetitions = self.size(plan, size, observer, &mut swept);
            if !repetitions.is_empty() {
                swept.points.push(SizePoint { size, repetitions });
            }
            if swept.cut.is_some() {
                break;
            }
        }
        swept
    }

    /// The warm-up and repetitions of one size; sets `swept.cut` when they end early.
    fn size(
        &self,
        plan: &Plan,
        size: usize,
        observer: &dyn SweepObserver,
        swept: &mut Swept,
    ) -> Vec<Repetition> {
        let mut repetitions = Vec::new();
        for rep in 0..=self.repeat {
            if self.stop.load(Ordering::Relaxed) {
                swept.cut = Some(Cut::Stopped);
                break;
            }
            let warmup = rep == 0;
            observer.run_starts(size);
            let (report, rx) = match self.measure(plan, size, warmup, observer) {
                Ok(m) => m,
                Err(e) => {
                    swept.cut = Some(Cut::Failed(e));
                    break;
                }
            };
            // A run the stop cut short measured less than its duration: it is not a repetition.
            if self.stop.load(Ordering::Relaxed) {
                swept.cut = Some(Cut::Stopped);
                break;
            }
            if let Some(warning) = rx.as_ref().and_then(SinkResult::shared_warning) {
                observer.warn(&format!("{size} B, run {rep}: {warning}"));
            }
            swept.mode = report
                .workers
                .first()
                .map(|w| w.mode.clone())
                .unwrap_or_default();
            observer.run_done();
            if !warmup {
                repetitions.push(Repetition {
                    tx_frames: report.completed,
                    tx_bytes: report.bytes,
                    rx_frames: rx.as_ref().map(|r| r.packets),
                    rx_bytes: rx.as_ref().map(|r| r.bytes),
                    elapsed_s: report.elapsed_s,
                });
            }
        }
        repetitions
    }

    /// One run, and what the sink counted of it.
    fn measure(
        &self,
        plan: &Plan,
        size: usize,
        warmup: bool,
        observer: &dyn Observer,
    ) -> Result<(Report, Option<SinkResult>)> {
        let config = RunConfig {
            workers: self.workers.clone(),
            batch: self.batch,
            duration: Some(if warmup { self.warmup } else { self.duration }),
            count: None,
            stop: self.stop.clone(),
            tick: Duration::from_millis(500),
        };
        let before = self.sink.map(Sink::read).transpose()?;
        let report = self
            .sender
            .run(plan, &config, observer)
            .map_err(|e| e.context(format!("transmit {size}-byte frames on {}", self.interface)))?;
        let rx = match (self.sink, before) {
            (Some(s), Some(b)) => Some(s.settle(b, report.completed)?),
            _ => None,
        };
        Ok((report, rx))
    }
}
