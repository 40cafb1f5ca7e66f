//! Emulated hosts, as a stream file's `[[host]]` tables and `--host` flags declare them: a
//! name, the port it lives on, its MAC, an optional VLAN, IPv4 and/or IPv6 addresses with their
//! prefix and gateway. Streams name hosts (`from`, `to`) and take their addresses from them;
//! the session answers ARP/ND for the hosts and resolves their next hops.
//!
//! One syntax everywhere: `--host` takes the table's keys as `key=value` pairs, so
//! `--host name=west,port=lab0,ipv4=198.18.0.1/24,gateway=198.18.0.254` is the table
//! `{ name = "west", port = "lab0", ipv4 = "198.18.0.1/24", gateway = "198.18.0.254" }`.
//! A host's control planes (`[host.bgp]`, `[host.ospf]`, `[host.isis]`: their neighbours and
//! route ranges) are sub-tables: files only.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use linerate_wire::Mac;
use serde::{Deserialize, Serialize};

use crate::error::StreamError;

/// One emulated host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostSpec {
    pub name: String,
    /// The port it lives on: an interface as given with `-i` (`IFACE` or `IFACE@NETNS`).
    pub port: String,
    /// None: the port's own MAC.
    #[serde(default, with = "crate::text::optional")]
    pub mac: Option<Mac>,
    /// 802.1Q VLAN id of its frames (none: untagged).
    #[serde(default)]
    pub vlan: Option<u16>,
    /// Address and prefix, `198.18.0.1/24`.
    #[serde(default)]
    pub ipv4: Option<Ipv4Net>,
    /// IPv4 next hop off the prefix.
    #[serde(default)]
    pub gateway: Option<Ipv4Addr>,
    /// Address and prefix, `2001:2::1/64`.
    #[serde(default)]
    pub ipv6: Option<Ipv6Net>,
    /// IPv6 next hop off the prefix.
    #[serde(default)]
    pub gateway6: Option<Ipv6Addr>,
    /// A BGP speaker with the host's MAC and address (`[host.bgp]`): FRR's bgpd, run as the
    /// OTG devices' is (docs/routing.md), advertising `routes` to one peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bgp: Option<HostBgp>,
    /// An OSPFv2 router with the host's MAC and address (`[host.ospf]`): FRR's ospfd on the
    /// host's link, advertising `routes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ospf: Option<HostOspf>,
    /// An OSPFv3 router on the host's IPv6 address (`[host.ospf6]`): FRR's ospf6d, its keys
    /// those of `[host.ospf]`, its ranges IPv6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ospf6: Option<HostOspf>,
    /// An IS-IS router with the host's MAC and addresses (`[host.isis]`): FRR's isisd on the
    /// host's link, advertising `routes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isis: Option<HostIsis>,
    /// The LAG this host is one member's side of: an OTG device on a LAG is a host on each
    /// member port, each with the device's MAC and addresses, so hosts of one LAG share their
    /// addresses across its ports. Not a stream file's key.
    #[serde(skip)]
    pub lag: Option<String>,
}

/// A host's OSPFv2 (or OSPFv3) router: one interface, the host's link, in one area.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostOspf {
    /// Default: the backbone, 0.0.0.0.
    #[serde(default)]
    pub area: Option<Ipv4Addr>,
    /// Default: the host's IPv4 address (an OSPFv3 host without one must give it).
    #[serde(default)]
    pub router_id: Option<Ipv4Addr>,
    /// The host and its neighbour alone on the link (default); false: a broadcast network
    /// with a designated router.
    #[serde(default = "yes")]
    pub point_to_point: bool,
    /// Seconds; default OSPF's 10 and 40.
    #[serde(default)]
    pub hello: Option<u16>,
    #[serde(default)]
    pub dead: Option<u16>,
    /// The interface's cost; default 10.
    #[serde(default)]
    pub cost: Option<u16>,
    #[serde(default)]
    pub routes: Vec<HostIgpRoutes>,
}

/// A host's IS-IS router: one circuit, the host's link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostIsis {
    /// `xxxx.xxxx.xxxx`; default: the host's MAC.
    #[serde(default)]
    pub system_id: Option<String>,
    /// The area address, `49.0001` (default).
    #[serde(default)]
    pub area: Option<String>,
    /// `l1`, `l2` (default) or `l1-2`.
    #[serde(default)]
    pub level: Option<String>,
    /// The host and its neighbour alone on the link (default); false: a broadcast circuit.
    #[serde(default = "yes")]
    pub point_to_point: bool,
    /// Seconds; default 10 and 30.
    #[serde(default)]
    pub hello: Option<u16>,
    #[serde(default)]
    pub dead: Option<u16>,
    /// The circuit's metric; default 10.
    #[serde(default)]
    pub metric: Option<u32>,
    #[serde(default)]
    pub routes: Vec<HostIgpRoutes>,
}

/// `count` prefixes from `prefix`, each `step` prefix-sized blocks after the last, advertised
/// by an IGP with one metric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostIgpRoutes {
    /// Default: `<host>-ospf<i>` or `<host>-isis<i>`.
    #[serde(default)]
    pub name: Option<String>,
    pub prefix: IpNet,
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default = "one")]
    pub step: u32,
    /// Default 10.
    #[serde(default)]
    pub metric: Option<u32>,
    /// OSPF only: `intra-area`, `inter-area`, `external-type-1` or `external-type-2`
    /// (default).
    #[serde(default)]
    pub origin: Option<String>,
}

fn yes() -> bool {
    true
}

/// A host's BGP session and what it advertises on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostBgp {
    /// The host's AS (1 to 4294967295).
    #[serde(rename = "as")]
    pub asn: u32,
    /// The neighbour, on the host's subnet; default: its gateway (IPv4, else IPv6).
    #[serde(default)]
    pub peer: Option<IpAddr>,
    /// The neighbour is in the host's AS (iBGP); default: another (eBGP).
    #[serde(default)]
    pub ibgp: bool,
    /// Default: the host's IPv4 address.
    #[serde(default)]
    pub router_id: Option<Ipv4Addr>,
    /// Seconds; default: FRR's (60 and 180).
    #[serde(default)]
    pub keepalive: Option<u16>,
    #[serde(default)]
    pub hold: Option<u16>,
    /// TCP-MD5 (RFC 2385) key.
    #[serde(default)]
    pub md5: Option<String>,
    #[serde(default)]
    pub routes: Vec<HostRoutes>,
}

/// `count` prefixes from `prefix`, each `step` prefix-sized blocks after the last, with the
/// path attributes they are advertised with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostRoutes {
    /// Default: `<host>-routes<i>`.
    #[serde(default)]
    pub name: Option<String>,
    pub prefix: IpNet,
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default = "one")]
    pub step: u32,
    /// Default: the host's own address on the session.
    #[serde(default)]
    pub next_hop: Option<IpAddr>,
    #[serde(default)]
    pub med: Option<u32>,
    /// Sent to iBGP peers only.
    #[serde(default)]
    pub local_pref: Option<u32>,
    /// `igp`, `egp` or `incomplete`.
    #[serde(default)]
    pub origin: Option<String>,
    /// Standard communities, `AS:VALUE` (RFC 1997).
    #[serde(default)]
    pub communities: Vec<String>,
    /// AS numbers put before the host's own.
    #[serde(default)]
    pub as_path: Vec<u32>,
}

fn one() -> u32 {
    1
}

fn bad(host: &str, why: impl Into<String>) -> StreamError {
    StreamError::Host {
        host: host.into(),
        why: why.into(),
    }
}

impl HostSpec {
    /// Checks what a host must hold: a name, a port, an address, gateways inside the prefix,
    /// a VLAN id a tag carries.
    pub fn check(&self) -> Result<(), StreamError> {
        let name = if self.name.is_empty() {
            "?"
        } else {
            &self.name
        };
        if self.name.is_empty() {
            return Err(bad(name, "name: a host needs a name streams can refer to"));
        }
        if self.port.is_empty() {
            return Err(bad(
                name,
                "port: give the interface it lives on (one of -i)",
            ));
        }
        if self.ipv4.is_none() && self.ipv6.is_none() {
            return Err(bad(
                name,
                "give it an address: ipv4 = \"A.B.C.D/LEN\" or ipv6",
            ));
        }
        if let Some(v) = self.vlan
            && !(1..=4094).contains(&v)
        {
            return Err(bad(name, format!("vlan: {v} is not a VLAN id (1-4094)")));
        }
        if let Some(m) = self.mac
            && m.0[0] & 1 == 1
        {
            return Err(bad(
                name,
                format!("mac: {m} is a group address, not a host's"),
            ));
        }
        if let Some(m) = self.mac
            && m.0 == [0; 6]
        {
            return Err(bad(
                name,
                format!("mac: {m} is no station's address: give the host its own MAC"),
            ));
        }
        if let Some(net) = self.ipv4
            && let Some(which) = subnet_edge(net, net.addr())
        {
            return Err(bad(
                name,
                format!(
                    "ipv4: {} is the {which} address of {}, no host's: give it another",
                    net.addr(),
                    net.trunc()
                ),
            ));
        }
        match (self.gateway, self.ipv4) {
            (Some(_), None) => return Err(bad(name, "gateway without an ipv4 address")),
            (Some(g), Some(net)) if !net.contains(&g) || g == net.addr() => {
                return Err(bad(
                    name,
                    format!("gateway: {g} is not another address of {net}"),
                ));
            }
            (Some(g), Some(net)) if subnet_edge(net, g).is_some() => {
                return Err(bad(
                    name,
                    format!(
                        "gateway: {g} is the {} address of {}, no router's",
                        subnet_edge(net, g).expect("checked"),
                        net.trunc()
                    ),
                ));
            }
            _ => {}
        }
        match (self.gateway6, self.ipv6) {
            (Some(_), None) => Err(bad(name, "gateway6 without an ipv6 address")),
            (Some(g), Some(net)) if !(net.contains(&g) || is_link_local(g)) || g == net.addr() => {
                Err(bad(
                    name,
                    format!("gateway6: {g} is neither another address of {net} nor link-local"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// The host's address of `dst`'s family.
    pub fn addr_for(&self, dst: IpAddr) -> Option<IpAddr> {
        match dst {
            IpAddr::V4(_) => self.ipv4.map(|n| IpAddr::V4(n.addr())),
            IpAddr::V6(_) => self.ipv6.map(|n| IpAddr::V6(n.addr())),
        }
    }
}

/// "network" or "broadcast" when `a` is that address of `net`'s prefix; a /31 (RFC 3021) and
/// a /32 have neither.
fn subnet_edge(net: Ipv4Net, a: Ipv4Addr) -> Option<&'static str> {
    if net.prefix_len() >= 31 {
        None
    } else if a == net.network() {
        Some("network")
    } else if a == net.broadcast() {
        Some("broadcast")
    } else {
        None
    }
}

fn is_link_local(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// `--host key=value,…`: the keys of a `[[host]]` table.
impl FromStr for HostSpec {
    type Err = StreamError;

    fn from_str(text: &str) -> Result<Self, StreamError> {
        let mut host = HostSpec::default();
        let name = text
            .split(',')
            .find_map(|kv| kv.trim().strip_prefix("name="))
            .unwrap_or("?")
            .to_owned();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(&name, format!("{pair}: write KEY=VALUE")))?;
            let value = value.trim();
            let parsed = |what: &str, e: &dyn std::fmt::Display| {
                bad(&name, format!("{key}: {value:?} is not {what}: {e}"))
            };
            match key.trim() {
                "name" => host.name = value.to_owned(),
                "port" => host.port = value.to_owned(),
                "mac" => host.mac = Some(value.parse().map_err(|e| parsed("a MAC", &e))?),
                "vlan" => host.vlan = Some(value.parse().map_err(|e| parsed("a VLAN id", &e))?),
                "ipv4" => {
                    host.ipv4 =
                        Some(value.parse().map_err(|e| {
                            parsed("an IPv4 address with its prefix (A.B.C.D/LEN)", &e)
                        })?)
                }
                "gateway" => {
                    host.gateway = Some(value.parse().map_err(|e| parsed("an IPv4 address", &e))?)
                }
                "ipv6" => {
                    host.ipv6 =
                        Some(value.parse().map_err(|e| {
                            parsed("an IPv6 address with its prefix (ADDR/LEN)", &e)
                        })?)
                }
                "gateway6" => {
                    host.gateway6 = Some(value.parse().map_err(|e| parsed("an IPv6 address", &e))?)
                }
                other => {
                    return Err(bad(
                        &name,
                        format!(
                            "{other}: no such key (keys: name, port, mac, vlan, ipv4, gateway, ipv6, gateway6)"
                        ),
                    ));
                }
            }
        }
        host.check()?;
        Ok(host)
    }
}

/// Most hosts one port answers for, of each family: the size of the XDP hosts tables
/// (`hosts_v4`, and `hosts_v6` with two entries a host, in bpf/hosts.h).
pub const HOSTS_PER_PORT: usize = 1024;
/// Most hosts one check takes, on all ports together.
pub const MAX_HOSTS: usize = 16 * HOSTS_PER_PORT;

/// Refuses more hosts than the ports' tables hold, before any is checked or opened.
fn check_host_count(hosts: &[HostSpec]) -> Result<(), StreamError> {
    if hosts.len() > MAX_HOSTS {
        return Err(bad(
            &hosts[0].name,
            format!(
                "{} hosts, over the {MAX_HOSTS} one test bed holds",
                hosts.len()
            ),
        ));
    }
    let mut per_port: HashMap<&str, (usize, usize)> = HashMap::new();
    for h in hosts {
        let n = per_port.entry(h.port.as_str()).or_default();
        n.0 += usize::from(h.ipv4.is_some());
        n.1 += usize::from(h.ipv6.is_some());
        if n.0.max(n.1) > HOSTS_PER_PORT {
            return Err(bad(
                &h.name,
                format!(
                    "over {HOSTS_PER_PORT} hosts of one address family on port {}, the most a \
                 port answers for: spread them over more ports",
                    h.port
                ),
            ));
        }
    }
    Ok(())
}

/// Checks every host, that no two share a name or an address on one port, and that every
/// stream's `from` and `to` name one of them.
pub fn check_hosts(hosts: &[HostSpec], streams: &[crate::StreamSpec]) -> Result<(), StreamError> {
    check_host_count(hosts)?;
    crate::spec::check_stream_count(streams)?;
    // Each host against the earlier ones of its name or an address of its: looked up, not
    // compared pair by pair (thousands of hosts are checked at once).
    let mut names: HashMap<&str, usize> = HashMap::with_capacity(hosts.len());
    let mut holders: HashMap<IpAddr, Vec<usize>> = HashMap::with_capacity(hosts.len());
    for (i, h) in hosts.iter().enumerate() {
        h.check()?;
        if names.insert(h.name.as_str(), i).is_some() {
            return Err(bad(&h.name, "two hosts of this name"));
        }
        let addrs = [
            h.ipv4.map(|n| IpAddr::V4(n.addr())),
            h.ipv6.map(|n| IpAddr::V6(n.addr())),
        ];
        for addr in addrs.into_iter().flatten() {
            let earlier = holders.entry(addr).or_default();
            for o in earlier.iter().map(|&j| &hosts[j]) {
                if o.port == h.port && o.vlan == h.vlan {
                    return Err(bad(
                        &h.name,
                        format!("it has the address of host {} on the same port", o.name),
                    ));
                }
                // On two ports, each would answer ARP/ND for it and flows to it could not
                // tell which port counts them: found only after seconds of ARP otherwise.
                if o.port != h.port && (o.lag.is_none() || o.lag != h.lag) {
                    return Err(bad(
                        &h.name,
                        format!(
                            "{addr} is also host {}'s, on port {}: give each host its own address",
                            o.name, o.port
                        ),
                    ));
                }
            }
            earlier.push(i);
        }
    }
    let names_set = &names;
    let find = |n: &str| names_set.contains_key(n);
    for s in streams {
        for (key, name) in [("from", &s.from), ("to", &s.to)] {
            if let Some(n) = name
                && !find(n)
            {
                return Err(StreamError::UnknownHost {
                    stream: s.name.clone(),
                    key,
                    name: n.clone(),
                });
            }
        }
        if s.from.is_some() && s.from == s.to {
            return Err(StreamError::Invalid {
                stream: s.name.clone(),
                why: format!(
                    "from and to are both host {:?}: a host sends to another host, not to itself",
                    s.from.as_deref().unwrap_or_default()
                ),
            });
        }
        if s.from.is_some() != s.to.is_some() {
            return Err(StreamError::Invalid {
                stream: s.name.clone(),
                why: "from and to go together: name the host it leaves from and the one it goes to"
                    .into(),
            });
        }
        check_pairs(hosts, &names, s)?;
    }
    Ok(())
}

/// A stream's further pairs: known hosts, none to itself, every sender on `from`'s port and
/// every receiver on `to`'s (one port sends the stream, one receiver counts it).
fn check_pairs(
    hosts: &[HostSpec],
    names: &HashMap<&str, usize>,
    s: &crate::StreamSpec,
) -> Result<(), StreamError> {
    if s.pairs.is_empty() {
        return Ok(());
    }
    let invalid = |why: String| StreamError::Invalid {
        stream: s.name.clone(),
        why,
    };
    let (Some(from), Some(to)) = (&s.from, &s.to) else {
        return Err(invalid(
            "pairs follow the first pair, from and to: name those too".into(),
        ));
    };
    let port = |n: &str| {
        names
            .get(n)
            .map(|&i| hosts[i].port.as_str())
            .ok_or_else(|| StreamError::UnknownHost {
                stream: s.name.clone(),
                key: "pairs",
                name: n.to_owned(),
            })
    };
    let (tx, rx) = (port(from)?, port(to)?);
    for (a, b) in &s.pairs {
        if a == b {
            return Err(invalid(format!(
                "pair {a:?} → {b:?}: a host sends to another host, not to itself"
            )));
        }
        for (name, end, want, side) in [
            (a, port(a)?, tx, "leaves from"),
            (b, port(b)?, rx, "arrives at"),
        ] {
            if end != want {
                return Err(invalid(format!(
                    "host {name:?} is on port {end}, but the stream {side} port {want}: give each port its own stream"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn west() -> HostSpec {
        "name=west,port=lab0,ipv4=198.18.0.1/24,gateway=198.18.0.254,ipv6=2001:2::1/64,gateway6=2001:2::fe,vlan=100"
            .parse()
            .unwrap()
    }

    #[test]
    fn a_host_flag_reads_the_tables_keys() {
        let h = west();
        assert_eq!(h.name, "west");
        assert_eq!(h.port, "lab0");
        assert_eq!(h.vlan, Some(100));
        assert_eq!(h.ipv4.unwrap().prefix_len(), 24);
        let t: HostSpec = toml::from_str(
            "name = \"west\"\nport = \"lab0\"\nipv4 = \"198.18.0.1/24\"\ngateway = \"198.18.0.254\"\nipv6 = \"2001:2::1/64\"\ngateway6 = \"2001:2::fe\"\nvlan = 100\n",
        )
        .unwrap();
        assert_eq!(t, h);
    }

    #[test]
    fn a_bgp_sub_table_reads_with_its_defaults_and_refuses_unknown_keys() {
        let t: HostSpec = toml::from_str(
            "name = \"west\"\nport = \"lab0\"\nipv4 = \"198.18.0.1/30\"\n[bgp]\nas = 65201\n\
             routes = [{ prefix = \"100.0.0.0/24\", count = 100, communities = [\"1:2\"] }]\n",
        )
        .unwrap();
        let b = t.bgp.unwrap();
        assert_eq!((b.asn, b.peer, b.ibgp), (65201, None, false));
        let r = &b.routes[0];
        assert_eq!(
            (r.count, r.step, r.prefix.to_string()),
            (100, 1, "100.0.0.0/24".into())
        );
        assert_eq!(r.communities, ["1:2"]);
        let e =
            toml::from_str::<HostSpec>("name = \"w\"\nport = \"p\"\n[bgp]\nas = 1\nbogus = 2\n")
                .unwrap_err();
        assert!(e.to_string().contains("unknown field `bogus`"), "{e}");
        // `--host` keeps to flat keys: a BGP host is a file's.
        assert!("name=w,port=p,bgp=1".parse::<HostSpec>().is_err());
        let t: HostSpec = toml::from_str(
            "name = \"w\"\nport = \"p\"\nipv4 = \"198.18.0.1/30\"\n[ospf]\n\
             routes = [{ prefix = \"100.0.0.0/24\", count = 3 }]\n[isis]\nlevel = \"l1\"\n",
        )
        .unwrap();
        let o = t.ospf.unwrap();
        assert!(o.point_to_point && o.area.is_none() && o.routes[0].count == 3);
        assert_eq!(o.routes[0].step, 1);
        let i = t.isis.unwrap();
        assert_eq!((i.level.as_deref(), i.point_to_point), (Some("l1"), true));
        assert!(
            toml::from_str::<HostSpec>("name = \"w\"\nport = \"p\"\n[ospf]\nbogus = 2\n").is_err()
        );
    }

    /// A device on a LAG is a host on each member port with the device's address: hosts of one
    /// LAG share it across ports; other hosts, or two of one LAG on one port, do not.
    #[test]
    fn hosts_of_one_lag_share_their_address_across_its_ports() {
        let on = |name: &str, port: &str, lag: Option<&str>| HostSpec {
            lag: lag.map(str::to_owned),
            ..format!("name={name},port={port},ipv4=10.0.0.1/24")
                .parse()
                .unwrap()
        };
        check_hosts(
            &[on("a", "p1", Some("l")), on("a@p2", "p2", Some("l"))],
            &[],
        )
        .unwrap();
        for pair in [
            [on("a", "p1", Some("l")), on("b", "p2", Some("m"))],
            [on("a", "p1", Some("l")), on("b", "p2", None)],
            [on("a", "p1", None), on("b", "p2", None)],
        ] {
            let e = check_hosts(&pair, &[]).unwrap_err();
            assert!(e.to_string().contains("is also host a's"), "{e}");
        }
        let e =
            check_hosts(&[on("a", "p1", Some("l")), on("b", "p1", Some("l"))], &[]).unwrap_err();
        assert!(e.to_string().contains("on the same port"), "{e}");
    }

    /// Issue 40 #5: what can be told wrong from the hosts alone is refused when they are
    /// read, before any port opens or any ARP goes out.
    #[test]
    fn no_host_addresses_and_no_flow_that_only_arp_would_have_found_wrong() {
        for (text, says) in [
            (
                "name=a,port=p,ipv4=10.0.0.0/24",
                "network address of 10.0.0.0/24",
            ),
            (
                "name=a,port=p,ipv4=10.0.0.255/24",
                "broadcast address of 10.0.0.0/24",
            ),
            (
                "name=a,port=p,ipv4=10.0.0.1/24,gateway=10.0.0.255",
                "gateway: 10.0.0.255 is the broadcast address",
            ),
            (
                "name=a,port=p,ipv4=10.0.0.1/24,mac=00:00:00:00:00:00",
                "mac: 00:00:00:00:00:00",
            ),
        ] {
            let e = text.parse::<HostSpec>().unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        // A /31 (RFC 3021) and a /32 have neither: both their addresses are hosts'.
        for text in [
            "name=a,port=p,ipv4=10.0.0.0/31",
            "name=a,port=p,ipv4=10.0.0.1/31",
            "name=a,port=p,ipv4=10.0.0.7/32",
        ] {
            text.parse::<HostSpec>().unwrap();
        }
        let host = |t: &str| t.parse::<HostSpec>().unwrap();
        let a = host("name=a,port=p0,ipv4=10.0.0.1/24");
        let b = host("name=b,port=p1,ipv4=10.0.0.1/24");
        let e = check_hosts(&[a.clone(), b], &[]).unwrap_err().to_string();
        assert!(e.contains("10.0.0.1") && e.contains("host a"), "{e}");
        let b6 = host("name=b,port=p1,ipv6=2001:2::1/64");
        let a6 = host("name=a,port=p0,ipv6=2001:2::1/64");
        let e = check_hosts(&[a6, b6], &[]).unwrap_err().to_string();
        assert!(e.contains("2001:2::1") && e.contains("host a"), "{e}");
        let b = host("name=b,port=p1,ipv4=10.0.0.2/24");
        check_hosts(&[a.clone(), b.clone()], &[]).unwrap();
        let to_itself = crate::StreamSpec {
            name: "a-a".into(),
            from: Some("a".into()),
            to: Some("a".into()),
            ..crate::StreamSpec::default()
        };
        let e = check_hosts(&[a.clone(), b.clone()], &[to_itself])
            .unwrap_err()
            .to_string();
        assert!(e.contains("a-a") && e.contains("itself"), "{e}");
        // Further pairs: known hosts, senders on from's port, receivers on to's.
        let c = host("name=c,port=p0,ipv4=10.0.0.3/24");
        let d = host("name=d,port=p1,ipv4=10.0.0.4/24");
        let round = |pairs: &[(&str, &str)]| crate::StreamSpec {
            name: "round".into(),
            from: Some("a".into()),
            to: Some("b".into()),
            pairs: pairs
                .iter()
                .map(|(x, y)| (x.to_string(), y.to_string()))
                .collect(),
            ..crate::StreamSpec::default()
        };
        let all = [a, b, c, d];
        check_hosts(&all, &[round(&[("c", "d"), ("a", "d")])]).unwrap();
        let e = check_hosts(&all, &[round(&[("d", "b")])])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("host \"d\" is on port p1") && e.contains("leaves from port p0"),
            "{e}"
        );
        let e = check_hosts(&all, &[round(&[("c", "x")])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"x\""), "{e}");
        let e = check_hosts(&all, &[round(&[("c", "c")])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("itself"), "{e}");
    }

    #[test]
    fn bad_hosts_are_refused_naming_the_key() {
        for (text, says) in [
            ("name=a,port=p", "give it an address"),
            ("port=p,ipv4=10.0.0.1/24", "needs a name"),
            ("name=a,ipv4=10.0.0.1/24", "port"),
            ("name=a,port=p,ipv4=10.0.0.1", "ipv4"),
            (
                "name=a,port=p,ipv4=10.0.0.1/24,gateway=10.0.1.1",
                "gateway: 10.0.1.1",
            ),
            ("name=a,port=p,ipv4=10.0.0.1/24,gateway=10.0.0.1", "gateway"),
            ("name=a,port=p,ipv4=10.0.0.1/24,vlan=4095", "vlan"),
            (
                "name=a,port=p,ipv4=10.0.0.1/24,mac=01:00:5e:00:00:01",
                "group address",
            ),
            (
                "name=a,port=p,ipv4=10.0.0.1/24,colour=red",
                "colour: no such key",
            ),
            (
                "name=a,port=p,gateway6=2001:2::1,ipv4=10.0.0.1/24",
                "gateway6 without",
            ),
        ] {
            let e = text.parse::<HostSpec>().unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
