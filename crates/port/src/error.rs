use std::path::PathBuf;

/// How this system lists its interfaces, for the advice of `NoSuchInterface`.
#[cfg(target_os = "linux")]
const LIST_LINKS: &str = "ip link";
#[cfg(not(target_os = "linux"))]
const LIST_LINKS: &str = "ifconfig -l";

/// How this system brings `iface` up, for the advice of `InterfaceDown`.
fn set_up(iface: &str) -> String {
    if cfg!(target_os = "linux") {
        format!("ip link set {iface} up")
    } else {
        format!("sudo ifconfig {iface} up")
    }
}

/// Why a port or queue could not do what was asked. Each variant carries what a person needs to
/// fix it.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("interface {0} does not exist (list them with `{LIST_LINKS}`)")]
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
    #[error("interface {iface} is down: bring it up with `{}`", set_up(iface))]
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
    /// What the frames are copied from failed under the sender (a streamed capture cut short
    /// by another process): the run ends with the report so far.
    #[error("{0}")]
    SourceCut(String),
    #[error("{backend} is not supported here: {why}")]
    Unsupported { backend: &'static str, why: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A backend's own refusal or failure (AF_XDP's missing zero-copy, AF_PACKET's refused
    /// frame), kept whole rather than flattened to text: it still says whose fix it is, and its
    /// causes stay in the chain.
    #[error(transparent)]
    Backend(Box<dyn Usage>),
}

impl PortError {
    /// Wraps an OS error with what was being done when it happened.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// A backend's own error, nested whole.
    pub fn backend(e: impl Usage) -> Self {
        Self::Backend(Box::new(e))
    }

    /// The backend's own error of type `E`, if that is what this is: for a caller that needs
    /// more than the message and `is_usage`.
    pub fn backend_error<E: Usage>(&self) -> Option<&E> {
        match self {
            Self::Backend(e) => (&**e as &(dyn std::error::Error + 'static)).downcast_ref(),
            _ => None,
        }
    }

    /// A kick (`sendto`) of queue `queue` on `iface` that failed with an OS error other than a
    /// link that is down, as the socket backends (AF_XDP, AF_PACKET) report it.
    #[cold]
    pub fn kick(iface: &str, queue: u32, source: std::io::Error) -> Self {
        Self::io(
            format!("kicking TX (sendto) on {iface} queue {queue}"),
            source,
        )
    }

    /// A descriptor a queue of `slots` slots of `slot_size` bytes cannot send: a frame longer
    /// than a slot, or a slot it does not have.
    #[cold]
    pub fn bad_desc(desc: crate::TxDesc, slot_size: u32, slots: u32) -> Self {
        if desc.len > slot_size {
            return Self::FrameTooLarge {
                len: desc.len,
                slot_size,
            };
        }
        Self::BadDescriptor {
            slot: desc.slot,
            len: desc.len,
            slots,
        }
    }

    /// More frames submitted on queue `queue` of `iface` than were reserved: a bug in the loop.
    #[cold]
    pub fn over_submit(iface: &str, queue: u32, submitted: usize, reserved: u32) -> Self {
        Self::io(
            format!(
                "{submitted} frames submitted on {iface} queue {queue} but only {reserved} reserved"
            ),
            std::io::ErrorKind::InvalidInput.into(),
        )
    }
}

/// The one question every library error answers the same way: did it come from what the user
/// asked for (a wrong name, a missing privilege, a plan the backend cannot send), so the CLI
/// exits 2, or from the system failing? Backend errors that nest `PortError` ask it; the engine
/// holds a transmitter's own error as `Box<dyn Usage>` and still asks.
pub trait Usage: std::error::Error + Send + Sync + 'static {
    fn is_usage(&self) -> bool;
}

impl Usage for PortError {
    fn is_usage(&self) -> bool {
        match self {
            Self::Backend(e) => e.is_usage(),
            Self::NoSuchInterface(_)
            | Self::NoSuchQueue { .. }
            | Self::QueueInUse { .. }
            | Self::NotPermitted { .. }
            | Self::InterfaceDown { .. }
            | Self::FrameTooLarge { .. }
            | Self::PcapFile { .. }
            | Self::Unsupported { .. } => true,
            Self::InterfaceGone { .. }
            | Self::BadDescriptor { .. }
            | Self::SourceCut(_)
            | Self::Io { .. } => false,
        }
    }
}

/// So an error held as `Box<dyn Usage>` nests like any other (`#[error(transparent)]`).
impl std::error::Error for Box<dyn Usage> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        (**self).source()
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    /// A backend's own error with a cause, as AF_XDP's and AF_PACKET's are.
    #[derive(Debug, thiserror::Error)]
    #[error("the backend refused: {source}")]
    struct Refused {
        usage: bool,
        source: std::io::Error,
    }

    impl Usage for Refused {
        fn is_usage(&self) -> bool {
            self.usage
        }
    }

    fn refused(usage: bool) -> PortError {
        PortError::backend(Refused {
            usage,
            source: std::io::Error::from_raw_os_error(libc::EINVAL),
        })
    }

    #[test]
    fn a_backend_error_answers_for_itself() {
        assert!(refused(true).is_usage());
        assert!(!refused(false).is_usage());
        let port = refused(true);
        assert_eq!(
            port.to_string(),
            format!(
                "the backend refused: {}",
                std::io::Error::from_raw_os_error(libc::EINVAL)
            )
        );
        assert!(port.backend_error::<Refused>().is_some_and(|e| e.usage));
        assert!(port.backend_error::<PortError>().is_none());
        let os = port
            .source()
            .and_then(|e| e.downcast_ref::<std::io::Error>());
        assert_eq!(
            os.and_then(std::io::Error::raw_os_error),
            Some(libc::EINVAL)
        );
    }
}
