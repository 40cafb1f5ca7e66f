//! `lldp[]`: each agent becomes a device of its own ([`linerate_routing::Device`] with `lldp`):
//! a namespace with a macvlan of its port, lldpd on it. What lldpd cannot send is refused by
//! path; snappi writes every default of an object it creates, so defaults are accepted where
//! lldpd does the same.

use linerate_routing as routing;
use linerate_routing::lldp::{ORG_INFO_MAX, OrgInfo, PortId};
use serde_json::Value;

use super::{Cx, FlowPlan, HostPlan, PortPlan, int};
use crate::lldp::*;

/// A locally administered MAC of the agent's own (its chassis MAC when the config leaves it to
/// the implementation): the port's MAC is the port's, and a macvlan cannot take it.
fn agent_mac(name: &str) -> [u8; 6] {
    // FNV-1a of the name: stable across runs, different per agent.
    let h = name
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
        .to_be_bytes();
    [0x02, 0x11, h[0], h[1], h[2], h[3]]
}

fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let parts: Vec<u8> = text
        .split([':', '-'])
        .map(|p| u8::from_str_radix(p, 16).ok())
        .collect::<Option<_>>()?;
    parts.try_into().ok()
}

impl Cx {
    /// A port that only sends or receives port flows (no device) has the flows' programs and no
    /// hosts' table to pass LLDP frames to the stack by: its agent would hear nothing.
    pub(super) fn lldp_beside_port_flows(
        &mut self,
        agents: &[Lldp],
        hosts: &[HostPlan],
        flows: &[FlowPlan],
    ) {
        if !hosts.is_empty() {
            return;
        }
        for (i, a) in agents.iter().enumerate() {
            let port = a.connection.as_ref().and_then(|c| c.port_name.as_deref());
            let busy = flows
                .iter()
                .any(|f| Some(f.tx_port.as_str()) == port || f.rx_port.as_deref() == port);
            if busy {
                self.refuse(
                    format!("lldp[{i}].connection.port_name"),
                    "LLDP on a port of port flows (flows between ports, no devices) is not \
                     supported yet: give the port a device, or the agent a port of its own",
                );
            }
        }
    }

    /// An agent's port is set up only for the devices on it (the hosts the agent's programs
    /// answer for): an LLDP agent there needs a device with an address on the same port.
    pub(super) fn lldp_on_agents(
        &mut self,
        agents: &[Lldp],
        ports: &[PortPlan],
        hosts: &[HostPlan],
    ) {
        for (i, a) in agents.iter().enumerate() {
            let name = a.connection.as_ref().and_then(|c| c.port_name.as_deref());
            let Some(port) = ports.iter().find(|p| Some(p.name.as_str()) == name) else {
                continue;
            };
            if port.location.agent.is_some() && !hosts.iter().any(|h| h.port == port.name) {
                self.refuse(
                    format!("lldp[{i}].connection.port_name"),
                    format!(
                        "port '{}' is an agent's: LLDP there needs a device with an address on \
                         the same port (an agent sets up the ports of the test bed's devices)",
                        port.name
                    ),
                );
            }
        }
    }

    /// The config's LLDP agents, as devices of their own added to `routers`.
    pub(super) fn lldp(
        &mut self,
        agents: &[Lldp],
        ports: &[PortPlan],
        routers: &mut Vec<routing::Device>,
    ) {
        for (i, a) in agents.iter().enumerate() {
            let path = format!("lldp[{i}]");
            if let Some(d) = self.lldp_agent(&path, a, ports) {
                if routers.iter().any(|r| r.name == d.name) {
                    self.refuse(
                        format!("{path}.name"),
                        format!("'{}' is a device's name too", d.name),
                    );
                    continue;
                }
                if let Err(e) = d.validate() {
                    self.refuse(&path, e.to_string());
                    continue;
                }
                routers.push(d);
            }
        }
    }

    fn lldp_agent(&mut self, path: &str, a: &Lldp, ports: &[PortPlan]) -> Option<routing::Device> {
        self.rest(path, &a.rest);
        if a.name.is_empty() {
            self.refuse(format!("{path}.name"), "an LLDP agent needs a name");
        }
        let c = a.connection.clone().unwrap_or_default();
        let cp = format!("{path}.connection");
        self.rest(&cp, &c.rest);
        let port_name = c.port_name.as_deref().unwrap_or_default();
        let Some(port) = ports.iter().find(|p| p.name == port_name) else {
            self.refuse(
                format!("{cp}.port_name"),
                format!("no port is named '{port_name}'"),
            );
            return None;
        };
        // OTG's ranges and defaults: a hold time of 10 to 65535 s (120), an interval of 5 to
        // 65534 s (30).
        let mut seconds = |key: &str, v: &Option<Value>, default: u16, lo: u128, hi: u128| match v
            .as_ref()
            .map(int)
        {
            None => default,
            Some(Some(n)) if (lo..=hi).contains(&n) => n as u16,
            Some(_) => {
                self.refuse(format!("{path}.{key}"), format!("{lo} to {hi}"));
                default
            }
        };
        let hold_time = seconds("hold_time", &a.hold_time, 120, 10, 65535);
        let interval = seconds(
            "advertisement_interval",
            &a.advertisement_interval,
            30,
            5,
            65534,
        );
        let mut mac = agent_mac(&a.name);
        let mut chassis_local = None;
        let ch = a.chassis_id.clone().unwrap_or_default();
        let chp = format!("{path}.chassis_id");
        self.rest(&chp, &ch.rest);
        match ch.choice.as_deref() {
            None | Some("mac_address_subtype") => {
                let m = ch.mac_address_subtype.clone().unwrap_or_default();
                let mp = format!("{chp}.mac_address_subtype");
                self.rest(&mp, &m.rest);
                match m.choice.as_deref() {
                    None | Some("auto") => {}
                    Some("value") => match m.value.as_deref().and_then(parse_mac) {
                        Some(v) if v[0] & 1 == 0 && v != [0; 6] => mac = v,
                        _ => self.refuse(
                            format!("{mp}.value"),
                            "a unicast MAC (the agent sends from it)",
                        ),
                    },
                    Some(other) => self.refuse(
                        format!("{mp}.choice"),
                        format!("'{other}' is not auto or value"),
                    ),
                }
            }
            Some("local_subtype") => match ch.local_subtype.as_deref() {
                Some(v) if !v.is_empty() => chassis_local = Some(v.to_owned()),
                _ => self.refuse(format!("{chp}.local_subtype"), "a local chassis id"),
            },
            Some("interface_name_subtype") => self.refuse(
                format!("{chp}.choice"),
                "lldpd sends a chassis id of subtype MAC or local: interface_name_subtype is not \
                 supported",
            ),
            Some(other) => self.refuse(
                format!("{chp}.choice"),
                format!("'{other}' is not a chassis id subtype"),
            ),
        }
        let mut interface = port.location.iface.clone();
        let pi = a.port_id.clone().unwrap_or_default();
        let pp = format!("{path}.port_id");
        self.rest(&pp, &pi.rest);
        let port_id = match pi.choice.as_deref() {
            None | Some("interface_name_subtype") => {
                let n = pi.interface_name_subtype.clone().unwrap_or_default();
                let np = format!("{pp}.interface_name_subtype");
                self.rest(&np, &n.rest);
                match n.choice.as_deref() {
                    None | Some("auto") => {}
                    Some("value") => match n.value.as_deref() {
                        Some(v) if !v.is_empty() => interface = v.to_owned(),
                        _ => self.refuse(format!("{np}.value"), "an interface name"),
                    },
                    Some(other) => self.refuse(
                        format!("{np}.choice"),
                        format!("'{other}' is not auto or value"),
                    ),
                }
                PortId::InterfaceName
            }
            Some("mac_address_subtype") => {
                // lldpd's port id of subtype MAC is its link's: the agent's MAC.
                if let Some(v) = pi.mac_address_subtype.as_deref()
                    && parse_mac(v) != Some(mac)
                {
                    self.refuse(
                        format!("{pp}.mac_address_subtype"),
                        "the port id MAC is the agent's own (its chassis MAC): give the same \
                         value, or none",
                    );
                }
                PortId::Mac
            }
            Some("local_subtype") => match pi.local_subtype.as_deref() {
                Some(v) if !v.is_empty() => PortId::Local(v.to_owned()),
                _ => {
                    self.refuse(format!("{pp}.local_subtype"), "a local port id");
                    PortId::Mac
                }
            },
            Some(other) => {
                self.refuse(
                    format!("{pp}.choice"),
                    format!("'{other}' is not a port id subtype"),
                );
                PortId::Mac
            }
        };
        let sn = a.system_name.clone().unwrap_or_default();
        let sp = format!("{path}.system_name");
        self.rest(&sp, &sn.rest);
        let system_name = match sn.choice.as_deref() {
            // auto: the agent's name, which says which agent a neighbour heard.
            None | Some("auto") => Some(a.name.clone()),
            // snappi writes choice value with no value when the object is only touched: the
            // agent's name then, as auto.
            Some("value") => Some(
                sn.value
                    .clone()
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| a.name.clone()),
            ),
            Some(other) => {
                self.refuse(
                    format!("{sp}.choice"),
                    format!("'{other}' is not auto or value"),
                );
                None
            }
        };
        let org_infos = a
            .org_infos
            .iter()
            .enumerate()
            .filter_map(|(k, o)| self.org_info(&format!("{path}.org_infos[{k}]"), o))
            .collect();
        Some(routing::Device {
            name: a.name.clone(),
            links: vec![routing::Link {
                // An agent's port with its agent: the controller hands the device to it.
                port: port.location.to_string(),
                mac,
                addrs: Vec::new(),
            }],
            bgp: None,
            isis: None,
            ospf: None,
            ospf6: None,
            lldp: Some(routing::lldp::Lldp {
                name: a.name.clone(),
                interface,
                chassis_local,
                port_id,
                system_name,
                interval,
                hold_time,
                org_infos,
            }),
        })
    }

    /// One organizationally specific TLV: OTG's defaults (OUI 0080C2, subtype 1, no
    /// information) and ranges (1 to 127, up to 507 bytes).
    fn org_info(&mut self, path: &str, o: &LldpOrgInfo) -> Option<OrgInfo> {
        self.rest(path, &o.rest);
        let hex = |text: &str| -> Option<Vec<u8>> {
            let t = text.trim_start_matches("0x");
            if !t.len().is_multiple_of(2) {
                return None;
            }
            (0..t.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(t.get(i..i + 2)?, 16).ok())
                .collect()
        };
        let oui = match o.oui.as_deref() {
            None => Some([0x00, 0x80, 0xc2]),
            Some(t) => hex(t).and_then(|b| b.try_into().ok()),
        };
        if oui.is_none() {
            self.refuse(format!("{path}.oui"), "six hex digits, e.g. 0080C2");
        }
        let subtype = match o.subtype.as_ref().map(int) {
            None => Some(1),
            Some(Some(n)) if (1..=127).contains(&n) => Some(n as u8),
            Some(_) => None,
        };
        if subtype.is_none() {
            self.refuse(format!("{path}.subtype"), "1 to 127");
        }
        let mut info = Vec::new();
        if let Some(i) = &o.information {
            let ip = format!("{path}.information");
            self.rest(&ip, &i.rest);
            match i.choice.as_deref() {
                None | Some("info") => match i.info.as_deref().map(hex) {
                    None => {}
                    Some(Some(b)) if !b.is_empty() && b.len() <= ORG_INFO_MAX => info = b,
                    Some(_) => self.refuse(
                        format!("{ip}.info"),
                        format!("1 to {ORG_INFO_MAX} bytes, two hex digits each"),
                    ),
                },
                Some(other) => {
                    self.refuse(format!("{ip}.choice"), format!("'{other}' is not info"))
                }
            }
        }
        Some(OrgInfo {
            oui: oui?,
            subtype: subtype?,
            info,
        })
    }
}
