//! Ports that are hosts: a session opened from `[[host]]` declarations. Each host's port is a
//! port of the session, and each port receives: its receive program holds the port's hosts
//! (`bpf/hosts.h`), so it answers ARP, neighbour solicitations and pings for them while the
//! session is open, and counts what the other ports send toward it. Before a run, every stream
//! that goes from one host to another takes its addresses from the two hosts and its
//! destination MAC from its next hop, resolved by ARP/ND from the sending host.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use linerate_hosts::{AskedFor, Host, Ipv4Iface, Ipv6Iface, MacAddr, NeighbourReport};
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
    /// Next hops resolved earlier: a test bed compiled again (each trial of rfc2544) does not
    /// ask again.
    resolved: HashMap<(usize, IpAddr), MacAddr>,
    /// Per port, the next hops given or resolved, for the neighbour report.
    asked: AskedNeighbours,
}

/// The neighbours each port's hosts asked for (their gateways, their flows' next hops), with
/// the MAC their streams were compiled with: what a neighbour report lists, whatever the
/// port's table learned since. Shared: the test bed's counts read it from any thread.
#[derive(Debug, Clone, Default)]
pub struct AskedNeighbours(Arc<Mutex<Vec<Vec<AskedFor>>>>);

impl AskedNeighbours {
    /// What the hosts of port `port` asked for.
    pub fn of_port(&self, port: usize) -> Vec<AskedFor> {
        let ports = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ports.get(port).cloned().unwrap_or_default()
    }

    fn set(&self, port: usize, asked: AskedFor) {
        let mut ports = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if ports.len() <= port {
            ports.resize(port + 1, Vec::new());
        }
        let list = &mut ports[port];
        list.retain(|a| (a.addr, a.vlan) != (asked.addr, asked.vlan));
        list.push(asked);
    }
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
    /// Opens every port the hosts name with `base`'s options (port i's worker on core
    /// `base.cores[i % len]`, or with none given on a core of its own while there are any: see
    /// [`crate::place_ports`]), attaches each port's receiver as `rx` asks, and gives it its
    /// hosts: from here on they answer. Frames to the MAC of a host named in `to_stack` that
    /// no host answers go on to its port's kernel stack, where its control plane (a routing
    /// daemon behind a macvlan of that MAC) takes them; and so do frames to the group MACs
    /// beside its name on that port (a link-state protocol's hellos and LSPs: IS-IS's AllISs,
    /// AllL1ISs and AllL2ISs). Both hold from each receiver's first frame.
    pub fn open(
        hosts: &[HostSpec],
        base: &PortOptions,
        rx: &RxTarget,
        to_stack: &[(String, Vec<MacAddr>)],
    ) -> Result<HostSession> {
        linerate_stream::check_hosts(hosts, &[])?;
        if let Some((name, _)) = to_stack
            .iter()
            .find(|(name, _)| !hosts.iter().any(|h| h.name == *name))
        {
            return Err(SessionError::usage(format!(
                "control plane: no host named {name:?}"
            )));
        }
        let ports = ports_of(hosts);
        let (cores, shared) = crate::options::place_ports(&ports, &base.cores);
        if let Some(shared) = shared {
            eprintln!("linerate: warning: {shared}");
        }
        let options: Vec<PortOptions> = ports
            .iter()
            .zip(cores)
            .map(|(port, core)| PortOptions {
                interface: Some(port.clone()),
                cores: vec![core],
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
            let (iface, netns) = crate::netns::split(crate::Setting::HostPort, port)?;
            let mut rx = rx.clone();
            if linerate_hosts::answer_mode(iface, netns)? == linerate_xdp::AttachMode::Skb {
                rx.attach = crate::options::RxAttach::Skb;
            }
            // The maps are filled before the program takes the link: a control plane's frame
            // that comes meanwhile would be counted as another frame and lost.
            let fill = |table: &linerate_hosts::HostTable| -> Result<()> {
                for (h, _) in out.iter().zip(&host_port).filter(|(_, hp)| **hp == i) {
                    table.add(h)?;
                    for (_, groups) in to_stack.iter().filter(|(name, _)| *name == h.name) {
                        table.pass_to_stack(h.mac, true)?;
                        for g in groups {
                            table.pass_to_stack(*g, true)?;
                        }
                    }
                }
                Ok(())
            };
            session
                .port_mut(i)
                .receive_here_with_hosts(&rx, &fill)
                .map_err(|e| e.context(format!("attaching the hosts' receiver on {port}")))?;
        }
        Ok(HostSession {
            session,
            ports,
            hosts: out,
            host_port,
            given: HashMap::new(),
            resolved: HashMap::new(),
            asked: AskedNeighbours::default(),
        })
    }

    /// The neighbours the hosts asked for, per port, as they are given or resolved from now on.
    pub fn asked(&self) -> AskedNeighbours {
        self.asked.clone()
    }

    /// Records that host `host`'s streams reach `hop` at `mac`.
    fn asked_for(&self, host: usize, hop: IpAddr, mac: MacAddr) {
        let asked = AskedFor {
            addr: hop,
            vlan: self.hosts[host].vlan,
            mac,
        };
        self.asked.set(self.host_port[host], asked);
    }

    /// Gives host `host`'s next hop `hop` the MAC `mac`: streams through it take that MAC and
    /// it is not resolved (an OTG `gateway_mac` of choice `value`, an agent's `GivenMac`). A
    /// broadcast, multicast or zero MAC is refused: no gateway has one.
    pub fn give_neighbour(&mut self, host: &str, hop: IpAddr, mac: MacAddr) -> Result<()> {
        check_given(host, hop, mac)?;
        let i = self
            .hosts
            .iter()
            .position(|h| h.name == host)
            .ok_or_else(|| {
                SessionError::usage(format!("gateway MAC for {host:?}: no host of that name"))
            })?;
        self.given.insert((i, hop), mac);
        self.asked_for(i, hop, mac);
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
    pub fn runs(&mut self, streams: &[StreamSpec], timeout: Duration) -> Result<Vec<PortRun>> {
        self.runs_toward(streams, &[], timeout)
    }

    /// [`HostSession::runs`] where a stream may also go to one of `peers`: hosts on ports of
    /// another session (another agent's), whose addresses it takes and whose receiver, not
    /// one of this session's, counts it.
    pub fn runs_toward(
        &mut self,
        streams: &[StreamSpec],
        peers: &[HostSpec],
        timeout: Duration,
    ) -> Result<Vec<PortRun>> {
        // A peer's MAC is never read: the frame goes to the sending host's next hop.
        let peers: Vec<Host> = peers.iter().map(|p| host_of(p, [0; 6])).collect();
        let mut placed: Vec<(StreamSpec, Vec<Leg>)> = Vec::new();
        for s in streams {
            let (Some(from), Some(to)) = (&s.from, &s.to) else {
                return Err(SessionError::usage(format!(
                    "stream {}: with hosts every stream names the host it leaves from and the one it goes to (its from and to)",
                    s.name
                )));
            };
            let pairs = std::iter::once((from, to)).chain(s.pairs.iter().map(|(a, b)| (a, b)));
            let legs = pairs
                .map(|(from, to)| self.leg(s, from, to, &peers))
                .collect::<Result<Vec<Leg>>>()?;
            let first = &legs[0];
            let port_of = |l: &Leg| self.host_port[l.from];
            if let Some(other) = legs.iter().find(|l| port_of(l) != port_of(first)) {
                return Err(SessionError::usage(format!(
                    "stream {}: its pairs leave from different ports ({} and {}): one port sends a stream, so give each port its own",
                    s.name,
                    self.ports[port_of(first)],
                    self.ports[port_of(other)]
                )));
            }
            if let Some(other) = legs.iter().find(|l| l.to_port != first.to_port) {
                return Err(SessionError::usage(format!(
                    "stream {}: its pairs arrive at different ports ({} and {}): one receiver counts a stream, so give each port its own",
                    s.name, first.to, other.to
                )));
            }
            let mut spec = s.clone();
            spec.src_ip = Some(first.src);
            spec.dst_ip = Some(first.dst);
            spec.src_mac = Some(Mac(self.hosts[first.from].mac));
            spec.vlan = spec.vlan.or(self.hosts[first.from].vlan);
            placed.push((spec, legs));
        }
        let wanted: Vec<(usize, IpAddr)> = placed
            .iter()
            .flat_map(|(_, legs)| legs.iter().map(|l| (l.from, l.hop)))
            .collect();
        if wanted
            .iter()
            .any(|t| !self.given.contains_key(t) && !self.resolved.contains_key(t))
        {
            self.check_unresolved(&placed)?;
        }
        let macs = self.resolve(&wanted, timeout)?;
        let mut runs: Vec<PortRun> = Vec::new();
        for ((mut spec, legs), own) in placed.into_iter().zip(streams) {
            let first = &legs[0];
            spec.dst_mac = Some(Mac(macs[&(first.from, first.hop)]));
            if legs.len() > 1 {
                vary_over_pairs(&self.hosts, &mut spec, own, &legs, &macs)?;
            }
            let port = self.host_port[first.from];
            let to = first.to_port;
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

    /// One pair of a stream: the hosts, the addresses of the stream's family, and the next hop
    /// the sending host resolves.
    fn leg(&self, s: &StreamSpec, from: &str, to: &str, peers: &[Host]) -> Result<Leg> {
        let f = self.host(from, &s.name)?;
        let (t, to_host) = match peers.iter().find(|p| p.name == *to) {
            Some(peer) if !self.hosts.iter().any(|h| h.name == *to) => (None, peer),
            _ => {
                let t = self.host(to, &s.name)?;
                (Some(t), &self.hosts[t])
            }
        };
        let (src, dst, hop) = match addresses(&self.hosts[f], to_host, s.ipv6, &s.name) {
            Ok((src, dst)) => (src, dst, self.hosts[f].next_hop(dst)?),
            // Both addresses of a family the host lacks, given by the stream itself: it
            // leaves through the host's gateway of the other family, the one neighbour
            // both families share (IPv6 routes learned over an IPv4 BGP session).
            Err(e) => match (s.src_ip, s.dst_ip, gateway(&self.hosts[f])) {
                (Some(src), Some(dst), Some(hop)) if src.is_ipv6() == s.ipv6 => (src, dst, hop),
                _ => return Err(e),
            },
        };
        // A peer is counted by its own agent's receiver: peers on one agent's port share it.
        let to_port = t.map(|t| self.host_port[t]);
        Ok(Leg {
            from: f,
            to: to.to_owned(),
            to_port,
            src,
            dst,
            hop,
        })
    }

    /// Compiles each port's streams with a stand-in next hop MAC: a refusal that needs no
    /// neighbour (a size over the port's MTU, too small for its headers) comes before any ARP
    /// or ND goes out, not after the resolve wait.
    fn check_unresolved(&self, placed: &[(StreamSpec, Vec<Leg>)]) -> Result<()> {
        // Locally administered, unicast: only its shape matters here.
        const STAND_IN: MacAddr = [0x02, 0, 0, 0, 0, 1];
        for port in 0..self.ports.len() {
            let streams: Vec<StreamSpec> = placed
                .iter()
                .filter(|(_, legs)| self.host_port[legs[0].from] == port)
                .map(|(spec, _)| StreamSpec {
                    dst_mac: Some(Mac(STAND_IN)),
                    ..spec.clone()
                })
                .collect();
            if !streams.is_empty() {
                self.session.port(port).compile(&streams)?;
            }
        }
        Ok(())
    }

    /// The MAC of every (host, next hop), resolved per port in one call each.
    fn resolve(
        &mut self,
        wanted: &[(usize, IpAddr)],
        timeout: Duration,
    ) -> Result<HashMap<(usize, IpAddr), MacAddr>> {
        let mut macs = self.given.clone();
        macs.extend(self.resolved.iter().map(|(k, v)| (*k, *v)));
        for (i, port) in self.ports.iter().enumerate() {
            let mut targets: Vec<(usize, IpAddr)> = wanted
                .iter()
                .filter(|(f, _)| self.host_port[*f] == i)
                .copied()
                .filter(|t| !macs.contains_key(t))
                .collect();
            targets.sort();
            targets.dedup();
            if targets.is_empty() {
                continue;
            }
            let (iface, netns) = crate::netns::split(crate::Setting::HostPort, port)?;
            let table = self.session.port(i).hosts_table()?;
            let found =
                linerate_hosts::resolve(iface, netns, &table, &self.hosts, &targets, timeout)?;
            for (t, mac) in targets.into_iter().zip(found) {
                self.resolved.insert(t, mac);
                self.asked_for(t.0, t.1, mac);
                macs.insert(t, mac);
            }
        }
        Ok(macs)
    }

    /// Resolves every host's gateways but those given, whether or not a stream goes through
    /// them (an OTG device's neighbours are known once its config is set). One that does not
    /// answer within `timeout` is an error naming it.
    pub fn resolve_gateways(&mut self, timeout: Duration) -> Result<()> {
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

    /// Per port, the neighbours its hosts asked for, with the MAC their streams use, and a
    /// count of the others it learned.
    pub fn neighbours(&self) -> Result<Vec<(String, NeighbourReport)>> {
        self.ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let table = self.session.port(i).hosts_table()?;
                Ok((p.clone(), table.report(&self.asked.of_port(i))?))
            })
            .collect()
    }
}

/// Refuses a given next-hop MAC that is no one station's: streams through it would flood the
/// segment (broadcast, multicast) or go nowhere (zero).
fn check_given(host: &str, hop: IpAddr, mac: MacAddr) -> Result<()> {
    match linerate_hosts::group_or_zero(&mac) {
        Some(kind) => Err(SessionError::usage(format!(
            "gateway MAC for host {host} ({hop}): {} is a {kind} MAC, which no gateway has: give the gateway's unicast MAC",
            Mac(mac)
        ))),
        None => Ok(()),
    }
}

/// A host's gateway, IPv4's first.
fn gateway(host: &Host) -> Option<IpAddr> {
    let v4 = host.ipv4.and_then(|v| v.gateway).map(IpAddr::V4);
    v4.or(host.ipv6.and_then(|v| v.gateway).map(IpAddr::V6))
}

/// A stream over several pairs: each of the fields the pairs set (source and destination
/// MAC and address, VLAN) that differs between them, and that the stream (`own`, as
/// given) neither sets nor varies itself, becomes a list, frame n taking pair n's value,
/// all in step. Lists are pre-built frames: nothing of it reaches the hot path.
fn vary_over_pairs(
    hosts: &[Host],
    spec: &mut StreamSpec,
    own: &StreamSpec,
    legs: &[Leg],
    macs: &HashMap<(usize, IpAddr), MacAddr>,
) -> Result<()> {
    use linerate_wire::{Field, FieldValue};
    if legs.len() > linerate_stream::LIST_LIMIT {
        return Err(SessionError::usage(format!(
            "stream {}: {} host pairs, over the {} one stream goes round (its frames are pre-built, one per pair): split it into several",
            spec.name,
            legs.len(),
            linerate_stream::LIST_LIMIT
        )));
    }
    let vlans: Vec<Option<u16>> = legs.iter().map(|l| hosts[l.from].vlan).collect();
    if vlans.iter().any(|v| v.is_some() != vlans[0].is_some()) {
        return Err(SessionError::usage(format!(
            "stream {}: some of its senders are on a VLAN and some are not: one stream's frames are all tagged or none",
            spec.name
        )));
    }
    let ip = |a: IpAddr| match a {
        IpAddr::V4(v) => FieldValue::Ipv4(v),
        IpAddr::V6(v) => FieldValue::Ipv6(v),
    };
    let lists: [(Field, Vec<FieldValue>); 5] = [
        (
            Field::SrcMac,
            legs.iter()
                .map(|l| FieldValue::Mac(hosts[l.from].mac))
                .collect(),
        ),
        (
            Field::DstMac,
            legs.iter()
                .map(|l| FieldValue::Mac(macs[&(l.from, l.hop)]))
                .collect(),
        ),
        (Field::SrcIp, legs.iter().map(|l| ip(l.src)).collect()),
        (Field::DstIp, legs.iter().map(|l| ip(l.dst)).collect()),
        (
            Field::VlanId,
            vlans
                .iter()
                .map(|v| FieldValue::Int(v.unwrap_or(0).into()))
                .collect(),
        ),
    ];
    for (field, values) in lists {
        let constant = values.iter().all(|v| *v == values[0]);
        let set = match field {
            Field::SrcMac => own.src_mac.is_some(),
            Field::DstMac => own.dst_mac.is_some(),
            Field::SrcIp => own.src_ip.is_some(),
            Field::DstIp => own.dst_ip.is_some(),
            _ => own.vlan.is_some(),
        };
        if constant || set || spec.vary.iter().any(|v| v.field == field) {
            continue;
        }
        // Pair 0 first, as the template holds it.
        spec.vary
            .push(linerate_stream::Vary::list(field, values, None));
    }
    Ok(())
}

/// One host pair of a stream, placed.
#[derive(Debug)]
struct Leg {
    /// The sending host's index.
    from: usize,
    /// The receiving host's name, and its port (None: a peer's, another agent's).
    to: String,
    to_port: Option<usize>,
    src: IpAddr,
    dst: IpAddr,
    hop: IpAddr,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_gateway_mac_must_be_unicast() {
        let hop: IpAddr = "198.18.0.1".parse().unwrap();
        check_given("h1", hop, [0x02, 0, 0, 0, 0, 9]).unwrap();
        for (mac, text, kind) in [
            ([0xff; 6], "ff:ff:ff:ff:ff:ff", "broadcast"),
            ([0x01, 0, 0x5e, 0, 0, 1], "01:00:5e:00:00:01", "multicast"),
            ([0x33, 0x33, 0, 0, 0, 1], "33:33:00:00:00:01", "multicast"),
            ([0; 6], "00:00:00:00:00:00", "all-zero"),
        ] {
            let err = check_given("h1", hop, mac).unwrap_err();
            let line = err.to_string();
            assert!(err.is_usage(), "{line}");
            assert!(
                line.contains(text) && line.contains(kind) && line.contains("h1"),
                "{line}"
            );
            assert!(
                line.contains("198.18.0.1") && !line.contains('\n'),
                "{line}"
            );
        }
    }

    #[test]
    fn pairs_become_lists_in_step_but_what_the_stream_sets_or_varies_stays() {
        let host = |n: u8, vlan: Option<u16>| Host {
            name: format!("h{n}"),
            mac: [2, 0, 0, 0, 0, n],
            vlan,
            ipv4: Some(Ipv4Iface {
                addr: std::net::Ipv4Addr::new(10, 0, n, 1),
                prefix: 24,
                gateway: Some(std::net::Ipv4Addr::new(10, 0, n, 2)),
            }),
            ipv6: None,
        };
        let hosts = [host(1, None), host(2, None), host(3, Some(7))];
        let leg = |from: usize, to: u8| Leg {
            from,
            to: format!("r{to}"),
            to_port: Some(1),
            src: IpAddr::V4(std::net::Ipv4Addr::new(10, 0, from as u8 + 1, 1)),
            dst: IpAddr::V4(std::net::Ipv4Addr::new(10, 9, to, 1)),
            hop: IpAddr::V4(std::net::Ipv4Addr::new(10, 0, from as u8 + 1, 2)),
        };
        let legs = [leg(0, 1), leg(1, 2)];
        // Both senders' next hops answer with one MAC: the destination MAC stays a constant.
        let macs: HashMap<(usize, IpAddr), MacAddr> = legs
            .iter()
            .map(|l| ((l.from, l.hop), [2, 0, 0, 0, 0, 0x99]))
            .collect();
        let own = StreamSpec {
            vary: vec!["dst-ip:inc:10.9.0.1-10.9.0.4".parse().unwrap()],
            ..StreamSpec::default()
        };
        let mut spec = own.clone();
        vary_over_pairs(&hosts, &mut spec, &own, &legs, &macs).unwrap();
        let lists: Vec<String> = spec.vary[1..].iter().map(|v| v.to_string()).collect();
        assert_eq!(
            lists,
            [
                "src-mac:list:02:00:00:00:00:01,02:00:00:00:00:02",
                "src-ip:list:10.0.1.1,10.0.2.1"
            ]
        );
        // An address the stream sets itself is not taken from the pairs.
        let own = StreamSpec {
            src_ip: Some("192.0.2.1".parse().unwrap()),
            ..StreamSpec::default()
        };
        let mut spec = own.clone();
        vary_over_pairs(&hosts, &mut spec, &own, &legs, &macs).unwrap();
        let fields: Vec<String> = spec.vary.iter().map(|v| v.field.name()).collect();
        assert_eq!(fields, ["src-mac", "dst-ip"]);
        // Tagged and untagged senders cannot share a stream.
        let e = vary_over_pairs(&hosts, &mut spec, &own, &[leg(0, 1), leg(2, 2)], &macs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("VLAN"), "{e}");
    }
}
