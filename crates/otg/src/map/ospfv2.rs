//! `devices[].ospfv2`: each device with OSPFv2 gets a [`linerate_routing::Ospf`] on the device
//! its BGP or IS-IS made (or a device of its own), its interfaces the links of the IPv4
//! addresses they name, its route ranges places a device flow may leave from or go to
//! ([`RangeEnd`]). Every field that cannot be honoured is refused by its path; snappi writes
//! every default of an object it creates, so defaults are accepted where FRR does the same.

use std::net::Ipv4Addr;

use linerate_routing as routing;
use serde_json::Value;

use super::bgp::Scope;
use super::{Cx, HostPlan, PortPlan, RangeEnd, int};
use crate::Rest;
use crate::model::Device;
use crate::ospfv2::*;

impl Cx {
    /// Adds OSPFv2 to the devices of `routers` (made by [`Cx::bgp`] and [`Cx::isis`]) or as
    /// devices of their own.
    pub(super) fn ospfv2(
        &mut self,
        devices: &[Device],
        ports: &[PortPlan],
        hosts: &[HostPlan],
        routers: &mut Vec<routing::Device>,
        ends: &mut Vec<RangeEnd>,
    ) {
        let scope = Scope::of(devices, ports, hosts);
        for (i, d) in devices.iter().enumerate() {
            let Some(ospf) = &d.ospfv2 else { continue };
            let path = format!("devices[{i}].ospfv2");
            self.add_control_plane(
                routers,
                &d.name,
                &path,
                |cx, links| cx.ospf_router(&path, ospf, &scope, links, ends),
                |device| &mut device.ospf,
            );
        }
    }

    fn ospf_router(
        &mut self,
        path: &str,
        r: &DeviceOspfv2,
        scope: &Scope,
        links: &mut Vec<routing::Link>,
        ends: &mut Vec<RangeEnd>,
    ) -> Option<routing::Ospf> {
        self.rest(path, &r.rest);
        if r.name.is_empty() {
            self.refuse(format!("{path}.name"), "an OSPFv2 router needs a name");
        }
        let number = |cx: &mut Cx, key: &str, v: &Option<Value>, lo: u128, hi: u128| {
            let v = v.as_ref()?;
            match int(v) {
                Some(n) if (lo..=hi).contains(&n) => Some(n),
                _ => {
                    cx.refuse(format!("{path}.{key}"), format!("{lo} to {hi}"));
                    None
                }
            }
        };
        let mut ospf = routing::Ospf {
            name: r.name.clone(),
            router_id: Ipv4Addr::UNSPECIFIED,
            lsa_refresh: 1800,
            retransmit: 5,
            interfaces: Vec::new(),
            routes: Vec::new(),
        };
        if let Some(n) = number(
            self,
            "lsa_retransmit_time",
            &r.lsa_retransmit_time,
            1,
            65535,
        ) {
            ospf.retransmit = n as u16;
        }
        // FRR refreshes its LSAs every 10 to 1800 s (RFC 2328's LSRefreshTime is 1800).
        if let Some(n) = number(self, "lsa_refresh_time", &r.lsa_refresh_time, 10, 1800) {
            ospf.lsa_refresh = n as u16;
        }
        self.defaults_only(
            path,
            "FRR's ospfd paces its floods itself",
            [
                ("inter_burst_lsu_interval", &r.inter_burst_lsu_interval, 33),
                ("max_flood_lsu_per_burst", &r.max_flood_lsu_per_burst, 1),
            ],
        );
        if let Some(g) = &r.graceful_restart {
            self.no_graceful_restart(path, &g.rest, g.helper_mode);
        }
        if let Some(c) = &r.capabilities {
            self.capabilities(&format!("{path}.capabilities"), c);
        }
        let mut hosts: Vec<&HostPlan> = Vec::new();
        for (k, iface) in r.interfaces.iter().enumerate() {
            let ip = format!("{path}.interfaces[{k}]");
            if let Some((i, host)) = self.ospf_interface(&ip, iface, scope, links) {
                ospf.interfaces.push(i);
                hosts.push(host);
            }
        }
        if r.interfaces.is_empty() {
            self.refuse(format!("{path}.interfaces"), "OSPFv2 without an interface");
        }
        let interface_ip = hosts.first().and_then(|h| h.spec.ipv4).map(|n| n.addr());
        let id = r.router_id.clone().unwrap_or_default();
        let ip = format!("{path}.router_id");
        self.rest(&ip, &id.rest);
        match id.choice.as_deref() {
            None | Some("interface_ip") => {
                ospf.router_id = interface_ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
            }
            Some("custom") => match id.custom.as_deref().map(str::parse::<Ipv4Addr>) {
                Some(Ok(a)) => ospf.router_id = a,
                _ => self.refuse(
                    format!("{ip}.custom"),
                    "a custom router id is an IPv4 address",
                ),
            },
            Some(other) => self.refuse(
                format!("{ip}.choice"),
                format!("'{other}' is not interface_ip or custom"),
            ),
        }
        // A range's flows leave from the router's first interface's host.
        let host = hosts
            .first()
            .map(|h| h.spec.name.clone())
            .unwrap_or_default();
        for (i, range) in r.v4_routes.iter().enumerate() {
            let rp = format!("{path}.v4_routes[{i}]");
            if let Some(range) = self.ospf_range(&rp, range, &host, ends) {
                ospf.routes.push(range);
            }
        }
        (!ospf.interfaces.is_empty()).then_some(ospf)
    }

    /// `graceful_restart` (OSPFv2's and OSPFv3's): FRR is no helper here, so only its default.
    pub(super) fn no_graceful_restart(&mut self, path: &str, rest: &Rest, helper: Option<bool>) {
        let gp = format!("{path}.graceful_restart");
        self.rest(&gp, rest);
        if helper == Some(true) {
            self.refuse(
                format!("{gp}.helper_mode"),
                "graceful restart helper mode is not supported",
            );
        }
    }

    /// Numbers the daemon has fixed (`why`): each given one must be its default.
    pub(super) fn defaults_only<const N: usize>(
        &mut self,
        path: &str,
        why: &str,
        numbers: [(&str, &Option<Value>, u128); N],
    ) {
        for (key, value, default) in numbers {
            if value.as_ref().is_some_and(|v| int(v) != Some(default)) {
                self.refuse(
                    format!("{path}.{key}"),
                    format!("{why}: only the default, {default}"),
                );
            }
        }
    }

    /// The options OSPFv2 sends follow from the router's areas and ranges (E outside stub
    /// areas, B as an area border router, E in the router LSA with external ranges): what
    /// the config may not ask for is a capability FRR does not have.
    fn capabilities(&mut self, path: &str, c: &Ospfv2Options) {
        self.rest(path, &c.rest);
        for (key, value) in [
            ("t_bit", c.t_bit),
            ("mc_bit", c.mc_bit),
            ("np_bit", c.np_bit),
            ("ea_bit", c.ea_bit),
            ("dc_bit", c.dc_bit),
            ("o_bit", c.o_bit),
            ("unused_bit", c.unused_bit),
        ] {
            if value == Some(true) {
                self.refuse(
                    format!("{path}.{key}"),
                    "FRR's ospfd here runs without TOS, multicast, NSSA, external attributes, \
                     demand circuits or opaque LSAs: only false",
                );
            }
        }
    }

    fn ospf_interface<'s>(
        &mut self,
        path: &str,
        iface: &Ospfv2Interface,
        scope: &Scope<'s>,
        links: &mut Vec<routing::Link>,
    ) -> Option<(routing::OspfInterface, &'s HostPlan)> {
        self.rest(path, &iface.rest);
        let (mut i, host) = self.ospf_on(
            path,
            &iface.name,
            iface.ipv4_name.as_deref(),
            false,
            scope,
            links,
        )?;
        if let Some(a) = &iface.area {
            let ap = format!("{path}.area");
            self.rest(&ap, &a.rest);
            i.area = self.ospf_area(&ap, a.choice.as_deref(), a.id.as_ref(), a.ip.as_deref());
        }
        if let Some(n) = &iface.network_type {
            let np = format!("{path}.network_type");
            self.rest(&np, &n.rest);
            match n.choice.as_deref() {
                None | Some("broadcast") => {}
                Some("point_to_point") => i.point_to_point = true,
                Some(other) => self.refuse(
                    format!("{np}.choice"),
                    format!("'{other}' is not broadcast or point_to_point"),
                ),
            }
            if !n.point_to_multipoint.is_empty() {
                self.refuse(
                    format!("{np}.point_to_multipoint"),
                    "point-to-multipoint interfaces are not supported",
                );
            }
        }
        if !iface.traffic_engineering.is_empty() {
            self.refuse(
                format!("{path}.traffic_engineering"),
                "traffic engineering (opaque TE LSAs) is not supported",
            );
        }
        if !iface.srlg_values.is_empty() {
            self.refuse(
                format!("{path}.srlg_values"),
                "shared risk link groups are not supported",
            );
        }
        if let Some(a) = &iface.authentication {
            i.auth = self.ospf_auth(&format!("{path}.authentication"), a);
        }
        if let Some(lp) = &iface.link_protection {
            let lpp = format!("{path}.link_protection");
            self.rest(&lpp, &lp.rest);
            for (key, value) in [
                ("extra_traffic", lp.extra_traffic),
                ("unprotected", lp.unprotected),
                ("shared", lp.shared),
                ("dedicated_1_to_1", lp.dedicated_1_to_1),
                ("dedicated_1_plus_1", lp.dedicated_1_plus_1),
                ("enhanced", lp.enhanced),
                ("reserved_40", lp.reserved_40),
                ("reserved_80", lp.reserved_80),
            ] {
                if value == Some(true) {
                    self.refuse(
                        format!("{lpp}.{key}"),
                        "link protection types (TE) are not supported",
                    );
                }
            }
        }
        if let Some(a) = &iface.advanced {
            let ap = format!("{path}.advanced");
            self.rest(&ap, &a.rest);
            let timers = [&a.hello_interval, &a.dead_interval, &a.routing_metric];
            self.ospf_timers(
                &ap,
                "routing_metric",
                timers,
                a.validate_received_mtu,
                &mut i,
            );
            match a.priority.as_ref().map(int) {
                None => {}
                Some(Some(n)) if n <= 255 => i.priority = n as u8,
                Some(_) => self.refuse(format!("{ap}.priority"), "0 to 255"),
            }
        }
        Some((i, host))
    }

    /// An OSPF interface (OSPFv2's and OSPFv3's) on the link of the address object `address`
    /// (of the family `v6` says), with RFC 2328's and OTG's defaults, and its host.
    pub(super) fn ospf_on<'s>(
        &mut self,
        path: &str,
        name: &str,
        address: Option<&str>,
        v6: bool,
        scope: &Scope<'s>,
        links: &mut Vec<routing::Link>,
    ) -> Option<(routing::OspfInterface, &'s HostPlan)> {
        let address = address.unwrap_or_default();
        let (key, family) = if v6 {
            ("ipv6_name", "IPv6")
        } else {
            ("ipv4_name", "IPv4")
        };
        let Some(host) = scope.hosts.iter().find(|h| {
            h.spec.name == address
                && if v6 {
                    h.spec.ipv6.is_some()
                } else {
                    h.spec.ipv4.is_some()
                }
        }) else {
            self.refuse(
                format!("{path}.{key}"),
                format!("no {family} address is named '{address}'"),
            );
            return None;
        };
        if host.lag.is_some() {
            self.refuse(
                format!("{path}.{key}"),
                "OSPF over a LAG is not supported yet: its packets would have to reach one \
                 interface from every member (BGP over a LAG is)",
            );
            return None;
        }
        self.link(host, scope, links);
        let link = links
            .iter()
            .position(|l| host.spec.mac.is_some_and(|m| m.octets() == l.mac))?;
        let i = routing::OspfInterface {
            name: name.to_owned(),
            link,
            area: Ipv4Addr::UNSPECIFIED,
            point_to_point: false,
            hello: 10,
            dead: 40,
            priority: 0,
            cost: 10,
            mtu_check: true,
            instance: 0,
            auth: Default::default(),
        };
        Some((i, host))
    }

    /// An interface's `advanced` hello and dead intervals and cost (its key `cost_key`), each
    /// 1 to 65535 s, and whether it checks the MTU.
    pub(super) fn ospf_timers(
        &mut self,
        path: &str,
        cost_key: &str,
        [hello, dead, cost]: [&Option<Value>; 3],
        mtu: Option<bool>,
        i: &mut routing::OspfInterface,
    ) {
        for (key, v, field) in [
            ("hello_interval", hello, &mut i.hello),
            ("dead_interval", dead, &mut i.dead),
            (cost_key, cost, &mut i.cost),
        ] {
            match v.as_ref().map(int) {
                None => {}
                Some(Some(n)) if (1..=65535).contains(&n) => *field = n as u16,
                Some(_) => self.refuse(format!("{path}.{key}"), "1 to 65535"),
            }
        }
        i.mtu_check = mtu.unwrap_or(true);
    }

    fn ospf_range(
        &mut self,
        path: &str,
        r: &Ospfv2V4RouteRange,
        host: &str,
        ends: &mut Vec<RangeEnd>,
    ) -> Option<routing::OspfRange> {
        self.rest(path, &r.rest);
        if r.name.is_empty() {
            self.refuse(format!("{path}.name"), "a route range needs a name");
        }
        let blocks = self.blocks(path, &r.addresses, false);
        let metric = match r.metric.as_ref().map_or(Some(0), int) {
            Some(m) if m <= 16_777_215 => m as u32,
            _ => {
                self.refuse(format!("{path}.metric"), "0 to 16777215");
                0
            }
        };
        let o = r.route_origin.clone().unwrap_or_default();
        let op = format!("{path}.route_origin");
        self.rest(&op, &o.rest);
        let origin = self.ospf_origin(&op, o.choice.as_deref());
        for (key, flags) in [
            ("intra_area", &o.intra_area),
            ("inter_area", &o.inter_area),
            ("external_type_1", &o.external_type_1),
            ("external_type_2", &o.external_type_2),
        ] {
            let Some(f) = flags else { continue };
            let fp = format!("{op}.{key}");
            self.rest(&fp, &f.rest);
            self.prefix_flags(&format!("{fp}.flags"), f.flags.as_ref());
        }
        if let Some(n) = &o.nssa_external {
            let np = format!("{op}.nssa_external");
            self.rest(&np, &n.rest);
            self.prefix_flags(&format!("{np}.flags"), n.flags.as_ref());
        }
        self.range_end(&r.name, host, &blocks, &r.addresses, ends);
        Some(routing::OspfRange {
            name: r.name.clone(),
            blocks,
            metric,
            origin,
            advertised: true,
        })
    }

    /// `authentication`: clear_text (the default, its key "otg" by default) or md5s.
    fn ospf_auth(&mut self, path: &str, a: &Ospfv2InterfaceAuthentication) -> routing::OspfAuth {
        self.rest(path, &a.rest);
        match a.choice.as_deref() {
            None | Some("clear_text") => {
                routing::OspfAuth::ClearText(a.clear_text.clone().unwrap_or_else(|| "otg".into()))
            }
            Some("md5s") => {
                let mut keys = Vec::new();
                for (k, m) in a.md5s.iter().enumerate() {
                    let mp = format!("{path}.md5s[{k}]");
                    self.rest(&mp, &m.rest);
                    let id = match m.key_id.as_ref().and_then(int) {
                        Some(n) if (1..=255).contains(&n) => n as u8,
                        _ => {
                            self.refuse(format!("{mp}.key_id"), "1 to 255");
                            continue;
                        }
                    };
                    keys.push((id, m.key.clone().unwrap_or_default()));
                }
                if a.md5s.is_empty() {
                    self.refuse(format!("{path}.md5s"), "md5s needs a key id and key");
                }
                routing::OspfAuth::Md5(keys)
            }
            Some(other) => {
                self.refuse(
                    format!("{path}.choice"),
                    format!("'{other}' is not clear_text or md5s"),
                );
                routing::OspfAuth::None
            }
        }
    }

    /// An interface's area (OSPFv2's and OSPFv3's): `id`, a 32-bit number (the default, 0),
    /// or `ip`, dotted.
    pub(super) fn ospf_area(
        &mut self,
        path: &str,
        choice: Option<&str>,
        id: Option<&Value>,
        ip: Option<&str>,
    ) -> Ipv4Addr {
        match choice {
            None | Some("id") => match id.map_or(Some(0), int) {
                Some(n) if n <= u128::from(u32::MAX) => return Ipv4Addr::from(n as u32),
                _ => self.refuse(format!("{path}.id"), "an area id is 0 to 4294967295"),
            },
            Some("ip") => match ip.map(str::parse::<Ipv4Addr>) {
                Some(Ok(ip)) => return ip,
                _ => self.refuse(format!("{path}.ip"), "an area id in dotted form"),
            },
            Some(other) => self.refuse(
                format!("{path}.choice"),
                format!("'{other}' is not id or ip"),
            ),
        }
        Ipv4Addr::UNSPECIFIED
    }

    /// A range's `route_origin.choice` (OSPFv2's and OSPFv3's), inter_area by default.
    pub(super) fn ospf_origin(&mut self, path: &str, choice: Option<&str>) -> routing::OspfOrigin {
        match choice {
            None | Some("inter_area") => routing::OspfOrigin::InterArea,
            Some("intra_area") => routing::OspfOrigin::IntraArea,
            Some("external_type_1") => routing::OspfOrigin::External1,
            Some("external_type_2") => routing::OspfOrigin::External2,
            Some("nssa_external") => {
                self.refuse(
                    format!("{path}.choice"),
                    "NSSA external ranges are not supported: linerate's OSPF areas are \
                     normal areas (intra_area, inter_area, external_type_1 and \
                     external_type_2 are)",
                );
                routing::OspfOrigin::InterArea
            }
            Some(other) => {
                self.refuse(
                    format!("{path}.choice"),
                    format!("'{other}' is not a route origin"),
                );
                routing::OspfOrigin::InterArea
            }
        }
    }

    /// The extended prefix flags (RFC 7684) are opaque LSAs, which linerate does not send.
    fn prefix_flags(&mut self, path: &str, f: Option<&Ospfv2PrefixFlags>) {
        let Some(f) = f else { return };
        self.rest(path, &f.rest);
        for (key, value) in [("a_flag", f.a_flag), ("n_flag", f.n_flag)] {
            if value == Some(true) {
                self.refuse(
                    format!("{path}.{key}"),
                    "extended prefix flags (RFC 7684 opaque LSAs) are not supported",
                );
            }
        }
    }
}
