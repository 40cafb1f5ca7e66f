use std::io;

use linerate_port::PortError;

/// Why an AF_PACKET port or queue could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum AfPacketError {
    #[error("interface {0} does not exist (list them with `ip link`)")]
    NoSuchInterface(String),
    #[error("interface {iface} is down: bring it up with `ip link set {iface} up`")]
    InterfaceDown { iface: String },
    #[error(
        "AF_PACKET on {iface} needs CAP_NET_RAW: run with sudo, or grant it once with \
         `setcap cap_net_raw+ep $(command -v linerate)`"
    )]
    NotPermitted { iface: String },
    #[error("this kernel has no AF_PACKET sockets (CONFIG_PACKET): use --backend afxdp or live")]
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
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl AfPacketError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// True when the error comes from what the user asked for (a name, a privilege, a frame
    /// the interface cannot carry), as [`PortError::is_usage`] classifies the converted error.
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::Io { .. })
    }
}

impl From<AfPacketError> for PortError {
    fn from(e: AfPacketError) -> Self {
        match e {
            AfPacketError::NoSuchInterface(iface) => PortError::NoSuchInterface(iface),
            AfPacketError::InterfaceDown { iface } => PortError::InterfaceDown { iface },
            // PortError::NotPermitted names AF_XDP's capabilities; AF_PACKET needs only one,
            // so its own sentence travels as the reason.
            e @ (AfPacketError::NotPermitted { .. }
            | AfPacketError::NoAfPacket
            | AfPacketError::Config(_)
            | AfPacketError::WrongFormat { .. }) => PortError::Unsupported {
                backend: "afpacket",
                why: e.to_string(),
            },
            AfPacketError::Io { context, source } => PortError::Io { context, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_stay_usage_errors_as_port_errors() {
        let all = [
            AfPacketError::NoSuchInterface("x".into()),
            AfPacketError::InterfaceDown { iface: "x".into() },
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
        }
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
