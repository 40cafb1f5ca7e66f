//! `linerate rx`: the receive program on an interface, alone (the far end of a two-host test):
//! a line per second while it runs, the flow table (or JSON) at the end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use linerate_rx::{Clock, FlowReport, Receiver, RxConfig, RxTotals};
use linerate_xdp::AttachMode;
use serde::Serialize;

use crate::cli::{ClockArg, ReceiverArgs, RxArgs, XdpAttach};
use crate::output::{print, print_json};

/// The receiver's configuration from the command line.
pub fn config(args: &ReceiverArgs) -> RxConfig {
    RxConfig {
        flows: args.rx_flows,
        hist_flows: args.rx_hist_flows,
        clock: match args.clock {
            ClockArg::Monotonic => Clock::Monotonic,
            ClockArg::Tai => Clock::Tai,
        },
        pass: args.rx_pass,
    }
}

pub fn attach_mode(mode: XdpAttach) -> AttachMode {
    match mode {
        XdpAttach::Drv => AttachMode::Drv,
        XdpAttach::Skb => AttachMode::Skb,
    }
}

#[derive(Debug, Serialize)]
struct RxJson<'a> {
    interface: &'a str,
    netns: Option<&'a str>,
    elapsed_s: f64,
    /// A lone receiver does not know what was sent: `lost` is estimated from the sequence gaps
    /// (blind to a lost tail).
    flows: Vec<FlowReport>,
    totals: &'a RxTotals,
}

/// Flow reports for a receiver that does not know what was sent: each flow's "sent" is the
/// highest sequence number seen + 1 less the frames the gaps never accounted for.
fn lone_reports(totals: &RxTotals) -> Vec<FlowReport> {
    totals
        .flows
        .iter()
        .map(|f| FlowReport::new(f.flow, None, f.unique() + f.estimated_loss(), Some(f)))
        .collect()
}

pub fn run(args: &RxArgs) -> Result<()> {
    let rx = Receiver::attach(
        &args.interface,
        args.netns.as_deref(),
        attach_mode(args.mode),
        config(&args.receiver),
    )?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("install the Ctrl-C handler")?;
    eprintln!(
        "receiving on {}{}; Ctrl-C to stop",
        args.interface,
        args.netns
            .as_deref()
            .map_or(String::new(), |n| format!(" in {n}"))
    );
    let start = Instant::now();
    let mut last = (start, 0u64);
    while !stop.load(Ordering::Relaxed) && args.duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        let now = Instant::now();
        if now - last.0 >= Duration::from_secs(1) {
            let t = rx.read()?;
            let frames: u64 = t.flows.iter().map(|f| f.frames).sum();
            let est: u64 = t.flows.iter().map(|f| f.estimated_loss()).sum();
            eprintln!(
                "{:>6.1}s  {:>8.3} Mpps  {} flows  {} frames  est. lost {}  other {}",
                (now - start).as_secs_f64(),
                (frames - last.1) as f64 / (now - last.0).as_secs_f64() / 1e6,
                t.flows.len(),
                frames,
                est,
                t.global.other_frames
            );
            last = (now, frames);
        }
    }
    let totals = rx.read()?;
    drop(rx);
    let flows = lone_reports(&totals);
    if args.json {
        print_json(&RxJson {
            interface: &args.interface,
            netns: args.netns.as_deref(),
            elapsed_s: start.elapsed().as_secs_f64(),
            flows,
            totals: &totals,
        })
    } else {
        print(&format!(
            "(a lone receiver: tx = received once + sequence gaps never filled; a lost tail is not seen)\n{}",
            linerate_rx::table::flow_table(&flows, &totals.global)
        ))
    }
}
