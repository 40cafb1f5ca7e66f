//! `linerate lab` and `linerate sink`: the veth lab (with its device under test and
//! impairments) and the XDP counter on the receiving side.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use linerate_lab::{
    DutKind, ImpairCounters, Impairment, Impairments, Lab, LabConfig, LabError, NatRules,
};
use linerate_wire::format_mac;
use linerate_xdp::{AttachMode, Sink, SinkCounters};
use serde::Serialize;

use crate::output::{print, print_json, println};
use linerate_cli::{DutArg, LabAction, LabImpairArgs, SinkArgs, XdpAttach};

pub fn run(action: &LabAction) -> Result<()> {
    match action {
        LabAction::Up(args) => {
            let queues = args.queues.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
            });
            let config = LabConfig {
                name: args.name.name.clone(),
                queues,
            };
            let dut = args.dut.map(|d| match d {
                DutArg::Router => DutKind::Router,
                DutArg::Bridge => DutKind::Bridge,
                DutArg::Xdp => DutKind::Xdp,
                DutArg::Bgp => DutKind::Bgp,
                DutArg::Nat => DutKind::Nat,
            });
            let lab = Lab::up_with_dut(&config, dut)?;
            print_lab(&lab, None, None, None, None)
        }
        LabAction::Down(args) => {
            // Down is idempotent, but its answer says whether there was a lab to remove.
            let absent = matches!(Lab::find(&args.name), Ok(None));
            Lab::down(&args.name)?;
            if absent {
                println(&format!(
                    "lab {}: no such lab, nothing to remove",
                    args.name
                ))
            } else {
                println(&format!("lab {} removed", args.name))
            }
        }
        LabAction::Status(args) => {
            let name = &args.name.name;
            let lab = Lab::find(name)?.ok_or_else(|| LabError::NotFound { name: name.clone() })?;
            // A receiver that died without putting the sink back is noticed (and the sink put
            // back) here, as by every run that counts at the sink.
            // A NAT lab's receive end is the servers' host: no sink to read.
            let has_sink = !matches!(lab.dut.as_ref().map(|d| d.kind), Some(DutKind::Nat));
            let end = if has_sink && nix::unistd::geteuid().is_root() {
                Some(linerate_session::receive_end(&lab)?)
            } else {
                None
            };
            // Without root the pinned counters cannot be opened; the lab is no less whole.
            let counters = match lab.sink_counters() {
                _ if !has_sink => None,
                Ok(c) => Some(c),
                Err(e) if !nix::unistd::geteuid().is_root() => {
                    eprintln!("linerate: the sink's counters need root: {e}");
                    None
                }
                Err(e) => return Err(e.into()),
            };
            let impaired = match &lab.dut {
                Some(_) => lab.impair_counters().ok(),
                None => None,
            };
            let attached = match end {
                _ if !has_sink => "servers (NAT lab, no sink)",
                Some(linerate_xdp::ReceiveEnd::InUse) => "receiver",
                _ => "sink",
            };
            // Who holds the end, as its lock file says (a receiver, or `linerate sink`).
            let held_by = end
                .and_then(|_| linerate_xdp::ReceiveEndLock::holder(&lab.pin_dir()))
                .filter(|_| attached == "receiver");
            if args.json {
                let mut json = LabJson::new(&lab, counters, impaired);
                json.receive_end = end.map(|_| attached);
                json.receive_end_holder = held_by.map(|h| h.to_string());
                print_json(&json)
            } else {
                print_lab(&lab, counters, impaired, Some(attached), held_by)
            }
        }
        LabAction::Impair(args) => {
            let impairments = impairments(args)?;
            let exe = std::env::current_exe().context("finding the linerate binary")?;
            let lab = Lab::impair(&args.name.name, &impairments, &exe)?;
            let line = lab
                .dut
                .as_ref()
                .map_or_else(|| "none".to_owned(), |d| d.impairments.describe());
            println(&format!("lab {} impairments: {line}", lab.name))
        }
        LabAction::Nat(args) => {
            let ports = match args.ports.as_str() {
                "any" => None,
                text => Some(
                    text.split_once('-')
                        .and_then(|(a, b)| Some((a.parse::<u16>().ok()?, b.parse::<u16>().ok()?)))
                        .filter(|(a, b)| *a >= 1 && a <= b)
                        .ok_or_else(|| {
                            crate::usage(format!(
                                "lab nat --ports {text}: give FIRST-LAST (1 to 65535, FIRST <= LAST) or any"
                            ))
                        })?,
                ),
            };
            let limit = match args.limit.as_str() {
                "none" => None,
                text => Some(text.parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    crate::usage(format!(
                        "lab nat --limit {text}: give the connections it lets through at once (1 to 4294967295) or none"
                    ))
                })?),
            };
            let rules = NatRules {
                ports,
                limit,
                nat66: args.nat66,
            };
            let lab = Lab::set_nat(&args.name.name, &rules)?;
            let mut line = ports.map_or_else(
                || "any free port".to_owned(),
                |(a, b)| {
                    format!(
                        "ports {a}-{b} ({} translations to one server at once)",
                        b - a + 1
                    )
                },
            );
            line += &limit.map_or_else(
                || ", no limit of connections".to_owned(),
                |n| format!(", at most {n} connections at once (a new one past them dropped)"),
            );
            line += if args.nat66 {
                ", IPv6 translated (NAT66)"
            } else {
                ", IPv6 routed (stateful firewall)"
            };
            println(&format!("lab {} NAT: {line}", lab.name))
        }
        LabAction::DelayLine(args) => {
            linerate_lab::run_delay_line(&args.name)?;
            Ok(())
        }
    }
}

/// The impairments `lab impair` asks for, each value checked against its bounds.
fn impairments(args: &LabImpairArgs) -> Result<Impairments> {
    let mut i = Impairments::default();
    if args.clear {
        return Ok(i);
    }
    let given = [
        &args.loss,
        &args.duplicate,
        &args.delay,
        &args.jitter,
        &args.reorder,
        &args.rate,
        &args.limit,
        &args.reverse_rate,
    ];
    if given.iter().all(|a| a.is_none()) {
        return Err(crate::usage(
            "lab impair: give at least one of --loss, --duplicate, --delay, --jitter, --reorder, --rate, --limit, --reverse-rate, or --clear",
        ));
    }
    if let Some(t) = &args.loss {
        i.loss = Impairments::parse_percent(Impairment::Loss, t)?;
    }
    if let Some(t) = &args.duplicate {
        i.duplicate = Impairments::parse_percent(Impairment::Duplicate, t)?;
    }
    if let Some(t) = &args.delay {
        i.delay = Impairments::parse_time(Impairment::Delay, t)?;
    }
    if let Some(t) = &args.jitter {
        i.jitter = Impairments::parse_time(Impairment::Jitter, t)?;
    }
    if let Some(t) = &args.reorder {
        i.reorder = Impairments::parse_percent(Impairment::Reorder, t)?;
    }
    if let Some(t) = &args.rate {
        i.rate_bps = Some(Impairments::parse_rate(Impairment::Rate, t)?);
    }
    if let Some(t) = &args.limit {
        i.limit = Some(Impairments::parse_limit(Impairment::Limit, t)?);
    }
    if let Some(t) = &args.reverse_rate {
        i.reverse_rate_bps = Some(Impairments::parse_rate(Impairment::ReverseRate, t)?);
    }
    i.validate()?;
    Ok(i)
}

#[derive(Debug, Serialize)]
struct LabJson {
    name: String,
    sender: String,
    receiver: String,
    netns: String,
    sender_mac: String,
    receiver_mac: String,
    sender_ip: String,
    receiver_ip: String,
    queues: u32,
    /// None when they could not be read (not root).
    sink_packets: Option<u64>,
    sink_bytes: Option<u64>,
    /// What runs on the receive end: "sink", or "receiver" while a running receiver holds it
    /// (the sink counts nothing meanwhile); None when it could not be read (not root).
    receive_end: Option<&'static str>,
    /// The receiver holding the receive end, when one does: `` `linerate rx`, pid N ``.
    #[serde(skip_serializing_if = "Option::is_none")]
    receive_end_holder: Option<String>,
    /// None for the direct pair.
    dut: Option<DutJson>,
}

#[derive(Debug, Serialize)]
struct DutJson {
    kind: &'static str,
    netns: String,
    ingress: String,
    egress: String,
    ingress_mac: String,
    impairments: String,
    loss_percent: f64,
    duplicate_percent: f64,
    delay_ns: u64,
    jitter_ns: u64,
    reorder_percent: f64,
    rate_bps: Option<u64>,
    limit: Option<u32>,
    delay_line_running: bool,
    /// What the impairment program counted; None when unreadable (not root).
    impair_seen: Option<u64>,
    impair_dropped: Option<u64>,
    impair_duplicated: Option<u64>,
    /// The BGP DUT's IPv6 subnets (`linerate_lab::routed_addresses6`): the sending device's
    /// address, the DUT's ingress, its egress, the receiving device's.
    #[serde(skip_serializing_if = "Option::is_none")]
    ipv6: Option<[String; 4]>,
}

impl LabJson {
    fn new(lab: &Lab, c: Option<SinkCounters>, impaired: Option<ImpairCounters>) -> Self {
        Self {
            name: lab.name.clone(),
            sender: lab.sender.clone(),
            receiver: lab.receiver.clone(),
            netns: lab.netns.clone(),
            sender_mac: format_mac(&lab.sender_mac),
            receiver_mac: format_mac(&lab.receiver_mac),
            sender_ip: lab.sender_ip.to_string(),
            receiver_ip: lab.receiver_ip.to_string(),
            queues: lab.queues,
            sink_packets: c.map(|c| c.packets),
            sink_bytes: c.map(|c| c.bytes),
            receive_end: None,
            receive_end_holder: None,
            dut: lab.dut.as_ref().map(|d| {
                let i = &d.impairments;
                DutJson {
                    kind: d.kind.as_str(),
                    netns: d.netns.clone(),
                    ingress: d.ingress.clone(),
                    egress: d.egress.clone(),
                    ingress_mac: format_mac(&d.ingress_mac),
                    impairments: i.describe(),
                    loss_percent: i.loss,
                    duplicate_percent: i.duplicate,
                    delay_ns: i.delay.as_nanos() as u64,
                    jitter_ns: i.jitter.as_nanos() as u64,
                    reorder_percent: i.reorder,
                    rate_bps: i.rate_bps,
                    limit: i.limit,
                    delay_line_running: d.delay_line_running,
                    impair_seen: impaired.map(|c| c.seen),
                    impair_dropped: impaired.map(|c| c.dropped),
                    impair_duplicated: impaired.map(|c| c.duplicated),
                    ipv6: (d.kind == linerate_lab::DutKind::Bgp).then(|| {
                        let (a, b, c, e) = linerate_lab::routed_addresses6(&lab.name);
                        [a, b, c, e].map(|x| x.to_string())
                    }),
                }
            }),
        }
    }
}

fn print_lab(
    lab: &Lab,
    counters: Option<SinkCounters>,
    impaired: Option<ImpairCounters>,
    attached: Option<&str>,
    held_by: Option<linerate_xdp::Holder>,
) -> Result<()> {
    let status = attached.is_some();
    let nat = lab.dut.as_ref().is_some_and(|d| d.kind == DutKind::Nat);
    let attached = match (attached, held_by) {
        _ if nat => "no sink: the servers' host, behind the NAT".to_owned(),
        (Some("receiver"), Some(h)) => {
            format!("a running receiver attached ({h}): the sink counts nothing until it ends")
        }
        (Some("receiver"), None) => {
            "a running receiver attached: the sink counts nothing until it ends".to_owned()
        }
        _ => "XDP sink attached".to_owned(),
    };
    let mut text = format!(
        "lab       {} ({} queue(s) per end)\n\
         sender    {}  {}  {}  (root namespace: transmit here)\n\
         receiver  {}  {}  {}  (namespace {}, {attached})\n",
        lab.name,
        lab.queues,
        lab.sender,
        format_mac(&lab.sender_mac),
        lab.sender_ip,
        lab.receiver,
        format_mac(&lab.receiver_mac),
        lab.receiver_ip,
        lab.netns
    );
    if let Some(d) = &lab.dut {
        text.push_str(&format!(
            "dut       {}  {} -> {}  (namespace {}; send to {})\n",
            d.kind,
            d.ingress,
            d.egress,
            d.netns,
            format_mac(&lab.dst_mac())
        ));
        let mut line = d.impairments.describe();
        if d.impairments.needs_delay_line() && !d.delay_line_running {
            line.push_str(" (the delay line is NOT running: frames are lost; run `linerate lab impair` again)");
        }
        text.push_str(&format!("impair    {line}\n"));
        if let (DutKind::Nat, Some((_, outside))) = (d.kind, d.gateways) {
            let (inside, len) = linerate_lab::NAT_INSIDE;
            let (servers, slen) = linerate_lab::NAT_SERVERS;
            text.push_str(&format!(
                "nat       {inside}/{len} (gateway {}) masqueraded as {outside}; conntrack -L in {}\n\
                 servers   kernel ones on {}, emulated ones on {servers}/{slen} (gateway {}) on {}\n",
                linerate_lab::NAT_INSIDE_GATEWAY,
                d.netns,
                lab.receiver_ip,
                linerate_lab::NAT_SERVERS_GATEWAY,
                lab.receiver
            ));
        }
        if let Some(c) = impaired.filter(|c| c.seen > 0) {
            text.push_str(&format!(
                "          {} frames seen, {} dropped, {} duplicated\n",
                c.seen, c.dropped, c.duplicated
            ));
        }
    }
    match counters {
        Some(c) => text.push_str(&format!(
            "sink      {} packets, {} bytes\n",
            c.packets, c.bytes
        )),
        None if status && !nat => text.push_str("sink      its counters need root to read\n"),
        None => {}
    }
    print(&text)
}

#[derive(Debug, Serialize)]
struct SinkJson {
    interface: String,
    netns: Option<String>,
    packets: u64,
    bytes: u64,
    elapsed_s: f64,
    pps: f64,
}

/// Where `linerate sink` counts: its own sink attached for the command, or a lab's pinned sink
/// when the interface is a lab's receive end (which the lab's sink already holds).
enum Counting {
    Own(Sink),
    Lab(Box<linerate_session::LabSink>),
}

impl Counting {
    fn counters(&self) -> Result<SinkCounters> {
        Ok(match self {
            Counting::Own(s) => s.counters()?,
            Counting::Lab(s) => s.counters()?,
        })
    }

    /// Still counting what arrives: false once a lab's receive end went away (`lab down`).
    fn present(&self) -> Result<bool> {
        match self {
            Counting::Own(_) => Ok(true),
            Counting::Lab(s) => Ok(s.present()?),
        }
    }
}

/// Attaches the sink (or reads a lab's, on its receive end), prints the receive rate once per
/// second, detaches on exit.
pub fn sink(args: &SinkArgs) -> Result<()> {
    let mode = match args.mode {
        XdpAttach::Drv => AttachMode::Drv,
        XdpAttach::Skb => AttachMode::Skb,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("install the Ctrl-C handler")?;
    let counting = match linerate_session::LabSink::at(&args.interface, args.netns.as_deref())? {
        Some(lab) => {
            eprintln!(
                "sink on {}: lab {}'s own sink, counting from now; Ctrl-C to stop",
                args.interface, lab.lab.name
            );
            Counting::Lab(Box::new(lab))
        }
        None => {
            let sink = Sink::attach(&args.interface, args.netns.as_deref(), mode)?;
            eprintln!("sink on {} ({mode}); Ctrl-C to stop", args.interface);
            Counting::Own(sink)
        }
    };
    let start = Instant::now();
    let mut last = (start, counting.counters()?);
    let first: SinkCounters = last.1;
    let mut gone = false;
    while !stop.load(Ordering::Relaxed) && args.duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        let now = Instant::now();
        if now - last.0 >= Duration::from_secs(1) {
            if !counting.present()? {
                gone = true;
                break;
            }
            let c = counting.counters()?;
            let d = c.since(last.1);
            let secs = (now - last.0).as_secs_f64();
            eprintln!(
                "{:>6.1}s  {:>8.3} Mpps  {:>7.3} Gbit/s  ({} packets)",
                (now - start).as_secs_f64(),
                d.packets as f64 / secs / 1e6,
                d.bytes as f64 * 8.0 / secs / 1e9,
                c.since(first).packets
            );
            last = (now, c);
        }
    }
    let total = counting.counters()?.since(first);
    let elapsed = start.elapsed().as_secs_f64();
    drop(counting);
    if args.json {
        print_json(&SinkJson {
            interface: args.interface.clone(),
            netns: args.netns.clone(),
            packets: total.packets,
            bytes: total.bytes,
            elapsed_s: elapsed,
            pps: total.packets as f64 / elapsed,
        })?;
    } else {
        println(&format!(
            "received  {} packets, {} bytes in {:.3} s ({:.3} Mpps)",
            total.packets,
            total.bytes,
            elapsed,
            total.packets as f64 / elapsed / 1e6
        ))?;
    }
    if gone {
        anyhow::bail!(
            "{} went away during the run (its lab taken down): the counts above are up to then",
            args.interface
        );
    }
    Ok(())
}
