//! The receive side off Linux. On macOS it is a `/dev/bpf` capture keeping signed frames,
//! analysed by the same per-flow code as the Linux receive program (`linerate_rx`); elsewhere
//! (FreeBSD) there is none yet.

#[cfg(target_os = "macos")]
pub use macos::run;

#[cfg(not(target_os = "macos"))]
pub use elsewhere::run;

#[cfg(target_os = "macos")]
mod macos {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use anyhow::Result;
    use linerate_session::{start_capture, warn_drops};

    use crate::output::print_lone;
    use crate::signal::stop_flag;
    use crate::usage;
    use linerate_cli::RxArgs;

    pub fn run(args: &RxArgs) -> Result<()> {
        if args.netns.is_some() {
            return Err(usage(
                "--netns needs Linux: macOS has no network namespaces",
            ));
        }
        let t = start_capture(&args.interface, &crate::options::receiver(&args.receiver))?;
        let stop = stop_flag()?;
        eprintln!("receiving on {} (/dev/bpf); Ctrl-C to stop", args.interface);
        let start = Instant::now();
        let mut last = (start, 0u64);
        while !stop.load(Ordering::Relaxed) && args.duration.is_none_or(|d| start.elapsed() < d) {
            std::thread::sleep(Duration::from_millis(50));
            let now = Instant::now();
            if now - last.0 >= Duration::from_secs(1) {
                let (frames, flows, other) = t.with_counts(|c| {
                    (
                        c.signed_frames(),
                        c.flows.iter().filter(|f| f.frames > 0).count(),
                        c.global.other_frames,
                    )
                })?;
                eprintln!(
                    "{:>6.1}s  {:>8.3} Mpps  {flows} flows  {frames} frames  other {other}",
                    (now - start).as_secs_f64(),
                    (frames - last.1) as f64 / (now - last.0).as_secs_f64() / 1e6,
                );
                last = (now, frames);
            }
        }
        warn_drops(&t, &args.interface);
        let totals = t.finish()?.totals();
        print_lone(args.json, &args.interface, None, start.elapsed(), &totals)
    }
}

#[cfg(not(target_os = "macos"))]
mod elsewhere {
    use anyhow::Result;

    use crate::usage;
    use linerate_cli::RxArgs;

    pub fn run(_args: &RxArgs) -> Result<()> {
        Err(usage(
            "linerate rx needs Linux (XDP) or macOS (/dev/bpf); count at one of those",
        ))
    }
}
