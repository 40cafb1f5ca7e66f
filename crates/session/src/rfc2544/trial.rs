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

use super::Rfc2544Observer;
use crate::error::SessionError;
use crate::multi::PortRun;
use crate::options::End;
use crate::session::{PortSession, RunOptions, Session};

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

/// Where the trials run.
#[derive(Debug)]
pub enum Ports<'a> {
    /// One port sends the trial's stream; its receiver judges it.
    One(&'a mut PortSession),
    /// Several ports send at once, one direction each: every run holds one stream (its
    /// addresses resolved), whose size and rate each trial sets; the port it goes toward counts
    /// it.
    Directions {
        session: &'a mut Session,
        runs: Vec<PortRun>,
    },
    /// Several directions whose ports are other machines' (a controller's agents): each trial
    /// is set up, started and counted there.
    Agents(Box<dyn AgentTrials>),
}

/// Trials over ports that are not this session's: the caller's, which sets each trial's
/// streams up where the ports are, starts them together and reads back what each direction
/// sent and received.
pub trait AgentTrials: std::fmt::Debug {
    /// The directions' names, in the order their results come.
    fn directions(&self) -> Vec<String>;
    /// The first sending port's link speed, Mbit/s, when known.
    fn link_mbps(&self) -> Option<u64>;
    /// Where the trials run, for the report's backend field.
    fn backend(&self) -> String;
    /// Sends every direction's stream at `size` and `rate` until `end` and waits up to `drain`
    /// for what is on its way; per direction, what was sent and what arrived once.
    /// Returns too how long the senders sent, seconds (the rest was the drain).
    fn run(
        &mut self,
        size: usize,
        rate: Rate,
        end: End,
        drain: Duration,
        stop: &Arc<AtomicBool>,
    ) -> Result<(Vec<DirectionTrial>, f64), SessionError>;
}

impl Ports<'_> {
    /// The directions' names (the streams'), empty for one port.
    pub fn directions(&self) -> Vec<String> {
        match self {
            Ports::One(_) => Vec::new(),
            Ports::Directions { runs, .. } => {
                runs.iter().map(|r| r.streams[0].name.clone()).collect()
            }
            Ports::Agents(a) => a.directions(),
        }
    }

    /// The first sending port of this session (None: the ports are agents'): its link speed
    /// and its mode stand for all.
    pub fn first(&self) -> Option<&PortSession> {
        match self {
            Ports::One(p) => Some(p),
            Ports::Directions { session, runs } => Some(session.port(runs[0].port)),
            Ports::Agents(_) => None,
        }
    }

    /// The first sending port's link speed, Mbit/s.
    pub fn link_mbps(&self) -> Option<u64> {
        match self {
            Ports::Agents(a) => a.link_mbps(),
            _ => self.first().and_then(PortSession::link_mbps),
        }
    }

    /// Compiles the trials' stream at `size` on every sending port.
    pub fn compile(&self, size: usize, template: &StreamSpec) -> Result<(), SessionError> {
        match self {
            Ports::One(p) => p
                .compile(&[StreamSpec {
                    size,
                    ..template.clone()
                }])
                .map(drop),
            Ports::Directions { session, runs } => runs.iter().try_for_each(|r| {
                let streams: Vec<StreamSpec> = r
                    .streams
                    .iter()
                    .map(|s| StreamSpec { size, ..s.clone() })
                    .collect();
                session.port(r.port).compile(&streams).map(drop)
            }),
            // Compiled where the ports are, with each trial's setup.
            Ports::Agents(_) => Ok(()),
        }
    }

    fn check_receivers(&self) -> Result<(), SessionError> {
        match self {
            Ports::One(p) => p.check_receiver(),
            Ports::Directions { session, .. } => session
                .ports()
                .iter()
                .try_for_each(PortSession::check_receiver),
            // An agent checks its own links; a dead one fails the trial there.
            Ports::Agents(_) => Ok(()),
        }
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
    pub template: StreamSpec,
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
        self.ports.check_receivers()?;
        let start = Instant::now();
        let run = RunOptions {
            end,
            stop: &self.stop,
            observer: &Quiet,
            drain: self.drain,
            start_at: None,
        };
        // The one place a trial's size and rate are set.
        let ran = match &mut self.ports {
            Ports::One(port) => {
                let spec = StreamSpec {
                    size: size as usize,
                    rate,
                    ..self.template.clone()
                };
                one(port.run(&[spec], run)?)
            }
            Ports::Directions { session, runs } => {
                let mut runs = runs.clone();
                for s in runs.iter_mut().flat_map(|r| &mut r.streams) {
                    s.size = size as usize;
                    s.rate = rate;
                }
                let plans = session.compile_all(&runs)?;
                directions(&runs, &plans, &session.run_all(&runs, &plans, run)?)
            }
            Ports::Agents(agents) => {
                let (directions, elapsed_s) =
                    agents.run(size as usize, rate, end, self.drain, &self.stop)?;
                Ran {
                    pps: directions.first().map_or(0.0, |d| d.sent_fps),
                    directions,
                    elapsed_s,
                    mode: None,
                }
            }
        };
        if self.stopped() {
            return Err(TrialError::Stopped);
        }
        // A trial whose receive link died is no measurement: the run ends with the trials so
        // far (issue 27 #5).
        self.ports.check_receivers()?;
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

/// One port's run as its one direction.
fn one(out: crate::session::Outcome) -> Ran {
    let tx: u64 = out.sent.iter().map(|s| s.2).sum();
    let flow = out.flows.as_ref().and_then(|f| f.flows.first());
    let directions = flow
        .map(|f| direction("", tx, f, out.report.pps))
        .into_iter()
        .collect();
    Ran {
        directions,
        pps: out.report.pps,
        elapsed_s: out.report.elapsed_s,
        mode: out.report.workers.first().map(|w| w.mode.clone()),
    }
}

/// Each direction's counts from a run over several ports: what its port sent of its flow,
/// what the port it goes toward received.
fn directions(
    runs: &[PortRun],
    plans: &[linerate_stream::Plan],
    outcomes: &[crate::multi::PortOutcome],
) -> Ran {
    let mut ran = Ran {
        directions: Vec::new(),
        pps: 0.0,
        elapsed_s: 0.0,
        mode: None,
    };
    for (r, plan) in runs.iter().zip(plans) {
        let id = plan.first_flow;
        let by = outcomes.iter().find(|o| o.port == r.port);
        let report = by.and_then(|o| o.report.as_ref());
        let tx = by
            .and_then(|o| o.sent.iter().find(|s| s.0 == id))
            .map_or(0, |s| s.2);
        let pps = report.map_or(0.0, |r| r.pps);
        if ran.mode.is_none() {
            ran.mode = report
                .and_then(|r| r.workers.first())
                .map(|w| w.mode.clone());
            ran.pps = pps;
        }
        ran.elapsed_s = ran.elapsed_s.max(report.map_or(0.0, |r| r.elapsed_s));
        let flow = r.to[0]
            .and_then(|to| outcomes.iter().find(|o| o.port == to))
            .and_then(|o| o.flows.as_ref())
            .and_then(|f| f.flows.iter().find(|f| f.flow == id));
        let name = &r.streams[0].name;
        ran.directions.push(match flow {
            Some(f) => direction(name, tx, f, pps),
            None => DirectionTrial {
                direction: name.clone(),
                tx,
                rx: 0,
                loss_ratio: loss_ratio(tx, 0),
                sent_fps: pps,
                latency: None,
            },
        });
    }
    ran
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
