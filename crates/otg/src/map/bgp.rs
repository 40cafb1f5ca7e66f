//! `devices[].bgp`: each device with BGP becomes a [`linerate_routing::Device`] whose links are
//! the ethernets its BGP interfaces name (by address object), its peers and route ranges as
//! given; and each route range becomes a place a device flow may leave from or go to
//! ([`RangeEnd`]). Every field that cannot be honoured is refused by its path.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use linerate_routing as routing;

use super::{Cx, HostPlan, PortPlan, int};
use crate::bgp::*;
use crate::model::Device;

/// A route range as a flow's endpoint: the host its sessions leave from, and its prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeEnd {
    pub name: String,
    /// The address object (host) of the range's BGP interface.
    pub host: String,
    /// The first prefix's first address: a flow's source or destination when its headers do
    /// not set one.
    pub first: IpAddr,
    /// How many prefixes, and how far apart, when the range is one block (a destination then
    /// steps over every prefix); None for a range of several blocks.
    pub block: Option<(u32, u128)>,
}

/// An ethernet of the config's devices and its path, for a refusal of its MAC.
pub(super) struct Ethernet<'a> {
    name: &'a str,
    path: String,
}

/// What a device's BGP and IS-IS interfaces are looked up in.
pub(super) struct Scope<'a> {
    pub(super) ports: &'a [PortPlan],
    pub(super) hosts: &'a [HostPlan],
    ethernets: Vec<Ethernet<'a>>,
}

impl<'a> Scope<'a> {
    pub(super) fn of(devices: &'a [Device], ports: &'a [PortPlan], hosts: &'a [HostPlan]) -> Self {
        let ethernets: Vec<Ethernet> = devices
            .iter()
            .enumerate()
            .flat_map(|(i, d)| {
                d.ethernets.iter().enumerate().map(move |(j, e)| Ethernet {
                    name: &e.name,
                    path: format!("devices[{i}].ethernets[{j}]"),
                })
            })
            .collect();
        Scope {
            ports,
            hosts,
            ethernets,
        }
    }
}

impl Cx {
    /// Gives the config's device `name` one more control plane (IS-IS's, OSPF's): `make`
    /// builds it from the device's links, adding those it needs, and `slot` says where it goes.
    /// A device left with no control plane is dropped; one with some is checked whole, a
    /// failure refused at `path`.
    pub(super) fn add_control_plane<T>(
        &mut self,
        routers: &mut Vec<routing::Device>,
        name: &str,
        path: &str,
        make: impl FnOnce(&mut Cx, &mut Vec<routing::Link>) -> Option<T>,
        slot: fn(&mut routing::Device) -> &mut Option<T>,
    ) {
        let at = device_at(routers, name);
        let mut links = std::mem::take(&mut routers[at].links);
        let made = make(self, &mut links);
        let device = &mut routers[at];
        device.links = links;
        *slot(device) = made;
        if !device.has_control_plane() {
            routers.remove(at);
            return;
        }
        if let Err(e) = routers[at].validate() {
            self.refuse(path, e.to_string());
        }
    }
}

/// The index of the device named `name` in `routers`, a new one with no control plane yet when
/// none is (a device's protocols each add to the one device).
fn device_at(routers: &mut Vec<routing::Device>, name: &str) -> usize {
    if let Some(at) = routers.iter().position(|r| r.name == name) {
        return at;
    }
    routers.push(routing::Device {
        name: name.to_owned(),
        links: Vec::new(),
        bgp: None,
        isis: None,
        ospf: None,
        ospf6: None,
        lldp: None,
    });
    routers.len() - 1
}

impl Cx {
    pub(super) fn bgp(
        &mut self,
        devices: &[Device],
        ports: &[PortPlan],
        hosts: &[HostPlan],
    ) -> (Vec<routing::Device>, Vec<RangeEnd>) {
        let scope = Scope::of(devices, ports, hosts);
        let mut out = Vec::new();
        let mut ends = Vec::new();
        for (i, d) in devices.iter().enumerate() {
            let Some(b) = &d.bgp else { continue };
            let path = format!("devices[{i}].bgp");
            if let Some(r) = self.router(&path, &d.name, b, &scope, &mut ends) {
                out.push(r);
            }
        }
        (out, ends)
    }

    fn router(
        &mut self,
        path: &str,
        name: &str,
        b: &DeviceBgp,
        scope: &Scope,
        ends: &mut Vec<RangeEnd>,
    ) -> Option<routing::Device> {
        let hosts = scope.hosts;
        self.rest(path, &b.rest);
        let router_id = match b.router_id.as_deref().map(str::parse::<Ipv4Addr>) {
            Some(Ok(id)) => Some(id),
            Some(Err(_)) => {
                self.refuse(
                    format!("{path}.router_id"),
                    "a router id is an IPv4 address",
                );
                None
            }
            None => {
                self.refuse(format!("{path}.router_id"), "BGP needs a router_id");
                None
            }
        };
        let mut links: Vec<routing::Link> = Vec::new();
        let mut peers = Vec::new();
        for (family, list) in [
            ("ipv4_interfaces", &b.ipv4_interfaces),
            ("ipv6_interfaces", &b.ipv6_interfaces),
        ] {
            let v6 = family == "ipv6_interfaces";
            for (k, iface) in list.iter().enumerate() {
                let ip = format!("{path}.{family}[{k}]");
                self.rest(&ip, &iface.rest);
                let key = if v6 { "ipv6_name" } else { "ipv4_name" };
                let host = iface
                    .ipv4_name
                    .as_deref()
                    .and_then(|n| hosts.iter().find(|h| h.spec.name == n));
                let Some(host) = host.filter(|h| h.spec.ipv6.is_some() == v6) else {
                    self.refuse(
                        format!("{ip}.{key}"),
                        format!(
                            "no {} address object is named '{}'",
                            if v6 { "ipv6" } else { "ipv4" },
                            iface.ipv4_name.as_deref().unwrap_or_default()
                        ),
                    );
                    continue;
                };
                self.link(host, scope, &mut links);
                for (p, peer) in iface.peers.iter().enumerate() {
                    let pp = format!("{ip}.peers[{p}]");
                    if let Some(peer) = self.peer(&pp, peer, v6, &host.spec.name, ends) {
                        peers.push(peer);
                    }
                }
            }
        }
        if peers.is_empty() {
            self.refuse(path, "BGP without a peer: give an interface a peer");
        }
        let device = routing::Device {
            name: name.to_owned(),
            links,
            bgp: Some(routing::Bgp {
                router_id: router_id?,
                peers,
            }),
            isis: None,
            ospf: None,
            ospf6: None,
            lldp: None,
        };
        if let Err(e) = device.validate() {
            self.refuse(path, e.to_string());
        }
        Some(device)
    }

    /// The link of `host`'s ethernet (once per ethernet), with every address of it; on a LAG,
    /// one link per member, each with the device's MAC and addresses (the peer's frames may
    /// come in by any member; the daemon's go out by the first).
    pub(super) fn link(&mut self, host: &HostPlan, scope: &Scope, links: &mut Vec<routing::Link>) {
        let Some(e) = scope.ethernets.iter().find(|e| e.name == host.ethernet) else {
            return;
        };
        let Some(mac) = host.spec.mac else {
            self.refuse(
                format!("{}.mac", e.path),
                "a device with a control plane (BGP, IS-IS, OSPF) needs its own MAC on this ethernet: its daemons sit behind a macvlan of the port with that MAC",
            );
            return;
        };
        let of_ethernet: Vec<&HostPlan> = scope
            .hosts
            .iter()
            .filter(|h| h.ethernet == host.ethernet)
            .collect();
        let mut member_ports: Vec<&str> = Vec::new();
        for h in &of_ethernet {
            if !member_ports.contains(&h.port.as_str()) {
                member_ports.push(&h.port);
            }
        }
        for name in member_ports {
            let Some(port) = scope.ports.iter().find(|p| p.name == name) else {
                continue;
            };
            // An agent's port with its agent: the controller hands the device to it.
            let location = port.location.to_string();
            if links
                .iter()
                .any(|l| l.mac == mac.octets() && l.port == location)
            {
                continue;
            }
            let addrs = of_ethernet
                .iter()
                .filter(|h| h.port == name)
                .flat_map(|h| {
                    let v4 = h.spec.ipv4.map(|n| (IpAddr::V4(n.addr()), n.prefix_len()));
                    let v6 = h.spec.ipv6.map(|n| (IpAddr::V6(n.addr()), n.prefix_len()));
                    v4.into_iter().chain(v6)
                })
                .collect();
            links.push(routing::Link {
                port: location,
                mac: mac.octets(),
                addrs,
            });
        }
    }

    fn peer(
        &mut self,
        path: &str,
        p: &BgpPeer,
        v6: bool,
        host: &str,
        ends: &mut Vec<RangeEnd>,
    ) -> Option<routing::Peer> {
        self.rest(path, &p.rest);
        if p.name.is_empty() {
            self.refuse(format!("{path}.name"), "a peer needs a name");
        }
        let address = match p.peer_address.as_deref().map(str::parse::<IpAddr>) {
            Some(Ok(a)) if a.is_ipv6() == v6 => Some(a),
            _ => {
                self.refuse(
                    format!("{path}.peer_address"),
                    format!(
                        "the peer's {} address is needed",
                        if v6 { "IPv6" } else { "IPv4" }
                    ),
                );
                None
            }
        };
        let kind = match p.as_type.as_deref() {
            Some("ebgp") => Some(routing::PeerKind::Ebgp),
            Some("ibgp") => Some(routing::PeerKind::Ibgp),
            other => {
                self.refuse(
                    format!("{path}.as_type"),
                    format!("'{}' is not ebgp or ibgp", other.unwrap_or_default()),
                );
                None
            }
        };
        let local_as = match p.as_number.as_ref().and_then(int) {
            Some(0) => {
                self.refuse(format!("{path}.as_number"), "AS 0 is reserved (RFC 7607)");
                None
            }
            Some(n) if n <= u128::from(u32::MAX) => Some(n as u32),
            _ => {
                self.refuse(
                    format!("{path}.as_number"),
                    "an AS number of 1 to 4294967295 is needed",
                );
                None
            }
        };
        match p.as_number_width.as_deref() {
            None | Some("four") => {}
            Some("two") if local_as.is_some_and(|a| a <= 65535) => {}
            Some(other) => self.refuse(
                format!("{path}.as_number_width"),
                format!("'{other}': linerate's sessions speak four-octet AS numbers (RFC 6793); 'two' only for an AS below 65536"),
            ),
        }
        if p.traditional_nlri_for_ipv4_routes == Some(false) {
            self.refuse(
                format!("{path}.traditional_nlri_for_ipv4_routes"),
                "IPv4 unicast routes go in the UPDATE's NLRI field (FRR's way): false is not supported",
            );
        }
        let (keepalive, hold, md5) = self.advanced(path, p.advanced.as_ref());
        let mut routes = Vec::new();
        for (family, list) in [("v4_routes", &p.v4_routes), ("v6_routes", &p.v6_routes)] {
            for (i, r) in list.iter().enumerate() {
                let rp = format!("{path}.{family}[{i}]");
                if let Some(r) = self.range(&rp, r, family == "v6_routes", host, ends) {
                    routes.push(r);
                }
            }
        }
        Some(routing::Peer {
            name: p.name.clone(),
            address: address?,
            local_as: local_as?,
            kind: kind?,
            keepalive,
            hold,
            md5,
            routes,
        })
    }

    fn advanced(
        &mut self,
        path: &str,
        a: Option<&BgpAdvanced>,
    ) -> (Option<u16>, Option<u16>, Option<String>) {
        let Some(a) = a else {
            return (None, None, None);
        };
        let p = format!("{path}.advanced");
        // Keys snappi writes with their defaults: accepted when they ask for the default.
        for (key, value) in &a.rest {
            let default = match key.as_str() {
                "update_interval" | "time_to_live" | "passive_mode" | "listen_port"
                | "neighbor_port" => {
                    matches!(
                        (key.as_str(), int(value), value.as_bool()),
                        ("update_interval", Some(0), _)
                            | ("time_to_live", Some(64), _)
                            | ("passive_mode", _, Some(false))
                            | ("listen_port" | "neighbor_port", Some(179), _)
                    )
                }
                _ => false,
            };
            if !default && !value.is_null() {
                self.refuse(
                    format!("{p}.{key}"),
                    "not supported by linerate (FRR's default holds)",
                );
            }
        }
        let mut secs = |key: &str, v: &Option<serde_json::Value>| -> Option<u16> {
            let v = v.as_ref()?;
            match int(v) {
                Some(n) if n <= 65535 => Some(n as u16),
                _ => {
                    self.refuse(format!("{p}.{key}"), "seconds, 0 to 65535");
                    None
                }
            }
        };
        let hold = secs("hold_time_interval", &a.hold_time_interval);
        let keepalive = secs("keep_alive_interval", &a.keep_alive_interval);
        let md5 = a.md5_key.clone().filter(|k| !k.is_empty());
        (keepalive, hold, md5)
    }

    fn range(
        &mut self,
        path: &str,
        r: &BgpRouteRange,
        v6: bool,
        host: &str,
        ends: &mut Vec<RangeEnd>,
    ) -> Option<routing::RouteRange> {
        self.rest(path, &r.rest);
        if r.name.is_empty() {
            self.refuse(format!("{path}.name"), "a route range needs a name");
        }
        let blocks = self.blocks(path, &r.addresses, v6);
        let next_hop = self.next_hop(path, r, v6);
        let (med, origin, local_pref) = self.route_advanced(path, r.advanced.as_ref());
        let communities = self.communities(path, &r.communities);
        let as_path = self.as_path(path, r.as_path.as_ref());
        let range = routing::RouteRange {
            name: r.name.clone(),
            blocks,
            next_hop,
            med,
            origin,
            local_pref,
            communities,
            as_path,
            advertised: true,
        };
        self.range_end(&r.name, host, &range.blocks, &r.addresses, ends);
        Some(range)
    }

    /// A route range's address blocks (OTG's `addresses`), each refused by path when it is not
    /// a block of its family.
    pub(super) fn blocks(
        &mut self,
        path: &str,
        addresses: &[RouteAddress],
        v6: bool,
    ) -> Vec<routing::Block> {
        let mut blocks = Vec::new();
        for (i, a) in addresses.iter().enumerate() {
            let ap = format!("{path}.addresses[{i}]");
            self.rest(&ap, &a.rest);
            let max = if v6 { 128 } else { 32 };
            let addr = a
                .address
                .as_deref()
                .and_then(|s| s.parse::<IpAddr>().ok())
                .filter(|a| a.is_ipv6() == v6);
            let prefix = a
                .prefix
                .as_ref()
                .map_or(Some(if v6 { 64 } else { 24 }), int);
            let count = a.count.as_ref().map_or(Some(1), int);
            let step = a.step.as_ref().map_or(Some(1), int);
            let (Some(addr), Some(prefix), Some(count), Some(step)) = (addr, prefix, count, step)
            else {
                self.refuse(
                    ap,
                    format!(
                        "an {} address, prefix, count and step are needed",
                        if v6 { "IPv6" } else { "IPv4" }
                    ),
                );
                continue;
            };
            if prefix > max
                || count == 0
                || count > u128::from(u32::MAX)
                || step == 0
                || step > u128::from(u32::MAX)
            {
                self.refuse(ap, format!("prefix 0 to {max}, count and step 1 or more"));
                continue;
            }
            let first = IpNet::new(addr, prefix as u8).expect("checked").trunc();
            // OTG names a route by an address inside it: the prefix is what it covers.
            blocks.push(routing::Block {
                first,
                count: count as u32,
                step: step as u32,
            });
        }
        if blocks.is_empty() {
            self.refuse(format!("{path}.addresses"), "a route range needs addresses");
        }
        blocks
    }

    /// Range `name` as a place a device flow may leave from or go to: from the host `host`,
    /// its first address, and the step over its prefixes when it is one block.
    pub(super) fn range_end(
        &self,
        name: &str,
        host: &str,
        blocks: &[routing::Block],
        addresses: &[RouteAddress],
        ends: &mut Vec<RangeEnd>,
    ) {
        if let Some(b) = blocks.first() {
            let size = 1u128 << (b.first.max_prefix_len() - b.first.prefix_len());
            let first = addresses
                .first()
                .and_then(|a| a.address.as_deref())
                .and_then(|s| s.parse().ok())
                .unwrap_or(b.first.network());
            ends.push(RangeEnd {
                name: name.to_owned(),
                host: host.to_owned(),
                first,
                block: (blocks.len() == 1).then(|| (b.count, size * u128::from(b.step))),
            });
        }
    }

    fn next_hop(&mut self, path: &str, r: &BgpRouteRange, v6: bool) -> Option<IpAddr> {
        match r.next_hop_mode.as_deref() {
            None | Some("local_ip") => None,
            Some("manual") => {
                let ty =
                    r.next_hop_address_type
                        .as_deref()
                        .unwrap_or(if v6 { "ipv6" } else { "ipv4" });
                let (key, text) = match ty {
                    "ipv6" => ("next_hop_ipv6_address", r.next_hop_ipv6_address.as_deref()),
                    _ => ("next_hop_ipv4_address", r.next_hop_ipv4_address.as_deref()),
                };
                match text.and_then(|t| t.parse::<IpAddr>().ok()) {
                    Some(a) if a.is_ipv6() == (ty == "ipv6") && !a.is_unspecified() => Some(a),
                    _ => {
                        self.refuse(
                            format!("{path}.{key}"),
                            "a manual next hop needs its address",
                        );
                        None
                    }
                }
            }
            Some(other) => {
                self.refuse(
                    format!("{path}.next_hop_mode"),
                    format!("'{other}' is not local_ip or manual"),
                );
                None
            }
        }
    }

    fn route_advanced(
        &mut self,
        path: &str,
        a: Option<&BgpRouteAdvanced>,
    ) -> (Option<u32>, Option<routing::Origin>, Option<u32>) {
        let Some(a) = a else {
            return (None, Some(routing::Origin::Igp), None);
        };
        let p = format!("{path}.advanced");
        self.rest(&p, &a.rest);
        let mut u32_of =
            |key: &str, v: &Option<serde_json::Value>, on: Option<bool>| -> Option<u32> {
                if on == Some(false) {
                    return None;
                }
                let v = v.as_ref()?;
                match int(v) {
                    Some(n) if n <= u128::from(u32::MAX) => Some(n as u32),
                    _ => {
                        self.refuse(format!("{p}.{key}"), "0 to 4294967295");
                        None
                    }
                }
            };
        let med = u32_of(
            "multi_exit_discriminator",
            &a.multi_exit_discriminator,
            a.include_multi_exit_discriminator,
        );
        let local_pref = u32_of(
            "local_preference",
            &a.local_preference,
            a.include_local_preference,
        );
        let origin = match (a.include_origin, a.origin.as_deref()) {
            (Some(false), _) => None,
            (_, None | Some("igp")) => Some(routing::Origin::Igp),
            (_, Some("egp")) => Some(routing::Origin::Egp),
            (_, Some("incomplete")) => Some(routing::Origin::Incomplete),
            (_, Some(other)) => {
                self.refuse(
                    format!("{p}.origin"),
                    format!("'{other}' is not igp, egp or incomplete"),
                );
                None
            }
        };
        (med, origin, local_pref)
    }

    fn communities(&mut self, path: &str, given: &[BgpCommunity]) -> Vec<(u16, u16)> {
        let mut out = Vec::new();
        for (i, c) in given.iter().enumerate() {
            let cp = format!("{path}.communities[{i}]");
            self.rest(&cp, &c.rest);
            // RFC 1997's well-known values, as FRR's `set community` writes them by number.
            let value = match c.kind.as_deref() {
                None | Some("manual_as_number") => {
                    let a = c.as_number.as_ref().and_then(int).filter(|n| *n <= 65535);
                    let v = c.as_custom.as_ref().and_then(int).filter(|n| *n <= 65535);
                    match (a, v) {
                        (Some(a), Some(v)) => Some((a as u16, v as u16)),
                        _ => {
                            self.refuse(
                                cp,
                                "a community needs as_number and as_custom of 0 to 65535",
                            );
                            None
                        }
                    }
                }
                Some("no_export") => Some((0xffff, 0xff01)),
                Some("no_advertised") => Some((0xffff, 0xff02)),
                Some("no_export_subconfed") => Some((0xffff, 0xff03)),
                Some("llgr_stale") => Some((0xffff, 0x0006)),
                Some("no_llgr") => Some((0xffff, 0x0007)),
                Some(other) => {
                    self.refuse(
                        format!("{cp}.type"),
                        format!("unknown community type '{other}'"),
                    );
                    None
                }
            };
            out.extend(value);
        }
        out
    }

    fn as_path(&mut self, path: &str, a: Option<&BgpAsPath>) -> Vec<u32> {
        let Some(a) = a else {
            return Vec::new();
        };
        let p = format!("{path}.as_path");
        self.rest(&p, &a.rest);
        // The device's own AS always leads on an eBGP session (RFC 4271 §5.1.2; FRR prepends
        // it). snappi writes do_not_include_local_as whenever as_path is touched, so it is
        // taken, with a warning, rather than refused: get_states shows the path as sent.
        match a.as_set_mode.as_deref() {
            None | Some("include_as_seq" | "include_as_set" | "prepend_to_first_segment") => {}
            Some("do_not_include_local_as") => self.warnings.push(format!(
                "{p}.as_set_mode: do_not_include_local_as is read as include_as_seq: an eBGP \
                 session puts the device's own AS first (RFC 4271 5.1.2)"
            )),
            Some(other) => self.refuse(
                format!("{p}.as_set_mode"),
                format!("'{other}' is not supported (include_as_seq and include_as_set are)"),
            ),
        }
        let mut out = Vec::new();
        for (i, s) in a.segments.iter().enumerate() {
            let sp = format!("{p}.segments[{i}]");
            self.rest(&sp, &s.rest);
            if !matches!(s.kind.as_deref(), None | Some("as_seq")) {
                self.refuse(
                    format!("{sp}.type"),
                    "only AS_SEQUENCE segments are supported (FRR prepends a sequence)",
                );
            }
            for (j, n) in s.as_numbers.iter().enumerate() {
                match int(n) {
                    Some(n) if n > 0 && n <= u128::from(u32::MAX) => out.push(n as u32),
                    _ => self.refuse(
                        format!("{sp}.as_numbers[{j}]"),
                        "an AS number of 1 to 4294967295",
                    ),
                }
            }
        }
        out
    }
}
