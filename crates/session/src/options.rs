//! What a session is asked to open and how: its own typed options, filled by any front end
//! (the CLI's flags, the OTG server's configuration).

use std::path::PathBuf;
use std::time::Duration;

use linerate_engine::WorkerSpec;

use crate::error::{Result, SessionError};

/// Where frames go: a kernel-bypass backend on an interface, a pcap file or nowhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The fastest this interface takes (Linux): `linerate_port::ladder` decides from its facts
    /// when the port opens, and the port keeps the choice and why for the report.
    Auto,
    /// AF_XDP sockets (Linux).
    Afxdp,
    /// AF_PACKET with PACKET_TX_RING (Linux).
    Afpacket,
    /// `/dev/bpf` (macOS, FreeBSD).
    Bpf,
    /// The in-kernel live XDP transmitter (Linux).
    Live,
    /// Frames written to a pcap file.
    Pcap,
    /// Frames counted and dropped.
    Null,
}

impl Backend {
    /// The platform's interface backend: the ladder's choice on Linux, `/dev/bpf` elsewhere.
    pub fn platform_default() -> Backend {
        if cfg!(target_os = "linux") {
            Backend::Auto
        } else {
            Backend::Bpf
        }
    }

    /// True for the backends that send on an interface.
    pub fn has_interface(self) -> bool {
        matches!(
            self,
            Self::Auto | Self::Afxdp | Self::Afpacket | Self::Bpf | Self::Live
        )
    }
}

/// How an AF_XDP socket binds to its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XdpMode {
    /// Zero-copy where the driver offers it, else copy.
    #[default]
    Auto,
    ZeroCopy,
    Copy,
}

/// How an XDP program attaches to an interface for transmit (AF_XDP's redirect program).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XdpAttach {
    /// The driver's hook where the driver has one, else the generic hook.
    #[default]
    Auto,
    Drv,
    Skb,
}

/// The AF_XDP socket's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfXdpOptions {
    pub mode: XdpMode,
    pub attach: XdpAttach,
    /// Kick the kernel only when it asks (XDP_USE_NEED_WAKEUP).
    pub need_wakeup: bool,
}

impl Default for AfXdpOptions {
    fn default() -> Self {
        AfXdpOptions {
            mode: XdpMode::Auto,
            attach: XdpAttach::Auto,
            need_wakeup: true,
        }
    }
}

/// The clock signed frames are stamped with; the receiver's must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    #[default]
    Monotonic,
    /// CLOCK_TAI, for two hosts synchronised by PTP (Linux).
    Tai,
}

/// Where a receive program attaches: the driver's hook or the generic one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RxAttach {
    #[default]
    Drv,
    Skb,
}

/// What the receiver tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiverOptions {
    /// Flow ids below this are tracked; frames of higher ones are counted as untracked.
    pub flows: u32,
    /// Flow ids below this also get a latency histogram.
    pub hist_flows: u32,
    pub clock: Clock,
    /// Pass the frames on to the stack instead of dropping them.
    pub pass: bool,
    /// Time every frame's latency, not one frame a departure stamp.
    pub every_frame: bool,
}

impl Default for ReceiverOptions {
    fn default() -> Self {
        ReceiverOptions {
            flows: 4096,
            hist_flows: 256,
            clock: Clock::Monotonic,
            pass: false,
            every_frame: false,
        }
    }
}

#[cfg(target_os = "linux")]
impl From<&ReceiverOptions> for linerate_rx::RxConfig {
    fn from(o: &ReceiverOptions) -> Self {
        linerate_rx::RxConfig {
            flows: o.flows,
            hist_flows: o.hist_flows,
            clock: match o.clock {
                Clock::Monotonic => linerate_rx::Clock::Monotonic,
                Clock::Tai => linerate_rx::Clock::Tai,
            },
            pass: o.pass,
            every_frame: o.every_frame,
        }
    }
}

#[cfg(target_os = "linux")]
impl From<RxAttach> for linerate_xdp::AttachMode {
    fn from(a: RxAttach) -> Self {
        match a {
            RxAttach::Drv => linerate_xdp::AttachMode::Drv,
            RxAttach::Skb => linerate_xdp::AttachMode::Skb,
        }
    }
}

/// What to transmit on and how: the port, its workers, the stamp clock.
#[derive(Debug, Clone)]
pub struct PortOptions {
    /// The backend, already chosen.
    pub backend: Backend,
    /// The interface, for the interface backends; with any backend, a lab's sender end here
    /// also lends the lab's addresses and its sink.
    pub interface: Option<String>,
    /// The file of the pcap backend.
    pub pcap: Option<PathBuf>,
    /// MTU of the pcap and null ports.
    pub mtu: u32,
    pub afxdp: AfXdpOptions,
    /// One worker per core.
    pub cores: Vec<usize>,
    /// The queue each worker drives (default 0, 1, …).
    pub queues: Option<Vec<u32>>,
    /// Frames per submit.
    pub batch: u32,
    /// Link speed in Mbit/s when the port does not report one (for % rates and % of line).
    pub link_speed: Option<u64>,
    /// The clock signed frames are stamped with (the receiver's must match).
    pub clock: Clock,
}

impl PortOptions {
    /// An interface with the platform's default backend, one worker on core 0, the usual batch.
    pub fn interface(name: &str) -> Self {
        PortOptions {
            backend: Backend::platform_default(),
            interface: Some(name.to_owned()),
            pcap: None,
            mtu: 1500,
            afxdp: AfXdpOptions::default(),
            cores: vec![0],
            queues: None,
            batch: 64,
            link_speed: None,
            clock: Clock::Monotonic,
        }
    }

    /// The workers these options ask for (see [`workers`]).
    pub fn workers(&self) -> Result<Vec<WorkerSpec>> {
        workers(&self.cores, self.queues.as_deref(), Some(self.backend))
    }
}

/// Where a port's receiver listens.
#[derive(Debug, Clone)]
pub struct RxTarget {
    /// `None`: the lab's receive end (when the port is a lab's sender); else `IFACE` or
    /// `IFACE@NETNS`.
    pub at: Option<String>,
    pub attach: RxAttach,
    pub receiver: ReceiverOptions,
}

/// When a run ends (else when the plan's own count is sent, or at the stop flag).
#[derive(Debug, Clone, Copy, Default)]
pub struct End {
    pub duration: Option<Duration>,
    pub count: Option<u64>,
}

/// Pairs cores with queues: worker i runs on cores[i] and drives queues[i] (or queue i).
pub fn workers(
    cores: &[usize],
    queues: Option<&[u32]>,
    backend: Option<Backend>,
) -> Result<Vec<WorkerSpec>> {
    let usage = |m: String| SessionError::Usage(m);
    if backend == Some(Backend::Live) && queues.is_some() {
        return Err(usage(
            "--queues does not apply to the live backend: its frames leave on the CPU of the \
             worker (choose it with --cores)"
                .into(),
        ));
    }
    if cores.is_empty() {
        return Err(usage("--cores needs at least one core".into()));
    }
    for (i, c) in cores.iter().enumerate() {
        if cores[..i].contains(c) {
            return Err(usage(format!(
                "--cores names core {c} twice: each worker needs a core of its own"
            )));
        }
    }
    let queues: Vec<u32> = match queues {
        Some(q) if q.len() != cores.len() => {
            return Err(usage(format!(
                "--queues has {} entries but --cores has {}: give one queue per core",
                q.len(),
                cores.len()
            )));
        }
        Some(q) => q.to_vec(),
        None => (0..cores.len() as u32).collect(),
    };
    for (i, q) in queues.iter().enumerate() {
        if queues[..i].contains(q) {
            return Err(usage(format!(
                "queue {q} is given twice: each worker needs its own queue"
            )));
        }
    }
    Ok(cores
        .iter()
        .zip(queues)
        .map(|(&core, queue)| WorkerSpec {
            core: Some(core),
            queue,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_pair_cores_with_queues_and_refuse_what_cannot_run() {
        let pairs = |w: Vec<WorkerSpec>| w.iter().map(|w| (w.core, w.queue)).collect::<Vec<_>>();
        let w = workers(&[2, 5], None, Some(Backend::Afxdp)).unwrap();
        assert_eq!(pairs(w), vec![(Some(2), 0), (Some(5), 1)]);
        let w = workers(&[2, 5], Some(&[3, 7]), None).unwrap();
        assert_eq!(pairs(w), vec![(Some(2), 3), (Some(5), 7)]);
        type Case<'a> = (&'a [usize], Option<&'a [u32]>, Option<Backend>, &'a str);
        let refused: [Case; 5] = [
            (&[], None, None, "at least one core"),
            (&[1, 1], None, None, "core 1 twice"),
            (&[1, 2], Some(&[0]), None, "1 entries but --cores has 2"),
            (&[1, 2], Some(&[4, 4]), None, "queue 4 is given twice"),
            (&[1], Some(&[0]), Some(Backend::Live), "live backend"),
        ];
        for (cores, queues, backend, says) in refused {
            let e = workers(cores, queues, backend).unwrap_err();
            assert!(e.is_usage(), "{e}");
            assert!(e.to_string().contains(says), "{e}");
        }
    }
}
