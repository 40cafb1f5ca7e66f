//! Resolving hosts' next hops: ARP requests and neighbour solicitations sent from the hosts on
//! an AF_PACKET socket, the answers read from the neighbours the port's XDP code learns.

use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use linerate_xdp::XdpError;

use crate::linux::HostTable;
use crate::{Host, HostError, MacAddr, frames};

/// How long a request waits for its answer before it is sent again.
pub const RETRY: Duration = Duration::from_millis(500);
/// How often the table is read while waiting.
const POLL: Duration = Duration::from_millis(2);

/// One address to resolve and how far it got.
struct Target {
    addr: IpAddr,
    vlan: Option<u16>,
    frame: Vec<u8>,
    /// When its entry was written before the first request went out (None: no entry): an entry
    /// written since is an answer, an older one is not.
    before: Option<u64>,
    tries: u32,
    mac: Option<MacAddr>,
    /// The asking host's MAC: an answer claiming it is no neighbour's.
    own: MacAddr,
    /// The last answer not believed (a group, zero or the host's own MAC), to name it.
    bogus: Option<MacAddr>,
}

/// Sends ARP requests / neighbour solicitations from each host for `targets` (host index,
/// next-hop address) out of `iface` (in network namespace `netns` if given), again every
/// [`RETRY`] until `timeout`, reading the answers from `table` (the maps of the program on that
/// port). Only an answer that arrives after the call started counts, and one claiming a
/// broadcast, multicast, zero or the host's own MAC does not (RFC 1812 §3.3.2). Returns the
/// MACs in the order of `targets`, or an error naming the first address left unresolved:
/// [`HostError::BogusNeighbour`] with the MAC it claimed, else [`HostError::Unresolved`].
pub fn resolve(
    iface: &str,
    netns: Option<&str>,
    table: &HostTable,
    hosts: &[Host],
    targets: &[(usize, IpAddr)],
    timeout: Duration,
) -> Result<Vec<MacAddr>, HostError> {
    let mut pending = Vec::with_capacity(targets.len());
    for &(index, addr) in targets {
        let host = hosts.get(index).ok_or(HostError::NoSuchHost {
            index,
            hosts: hosts.len(),
        })?;
        host.validate()?;
        pending.push(Target {
            addr,
            vlan: host.vlan,
            frame: frames::request(host, addr)?,
            before: table.learned(addr, host.vlan)?.map(|n| n.ktime_ns),
            tries: 0,
            mac: None,
            own: host.mac,
            bogus: None,
        });
    }
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let mut socket = open(iface, netns)?;
    let deadline = Instant::now() + timeout;
    loop {
        for t in pending.iter_mut().filter(|t| t.mac.is_none()) {
            socket
                .write_all(&t.frame)
                .map_err(|source| HostError::Send {
                    iface: iface.to_owned(),
                    source,
                })?;
            t.tries += 1;
        }
        let retry_at = (Instant::now() + RETRY).min(deadline);
        loop {
            if answered(table, &mut pending)? {
                return Ok(pending.iter().filter_map(|t| t.mac).collect());
            }
            let now = Instant::now();
            if now >= retry_at {
                break;
            }
            std::thread::sleep(POLL.min(retry_at - now));
        }
        if Instant::now() >= deadline {
            let t = pending
                .iter()
                .find(|t| t.mac.is_none())
                .expect("an unanswered target kept the loop going");
            let iface = iface.to_owned();
            return Err(match t.bogus {
                Some(mac) => HostError::BogusNeighbour {
                    addr: t.addr,
                    iface,
                    mac,
                    kind: crate::group_or_zero(&mac).unwrap_or("the host's own"),
                },
                None => HostError::Unresolved {
                    addr: t.addr,
                    iface,
                    tries: t.tries,
                },
            });
        }
    }
}

/// Reads the table for the targets still waiting; true once every one has its answer.
fn answered(table: &HostTable, pending: &mut [Target]) -> Result<bool, HostError> {
    for t in pending.iter_mut().filter(|t| t.mac.is_none()) {
        if let Some(n) = table.learned(t.addr, t.vlan)?
            && Some(n.ktime_ns) != t.before
        {
            // Ignored, not fatal: the real neighbour may still answer before the deadline.
            if n.bogus() || n.mac == t.own {
                t.bogus = Some(n.mac);
                t.before = Some(n.ktime_ns);
            } else {
                t.mac = Some(n.mac);
            }
        }
    }
    Ok(pending.iter().all(|t| t.mac.is_some()))
}

/// An AF_PACKET socket that sends on `iface` of `netns` and receives nothing (protocol 0). It
/// keeps its interface after the thread that opened it has left the namespace.
fn open(iface: &str, netns: Option<&str>) -> Result<File, HostError> {
    let socket = linerate_xdp::in_netns(netns, || {
        let index = linerate_xdp::ifindex(iface).map_err(|e| match e {
            XdpError::UnknownInterface { iface, .. } => XdpError::UnknownInterface {
                iface,
                netns: netns.map(str::to_owned),
            },
            e => e,
        })?;
        Ok(linerate_sys::packet_socket(index, 0))
    })?;
    socket.map(File::from).map_err(|source| HostError::Send {
        iface: iface.to_owned(),
        source,
    })
}
