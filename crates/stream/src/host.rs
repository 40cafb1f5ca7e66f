//! Emulated hosts, as a stream file's `[[host]]` tables and `--host` flags declare them: a
//! name, the port it lives on, its MAC, an optional VLAN, IPv4 and/or IPv6 addresses with their
//! prefix and gateway. Streams name hosts (`from`, `to`) and take their addresses from them;
//! the session answers ARP/ND for the hosts and resolves their next hops.
//!
//! One syntax everywhere: `--host` takes the table's keys as `key=value` pairs, so
//! `--host name=west,port=lab0,ipv4=198.18.0.1/24,gateway=198.18.0.254` is the table
//! `{ name = "west", port = "lab0", ipv4 = "198.18.0.1/24", gateway = "198.18.0.254" }`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{Ipv4Net, Ipv6Net};
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
        match (self.gateway, self.ipv4) {
            (Some(_), None) => return Err(bad(name, "gateway without an ipv4 address")),
            (Some(g), Some(net)) if !net.contains(&g) || g == net.addr() => {
                return Err(bad(
                    name,
                    format!("gateway: {g} is not another address of {net}"),
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

/// Checks every host, that no two share a name or an address on one port, and that every
/// stream's `from` and `to` name one of them.
pub fn check_hosts(hosts: &[HostSpec], streams: &[crate::StreamSpec]) -> Result<(), StreamError> {
    for (i, h) in hosts.iter().enumerate() {
        h.check()?;
        for o in &hosts[..i] {
            if o.name == h.name {
                return Err(bad(&h.name, "two hosts of this name"));
            }
            let same_v4 = h.ipv4.is_some() && h.ipv4.map(|n| n.addr()) == o.ipv4.map(|n| n.addr());
            let same_v6 = h.ipv6.is_some() && h.ipv6.map(|n| n.addr()) == o.ipv6.map(|n| n.addr());
            if o.port == h.port && o.vlan == h.vlan && (same_v4 || same_v6) {
                return Err(bad(
                    &h.name,
                    format!("it has the address of host {} on the same port", o.name),
                ));
            }
        }
    }
    let find = |n: &str| hosts.iter().any(|h| h.name == n);
    for s in streams {
        for (key, name) in [("from", &s.from), ("to", &s.to)] {
            if let Some(n) = name
                && !find(n)
            {
                return Err(StreamError::Invalid {
                    stream: s.name.clone(),
                    why: format!(
                        "{key}: no host named {n:?} (declare it in a [[host]] table or with --host)"
                    ),
                });
            }
        }
        if s.from.is_some() != s.to.is_some() {
            return Err(StreamError::Invalid {
                stream: s.name.clone(),
                why: "from and to go together: name the host it leaves from and the one it goes to"
                    .into(),
            });
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
