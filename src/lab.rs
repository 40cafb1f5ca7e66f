//! `linerate lab` and `linerate sink`: the veth lab and the XDP counter on the receiving side.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use linerate_lab::{Lab, LabConfig, LabError};
use linerate_wire::format_mac;
use linerate_xdp::{AttachMode, Sink, SinkCounters};
use serde::Serialize;

use crate::cli::{LabAction, SinkArgs, XdpAttach};
use crate::output::{print, print_json, println};

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
            let lab = Lab::up(&config)?;
            print_lab(&lab, None, false)
        }
        LabAction::Down(args) => {
            Lab::down(&args.name)?;
            println(&format!("lab {} removed", args.name))
        }
        LabAction::Status(args) => {
            let name = &args.name.name;
            let lab = Lab::find(name)?.ok_or_else(|| LabError::NotFound { name: name.clone() })?;
            // Without root the pinned counters cannot be opened; the lab is no less whole.
            let counters = match lab.sink_counters() {
                Ok(c) => Some(c),
                Err(e) if !nix::unistd::geteuid().is_root() => {
                    eprintln!("linerate: the sink's counters need root: {e}");
                    None
                }
                Err(e) => return Err(e.into()),
            };
            if args.json {
                print_json(&LabJson::new(&lab, counters))
            } else {
                print_lab(&lab, counters, true)
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
        Err(LabError::Incomplete { .. } | LabError::NotOurs { .. }) => Ok(None),
        Err(e) => Err(e.into()),
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
    /// None when they could not be read (not root).
    sink_packets: Option<u64>,
    sink_bytes: Option<u64>,
}

impl LabJson {
    fn new(lab: &Lab, c: Option<SinkCounters>) -> Self {
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
        }
    }
}

fn print_lab(lab: &Lab, counters: Option<SinkCounters>, status: bool) -> Result<()> {
    let mut text = format!(
        "lab       {} ({} queue(s) per end)\n\
         sender    {}  {}  {}  (root namespace: transmit here)\n\
         receiver  {}  {}  {}  (namespace {}, XDP sink attached)\n",
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
    match counters {
        Some(c) => text.push_str(&format!(
            "sink      {} packets, {} bytes\n",
            c.packets, c.bytes
        )),
        None if status => text.push_str("sink      its counters need root to read\n"),
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

/// Attaches the sink, prints the receive rate once per second, detaches on exit.
pub fn sink(args: &SinkArgs) -> Result<()> {
    let mode = match args.mode {
        XdpAttach::Drv => AttachMode::Drv,
        XdpAttach::Skb => AttachMode::Skb,
    };
    let sink = Sink::attach(&args.interface, args.netns.as_deref(), mode)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("install the Ctrl-C handler")?;
    let start = Instant::now();
    let mut last = (start, sink.counters()?);
    let first: SinkCounters = last.1;
    eprintln!("sink on {} ({mode}); Ctrl-C to stop", args.interface);
    while !stop.load(Ordering::Relaxed) && args.duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        let now = Instant::now();
        if now - last.0 >= Duration::from_secs(1) {
            let c = sink.counters()?;
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
    let total = sink.counters()?.since(first);
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
        println(&format!(
            "received  {} packets, {} bytes in {:.3} s ({:.3} Mpps)",
            total.packets,
            total.bytes,
            elapsed,
            total.packets as f64 / elapsed / 1e6
        ))
    }
}
