//! Whatever sends: the one seam between a session and the transmit backends. A port driven by
//! the engine's workers and the in-kernel live transmitter are both engine `Transmitter`s,
//! behind [`Sender`]'s `info()` and `run()`.

use linerate_engine::{Observer, Report, RunConfig, Transmitter};
use linerate_port::{NullPort, PcapPort, PortInfo};
use linerate_stream::Plan;

use crate::error::{Result, SessionError};
use crate::options::{AfXdpOptions, Backend, PortOptions};

/// A port driven by the engine's workers or the in-kernel live transmitter: either is an
/// engine [`Transmitter`], run through the engine's one path.
pub struct Sender(Box<dyn Transmitter>);

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sender").field(&self.info().name).finish()
    }
}

impl Sender {
    /// Opens the port `options` describe, with `queues` queues for the file backends.
    pub fn open(options: &PortOptions, queues: u32) -> Result<Sender> {
        match options.backend {
            Backend::Null => {
                let mut port = NullPort::new(queues);
                port.set_mtu(options.mtu);
                Ok(Sender(Box::new(port)))
            }
            Backend::Pcap => {
                let path = options
                    .pcap
                    .as_ref()
                    .ok_or_else(|| SessionError::usage("--backend pcap needs --pcap FILE"))?;
                let mut port = PcapPort::create(path, queues)?;
                port.set_mtu(options.mtu);
                Ok(Sender(Box::new(port)))
            }
            b => {
                let iface = options
                    .interface
                    .as_deref()
                    .ok_or_else(|| SessionError::usage("this backend needs -i IFACE"))?;
                open(b, iface, options.afxdp)
            }
        }
    }

    /// Opens an interface with `backend`; the file backends have none.
    pub fn open_interface(backend: Backend, iface: &str, afxdp: AfXdpOptions) -> Result<Sender> {
        if backend.has_interface() {
            open(backend, iface, afxdp)
        } else {
            Err(SessionError::usage(format!(
                "the {backend:?} backend has no interface: use --backend afxdp, afpacket or live (Linux), or bpf (macOS, FreeBSD)"
            )))
        }
    }

    pub fn info(&self) -> &PortInfo {
        self.0.info()
    }

    /// Runs the plan. A run that a worker ended early fails with
    /// [`SessionError::Interrupted`], which holds the report so far.
    pub fn run(&self, plan: &Plan, config: &RunConfig, observer: &dyn Observer) -> Result<Report> {
        Ok(linerate_engine::run(&*self.0, plan, config, observer)?)
    }
}

#[cfg(target_os = "linux")]
fn open(backend: Backend, iface: &str, xdp: AfXdpOptions) -> Result<Sender> {
    use crate::options::{XdpAttach, XdpMode};
    use linerate_afxdp::{AttachMode, XskOptions, XskPort};
    match backend {
        Backend::Afxdp => {
            let options = XskOptions {
                mode: match xdp.mode {
                    XdpMode::Auto => linerate_afxdp::XdpMode::Auto,
                    XdpMode::ZeroCopy => linerate_afxdp::XdpMode::ZeroCopy,
                    XdpMode::Copy => linerate_afxdp::XdpMode::Copy,
                },
                attach: match xdp.attach {
                    XdpAttach::Auto => AttachMode::Auto,
                    XdpAttach::Drv => AttachMode::Drv,
                    XdpAttach::Skb => AttachMode::Skb,
                },
                need_wakeup: xdp.need_wakeup,
                ..XskOptions::default()
            };
            let port = XskPort::open(iface, options).map_err(linerate_port::PortError::from)?;
            Ok(Sender(Box::new(port)))
        }
        Backend::Live => Ok(Sender(Box::new(linerate_live::LivePort::open(iface)?))),
        Backend::Afpacket => {
            use linerate_afpacket::{AfPacketOptions, AfPacketPort};
            let port = AfPacketPort::open(iface, AfPacketOptions::default())?;
            Ok(Sender(Box::new(port)))
        }
        _ => Err(SessionError::usage(format!(
            "the {backend:?} backend does not run on Linux: use --backend afxdp, afpacket or live"
        ))),
    }
}

#[cfg(any(target_os = "macos", target_os = "freebsd"))]
fn open(backend: Backend, iface: &str, _xdp: AfXdpOptions) -> Result<Sender> {
    match backend {
        Backend::Bpf => {
            let port = linerate_bpfdev::open(iface).map_err(linerate_port::PortError::from)?;
            Ok(Sender(Box::new(port)))
        }
        _ => Err(SessionError::usage(format!(
            "the {backend:?} backend needs Linux: use --backend bpf"
        ))),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")))]
fn open(backend: Backend, _iface: &str, _xdp: AfXdpOptions) -> Result<Sender> {
    Err(SessionError::usage(format!(
        "the {backend:?} backend does not run on this system"
    )))
}
