use std::io;

use linerate_port::{PortError, Usage};

/// Why an AF_PACKET port or queue could not do what was asked: what any port may fail with
/// (`Port`), or what is AF_PACKET's own.
#[derive(Debug, thiserror::Error)]
pub enum AfPacketError {
    #[error(transparent)]
    Port(#[from] PortError),
    #[error(
        "AF_PACKET on {iface} needs CAP_NET_RAW: run with sudo, or grant it once with \
         `setcap cap_net_raw+ep $(command -v linerate)`"
    )]
    NotPermitted { iface: String },
    #[error("this kernel has no AF_PACKET sockets (CONFIG_PACKET): use the afxdp or live backend")]
    NoAfPacket,
    #[error("invalid AF_PACKET queue setup: {0}")]
    Config(String),
    #[error(
        "the kernel refused the frame in ring frame {frame} of {iface} queue {queue} \
         (TP_STATUS_WRONG_FORMAT: longer than the MTU allows, or shorter than a header)"
    )]
    WrongFormat {
        iface: String,
        queue: u32,
        frame: u32,
    },
}

impl AfPacketError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Port(PortError::io(context, source))
    }
}

/// A name, a privilege, a frame the interface cannot carry are the user's to fix.
impl Usage for AfPacketError {
    fn is_usage(&self) -> bool {
        match self {
            Self::Port(e) => e.is_usage(),
            Self::NotPermitted { .. }
            | Self::NoAfPacket
            | Self::Config(_)
            | Self::WrongFormat { .. } => true,
        }
    }
}

/// What the `Port` trait returns: the shared error as it is, AF_PACKET's own whole. Its
/// sentence travels too: PortError::NotPermitted names AF_XDP's capabilities, AF_PACKET needs
/// only one.
impl From<AfPacketError> for PortError {
    fn from(e: AfPacketError) -> Self {
        match e {
            AfPacketError::Port(e) => e,
            e => PortError::backend(e),
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
            AfPacketError::NotPermitted { iface: "x".into() },
            AfPacketError::NoAfPacket,
            AfPacketError::Config("no".into()),
            AfPacketError::WrongFormat {
                iface: "x".into(),
                queue: 0,
                frame: 3,
            },
            AfPacketError::io("bind", io::ErrorKind::Other.into()),
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
    fn the_own_error_survives_the_port_trait() {
        let port = PortError::from(AfPacketError::WrongFormat {
            iface: "x".into(),
            queue: 1,
            frame: 3,
        });
        assert!(
            matches!(
                port.backend_error::<AfPacketError>(),
                Some(AfPacketError::WrongFormat { frame: 3, .. })
            ),
            "{port:?}"
        );
        // The shared errors are not nested: a caller matching on them still finds them.
        let port = PortError::from(AfPacketError::io("bind", io::ErrorKind::Other.into()));
        assert!(port.backend_error::<AfPacketError>().is_none());
        let os = std::error::Error::source(&port).and_then(|e| e.downcast_ref::<io::Error>());
        assert_eq!(os.map(io::Error::kind), Some(io::ErrorKind::Other));
    }

    #[test]
    fn the_privilege_advice_names_cap_net_raw_alone() {
        let e = PortError::from(AfPacketError::NotPermitted {
            iface: "lr0".into(),
        });
        let text = e.to_string();
        assert!(
            text.contains("AF_PACKET on lr0 needs CAP_NET_RAW"),
            "{text}"
        );
        assert!(!text.contains("CAP_IPC_LOCK"), "{text}");
    }
}
