use std::io;
use std::time::Duration;

use linerate_port::PortError;

/// Why a `/dev/bpf` port or queue could not do what was asked. Each variant names the interface
/// or device, what the errno meant, and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    #[error(
        "open {path}: permission denied — run with sudo, or install ChmodBPF (it comes with \
         Wireshark) so your user may read and write /dev/bpf*"
    )]
    PermissionDenied { path: String },
    #[error(
        "no free /dev/bpf device (tried /dev/bpf and /dev/bpf0..{tried}): all busy — close other \
         capture tools or raise the device count (sysctl debug.bpf_maxdevices on macOS)"
    )]
    NoFreeDevice { tried: u32 },
    /// What any port may fail with (a name, a link that is down).
    #[error(transparent)]
    Port(#[from] PortError),
    #[error(
        "interface {iface} is not Ethernet (BIOCGDLT answered link type {dlt}, want \
         DLT_EN10MB = 1): linerate writes Ethernet frames only"
    )]
    NotEthernet { iface: String, dlt: u32 },
    #[error("{request} on {iface} failed: {source}")]
    Ioctl {
        iface: String,
        request: &'static str,
        #[source]
        source: io::Error,
    },
    #[error(
        "{iface} refused a {len}-byte frame (EMSGSIZE): it exceeds the interface MTU of {mtu} \
         plus the Ethernet header — raise it (`sudo ifconfig {iface} mtu N`) or send smaller frames"
    )]
    FrameTooLarge { iface: String, len: usize, mtu: u32 },
    #[error(
        "{iface} answered ENOBUFS for {waited:?} without taking a frame: its transmit queue never \
         drained — check the link, or lower the rate"
    )]
    NoBuffers { iface: String, waited: Duration },
    #[error(
        "write to the bpf device of {iface} took {wrote} of {expected} bytes, ending inside a \
         frame: the rest cannot be sent as a valid frame"
    )]
    ShortWrite {
        iface: String,
        wrote: usize,
        expected: usize,
    },
    #[error("read from the bpf device of {iface} failed: {source}")]
    Read {
        iface: String,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Record(#[from] crate::capture::RecordError),
    #[error("write to the bpf device of {iface} failed: {source}")]
    Write {
        iface: String,
        #[source]
        source: io::Error,
    },
}

impl From<BpfError> for PortError {
    fn from(err: BpfError) -> Self {
        match err {
            BpfError::Port(e) => e,
            BpfError::PermissionDenied { ref path } => PortError::NotPermitted {
                what: format!("opening {path} (or install ChmodBPF)"),
            },
            BpfError::NotEthernet { .. } => PortError::Unsupported {
                backend: "bpf",
                why: err.to_string(),
            },
            // The message already says what happened and what to do; the error stays in the chain.
            other => PortError::io("bpf", io::Error::other(other)),
        }
    }
}
