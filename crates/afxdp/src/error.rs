use std::io;

use linerate_port::{PortError, Usage};

/// Why an AF_XDP port or queue could not do what was asked: what any port may fail with
/// (`Port`), or what is AF_XDP's own.
#[derive(Debug, thiserror::Error)]
pub enum AfXdpError {
    #[error(transparent)]
    Port(#[from] PortError),
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
}

impl AfXdpError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Port(PortError::io(context, source))
    }
}

impl Usage for AfXdpError {
    fn is_usage(&self) -> bool {
        match self {
            Self::Port(e) => e.is_usage(),
            Self::PassProgram { .. } => false,
            Self::NoAfXdp
            | Self::NoZeroCopy { .. }
            | Self::SlotTooLarge { .. }
            | Self::Config(_) => true,
        }
    }
}

/// What the `Port` trait returns: the shared error as it is, AF_XDP's own in its words.
impl From<AfXdpError> for PortError {
    fn from(e: AfXdpError) -> Self {
        match e {
            AfXdpError::Port(e) => e,
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
            PortError::NoSuchInterface("x".into()).into(),
            PortError::InterfaceDown { iface: "x".into() }.into(),
            PortError::NotPermitted {
                what: "AF_XDP".into(),
            }
            .into(),
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
