//! The one error type of this crate: each variant says what went wrong and what to do.

use std::path::PathBuf;

use crate::AttachMode;

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
        "the receive end of lab {lab} is in use by another receiver (a `tx --rx`, `rx` or `serve` still running): wait for it to end, or use another lab"
    )]
    ReceiveEndBusy { lab: String },
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
