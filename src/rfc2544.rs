//! `linerate rfc2544`: the four RFC 2544 benchmarks of a device (throughput with MLRsearch or
//! the binary search, latency, frame loss rate, back-to-back) run by `linerate_bench` over a
//! [`Session`]: each trial is one run of a signed stream, judged by the receiver's per-flow
//! counts. Tables in the RFC's terms on stdout, JSON with every trial, CSV and plots.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use linerate_bench::{
    BackToBack, BackToBackResult, BinaryResult, BinarySearch, FrameLoss, FrameLossResult,
    FrameSize, GoalStatus, LatencyResult, LatencySummary, LatencyTest, Load, Mlr, MlrResult,
    SearchGoal, Trial, TrialOutput, TrialReport,
};
use linerate_engine::{Observer, Snapshot};
use linerate_report::{Curve, OutputFile, Panel, line_rate_pps, wire_mbps};
use linerate_stream::StreamSpec;
use serde::Serialize;

use crate::cli::{AfXdpArgs, Backend, ClockArg, ReceiverArgs, XdpAttach, parse_duration};
use crate::output;
use crate::session::{End, PortOptions, RxTarget, Session};
use crate::usage::{Interrupted, usage};

/// The smallest frame a trial sends: Ethernet, IPv4 and UDP headers, the 18-byte signature and
/// the FCS (docs/receive.md).
const MIN_SIZE: u32 = 14 + 20 + 8 + linerate_wire::signature::LEN as u32 + 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// The highest rate without loss (NDR) and within each loss goal (PDR), per size.
    Throughput,
    /// Latency at the throughput found (§26.2).
    Latency,
    /// Frame loss rate from 100 % of the max rate down in 10 % steps (§26.3).
    Loss,
    /// The longest burst at the max rate without loss (§26.4).
    BackToBack,
    /// All four, in that order.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    /// RFC 9971 MLRsearch: every goal at once, short trials first.
    Mlr,
    /// The classic RFC 2544 binary search, one search per goal, every trial full length.
    Binary,
}

#[derive(Debug, Args)]
pub struct Rfc2544Args {
    /// Which benchmark.
    #[arg(value_enum)]
    pub test: Test,
    /// Interface to transmit on (the DUT's input).
    #[arg(short, long, value_name = "IFACE")]
    pub interface: String,
    /// Receive on IFACE[@NETNS] (the DUT's output); without a value, the lab's receive end.
    #[arg(long, value_name = "IFACE[@NETNS]", num_args = 0..=1, default_missing_value = "")]
    pub rx: Option<String>,
    /// Frame sizes, FCS included (at least 64: the signature must fit).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "64,128,256,512,1024,1280,1518"
    )]
    pub sizes: Vec<u32>,
    /// Trial duration: the final (full-length) trial of the searches, and every trial of the
    /// latency and loss tests.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub trial: Duration,
    /// MLRsearch's first, shortest trials (default: 1 s, or --trial if shorter).
    #[arg(long, value_parser = parse_duration)]
    pub initial_trial: Option<Duration>,
    #[arg(long, value_enum, default_value = "mlr")]
    pub search: Search,
    /// Loss-ratio goals: 0 is NDR, 0.5% a PDR; a ratio (0.005) or a percentage.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5%")]
    pub goals: Vec<String>,
    /// Share of trial time allowed to exceed the goal's loss at a lower bound (RFC 9971 exceed
    /// ratio; 0 = RFC 2544's one lossy trial rules a load out).
    #[arg(long, default_value = "0")]
    pub exceed: String,
    /// Relative width the searches stop at, e.g. 0.5% or 0.005.
    #[arg(long, default_value = "0.5%")]
    pub precision: String,
    /// The highest load: the line rate (when the port reports it or --link-speed gives it, else
    /// a measured max-rate trial), or a rate: 1.5M, 200k (frames/s), 500Mbps, 50%.
    #[arg(long, default_value = "line")]
    pub max_rate: String,
    /// The lowest load worth offering (default: 0.1 % of the max): a goal that fails there has no
    /// rate that meets it.
    #[arg(long)]
    pub min_rate: Option<String>,
    /// Wait after each trial for frames still in the DUT (RFC 2544: 2 s).
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub drain: Duration,
    /// Frames sent before each trial so a bridge learns the addresses (RFC 2544 §23); 0: none.
    #[arg(long, default_value_t = 0)]
    pub learning_frames: u64,
    /// Latency trials per size (RFC 2544: at least 20).
    #[arg(long, default_value_t = linerate_bench::DEFAULT_LATENCY_TRIALS, value_parser = clap::value_parser!(u32).range(1..))]
    pub latency_trials: u32,
    /// Back-to-back searches per size (RFC 2544: at least 50).
    #[arg(long, default_value_t = linerate_bench::DEFAULT_BACK_TO_BACK_TRIALS, value_parser = clap::value_parser!(u32).range(1..))]
    pub b2b_trials: u32,
    /// Longest burst the back-to-back search tries (default: 2 s at the max rate).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_burst: Option<u64>,
    /// Source MAC of the trials' frames (default: the port's).
    #[arg(long)]
    pub src_mac: Option<linerate_wire::Mac>,
    /// Destination MAC: the DUT's port (default: the lab's DUT on a lab, else broadcast).
    #[arg(long)]
    pub dst_mac: Option<linerate_wire::Mac>,
    /// Source IPv4 address (default 198.18.0.1, RFC 2544's benchmarking range; a lab's own).
    #[arg(long)]
    pub src_ip: Option<std::net::Ipv4Addr>,
    /// Destination IPv4 address (default 198.18.0.2; a lab's own).
    #[arg(long)]
    pub dst_ip: Option<std::net::Ipv4Addr>,
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
    /// One worker per core, e.g. 0,1.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub cores: Vec<usize>,
    /// Link speed for the line rate and % of line when the port does not report it.
    #[arg(long, value_parser = crate::cli::parse_link_speed)]
    pub link_speed: Option<u64>,
    /// With --rx IFACE: native (drv) or generic (skb) XDP for the receive program.
    #[arg(long, value_enum, default_value = "drv")]
    pub rx_mode: XdpAttach,
    /// Clock both ends stamp with: monotonic (one host) or tai (two hosts synced by PTP).
    #[arg(long, value_enum, default_value = "monotonic")]
    pub clock: ClockArg,
    /// Write the result with every trial (JSON); `-` prints it on stdout instead of the tables.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the results as CSV, one row per figure.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Plot throughput against size and loss against offered load (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub afxdp: AfXdpArgs,
}

/// A ratio given as `0.005` or `0.5%`.
fn ratio(flag: &str, text: &str) -> Result<f64> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    v.ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| usage(format!("{flag} {text}: not a number or a percentage")))
}

/// The highest load asked: the line rate, or a given rate.
#[derive(Debug, Clone, Copy)]
enum MaxRate {
    Line,
    Given(linerate_stream::Rate),
}

/// Everything the command checked before the first trial.
#[derive(Debug)]
struct Plan {
    sizes: Vec<FrameSize>,
    goals: Vec<SearchGoal>,
    width: f64,
    max: MaxRate,
    min: Option<linerate_stream::Rate>,
}

fn check(args: &Rfc2544Args) -> Result<Plan> {
    if args.sizes.is_empty() {
        return Err(usage("--sizes needs at least one size"));
    }
    let mut sizes = Vec::new();
    for (i, &s) in args.sizes.iter().enumerate() {
        if args.sizes[..i].contains(&s) {
            return Err(usage(format!("--sizes names {s} twice")));
        }
        sizes.push(FrameSize::new(s, MIN_SIZE).map_err(|e| {
            usage(format!(
                "--sizes {s}: {e} (Ethernet + IPv4 + UDP + the 18-byte signature + FCS)"
            ))
        })?);
    }
    let width = ratio("--precision", &args.precision)?;
    let exceed = ratio("--exceed", &args.exceed)?;
    let initial = args
        .initial_trial
        .unwrap_or(args.trial.min(Duration::from_secs(1)));
    let mut goals = Vec::new();
    for g in &args.goals {
        let loss = ratio("--goals", g)?;
        let goal = SearchGoal::new(loss, args.trial)
            .and_then(|x| x.with_exceed_ratio(exceed))
            .and_then(|x| x.with_width(width))
            .and_then(|x| x.with_initial_duration(initial))
            .map_err(|e| usage(format!("--goals {g}: {e}")))?;
        if goals.iter().any(|x: &SearchGoal| x.loss_ratio == loss) {
            return Err(usage(format!("--goals names {g} twice")));
        }
        goals.push(goal);
    }
    if goals.is_empty() {
        return Err(usage("--goals needs at least one loss ratio"));
    }
    let rate = |flag: &str, text: &str| {
        linerate_stream::Rate::parse(text)
            .map_err(|e| usage(format!("{flag} {text}: {e}")))
            .and_then(|r| match r {
                linerate_stream::Rate::Max => Err(usage(format!(
                    "{flag} max: give line or a rate (the max load must be a known number of frames)"
                ))),
                r => Ok(r),
            })
    };
    let max = if args.max_rate.eq_ignore_ascii_case("line") {
        MaxRate::Line
    } else {
        MaxRate::Given(rate("--max-rate", &args.max_rate)?)
    };
    let min = args
        .min_rate
        .as_deref()
        .map(|m| rate("--min-rate", m))
        .transpose()?;
    if args.rx.is_none() {
        return Err(usage(
            "rfc2544 judges each trial by what came back: give the receive port with --rx \
             IFACE[@NETNS] (or --rx alone on a lab's sender)",
        ));
    }
    Ok(Plan {
        sizes,
        goals,
        width,
        max,
        min,
    })
}

/// One trial as run, with where it belongs: the audit trail, kept even when a search is cut.
#[derive(Debug, Clone, Serialize)]
struct Logged {
    test: &'static str,
    #[serde(flatten)]
    trial: TrialReport,
    /// The rate the sender really kept, frames/s.
    sent_fps: f64,
}

#[derive(Debug, thiserror::Error)]
enum TrialError {
    #[error("stopped by a signal")]
    Stopped,
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// The `Trial` of linerate_bench over a session: a signed stream of the load's size and rate,
/// for its duration or its burst, then the drain wait, judged by the receiver's counts.
struct SessionTrial<'a> {
    session: &'a mut Session,
    stop: Arc<AtomicBool>,
    drain: Duration,
    learning: u64,
    test: &'static str,
    log: Vec<Logged>,
    bar: &'a ProgressBar,
    /// A line per trial on stderr (it is no terminal: a log, a test) instead of the bar.
    lines: bool,
    /// The mode the port bound in, from the last run (copy, zero-copy, skb…).
    mode: String,
    template: StreamSpec,
    /// The max load when it is the port's own limit (the line rate, or what a max-rate trial
    /// sent): a trial at exactly this load goes unpaced, as fast as the port takes it.
    unpaced: Option<f64>,
}

/// The trials' stream before its size and rate: tx's seed stream, signed, with the addresses
/// the command line gives.
fn template(args: &Rfc2544Args) -> StreamSpec {
    StreamSpec {
        name: "rfc2544".into(),
        signature: true,
        src_mac: args.src_mac,
        dst_mac: args.dst_mac,
        src_ip: args.src_ip.map(Into::into),
        dst_ip: args.dst_ip.map(Into::into),
        ..StreamSpec::seed()
    }
}

impl SessionTrial<'_> {
    fn spec(&self, size: u32, rate: linerate_stream::Rate) -> StreamSpec {
        StreamSpec {
            size: size as usize,
            rate,
            ..self.template.clone()
        }
    }

    /// Runs the spec and waits out the whole drain: the receiver returns as soon as everything
    /// arrived, but the DUT's queue and token bucket need the rest of it to be as before.
    fn run_spec(
        &mut self,
        spec: StreamSpec,
        end: End,
    ) -> Result<crate::session::Outcome, TrialError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(TrialError::Stopped);
        }
        let start = Instant::now();
        let out = self
            .session
            .run(&[spec], end, self.stop.clone(), &Quiet, self.drain)?;
        if self.stop.load(Ordering::Relaxed) {
            return Err(TrialError::Stopped);
        }
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

/// Trials show on the progress line, not as the engine's live line.
struct Quiet;

impl Observer for Quiet {
    fn tick(&self, _: &Snapshot) {}
}

impl Trial for SessionTrial<'_> {
    type Error = TrialError;

    fn run(&mut self, load: &Load) -> Result<TrialOutput, TrialError> {
        if self.learning > 0 {
            let spec = self.spec(load.size, linerate_stream::Rate::Pps(1e4));
            self.run_spec(
                spec,
                End {
                    duration: None,
                    count: Some(self.learning),
                },
            )?;
        }
        let end = match load.burst {
            Some(n) => End {
                duration: None,
                count: Some(n),
            },
            // The frames the load asks for, not a time: a sender held up for a moment (a
            // shared core) still offers them all, so the loss is judged on the intended frames.
            None => End {
                duration: None,
                count: Some((load.rate * load.duration.as_secs_f64()).round().max(1.0) as u64),
            },
        };
        let rate = if self.unpaced == Some(load.rate) {
            linerate_stream::Rate::Max
        } else {
            linerate_stream::Rate::Pps(load.rate)
        };
        let out = self.run_spec(self.spec(load.size, rate), end)?;
        let tx: u64 = out.sent.iter().map(|s| s.2).sum();
        let flow = out
            .flows
            .as_ref()
            .and_then(|f| f.flows.first())
            .ok_or_else(|| anyhow::anyhow!("the receiver reported no flow"))?;
        let rx = flow.rx_frames - flow.duplicates;
        let latency = flow.latency.map(|l| LatencySummary {
            frames: rx,
            min_ns: l.min,
            mean_ns: l.mean,
            p50_ns: l.p50.unwrap_or(l.mean as u64),
            p99_ns: l.p99.unwrap_or(l.max),
            p999_ns: l.p999.unwrap_or(l.max),
            max_ns: l.max,
        });
        let loss = if tx == 0 {
            0.0
        } else {
            tx.saturating_sub(rx) as f64 / tx as f64
        };
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
        if self.lines {
            eprintln!("{} B {}: {line}", load.size, self.test);
        } else {
            self.bar.set_message(line);
        }
        Ok(TrialOutput { tx, rx, latency })
    }
}

/// Throughput of one size by either search.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "search")]
enum Throughput {
    Mlr(MlrResult),
    Binary { goals: Vec<BinaryResult> },
}

/// One goal's answer, as both searches report it.
#[derive(Debug, Clone, Copy, Serialize)]
struct GoalLine {
    loss_ratio: f64,
    status: GoalStatus,
    throughput_fps: Option<f64>,
    conditional_fps: Option<f64>,
}

impl Throughput {
    fn lines(&self) -> Vec<GoalLine> {
        match self {
            Throughput::Mlr(r) => r
                .goals
                .iter()
                .map(|g| GoalLine {
                    loss_ratio: g.goal.loss_ratio,
                    status: g.status,
                    throughput_fps: g.throughput_fps(),
                    conditional_fps: g.conditional_throughput_fps,
                })
                .collect(),
            Throughput::Binary { goals } => goals
                .iter()
                .map(|g| GoalLine {
                    loss_ratio: g.loss_ratio,
                    status: g.status,
                    throughput_fps: g.throughput_fps,
                    conditional_fps: None,
                })
                .collect(),
        }
    }

    fn trial_time_s(&self) -> f64 {
        match self {
            Throughput::Mlr(r) => r.trial_time_s,
            Throughput::Binary { goals } => goals.iter().map(|g| g.trial_time_s).sum(),
        }
    }

    fn trials(&self) -> usize {
        match self {
            Throughput::Mlr(r) => r.trials.len(),
            Throughput::Binary { goals } => goals.iter().map(|g| g.trials.len()).sum(),
        }
    }
}

/// Everything measured at one frame size.
#[derive(Debug, Clone, Serialize)]
struct SizeResult {
    size: u32,
    max_load_fps: f64,
    /// Where the max load came from: the line rate, the rate given, or a max-rate trial.
    max_load_from: &'static str,
    min_load_fps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    throughput: Option<Throughput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency: Option<LatencyResult>,
    /// Why latency was not measured (no rate met the first goal).
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_skipped: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    loss: Option<FrameLossResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    back_to_back: Option<BackToBackResult>,
}

#[derive(Debug, Serialize)]
struct Context {
    linerate_version: &'static str,
    test: Test,
    search: Search,
    interface: String,
    rx: String,
    backend: String,
    mode: String,
    link_speed_mbps: Option<u64>,
    cores: Vec<usize>,
    trial_s: f64,
    initial_trial_s: f64,
    drain_s: f64,
    learning_frames: u64,
    goals: Vec<SearchGoal>,
    os: String,
    kernel: String,
    cpu_model: String,
    hostname: String,
    date: String,
}

#[derive(Debug, Serialize)]
struct Rfc2544Result {
    context: Context,
    sizes: Vec<SizeResult>,
    /// Stopped (Ctrl-C) or failed before the end: what was measured is here, and every trial.
    interrupted: bool,
    /// Wall-clock time of the whole run, waits included.
    total_time_s: f64,
    /// Sum of the trials' durations (what RFC 9971 compares; the waits come on top).
    trial_time_s: f64,
    /// Every trial in the order run, those of a search cut short included.
    trials: Vec<Logged>,
}

pub fn run(args: &Rfc2544Args) -> Result<()> {
    let plan = check(args)?;
    let outputs = Outputs::reserve(args)?;
    let backend = args.backend.unwrap_or_else(crate::tx::default_backend);
    let mut session = Session::open(&PortOptions {
        backend,
        cores: args.cores.clone(),
        link_speed: args.link_speed,
        clock: args.clock,
        afxdp: args.afxdp.clone(),
        ..PortOptions::interface(&args.interface)
    })?;
    // One flow per trial: a small table keeps the receiver's clearing between trials cheap.
    let receiver = ReceiverArgs {
        rx_flows: 16,
        rx_hist_flows: 1,
        clock: args.clock,
        rx_pass: false,
    };
    let target = args.rx.clone().unwrap_or_default();
    session.receive(&RxTarget {
        target: target.clone(),
        mode: args.rx_mode,
        receiver,
    })?;
    // Every size compiles for this port before the first frame.
    for s in &plan.sizes {
        session
            .compile(&[StreamSpec {
                size: s.get() as usize,
                ..template(args)
            }])
            .with_context(|| format!("size {}", s.get()))?;
    }
    let link = session.link_mbps();
    if matches!(plan.max, MaxRate::Line) && link.is_none() {
        eprintln!(
            "linerate: {} reports no link speed: the max load of each size is measured by a \
             max-rate trial (give --link-speed or --max-rate to set it)",
            args.interface
        );
    }
    let stop = crate::tx::stop_flag()?;
    let started = Instant::now();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{prefix:>8} {spinner} {elapsed_precise} {msg}")
                .expect("valid template"),
        )
    };
    bar.enable_steady_tick(Duration::from_millis(200));
    let mut trial = SessionTrial {
        session: &mut session,
        stop: stop.clone(),
        drain: args.drain,
        learning: args.learning_frames,
        test: "throughput",
        log: Vec::new(),
        bar: &bar,
        lines: !args.quiet && !std::io::stderr().is_terminal(),
        mode: String::new(),
        template: template(args),
        unpaced: None,
    };
    let mut sizes = Vec::new();
    let mut cut: Option<anyhow::Error> = None;
    for &size in &plan.sizes {
        bar.set_prefix(format!("{} B", size.get()));
        match measure(args, &plan, size, link, &mut trial, &bar) {
            (r, None) => sizes.push(r),
            (r, Some(e)) => {
                sizes.push(r);
                cut = Some(e);
                break;
            }
        }
    }
    bar.finish_and_clear();
    let info = trial.session.info().clone();
    let log = std::mem::take(&mut trial.log);
    let host = linerate_report::HostInfo::collect();
    let result = Rfc2544Result {
        context: Context {
            linerate_version: env!("CARGO_PKG_VERSION"),
            test: args.test,
            search: args.search,
            interface: args.interface.clone(),
            rx: if target.is_empty() {
                "the lab's receive end".into()
            } else {
                target
            },
            backend: info.backend.to_string(),
            mode: std::mem::take(&mut trial.mode),
            link_speed_mbps: link,
            cores: args.cores.clone(),
            trial_s: args.trial.as_secs_f64(),
            initial_trial_s: plan.goals[0].initial_duration_s,
            drain_s: args.drain.as_secs_f64(),
            learning_frames: args.learning_frames,
            goals: plan.goals.clone(),
            os: host.os,
            kernel: host.kernel,
            cpu_model: host.cpu_model,
            hostname: host.hostname,
            date: linerate_report::rfc3339_utc(std::time::SystemTime::now()),
        },
        sizes,
        interrupted: cut.is_some(),
        total_time_s: started.elapsed().as_secs_f64(),
        trial_time_s: log
            .iter()
            .filter(|l| l.test != "max-rate")
            .map(|l| l.trial.duration_s)
            .sum(),
        trials: log,
    };
    outputs.write(&result)?;
    match cut {
        None => Ok(()),
        Some(e) => Err(e.context(format!(
            "rfc2544 cut short at size {} after {} trial(s); what was measured is written, marked interrupted",
            result.sizes.last().map_or(0, |s| s.size),
            result.trials.len()
        ))),
    }
}

/// Runs the asked tests at one size; returns what was measured and, if it stopped early, why.
fn measure(
    args: &Rfc2544Args,
    plan: &Plan,
    size: FrameSize,
    link: Option<u64>,
    trial: &mut SessionTrial<'_>,
    bar: &ProgressBar,
) -> (SizeResult, Option<anyhow::Error>) {
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
    };
    let wants = |t: Test| args.test == t || args.test == Test::All;
    let failed = |e: linerate_bench::Error, trial: &SessionTrial<'_>| -> anyhow::Error {
        if trial.stop.load(Ordering::Relaxed) {
            Interrupted("stopped by a signal".into()).into()
        } else {
            anyhow::Error::from(e).context(format!("{s}-byte frames"))
        }
    };
    let (max, from) = match max_load(plan, s, link, trial, bar) {
        Ok(m) => m,
        Err(e) => return (r, Some(e)),
    };
    r.max_load_fps = max;
    r.max_load_from = from;
    trial.unpaced = (from != "given").then_some(max);
    let min = match plan.min {
        Some(rate) => match fps(rate, s, link) {
            Ok(v) => v,
            Err(e) => return (r, Some(e)),
        },
        // Low enough for a DUT shaped far below the port (a 20 Mbit/s shaper on a 1 Gbit/s port
        // forwards 2 % of its 1518-byte line rate); each halving below the NDR costs one trial.
        None => max / 1000.0,
    };
    r.min_load_fps = min;
    if min >= max {
        return (
            r,
            Some(usage(format!(
                "{s} B: the min load {min:.0} fps is not below the max load {max:.0} fps"
            ))),
        );
    }
    if wants(Test::Throughput) || wants(Test::Latency) {
        bar.set_prefix(format!("{s} B thr"));
        trial.test = "throughput";
        let t = match args.search {
            Search::Mlr => Mlr::new(plan.goals.clone(), min, max)
                .map_err(|e| usage(e.to_string()))
                .and_then(|m| m.search(size, trial).map_err(|e| failed(e, trial)))
                .map(Throughput::Mlr),
            Search::Binary => plan
                .goals
                .iter()
                .map(|g| {
                    BinarySearch::new(
                        g.loss_ratio,
                        Duration::from_secs_f64(g.final_duration_s),
                        plan.width,
                        min,
                        max,
                    )
                    .map_err(|e| usage(e.to_string()))
                    .and_then(|b| b.search(size, trial).map_err(|e| failed(e, trial)))
                })
                .collect::<Result<Vec<_>>>()
                .map(|goals| Throughput::Binary { goals }),
        };
        match t {
            Ok(t) => r.throughput = Some(t),
            Err(e) => return (r, Some(e)),
        }
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
                ))
            }
            Some(rate) => {
                bar.set_prefix(format!("{s} B lat"));
                trial.test = "latency";
                let l = LatencyTest::new(rate, args.trial, args.latency_trials)
                    .map_err(|e| usage(e.to_string()))
                    .and_then(|t| t.run(size, trial).map_err(|e| failed(e, trial)));
                match l {
                    Ok(l) => r.latency = Some(l),
                    Err(e) => return (r, Some(e)),
                }
            }
        }
    }
    if wants(Test::Loss) {
        bar.set_prefix(format!("{s} B loss"));
        trial.test = "loss";
        let l = FrameLoss::new(max, args.trial, 0.1)
            .map_err(|e| usage(e.to_string()))
            .and_then(|t| t.run(size, trial).map_err(|e| failed(e, trial)));
        match l {
            Ok(l) => r.loss = Some(l),
            Err(e) => return (r, Some(e)),
        }
    }
    if wants(Test::BackToBack) {
        bar.set_prefix(format!("{s} B b2b"));
        trial.test = "back-to-back";
        let burst = args.max_burst.unwrap_or((max * 2.0).ceil() as u64).max(1);
        let b = BackToBack::new(max, burst, args.b2b_trials)
            .map_err(|e| usage(e.to_string()))
            .and_then(|t| t.run(size, trial).map_err(|e| failed(e, trial)));
        match b {
            Ok(b) => r.back_to_back = Some(b),
            Err(e) => return (r, Some(e)),
        }
    }
    (r, None)
}

/// A rate in frames per second for `size`-byte frames.
fn fps(rate: linerate_stream::Rate, size: u32, link: Option<u64>) -> Result<f64> {
    let ps = rate
        .interval_ps(size as usize, link)
        .map_err(|why| usage(format!("rate at {size} B: {why}")))?;
    Ok(linerate_stream::PS_PER_S / ps)
}

/// The max load of a size: the line rate, the rate given, or what a max-rate trial sent.
fn max_load(
    plan: &Plan,
    size: u32,
    link: Option<u64>,
    trial: &mut SessionTrial<'_>,
    bar: &ProgressBar,
) -> Result<(f64, &'static str)> {
    match (plan.max, link) {
        (MaxRate::Given(rate), _) => Ok((fps(rate, size, link)?, "given")),
        (MaxRate::Line, Some(mbps)) => Ok((line_rate_pps(size as usize, mbps), "line rate")),
        (MaxRate::Line, None) => {
            bar.set_prefix(format!("{size} B max"));
            let d = Duration::from_secs_f64(plan.goals[0].initial_duration_s);
            let out = trial
                .run_spec(
                    trial.spec(size, linerate_stream::Rate::Max),
                    End {
                        duration: Some(d),
                        count: None,
                    },
                )
                .map_err(|e| match e {
                    TrialError::Stopped => Interrupted("stopped by a signal".into()).into(),
                    TrialError::Failed(e) => e,
                })?;
            let tx: u64 = out.sent.iter().map(|s| s.2).sum();
            let rx = out
                .flows
                .as_ref()
                .and_then(|f| f.flows.first())
                .map_or(0, |f| f.rx_frames - f.duplicates);
            trial.log.push(Logged {
                test: "max-rate",
                trial: TrialReport {
                    size,
                    rate_fps: out.report.pps,
                    duration_s: out.report.elapsed_s,
                    burst: None,
                    tx,
                    rx,
                    loss_ratio: if tx == 0 {
                        0.0
                    } else {
                        tx.saturating_sub(rx) as f64 / tx as f64
                    },
                    latency: None,
                },
                sent_fps: out.report.pps,
            });
            if out.report.pps <= 0.0 {
                anyhow::bail!("the max-rate trial at {size} B sent nothing");
            }
            Ok((out.report.pps, "max-rate trial"))
        }
    }
}

/// Wire Mbps (20 bytes of preamble, SFD and gap per frame, as RFC 2544 reports).
fn mbps(size: u32, fps: f64) -> f64 {
    wire_mbps(size as usize, fps / 1000.0)
}

fn pct_line(size: u32, fps: f64, link: Option<u64>) -> String {
    link.map_or("n/a".into(), |m| {
        format!("{:.2}", fps * 100.0 / line_rate_pps(size as usize, m))
    })
}

fn goal_name(loss: f64) -> String {
    if loss == 0.0 {
        "NDR".into()
    } else {
        format!("PDR {}%", loss * 100.0)
    }
}

fn status_word(s: GoalStatus) -> &'static str {
    match s {
        GoalStatus::Regular => "found",
        GoalStatus::MaxLoadIsLowerBound => "max load met it",
        GoalStatus::NoRateMeetsGoal => "no rate meets it",
    }
}

/// The four tables, in the RFC's reporting terms.
fn tables(r: &Rfc2544Result) -> String {
    use std::fmt::Write as _;
    let link = r.context.link_speed_mbps;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "rfc2544 {} on {} → {} ({}, {}), link {}; trials {} s, drain {} s",
        serde_json::to_value(r.context.test)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        r.context.interface,
        r.context.rx,
        r.context.backend,
        r.context.mode,
        link.map_or("unknown".into(), |m| format!("{m} Mbit/s")),
        r.context.trial_s,
        r.context.drain_s
    );
    if r.sizes.iter().any(|s| s.throughput.is_some()) {
        let _ = writeln!(
            o,
            "\nThroughput ({})\n{:>6}  {:<10} {:<16} {:>14} {:>10} {:>8} {:>14} {:>7} {:>9}",
            match r.context.search {
                Search::Mlr => "RFC 9971 MLRsearch",
                Search::Binary => "RFC 2544 binary search",
            },
            "size",
            "goal",
            "status",
            "fps",
            "Mbps",
            "% line",
            "conditional",
            "trials",
            "time s"
        );
        for s in &r.sizes {
            let Some(t) = &s.throughput else { continue };
            for g in t.lines() {
                let (f, m, p) = match g.throughput_fps {
                    Some(f) => (
                        format!("{f:.0}"),
                        format!("{:.2}", mbps(s.size, f)),
                        pct_line(s.size, f, link),
                    ),
                    None => ("-".into(), "-".into(), "-".into()),
                };
                let _ = writeln!(
                    o,
                    "{:>6}  {:<10} {:<16} {:>14} {:>10} {:>8} {:>14} {:>7} {:>9.1}",
                    s.size,
                    goal_name(g.loss_ratio),
                    status_word(g.status),
                    f,
                    m,
                    p,
                    g.conditional_fps.map_or("-".into(), |c| format!("{c:.0}")),
                    t.trials(),
                    t.trial_time_s()
                );
            }
        }
    }
    if r.sizes
        .iter()
        .any(|s| s.latency.is_some() || s.latency_skipped.is_some())
    {
        let _ = writeln!(
            o,
            "\nLatency at the throughput (µs, software timestamps)\n{:>6} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
            "size", "fps", "min", "mean", "p50", "p99", "p99.9", "max", "trials"
        );
        for s in &r.sizes {
            if let Some(l) = &s.latency {
                let us = |ns: f64| format!("{:.1}", ns / 1000.0);
                let _ = writeln!(
                    o,
                    "{:>6} {:>12.0} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
                    s.size,
                    l.rate_fps,
                    us(l.min_ns as f64),
                    us(l.mean_ns),
                    us(l.p50_ns),
                    us(l.p99_ns),
                    us(l.p999_ns),
                    us(l.max_ns as f64),
                    l.trials.len()
                );
            } else if let Some(why) = &s.latency_skipped {
                let _ = writeln!(o, "{:>6} not measured: {why}", s.size);
            }
        }
    }
    if r.sizes.iter().any(|s| s.loss.is_some()) {
        let _ = writeln!(
            o,
            "\nFrame loss rate\n{:>6} {:>7} {:>12} {:>12} {:>12} {:>9}",
            "size", "load %", "fps", "tx", "rx", "loss %"
        );
        for s in &r.sizes {
            let Some(l) = &s.loss else { continue };
            for row in &l.rows {
                let _ = writeln!(
                    o,
                    "{:>6} {:>7.0} {:>12.0} {:>12} {:>12} {:>9.4}",
                    s.size, row.load_percent, row.rate_fps, row.tx, row.rx, row.loss_percent
                );
            }
            if !l.settled {
                let _ = writeln!(
                    o,
                    "{:>6} (did not settle: no two successive trials without loss)",
                    s.size
                );
            }
        }
    }
    if r.sizes.iter().any(|s| s.back_to_back.is_some()) {
        let _ = writeln!(
            o,
            "\nBack-to-back (longest burst without loss, frames)\n{:>6} {:>12} {:>10} {:>8} {:>8} {:>9} {:>7}",
            "size", "fps", "mean", "min", "max", "max tried", "searches"
        );
        for s in &r.sizes {
            let Some(b) = &s.back_to_back else { continue };
            let _ = writeln!(
                o,
                "{:>6} {:>12.0} {:>10.1} {:>8} {:>8} {:>9} {:>7}{}",
                s.size,
                b.rate_fps,
                b.mean,
                b.min,
                b.max,
                b.max_burst,
                b.bursts.len(),
                if b.capped {
                    "  (capped: the max burst lost nothing)"
                } else {
                    ""
                }
            );
        }
    }
    let _ = writeln!(
        o,
        "\n{} trial(s), {:.1} s of trials, {:.1} s in all{}",
        r.trials.len(),
        r.trial_time_s,
        r.total_time_s,
        if r.interrupted {
            " (interrupted: the results so far)"
        } else {
            ""
        }
    );
    o
}

/// One row per figure: `test,size,goal,status,rate_fps,mbps,line_pct,…`.
fn csv(r: &Rfc2544Result) -> String {
    use std::fmt::Write as _;
    let link = r.context.link_speed_mbps;
    let mut o = String::from(
        "test,size,goal_loss_ratio,status,rate_fps,mbps_wire,line_pct,conditional_fps,\
         latency_min_ns,latency_mean_ns,latency_p50_ns,latency_p99_ns,latency_p999_ns,latency_max_ns,\
         load_pct,tx,rx,loss_pct,burst_mean,burst_min,burst_max\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.3}"));
    let line = |size: u32, f: f64| {
        link.map_or(String::new(), |m| {
            format!("{:.3}", f * 100.0 / line_rate_pps(size as usize, m))
        })
    };
    for s in &r.sizes {
        if let Some(t) = &s.throughput {
            for g in t.lines() {
                let f = g.throughput_fps;
                let status = serde_json::to_value(g.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let _ = writeln!(
                    o,
                    "throughput,{},{},{},{},{},{},{},,,,,,,,,,,,,",
                    s.size,
                    g.loss_ratio,
                    status,
                    opt(f),
                    opt(f.map(|f| mbps(s.size, f))),
                    f.map_or(String::new(), |f| line(s.size, f)),
                    opt(g.conditional_fps)
                );
            }
        }
        if let Some(l) = &s.latency {
            let _ = writeln!(
                o,
                "latency,{},,,{:.3},{:.3},{},,{},{:.1},{:.1},{:.1},{:.1},{},,,,,,,",
                s.size,
                l.rate_fps,
                mbps(s.size, l.rate_fps),
                line(s.size, l.rate_fps),
                l.min_ns,
                l.mean_ns,
                l.p50_ns,
                l.p99_ns,
                l.p999_ns,
                l.max_ns
            );
        }
        if let Some(l) = &s.loss {
            for row in &l.rows {
                let _ = writeln!(
                    o,
                    "loss,{},,,{:.3},{:.3},{},,,,,,,,{:.1},{},{},{:.6},,,",
                    s.size,
                    row.rate_fps,
                    mbps(s.size, row.rate_fps),
                    line(s.size, row.rate_fps),
                    row.load_percent,
                    row.tx,
                    row.rx,
                    row.loss_percent
                );
            }
        }
        if let Some(b) = &s.back_to_back {
            let _ = writeln!(
                o,
                "back-to-back,{},,{},{:.3},{:.3},{},,,,,,,,,,,,{:.3},{},{}",
                s.size,
                if b.capped { "capped" } else { "found" },
                b.rate_fps,
                mbps(s.size, b.rate_fps),
                line(s.size, b.rate_fps),
                b.mean,
                b.min,
                b.max
            );
        }
    }
    o
}

/// Throughput (kfps) against size, one curve per goal, the line rate dashed; loss % against
/// offered load %, one curve per size.
fn panels(r: &Rfc2544Result) -> Vec<Panel> {
    let mut out = Vec::new();
    let mut goals: Vec<f64> = Vec::new();
    for s in &r.sizes {
        for g in s.throughput.iter().flat_map(Throughput::lines) {
            if !goals.contains(&g.loss_ratio) {
                goals.push(g.loss_ratio);
            }
        }
    }
    if !goals.is_empty() {
        let mut curves: Vec<Curve> = goals
            .iter()
            .map(|&loss| Curve {
                name: goal_name(loss),
                points: r
                    .sizes
                    .iter()
                    .filter_map(|s| {
                        let g = s
                            .throughput
                            .as_ref()?
                            .lines()
                            .into_iter()
                            .find(|g| g.loss_ratio == loss)?;
                        Some((f64::from(s.size), g.throughput_fps? / 1000.0))
                    })
                    .collect(),
                dashed: false,
            })
            .collect();
        if let Some(m) = r.context.link_speed_mbps {
            curves.push(Curve {
                name: format!("line rate {m} Mbit/s"),
                points: r
                    .sizes
                    .iter()
                    .map(|s| {
                        (
                            f64::from(s.size),
                            line_rate_pps(s.size as usize, m) / 1000.0,
                        )
                    })
                    .collect(),
                dashed: true,
            });
        }
        out.push(Panel {
            x_desc: "frame size (B, FCS included)".into(),
            y_desc: "throughput (kfps)".into(),
            curves,
        });
    }
    let loss: Vec<Curve> = r
        .sizes
        .iter()
        .filter_map(|s| {
            let l = s.loss.as_ref()?;
            Some(Curve {
                name: format!("{} B", s.size),
                points: l
                    .rows
                    .iter()
                    .map(|row| (row.load_percent, row.loss_percent))
                    .collect(),
                dashed: false,
            })
        })
        .collect();
    if !loss.is_empty() {
        out.push(Panel {
            x_desc: "offered load (% of the max rate)".into(),
            y_desc: "frame loss (%)".into(),
            curves: loss,
        });
    }
    out
}

/// The files the command writes, reserved before the first trial.
struct Outputs {
    json: Option<OutputFile>,
    json_stdout: bool,
    csv: Option<OutputFile>,
    plot: Option<OutputFile>,
}

impl Outputs {
    fn reserve(args: &Rfc2544Args) -> Result<Self> {
        let json_stdout = args.json.as_deref() == Some(Path::new("-"));
        Ok(Self {
            json: match &args.json {
                Some(p) if !json_stdout => Some(OutputFile::reserve(p)?),
                _ => None,
            },
            json_stdout,
            csv: args.csv.as_deref().map(OutputFile::reserve).transpose()?,
            plot: args
                .plot
                .as_deref()
                .map(crate::sweep::reserve_plot)
                .transpose()?,
        })
    }

    fn write(self, r: &Rfc2544Result) -> Result<()> {
        let json = serde_json::to_string_pretty(r)? + "\n";
        let mut wrote = Vec::new();
        if let Some(out) = self.json {
            wrote.push(out.path().to_owned());
            out.write(json.as_bytes())?;
        }
        if let Some(out) = self.csv {
            wrote.push(out.path().to_owned());
            out.write(csv(r).as_bytes())?;
        }
        if let Some(out) = self.plot {
            let p = panels(r);
            if p.is_empty() {
                eprintln!(
                    "linerate: nothing to plot (throughput and frame loss were not measured)"
                );
            } else {
                wrote.push(out.path().to_owned());
                let title = format!(
                    "linerate rfc2544: {} → {}",
                    r.context.interface, r.context.rx
                );
                crate::sweep::draw(&out, |path| linerate_report::plot_panels(path, &title, &p))?;
                out.commit()?;
            }
        }
        for path in &wrote {
            eprintln!("wrote {}", path.display());
        }
        if self.json_stdout {
            output::print(&json)
        } else {
            output::print(&tables(r))
        }
    }
}
