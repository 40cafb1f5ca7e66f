//! The one error type of this crate: each variant says what went wrong and what to do.

use std::path::PathBuf;

use crate::{AttachMode, Holder};

/// Errors while loading, attaching, pinning or reading the XDP programs.
#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    #[error("no interface named {iface:?}{}: check `ip{} link`", in_netns(.netns), netns_flag(.netns))]
    UnknownInterface {
        iface: String,
        netns: Option<String>,
    },

    #[error("no network namespace {netns:?} (no /run/netns/{netns}): check `ip netns list`")]
    NoSuchNetns { netns: String },

    #[error(
        "{what}: permission denied: run as root (needs CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    )]
    NotRoot { what: String },

    #[error("loading the XDP program {program} failed: {message}")]
    Load {
        program: &'static str,
        message: String,
    },

    #[error(
        "an XDP program is already attached to {iface}{}: detach it with `ip{} link set {iface} xdp off`",
        in_netns(.netns), netns_flag(.netns)
    )]
    AlreadyAttached {
        iface: String,
        netns: Option<String>,
    },

    /// The interface is held by a bpf_link one of linerate's labs pinned (its sink, its DUT's
    /// programs): `ip … xdp off` cannot remove a link, `lab down` can.
    #[error(
        "{iface}{} is held by lab {lab}'s XDP program (a bpf_link pinned at {}, which `ip link set … xdp off` cannot remove): {}",
        in_netns(.netns), .pin.display(), lab_hint(.lab, .pin)
    )]
    HeldByLab {
        iface: String,
        netns: Option<String>,
        lab: String,
        pin: PathBuf,
    },

    /// The interface is held by a bpf_link of some other program or process.
    #[error(
        "an XDP program is attached to {iface}{} through a bpf_link (id {link}), which `ip link set … xdp off` cannot remove: {}",
        in_netns(.netns), link_hint(*.link, .netns)
    )]
    HeldByLink {
        iface: String,
        netns: Option<String>,
        link: u32,
    },

    #[error("{iface}{} does not support {mode} mode XDP: try skb mode", in_netns(.netns))]
    ModeUnsupported {
        iface: String,
        netns: Option<String>,
        mode: AttachMode,
    },

    #[error(
        "the XDP program {program}'s map {map} has {object}-byte {what}s but the Rust type that \
         reads them is {rust} bytes: the C struct in bpf/ and its Rust mirror differ, change both"
    )]
    Abi {
        program: &'static str,
        map: String,
        what: &'static str,
        object: usize,
        rust: usize,
    },

    #[error("the XDP program {program} has no map {map}, which linerate reads: rebuild it")]
    AbiMissingMap {
        program: &'static str,
        map: &'static str,
    },

    #[error("attaching the XDP program to {iface}{} in {mode} mode failed: {source}", in_netns(.netns))]
    Attach {
        iface: String,
        netns: Option<String>,
        mode: AttachMode,
        source: std::io::Error,
    },

    #[error(
        "bpffs is not mounted at /sys/fs/bpf and mounting it failed ({reason}): mount it with `mount -t bpf bpf /sys/fs/bpf`"
    )]
    Bpffs { reason: String },

    #[error("pinning {path} failed: {source}")]
    Pin {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("no sink is pinned under {dir}: is the lab up? (`linerate lab status`)")]
    NotPinned { dir: PathBuf },

    #[error("reading the sink counters failed: {message}")]
    Read { message: String },

    #[error("entering network namespace {netns:?} failed: {source}")]
    Netns {
        netns: String,
        source: std::io::Error,
    },

    #[error(
        "the receive end of lab {lab} is in use by another receiver ({}): wait for it to end, or use another lab",
        busy_by(.by)
    )]
    ReceiveEndBusy { lab: String, by: Option<Holder> },
}

impl XdpError {
    /// True when the user can fix it by changing what they asked for (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::UnknownInterface { .. }
                | Self::NoSuchNetns { .. }
                | Self::NotRoot { .. }
                | Self::AlreadyAttached { .. }
                | Self::HeldByLab { .. }
                | Self::HeldByLink { .. }
                | Self::ModeUnsupported { .. }
                | Self::ReceiveEndBusy { .. }
        )
    }
}

fn in_netns(netns: &Option<String>) -> String {
    match netns {
        Some(ns) => format!(" in network namespace {ns}"),
        None => String::new(),
    }
}

fn netns_flag(netns: &Option<String>) -> String {
    match netns {
        Some(ns) => format!(" -n {ns}"),
        None => String::new(),
    }
}

fn busy_by(by: &Option<Holder>) -> String {
    match by {
        Some(h) => h.to_string(),
        None => "a `tx --rx`, `rx`, `sink` or `serve` still running".into(),
    }
}

/// What to do about an interface a lab's pinned link holds: remove the lab; its sink's link
/// (`<dir>/link`) is borrowed by `sink` and `rx` on the lab's receive end without that.
fn lab_hint(lab: &str, pin: &std::path::Path) -> String {
    let down = format!("remove the lab with `linerate lab down --name {lab}`");
    if pin.file_name().is_some_and(|n| n == "link") {
        format!(
            "it is the lab's sink on its receive end; `linerate sink` and `linerate rx` there (-i {lab}1 --netns {lab}-sink) borrow it, or {down}"
        )
    } else {
        down
    }
}

/// What to do about an interface some other bpf_link holds: find its holder.
fn link_hint(link: u32, netns: &Option<String>) -> String {
    let exec = match netns {
        Some(ns) => format!("ip netns exec {ns} "),
        None => String::new(),
    };
    format!(
        "`{exec}bpftool net` lists the interface's programs and `bpftool link show id {link}` the processes that hold the link (stop them), or the link is pinned in bpffs (remove the pin)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_held_interface_is_never_told_to_use_ip_xdp_off() {
        let lab = XdpError::HeldByLab {
            iface: "lr1".into(),
            netns: Some("lr-sink".into()),
            lab: "lr".into(),
            pin: "/sys/fs/bpf/linerate/lr/link".into(),
        }
        .to_string();
        assert!(lab.contains("linerate lab down --name lr"), "{lab}");
        assert!(lab.contains("linerate sink"), "{lab}");
        assert!(
            !lab.contains("xdp off`:") && !lab.contains("detach it with"),
            "{lab}"
        );
        let dut = XdpError::HeldByLab {
            iface: "lrd0".into(),
            netns: Some("lr-dut".into()),
            lab: "lr".into(),
            pin: "/sys/fs/bpf/linerate/lr/dut-link".into(),
        }
        .to_string();
        assert!(
            dut.ends_with("remove the lab with `linerate lab down --name lr`"),
            "{dut}"
        );
        let other = XdpError::HeldByLink {
            iface: "eth2".into(),
            netns: None,
            link: 17,
        }
        .to_string();
        assert!(other.contains("`bpftool net`"), "{other}");
        assert!(other.contains("bpftool link show id 17"), "{other}");
        let other = XdpError::HeldByLink {
            iface: "b".into(),
            netns: Some("ns".into()),
            link: 3,
        }
        .to_string();
        assert!(other.contains("ip netns exec ns bpftool net"), "{other}");
    }

    #[test]
    fn a_busy_receive_end_names_its_holder_when_known() {
        let e = XdpError::ReceiveEndBusy {
            lab: "lr".into(),
            by: Some(Holder {
                kind: crate::HolderKind::Receiver,
                pid: 7,
            }),
        }
        .to_string();
        assert!(
            e.contains("in use by another receiver (`linerate rx`, pid 7)"),
            "{e}"
        );
        let e = XdpError::ReceiveEndBusy {
            lab: "lr".into(),
            by: None,
        }
        .to_string();
        assert!(e.contains("in use by another receiver"), "{e}");
    }
}
