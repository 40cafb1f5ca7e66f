//! A device's own network namespace on a port: the namespace, and a macvlan of the port that
//! carries the device's MAC and addresses into it. A daemon started inside (crates/routing)
//! sends and receives through the port as the device; the port's XDP programs pass it the
//! frames addressed to that MAC (`bpf/hosts.h`, `stack_macs`).

use std::net::IpAddr;
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
    inside.set_up(name)
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
