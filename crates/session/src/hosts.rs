//! Ports that are hosts: a session opened from `[[host]]` declarations. Each host's port is a
//! port of the session, and each port receives: its receive program holds the port's hosts
//! (`bpf/hosts.h`), so it answers ARP, neighbour solicitations and pings for them while the
//! session is open, and counts what the other ports send toward it. Before a run, every stream
//! that goes from one host to another takes its addresses from the two hosts and its
//! destination MAC from its next hop, resolved by ARP/ND from the sending host.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use linerate_hosts::{Host, Ipv4Iface, Ipv6Iface, MacAddr, Neighbour};
use linerate_stream::{HostSpec, StreamSpec};
use linerate_wire::Mac;

use crate::error::{Result, SessionError};
use crate::multi::PortRun;
use crate::options::{PortOptions, RxTarget};
use crate::session::Session;

/// A session whose ports are its hosts' ports.
#[derive(Debug)]
pub struct HostSession {
    pub session: Session,
    /// Each port as the hosts name it (`IFACE` or `IFACE@NETNS`), in session order.
    pub ports: Vec<String>,
    /// The hosts, with their MACs filled in (a host without one takes its port's).
    pub hosts: Vec<Host>,
    /// The port of each host.
    pub host_port: Vec<usize>,
    /// Next hops whose MAC was given (host index, next hop): never resolved.
    given: HashMap<(usize, IpAddr), MacAddr>,
}

/// The ports `hosts` live on, each once, in the order they are first named.
pub fn ports_of(hosts: &[HostSpec]) -> Vec<String> {
    let mut ports: Vec<String> = Vec::new();
    for h in hosts {
        if !ports.contains(&h.port) {
            ports.push(h.port.clone());
        }
    }
    ports
}

impl HostSession {
    /// Opens every port the hosts name with `base`'s options (port i's workers on core
    /// `base.cores[i % len]`), attaches each port's receiver as `rx` asks, and gives it its
    /// hosts: from here on they answer.
    pub fn open(hosts: &[HostSpec], base: &PortOptions, rx: &RxTarget) -> Result<HostSession> {
        linerate_stream::check_hosts(hosts, &[])?;
        let ports = ports_of(hosts);
        if base.cores.is_empty() {
            return Err(SessionError::usage("no core to run on: give --cores"));
        }
        let options: Vec<PortOptions> = ports
            .iter()
            .enumerate()
            .map(|(i, port)| PortOptions {
                interface: Some(port.clone()),
                cores: vec![base.cores[i % base.cores.len()]],
                ..base.clone()
            })
            .collect();
        let mut session = Session::open(&options)?;
        let host_port: Vec<usize> = hosts
            .iter()
            .map(|h| ports.iter().position(|p| *p == h.port).expect("listed"))
            .collect();
        let mut out = Vec::with_capacity(hosts.len());
        for (spec, &port) in hosts.iter().zip(&host_port) {
            let mac = match spec.mac {
                Some(m) => m.octets(),
                None => session.port(port).info().mac.ok_or_else(|| {
                    SessionError::usage(format!(
                        "host {}: port {} has no MAC of its own: give the host mac=",
                        spec.name, spec.port
                    ))
                })?,
            };
            out.push(host_of(spec, mac));
        }
        for (i, port) in ports.iter().enumerate() {
            // Answers leave by XDP_TX: where the driver cannot send XDP frames (a veth whose
            // peer runs no XDP), the generic hook sends them.
            let (iface, netns) = crate::netns::split("port", port)?;
            let mut rx = rx.clone();
            if linerate_hosts::answer_mode(iface, netns)? == linerate_xdp::AttachMode::Skb {
                rx.attach = crate::options::RxAttach::Skb;
            }
            let p = session.port_mut(i);
            p.receive_here(&rx)
                .map_err(|e| e.context(format!("attaching the hosts' receiver on {port}")))?;
            let table = p.hosts_table()?;
            for (h, _) in out.iter().zip(&host_port).filter(|(_, hp)| **hp == i) {
                table.add(h)?;
            }
        }
        Ok(HostSession {
            session,
            ports,
            hosts: out,
            host_port,
            given: HashMap::new(),
        })
    }

    /// Gives host `host`'s next hop `hop` the MAC `mac`: streams through it take that MAC and
    /// it is not resolved (an OTG `gateway_mac` of choice `value`).
    pub fn give_neighbour(&mut self, host: &str, hop: IpAddr, mac: MacAddr) -> Result<()> {
        let i = self
            .hosts
            .iter()
            .position(|h| h.name == host)
            .ok_or_else(|| {
                SessionError::usage(format!("gateway MAC for {host:?}: no host of that name"))
            })?;
        self.given.insert((i, hop), mac);
        Ok(())
    }

    /// The index of the host named `name`.
    fn host(&self, name: &str, stream: &str) -> Result<usize> {
        self.hosts
            .iter()
            .position(|h| h.name == name)
            .ok_or_else(|| SessionError::usage(format!("stream {stream}: no host named {name:?}")))
    }

    /// Each port's run: every stream from one host to another with the hosts' addresses, VLAN
    /// and source MAC, and the destination MAC of its next hop, which the sending host resolves
    /// (ARP or ND, retried until `timeout`). A next hop that does not answer is an error that
    /// names it, before any frame is sent.
    pub fn runs(&self, streams: &[StreamSpec], timeout: Duration) -> Result<Vec<PortRun>> {
        self.runs_toward(streams, &[], timeout)
    }

    /// [`HostSession::runs`] where a stream may also go to one of `peers`: hosts on ports of
    /// another session (another agent's), whose addresses it takes and whose receiver, not
    /// one of this session's, counts it.
    pub fn runs_toward(
        &self,
        streams: &[StreamSpec],
        peers: &[HostSpec],
        timeout: Duration,
    ) -> Result<Vec<PortRun>> {
        // A peer's MAC is never read: the frame goes to the sending host's next hop.
        let peers: Vec<Host> = peers.iter().map(|p| host_of(p, [0; 6])).collect();
        let mut placed: Vec<(usize, StreamSpec, Option<usize>, IpAddr)> = Vec::new();
        for s in streams {
            let (Some(from), Some(to)) = (&s.from, &s.to) else {
                return Err(SessionError::usage(format!(
                    "stream {}: with hosts every stream names the host it leaves from and the one it goes to (from and to in a [[stream]], --flow FROM:TO on the command line)",
                    s.name
                )));
            };
            let f = self.host(from, &s.name)?;
            let (t, to_host) = match peers.iter().find(|p| p.name == *to) {
                Some(peer) if !self.hosts.iter().any(|h| h.name == *to) => (None, peer),
                _ => {
                    let t = self.host(to, &s.name)?;
                    (Some(t), &self.hosts[t])
                }
            };
            let (src, dst) = addresses(&self.hosts[f], to_host, s.ipv6, &s.name)?;
            let hop = self.hosts[f].next_hop(dst)?;
            let mut spec = s.clone();
            spec.src_ip = Some(src);
            spec.dst_ip = Some(dst);
            spec.src_mac = Some(Mac(self.hosts[f].mac));
            spec.vlan = spec.vlan.or(self.hosts[f].vlan);
            placed.push((f, spec, t, hop));
        }
        let wanted: Vec<(usize, IpAddr)> = placed.iter().map(|(f, .., hop)| (*f, *hop)).collect();
        let macs = self.resolve(&wanted, timeout)?;
        let mut runs: Vec<PortRun> = Vec::new();
        for (f, mut spec, t, hop) in placed {
            spec.dst_mac = Some(Mac(macs[&(f, hop)]));
            let port = self.host_port[f];
            let to = t.map(|t| self.host_port[t]);
            match runs.iter_mut().find(|r| r.port == port) {
                Some(r) => {
                    r.streams.push(spec);
                    r.to.push(to);
                }
                None => runs.push(PortRun {
                    port,
                    streams: vec![spec],
                    to: vec![to],
                }),
            }
        }
        runs.sort_by_key(|r| r.port);
        Ok(runs)
    }

    /// The MAC of every (host, next hop), resolved per port in one call each.
    fn resolve(
        &self,
        wanted: &[(usize, IpAddr)],
        timeout: Duration,
    ) -> Result<HashMap<(usize, IpAddr), MacAddr>> {
        let mut macs = self.given.clone();
        for (i, port) in self.ports.iter().enumerate() {
            let mut targets: Vec<(usize, IpAddr)> = wanted
                .iter()
                .filter(|(f, _)| self.host_port[*f] == i)
                .copied()
                .filter(|t| !self.given.contains_key(t))
                .collect();
            targets.sort();
            targets.dedup();
            if targets.is_empty() {
                continue;
            }
            let (iface, netns) = crate::netns::split("port", port)?;
            let table = self.session.port(i).hosts_table()?;
            let found =
                linerate_hosts::resolve(iface, netns, &table, &self.hosts, &targets, timeout)?;
            macs.extend(targets.into_iter().zip(found));
        }
        Ok(macs)
    }

    /// Resolves every host's gateways but those given, whether or not a stream goes through
    /// them (an OTG device's neighbours are known once its config is set). One that does not
    /// answer within `timeout` is an error naming it.
    pub fn resolve_gateways(&self, timeout: Duration) -> Result<()> {
        let wanted: Vec<(usize, IpAddr)> = self
            .hosts
            .iter()
            .enumerate()
            .flat_map(|(i, h)| {
                let v4 = h.ipv4.and_then(|v| v.gateway).map(IpAddr::V4);
                let v6 = h.ipv6.and_then(|v| v.gateway).map(IpAddr::V6);
                [v4, v6].into_iter().flatten().map(move |g| (i, g))
            })
            .collect();
        self.resolve(&wanted, timeout).map(drop)
    }

    /// What each port's hosts learned: the neighbours they resolved and those that asked
    /// for them, per port.
    pub fn neighbours(&self) -> Result<Vec<(String, Vec<Neighbour>)>> {
        self.ports
            .iter()
            .enumerate()
            .map(|(i, p)| Ok((p.clone(), self.session.port(i).hosts_table()?.neighbours()?)))
            .collect()
    }
}

/// The addresses of a stream from `from` to `to`, of the stream's family.
fn addresses(from: &Host, to: &Host, ipv6: bool, stream: &str) -> Result<(IpAddr, IpAddr)> {
    let family = |h: &Host| -> Option<IpAddr> {
        if ipv6 {
            h.ipv6.map(|v| IpAddr::V6(v.addr))
        } else {
            h.ipv4.map(|v| IpAddr::V4(v.addr))
        }
    };
    let which = if ipv6 { "an IPv6" } else { "an IPv4" };
    match (family(from), family(to)) {
        (Some(s), Some(d)) => Ok((s, d)),
        (None, _) => Err(SessionError::usage(format!(
            "stream {stream}: host {} has no {which} address",
            from.name
        ))),
        (_, None) => Err(SessionError::usage(format!(
            "stream {stream}: host {} has no {which} address",
            to.name
        ))),
    }
}

/// The host `spec` declares, with `mac`.
fn host_of(spec: &HostSpec, mac: MacAddr) -> Host {
    Host {
        name: spec.name.clone(),
        mac,
        vlan: spec.vlan,
        ipv4: spec.ipv4.map(|n| Ipv4Iface {
            addr: n.addr(),
            prefix: n.prefix_len(),
            gateway: spec.gateway,
        }),
        ipv6: spec.ipv6.map(|n| Ipv6Iface {
            addr: n.addr(),
            prefix: n.prefix_len(),
            gateway: spec.gateway6,
        }),
    }
}
