//! What a session is asked to open and how: its own typed options, filled by any front end
//! (the CLI's flags, the OTG server's configuration).

use std::path::PathBuf;
use std::time::Duration;

use linerate_engine::WorkerSpec;

use crate::error::{Result, SessionError, Setting};

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

/// The backend's own name: `afxdp`, `pcap`, …
impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Afxdp => "afxdp",
            Self::Afpacket => "afpacket",
            Self::Bpf => "bpf",
            Self::Live => "live",
            Self::Pcap => "pcap",
            Self::Null => "null",
        })
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
    /// Keep the gaps between each flow's arrivals (every frame timed).
    pub gaps: bool,
}

impl Default for ReceiverOptions {
    fn default() -> Self {
        ReceiverOptions {
            flows: 4096,
            hist_flows: 256,
            clock: Clock::Monotonic,
            pass: false,
            every_frame: false,
            gaps: false,
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
            gaps: o.gaps,
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
    /// One worker per core; empty: none given, one worker placed by default (the first core
    /// this process may run on; a test bed's ports each on a free one, see [`place_ports`]).
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
    /// An interface with the platform's default backend, one worker placed by default, the
    /// usual batch.
    pub fn interface(name: &str) -> Self {
        PortOptions {
            backend: Backend::platform_default(),
            interface: Some(name.to_owned()),
            pcap: None,
            mtu: 1500,
            afxdp: AfXdpOptions::default(),
            cores: Vec::new(),
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
#[derive(Debug, Clone, Default)]
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

/// The cores this process may run on (its affinity mask: taskset, cgroups), in order; core 0
/// when the mask cannot be read.
pub fn allowed_cores() -> Vec<usize> {
    let mut cores = linerate_engine::allowed_cores();
    if cores.is_empty() {
        cores.push(0);
    }
    cores
}

/// Where the workers of `ports` ports of one process run: port i on `given[i % len]`, or with
/// none given on the i-th core this process may run on, so that spinning workers do not take
/// turns on one core. Past the cores there are, ports share them: the second value then says
/// which do, for a warning (the run goes on).
pub fn place_ports(ports: &[String], given: &[usize]) -> (Vec<usize>, Option<String>) {
    let pool = if given.is_empty() {
        allowed_cores()
    } else {
        given.to_vec()
    };
    place_on(ports, &pool, given.is_empty())
}

fn place_on(ports: &[String], pool: &[usize], default: bool) -> (Vec<usize>, Option<String>) {
    let placed: Vec<usize> = (0..ports.len()).map(|i| pool[i % pool.len()]).collect();
    if ports.len() <= pool.len() {
        return (placed, None);
    }
    let shared: Vec<String> = pool
        .iter()
        .filter_map(|core| {
            let on: Vec<&str> = ports
                .iter()
                .zip(&placed)
                .filter(|(_, c)| *c == core)
                .map(|(p, _)| p.as_str())
                .collect();
            (on.len() > 1).then(|| format!("{} share core {core}", on.join(" and ")))
        })
        .collect();
    let whose = if default {
        "this process may run on"
    } else {
        "--cores names"
    };
    let warning = format!(
        "{} transmitting ports on the {} core(s) {whose}: {}; their workers take turns, so          paced rates may fall short and starts drift (give each port a core of its own)",
        ports.len(),
        pool.len(),
        shared.join(", ")
    );
    (placed, Some(warning))
}

/// Where a process's claims on cores live: a file a core, locked while a run's default worker
/// is on it.
const CORE_CLAIMS: &str = "/run/linerate/cores";

/// The core of a run's one worker when none is named: the first allowed core that no other
/// linerate run has claimed, claimed for as long as this process lives (the lock goes with
/// it). Two runs started side by side then spin on two cores rather than take turns on core
/// 0, and fall short of their rates silently (issue 41). With every core claimed, or no place
/// to claim one (not root), the first allowed core, as before.
fn default_core(allowed: &[usize]) -> usize {
    use std::sync::Mutex;
    static CLAIMED: Mutex<Option<(usize, std::fs::File)>> = Mutex::new(None);
    let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((core, _)) = claimed.as_ref().filter(|(c, _)| allowed.contains(c)) {
        return *core;
    }
    if std::fs::create_dir_all(CORE_CLAIMS).is_ok() {
        for &core in allowed {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(std::path::Path::new(CORE_CLAIMS).join(core.to_string()));
            if let Ok(file) = file
                && file.try_lock().is_ok()
            {
                *claimed = Some((core, file));
                return core;
            }
        }
    }
    allowed[0]
}

/// Pairs cores with queues: worker i runs on cores[i] and drives queues[i] (or queue i). No
/// cores given: one worker, on the first core this process may run on that no other linerate
/// run holds (`default_core`).
pub fn workers(
    cores: &[usize],
    queues: Option<&[u32]>,
    backend: Option<Backend>,
) -> Result<Vec<WorkerSpec>> {
    let first;
    let cores = if cores.is_empty() {
        first = [default_core(&allowed_cores())];
        &first[..]
    } else {
        cores
    };
    if backend == Some(Backend::Live) && queues.is_some() {
        return Err(SessionError::setting(
            Setting::Queues,
            "the live backend drives no queues: its frames leave on the CPU of each worker \
             (choose the cores instead)",
        ));
    }
    for (i, c) in cores.iter().enumerate() {
        if cores[..i].contains(c) {
            return Err(SessionError::setting(
                Setting::Cores,
                format!("core {c} is named twice: each worker needs a core of its own"),
            ));
        }
    }
    let queues: Vec<u32> = match queues {
        Some(q) if q.len() != cores.len() => {
            return Err(SessionError::setting(
                Setting::Queues,
                format!(
                    "{} queue(s) for {} core(s): give one queue per core",
                    q.len(),
                    cores.len()
                ),
            ));
        }
        Some(q) => q.to_vec(),
        None => (0..cores.len() as u32).collect(),
    };
    for (i, q) in queues.iter().enumerate() {
        if queues[..i].contains(q) {
            return Err(SessionError::setting(
                Setting::Queues,
                format!("queue {q} is given twice: each worker needs its own queue"),
            ));
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
    fn ports_take_cores_of_their_own_and_say_when_they_must_share() {
        let ports = |n: usize| (0..n).map(|i| format!("p{i}")).collect::<Vec<_>>();
        assert_eq!(place_on(&ports(2), &[0, 1], true), (vec![0, 1], None));
        assert_eq!(place_on(&ports(2), &[3, 5, 7], false), (vec![3, 5], None));
        let (placed, warning) = place_on(&ports(3), &[0, 1], true);
        assert_eq!(placed, vec![0, 1, 0]);
        let warning = warning.expect("a warning");
        assert!(
            warning.starts_with(
                "3 transmitting ports on the 2 core(s) this process may run on: p0 and p2 share \
                 core 0;"
            ),
            "{warning}"
        );
        let (placed, warning) = place_on(&ports(3), &[4], false);
        assert_eq!(placed, vec![4, 4, 4]);
        assert!(
            warning
                .unwrap()
                .contains("--cores names: p0 and p1 and p2 share core 4"),
            "shared"
        );
        // The default is the affinity mask's cores, each port on the next.
        let allowed = allowed_cores();
        let (placed, _) = place_ports(&ports(allowed.len()), &[]);
        assert_eq!(placed, allowed);
    }

    #[test]
    fn workers_pair_cores_with_queues_and_refuse_what_cannot_run() {
        let pairs = |w: Vec<WorkerSpec>| w.iter().map(|w| (w.core, w.queue)).collect::<Vec<_>>();
        let w = workers(&[2, 5], None, Some(Backend::Afxdp)).unwrap();
        assert_eq!(pairs(w), vec![(Some(2), 0), (Some(5), 1)]);
        let w = workers(&[2, 5], Some(&[3, 7]), None).unwrap();
        assert_eq!(pairs(w), vec![(Some(2), 3), (Some(5), 7)]);
        // None given: one worker, on a core this process may run on (the first one no other
        // linerate run on the machine holds: a serve left running takes the first).
        let w = pairs(workers(&[], None, None).unwrap());
        assert!(
            w.len() == 1 && w[0].1 == 0 && allowed_cores().contains(&w[0].0.unwrap()),
            "{w:?}"
        );
        type Case<'a> = (
            &'a [usize],
            Option<&'a [u32]>,
            Option<Backend>,
            Setting,
            &'a str,
        );
        let refused: [Case; 4] = [
            (&[1, 1], None, None, Setting::Cores, "core 1 is named twice"),
            (
                &[1, 2],
                Some(&[0]),
                None,
                Setting::Queues,
                "1 queue(s) for 2 core(s)",
            ),
            (
                &[1, 2],
                Some(&[4, 4]),
                None,
                Setting::Queues,
                "queue 4 is given twice",
            ),
            (
                &[1],
                Some(&[0]),
                Some(Backend::Live),
                Setting::Queues,
                "live backend",
            ),
        ];
        for (cores, queues, backend, setting, says) in refused {
            let e = workers(cores, queues, backend).unwrap_err();
            assert!(e.is_usage(), "{e}");
            assert_eq!(e.refused_setting(), Some(setting), "{e}");
            assert!(e.to_string().contains(says), "{e}");
            assert!(!e.to_string().contains("--"), "{e}");
        }
    }
}
