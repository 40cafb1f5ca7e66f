use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use linerate_engine::{RunConfig, WorkerSpec};
use linerate_port::{NullPort, PcapPort, PortInfo};
use linerate_stream::{Limits, Plan, SpecFile, StreamSpec};

use crate::cli::{Backend, StreamArgs, TxArgs};
use crate::output::{self, LiveStatus};
use crate::platform::{self, Receiver, Sender};
use crate::usage;

/// What arrived at a lab's sink during a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SinkResult {
    pub lab: String,
    pub packets: u64,
    pub bytes: u64,
    /// Completed at the sender but not counted at the sink.
    pub lost: i64,
}

/// Builds the streams, opens the port, runs the workers, prints the report.
pub fn run(args: &TxArgs) -> Result<()> {
    let mut streams = streams(&args.stream)?;
    for s in &mut streams {
        if let Some(rate) = &args.rate {
            s.rate = rate.clone();
        }
        if let (Some(frames), Some(per_second)) = (args.burst, args.bursts_per_sec) {
            s.bursts = Some(linerate_stream::Bursts { frames, per_second });
        }
    }
    let workers = workers(&args.cores, args.queues.as_deref())?;
    if args.pcap.is_some() {
        // Check everything before File::create truncates what may be an earlier capture.
        let mut probe = NullPort::new(workers.len() as u32);
        probe.set_mtu(args.mtu);
        let plan = compile(
            &streams,
            linerate_port::Port::info(&probe),
            None,
            args.link_speed,
        )?;
        if plan.count.is_none() && args.count.is_none() && args.duration.is_none() {
            return Err(usage(
                "a pcap file needs an end: give --count or --duration",
            ));
        }
    }
    let port = open_port(args, workers.len() as u32)?;
    let lab = match &args.interface {
        Some(iface) => platform::receiver_of(iface)?,
        None => None,
    };
    let plan = compile(&streams, port.info(), lab.as_ref(), args.link_speed)?;
    let config = RunConfig {
        workers,
        batch: args.batch,
        duration: args.duration,
        count: args.count,
        stop: stop_flag()?,
        tick: Duration::from_secs(1),
    };
    let info = port.info().clone();
    let live = LiveStatus::new(
        args.link_speed.or(info.link_speed.map(|s| s.mbps())),
        args.quiet,
    );
    let before = lab.as_ref().map(|l| (l.counters)()).transpose()?;
    let report = port
        .run(&plan, &config, &live)
        .with_context(|| format!("transmit on {}", info.name))?;
    let sink = match (&lab, before) {
        (Some(l), Some(b)) => Some(settle(l, b, report.completed)?),
        _ => None,
    };
    if args.json {
        output::print_json(&output::TxJson {
            report: &report,
            streams: output::streams(&plan),
            sink,
        })?;
    } else {
        output::print_tx(&report, &plan, sink.as_ref())?;
    }
    if report.missing() > 0 {
        anyhow::bail!(
            "{} frame(s) were submitted but never completed by the backend",
            report.missing()
        );
    }
    Ok(())
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
    Ok(Plan::compile(streams, &limits)?)
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
    let packets = last.0 - before.0;
    Ok(SinkResult {
        lab: lab.name.clone(),
        packets,
        bytes: last.1 - before.1,
        lost: completed as i64 - packets as i64,
    })
}

/// The streams to send: a TOML file, or one stream from the flags (the seed stream when no
/// field varies).
pub fn streams(args: &StreamArgs) -> Result<Vec<StreamSpec>> {
    if let Some(path) = &args.stream {
        return Ok(SpecFile::load(path)?.streams);
    }
    // The seed's ten distinct frames come from the IPv4 identification; IPv6 has none, so an
    // IPv6 stream without --vary repeats one frame.
    let seeded = args.vary.is_empty() && !args.ipv6;
    let mut s = if seeded {
        StreamSpec::seed()
    } else {
        StreamSpec::default()
    };
    s.vary.extend(args.vary.iter().cloned());
    if let Some(v) = args.size {
        s.size = v;
    }
    if let Some(v) = &args.size_mode {
        s.size_mode = v.clone();
    }
    if let Some(v) = &args.src_mac {
        s.src_mac = v.clone();
    }
    if let Some(v) = &args.dst_mac {
        s.dst_mac = v.clone();
    }
    if let Some(v) = &args.src_ip {
        s.src_ip = v.clone();
    }
    if let Some(v) = &args.dst_ip {
        s.dst_ip = v.clone();
    }
    if let Some(v) = args.src_port {
        s.src_port = v;
    }
    if let Some(v) = args.dst_port {
        s.dst_port = v;
    }
    if let Some(v) = &args.tcp_flags {
        s.tcp_flags = v.clone();
    }
    if let Some(v) = &args.payload {
        s.payload = v.clone();
    }
    if let Some(v) = args.proto {
        s.proto = v.into();
    }
    s.vlan = args.vlan;
    s.ipv6 = args.ipv6;
    Ok(vec![s])
}

/// Pairs cores with queues: worker i runs on cores[i] and drives queues[i] (or queue i).
pub fn workers(cores: &[usize], queues: Option<&[u32]>) -> Result<Vec<WorkerSpec>> {
    if cores.is_empty() {
        return Err(usage("--cores needs at least one core"));
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
        b @ (Backend::Afxdp | Backend::Bpf | Backend::Live) => platform::open(b, iface, afxdp),
        other => Err(usage(format!(
            "the {other:?} backend has no interface: use --backend afxdp or bpf"
        ))),
    }
}

fn open_port(args: &TxArgs, queues: u32) -> Result<Sender> {
    let backend = match (args.backend, &args.interface, &args.pcap, args.null) {
        (Some(b), _, _, _) => b,
        (None, _, Some(_), _) => Backend::Pcap,
        (None, _, _, true) => Backend::Null,
        (None, Some(_), _, _) => default_backend(),
        (None, None, None, false) => {
            return Err(usage(
                "nothing to send to: give -i IFACE, --pcap FILE or --null",
            ));
        }
    };
    match backend {
        Backend::Null => {
            let mut port = NullPort::new(queues);
            port.set_mtu(args.mtu);
            Ok(Sender::Port(Box::new(port)))
        }
        Backend::Pcap => {
            let path = args
                .pcap
                .as_ref()
                .ok_or_else(|| usage("--backend pcap needs --pcap FILE"))?;
            let mut port = PcapPort::create(path, queues)?;
            port.set_mtu(args.mtu);
            Ok(Sender::Port(Box::new(port)))
        }
        Backend::Afxdp | Backend::Bpf | Backend::Live => {
            let iface = args
                .interface
                .as_deref()
                .ok_or_else(|| usage("this backend needs -i IFACE"))?;
            platform::open(backend, iface, &args.afxdp)
        }
    }
}

fn default_backend() -> Backend {
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
