//! The interface facts `XskPort::open` gathers once, from the shared sysfs description.

use linerate_port::iface::Interface as Description;
use linerate_port::{PortError, PortInfo};

use crate::AfXdpError;

/// The facts `XskPort::open` gathers once.
#[derive(Debug, Clone)]
pub(crate) struct Interface {
    pub(crate) ifindex: u32,
    pub(crate) up: bool,
    pub(crate) info: PortInfo,
}

impl Interface {
    pub(crate) fn lookup(name: &str) -> Result<Self, AfXdpError> {
        let iface = Description::read(name).map_err(|_| PortError::NoSuchInterface(name.into()))?;
        Ok(Self {
            ifindex: iface.ifindex,
            up: iface.up,
            info: iface.port_info("afxdp", iface.bindable_queues()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_hostile_names_are_no_interface() {
        for name in ["", "..", "a/b", "no-such-if-xyz", "0123456789abcdefg"] {
            assert!(matches!(
                Interface::lookup(name),
                Err(AfXdpError::Port(PortError::NoSuchInterface(_)))
            ));
        }
    }

    #[test]
    fn loopback_is_found() {
        let lo = Interface::lookup("lo").unwrap();
        assert_eq!(lo.info.name, "lo");
        assert!(lo.ifindex > 0);
        assert!(lo.info.mtu > 0);
        assert!(lo.info.queues >= 1);
    }
}
