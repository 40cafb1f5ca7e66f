//! The `Trial` of `linerate_bench` over a session's ports: a signed stream of the load's size
//! and rate, for its duration or its burst, then the drain wait, judged by the receivers'
//! counts. On one port its receiver judges the one flow; over several (hosts, both directions)
//! every direction sends the load at once and the trial passes only if every direction does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use linerate_bench::{LatencySummary, Load, Trial, TrialOutput, TrialReport};
use linerate_engine::{Observer, Snapshot};
use linerate_report::rfc2544::{DirectionTrial, Logged};
use linerate_stream::{Rate, StreamSpec};

use linerate_session::End;

use super::Rfc2544Observer;
use crate::bed::{BedRun, Go, TestBed};
use crate::error::TestBedError;

/// Why a trial did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    #[error("stopped by a signal")]
    Stopped,
    #[error(transparent)]
    Failed(#[from] TestBedError),
    #[error("the receiver reported no flow")]
    NoFlow,
}

impl From<linerate_session::SessionError> for TrialError {
    fn from(e: linerate_session::SessionError) -> Self {
        TrialError::Failed(e.into())
    }
}

/// Trials show on the observer's line, not as the engine's live line.
struct Quiet;

impl Observer for Quiet {
    fn tick(&self, _: &Snapshot) {}
}

/// Where the trials run: a test bed, and what each trial sends there — one stream on a bed of
/// one port, judged by its receiver; or one stream a direction between hosts, all sent at
/// once, each counted where it goes.
#[derive(Debug)]
pub struct Ports<'a> {
    pub bed: &'a mut TestBed,
    /// One per direction (from one host to another); on one port, the trials' template.
    pub streams: Vec<StreamSpec>,
}

impl Ports<'_> {
    /// The directions' names (the streams'), empty for one port.
    pub fn directions(&self) -> Vec<String> {
        if self.bed.is_one_port() {
            Vec::new()
        } else {
            self.streams.iter().map(|s| s.name.clone()).collect()
        }
    }

    /// The first sending port's link speed, Mbit/s.
    pub fn link_mbps(&self) -> Option<u64> {
        self.bed.link_mbps()
    }

    /// Every direction's stream at `size` (and, when given, `rate` and `count`).
    fn sized(&self, size: usize, rate: Option<Rate>) -> Vec<StreamSpec> {
        self.streams
            .iter()
            .map(|s| StreamSpec {
                size,
                rate: rate.unwrap_or(s.rate),
                ..s.clone()
            })
            .collect()
    }

    /// Compiles the trials' streams at `size` on every sending port.
    pub fn compile(&mut self, size: usize) -> Result<(), TestBedError> {
        if self.bed.on_agents() {
            // Compiled where the ports are, with each trial's setup.
            return Ok(());
        }
        let streams = self.sized(size, None);
        if self.bed.flows().is_empty() {
            // Hosts resolve their next hops once, at the first compile; and from here on the
            // bed says where each flow goes (a time series names them).
            self.bed.compile(&streams, End::default())?;
        }
        self.bed.check(&streams)
    }
}

/// What one run sent and what came back, per direction (one for one port).
pub(super) struct Ran {
    pub directions: Vec<DirectionTrial>,
    /// Frames per second the (first) sender kept.
    pub pps: f64,
    pub elapsed_s: f64,
    pub mode: Option<String>,
}

impl Ran {
    /// The direction a trial is judged by: `judge`'s, or with None the one that lost the most
    /// (every direction must pass).
    pub fn judged(&self, judge: Option<usize>) -> Option<&DirectionTrial> {
        match judge {
            Some(d) => self.directions.get(d),
            None => self
                .directions
                .iter()
                .reduce(|a, b| if b.loss_ratio > a.loss_ratio { b } else { a }),
        }
    }
}

pub(super) struct SessionTrial<'a> {
    pub ports: Ports<'a>,
    pub stop: Arc<AtomicBool>,
    pub drain: Duration,
    pub learning: u64,
    pub test: &'static str,
    pub log: Vec<Logged>,
    pub observer: &'a dyn Rfc2544Observer,
    /// The mode the port bound in, from the last run (copy, zero-copy, skb…).
    pub mode: String,
    /// The max load when it is the port's own limit (the line rate, or what a max-rate trial
    /// sent): a trial at exactly this load goes unpaced, as fast as the port takes it.
    pub unpaced: Option<f64>,
    /// Over several directions, the one whose loss judges the trial; None: the worst of them.
    pub judge: Option<usize>,
}

impl SessionTrial<'_> {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Runs the trial's stream at `size` and `rate` (on every direction) and waits out the
    /// whole drain: the receiver returns as soon as everything arrived, but the DUT's queue and
    /// token bucket need the rest of it to be as before.
    pub fn run_load(&mut self, size: u32, rate: Rate, end: End) -> Result<Ran, TrialError> {
        if self.stopped() {
            return Err(TrialError::Stopped);
        }
        // The link may have died during the last drain: no trial (up to --trial long) on it.
        self.ports.bed.check_receivers()?;
        let start = Instant::now();
        // The one place a trial's size and rate are set.
        let streams = self.ports.sized(size as usize, Some(rate));
        self.ports.bed.compile(&streams, end)?;
        let go = Go {
            stop: &self.stop,
            observer: self.observer.ticks().unwrap_or(&Quiet),
            drain: self.drain,
            start_at: None,
            cleared: false,
        };
        let ran = self.ports.bed.run(go)?;
        if let Some(e) = &ran.summary.error {
            return Err(TrialError::Failed(TestBedError::Agents(e.clone())));
        }
        let ran = directions(&ran, self.ports.bed.is_one_port());
        if self.stopped() {
            return Err(TrialError::Stopped);
        }
        // A trial whose receive link died is no measurement: the run ends with the trials so
        // far (issue 27 #5).
        self.ports.bed.check_receivers()?;
        if let Some(m) = &ran.mode {
            self.mode.clone_from(m);
        }
        let waited = start
            .elapsed()
            .saturating_sub(Duration::from_secs_f64(ran.elapsed_s));
        std::thread::sleep(self.drain.saturating_sub(waited));
        Ok(ran)
    }
}

/// Each direction's counts from a run: what its place sent of its flow, what the place it goes
/// toward received of it once (duplicates aside). On one port, its one flow, unnamed.
fn directions(run: &BedRun, one_port: bool) -> Ran {
    let first = run.places.iter().find_map(|p| p.report.as_ref());
    let pps = match first {
        Some(r) => r.pps,
        None => run.flows.first().map_or(0.0, |f| f.sent_fps),
    };
    let directions = run
        .flows
        .iter()
        .map(|f| {
            let name = if one_port { "" } else { f.name.as_str() };
            match &f.received {
                Some(r) => direction(name, f.sent, r, f.sent_fps),
                None => counted(name, f.sent, 0, f.sent_fps, None),
            }
        })
        .collect();
    Ran {
        directions,
        pps,
        elapsed_s: run.summary.elapsed_s,
        mode: run.mode.clone(),
    }
}

/// A direction's counts from its flow's report: frames received once (duplicates aside).
fn direction(name: &str, tx: u64, f: &linerate_rx::FlowReport, pps: f64) -> DirectionTrial {
    counted(
        name,
        tx,
        f.rx_frames - f.duplicates,
        pps,
        f.latency.as_ref(),
    )
}

/// A direction's trial from its counts: `rx` frames received once of `tx` sent, and its
/// latency (percentiles the flow has no histogram for read as its mean and its max).
pub fn counted(
    name: &str,
    tx: u64,
    rx: u64,
    sent_fps: f64,
    latency: Option<&linerate_rx::Latency>,
) -> DirectionTrial {
    DirectionTrial {
        direction: name.to_owned(),
        tx,
        rx,
        loss_ratio: loss_ratio(tx, rx),
        sent_fps,
        latency: latency.map(|l| LatencySummary {
            frames: rx,
            min_ns: l.min,
            mean_ns: l.mean,
            p50_ns: l.p50.unwrap_or(l.mean as u64),
            p99_ns: l.p99.unwrap_or(l.max),
            p999_ns: l.p999.unwrap_or(l.max),
            max_ns: l.max,
        }),
    }
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
            let end = End {
                duration: None,
                count: Some(self.learning),
            };
            self.run_load(load.size, Rate::Pps(1e4), end)?;
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
        let ran = self.run_load(load.size, rate, end)?;
        let judged = ran.judged(self.judge).ok_or(TrialError::NoFlow)?;
        let (tx, rx, mut latency, loss) = (judged.tx, judged.rx, judged.latency, judged.loss_ratio);
        let several = ran.directions.len() > 1;
        if several && self.judge.is_none() {
            // The aggregate's latency is every direction's frames'.
            let each: Vec<LatencySummary> =
                ran.directions.iter().filter_map(|d| d.latency).collect();
            latency = super::directions::pooled(&each);
        }
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
        let line = format!(
            "trial {}: {:.0} fps{}{} → {}",
            self.log.len() + 1,
            load.rate,
            if several { " each way" } else { "" },
            match load.burst {
                Some(n) => format!(", burst {n}"),
                None => format!(" for {:.2} s", load.duration.as_secs_f64()),
            },
            if several {
                ran.directions
                    .iter()
                    .map(|d| format!("{} {}", d.direction, loss_word(d.tx, d.rx, d.loss_ratio)))
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                loss_word(tx, rx, loss)
            }
        );
        self.log.push(Logged {
            test: self.test,
            trial,
            sent_fps: ran.pps,
            direction: self.judge.map(|d| ran.directions[d].direction.clone()),
            directions: if several { ran.directions } else { Vec::new() },
        });
        self.observer.trial(load.size, self.test, &line);
        Ok(TrialOutput { tx, rx, latency })
    }
}

fn loss_word(tx: u64, rx: u64, loss: f64) -> String {
    if tx > rx {
        format!("loss {:.4} %", loss * 100.0)
    } else {
        "no loss".into()
    }
}
