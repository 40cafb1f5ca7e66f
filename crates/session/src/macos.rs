//! macOS: sinks and captures on `/dev/bpf`, and the feth pair a command makes for itself.

use std::time::Duration;

use linerate_bpfdev::capture::{CaptureCounts, Keep};
use linerate_bpfdev::sink::host_clocks;
use linerate_bpfdev::{BpfReader, CaptureThread};
use linerate_lab::feth::{Feth, FethLab};

use crate::error::{Result, SessionError};
use crate::sink::Sink;

/// The kernel buffer a capture asks for. xnu grants at most `debug.bpf_maxbufsize` (512 KiB
/// unless raised with sysctl) and says what it granted; more lets a reader fall further behind
/// at full rate before the kernel drops frames it never counted.
const SINK_BUFFER: u32 = 8 * 1024 * 1024;
/// How long a read waits for the buffer to fill before returning what it has.
const READ_TIMEOUT: Duration = Duration::from_millis(100);

/// Opens a `/dev/bpf` reader on `iface` and counts on a thread of its own from now on.
pub fn capture(iface: &str, keep: Keep, counts: CaptureCounts) -> Result<CaptureThread> {
    // As a PortError, a missing or down interface is the user's to fix (exit code 2).
    let reader = BpfReader::open(iface, SINK_BUFFER, READ_TIMEOUT, keep)
        .map_err(linerate_port::PortError::from)?;
    Ok(CaptureThread::spawn(reader, counts, host_clocks))
}

/// A `Sink` reading a capture's totals, warning once each time the kernel has dropped frames
/// the capture never saw (they then count as lost).
fn counting(
    name: String,
    iface: String,
    peer_mac: [u8; 6],
    ips: (std::net::Ipv4Addr, std::net::Ipv4Addr),
    t: CaptureThread,
) -> Sink {
    let warned = std::sync::atomic::AtomicU64::new(0);
    Sink {
        name,
        peer_mac,
        ips,
        counters: Box::new(move || {
            let counts = t.frames_bytes()?;
            let drops = t.drops();
            let before = warned.fetch_max(drops, std::sync::atomic::Ordering::Relaxed);
            if drops > before {
                eprintln!(
                    "linerate: warning: the bpf buffer on {iface} overflowed: {} frame(s) \
                     arrived but were not counted (the receiver fell behind)",
                    drops - before
                );
            }
            Ok(counts)
        }),
        lone_receiver: None,
    }
}

impl Sink {
    /// The sink of the feth lab whose sender end is `iface`: a capture on its receiver end
    /// keeping the frames addressed to it (not the host's own chatter on the pair).
    pub fn of_lab(iface: &str) -> Result<Option<Sink>> {
        let mut feth = Feth::system();
        let Some(lab) = feth.lab_of(iface)? else {
            return Ok(None);
        };
        let mac = feth.mac(&lab.receiver)?;
        let t = capture(&lab.receiver, Keep::To(mac), CaptureCounts::new(0, 0))?;
        Ok(Some(counting(
            lab.name.clone(),
            lab.receiver.clone(),
            mac,
            (lab.sender_ip, lab.receiver_ip),
            t,
        )))
    }

    /// A capture on any interface for `--sink-iface`: every frame, as the Linux sink counts.
    pub fn attach(iface: &str, netns: Option<&str>) -> Result<Sink> {
        if netns.is_some() {
            return Err(SessionError::setting(
                crate::Setting::SinkNetns,
                "a network namespace needs Linux: macOS has none",
            ));
        }
        let t = capture(iface, Keep::All, CaptureCounts::new(0, 0))?;
        Ok(counting(
            iface.to_owned(),
            iface.to_owned(),
            [0xff; 6],
            linerate_stream::Limits::default().default_ipv4,
            t,
        ))
    }
}

/// A feth lab made for one command (`sweep --lab`), removed when dropped.
#[derive(Debug)]
pub struct FethGuard {
    pub lab: FethLab,
}

impl FethGuard {
    pub fn up(name: Option<&str>) -> Result<Self> {
        let name = name.map_or_else(|| linerate_lab::unique_name("sw"), str::to_owned);
        Ok(Self {
            lab: Feth::system().up(&name)?,
        })
    }
}

impl Drop for FethGuard {
    fn drop(&mut self) {
        if let Err(e) = Feth::system().down(&self.lab.name) {
            eprintln!("linerate: removing lab {}: {e}", self.lab.name);
        }
    }
}
