use std::io;

use linerate_port::PortError;

/// Why an AF_XDP port or queue could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum AfXdpError {
    #[error("interface {0} does not exist (list them with `ip link`)")]
    NoSuchInterface(String),
    #[error("interface {iface} is down: bring it up with `ip link set {iface} up`")]
    InterfaceDown { iface: String },
    #[error("interface {iface} has {available} queue(s); queue {queue} does not exist")]
    NoSuchQueue {
        iface: String,
        queue: u32,
        available: u32,
    },
    #[error("queue {queue} of {iface} is already open (another AF_XDP socket holds it)")]
    QueueInUse { iface: String, queue: u32 },
    #[error(
        "{what} needs root (or CAP_NET_ADMIN, CAP_NET_RAW and CAP_IPC_LOCK, the last for the UMEM unless RLIMIT_MEMLOCK covers it): run with sudo"
    )]
    NotPermitted { what: String },
    #[error("this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): use --backend pcap or null")]
    NoAfXdp,
    #[error("{driver} ({iface}) has no zero-copy AF_XDP: use --xdp-mode copy or auto")]
    NoZeroCopy { iface: String, driver: String },
    #[error("slots of {slot_size} bytes do not fit AF_XDP's largest chunk ({max} bytes, one page)")]
    SlotTooLarge { slot_size: u32, max: u32 },
    #[error("invalid AF_XDP queue setup: {0}")]
    Config(String),
    #[error("cannot attach the pass-through XDP program to {iface}: {why}")]
    PassProgram { iface: String, why: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl AfXdpError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// True when the error comes from what the user asked for, as [`PortError::is_usage`]
    /// would classify the converted error.
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::PassProgram { .. } | Self::Io { .. })
    }
}

impl From<AfXdpError> for PortError {
    fn from(e: AfXdpError) -> Self {
        match e {
            AfXdpError::NoSuchInterface(iface) => PortError::NoSuchInterface(iface),
            AfXdpError::InterfaceDown { iface } => PortError::InterfaceDown { iface },
            AfXdpError::NoSuchQueue {
                iface,
                queue,
                available,
            } => PortError::NoSuchQueue {
                iface,
                queue,
                available,
            },
            AfXdpError::QueueInUse { iface, queue } => PortError::QueueInUse { iface, queue },
            AfXdpError::NotPermitted { what } => PortError::NotPermitted { what },
            AfXdpError::SlotTooLarge { slot_size, max } => PortError::FrameTooLarge {
                len: slot_size,
                slot_size: max,
            },
            e @ (AfXdpError::NoAfXdp | AfXdpError::NoZeroCopy { .. } | AfXdpError::Config(_)) => {
                PortError::Unsupported {
                    backend: "afxdp",
                    why: e.to_string(),
                }
            }
            AfXdpError::Io { context, source } => PortError::Io { context, source },
            e @ AfXdpError::PassProgram { .. } => {
                PortError::io(e.to_string(), io::Error::other("XDP attach failed"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_stay_usage_errors_as_port_errors() {
        let all = [
            AfXdpError::NoSuchInterface("x".into()),
            AfXdpError::InterfaceDown { iface: "x".into() },
            AfXdpError::NoSuchQueue {
                iface: "x".into(),
                queue: 3,
                available: 2,
            },
            AfXdpError::QueueInUse {
                iface: "x".into(),
                queue: 0,
            },
            AfXdpError::NotPermitted {
                what: "AF_XDP".into(),
            },
            AfXdpError::NoAfXdp,
            AfXdpError::NoZeroCopy {
                iface: "x".into(),
                driver: "veth".into(),
            },
            AfXdpError::SlotTooLarge {
                slot_size: 9000,
                max: 4096,
            },
            AfXdpError::Config("no".into()),
            AfXdpError::PassProgram {
                iface: "x".into(),
                why: "no".into(),
            },
            AfXdpError::io("bind", io::ErrorKind::Other.into()),
        ];
        for e in all {
            let usage = e.is_usage();
            let text = e.to_string();
            let port = PortError::from(e);
            assert_eq!(port.is_usage(), usage, "{text}");
        }
    }

    #[test]
    fn messages_name_the_fix() {
        let e = AfXdpError::NoZeroCopy {
            iface: "lr0".into(),
            driver: "veth".into(),
        };
        assert_eq!(
            PortError::from(e).to_string(),
            "afxdp is not supported here: veth (lr0) has no zero-copy AF_XDP: use --xdp-mode copy or auto"
        );
    }
}
