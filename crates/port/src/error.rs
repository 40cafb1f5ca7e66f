use std::path::PathBuf;

/// Why a port or queue could not do what was asked. Each variant carries what a person needs to
/// fix it.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("interface {0} does not exist (list them with `ip link`)")]
    NoSuchInterface(String),
    #[error("interface {iface} has {available} queue(s); queue {queue} does not exist")]
    NoSuchQueue {
        iface: String,
        queue: u32,
        available: u32,
    },
    #[error("queue {queue} of {iface} is already open")]
    QueueInUse { iface: String, queue: u32 },
    #[error(
        "{what} needs root (or CAP_NET_ADMIN, CAP_NET_RAW and CAP_IPC_LOCK, the last for the UMEM unless RLIMIT_MEMLOCK covers it): run with sudo"
    )]
    NotPermitted { what: String },
    #[error("interface {iface} is down: bring it up with `ip link set {iface} up`")]
    InterfaceDown { iface: String },
    #[error("interface {iface} disappeared (deleted while in use)")]
    InterfaceGone { iface: String },
    #[error("frame of {len} bytes does not fit a {slot_size}-byte slot")]
    FrameTooLarge { len: u32, slot_size: u32 },
    #[error("descriptor for slot {slot} with {len} bytes, but the queue has {slots} slots")]
    BadDescriptor { slot: u32, len: u32, slots: u32 },
    #[error("cannot write pcap file {path}: {source}")]
    PcapFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{backend} is not supported here: {why}")]
    Unsupported { backend: &'static str, why: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl PortError {
    /// Wraps an OS error with what was being done when it happened.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// True when the error comes from what the user asked for (a wrong name, a missing
    /// privilege), not from the system failing: the CLI exits 2 for these.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::NoSuchInterface(_)
                | Self::NoSuchQueue { .. }
                | Self::QueueInUse { .. }
                | Self::NotPermitted { .. }
                | Self::InterfaceDown { .. }
                | Self::FrameTooLarge { .. }
                | Self::PcapFile { .. }
                | Self::Unsupported { .. }
        )
    }
}
