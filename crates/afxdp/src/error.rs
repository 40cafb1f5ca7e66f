use std::io;

use linerate_port::{PortError, Usage};

/// Why an AF_XDP port or queue could not do what was asked: what any port may fail with
/// (`Port`), or what is AF_XDP's own.
#[derive(Debug, thiserror::Error)]
pub enum AfXdpError {
    #[error(transparent)]
    Port(#[from] PortError),
    #[error("this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): use the pcap or null backend")]
    NoAfXdp,
    #[error("{driver} ({iface}) has no zero-copy AF_XDP: use the copy or auto XDP mode")]
    NoZeroCopy { iface: String, driver: String },
    #[error("slots of {slot_size} bytes do not fit AF_XDP's largest chunk ({max} bytes, one page)")]
    SlotTooLarge { slot_size: u32, max: u32 },
    #[error("invalid AF_XDP queue setup: {0}")]
    Config(String),
    #[error("cannot attach the pass-through XDP program to {iface}: {source}")]
    PassProgram {
        iface: String,
        #[source]
        source: linerate_xdp::XdpError,
    },
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

/// What the `Port` trait returns: the shared error as it is, AF_XDP's own whole, so it still
/// answers `is_usage` and keeps its causes.
impl From<AfXdpError> for PortError {
    fn from(e: AfXdpError) -> Self {
        match e {
            AfXdpError::Port(e) => e,
            e => PortError::backend(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn pass_program() -> AfXdpError {
        AfXdpError::PassProgram {
            iface: "x".into(),
            source: linerate_xdp::XdpError::Attach {
                iface: "x".into(),
                netns: None,
                mode: linerate_xdp::AttachMode::Skb,
                source: io::Error::from_raw_os_error(libc::EBUSY),
            },
        }
    }

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
            pass_program(),
            AfXdpError::io("bind", io::ErrorKind::Other.into()),
        ];
        for e in all {
            let usage = e.is_usage();
            let text = e.to_string();
            let port = PortError::from(e);
            assert_eq!(port.is_usage(), usage, "{text}");
            assert_eq!(port.to_string(), text);
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
            "veth (lr0) has no zero-copy AF_XDP: use the copy or auto XDP mode"
        );
    }

    #[test]
    fn the_own_error_and_its_causes_survive_the_port_trait() {
        let port = PortError::from(pass_program());
        assert!(
            matches!(
                port.backend_error::<AfXdpError>(),
                Some(AfXdpError::PassProgram { iface, .. }) if iface == "x"
            ),
            "{port:?}"
        );
        // The chain goes on from the AF_XDP error: the XDP attach, then the OS error under it.
        let attach = port.source().expect("the XDP error");
        assert!(attach.is::<linerate_xdp::XdpError>(), "{attach}");
        let os = attach
            .source()
            .and_then(|e| e.downcast_ref::<io::Error>())
            .expect("the OS error");
        assert_eq!(os.raw_os_error(), Some(libc::EBUSY));
    }
}
