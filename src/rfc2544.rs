//! `linerate rfc2544`: the four RFC 2544 benchmarks of a device (throughput with MLRsearch or
//! the binary search, latency, frame loss rate, back-to-back) run by `linerate_bench` over a
//! [`Session`]: each trial is one run of a signed stream, judged by the receiver's per-flow
//! counts. Tables in the RFC's terms on stdout, JSON with every trial, CSV and plots.

use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use linerate_bench::{FrameSize, SearchGoal};
use linerate_report::Outputs;
use linerate_report::rfc2544::{Context, Rfc2544Result};
use linerate_session::{PortOptions, ReceiverOptions, RxTarget};
use linerate_stream::StreamSpec;
use linerate_testbed::rfc2544::{MIN_SIZE, MaxRate, Ports, Rfc2544, Rfc2544Error, Rfc2544Observer};
use linerate_testbed::{BedSpec, Places, TestBed};

use crate::output;
use crate::usage::{Interrupted, usage};
use linerate_cli::rfc2544::Rfc2544Args;

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

/// `1 h 05 min`, `12 min`, `40 s`: a duration to read at a glance.
fn hours_minutes(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s.div_ceil(60)),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// Learning frames (RFC 2544 §23) teach a bridge a handful of addresses; more than this is a
/// typo, and would run for hours before the first trial.
const MAX_LEARNING_FRAMES: u64 = 10_000_000;

fn check(args: &Rfc2544Args) -> Result<Rfc2544> {
    if let Some(b @ (linerate_cli::Backend::Null | linerate_cli::Backend::Pcap)) = args.backend {
        return Err(usage(format!(
            "rfc2544 measures a device between two ports: the {} backend has no wire to send on; use afxdp, afpacket or live",
            format!("{b:?}").to_lowercase()
        )));
    }
    if args.learning_frames > MAX_LEARNING_FRAMES {
        return Err(usage(format!(
            "--learning-frames {}: at most {MAX_LEARNING_FRAMES} (a bridge learns from a few frames per address)",
            args.learning_frames
        )));
    }
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
        // "0.5" is read as a ratio, 50 % loss, but is far likelier meant as 0.5 %: above 1 %
        // the percentage must be written out.
        if loss > 0.01 && !g.trim().ends_with('%') {
            // Rounded to the digits a goal has: 0.07 × 100 is 7.000000000000001.
            let pct = (loss * 100.0 * 1e6).round() / 1e6;
            return Err(usage(format!(
                "--goals {g}: a bare number is a ratio ({g} = {pct} % loss); write {g}% for {g} %, or {pct}% if you mean it"
            )));
        }
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
    Ok(Rfc2544 {
        test: crate::options::test(args.test),
        search: crate::options::search(args.search),
        sizes,
        goals,
        width,
        max,
        min,
        trial: args.trial,
        latency_trials: args.latency_trials,
        b2b_trials: args.b2b_trials,
        max_burst: args.max_burst,
        drain: args.drain,
        learning_frames: args.learning_frames,
        template: template(args),
    })
}

/// The trials' stream before its size and rate: tx's seed stream, signed, with the addresses
/// the command line gives.
fn template(args: &Rfc2544Args) -> StreamSpec {
    let mut spec = StreamSpec {
        name: "rfc2544".into(),
        signature: true,
        ..StreamSpec::seed()
    };
    spec.src_mac = args.src_mac.or(spec.src_mac);
    spec.dst_mac = args.dst_mac.or(spec.dst_mac);
    spec.src_ip = args.src_ip.map(Into::into).or(spec.src_ip);
    spec.dst_ip = args.dst_ip.map(Into::into).or(spec.dst_ip);
    spec
}

pub fn run(args: &Rfc2544Args) -> Result<()> {
    let procedure = check(args)?;
    let (spec, streams, at) = if !args.hosts.host.is_empty() || args.hosts.flows_given() {
        hosts_spec(args)?
    } else {
        port_spec(args)?
    };
    let csv: Vec<_> = args.csv.iter().cloned().collect();
    let outputs = Outputs::reserve(args.json.as_deref(), &csv, args.plot.as_deref())?;
    let mut bed = TestBed::open(&spec)?;
    measure(
        args,
        &procedure,
        outputs,
        Ports {
            bed: &mut bed,
            streams,
        },
        at,
    )
}

/// One port, judged by the receiver at `--rx`.
fn port_spec(args: &Rfc2544Args) -> Result<(BedSpec, Vec<StreamSpec>, Where)> {
    let interface = args
        .interface
        .clone()
        .ok_or_else(|| usage("rfc2544 needs the transmit port: -i IFACE (or --host)"))?;
    let Some(target) = args.rx.clone() else {
        return Err(usage(
            "rfc2544 judges each trial by what came back: give the receive port with --rx \
             IFACE[@NETNS] (or --rx alone on a lab's sender)",
        ));
    };
    let mut spec = BedSpec::port(PortOptions {
        interface: Some(interface.clone()),
        ..port_options(args)
    });
    spec.rx = Some(RxTarget {
        at: (!target.is_empty()).then(|| target.clone()),
        ..rx_target(args, 1)
    });
    let rx = if target.is_empty() {
        "the lab's receive end".into()
    } else {
        target
    };
    let cores = linerate_session::workers(&args.cores, None, None)?
        .iter()
        .filter_map(|w| w.core)
        .collect();
    Ok((
        spec,
        vec![template(args)],
        Where {
            interface,
            rx,
            cores,
        },
    ))
}

/// Hosts (`--host`, and `--flow FROM:TO` or `--bidir`): every host's port is a place of the
/// trials (this machine's or an agent's), each direction a flow between two hosts, all sent at
/// once. The load of a trial is offered on each direction (RFC 2544 §14).
fn hosts_spec(args: &Rfc2544Args) -> Result<(BedSpec, Vec<StreamSpec>, Where)> {
    let h = &args.hosts;
    if h.host.is_empty() {
        return Err(usage(
            "--flow and --bidir name hosts: give each with --host",
        ));
    }
    if !h.flows_given() {
        return Err(usage(
            "with hosts, name the directions: --flow FROM:TO (repeat) or --bidir",
        ));
    }
    if args.interface.is_some() || args.rx.is_some() {
        return Err(usage(
            "with hosts the ports are the hosts' own (port= of each), each receiving what is sent toward it: drop -i and --rx",
        ));
    }
    if args.src_mac.is_some()
        || args.dst_mac.is_some()
        || args.src_ip.is_some()
        || args.dst_ip.is_some()
    {
        return Err(usage(
            "with hosts the addresses are the hosts' and their next hops': drop --src-mac, --dst-mac, --src-ip and --dst-ip",
        ));
    }
    let streams = h.flows(&template(args)).map_err(usage)?;
    linerate_stream::check_hosts(&h.host, &streams)?;
    let mut senders: Vec<&str> = Vec::new();
    for s in &streams {
        let from = s.from.as_deref().unwrap_or_default();
        if let Some(x) = h.host.iter().find(|x| x.name == from) {
            if senders.contains(&x.port.as_str()) {
                return Err(usage(format!(
                    "two directions leave from port {}: rfc2544 offers its load once per port, give each direction a port of its own",
                    x.port
                )));
            }
            senders.push(&x.port);
        }
    }
    let mut ports: Vec<&str> = Vec::new();
    for x in &h.host {
        if !ports.contains(&x.port.as_str()) {
            ports.push(&x.port);
        }
    }
    let mut spec = BedSpec::port(port_options(args));
    spec.places = Places::Hosts {
        hosts: h.host.clone(),
        #[cfg(target_os = "linux")]
        given: Vec::new(),
        peers: Vec::new(),
        capture: Vec::new(),
    };
    spec.rx = Some(rx_target(args, streams.len() as u32));
    spec.resolve_wait = h.resolve_timeout;
    #[cfg(target_os = "linux")]
    {
        spec.controller = crate::options::controller(&args.agents)?;
    }
    let names: Vec<String> = ports.iter().map(|p| (*p).to_owned()).collect();
    let at = Where {
        interface: ports.join(", "),
        rx: "each host's port".into(),
        cores: linerate_session::place_ports(&names, &args.cores).0,
    };
    Ok((spec, streams, at))
}

fn port_options(args: &Rfc2544Args) -> PortOptions {
    PortOptions {
        backend: crate::options::backend_or_default(args.backend, &args.afxdp),
        cores: args.cores.clone(),
        link_speed: args.link_speed,
        clock: crate::options::clock(args.clock),
        afxdp: crate::options::afxdp(&args.afxdp),
        ..PortOptions::interface("")
    }
}

/// The receivers' options for `flows` flows (one per direction): a small table keeps the
/// receiver's clearing between trials cheap.
fn rx_target(args: &Rfc2544Args, flows: u32) -> RxTarget {
    RxTarget {
        at: None,
        attach: crate::options::rx_attach(args.rx_mode),
        receiver: ReceiverOptions {
            flows: 16.max(flows),
            hist_flows: flows,
            clock: crate::options::clock(args.clock),
            ..ReceiverOptions::default()
        },
    }
}

/// Where the trials went, for the report.
struct Where {
    pub interface: String,
    pub rx: String,
    /// The cores the ports' workers run on.
    pub cores: Vec<usize>,
}

/// Runs the procedure on `ports` and writes what it measured.
fn measure(
    args: &Rfc2544Args,
    procedure: &Rfc2544,
    outputs: Outputs,
    mut ports: Ports<'_>,
    at: Where,
) -> Result<()> {
    procedure.check(&mut ports)?;
    let link = ports.link_mbps();
    let backend = ports.bed.backend();
    let backend_choice = ports
        .bed
        .first_port()
        .and_then(|p| p.choice())
        .map(output::choice_json);
    let directions = ports.directions();
    if matches!(procedure.max, MaxRate::Line) && link.is_none() {
        eprintln!(
            "linerate: {} reports no link speed: the max load of each size is measured by a \
             max-rate trial (give --link-speed or --max-rate to set it)",
            at.interface
        );
    }
    let stop = crate::signal::stop_flag()?;
    let started = Instant::now();
    let bar = Bar::new(args.quiet, procedure.stages());
    if !args.quiet {
        let (short, long) = procedure.estimate();
        let (short, long) = (hours_minutes(short), hours_minutes(long));
        let about = if short == long {
            format!("about {short}")
        } else {
            format!("about {short} to {long}")
        };
        eprintln!(
            "rfc2544: {} stage(s) ({} size(s)); {about} at full length and drains, longer when a search needs more halvings",
            procedure.stages(),
            procedure.sizes.len(),
        );
    }
    // The flows are compiled (check did): their names, ids and places are the trials'.
    let names: Vec<String> = ports.streams.iter().map(|s| s.name.clone()).collect();
    let stats = args
        .stats
        .as_deref()
        .map(|path| {
            let (counts, flows, places) =
                (ports.bed.counts(), ports.bed.flows(), ports.bed.places());
            crate::stats::Stats::create(path, &(), counts, &names, flows, places)
        })
        .transpose()?;
    let watch = Watch {
        bar: &bar,
        stats: stats.as_ref(),
    };
    let measured = procedure.run(ports, stop, &watch);
    bar.0.finish_and_clear();
    // The series' own failure comes after the result is written, never instead of it.
    let series = stats.as_ref().map_or(Ok(()), |s| s.finish(None));
    let cut = measured.cut.map(cut_error);
    let host = linerate_report::HostInfo::collect();
    let result = Rfc2544Result {
        context: Context {
            linerate_version: env!("CARGO_PKG_VERSION"),
            test: procedure.test,
            search: procedure.search,
            interface: at.interface,
            rx: at.rx,
            backend,
            backend_choice,
            mode: measured.mode,
            link_speed_mbps: link,
            cores: at.cores,
            trial_s: args.trial.as_secs_f64(),
            initial_trial_s: procedure.goals[0].initial_duration_s,
            drain_s: args.drain.as_secs_f64(),
            learning_frames: args.learning_frames,
            goals: procedure.goals.clone(),
            directions,
            os: host.os,
            kernel: host.kernel,
            cpu_model: host.cpu_model,
            hostname: host.hostname,
            date: linerate_report::rfc3339_utc(std::time::SystemTime::now()),
        },
        sizes: measured.sizes,
        interrupted: cut.is_some(),
        total_time_s: started.elapsed().as_secs_f64(),
        trial_time_s: measured
            .trials
            .iter()
            .filter(|l| l.test != "max-rate")
            .map(|l| l.trial.duration_s)
            .sum(),
        trials: measured.trials,
    };
    output::wrote(&outputs.write(&result)?)?;
    match cut {
        None => series,
        Some(e) => Err(e.context(format!(
            "rfc2544 cut short at size {} after {} trial(s); what was measured is written, marked interrupted",
            result.sizes.last().map_or(0, |s| s.size),
            result.trials.len()
        ))),
    }
}

/// The procedure's reason to stop, with its exit code: a signal's is 130, a setting's 2.
fn cut_error(e: Rfc2544Error) -> anyhow::Error {
    match e {
        Rfc2544Error::Stopped => Interrupted("stopped by a signal".into()).into(),
        Rfc2544Error::Usage(m) => usage(m),
        e => e.into(),
    }
}

/// The spinner with the stage, the phase and the last trial; a line per stage and per trial on
/// stderr instead when stderr is no terminal (a log, a test).
struct Bar(ProgressBar, bool, Stages);

/// Which stage of how many (a test at a size) is running.
struct Stages {
    done: std::sync::atomic::AtomicUsize,
    all: usize,
    started: Instant,
}

impl Bar {
    fn new(quiet: bool, stages: usize) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{prefix:>8} {spinner} {elapsed_precise} {msg}")
                    .expect("valid template"),
            )
        };
        bar.enable_steady_tick(Duration::from_millis(200));
        let stages = Stages {
            done: Default::default(),
            all: stages,
            started: Instant::now(),
        };
        Bar(bar, !quiet && !std::io::stderr().is_terminal(), stages)
    }
}

/// The progress line, and the time series when `--stats` asks for it (each line says the
/// phase, `64 B thr`, it was counted in).
struct Watch<'a> {
    bar: &'a Bar,
    stats: Option<&'a crate::stats::Stats<'a>>,
}

impl Rfc2544Observer for Watch<'_> {
    fn phase(&self, label: &str) {
        self.bar.phase(label);
        if let Some(s) = self.stats {
            s.phase(label);
        }
    }

    fn trial(&self, size: u32, test: &str, line: &str) {
        self.bar.trial(size, test, line);
    }

    fn ticks(&self) -> Option<&dyn linerate_engine::Observer> {
        self.stats.map(|s| s as &dyn linerate_engine::Observer)
    }
}

impl Rfc2544Observer for Bar {
    fn phase(&self, label: &str) {
        let stage = [" thr", " lat", " loss", " b2b"]
            .iter()
            .any(|t| label.ends_with(t));
        let order = std::sync::atomic::Ordering::Relaxed;
        let k = self.2.done.load(order) + usize::from(stage);
        self.2.done.store(k, order);
        if stage && self.1 {
            eprintln!(
                "rfc2544 stage {k}/{}: {label} ({:.0} s so far)",
                self.2.all,
                self.2.started.elapsed().as_secs_f64()
            );
        }
        self.0.set_prefix(format!("{k}/{} {label}", self.2.all));
    }

    fn trial(&self, size: u32, test: &str, line: &str) {
        if self.1 {
            eprintln!("{size} B {test}: {line}");
        } else {
            self.0.set_message(line.to_owned());
        }
    }
}
