//! `linerate lab` and `linerate sink` off Linux. On macOS the lab is a feth pair
//! (`linerate_lab::feth`) and the sink a `/dev/bpf` reader (`linerate_bpfdev::BpfReader`);
//! elsewhere (FreeBSD) neither exists yet.

use crate::usage;
use linerate_cli::{LabAction, SinkArgs};

#[cfg(not(target_os = "macos"))]
use anyhow::Result;

#[cfg(not(target_os = "macos"))]
pub fn run(_action: &LabAction) -> Result<()> {
    Err(usage(
        "linerate lab needs Linux (network namespaces, veth and XDP) or macOS (feth)",
    ))
}

#[cfg(not(target_os = "macos"))]
pub fn sink(_args: &SinkArgs) -> Result<()> {
    Err(usage("linerate sink needs Linux (XDP) or macOS (/dev/bpf)"))
}

#[cfg(target_os = "macos")]
pub use macos::{run, sink};

#[cfg(target_os = "macos")]
mod macos {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use anyhow::Result;
    use linerate_bpfdev::capture::{CaptureCounts, Keep};
    use linerate_lab::feth::{Feth, FethLab};
    use linerate_session::capture;
    use serde::Serialize;

    use super::{LabAction, SinkArgs, usage};
    use crate::output::{print_json, println};

    pub fn run(action: &LabAction) -> Result<()> {
        let mut feth = Feth::system();
        match action {
            LabAction::Up(args) => {
                if args.dut.is_some() {
                    return Err(usage(
                        "--dut needs Linux: the macOS lab is a bare feth pair",
                    ));
                }
                if args.queues.is_some_and(|q| q != 1) {
                    return Err(usage("a feth pair has one queue per end: drop --queues"));
                }
                let lab = feth.up(&args.name.name)?;
                print_lab(&lab)
            }
            LabAction::Down(args) => {
                feth.down(&args.name)?;
                println(&format!("lab {} removed", args.name))
            }
            LabAction::Status(args) => {
                let lab = feth.status(&args.name.name)?;
                if args.json {
                    print_json(&LabJson {
                        name: &lab.name,
                        sender: &lab.sender,
                        receiver: &lab.receiver,
                        sender_ip: lab.sender_ip.to_string(),
                        receiver_ip: lab.receiver_ip.to_string(),
                    })
                } else {
                    print_lab(&lab)
                }
            }
            LabAction::Impair(_) | LabAction::DelayLine(_) => {
                Err(usage("impairments need the Linux lab's device under test"))
            }
            LabAction::Nat(_) => Err(usage("the NAT is the Linux lab's device under test")),
        }
    }

    #[derive(Serialize)]
    struct LabJson<'a> {
        name: &'a str,
        sender: &'a str,
        receiver: &'a str,
        sender_ip: String,
        receiver_ip: String,
    }

    fn print_lab(lab: &FethLab) -> Result<()> {
        println(&format!(
            "lab       {} (feth pair)\n\
             sender    {}  {}  (transmit here)\n\
             receiver  {}  {}  (count here: linerate sink -i {})",
            lab.name, lab.sender, lab.sender_ip, lab.receiver, lab.receiver_ip, lab.receiver
        ))
    }

    #[derive(Serialize)]
    struct SinkJson {
        interface: String,
        packets: u64,
        bytes: u64,
        signed: u64,
        kernel_drops: u64,
        elapsed_s: f64,
        pps: f64,
    }

    /// Counts the frames arriving on an interface with `/dev/bpf`, printing the rate once per second.
    pub fn sink(args: &SinkArgs) -> Result<()> {
        if args.netns.is_some() {
            return Err(usage(
                "--netns needs Linux: macOS has no network namespaces",
            ));
        }
        // Every frame, as the Linux sink counts.
        let t = capture(
            &args.interface,
            Keep::All,
            CaptureCounts::new(usize::from(u16::MAX) + 1, 0),
        )?;
        let stop = crate::signal::stop_flag()?;
        eprintln!("sink on {} (/dev/bpf); Ctrl-C to stop", args.interface);
        let start = Instant::now();
        let mut last = (start, 0u64, 0u64);
        while !stop.load(Ordering::Relaxed) && args.duration.is_none_or(|d| start.elapsed() < d) {
            std::thread::sleep(Duration::from_millis(50));
            let now = Instant::now();
            if now - last.0 >= Duration::from_secs(1) {
                let (frames, bytes) = t.frames_bytes()?;
                let secs = (now - last.0).as_secs_f64();
                eprintln!(
                    "{:>6.1}s  {:>8.3} Mpps  {:>7.3} Gbit/s  ({} packets)",
                    (now - start).as_secs_f64(),
                    (frames - last.1) as f64 / secs / 1e6,
                    (bytes - last.2) as f64 * 8.0 / secs / 1e9,
                    frames
                );
                last = (now, frames, bytes);
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        let drops = t.drops();
        let counts = t.finish()?;
        if drops > 0 {
            eprintln!("linerate: the bpf buffer overflowed: {drops} frames dropped uncounted");
        }
        if args.json {
            print_json(&SinkJson {
                interface: args.interface.clone(),
                packets: counts.frames,
                bytes: counts.bytes,
                signed: counts.signed_frames(),
                kernel_drops: drops,
                elapsed_s: elapsed,
                pps: counts.frames as f64 / elapsed,
            })
        } else {
            println(&format!(
                "received  {} packets, {} bytes in {:.3} s ({:.3} Mpps)",
                counts.frames,
                counts.bytes,
                elapsed,
                counts.frames as f64 / elapsed / 1e6
            ))
        }
    }
}
