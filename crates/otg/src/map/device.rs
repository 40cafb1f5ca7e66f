//! The `devices` node: each device's ethernets and their IPv4/IPv6 address objects become
//! linerate hosts (`HostSpec`), one per ethernet and address, named by the address object, on
//! the port the ethernet is connected to. linerate answers ARP/ND and ping for them and
//! resolves their gateways; the control planes a device may also hold are refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{Ipv4Net, Ipv6Net};
use linerate_stream::HostSpec;
use linerate_wire::Mac;

use super::{Cx, HostPlan, PortPlan, int};
use crate::model::*;

/// An address object's family: what its keys hold and how far its prefix goes.
#[derive(Clone, Copy)]
struct Family {
    key: &'static str,
    max_prefix: u8,
    default_prefix: u8,
}

const V4: Family = Family {
    key: "ipv4_addresses",
    max_prefix: 32,
    default_prefix: 24,
};
const V6: Family = Family {
    key: "ipv6_addresses",
    max_prefix: 128,
    default_prefix: 64,
};

/// What an ethernet gives each of its hosts.
struct Link<'a> {
    device: &'a str,
    ethernet: &'a str,
    port: &'a PortPlan,
    mac: Option<Mac>,
    vlan: Option<u16>,
    /// The LAG the ethernet is connected to and which member `port` is.
    lag: Option<(String, usize)>,
}

impl Cx {
    pub(super) fn devices(&mut self, given: &[Device], ports: &[PortPlan]) -> Vec<HostPlan> {
        let mut hosts = Vec::new();
        let mut ethernets: Vec<&str> = Vec::new();
        for (i, d) in given.iter().enumerate() {
            let path = format!("devices[{i}]");
            self.rest(&path, &d.rest);
            if d.name.is_empty() {
                self.refuse(format!("{path}.name"), "a device needs a name");
            }
            for (j, e) in d.ethernets.iter().enumerate() {
                let at = format!("{path}.ethernets[{j}]");
                if ethernets.contains(&e.name.as_str()) {
                    self.refuse(
                        format!("{at}.name"),
                        format!("ethernet name '{}' is used twice", e.name),
                    );
                }
                ethernets.push(&e.name);
                self.ethernet_hosts(&at, &d.name, e, ports, &mut hosts);
            }
        }
        hosts
    }

    fn ethernet_hosts(
        &mut self,
        at: &str,
        device: &str,
        e: &DeviceEthernet,
        ports: &[PortPlan],
        hosts: &mut Vec<HostPlan>,
    ) {
        self.rest(at, &e.rest);
        if e.name.is_empty() {
            self.refuse(format!("{at}.name"), "an ethernet needs a name");
        }
        let port = self.connection(at, e.connection.as_ref(), ports);
        let mac = e.mac.as_deref().and_then(|m| match m.parse::<Mac>() {
            Ok(mac) if mac.0[0] & 1 == 0 => Some(mac),
            _ => {
                self.refuse(
                    format!("{at}.mac"),
                    format!("'{m}' is not a unicast MAC address"),
                );
                None
            }
        });
        if let Some(mtu) = &e.mtu
            && int(mtu) != Some(1500)
        {
            self.refuse(
                format!("{at}.mtu"),
                "linerate does not set the MTU: it uses the interface's (set it with ip link)",
            );
        }
        let vlan = self.device_vlans(at, &e.vlans);
        if e.ipv4_addresses.is_empty() && e.ipv6_addresses.is_empty() {
            self.refuse(
                at,
                "an ethernet without an address answers nothing and sends nothing: give it ipv4_addresses or ipv6_addresses",
            );
        }
        let Some((members, lag)) = port else {
            return;
        };
        if lag.is_some() && mac.is_none() {
            self.refuse(
                format!("{at}.mac"),
                "a device on a LAG needs its own MAC: it answers on every member with it",
            );
            return;
        }
        for (m, port) in members.into_iter().enumerate() {
            let link = Link {
                device,
                ethernet: &e.name,
                port,
                mac,
                vlan,
                lag: lag.clone().map(|l| (l, m)),
            };
            for (family, list) in [(V4, &e.ipv4_addresses), (V6, &e.ipv6_addresses)] {
                for (k, a) in list.iter().enumerate() {
                    let ap = format!("{at}.{}[{k}]", family.key);
                    if m == 0 && hosts.iter().any(|h: &HostPlan| h.spec.name == a.name) {
                        self.refuse(
                            format!("{ap}.name"),
                            format!("address name '{}' is used twice", a.name),
                        );
                        continue;
                    }
                    // The other members' hosts would earn the first's refusals again.
                    let said = self.refusals.len();
                    if let Some(h) = self.address(&ap, a, family, &link) {
                        hosts.push(h);
                    }
                    if m > 0 {
                        self.refusals.truncate(said);
                    }
                }
            }
        }
    }

    /// The port an ethernet is connected to, or the members of the LAG it is connected to
    /// with the LAG's name.
    fn connection<'p>(
        &mut self,
        at: &str,
        c: Option<&EthernetConnection>,
        ports: &'p [PortPlan],
    ) -> Option<(Vec<&'p PortPlan>, Option<String>)> {
        let p = format!("{at}.connection");
        let Some(c) = c else {
            self.refuse(p, "an ethernet needs connection.port_name");
            return None;
        };
        self.rest(&p, &c.rest);
        match (c.choice.as_deref(), c.port_name.as_deref()) {
            (Some("lag_name"), _) => {
                let name = c.lag_name.as_deref().unwrap_or_default();
                let Some(lag) = self.lag_specs.iter().find(|l| l.name == name) else {
                    self.refuse(format!("{p}.lag_name"), format!("no LAG is named '{name}'"));
                    return None;
                };
                let members: Vec<&PortPlan> = lag
                    .members
                    .iter()
                    .filter_map(|m| ports.iter().find(|q| q.name == m.port))
                    .collect();
                // A LAG whose ports were all refused is refused there already.
                (!members.is_empty()).then(|| (members, Some(name.to_owned())))
            }
            (Some("port_name") | None, Some(name)) => {
                let found = ports.iter().find(|q| q.name == name);
                if found.is_none() {
                    self.refuse(
                        format!("{p}.port_name"),
                        format!("no port is named '{name}'"),
                    );
                }
                found.map(|q| (vec![q], None))
            }
            (Some("port_name") | None, None) => {
                self.refuse(format!("{p}.port_name"), "give the port's name");
                None
            }
            (Some(other), _) => {
                self.refuse(
                    format!("{p}.choice"),
                    format!(
                        "'{other}' is not supported: connect the ethernet to a port (port_name) \
                         or a LAG (lag_name)"
                    ),
                );
                None
            }
        }
    }

    /// The one 802.1Q tag of an ethernet's frames, if any.
    fn device_vlans(&mut self, at: &str, vlans: &[DeviceVlan]) -> Option<u16> {
        for i in 1..vlans.len() {
            self.refuse(
                format!("{at}.vlans[{i}]"),
                "one VLAN tag per ethernet (stacked tags are not supported)",
            );
        }
        let v = vlans.first()?;
        let p = format!("{at}.vlans[0]");
        self.rest(&p, &v.rest);
        if v.tpid.as_deref().is_some_and(|t| t != "x8100") {
            self.refuse(
                format!("{p}.tpid"),
                "linerate tags with TPID 0x8100 (x8100)",
            );
        }
        if v.priority.as_ref().is_some_and(|pr| int(pr) != Some(0)) {
            self.refuse(
                format!("{p}.priority"),
                "a host's tag has priority 0 (a flow's own vlan header may set it)",
            );
        }
        // The schema's default id is 1.
        match v.id.as_ref().map_or(Some(1), int) {
            Some(id @ 1..=4094) => Some(id as u16),
            _ => {
                self.refuse(format!("{p}.id"), "a VLAN id is 1 to 4094");
                None
            }
        }
    }

    /// One address object as a host.
    fn address(&mut self, ap: &str, a: &DeviceIp, family: Family, link: &Link) -> Option<HostPlan> {
        let before = self.refusals.len();
        self.rest(ap, &a.rest);
        if a.name.is_empty() {
            self.refuse(
                format!("{ap}.name"),
                "an address needs a name flows can refer to",
            );
        }
        let addr = self.ip(&format!("{ap}.address"), a.address.as_deref(), family);
        let gateway = self.ip(&format!("{ap}.gateway"), a.gateway.as_deref(), family);
        let prefix = match a.prefix.as_ref().map(int) {
            None => Some(family.default_prefix),
            Some(Some(p)) if (1..=u128::from(family.max_prefix)).contains(&p) => Some(p as u8),
            Some(_) => {
                self.refuse(
                    format!("{ap}.prefix"),
                    format!("a prefix length is 1 to {}", family.max_prefix),
                );
                None
            }
        };
        let gateway_mac = self.gateway_mac(&format!("{ap}.gateway_mac"), a.gateway_mac.as_ref());
        let (Some(addr), Some(gateway), Some(prefix)) = (addr, gateway, prefix) else {
            return None;
        };
        // A device on a LAG: the first member's host is the address object's, the others are
        // its siblings, named by their ports.
        let name = match &link.lag {
            Some((_, m)) if *m > 0 => format!("{}@{}", a.name, link.port.name),
            _ => a.name.clone(),
        };
        let mut spec = HostSpec {
            name,
            port: link.port.location.to_string(),
            mac: link.mac,
            vlan: link.vlan,
            lag: link.lag.as_ref().map(|(l, _)| l.clone()),
            ..HostSpec::default()
        };
        // An unspecified gateway (0.0.0.0, ::) is snappi's way of saying none: on-link only.
        let gateway = (!gateway.is_unspecified()).then_some(gateway);
        match (addr, gateway) {
            (IpAddr::V4(a), g) => {
                spec.ipv4 = Ipv4Net::new(a, prefix).ok();
                spec.gateway = g.and_then(|g| match g {
                    IpAddr::V4(g) => Some(g),
                    IpAddr::V6(_) => None,
                });
            }
            (IpAddr::V6(a), g) => {
                spec.ipv6 = Ipv6Net::new(a, prefix).ok();
                spec.gateway6 = g.and_then(|g| match g {
                    IpAddr::V6(g) => Some(g),
                    IpAddr::V4(_) => None,
                });
            }
        }
        if let Err(e) = spec.check() {
            self.refuse(ap, e.to_string());
        }
        if gateway_mac.is_some() && gateway.is_none() {
            self.refuse(
                format!("{ap}.gateway_mac"),
                "a gateway MAC without a gateway: give the gateway",
            );
        }
        (self.refusals.len() == before).then(|| HostPlan {
            spec,
            device: link.device.to_owned(),
            ethernet: link.ethernet.to_owned(),
            port: link.port.name.clone(),
            gateway_mac,
            lag: link.lag.clone(),
        })
    }

    /// An address of the family, required.
    fn ip(&mut self, path: &str, text: Option<&str>, family: Family) -> Option<IpAddr> {
        let Some(text) = text else {
            self.refuse(path, "required");
            return None;
        };
        let parsed = if family.max_prefix == 32 {
            text.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
        } else {
            text.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
        };
        if parsed.is_none() {
            let which = if family.max_prefix == 32 {
                "IPv4"
            } else {
                "IPv6"
            };
            self.refuse(path, format!("'{text}' is not an {which} address"));
        }
        parsed
    }

    /// The gateway's MAC when given (`value`); None for `auto` (resolved).
    fn gateway_mac(&mut self, path: &str, g: Option<&DeviceGatewayMac>) -> Option<Mac> {
        let g = g?;
        self.rest(path, &g.rest);
        match g.choice.as_deref() {
            None | Some("auto") => None,
            Some("value") => match g.value.as_deref().map(str::parse::<Mac>) {
                Some(Ok(m)) if m.0[0] & 1 == 0 && m.0 != [0; 6] => Some(m),
                _ => {
                    self.refuse(
                        format!("{path}.value"),
                        "give the gateway's unicast MAC address",
                    );
                    None
                }
            },
            Some(other) => {
                self.refuse(
                    format!("{path}.choice"),
                    format!("'{other}' is neither auto nor value"),
                );
                None
            }
        }
    }
}

/// Whether a device key names a protocol linerate's hosts do not speak.
pub(super) fn is_control_plane(key: &str) -> bool {
    matches!(
        key,
        "rsvp"
            | "vxlan"
            | "dhcp_server"
            | "macsec"
            | "rocev2"
            | "bmp"
            | "ipv4_loopbacks"
            | "ipv6_loopbacks"
            | "dhcpv4_interfaces"
            | "dhcpv6_interfaces"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::{Mapped, Refusals, map_config, parse_config};

    /// Two devices on a router's two sides and a flow each way between their addresses, as
    /// snappi 1.60.0 serialises them (its defaults included).
    fn routed() -> Value {
        let device = |n: u8, port: &str, addr: &str, gw: &str| {
            json!({
                "name": format!("d{n}"),
                "ethernets": [{
                    "name": format!("e{n}"),
                    "connection": {"choice": "port_name", "port_name": port},
                    "mac": format!("02:00:00:00:00:0{n}"),
                    "mtu": 1500,
                    "ipv4_addresses": [{
                        "name": format!("ip{n}"), "address": addr, "gateway": gw, "prefix": 30,
                        "gateway_mac": {"choice": "auto", "auto": "00:00:00:00:00:00"}
                    }]
                }]
            })
        };
        let flow = |name: &str, from: &str, to: &str| {
            json!({
                "name": name,
                "tx_rx": {"choice": "device", "device": {
                    "mode": "mesh", "bidirectional": false,
                    "tx_names": [from], "rx_names": [to]}},
                "packet": [
                    {"choice": "ethernet", "ethernet": {}},
                    {"choice": "ipv4", "ipv4": {}},
                    {"choice": "udp", "udp": {}}
                ],
                "duration": {"choice": "fixed_packets", "fixed_packets": {"packets": 10000}},
                "metrics": {"enable": true}
            })
        };
        json!({
            "ports": [{"name": "p1", "location": "lr0"}, {"name": "p2", "location": "lr1@lr-sink"}],
            "devices": [
                device(1, "p1", "198.18.0.2", "198.18.0.1"),
                device(2, "p2", "198.19.0.2", "198.19.0.1")
            ],
            "flows": [flow("east", "ip1", "ip2"), flow("west", "ip2", "ip1")]
        })
    }

    fn map(v: &Value) -> Result<Mapped, Refusals> {
        map_config(&parse_config(v.to_string().as_bytes())?)
    }

    fn refusals(v: &Value) -> Vec<(String, String)> {
        map(v)
            .unwrap_err()
            .0
            .into_iter()
            .map(|r| (r.path, r.why))
            .collect()
    }

    fn refused_at(v: &Value, path: &str) -> String {
        let all = refusals(v);
        all.iter()
            .find(|(p, _)| p == path)
            .map(|(_, why)| why.clone())
            .unwrap_or_else(|| panic!("{path} not in {all:?}"))
    }

    #[test]
    fn each_address_is_a_host_on_its_ethernets_port() {
        let m = map(&routed()).unwrap();
        assert_eq!(m.hosts.len(), 2);
        let h = &m.hosts[1];
        assert_eq!((h.ethernet.as_str(), h.port.as_str()), ("e2", "p2"));
        assert_eq!(h.spec.name, "ip2");
        assert_eq!(h.spec.port, "lr1@lr-sink");
        assert_eq!(h.spec.mac.unwrap().to_string(), "02:00:00:00:00:02");
        assert_eq!(h.spec.ipv4.unwrap().to_string(), "198.19.0.2/30");
        assert_eq!(h.spec.gateway.unwrap().to_string(), "198.19.0.1");
        assert_eq!((h.spec.vlan, h.gateway_mac), (None, None));
        // Flows between hosts: each leaves by its host's port, no single tx/rx port.
        assert_eq!((m.tx_port.as_deref(), m.rx_port.as_deref()), (None, None));
        let s = &m.streams[1];
        assert_eq!(
            (s.from.as_deref(), s.to.as_deref()),
            (Some("ip2"), Some("ip1"))
        );
        assert_eq!(s.dst_mac, None, "ethernet.dst is left to resolution");
        assert_eq!(
            (m.flows[1].tx_port.as_str(), m.flows[1].rx_port.as_deref()),
            ("p2", Some("p1"))
        );
        assert!(s.signature);
        // One flow per port: not interleaved.
        assert_eq!(s.mode, linerate_stream::Mode::default());
    }

    #[test]
    fn vlans_ipv6_and_a_given_gateway_mac_reach_the_host() {
        let mut c = routed();
        let e = &mut c["devices"][0]["ethernets"][0];
        e["vlans"] = json!([{"name": "v", "id": 100, "priority": 0, "tpid": "x8100"}]);
        e["ipv6_addresses"] = json!([{
            "name": "ip6", "address": "2001:2::2", "gateway": "2001:2::1", "prefix": 64,
            "gateway_mac": {"choice": "value", "value": "02:00:00:00:00:09"}
        }]);
        let m = map(&c).unwrap();
        let h = m.hosts.iter().find(|h| h.spec.name == "ip6").unwrap();
        assert_eq!(h.spec.vlan, Some(100));
        assert_eq!(h.spec.ipv6.unwrap().to_string(), "2001:2::2/64");
        assert_eq!(h.spec.gateway6.unwrap().to_string(), "2001:2::1");
        assert_eq!(h.gateway_mac.unwrap().to_string(), "02:00:00:00:00:09");
        assert_eq!(h.ethernet, "e1");
        // Its IPv4 sibling on the same ethernet shares the tag.
        assert_eq!(m.hosts[0].spec.vlan, Some(100));
        // An IPv4 flow to an IPv6 address is refused, naming the end.
        c["flows"][0]["tx_rx"]["device"]["rx_names"] = json!(["ip6"]);
        assert!(refused_at(&c, "flows[0].tx_rx.device.rx_names[0]").contains("IPv6"));
    }

    #[test]
    fn what_devices_cannot_be_is_refused_by_path() {
        let mut c = routed();
        c["devices"][0]["bgp"] = json!({"router_id": "1.1.1.1"});
        c["devices"][1]["ethernets"][0]["dhcpv4_interfaces"] = json!([{"name": "dh"}]);
        let e = &mut c["devices"][0]["ethernets"][0];
        e["mtu"] = json!(9000);
        e["vlans"] = json!([{"name": "a", "id": 4095}, {"name": "b", "id": 2}]);
        e["connection"] = json!({"choice": "lag_name", "lag_name": "l"});
        let a = &mut c["devices"][1]["ethernets"][0]["ipv4_addresses"][0];
        a["gateway"] = json!("10.0.0.1");
        a["gateway_mac"] = json!({"choice": "value", "value": "01:00:5e:00:00:01"});
        c["flows"][0]["tx_rx"]["device"]["bidirectional"] = json!(true);
        c["flows"][1]["tx_rx"]["device"]["tx_names"] = json!(["e2"]);
        for (path, says) in [
            ("devices[0].bgp", "without a peer"),
            (
                "devices[1].ethernets[0].dhcpv4_interfaces",
                "control planes",
            ),
            ("devices[0].ethernets[0].mtu", "MTU"),
            ("devices[0].ethernets[0].vlans[0].id", "1 to 4094"),
            ("devices[0].ethernets[0].vlans[1]", "one VLAN tag"),
            (
                "devices[0].ethernets[0].connection.lag_name",
                "no LAG is named 'l'",
            ),
            (
                "devices[1].ethernets[0].ipv4_addresses[0]",
                "gateway: 10.0.0.1",
            ),
            (
                "devices[1].ethernets[0].ipv4_addresses[0].gateway_mac.value",
                "unicast",
            ),
            ("flows[0].tx_rx.device.bidirectional", "each direction"),
            (
                "flows[1].tx_rx.device.tx_names[0]",
                "no ipv4 or ipv6 address",
            ),
        ] {
            let why = refused_at(&c, path);
            assert!(why.contains(says), "{path}: {why}");
        }
    }

    #[test]
    fn names_are_unique_and_port_flows_do_not_mix_with_devices() {
        let mut c = routed();
        c["devices"][1]["ethernets"][0]["ipv4_addresses"][0]["name"] = json!("ip1");
        c["devices"][1]["ethernets"][0]["name"] = json!("e1");
        assert!(refused_at(&c, "devices[1].ethernets[0].ipv4_addresses[0].name").contains("twice"));
        assert!(refused_at(&c, "devices[1].ethernets[0].name").contains("twice"));
        let mut c = routed();
        c["flows"][1]["tx_rx"] =
            json!({"choice": "port", "port": {"tx_name": "p1", "rx_names": ["p2"]}});
        assert!(refused_at(&c, "flows[1].tx_rx.port").contains("tx_rx.device"));
        let mut c = routed();
        c["flows"][0]["tx_rx"]["device"]["rx_names"] = json!(["ip2", "ip1"]);
        assert!(
            refused_at(&c, "flows[0].tx_rx.device.rx_names").contains("give each port its own")
        );
        c["devices"][0]["ethernets"][0]["connection"] = json!({"port_name": "nope"});
        assert!(refused_at(&c, "devices[0].ethernets[0].connection.port_name").contains("'nope'"));
    }

    /// `routed()` with a third device on p1 and a fourth on p2.
    fn four_devices() -> Value {
        let mut c = routed();
        for (n, port, addr, gw) in [
            (3, "p1", "198.18.0.6", "198.18.0.5"),
            (4, "p2", "198.19.0.6", "198.19.0.5"),
        ] {
            let mut d = c["devices"][0].clone();
            d["name"] = json!(format!("d{n}"));
            let e = &mut d["ethernets"][0];
            e["name"] = json!(format!("e{n}"));
            e["connection"]["port_name"] = json!(port);
            e["mac"] = json!(format!("02:00:00:00:00:0{n}"));
            e["ipv4_addresses"][0]["name"] = json!(format!("ip{n}"));
            e["ipv4_addresses"][0]["address"] = json!(addr);
            e["ipv4_addresses"][0]["gateway"] = json!(gw);
            c["devices"].as_array_mut().unwrap().push(d);
        }
        c
    }

    #[test]
    fn several_devices_a_side_go_round_their_pairs_one_to_one_or_mesh() {
        let mut c = four_devices();
        // Devices, ethernets and address objects all name hosts.
        c["flows"][0]["tx_rx"]["device"] =
            json!({"mode": "one_to_one", "tx_names": ["d1", "e3"], "rx_names": ["ip2", "d4"]});
        // No packet: between devices it is ethernet and the hosts' IP.
        c["flows"][0]["packet"] = json!([]);
        let m = map(&c).unwrap();
        let s = &m.streams[0];
        assert_eq!(
            (s.from.as_deref(), s.to.as_deref()),
            (Some("ip1"), Some("ip2"))
        );
        assert_eq!(s.pairs, [("ip3".to_string(), "ip4".to_string())]);
        assert_eq!((s.proto, s.ipv6), (linerate_stream::Proto::Ip, false));
        assert_eq!(m.flows[0].rx_port.as_deref(), Some("p2"));
        // Mesh, the default: every sender to every receiver, senders first.
        c["flows"][0]["tx_rx"]["device"] =
            json!({"tx_names": ["ip1", "ip3"], "rx_names": ["e2", "e4"]});
        let m = map(&c).unwrap();
        let s = &m.streams[0];
        let pairs: Vec<(&str, &str)> =
            std::iter::once((s.from.as_deref().unwrap(), s.to.as_deref().unwrap()))
                .chain(s.pairs.iter().map(|(a, b)| (a.as_str(), b.as_str())))
                .collect();
        assert_eq!(
            pairs,
            [
                ("ip1", "ip2"),
                ("ip1", "ip4"),
                ("ip3", "ip2"),
                ("ip3", "ip4")
            ]
        );
    }

    #[test]
    fn the_devices_ports_share_their_layer1_speed_when_they_agree() {
        let mut c = routed();
        assert_eq!(map(&c).unwrap().hosts_link_mbps(), None);
        c["layer1"] = json!([{"name": "l1", "port_names": ["p1", "p2"], "speed": "speed_1_gbps"}]);
        assert_eq!(map(&c).unwrap().hosts_link_mbps(), Some(1000));
        c["layer1"] = json!([
            {"name": "l1", "port_names": ["p1"], "speed": "speed_1_gbps"},
            {"name": "l2", "port_names": ["p2"], "speed": "speed_10_gbps"}
        ]);
        assert_eq!(map(&c).unwrap().hosts_link_mbps(), None);
    }

    #[test]
    fn pairs_that_do_not_match_or_span_ports_are_refused_by_path() {
        let mut c = four_devices();
        c["flows"][0]["tx_rx"]["device"] =
            json!({"mode": "one_to_one", "tx_names": ["ip1", "ip3"], "rx_names": ["ip2"]});
        assert!(
            refused_at(&c, "flows[0].tx_rx.device.mode").contains("2 hosts and rx_names for 1")
        );
        c["flows"][0]["tx_rx"]["device"] = json!({"tx_names": ["ip1", "ip4"], "rx_names": ["ip2"]});
        assert!(
            refused_at(&c, "flows[0].tx_rx.device.tx_names")
                .contains("give each port its own flow")
        );
        c["flows"][0]["tx_rx"]["device"] = json!({"tx_names": ["d9"], "rx_names": ["ip2"]});
        assert!(refused_at(&c, "flows[0].tx_rx.device.tx_names[0]").contains("'d9'"));
        c["flows"][0]["tx_rx"]["device"] = json!({"tx_names": ["ip1"], "rx_names": ["ip1"]});
        assert!(refused_at(&c, "flows[0].tx_rx.device.rx_names[0]").contains("another address"));
        // A device without an address of the packet's family.
        c["flows"][0]["tx_rx"]["device"] = json!({"tx_names": ["d1"], "rx_names": ["ip2"]});
        c["flows"][0]["packet"][1] = json!({"choice": "ipv6", "ipv6": {}});
        assert!(
            refused_at(&c, "flows[0].tx_rx.device.tx_names[0]").contains("no IPv6 address object")
        );
        // Address objects of the other family: each host named once, not once a pair.
        c["flows"][0]["tx_rx"]["device"] =
            json!({"tx_names": ["ip1", "ip3"], "rx_names": ["ip2", "ip4"]});
        let family: Vec<_> = refusals(&c)
            .into_iter()
            .filter(|(_, why)| why.contains("is an IPv4 address"))
            .collect();
        assert_eq!(family.len(), 4, "{family:?}");
    }
}
