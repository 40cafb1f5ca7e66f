//! `devices[].isis`: each device with IS-IS gets a [`linerate_routing::Isis`] on the device its
//! BGP made (or a device of its own), its circuits the links of the ethernets its interfaces
//! name, its route ranges places a device flow may leave from or go to ([`RangeEnd`]). Every
//! field that cannot be honoured is refused by its path; snappi writes every default of an
//! object it creates, so defaults are accepted where the daemon does the same.

use std::net::Ipv4Addr;

use linerate_routing as routing;
use linerate_routing::frr::isis::parse_system_id;
use serde_json::Value;

use super::bgp::Scope;
use super::{Cx, HostPlan, PortPlan, RangeEnd, int};
use crate::isis::*;
use crate::model::Device;

/// ISO 10589's area 49.0001, ixia-c's default when a router names none.
const DEFAULT_AREA: [u8; 3] = [0x49, 0x00, 0x01];

impl Cx {
    /// Adds IS-IS to the devices of `routers` (made by [`Cx::bgp`]) or as devices of their own.
    pub(super) fn isis(
        &mut self,
        devices: &[Device],
        ports: &[PortPlan],
        hosts: &[HostPlan],
        routers: &mut Vec<routing::Device>,
        ends: &mut Vec<RangeEnd>,
    ) {
        let scope = Scope::of(devices, ports, hosts);
        for (i, d) in devices.iter().enumerate() {
            let Some(isis) = &d.isis else { continue };
            let path = format!("devices[{i}].isis");
            self.add_control_plane(
                routers,
                &d.name,
                &path,
                |cx, links| cx.isis_router(&path, isis, &scope, links, ends),
                |device| &mut device.isis,
            );
        }
    }

    fn isis_router(
        &mut self,
        path: &str,
        r: &DeviceIsis,
        scope: &Scope,
        links: &mut Vec<routing::Link>,
        ends: &mut Vec<RangeEnd>,
    ) -> Option<routing::Isis> {
        self.rest(path, &r.rest);
        if r.name.is_empty() {
            self.refuse(format!("{path}.name"), "an IS-IS router needs a name");
        }
        let system_id = r.system_id.as_deref().and_then(parse_system_id);
        if system_id.is_none() {
            self.refuse(
                format!("{path}.system_id"),
                "a system id of 6 bytes in hex (e.g. 640000000001) is needed",
            );
        }
        let basic = r.basic.clone().unwrap_or_default();
        let bp = format!("{path}.basic");
        self.rest(&bp, &basic.rest);
        let te_router_id = match basic.ipv4_te_router_id.as_deref() {
            None => None,
            Some(text) => match text.parse::<Ipv4Addr>() {
                Ok(a) => Some(a),
                Err(_) => {
                    self.refuse(
                        format!("{bp}.ipv4_te_router_id"),
                        "the TE router id is an IPv4 address",
                    );
                    None
                }
            },
        };
        let mut isis = routing::Isis {
            hostname: basic.hostname.clone().filter(|h| !h.is_empty()),
            te_router_id,
            wide_metrics: basic.enable_wide_metric.unwrap_or(true),
            ..routing::Isis::new(r.name.clone(), system_id.unwrap_or_default())
        };
        self.isis_advanced(path, r.advanced.as_ref(), &mut isis);
        let mut hosts: Vec<&HostPlan> = Vec::new();
        for (k, iface) in r.interfaces.iter().enumerate() {
            let ip = format!("{path}.interfaces[{k}]");
            if let Some((c, host)) = self.circuit(&ip, iface, scope, links, &isis) {
                isis.circuits.push(c);
                hosts.push(host);
            }
        }
        if r.interfaces.is_empty() {
            self.refuse(format!("{path}.interfaces"), "IS-IS without an interface");
        }
        for (family, list) in [("v4_routes", &r.v4_routes), ("v6_routes", &r.v6_routes)] {
            let v6 = family == "v6_routes";
            // A range's flows leave from the router's first host of the range's family.
            let host = hosts
                .iter()
                .find(|h| h.spec.ipv6.is_some() == v6)
                .or(hosts.first())
                .map(|h| h.spec.name.clone())
                .unwrap_or_default();
            for (i, range) in list.iter().enumerate() {
                let rp = format!("{path}.{family}[{i}]");
                if let Some(range) = self.isis_range(&rp, range, v6, &host, ends) {
                    isis.routes.push(range);
                }
            }
        }
        (system_id.is_some() && !isis.circuits.is_empty()).then_some(isis)
    }

    fn isis_advanced(&mut self, path: &str, a: Option<&IsisAdvanced>, isis: &mut routing::Isis) {
        let Some(a) = a else {
            isis.areas.push(DEFAULT_AREA.to_vec());
            return;
        };
        let p = format!("{path}.advanced");
        self.rest(&p, &a.rest);
        let number = |cx: &mut Cx, key: &str, v: &Option<Value>, lo: u128, hi: u128| {
            let v = v.as_ref()?;
            match int(v) {
                Some(n) if (lo..=hi).contains(&n) => Some(n),
                _ => {
                    cx.refuse(format!("{p}.{key}"), format!("{lo} to {hi}"));
                    None
                }
            }
        };
        if let Some(n) = number(self, "max_area_addresses", &a.max_area_addresses, 0, 254)
            && n != 3
        {
            self.refuse(
                format!("{p}.max_area_addresses"),
                "FRR's routers carry 3 area addresses (ISO 10589's default): only 3",
            );
        }
        for (i, text) in a.area_addresses.iter().enumerate() {
            let bytes = area_bytes(text);
            match bytes {
                Some(b) => isis.areas.push(b),
                None => self.refuse(
                    format!("{p}.area_addresses[{i}]"),
                    "an area address of 1 to 13 bytes in hex (e.g. 490001)",
                ),
            }
        }
        if isis.areas.is_empty() {
            isis.areas.push(DEFAULT_AREA.to_vec());
        }
        if isis.areas.len() > 3 {
            self.refuse(format!("{p}.area_addresses"), "at most 3 area addresses");
        }
        if let Some(n) = number(self, "lsp_refresh_rate", &a.lsp_refresh_rate, 1, 65235) {
            isis.lsp_refresh = n as u16;
        }
        if let Some(n) = number(self, "lsp_lifetime", &a.lsp_lifetime, 350, 65535) {
            isis.lsp_lifetime = n as u16;
        }
        // OTG gives the SNP intervals in milliseconds; FRR takes whole seconds.
        let ms = |n: u128| (n.div_ceil(1000)) as u16;
        isis.psnp_interval = number(self, "psnp_interval", &a.psnp_interval, 1, 120_000).map(ms);
        isis.csnp_interval = number(self, "csnp_interval", &a.csnp_interval, 1, 600_000).map(ms);
        isis.lsp_mtu = number(self, "max_lsp_size", &a.max_lsp_size, 128, 4352).map(|n| n as u16);
        if let Some(n) = number(
            self,
            "lsp_mgroup_min_trans_interval",
            &a.lsp_mgroup_min_trans_interval,
            0,
            u128::from(u32::MAX),
        ) && n != 5000
        {
            self.refuse(
                format!("{p}.lsp_mgroup_min_trans_interval"),
                "FRR paces its LSPs itself: only the default, 5000",
            );
        }
        isis.hello_padding = a.enable_hello_padding.unwrap_or(true);
        isis.attached_bit = a.enable_attached_bit.unwrap_or(true);
    }

    fn circuit<'s>(
        &mut self,
        path: &str,
        iface: &IsisInterface,
        scope: &Scope<'s>,
        links: &mut Vec<routing::Link>,
        isis: &routing::Isis,
    ) -> Option<(routing::Circuit, &'s HostPlan)> {
        self.rest(path, &iface.rest);
        let eth = iface.eth_name.as_deref().unwrap_or_default();
        let Some(host) = scope.hosts.iter().find(|h| h.ethernet == eth) else {
            self.refuse(
                format!("{path}.eth_name"),
                format!("no ethernet with an address is named '{eth}'"),
            );
            return None;
        };
        if host.lag.is_some() {
            self.refuse(
                format!("{path}.eth_name"),
                "IS-IS over a LAG is not supported yet: its PDUs would have to reach one \
                 circuit from every member (BGP over a LAG is)",
            );
            return None;
        }
        self.link(host, scope, links);
        let link = links
            .iter()
            .position(|l| host.spec.mac.is_some_and(|m| m.octets() == l.mac))?;
        let max: u128 = if isis.wide_metrics { 16_777_215 } else { 63 };
        let metric = match iface.metric.as_ref().map_or(Some(10), int) {
            Some(m) if m <= max => m as u32,
            _ => {
                self.refuse(format!("{path}.metric"), format!("0 to {max}"));
                10
            }
        };
        let point_to_point = match iface.network_type.as_deref() {
            None | Some("broadcast") => false,
            Some("point_to_point") => true,
            Some(other) => {
                self.refuse(
                    format!("{path}.network_type"),
                    format!("'{other}' is not broadcast or point_to_point"),
                );
                false
            }
        };
        let level = match iface.level_type.as_deref() {
            Some("level_1") => routing::Level::L1,
            None | Some("level_2") => routing::Level::L2,
            Some("level_1_2") => routing::Level::L12,
            Some(other) => {
                self.refuse(
                    format!("{path}.level_type"),
                    format!("'{other}' is not level_1, level_2 or level_1_2"),
                );
                routing::Level::L2
            }
        };
        let hellos = [
            self.hellos(&format!("{path}.l1_settings"), iface.l1_settings.as_ref()),
            self.hellos(&format!("{path}.l2_settings"), iface.l2_settings.as_ref()),
        ];
        if let Some(a) = &iface.advanced {
            let ap = format!("{path}.advanced");
            self.rest(&ap, &a.rest);
            // FRR pads hellos to the MTU, takes a neighbour's areas as they come and speaks
            // the three-way handshake on point-to-point circuits (RFC 5303), hellos to the
            // group address; what it advertises as supported is what the circuit runs.
            for (key, value, default) in [
                ("auto_adjust_mtu", a.auto_adjust_mtu, true),
                ("auto_adjust_area", a.auto_adjust_area, true),
                ("enable_3way_handshake", a.enable_3way_handshake, true),
                (
                    "p2p_hellos_to_unicast_mac",
                    a.p2p_hellos_to_unicast_mac,
                    false,
                ),
            ] {
                if value.is_some_and(|v| v != default) {
                    self.refuse(
                        format!("{ap}.{key}"),
                        format!("FRR's isisd does only the default, {default}"),
                    );
                }
            }
        }
        Some((
            routing::Circuit {
                name: iface.name.clone(),
                link,
                metric,
                point_to_point,
                level,
                hellos,
            },
            host,
        ))
    }

    fn hellos(&mut self, path: &str, s: Option<&IsisLevelSettings>) -> routing::Hellos {
        let mut h = routing::Hellos {
            interval: 10,
            dead: 30,
            priority: 0,
        };
        let Some(s) = s else { return h };
        self.rest(path, &s.rest);
        let secs = |cx: &mut Cx, key: &str, v: &Option<Value>, hi: u128| -> Option<u128> {
            let v = v.as_ref()?;
            match int(v) {
                Some(n) if (1..=hi).contains(&n) => Some(n),
                _ => {
                    cx.refuse(format!("{path}.{key}"), format!("1 to {hi}"));
                    None
                }
            }
        };
        if let Some(n) = secs(self, "hello_interval", &s.hello_interval, 600) {
            h.interval = n as u16;
        }
        if let Some(n) = secs(self, "dead_interval", &s.dead_interval, 65535) {
            h.dead = n as u16;
        }
        match s.priority.as_ref().map(int) {
            None => {}
            Some(Some(n)) if n <= 127 => h.priority = n as u8,
            Some(_) => self.refuse(format!("{path}.priority"), "0 to 127"),
        }
        h
    }

    fn isis_range(
        &mut self,
        path: &str,
        r: &IsisRouteRange,
        v6: bool,
        host: &str,
        ends: &mut Vec<RangeEnd>,
    ) -> Option<routing::IsisRange> {
        self.rest(path, &r.rest);
        if r.name.is_empty() {
            self.refuse(format!("{path}.name"), "a route range needs a name");
        }
        let blocks = self.blocks(path, &r.addresses, v6);
        let metric = match r.link_metric.as_ref().map_or(Some(0), int) {
            Some(m) if m <= 16_777_215 => m as u32,
            _ => {
                self.refuse(format!("{path}.link_metric"), "0 to 16777215");
                0
            }
        };
        // FRR redistributes a range as reachable from the router, up, with no prefix
        // attributes: the other settings would be advertised as something else.
        if !matches!(r.origin_type.as_deref(), None | Some("internal")) {
            self.refuse(
                format!("{path}.origin_type"),
                "only internal: FRR advertises a range as the router's own reachability",
            );
        }
        if !matches!(r.redistribution_type.as_deref(), None | Some("up")) {
            self.refuse(
                format!("{path}.redistribution_type"),
                "only up: FRR's ranges are not leaked down from level 2",
            );
        }
        for (key, value) in [
            ("prefix_attr_enabled", r.prefix_attr_enabled),
            ("x_flag", r.x_flag),
            ("r_flag", r.r_flag),
            ("n_flag", r.n_flag),
        ] {
            if value == Some(true) {
                self.refuse(
                    format!("{path}.{key}"),
                    "prefix attributes (RFC 7794) are not supported",
                );
            }
        }
        self.range_end(&r.name, host, &blocks, &r.addresses, ends);
        Some(routing::IsisRange {
            name: r.name.clone(),
            blocks,
            metric,
            advertised: true,
        })
    }
}

/// `490001` or `49.0001`: an area address of 1 to 13 bytes, in hex.
fn area_bytes(text: &str) -> Option<Vec<u8>> {
    let hex: Vec<u8> = text.bytes().filter(|c| *c != b'.').collect();
    if hex.is_empty() || hex.len() > 26 || !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}
