use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use linerate_engine::WorkerSpec;
use linerate_port::PortInfo;
use linerate_stream::{Limits, Plan, SpecFile, StreamSpec};

use crate::cli::{Backend, SendArgs, StreamArgs, TxArgs};
use crate::output::{self, LiveStatus};
use crate::platform::{self, Receiver, Sender};
use crate::session::{End, Outcome, PortOptions, RxTarget, Session};
use crate::usage;

/// What arrived at a lab's sink during a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SinkResult {
    pub lab: String,
    pub packets: u64,
    pub bytes: u64,
    /// Completed at the sender but not counted at the sink; None when the sink counted more than
    /// this run sent (another sender shares it), so the loss cannot be known.
    pub lost: Option<u64>,
    /// Frames the sink counted beyond what this run sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<u64>,
}

impl SinkResult {
    /// What a lab's receive end counted against what the sender completed.
    pub fn new(lab: &str, packets: u64, bytes: u64, completed: u64) -> Self {
        SinkResult {
            lab: lab.to_owned(),
            packets,
            bytes,
            lost: completed.checked_sub(packets),
            extra: packets.checked_sub(completed).filter(|&n| n > 0),
        }
    }

    /// The line that says why there is no loss figure, when there is none.
    pub fn shared_warning(&self) -> Option<String> {
        self.extra.map(|extra| {
            format!(
                "the sink of lab {} counted {extra} frame(s) more than this run sent: another \
                 sender shares it, so the loss is unknown",
                self.lab
            )
        })
    }
}

/// The slowest rate the pacer is asked to keep: below it the gap between two frames is longer
/// than any run anyone waits for (1000 s), and at 1e-300 it is not a number of nanoseconds.
const MIN_PPS: f64 = 1e-3;

/// Builds the streams, opens the port, runs the workers, prints the report.
pub fn run(args: &TxArgs) -> Result<()> {
    let mut streams = streams(&args.stream)?;
    let rate: Option<linerate_stream::Rate> = args.rate.as_deref().map(str::parse).transpose()?;
    for s in &mut streams {
        // A receiver counts per flow only what carries the signature.
        s.signature |= args.rx.is_some();
        if let Some(rate) = rate {
            s.rate = rate;
        }
        if let (Some(frames), Some(per_second)) = (args.burst, args.bursts_per_sec) {
            s.bursts = Some(linerate_stream::Bursts { frames, per_second });
        }
    }
    let backend = choose_backend(args)?;
    let options = PortOptions::of_send(&args.send, backend, args.mtu, &args.cores, args.link_speed);
    // A pcap file is compiled for before it is created, so a refused stream never truncates an
    // earlier capture; its port imposes what a null port of the same MTU does.
    let early = match backend {
        Backend::Pcap => {
            let probe = Session::open(&PortOptions {
                backend: Backend::Null,
                ..options.clone()
            })?;
            let plan = probe.compile(&streams)?;
            if plan.count().is_none() && args.count.is_none() && args.send.duration.is_none() {
                return Err(usage(
                    "a pcap file needs an end: give --count or --duration",
                ));
            }
            Some(plan)
        }
        _ => None,
    };
    let mut session = Session::open(&options)?;
    let plan = match early {
        Some(plan) => plan,
        None => session.compile(&streams)?,
    };
    if let Some(target) = &args.rx {
        session.receive(&RxTarget {
            target: target.clone(),
            mode: args.send.rx_mode,
            receiver: args.send.receiver.clone(),
        })?;
    }
    let stop = stop_flag()?;
    let info = session.info().clone();
    let live = LiveStatus::new(session.link_mbps(), args.send.quiet).with_rx(session.rx_handle());
    let end = End {
        duration: args.send.duration,
        count: args.count,
    };
    let outcome = match session.run_plan(&plan, end, stop, &live, args.send.drain) {
        Ok(outcome) => outcome,
        Err(e) => {
            // A worker ended the run early: the report so far still goes out, then the cause.
            if let Some(i) = e.downcast_ref::<linerate_engine::Interrupted>() {
                print_report(args, &i.report, &plan, None, None)?;
            }
            return Err(e.context(format!("transmit on {}", info.name)));
        }
    };
    let Outcome {
        report,
        flows,
        sink,
        ..
    } = outcome;
    finish(&args.send, &report, sink, |sink| {
        print_report(args, &report, &plan, sink, flows.as_ref())
    })
}

/// How a finished `tx` or `replay` ends: the sink's warning, the report (`print`), the file
/// written, and an error for frames the backend never completed.
pub fn finish(
    send: &SendArgs,
    report: &linerate_engine::Report,
    sink: Option<SinkResult>,
    print: impl FnOnce(Option<SinkResult>) -> Result<()>,
) -> Result<()> {
    if let Some(warning) = sink.as_ref().and_then(SinkResult::shared_warning) {
        eprintln!("linerate: warning: {warning}");
    }
    print(sink)?;
    if let Some(path) = &send.pcap {
        eprintln!("wrote {}", path.display());
    }
    if report.missing() > 0 {
        anyhow::bail!(
            "{} frame(s) were submitted but never completed by the backend",
            report.missing()
        );
    }
    Ok(())
}

fn print_report(
    args: &TxArgs,
    report: &linerate_engine::Report,
    plan: &Plan,
    sink: Option<SinkResult>,
    flows: Option<&crate::rx::RunFlows>,
) -> Result<()> {
    if args.send.json {
        output::print_json(&output::TxJson {
            report,
            streams: output::streams(plan),
            sink,
            rx: flows,
        })
    } else {
        output::print_tx(report, plan, sink.as_ref())?;
        match flows {
            Some(f) => output::print(&format!(
                "received  at {}\n{}",
                f.at,
                linerate_rx::table::flow_table(&f.flows, &f.other)
            )),
            None => Ok(()),
        }
    }
}

/// Compiles the streams against what the port and the lab impose and suggest.
pub fn compile(
    streams: &[StreamSpec],
    info: &PortInfo,
    lab: Option<&Receiver>,
    link_mbps: Option<u64>,
) -> Result<Plan> {
    let defaults = Limits::default();
    let limits = Limits {
        mtu: info.mtu,
        mtu_hint: if matches!(info.backend, "pcap" | "null") {
            ": raise it with --mtu for jumbo frames"
        } else {
            ""
        },
        default_src_mac: info.mac,
        default_dst_mac: lab.map(|l| l.peer_mac),
        default_ipv4: lab.map_or(defaults.default_ipv4, |l| l.ips),
        link_mbps: link_mbps.or(info.link_speed.map(|s| s.mbps())),
    };
    let plan = Plan::compile(streams, &limits)?;
    let rates: Vec<Option<f64>> = match &plan.shape {
        linerate_stream::Shape::Cycle { pacing, .. }
        | linerate_stream::Shape::Streamed { pacing, .. } => {
            vec![pacing.as_ref().map(|p| p.pps())]
        }
        linerate_stream::Shape::Lanes(lanes) => {
            lanes.iter().map(|l| Some(l.pacing.pps())).collect()
        }
    };
    for (rate, spec) in rates.into_iter().zip(streams) {
        if let Some(pps) = rate
            && (pps.is_nan() || pps < MIN_PPS)
        {
            return Err(usage(format!(
                "stream {}: rate {} is {pps:.3e} frames/s, below the slowest linerate paces, \
                 {MIN_PPS} frames/s (one frame each {} s)",
                spec.name,
                spec.rate,
                1.0 / MIN_PPS
            )));
        }
    }
    Ok(plan)
}

/// Waits until the sink has seen everything the sender completed (frames still crossing the
/// veth pair when the last completion came back), or until its count stops moving.
pub fn settle(lab: &Receiver, before: (u64, u64), completed: u64) -> Result<SinkResult> {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut last = (lab.counters)()?;
    let mut still_since = Instant::now();
    loop {
        let got = last.0 - before.0;
        if got >= completed
            || Instant::now() >= deadline
            || still_since.elapsed() > Duration::from_millis(300)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        let now = (lab.counters)()?;
        if now != last {
            still_since = Instant::now();
        }
        last = now;
    }
    // Wrapping: a counter that went backwards (the sink was re-attached) reads as a huge extra.
    Ok(SinkResult::new(
        &lab.name,
        last.0.wrapping_sub(before.0),
        last.1.wrapping_sub(before.1),
        completed,
    ))
}

/// The streams to send: a TOML file, or the one stream of the template flags.
pub fn streams(args: &StreamArgs) -> Result<Vec<StreamSpec>> {
    match &args.stream {
        Some(path) => {
            let given = args.template.given();
            if !given.is_empty() {
                return Err(usage(format!(
                    "--stream cannot be used with --{}: the file sets every key of its streams",
                    given.join(", --")
                )));
            }
            Ok(SpecFile::load(path)?.streams)
        }
        None => Ok(vec![args.template.spec()?]),
    }
}

/// Pairs cores with queues: worker i runs on cores[i] and drives queues[i] (or queue i).
pub fn workers(
    cores: &[usize],
    queues: Option<&[u32]>,
    backend: Option<Backend>,
) -> Result<Vec<WorkerSpec>> {
    if backend == Some(Backend::Live) && queues.is_some() {
        return Err(usage(
            "--queues does not apply to the live backend: its frames leave on the CPU of the \
             worker (choose it with --cores)",
        ));
    }
    if cores.is_empty() {
        return Err(usage("--cores needs at least one core"));
    }
    for (i, c) in cores.iter().enumerate() {
        if cores[..i].contains(c) {
            return Err(usage(format!(
                "--cores names core {c} twice: each worker needs a core of its own"
            )));
        }
    }
    let queues: Vec<u32> = match queues {
        Some(q) if q.len() != cores.len() => {
            return Err(usage(format!(
                "--queues has {} entries but --cores has {}: give one queue per core",
                q.len(),
                cores.len()
            )));
        }
        Some(q) => q.to_vec(),
        None => (0..cores.len() as u32).collect(),
    };
    for (i, q) in queues.iter().enumerate() {
        if queues[..i].contains(q) {
            return Err(usage(format!(
                "queue {q} is given twice: each worker needs its own queue"
            )));
        }
    }
    Ok(cores
        .iter()
        .zip(queues)
        .map(|(&core, queue)| WorkerSpec {
            core: Some(core),
            queue,
        })
        .collect())
}

/// Opens the interface with the asked (or the platform's) backend.
pub fn open_interface(
    backend: Option<Backend>,
    iface: &str,
    afxdp: &crate::cli::AfXdpArgs,
) -> Result<Sender> {
    match backend.unwrap_or_else(default_backend) {
        b @ (Backend::Afxdp | Backend::Afpacket | Backend::Bpf | Backend::Live) => {
            platform::open(b, iface, afxdp)
        }
        other => Err(usage(format!(
            "the {other:?} backend has no interface: use --backend afxdp, afpacket or live (Linux), or bpf (macOS, FreeBSD)"
        ))),
    }
}

/// The backend `tx` uses: the one asked, else the one -i, --pcap or --null implies.
fn choose_backend(args: &TxArgs) -> Result<Backend> {
    Ok(
        match (
            args.send.backend,
            &args.send.interface,
            &args.send.pcap,
            args.send.null,
        ) {
            (Some(b), _, _, _) => b,
            (None, _, Some(_), _) => Backend::Pcap,
            (None, _, _, true) => Backend::Null,
            (None, Some(_), _, _) => default_backend(),
            (None, None, None, false) => {
                return Err(usage(
                    "nothing to send to: give -i IFACE, --pcap FILE or --null",
                ));
            }
        },
    )
}

pub fn default_backend() -> Backend {
    if cfg!(target_os = "linux") {
        Backend::Afxdp
    } else {
        Backend::Bpf
    }
}

/// Ctrl-C and SIGTERM raise the flag; the engine stops the workers, drains and reports.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("install the Ctrl-C handler")?;
    Ok(stop)
}
