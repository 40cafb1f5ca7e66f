//! `linerate lab` and `linerate sink`: the veth lab and the XDP counter on the receiving side.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use linerate_lab::{Lab, LabConfig, LabError};
use linerate_wire::format_mac;
use linerate_xdp::{AttachMode, Sink, SinkCounters, XdpError};
use serde::Serialize;

use crate::cli::{LabAction, SinkArgs, XdpAttach};
use crate::output::print_json;
use crate::usage;

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
            let lab = Lab::up(&config).map_err(lab_error)?;
            print_lab(&lab, None);
            Ok(())
        }
        LabAction::Down(args) => {
            Lab::down(&args.name).map_err(lab_error)?;
            println!("lab {} removed", args.name);
            Ok(())
        }
        LabAction::Status(args) => {
            let name = &args.name.name;
            let lab = Lab::find(name)
                .map_err(lab_error)?
                .ok_or_else(|| lab_error(LabError::NotFound { name: name.clone() }))?;
            let counters = lab.sink_counters().map_err(lab_error)?;
            if args.json {
                print_json(&LabJson::new(&lab, counters))
            } else {
                print_lab(&lab, Some(counters));
                Ok(())
            }
        }
    }
}

/// The lab whose sender end is `iface`, if it is one.
pub fn lab_of(iface: &str) -> Result<Option<Lab>> {
    let Some(name) = iface.strip_suffix('0') else {
        return Ok(None);
    };
    if linerate_lab::validate_name(name).is_err() {
        return Ok(None);
    }
    match Lab::find(name) {
        Ok(Some(lab)) if lab.sender == iface => Ok(Some(lab)),
        Ok(_) => Ok(None),
        Err(LabError::Incomplete { .. }) => Ok(None),
        Err(e) => Err(lab_error(e)),
    }
}

/// Lab errors that come from what the user asked (names, privileges, leftovers) exit with 2.
pub fn lab_error(err: LabError) -> anyhow::Error {
    match err {
        LabError::InvalidName { .. }
        | LabError::InvalidQueues { .. }
        | LabError::Exists { .. }
        | LabError::Incomplete { .. }
        | LabError::NotFound { .. }
        | LabError::NotRoot { .. }
        | LabError::MissingTool { .. }
        | LabError::Xdp(XdpError::NotRoot { .. }) => usage(err.to_string()),
        other => other.into(),
    }
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
    sink_packets: u64,
    sink_bytes: u64,
}

impl LabJson {
    fn new(lab: &Lab, c: SinkCounters) -> Self {
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
            sink_packets: c.packets,
            sink_bytes: c.bytes,
        }
    }
}

fn print_lab(lab: &Lab, counters: Option<SinkCounters>) {
    println!("lab       {} ({} queue(s) per end)", lab.name, lab.queues);
    println!(
        "sender    {}  {}  {}  (root namespace: transmit here)",
        lab.sender,
        format_mac(&lab.sender_mac),
        lab.sender_ip
    );
    println!(
        "receiver  {}  {}  {}  (namespace {}, XDP sink attached)",
        lab.receiver,
        format_mac(&lab.receiver_mac),
        lab.receiver_ip,
        lab.netns
    );
    if let Some(c) = counters {
        println!("sink      {} packets, {} bytes", c.packets, c.bytes);
    }
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

/// Attaches the sink, prints the receive rate once per second, detaches on exit.
pub fn sink(args: &SinkArgs) -> Result<()> {
    let mode = match args.mode {
        XdpAttach::Drv => AttachMode::Drv,
        XdpAttach::Skb => AttachMode::Skb,
    };
    let sink = Sink::attach(&args.interface, args.netns.as_deref(), mode).map_err(xdp_error)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("install the Ctrl-C handler")?;
    let start = Instant::now();
    let mut last = (start, sink.counters().map_err(xdp_error)?);
    let first: SinkCounters = last.1;
    eprintln!("sink on {} ({mode}); Ctrl-C to stop", args.interface);
    while !stop.load(Ordering::Relaxed) && args.duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        let now = Instant::now();
        if now - last.0 >= Duration::from_secs(1) {
            let c = sink.counters().map_err(xdp_error)?;
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
    let total = sink.counters().map_err(xdp_error)?.since(first);
    let elapsed = start.elapsed().as_secs_f64();
    drop(sink);
    if args.json {
        print_json(&SinkJson {
            interface: args.interface.clone(),
            netns: args.netns.clone(),
            packets: total.packets,
            bytes: total.bytes,
            elapsed_s: elapsed,
            pps: total.packets as f64 / elapsed,
        })
    } else {
        println!(
            "received  {} packets, {} bytes in {:.3} s ({:.3} Mpps)",
            total.packets,
            total.bytes,
            elapsed,
            total.packets as f64 / elapsed / 1e6
        );
        Ok(())
    }
}

pub fn xdp_error(err: XdpError) -> anyhow::Error {
    match err {
        XdpError::UnknownInterface { .. }
        | XdpError::NoSuchNetns { .. }
        | XdpError::NotRoot { .. }
        | XdpError::AlreadyAttached { .. }
        | XdpError::ModeUnsupported { .. } => usage(err.to_string()),
        other => other.into(),
    }
}
