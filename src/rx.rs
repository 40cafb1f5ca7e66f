//! `linerate rx`: the receive program on an interface, alone (the far end of a two-host test):
//! a line per second while it runs, the flow table (or JSON) at the end.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use linerate_session::RunReceiver;

use crate::output::print_lone;
use crate::signal::stop_flag;
use linerate_cli::RxArgs;

pub fn run(args: &RxArgs) -> Result<()> {
    // The stop flag before the receiver: a lab's receive end borrowed from its sink goes back
    // when `rx` is dropped, which Ctrl-C must reach through the loop below, not by killing us.
    let stop = stop_flag()?;
    // A lab's receive end is borrowed from the lab's sink (under the end's lock) and given
    // back when the receiver is dropped, on every way out of this function.
    let rx = RunReceiver::lone(
        &args.interface,
        args.netns.as_deref(),
        crate::options::rx_attach(args.mode),
        &crate::options::receiver(&args.receiver),
    )?;
    eprintln!(
        "receiving on {}{}{}; Ctrl-C to stop",
        args.interface,
        args.netns
            .as_deref()
            .map_or(String::new(), |n| format!(" in {n}")),
        if rx.lab_end {
            " (the lab's receive end, borrowed from its sink until the end)"
        } else {
            ""
        }
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
    let lab_end = rx.lab_end;
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
            "{} went away during the run ({}): the counts above are up to then",
            args.interface,
            if lab_end {
                "deleted, or its lab taken down"
            } else {
                "deleted, or moved to another namespace"
            }
        );
    }
    Ok(())
}
