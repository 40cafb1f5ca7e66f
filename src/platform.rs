//! The platform's own backends and, on Linux, the lab behind an interface.

use std::net::Ipv4Addr;

use anyhow::Result;
use linerate_engine::{Observer, Report, RunConfig};
use linerate_port::{Port, PortInfo};
use linerate_stream::Plan;

use crate::cli::{AfXdpArgs, Backend};
use crate::usage;

/// Where the frames are counted: a lab's pinned sink (when the interface is a lab's sender end)
/// or a sink attached for this command (`--sink-iface`). `name` is the lab's or the interface's.
pub struct Receiver {
    pub name: String,
    pub peer_mac: [u8; 6],
    pub ips: (Ipv4Addr, Ipv4Addr),
    /// Reads the sink's (packets, bytes).
    pub counters: Box<dyn Fn() -> Result<(u64, u64)>>,
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("name", &self.name)
            .finish()
    }
}

/// Whatever sends: a port driven by the engine's workers, or the in-kernel live backend that
/// runs its own.
pub enum Sender {
    Port(Box<dyn Port>),
    #[cfg(target_os = "linux")]
    Live(linerate_live::LivePort),
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sender").field(&self.info().name).finish()
    }
}

impl Sender {
    pub fn info(&self) -> &PortInfo {
        match self {
            Self::Port(p) => p.info(),
            #[cfg(target_os = "linux")]
            Self::Live(l) => l.info(),
        }
    }

    /// Runs the plan. A run that a worker ended early fails with the engine's `Interrupted`
    /// itself, which holds the report so far.
    pub fn run(&self, plan: &Plan, config: &RunConfig, observer: &dyn Observer) -> Result<Report> {
        match self {
            Self::Port(p) => {
                linerate_engine::run(p.as_ref(), plan, config, observer).map_err(engine_error)
            }
            #[cfg(target_os = "linux")]
            Self::Live(l) => linerate_live::run(l, plan, config, observer).map_err(|e| match e {
                linerate_live::LiveError::Engine(e) => engine_error(e),
                e => e.into(),
            }),
        }
    }
}

fn engine_error(e: linerate_engine::EngineError) -> anyhow::Error {
    match e {
        linerate_engine::EngineError::Interrupted(i) => i.into(),
        e => e.into(),
    }
}

#[cfg(target_os = "linux")]
pub fn open(backend: Backend, iface: &str, xdp: &AfXdpArgs) -> Result<Sender> {
    use crate::cli::{AttachArg, XdpModeArg};
    use linerate_afxdp::{AttachMode, XdpMode, XskOptions, XskPort};
    match backend {
        Backend::Afxdp => {
            let options = XskOptions {
                mode: match xdp.xdp_mode {
                    XdpModeArg::Auto => XdpMode::Auto,
                    XdpModeArg::Zerocopy => XdpMode::ZeroCopy,
                    XdpModeArg::Copy => XdpMode::Copy,
                },
                attach: match xdp.attach {
                    AttachArg::Auto => AttachMode::Auto,
                    AttachArg::Drv => AttachMode::Drv,
                    AttachArg::Skb => AttachMode::Skb,
                },
                need_wakeup: !xdp.no_need_wakeup,
                ..XskOptions::default()
            };
            let port = XskPort::open(iface, options).map_err(linerate_port::PortError::from)?;
            Ok(Sender::Port(Box::new(port)))
        }
        Backend::Live => Ok(linerate_live::LivePort::open(iface).map(Sender::Live)?),
        Backend::Afpacket => {
            use linerate_afpacket::{AfPacketOptions, AfPacketPort};
            // Its own sentence (CAP_NET_RAW alone) reaches the user, not the AF_XDP one.
            let port = AfPacketPort::open(iface, AfPacketOptions::default()).map_err(|e| {
                if e.is_usage() {
                    usage(e.to_string())
                } else {
                    anyhow::Error::from(e)
                }
            })?;
            Ok(Sender::Port(Box::new(port)))
        }
        _ => Err(usage(format!(
            "the {backend:?} backend does not run on Linux: use --backend afxdp, afpacket or live"
        ))),
    }
}

#[cfg(any(target_os = "macos", target_os = "freebsd"))]
pub fn open(backend: Backend, iface: &str, _xdp: &AfXdpArgs) -> Result<Sender> {
    match backend {
        Backend::Bpf => {
            let port = linerate_bpfdev::open(iface).map_err(linerate_port::PortError::from)?;
            Ok(Sender::Port(Box::new(port)))
        }
        _ => Err(usage(format!(
            "the {backend:?} backend needs Linux: use --backend bpf"
        ))),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")))]
pub fn open(backend: Backend, _iface: &str, _xdp: &AfXdpArgs) -> Result<Sender> {
    Err(usage(format!(
        "the {backend:?} backend does not run on this system"
    )))
}

#[cfg(target_os = "linux")]
pub fn receiver_of(iface: &str) -> Result<Option<Receiver>> {
    let Some(lab) = crate::lab::lab_of(iface)? else {
        return Ok(None);
    };
    // A sink that does not run would report every frame lost: a running receiver's program
    // there is refused, and one left by a receiver that died is replaced by the sink first.
    if crate::lab::receive_end(&lab)? == linerate_xdp::ReceiveEnd::InUse {
        return Err(linerate_xdp::XdpError::ReceiveEndBusy {
            lab: lab.name.clone(),
        }
        .into());
    }
    let dir = lab.pin_dir();
    let sink = linerate_xdp::PinnedSink::open(&dir)?;
    Ok(Some(Receiver {
        name: lab.name.clone(),
        peer_mac: lab.dst_mac(),
        ips: (lab.sender_ip, lab.receiver_ip),
        counters: Box::new(move || {
            let c = sink.counters()?;
            Ok((c.packets, c.bytes))
        }),
    }))
}

#[cfg(target_os = "macos")]
pub use crate::lab::{attach_sink, receiver_of};

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn receiver_of(_iface: &str) -> Result<Option<Receiver>> {
    Ok(None)
}

/// A lab made for one command, removed when dropped.
pub struct TempLab {
    pub sender: String,
    #[cfg(target_os = "linux")]
    _guard: linerate_lab::LabGuard,
    #[cfg(target_os = "macos")]
    _guard: crate::lab::FethGuard,
}

impl std::fmt::Debug for TempLab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TempLab")
            .field("sender", &self.sender)
            .finish()
    }
}

#[cfg(target_os = "linux")]
pub fn temp_lab(name: Option<&str>, queues: u32) -> Result<TempLab> {
    let config = linerate_lab::LabConfig {
        name: name.map_or_else(|| linerate_lab::unique_name("sw"), str::to_owned),
        queues,
    };
    let guard = linerate_lab::LabGuard::up(&config)?;
    Ok(TempLab {
        sender: guard.sender.clone(),
        _guard: guard,
    })
}

/// A feth pair: one queue per end, whatever `queues` says.
#[cfg(target_os = "macos")]
pub fn temp_lab(name: Option<&str>, _queues: u32) -> Result<TempLab> {
    let guard = crate::lab::FethGuard::up(name)?;
    Ok(TempLab {
        sender: guard.lab.sender.clone(),
        _guard: guard,
    })
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn temp_lab(_name: Option<&str>, _queues: u32) -> Result<TempLab> {
    Err(usage(
        "--lab needs Linux (network namespaces, veth, XDP): give -i IFACE",
    ))
}

/// Attaches the XDP sink to `iface` (in `netns`) for as long as the returned side lives.
#[cfg(target_os = "linux")]
pub fn attach_sink(iface: &str, netns: Option<&str>) -> Result<Receiver> {
    let sink = linerate_xdp::Sink::attach(iface, netns, linerate_xdp::AttachMode::Drv)?;
    Ok(Receiver {
        name: iface.to_owned(),
        peer_mac: [0xff; 6],
        ips: linerate_stream::Limits::default().default_ipv4,
        counters: Box::new(move || {
            let c = sink.counters()?;
            Ok((c.packets, c.bytes))
        }),
    })
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn attach_sink(_iface: &str, _netns: Option<&str>) -> Result<Receiver> {
    Err(usage("--sink-iface needs Linux (XDP)"))
}
