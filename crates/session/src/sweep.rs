//! A sweep's measuring: at each frame size a warm-up run and the repetitions, on one sender or
//! several taking turns, counted at the sink when there is one. What was measured before a stop or a failure is
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
    /// A run at `size` begins on the sender of `backend`.
    fn run_starts(&self, size: usize, backend: &str);
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

/// What a sweep measured: a series per sender, in the senders' order.
#[derive(Debug)]
pub struct Swept {
    pub series: Vec<Series>,
    /// None when every size ran in full.
    pub cut: Option<Cut>,
}

/// What one sender measured.
#[derive(Debug, Default)]
pub struct Series {
    pub points: Vec<SizePoint>,
    /// The workers' mode (e.g. zero-copy) as the last run reported it.
    pub mode: String,
}

/// One sweep on one sender or several. With several, each size's runs interleave: every
/// sender's warm-up in turn, then the repetitions round by round, one per sender, so that
/// drift over the run (heat, clocks, other load) falls on every sender alike.
#[derive(Debug)]
pub struct Sweep<'a> {
    pub senders: Vec<&'a Sender>,
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
    /// Runs every size of `sizes`, in order, until done, stopped or failed; `plans[i]` are the
    /// plans of sender i, one per size.
    pub fn run(&self, sizes: &[usize], plans: &[Vec<Plan>], observer: &dyn SweepObserver) -> Swept {
        let mut swept = Swept {
            series: self.senders.iter().map(|_| Series::default()).collect(),
            cut: None,
        };
        for (i, &size) in sizes.iter().enumerate() {
            let plans: Vec<&Plan> = plans.iter().map(|p| &p[i]).collect();
            let repetitions = self.size(&plans, size, observer, &mut swept);
            for (series, repetitions) in swept.series.iter_mut().zip(repetitions) {
                if !repetitions.is_empty() {
                    series.points.push(SizePoint { size, repetitions });
                }
            }
            if swept.cut.is_some() {
                break;
            }
        }
        swept
    }

    /// The warm-ups and repetitions of one size, per sender; sets `swept.cut` when they end
    /// early.
    fn size(
        &self,
        plans: &[&Plan],
        size: usize,
        observer: &dyn SweepObserver,
        swept: &mut Swept,
    ) -> Vec<Vec<Repetition>> {
        let mut repetitions = vec![Vec::new(); self.senders.len()];
        'rounds: for rep in 0..=self.repeat {
            for (s, (&sender, &plan)) in self.senders.iter().zip(plans).enumerate() {
                match self.one_run(sender, plan, size, rep, observer) {
                    Ok((repetition, mode)) => {
                        swept.series[s].mode = mode;
                        repetitions[s].extend(repetition);
                    }
                    Err(cut) => {
                        swept.cut = Some(cut);
                        break 'rounds;
                    }
                }
            }
        }
        repetitions
    }

    /// Run `rep` of `size` on `sender` (0: the warm-up, which is not kept), and the workers'
    /// mode; the cut when the stop flag or a failure ends it.
    fn one_run(
        &self,
        sender: &Sender,
        plan: &Plan,
        size: usize,
        rep: u32,
        observer: &dyn SweepObserver,
    ) -> std::result::Result<(Option<Repetition>, String), Cut> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Cut::Stopped);
        }
        let warmup = rep == 0;
        let backend = sender.info().backend;
        observer.run_starts(size, backend);
        let (report, rx) = self
            .measure(sender, plan, size, warmup, observer)
            .map_err(Cut::Failed)?;
        // A run the stop cut short measured less than its duration: it is not a repetition.
        if self.stop.load(Ordering::Relaxed) {
            return Err(Cut::Stopped);
        }
        if let Some(warning) = rx.as_ref().and_then(SinkResult::shared_warning) {
            observer.warn(&format!(
                "{}{size} B, run {rep}: {warning}",
                self.who(backend)
            ));
        }
        let mode = report
            .workers
            .first()
            .map(|w| w.mode.clone())
            .unwrap_or_default();
        observer.run_done();
        let repetition = (!warmup).then(|| Repetition {
            tx_frames: report.completed,
            tx_bytes: report.bytes,
            rx_frames: rx.as_ref().map(|r| r.packets),
            rx_bytes: rx.as_ref().map(|r| r.bytes),
            elapsed_s: report.elapsed_s,
        });
        Ok((repetition, mode))
    }

    /// `live, ` before a message when several senders take turns; nothing with one.
    fn who(&self, backend: &str) -> String {
        if self.senders.len() > 1 {
            format!("{backend}, ")
        } else {
            String::new()
        }
    }

    /// One run, and what the sink counted of it.
    fn measure(
        &self,
        sender: &Sender,
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
            start_at: None,
            control: None,
        };
        let before = self.sink.map(Sink::read).transpose()?;
        let report = sender.run(plan, &config, observer).map_err(|e| {
            let on = if self.senders.len() > 1 {
                format!("{} with {}", self.interface, sender.info().backend)
            } else {
                self.interface.to_owned()
            };
            e.context(format!("transmit {size}-byte frames on {on}"))
        })?;
        let rx = match (self.sink, before) {
            (Some(s), Some(b)) => Some(s.settle(b, report.completed)?),
            _ => None,
        };
        Ok((report, rx))
    }
}
