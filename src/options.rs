//! The one place the command line's argument types become the library's options: every
//! conversion from a clap type to a `linerate_session` type is here.

use anyhow::Result;
use linerate_session as session;
use linerate_session::{
    AfXdpOptions, Backend, Clock, PortOptions, ReceiverOptions, RxAttach, RxTarget, XdpAttach,
    XdpMode,
};

use crate::cli::rfc2544::{Search, Test};
use crate::cli::{self, AfXdpArgs, AttachArg, ClockArg, ReceiverArgs, SendArgs, XdpModeArg};
use crate::usage;

impl From<cli::Backend> for Backend {
    fn from(b: cli::Backend) -> Self {
        match b {
            cli::Backend::Auto => Backend::Auto,
            cli::Backend::Afxdp => Backend::Afxdp,
            cli::Backend::Afpacket => Backend::Afpacket,
            cli::Backend::Bpf => Backend::Bpf,
            cli::Backend::Live => Backend::Live,
            cli::Backend::Pcap => Backend::Pcap,
            cli::Backend::Null => Backend::Null,
        }
    }
}

impl From<&AfXdpArgs> for AfXdpOptions {
    fn from(a: &AfXdpArgs) -> Self {
        AfXdpOptions {
            mode: match a.xdp_mode {
                XdpModeArg::Auto => XdpMode::Auto,
                XdpModeArg::Zerocopy => XdpMode::ZeroCopy,
                XdpModeArg::Copy => XdpMode::Copy,
            },
            attach: match a.attach {
                AttachArg::Auto => XdpAttach::Auto,
                AttachArg::Drv => XdpAttach::Drv,
                AttachArg::Skb => XdpAttach::Skb,
            },
            need_wakeup: !a.no_need_wakeup,
        }
    }
}

impl From<ClockArg> for Clock {
    fn from(c: ClockArg) -> Self {
        match c {
            ClockArg::Monotonic => Clock::Monotonic,
            ClockArg::Tai => Clock::Tai,
        }
    }
}

impl From<cli::XdpAttach> for RxAttach {
    fn from(a: cli::XdpAttach) -> Self {
        match a {
            cli::XdpAttach::Drv => RxAttach::Drv,
            cli::XdpAttach::Skb => RxAttach::Skb,
        }
    }
}

impl From<&ReceiverArgs> for ReceiverOptions {
    fn from(a: &ReceiverArgs) -> Self {
        ReceiverOptions {
            flows: a.rx_flows,
            hist_flows: a.rx_hist_flows,
            clock: a.clock.into(),
            pass: a.rx_pass,
            every_frame: a.rx_time_every_frame,
        }
    }
}

impl From<Test> for linerate_report::rfc2544::Test {
    fn from(t: Test) -> Self {
        match t {
            Test::Throughput => Self::Throughput,
            Test::Latency => Self::Latency,
            Test::Loss => Self::Loss,
            Test::BackToBack => Self::BackToBack,
            Test::All => Self::All,
        }
    }
}

impl From<Search> for linerate_report::rfc2544::Search {
    fn from(s: Search) -> Self {
        match s {
            Search::Mlr => Self::Mlr,
            Search::Binary => Self::Binary,
        }
    }
}

/// The backend asked for, else the platform's (see [`interface_default`]).
pub fn backend_or_default(backend: Option<cli::Backend>, afxdp: &AfXdpArgs) -> Backend {
    backend.map_or_else(|| interface_default(afxdp), Backend::from)
}

/// The platform's backend on an interface, unless an AF_XDP flag was given: that names AF_XDP,
/// where `auto` might choose a backend the flag does not apply to.
fn interface_default(afxdp: &AfXdpArgs) -> Backend {
    let asked = afxdp.xdp_mode != XdpModeArg::Auto
        || afxdp.attach != AttachArg::Auto
        || afxdp.no_need_wakeup;
    if asked && cfg!(target_os = "linux") {
        Backend::Afxdp
    } else {
        Backend::platform_default()
    }
}

/// The backend `tx` and `replay` use: the one asked, else the one -i, --pcap or --null implies.
/// `nothing` is the sentence for none of them.
pub fn send_backend(send: &SendArgs, nothing: &str) -> Result<Backend> {
    Ok(
        match (send.backend, &send.interface, &send.pcap, send.null) {
            (Some(b), _, _, _) => b.into(),
            (None, _, Some(_), _) => Backend::Pcap,
            (None, _, _, true) => Backend::Null,
            (None, Some(_), _, _) => interface_default(&send.afxdp),
            (None, None, None, false) => return Err(usage(nothing)),
        },
    )
}

/// The port `tx` and `replay` describe with their shared flags; `mtu`, `cores` and
/// `link_speed` are flags of their own (their help differs).
pub fn send_port(
    send: &SendArgs,
    backend: Backend,
    mtu: u32,
    cores: &[usize],
    link_speed: Option<u64>,
) -> PortOptions {
    PortOptions {
        backend,
        interface: send.interface.clone(),
        pcap: send.pcap.clone(),
        mtu,
        afxdp: (&send.afxdp).into(),
        cores: cores.to_vec(),
        queues: send.queues.clone(),
        batch: send.batch,
        link_speed,
        clock: send.receiver.clock.into(),
    }
}

/// The receiver `--rx` asks for: "" is the lab's receive end.
pub fn send_rx(target: &str, send: &SendArgs) -> RxTarget {
    RxTarget {
        at: (!target.is_empty()).then(|| target.to_owned()),
        attach: send.rx_mode.into(),
        receiver: (&send.receiver).into(),
    }
}

/// When a `tx` or `replay` run ends.
pub fn send_end(send: &SendArgs, count: Option<u64>) -> session::End {
    session::End {
        duration: send.duration,
        count,
    }
}
