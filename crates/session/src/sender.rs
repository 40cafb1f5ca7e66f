//! Whatever sends: the one seam between a session and the transmit backends. A port driven by
//! the engine's workers and the in-kernel live transmitter are both engine `Transmitter`s,
//! behind [`Sender`]'s `info()` and `run()`. `Backend::Auto` opens the rung the ladder
//! chooses (`crate::auto`) and keeps the choice for the report.

use std::sync::OnceLock;

use linerate_engine::{Observer, Report, RunConfig, Transmitter};
use linerate_port::ladder::Choice;
use linerate_port::{NullPort, PcapPort, PortInfo};
use linerate_stream::Plan;

use crate::error::{Result, SessionError, Setting};
use crate::options::{AfXdpOptions, Backend, PortOptions};

/// A port driven by the engine's workers or the in-kernel live transmitter: either is an
/// engine [`Transmitter`], run through the engine's one path.
pub struct Sender {
    port: Box<dyn Transmitter>,
    /// What `auto` chose and why; None for a backend that was asked for by name.
    choice: Option<Choice>,
    /// `auto`'s facts, to go down the ladder when live refuses a run's plan.
    auto: Option<crate::auto::Auto>,
    /// The next rung, opened once live refused a plan; every later run uses it.
    fallback: OnceLock<(Box<dyn Transmitter>, Choice)>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sender").field(&self.info().name).finish()
    }
}

impl Sender {
    pub(crate) fn new(port: Box<dyn Transmitter>) -> Self {
        Sender {
            port,
            choice: None,
            auto: None,
            fallback: OnceLock::new(),
        }
    }

    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn chosen(
        port: Box<dyn Transmitter>,
        choice: Choice,
        auto: crate::auto::Auto,
    ) -> Self {
        Sender {
            choice: Some(choice),
            auto: Some(auto),
            ..Sender::new(port)
        }
    }

    /// What `--backend auto` chose and why (after a refused plan, the rung it went down to);
    /// None when the backend was asked for by name.
    pub fn choice(&self) -> Option<&Choice> {
        match self.fallback.get() {
            Some((_, c)) => Some(c),
            None => self.choice.as_ref(),
        }
    }

    /// The transmitter itself, for `auto` to keep.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn into_port(self) -> Box<dyn Transmitter> {
        self.port
    }

    fn current(&self) -> &dyn Transmitter {
        match self.fallback.get() {
            Some((p, _)) => &**p,
            None => &*self.port,
        }
    }
}

impl Sender {
    /// Opens the port `options` describe, with `queues` queues for the file backends.
    pub fn open(options: &PortOptions, queues: u32) -> Result<Sender> {
        match options.backend {
            Backend::Null => {
                let mut port = NullPort::new(queues);
                port.set_mtu(options.mtu);
                Ok(Sender::new(Box::new(port)))
            }
            Backend::Pcap => {
                let path = options.pcap.as_ref().ok_or_else(|| {
                    SessionError::setting(
                        Setting::PcapFile,
                        "the pcap backend needs a file to write",
                    )
                })?;
                let mut port = PcapPort::create(path, queues)?;
                port.set_mtu(options.mtu);
                Ok(Sender::new(Box::new(port)))
            }
            b => {
                let iface = options.interface.as_deref().ok_or_else(|| {
                    SessionError::setting(
                        Setting::Interface,
                        format!("the {b} backend needs an interface to send on"),
                    )
                })?;
                match b {
                    Backend::Auto => {
                        let needs = crate::auto::PortNeeds {
                            queues: options.queues.is_some(),
                            workers: options.cores.len().max(1),
                        };
                        crate::auto::open(iface, options.afxdp, needs)
                    }
                    b => open(b, iface, options.afxdp),
                }
            }
        }
    }

    /// Opens an interface with `backend` for a run that `needs` what it says (which `auto`
    /// chooses by); the file backends have none.
    pub fn open_interface(
        backend: Backend,
        iface: &str,
        afxdp: AfXdpOptions,
        needs: crate::auto::PortNeeds,
    ) -> Result<Sender> {
        if backend == Backend::Auto {
            crate::auto::open(iface, afxdp, needs)
        } else if backend.has_interface() {
            open(backend, iface, afxdp)
        } else {
            Err(SessionError::setting(
                Setting::Backend,
                format!(
                    "the {backend} backend has no interface: choose auto, afxdp, afpacket or live (Linux), or bpf (macOS, FreeBSD)"
                ),
            ))
        }
    }

    pub fn info(&self) -> &PortInfo {
        self.current().info()
    }

    /// Runs the plan. A run that a worker ended early fails with
    /// [`SessionError::Interrupted`], which holds the report so far. Where `auto` chose live
    /// and live refuses to lay this plan out (before any frame), the next rung down opens and
    /// runs it, and stays for every later run.
    pub fn run(&self, plan: &Plan, config: &RunConfig, observer: &dyn Observer) -> Result<Report> {
        match linerate_engine::run(self.current(), plan, config, observer) {
            Err(e) if self.fallback.get().is_none() => {
                let Some((port, choice)) = crate::auto::after_refusal(self.auto.as_ref(), &e)?
                else {
                    return Err(e.into());
                };
                let (port, _) = self.fallback.get_or_init(|| (port, choice));
                Ok(linerate_engine::run(&**port, plan, config, observer)?)
            }
            r => Ok(r?),
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) fn open(backend: Backend, iface: &str, xdp: AfXdpOptions) -> Result<Sender> {
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
            Ok(Sender::new(Box::new(port)))
        }
        Backend::Live => Ok(Sender::new(Box::new(linerate_live::LivePort::open(iface)?))),
        Backend::Afpacket => {
            use linerate_afpacket::{AfPacketOptions, AfPacketPort};
            let port = AfPacketPort::open(iface, AfPacketOptions::default())?;
            Ok(Sender::new(Box::new(port)))
        }
        _ => Err(SessionError::setting(
            Setting::Backend,
            format!("the {backend} backend does not run on Linux: choose afxdp, afpacket or live"),
        )),
    }
}

#[cfg(any(target_os = "macos", target_os = "freebsd"))]
pub(crate) fn open(backend: Backend, iface: &str, _xdp: AfXdpOptions) -> Result<Sender> {
    match backend {
        Backend::Bpf => {
            let port = linerate_bpfdev::open(iface).map_err(linerate_port::PortError::from)?;
            Ok(Sender::new(Box::new(port)))
        }
        _ => Err(SessionError::setting(
            Setting::Backend,
            format!("the {backend} backend needs Linux: choose bpf"),
        )),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")))]
pub(crate) fn open(backend: Backend, _iface: &str, _xdp: AfXdpOptions) -> Result<Sender> {
    Err(SessionError::usage(format!(
        "the {backend:?} backend does not run on this system"
    )))
}
