//! `devices[].ospfv3`: a device's OSPFv3 instance becomes the [`linerate_routing::Ospf`] of its
//! `ospf6` (ospf6d runs one instance a device), its interfaces the links of the IPv6 addresses
//! they name, its route ranges places a device flow may leave from or go to ([`RangeEnd`]).
//! What ospf6d cannot honour is refused by path; defaults are accepted where FRR does the same.

use std::net::Ipv4Addr;

use linerate_routing as routing;

use super::bgp::Scope;
use super::{Cx, HostPlan, PortPlan, RangeEnd, int};
use crate::model::Device;
use crate::ospfv3::*;

impl Cx {
    /// Adds OSPFv3 to the devices of `routers` (made by BGP, IS-IS and OSPFv2) or as devices of
    /// their own.
    pub(super) fn ospfv3(
        &mut self,
        devices: &[Device],
        ports: &[PortPlan],
        hosts: &[HostPlan],
        routers: &mut Vec<routing::Device>,
        ends: &mut Vec<RangeEnd>,
    ) {
        let scope = Scope::of(devices, ports, hosts);
        for (i, d) in devices.iter().enumerate() {
            let Some(ospf) = &d.ospfv3 else { continue };
            let path = format!("devices[{i}].ospfv3");
            self.rest(&path, &ospf.rest);
            let Some(instance) = ospf.instances.first() else {
                self.refuse(format!("{path}.instances"), "OSPFv3 without an instance");
                continue;
            };
            if ospf.instances.len() > 1 {
                self.refuse(
                    format!("{path}.instances[1]"),
                    "FRR's ospf6d runs one OSPFv3 instance a device",
                );
            }
            let router_id = self.ospf6_router_id(&path, ospf.router_id.as_ref(), d, &scope);
            let ip = format!("{path}.instances[0]");
            self.add_control_plane(
                routers,
                &d.name,
                &path,
                |cx, links| cx.ospf6_instance(&ip, instance, router_id, &scope, links, ends),
                |device| &mut device.ospf6,
            );
        }
    }

    /// `router_id`: `custom`, or `auto` (the default): the device's first IPv4 address.
    fn ospf6_router_id(
        &mut self,
        path: &str,
        id: Option<&Ospfv3RouterId>,
        device: &Device,
        scope: &Scope,
    ) -> Ipv4Addr {
        let ip = format!("{path}.router_id");
        if let Some(id) = id {
            self.rest(&ip, &id.rest);
        }
        match id.and_then(|i| i.choice.as_deref()) {
            Some("custom") => match id.and_then(|i| i.custom.as_deref()).map(str::parse) {
                Some(Ok(a)) => return a,
                _ => self.refuse(
                    format!("{ip}.custom"),
                    "a custom router id is an IPv4 address",
                ),
            },
            None | Some("auto") => {
                let first = device
                    .ethernets
                    .iter()
                    .flat_map(|e| scope.hosts.iter().filter(move |h| h.ethernet == e.name))
                    .find_map(|h| h.spec.ipv4);
                match first {
                    Some(n) => return n.addr(),
                    None => self.refuse(
                        format!("{ip}.choice"),
                        "auto takes the device's first IPv4 address, and it has none: give a \
                         custom router id",
                    ),
                }
            }
            Some(other) => self.refuse(
                format!("{ip}.choice"),
                format!("'{other}' is not auto or custom"),
            ),
        }
        Ipv4Addr::UNSPECIFIED
    }

    fn ospf6_instance(
        &mut self,
        path: &str,
        r: &Ospfv3Instance,
        router_id: Ipv4Addr,
        scope: &Scope,
        links: &mut Vec<routing::Link>,
        ends: &mut Vec<RangeEnd>,
    ) -> Option<routing::Ospf> {
        self.rest(path, &r.rest);
        if r.name.is_empty() {
            self.refuse(format!("{path}.name"), "an OSPFv3 instance needs a name");
        }
        let mut ospf = routing::Ospf {
            name: r.name.clone(),
            router_id,
            lsa_refresh: 1800,
            retransmit: 5,
            interfaces: Vec::new(),
            routes: Vec::new(),
        };
        match r.lsa_retransmit_time.as_ref().map(int) {
            None => {}
            Some(Some(n)) if (1..=65535).contains(&n) => ospf.retransmit = n as u16,
            Some(_) => self.refuse(format!("{path}.lsa_retransmit_time"), "1 to 65535"),
        }
        // ospf6d refreshes its LSAs at RFC 5340's LSRefreshTime, 1800 s, and paces its floods
        // itself.
        self.defaults_only(
            path,
            "FRR's ospf6d has this fixed",
            [
                ("lsa_refresh_time", &r.lsa_refresh_time, 1800),
                (
                    "inter_burst_lsu_interval",
                    &r.inter_burst_lsu_interval,
                    1000,
                ),
            ],
        );
        if let Some(g) = &r.graceful_restart {
            self.no_graceful_restart(path, &g.rest, g.helper_mode);
        }
        if let Some(c) = &r.capabilities {
            // The router LSA's B and E bits follow from the router's ranges, as OSPFv2's do.
            self.rest(&format!("{path}.capabilities"), &c.rest);
        }
        let mut hosts: Vec<&HostPlan> = Vec::new();
        for (k, iface) in r.interfaces.iter().enumerate() {
            let ip = format!("{path}.interfaces[{k}]");
            if let Some((i, host)) = self.ospf6_interface(&ip, iface, scope, links) {
                ospf.interfaces.push(i);
                hosts.push(host);
            }
        }
        if r.interfaces.is_empty() {
            self.refuse(format!("{path}.interfaces"), "OSPFv3 without an interface");
        }
        let host = hosts
            .first()
            .map(|h| h.spec.name.clone())
            .unwrap_or_default();
        for (i, range) in r.v6_routes.iter().enumerate() {
            let rp = format!("{path}.v6_routes[{i}]");
            self.rest(&rp, &range.rest);
            if range.name.is_empty() {
                self.refuse(format!("{rp}.name"), "a route range needs a name");
            }
            let blocks = self.blocks(&rp, &range.addresses, true);
            let metric = match range.metric.as_ref().map_or(Some(0), int) {
                Some(m) if m <= 16_777_215 => m as u32,
                _ => {
                    self.refuse(format!("{rp}.metric"), "0 to 16777215");
                    0
                }
            };
            let o = range.route_origin.clone().unwrap_or_default();
            let op = format!("{rp}.route_origin");
            self.rest(&op, &o.rest);
            let origin = self.ospf_origin(&op, o.choice.as_deref());
            self.range_end(&range.name, &host, &blocks, &range.addresses, ends);
            ospf.routes.push(routing::OspfRange {
                name: range.name.clone(),
                blocks,
                metric,
                origin,
                advertised: true,
            });
        }
        (!ospf.interfaces.is_empty()).then_some(ospf)
    }

    fn ospf6_interface<'s>(
        &mut self,
        path: &str,
        iface: &Ospfv3Interface,
        scope: &Scope<'s>,
        links: &mut Vec<routing::Link>,
    ) -> Option<(routing::OspfInterface, &'s HostPlan)> {
        self.rest(path, &iface.rest);
        let (mut i, host) = self.ospf_on(
            path,
            &iface.name,
            iface.ipv6_name.as_deref(),
            true,
            scope,
            links,
        )?;
        match iface.instance_id.as_ref().map(int) {
            None => {}
            Some(Some(n)) if n <= 255 => i.instance = n as u8,
            Some(_) => self.refuse(format!("{path}.instance_id"), "0 to 255 (RFC 5340 A.3.1)"),
        }
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
            if let Some(b) = &n.broadcast {
                let bp = format!("{np}.broadcast");
                self.rest(&bp, &b.rest);
                match b.priority.as_ref().map(int) {
                    None => {}
                    Some(Some(p)) if p <= 255 => i.priority = p as u8,
                    Some(_) => self.refuse(format!("{bp}.priority"), "0 to 255"),
                }
            }
        }
        if let Some(a) = &iface.advanced {
            let ap = format!("{path}.advanced");
            self.rest(&ap, &a.rest);
            let timers = [&a.hello_interval, &a.dead_interval, &a.link_metric];
            self.ospf_timers(&ap, "link_metric", timers, a.validate_received_mtu, &mut i);
        }
        if let Some(o) = &iface.options {
            let op = format!("{path}.options");
            self.rest(&op, &o.rest);
            // ospf6d sends V6, E and R in every normal area, never DC or N.
            for (key, value, default) in [
                ("dc_bit", o.dc_bit, false),
                ("r_bit", o.r_bit, true),
                ("n_bit", o.n_bit, false),
                ("e_bit", o.e_bit, true),
                ("v6_bit", o.v6_bit, true),
            ] {
                if value.is_some_and(|v| v != default) {
                    self.refuse(
                        format!("{op}.{key}"),
                        format!("FRR's ospf6d sends only the default, {default}"),
                    );
                }
            }
        }
        Some((i, host))
    }
}
