//! A device's own network namespace on a port: the namespace, and a macvlan of the port that
//! carries the device's MAC and addresses into it. A daemon started inside (crates/routing)
//! sends and receives through the port as the device; the port's XDP programs pass it the
//! frames addressed to that MAC (`bpf/hosts.h`, `stack_macs`).

use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsFd;

use super::netlink::Rtnl;
use crate::LabError;

/// `ip netns add NAME`.
pub fn add_netns(name: &str) -> Result<(), LabError> {
    super::netns::add(name)
}

/// `ip netns del NAME`: safe to call for a namespace that is not there.
pub fn del_netns(name: &str) -> Result<(), LabError> {
    super::netns::del(name)
}

/// Deletes `links` (a device's macvlans) in `netns`, then the namespace. The kernel tears a
/// deleted namespace's links down later, on a work queue: a macvlan with the same MAC on the
/// same port made before then fails to come up (`EADDRINUSE`), as the next config's device
/// would. Deleted first, they are gone when this returns. A link not there is passed over.
pub fn del_device_netns(netns: &str, links: &[String]) -> Result<(), LabError> {
    if let Ok(mut inside) = Rtnl::open(Some(netns)) {
        for link in links {
            let _ = inside.del_link(link);
        }
    }
    super::netns::del(netns)
}

/// A macvlan `name` of `port` (in `port_netns`, None: ours) with `mac`, made inside `netns`,
/// given `addrs` and brought up, its loopback too. IPv6 is turned off on it when no address is
/// IPv6, so its kernel sends nothing (router solicitations, MLD reports) a test did not ask for.
pub fn add_port_link(
    port: &str,
    port_netns: Option<&str>,
    name: &str,
    mac: [u8; 6],
    netns: &str,
    addrs: &[(IpAddr, u8)],
) -> Result<(), LabError> {
    let handle = super::open_netns(netns)?;
    Rtnl::open(port_netns)?.add_macvlan(port, name, mac, handle.as_fd())?;
    let v6 = addrs.iter().any(|(a, _)| a.is_ipv6());
    let off = if v6 { "0" } else { "1" };
    super::write_sysctl_in(
        netns,
        &format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"),
        off,
    )?;
    let mut inside = Rtnl::open(Some(netns))?;
    for (addr, prefix) in addrs {
        inside.add_ip(name, *addr, *prefix)?;
    }
    inside.set_up("lo")?;
    inside.set_up(name)?;
    // A subnet in 0.0.0.0/8 (an OTG device at 1.1.1.2/4, as the conformance repo's BGP test
    // has one) gets no route from the kernel: its neighbours would be unreachable.
    for (addr, prefix) in addrs {
        if let IpAddr::V4(a) = addr
            && (1..32).contains(prefix)
        {
            let net = Ipv4Addr::from(u32::from(*a) & (u32::MAX << (32 - prefix)));
            if net.octets()[0] == 0 {
                inside.add_subnet_route(name, net, *prefix, *a)?;
            }
        }
    }
    Ok(())
}

/// `ip link set dev IFACE up|down` in `netns` (None: ours): a test port's link taken down
/// (a veth's peer loses its carrier with it) or brought back.
pub fn set_link_up(iface: &str, netns: Option<&str>, up: bool) -> Result<(), LabError> {
    let mut rtnl = Rtnl::open(netns)?;
    if up {
        rtnl.set_up(iface)
    } else {
        rtnl.set_down(iface)
    }
}

/// Runs `f` on a short-lived thread inside `netns`: a process it spawns starts there.
pub fn within<T: Send>(
    netns: &str,
    f: impl FnOnce() -> Result<T, LabError> + Send,
) -> Result<T, LabError> {
    super::in_netns(netns, f)
}
