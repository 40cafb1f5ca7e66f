//! The RFC 2544 procedure over a session's port: at each frame size the max load, then the
//! asked tests (throughput by MLRsearch or the binary search, latency at the throughput, frame
//! loss rate, back-to-back), each trial one run judged by the port's receiver. Over several
//! directions at once (hosts' ports, RFC 2544 §14) every trial offers the load on each
//! direction and passes only if each passes; each direction's own throughput is searched after
//! the aggregate one. The searches are `linerate_bench`'s; the result types, tables and CSV
//! are `linerate_report`'s.

mod directions;
mod trial;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use linerate_bench::{
    BackToBack, BinarySearch, FrameLoss, FrameSize, LatencyTest, Mlr, SearchGoal, TrialReport,
};
use linerate_report::line_rate_pps;
use linerate_report::rfc2544::{Logged, Search, SizeResult, Test, Throughput};
use linerate_stream::{Rate, StreamSpec};

use crate::error::{LoadBound, TestBedError};
use linerate_session::End;
pub use trial::{Ports, counted};
use trial::{SessionTrial, TrialError, loss_ratio};

/// The smallest frame a trial sends: Ethernet, IPv4 and UDP headers, the 18-byte signature and
/// the FCS (docs/receive.md).
pub const MIN_SIZE: u32 = 14 + 20 + 8 + linerate_wire::signature::LEN as u32 + 4;

/// The highest load asked: the line rate, or a given rate.
#[derive(Debug, Clone, Copy)]
pub enum MaxRate {
    Line,
    Given(Rate),
}

/// What to measure and how, checked before the first trial.
#[derive(Debug, Clone)]
pub struct Rfc2544 {
    pub test: Test,
    pub search: Search,
    pub sizes: Vec<FrameSize>,
    pub goals: Vec<SearchGoal>,
    /// The binary search's precision (relative).
    pub width: f64,
    pub max: MaxRate,
    /// The lowest load searched; None: a thousandth of the max load.
    pub min: Option<Rate>,
    /// A final trial's duration (latency and frame loss trials too).
    pub trial: Duration,
    pub latency_trials: u32,
    pub b2b_trials: u32,
    /// The longest burst back-to-back tries; None: two seconds' worth at the max load.
    pub max_burst: Option<u64>,
    /// Waited after each trial for the frames still on their way.
    pub drain: Duration,
    /// Frames sent before each trial so that the DUT learns the addresses.
    pub learning_frames: u64,
    /// The trials' stream before its size and rate (signed).
    pub template: StreamSpec,
}

/// Why the procedure ended early.
#[derive(Debug, thiserror::Error)]
pub enum Rfc2544Error {
    /// A setting that cannot work at this size (the user's to fix).
    #[error("{0}")]
    Usage(String),
    #[error("stopped by a signal")]
    Stopped,
    #[error(transparent)]
    Trial(#[from] TrialError),
    #[error("{size}-byte frames")]
    Bench {
        size: u32,
        #[source]
        source: linerate_bench::Error,
    },
    #[error("the max-rate trial at {size} B sent nothing")]
    NothingSent { size: u32 },
}

/// Watches the procedure: which phase of which size runs, and each trial's line.
pub trait Rfc2544Observer {
    /// A phase begins (`64 B thr`, `64 B max`…).
    fn phase(&self, label: &str);
    /// A trial of `test` at `size` ended; `line` says what it found.
    fn trial(&self, size: u32, test: &str, line: &str);
    /// Who hears each trial's ticks (a second's counts), if anyone.
    fn ticks(&self) -> Option<&dyn linerate_engine::Observer> {
        None
    }
}

/// What the procedure measured, kept even when it ended early.
#[derive(Debug)]
pub struct Measured {
    pub sizes: Vec<SizeResult>,
    /// Every trial in the order run.
    pub trials: Vec<Logged>,
    /// The mode the port bound in, from the last run.
    pub mode: String,
    /// Why it ended before the last size; None when it ran in full.
    pub cut: Option<Rfc2544Error>,
}

impl Rfc2544 {
    /// Every size compiles for these ports before the first frame.
    pub fn check(&self, ports: &mut Ports<'_>) -> Result<(), TestBedError> {
        let link = ports.link_mbps();
        // Frames per second of a given rate at a size; a % without a link speed is refused
        // here, before the first trial, not found when a trial is cut short by it.
        let pps = |bound: LoadBound, rate: &Rate, size: usize| {
            rate.interval_ps(size, link)
                .map(|ps| 1e12 / ps)
                .map_err(|e| TestBedError::Load {
                    bound,
                    rate: rate.to_string(),
                    why: e.to_string(),
                })
        };
        for s in &self.sizes {
            let size = s.get() as usize;
            ports
                .compile(size)
                .map_err(|e| e.context(format!("size {size}")))?;
            let max = match &self.max {
                MaxRate::Given(r) => Some(pps(LoadBound::Max, r, size)?),
                MaxRate::Line => link.map(|mbps| line_rate_pps(size, mbps)),
            };
            let Some(min) = &self.min else { continue };
            let min = pps(LoadBound::Min, min, size)?;
            if let Some(max) = max
                && min > max
            {
                return Err(TestBedError::MinAboveMax { size, min, max });
            }
        }
        Ok(())
    }

    /// The phases it will run: per size the throughput search (for latency too), latency,
    /// frame loss and back-to-back, as asked; the max-rate trial is not counted.
    pub fn stages(&self) -> usize {
        let wants = |t: Test| self.test == t || self.test == Test::All;
        let per_size = [
            wants(Test::Throughput) || wants(Test::Latency),
            wants(Test::Latency),
            wants(Test::Loss),
            wants(Test::BackToBack),
        ]
        .iter()
        .filter(|&&w| w)
        .count();
        per_size * self.sizes.len()
    }

    /// A rough length of the whole run, to say up front, as (shortest, longest): full trials
    /// only (a search's short ones are left out), each followed by its drain. A search's trial
    /// count comes from the range it halves (a thousandth of the max load to the max, down to
    /// the width); frame loss counts its ten steps down from 100 %; a back-to-back search is
    /// one burst of about two seconds when the device takes it whole, and else ~20 halvings
    /// whose bursts add up to about two bursts more.
    pub fn estimate(&self) -> (Duration, Duration) {
        let wants = |t: Test| self.test == t || self.test == Test::All;
        let halvings = ((1000f64.ln() / (1.0 + self.width).ln()).log2().ceil()).max(1.0);
        let mut trials = 0.0;
        if wants(Test::Throughput) || wants(Test::Latency) {
            trials += halvings * self.goals.len() as f64;
        }
        if wants(Test::Latency) {
            trials += f64::from(self.latency_trials);
        }
        if wants(Test::Loss) {
            trials += 10.0;
        }
        let full = (self.trial + self.drain).mul_f64(trials);
        let (mut short, mut long) = (full, full);
        if wants(Test::BackToBack) {
            // Two seconds at the max load by default; a --max-burst is taken as no longer.
            let burst = Duration::from_secs(2);
            let searches = self.b2b_trials;
            short += (burst + self.drain) * searches;
            long += (burst * 3 + self.drain * 21) * searches;
        }
        let sizes = self.sizes.len() as u32;
        (short * sizes, long * sizes)
    }

    /// Runs the tests at every size, in order, on `ports` (whose receivers judge the trials).
    pub fn run(
        &self,
        ports: Ports<'_>,
        stop: Arc<AtomicBool>,
        observer: &dyn Rfc2544Observer,
    ) -> Measured {
        let link = ports.link_mbps();
        let mut trial = SessionTrial {
            ports,
            stop,
            drain: self.drain,
            learning: self.learning_frames,
            test: "throughput",
            log: Vec::new(),
            observer,
            mode: String::new(),
            unpaced: None,
            judge: None,
        };
        let mut sizes = Vec::new();
        let mut cut = None;
        for &size in &self.sizes {
            observer.phase(&format!("{} B", size.get()));
            let (r, e) = self.measure(size, link, &mut trial);
            sizes.push(r);
            if e.is_some() {
                cut = e;
                break;
            }
        }
        Measured {
            sizes,
            trials: trial.log,
            mode: trial.mode,
            cut,
        }
    }

    /// Runs the asked tests at one size; returns what was measured and, if it stopped early,
    /// why.
    fn measure(
        &self,
        size: FrameSize,
        link: Option<u64>,
        trial: &mut SessionTrial<'_>,
    ) -> (SizeResult, Option<Rfc2544Error>) {
        let s = size.get();
        let mut r = SizeResult {
            size: s,
            max_load_fps: 0.0,
            max_load_from: "",
            min_load_fps: 0.0,
            throughput: None,
            latency: None,
            latency_skipped: None,
            loss: None,
            back_to_back: None,
            directions: Vec::new(),
        };
        let first = trial.log.len();
        let e = self
            .loads(s, link, trial, &mut r)
            .and_then(|(min, max)| self.tests(size, min, max, trial, &mut r));
        r.directions = directions::results(&trial.ports.directions(), &trial.log[first..]);
        directions::sum_loss(&mut r, &trial.log[first..]);
        let e = e.and_then(|()| self.direction_throughputs(size, trial, &mut r));
        (r, e.err())
    }

    /// The max and min loads of a size.
    fn loads(
        &self,
        s: u32,
        link: Option<u64>,
        trial: &mut SessionTrial<'_>,
        r: &mut SizeResult,
    ) -> Result<(f64, f64), Rfc2544Error> {
        let (max, from) = self.max_load(s, link, trial)?;
        r.max_load_fps = max;
        r.max_load_from = from;
        trial.unpaced = (from != "given").then_some(max);
        let min = match self.min {
            Some(rate) => fps(rate, s, link)?,
            // Low enough for a DUT shaped far below the port (a 20 Mbit/s shaper on a 1 Gbit/s
            // port forwards 2 % of its 1518-byte line rate); each halving below the NDR costs
            // one trial.
            None => max / 1000.0,
        };
        r.min_load_fps = min;
        if min >= max {
            return Err(Rfc2544Error::Usage(format!(
                "{s} B: the min load {min:.0} fps is not below the max load {max:.0} fps"
            )));
        }
        Ok((min, max))
    }

    /// The asked tests at one size, between its loads.
    fn tests(
        &self,
        size: FrameSize,
        min: f64,
        max: f64,
        trial: &mut SessionTrial<'_>,
        r: &mut SizeResult,
    ) -> Result<(), Rfc2544Error> {
        let s = size.get();
        let wants = |t: Test| self.test == t || self.test == Test::All;
        let usage = |e: linerate_bench::Error| Rfc2544Error::Usage(e.to_string());
        if wants(Test::Throughput) || wants(Test::Latency) {
            phase(trial, s, "thr", "throughput");
            r.throughput = Some(self.throughput(size, min, max, trial)?);
        }
        if wants(Test::Latency) {
            let first = r
                .throughput
                .as_ref()
                .and_then(|t| t.lines().first().copied());
            match first.and_then(|g| g.throughput_fps) {
                None => {
                    r.latency_skipped = Some(format!(
                        "no rate met the loss goal {}: there is no throughput to measure latency at",
                        first.map_or(0.0, |g| g.loss_ratio)
                    ));
                }
                Some(rate) => {
                    phase(trial, s, "lat", "latency");
                    let t =
                        LatencyTest::new(rate, self.trial, self.latency_trials).map_err(usage)?;
                    r.latency = Some(t.run(size, trial).map_err(|e| failed(e, s, trial))?);
                }
            }
        }
        if wants(Test::Loss) {
            phase(trial, s, "loss", "loss");
            let t = FrameLoss::new(max, self.trial, 0.1).map_err(usage)?;
            r.loss = Some(t.run(size, trial).map_err(|e| failed(e, s, trial))?);
        }
        if wants(Test::BackToBack) {
            phase(trial, s, "b2b", "back-to-back");
            let burst = self.max_burst.unwrap_or((max * 2.0).ceil() as u64).max(1);
            let t = BackToBack::new(max, burst, self.b2b_trials).map_err(usage)?;
            r.back_to_back = Some(t.run(size, trial).map_err(|e| failed(e, s, trial))?);
        }
        Ok(())
    }

    /// Throughput of one size by the asked search.
    fn throughput(
        &self,
        size: FrameSize,
        min: f64,
        max: f64,
        trial: &mut SessionTrial<'_>,
    ) -> Result<Throughput, Rfc2544Error> {
        let s = size.get();
        let usage = |e: linerate_bench::Error| Rfc2544Error::Usage(e.to_string());
        match self.search {
            Search::Mlr => {
                let m = Mlr::new(self.goals.clone(), min, max).map_err(usage)?;
                let r = m.search(size, trial).map_err(|e| failed(e, s, trial))?;
                Ok(Throughput::Mlr(r))
            }
            Search::Binary => {
                let mut goals = Vec::new();
                for g in &self.goals {
                    let final_duration = Duration::from_secs_f64(g.final_duration_s);
                    let b = BinarySearch::new(g.loss_ratio, final_duration, self.width, min, max)
                        .map_err(usage)?;
                    goals.push(b.search(size, trial).map_err(|e| failed(e, s, trial))?);
                }
                Ok(Throughput::Binary { goals })
            }
        }
    }

    /// The max load of a size: the line rate, the rate given, or what a max-rate trial sent.
    fn max_load(
        &self,
        size: u32,
        link: Option<u64>,
        trial: &mut SessionTrial<'_>,
    ) -> Result<(f64, &'static str), Rfc2544Error> {
        match (self.max, link) {
            (MaxRate::Given(rate), _) => Ok((fps(rate, size, link)?, "given")),
            (MaxRate::Line, Some(mbps)) => Ok((line_rate_pps(size as usize, mbps), "line rate")),
            (MaxRate::Line, None) => {
                trial.observer.phase(&format!("{size} B max"));
                let end = End {
                    duration: Some(Duration::from_secs_f64(self.goals[0].initial_duration_s)),
                    count: None,
                };
                let out = trial
                    .run_load(size, linerate_stream::Rate::Max, end)
                    .map_err(|e| match e {
                        TrialError::Stopped => Rfc2544Error::Stopped,
                        e => e.into(),
                    })?;
                // Over several directions the slowest sender's rate is what every one keeps.
                let pps = out
                    .directions
                    .iter()
                    .map(|d| d.sent_fps)
                    .reduce(f64::min)
                    .unwrap_or(out.pps);
                let (tx, rx) = out.judged(None).map_or((0, 0), |d| (d.tx, d.rx));
                trial.log.push(Logged {
                    test: "max-rate",
                    trial: TrialReport {
                        size,
                        rate_fps: pps,
                        duration_s: out.elapsed_s,
                        burst: None,
                        tx,
                        rx,
                        loss_ratio: loss_ratio(tx, rx),
                        latency: None,
                    },
                    sent_fps: pps,
                    direction: None,
                    directions: if out.directions.len() > 1 {
                        out.directions
                    } else {
                        Vec::new()
                    },
                });
                if pps <= 0.0 {
                    return Err(Rfc2544Error::NothingSent { size });
                }
                Ok((pps, "max-rate trial"))
            }
        }
    }
}

/// Names the phase on the observer and in the trial log.
fn phase(trial: &mut SessionTrial<'_>, size: u32, label: &str, test: &'static str) {
    trial.observer.phase(&format!("{size} B {label}"));
    trial.test = test;
}

/// A search that failed: stopped by the flag, or a trial's failure at this size.
fn failed(e: linerate_bench::Error, size: u32, trial: &SessionTrial<'_>) -> Rfc2544Error {
    if trial.stopped() {
        Rfc2544Error::Stopped
    } else {
        Rfc2544Error::Bench { size, source: e }
    }
}

/// A rate in frames per second for `size`-byte frames.
fn fps(rate: Rate, size: u32, link: Option<u64>) -> Result<f64, Rfc2544Error> {
    let ps = rate
        .interval_ps(size as usize, link)
        .map_err(|why| Rfc2544Error::Usage(format!("rate at {size} B: {why}")))?;
    Ok(linerate_stream::PS_PER_S / ps)
}
