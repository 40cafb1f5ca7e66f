//! The `Trial` of `linerate_bench` over a session's port: a signed stream of the load's size
//! and rate, for its duration or its burst, then the drain wait, judged by the receiver's
//! counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use linerate_bench::{LatencySummary, Load, Trial, TrialOutput, TrialReport};
use linerate_engine::{Observer, Snapshot};
use linerate_report::rfc2544::Logged;
use linerate_stream::{Rate, StreamSpec};

use super::Rfc2544Observer;
use crate::error::SessionError;
use crate::options::End;
use crate::session::{Outcome, PortSession, RunOptions};

/// Why a trial did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    #[error("stopped by a signal")]
    Stopped,
    #[error(transparent)]
    Failed(#[from] SessionError),
    #[error("the receiver reported no flow")]
    NoFlow,
}

/// Trials show on the observer's line, not as the engine's live line.
struct Quiet;

impl Observer for Quiet {
    fn tick(&self, _: &Snapshot) {}
}

pub(super) struct SessionTrial<'a> {
    pub port: &'a mut PortSession,
    pub stop: Arc<AtomicBool>,
    pub drain: Duration,
    pub learning: u64,
    pub test: &'static str,
    pub log: Vec<Logged>,
    pub observer: &'a dyn Rfc2544Observer,
    /// The mode the port bound in, from the last run (copy, zero-copy, skb…).
    pub mode: String,
    pub template: StreamSpec,
    /// The max load when it is the port's own limit (the line rate, or what a max-rate trial
    /// sent): a trial at exactly this load goes unpaced, as fast as the port takes it.
    pub unpaced: Option<f64>,
}

impl SessionTrial<'_> {
    /// The trials' stream at `size` and `rate` (the one place a trial's rate is set).
    pub fn spec(&self, size: u32, rate: Rate) -> StreamSpec {
        StreamSpec {
            size: size as usize,
            rate,
            ..self.template.clone()
        }
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Runs the spec and waits out the whole drain: the receiver returns as soon as everything
    /// arrived, but the DUT's queue and token bucket need the rest of it to be as before.
    pub fn run_spec(&mut self, spec: StreamSpec, end: End) -> Result<Outcome, TrialError> {
        if self.stopped() {
            return Err(TrialError::Stopped);
        }
        // The link may have died during the last drain: no trial (up to --trial long) on it.
        self.port.check_receiver()?;
        let start = Instant::now();
        let run = RunOptions {
            end,
            stop: &self.stop,
            observer: &Quiet,
            drain: self.drain,
        };
        let out = self.port.run(&[spec], run)?;
        if self.stopped() {
            return Err(TrialError::Stopped);
        }
        // A trial whose receive link died is no measurement: the run ends with the trials so
        // far (issue 27 #5).
        self.port.check_receiver()?;
        if let Some(w) = out.report.workers.first() {
            self.mode.clone_from(&w.mode);
        }
        let waited = start
            .elapsed()
            .saturating_sub(Duration::from_secs_f64(out.report.elapsed_s));
        std::thread::sleep(self.drain.saturating_sub(waited));
        Ok(out)
    }
}

/// Frames sent and received once (duplicates aside) by the trial's one flow.
pub(super) fn tx_rx(out: &Outcome) -> Option<(u64, u64)> {
    let tx: u64 = out.sent.iter().map(|s| s.2).sum();
    let flow = out.flows.as_ref().and_then(|f| f.flows.first())?;
    Some((tx, flow.rx_frames - flow.duplicates))
}

pub(super) fn loss_ratio(tx: u64, rx: u64) -> f64 {
    if tx == 0 {
        0.0
    } else {
        tx.saturating_sub(rx) as f64 / tx as f64
    }
}

impl Trial for SessionTrial<'_> {
    type Error = TrialError;

    fn run(&mut self, load: &Load) -> Result<TrialOutput, TrialError> {
        if self.learning > 0 {
            let spec = self.spec(load.size, Rate::Pps(1e4));
            let end = End {
                duration: None,
                count: Some(self.learning),
            };
            self.run_spec(spec, end)?;
        }
        let count = match load.burst {
            Some(n) => n,
            // The frames the load asks for, not a time: a sender held up for a moment (a
            // shared core) still offers them all, so the loss is judged on the intended frames.
            None => (load.rate * load.duration.as_secs_f64()).round().max(1.0) as u64,
        };
        let end = End {
            duration: None,
            count: Some(count),
        };
        let rate = if self.unpaced == Some(load.rate) {
            Rate::Max
        } else {
            Rate::Pps(load.rate)
        };
        let out = self.run_spec(self.spec(load.size, rate), end)?;
        let (tx, rx) = tx_rx(&out).ok_or(TrialError::NoFlow)?;
        let flow = out.flows.as_ref().and_then(|f| f.flows.first());
        let latency = flow.and_then(|f| f.latency).map(|l| LatencySummary {
            frames: rx,
            min_ns: l.min,
            mean_ns: l.mean,
            p50_ns: l.p50.unwrap_or(l.mean as u64),
            p99_ns: l.p99.unwrap_or(l.max),
            p999_ns: l.p999.unwrap_or(l.max),
            max_ns: l.max,
        });
        let loss = loss_ratio(tx, rx);
        let trial = TrialReport {
            size: load.size,
            rate_fps: load.rate,
            duration_s: load.duration.as_secs_f64(),
            burst: load.burst,
            tx,
            rx,
            loss_ratio: loss,
            latency,
        };
        self.log.push(Logged {
            test: self.test,
            trial,
            sent_fps: out.report.pps,
        });
        let line = format!(
            "trial {}: {:.0} fps{} → {}",
            self.log.len(),
            load.rate,
            match load.burst {
                Some(n) => format!(", burst {n}"),
                None => format!(" for {:.2} s", load.duration.as_secs_f64()),
            },
            if tx > rx {
                format!("loss {:.4} %", loss * 100.0)
            } else {
                "no loss".into()
            }
        );
        self.observer.trial(load.size, self.test, &line);
        Ok(TrialOutput { tx, rx, latency })
    }
}
