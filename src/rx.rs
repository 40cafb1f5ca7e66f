//! `linerate rx`: the receive program on an interface, alone (the far end of a two-host test):
//! a line per second while it runs, the flow table (or JSON) at the end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use linerate_rx::{Clock, FlowReport, Receiver, RxConfig, RxTotals};
use linerate_xdp::AttachMode;

use crate::cli::{ClockArg, ReceiverArgs, RxArgs, XdpAttach};
pub use crate::rx_common::RunFlows;
use crate::rx_common::print_lone;
pub use crate::rx_common::sent_per_flow;

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
    print_lone(
        args.json,
        &args.interface,
        args.netns.as_deref(),
        start.elapsed(),
        &totals,
    )
}

/// The receive side of a `tx` run: attached before the first frame, read after the drain.
#[derive(Debug)]
pub struct RunReceiver {
    rx: Receiver,
    /// Where it listens, for the report.
    pub at: String,
    /// It took the lab's receive end from the sink (which then counts nothing this run).
    pub lab_end: bool,
}

/// Attaches the receiver for a session whose port is `interface`: `target` "" means the lab's
/// receive end (when `interface` is a lab's sender), else `IFACE` or `IFACE@NETNS`.
pub fn start_for(
    target: &str,
    interface: Option<&str>,
    mode: XdpAttach,
    args: &ReceiverArgs,
) -> Result<RunReceiver> {
    let lab_pin = match (interface, target.is_empty()) {
        (Some(iface), true) => crate::lab::lab_of(iface)?.map(|l| l.pin_dir()),
        _ => None,
    };
    start(target, lab_pin, mode, args)
}

/// Attaches the receiver for `tx --rx`: `target` "" means the lab's receive end (`lab_pin`, the
/// lab's pin directory, when `-i` is a lab's sender), else `IFACE` or `IFACE@NETNS`.
fn start(
    target: &str,
    lab_pin: Option<std::path::PathBuf>,
    mode: XdpAttach,
    args: &ReceiverArgs,
) -> Result<RunReceiver> {
    if target.is_empty() {
        let Some(dir) = lab_pin else {
            return Err(crate::usage(
                "--rx without an interface takes the lab's receive end, but -i is not a lab's \
                 sender: give --rx IFACE[@NETNS]",
            ));
        };
        let rx = Receiver::swap_into(&dir, config(args))?;
        return Ok(RunReceiver {
            rx,
            at: "the lab's receive end".into(),
            lab_end: true,
        });
    }
    let (iface, netns) = match target.split_once('@') {
        Some((i, n)) if !i.is_empty() && !n.is_empty() => (i, Some(n)),
        Some(_) => {
            return Err(crate::usage(format!(
                "--rx {target}: write IFACE or IFACE@NETNS"
            )));
        }
        None => (target, None),
    };
    let rx = Receiver::attach(iface, netns, attach_mode(mode), config(args))?;
    Ok(RunReceiver {
        rx,
        at: target.to_owned(),
        lab_end: false,
    })
}

impl RunReceiver {
    /// Everything counted since the run began (or the receiver was attached), flows or not.
    /// Safe from any thread while a run is in progress: it only reads the program's maps.
    pub fn read(&self) -> Result<RxTotals> {
        Ok(self.rx.read()?)
    }

    /// Clears the counts, so the next run's sequence numbers start afresh.
    pub fn reset(&self) -> Result<()> {
        Ok(self.rx.reset()?)
    }

    /// What the receiver counted so far, for the status line (the flow table without the
    /// histograms); None if its maps cannot be read: the line then goes without it, and the
    /// report at the end says why.
    pub fn progress(&self) -> Option<linerate_rx::RxProgress> {
        self.rx.progress().ok()
    }

    /// Waits up to `drain` for the frames still on their way (returns as soon as every flow has
    /// what was sent), then reads the flows against what each sent.
    pub fn finish(&self, tx: &[(u16, Option<String>, u64)], drain: Duration) -> Result<RunFlows> {
        let sent: u64 = tx.iter().map(|t| t.2).sum();
        let deadline = Instant::now() + drain;
        let mut totals = self.rx.read()?;
        while Instant::now() < deadline
            && totals.flows.iter().map(|f| f.unique()).sum::<u64>() < sent
        {
            std::thread::sleep(Duration::from_millis(10));
            totals = self.rx.read()?;
        }
        let flows = tx
            .iter()
            .map(|(id, name, n)| FlowReport::new(*id, name.clone(), *n, totals.flow(*id)))
            .collect();
        Ok(RunFlows {
            at: self.at.clone(),
            lab_end: self.lab_end,
            flows,
            other: totals.global,
        })
    }

    /// For frames the sender does not count per flow (a replayed capture): waits up to `drain`
    /// until the receive end has seen `frames` frames of any kind. Frames that do carry a
    /// signature (a capture of linerate's own traffic) are reported as a lone receiver does.
    pub fn finish_frames(&self, frames: u64, drain: Duration) -> Result<RunFlows> {
        let deadline = Instant::now() + drain;
        let mut totals = self.rx.read()?;
        while Instant::now() < deadline && crate::rx_common::all_frames(&totals) < frames {
            std::thread::sleep(Duration::from_millis(10));
            totals = self.rx.read()?;
        }
        Ok(RunFlows {
            at: self.at.clone(),
            lab_end: self.lab_end,
            flows: crate::rx_common::lone_reports(&totals),
            other: totals.global,
        })
    }
}

#[cfg(test)]
mod tests {
    /// The OTG server reads a session's receiver from its own thread while the run goes on.
    #[test]
    fn the_receiver_can_be_shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<super::RunReceiver>();
    }
}
