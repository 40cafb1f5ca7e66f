//! `linerate rx`: the receive program on an interface, alone (the far end of a two-host test):
//! a line per second while it runs, the flow table (or JSON) at the end.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use linerate_rx::{Receiver, RxConfig};

use crate::output::print_lone;
use crate::signal::stop_flag;
use linerate_cli::RxArgs;

pub fn run(args: &RxArgs) -> Result<()> {
    let rx = Receiver::attach(
        &args.interface,
        args.netns.as_deref(),
        crate::options::rx_attach(args.mode).into(),
        RxConfig::from(&crate::options::receiver(&args.receiver)),
    )?;
    let stop = stop_flag()?;
    eprintln!(
        "receiving on {}{}; Ctrl-C to stop",
        args.interface,
        args.netns
            .as_deref()
            .map_or(String::new(), |n| format!(" in {n}"))
    );
    let start = Instant::now();
    let mut last = (start, 0u64);
    let mut gone = false;
    while !stop.load(Ordering::Relaxed) && args.duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        if !rx.attached() {
            gone = true;
            break;
        }
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
    )?;
    if gone {
        // The counts so far are printed; the run itself failed (exit 1).
        anyhow::bail!(
            "{} went away during the run (deleted, or moved to another namespace): the counts above are up to then",
            args.interface
        );
    }
    Ok(())
}
