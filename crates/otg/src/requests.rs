//! What a client asks of a config, read from the bodies of set_control_state, get_metrics and
//! get_states into values, each refusal naming its JSON path. The server then only does it.

use linerate_stream::Rate;

use crate::{ControlState, Mapped, MetricsRequest, Rest, StatesRequest};

/// What set_control_state asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Start, stop, pause or resume the flows at these indices of the config (every flow when
    /// `all`).
    Transmit {
        action: Transmit,
        flows: Vec<usize>,
        all: bool,
    },
    /// Start or stop the captures of these ports (each has one in the config).
    Capture { ports: Vec<String>, start: bool },
    /// Start or stop every device's control plane (`protocol.all`).
    Protocols { start: bool },
    /// Advertise or withdraw these route ranges (`protocol.route`; each is in the config).
    Routes { names: Vec<String>, advertise: bool },
    /// The links of these LAG member ports set up or down (`port.link`): their interfaces'
    /// locations (`IFACE[@NETNS]`).
    Link { locations: Vec<String>, up: bool },
    /// LACP started (up) or stopped on these LAG member ports (`protocol.lacp.admin`; each a
    /// member of an LACP LAG; every member with none named).
    LacpAdmin { ports: Vec<String>, up: bool },
}

/// What get_metrics asks for: the flows or the ports named (all, with none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsAsk {
    Flows(Vec<String>),
    Ports(Vec<String>),
    /// The BGP peers of one family named (all of the family, with none).
    Bgp {
        v6: bool,
        peers: Vec<String>,
    },
    /// The IS-IS routers named (all, with none).
    Isis(Vec<String>),
    /// The OSPFv2 routers named (all, with none).
    Ospfv2(Vec<String>),
    /// The OSPFv3 routers (instances) named (all, with none).
    Ospfv3(Vec<String>),
    /// The LLDP agents named (all, with none).
    Lldp(Vec<String>),
    /// The LAGs named (all, with none).
    Lag(Vec<String>),
    /// The members of the LACP LAGs named (all, with none), of the member ports named (all,
    /// with none).
    Lacp {
        lags: Vec<String>,
        members: Vec<String>,
    },
}

/// What get_states asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatesAsk {
    Neighbors(NeighborsAsk),
    /// The prefixes these peers sent (every peer, with none), of the families asked.
    BgpPrefixes {
        peers: Vec<String>,
        v4: bool,
        v6: bool,
    },
    /// The LSPs these IS-IS routers learned (every router's, with none).
    IsisLsps(Vec<String>),
    /// The LSAs these OSPFv2 routers learned (every router's, with none).
    Ospfv2Lsas(Vec<String>),
    /// The LSAs these OSPFv3 routers learned (every router's, with none).
    Ospfv3Lsas(Vec<String>),
    /// The neighbours these LLDP agents heard (every agent's, with none), those of these
    /// neighbour ids (all, with none).
    LldpNeighbors {
        agents: Vec<String>,
        neighbors: Vec<String>,
    },
}

/// What get_states asks for: the neighbours of one family, of the ethernets named (all, with
/// none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborsAsk {
    pub v6: bool,
    pub ethernets: Vec<String>,
}

/// `path.KEY: not supported` for the first key of `rest` linerate does not model.
fn rest(path: &str, rest: &Rest) -> Result<(), String> {
    match rest.iter().find(|(_, v)| !v.is_null()) {
        Some((k, _)) if path.is_empty() => Err(format!("{k}: not supported by linerate")),
        Some((k, _)) => Err(format!("{path}.{k}: not supported by linerate")),
        None => Ok(()),
    }
}

/// The control a set_control_state body asks for, checked against the config.
pub fn control(state: &ControlState, mapped: &Mapped) -> Result<Control, String> {
    rest("body", &state.rest)?;
    match (state.choice.as_deref(), &state.traffic, &state.port) {
        (Some("traffic") | None, Some(t), _) => {
            rest("traffic", &t.rest)?;
            match (t.choice.as_deref(), &t.flow_transmit) {
                (Some("flow_transmit") | None, Some(ft)) => transmit(ft, mapped),
                (choice, _) => Err(format!(
                    "traffic.choice: '{}' is not supported (flow_transmit is)",
                    choice.unwrap_or("")
                )),
            }
        }
        (Some("port") | None, _, Some(p)) => {
            rest("port", &p.rest)?;
            match (p.choice.as_deref(), &p.capture, &p.link) {
                (Some("capture") | None, Some(c), _) => capture(c, mapped),
                (Some("link") | None, _, Some(l)) => link(l, mapped),
                (choice, _, _) => Err(format!(
                    "port.choice: '{}' is not supported (capture is, and link on LAG members)",
                    choice.unwrap_or("")
                )),
            }
        }
        (Some("protocol") | None, _, _) if state.protocol.is_some() => {
            protocol(state.protocol.as_ref().expect("checked"), mapped)
        }
        (choice, _, _) => Err(format!(
            "choice: '{}' is not supported: linerate has traffic, port capture and protocol states",
            choice.unwrap_or("")
        )),
    }
}

fn protocol(p: &crate::bgp::StateProtocol, mapped: &Mapped) -> Result<Control, String> {
    rest("protocol", &p.rest)?;
    // Devices without a control plane have their interfaces' protocols, ARP and ND, which
    // answer from set_config on: `protocol.all` is theirs to accept (ixia-c's suites send it
    // whenever a config has devices), and changes nothing.
    if mapped.routers.is_empty() && mapped.lags.is_empty() && mapped.hosts.is_empty() {
        return Err(
            "protocol: the config has no devices (devices[]) and no LAGs (lags[]): no protocol to start or stop".into(),
        );
    }
    match (p.choice.as_deref(), &p.all, &p.route) {
        (Some("all") | None, Some(all), _) => {
            rest("protocol.all", &all.rest)?;
            match all.state.as_deref() {
                Some("start") => Ok(Control::Protocols { start: true }),
                Some("stop") => Ok(Control::Protocols { start: false }),
                other => Err(format!(
                    "protocol.all.state: '{}' is not start or stop",
                    other.unwrap_or("")
                )),
            }
        }
        (Some("route") | None, _, Some(route)) => {
            rest("protocol.route", &route.rest)?;
            for (i, name) in route.names.iter().enumerate() {
                if !mapped.ranges.iter().any(|r| &r.name == name) {
                    return Err(format!(
                        "protocol.route.names[{i}]: no route range is named '{name}'"
                    ));
                }
            }
            let names = if route.names.is_empty() {
                mapped.ranges.iter().map(|r| r.name.clone()).collect()
            } else {
                route.names.clone()
            };
            match route.state.as_deref() {
                Some("advertise") => Ok(Control::Routes {
                    names,
                    advertise: true,
                }),
                Some("withdraw") => Ok(Control::Routes {
                    names,
                    advertise: false,
                }),
                other => Err(format!(
                    "protocol.route.state: '{}' is not advertise or withdraw",
                    other.unwrap_or("")
                )),
            }
        }
        (Some("lacp"), _, _) => lacp_admin(p.lacp.as_ref(), mapped),
        (choice, _, _) => Err(format!(
            "protocol.choice: '{}' is not supported (all, route and lacp are)",
            choice.unwrap_or("")
        )),
    }
}

/// `port.link`: on LAG members only (a LAG's member going down is what a test of it asks; the
/// other ports' links are the interfaces' own).
fn link(l: &crate::StatePortLink, mapped: &Mapped) -> Result<Control, String> {
    rest("port.link", &l.rest)?;
    let members: Vec<&linerate_lacp::MemberSpec> =
        mapped.lags.iter().flat_map(|l| &l.members).collect();
    if members.is_empty() {
        return Err(
            "port.link: the config has no LAG (lags[]): links are set on LAG members only".into(),
        );
    }
    let mut locations = Vec::new();
    for (i, name) in l.port_names.iter().enumerate() {
        match members.iter().find(|m| &m.port == name) {
            Some(m) => locations.push(m.location.clone()),
            None => {
                return Err(format!(
                    "port.link.port_names[{i}]: '{name}' is not a LAG member: links are set on \
                     LAG members only"
                ));
            }
        }
    }
    if l.port_names.is_empty() {
        locations = members.iter().map(|m| m.location.clone()).collect();
    }
    match l.state.as_deref() {
        Some("up") => Ok(Control::Link {
            locations,
            up: true,
        }),
        Some("down") => Ok(Control::Link {
            locations,
            up: false,
        }),
        other => Err(format!(
            "port.link.state: '{}' is not up or down",
            other.unwrap_or("")
        )),
    }
}

/// `protocol.lacp`: its `admin` choice, on members of LACP LAGs.
fn lacp_admin(
    l: Option<&crate::lag::StateProtocolLacp>,
    mapped: &Mapped,
) -> Result<Control, String> {
    let l = l.cloned().unwrap_or_default();
    rest("protocol.lacp", &l.rest)?;
    let admin = match (l.choice.as_deref(), l.admin) {
        (Some("admin") | None, Some(a)) => a,
        (choice, _) => {
            return Err(format!(
                "protocol.lacp.choice: '{}' is not supported (admin is)",
                choice.unwrap_or("")
            ));
        }
    };
    rest("protocol.lacp.admin", &admin.rest)?;
    let members: Vec<&str> = mapped
        .lags
        .iter()
        .filter(|l| matches!(l.protocol, linerate_lacp::Protocol::Lacp { .. }))
        .flat_map(|l| &l.members)
        .map(|m| m.port.as_str())
        .collect();
    for (i, name) in admin.lag_member_names.iter().enumerate() {
        if !members.contains(&name.as_str()) {
            return Err(format!(
                "protocol.lacp.admin.lag_member_names[{i}]: no LACP LAG has a port named '{name}'"
            ));
        }
    }
    let ports = if admin.lag_member_names.is_empty() {
        members.iter().map(|m| (*m).to_owned()).collect()
    } else {
        admin.lag_member_names
    };
    match admin.state.as_deref() {
        Some("up") => Ok(Control::LacpAdmin { ports, up: true }),
        Some("down") => Ok(Control::LacpAdmin { ports, up: false }),
        other => Err(format!(
            "protocol.lacp.admin.state: '{}' is not up or down",
            other.unwrap_or("")
        )),
    }
}

/// The BGP peers of `mapped`, of one family, by name.
fn bgp_peers(mapped: &Mapped, v6: Option<bool>) -> Vec<&str> {
    mapped
        .routers
        .iter()
        .filter_map(|d| d.bgp.as_ref())
        .flat_map(|b| &b.peers)
        .filter(|p| v6.is_none_or(|v6| p.address.is_ipv6() == v6))
        .map(|p| p.name.as_str())
        .collect()
}

/// The IS-IS routers of `mapped`, by name.
fn isis_routers(mapped: &Mapped) -> Vec<&str> {
    mapped
        .routers
        .iter()
        .filter_map(|d| d.isis.as_ref())
        .map(|i| i.name.as_str())
        .collect()
}

/// The OSPFv2 routers of `mapped`, by name.
fn ospfv2_routers(mapped: &Mapped) -> Vec<&str> {
    mapped
        .routers
        .iter()
        .filter_map(|d| d.ospf.as_ref())
        .map(|o| o.name.as_str())
        .collect()
}

/// The OSPFv3 routers (instances) of `mapped`, by name.
fn ospfv3_routers(mapped: &Mapped) -> Vec<&str> {
    mapped
        .routers
        .iter()
        .filter_map(|d| d.ospf6.as_ref())
        .map(|o| o.name.as_str())
        .collect()
}

/// The LLDP agents of `mapped`, by name.
fn lldp_agents(mapped: &Mapped) -> Vec<&str> {
    mapped
        .routers
        .iter()
        .filter_map(|d| d.lldp.as_ref())
        .map(|l| l.name.as_str())
        .collect()
}

/// `asked` (at `path`), each one of `known`; `what` names the protocol, what it calls one
/// (router, agent) and its node in the config.
fn routers_named(
    what: (&str, &str, &str),
    path: &str,
    asked: &[String],
    known: &[&str],
) -> Result<Vec<String>, String> {
    let (protocol, kind, node) = what;
    if known.is_empty() {
        return Err(format!(
            "{}: the config has no {protocol} {kind} ({node})",
            path.split('.').next().unwrap_or(path)
        ));
    }
    for (i, name) in asked.iter().enumerate() {
        if !known.contains(&name.as_str()) {
            return Err(format!(
                "{path}[{i}]: no {protocol} {kind} is named '{name}'"
            ));
        }
    }
    Ok(asked.to_vec())
}

/// What `traffic.flow_transmit` does to the flows it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transmit {
    Start,
    Stop,
    Pause,
    Resume,
}

fn transmit(ft: &crate::StateTrafficFlowTransmit, mapped: &Mapped) -> Result<Control, String> {
    let mut flows = Vec::with_capacity(ft.flow_names.len());
    for (i, name) in ft.flow_names.iter().enumerate() {
        match mapped.flows.iter().position(|f| &f.name == name) {
            Some(at) if !flows.contains(&at) => flows.push(at),
            Some(_) => {}
            None => {
                return Err(format!(
                    "traffic.flow_transmit.flow_names[{i}]: no flow is named '{name}'"
                ));
            }
        }
    }
    let all = flows.is_empty() || flows.len() == mapped.flows.len();
    if flows.is_empty() {
        flows = (0..mapped.flows.len()).collect();
    }
    let action = match ft.state.as_deref() {
        Some("start") if mapped.flows.is_empty() => {
            return Err("the config has no flows to transmit".into());
        }
        Some("start") => Transmit::Start,
        Some("stop") => Transmit::Stop,
        Some("pause") => Transmit::Pause,
        Some("resume") => Transmit::Resume,
        other => {
            return Err(format!(
                "traffic.flow_transmit.state: '{}' is not start, stop, pause or resume",
                other.unwrap_or("")
            ));
        }
    };
    Ok(Control::Transmit { action, flows, all })
}

/// What `update_config` changes: each flow's index in the config and its new rate.
#[derive(Debug, Clone, PartialEq)]
pub struct RateUpdate {
    pub flow: usize,
    pub rate: Rate,
}

/// Reads an `update_config` body: the flows named, each with its new rate (the one property
/// linerate changes while a flow runs; `size` lays new frames, so it is refused).
pub fn update(u: &crate::ConfigUpdate, mapped: &Mapped) -> Result<Vec<RateUpdate>, String> {
    if let Some(k) = u.rest.keys().next() {
        return Err(format!("{k}: not in the model of Config.Update"));
    }
    match u.choice.as_deref() {
        None | Some("flows") => {}
        Some("protocols") => {
            return Err("choice: protocols updates are not supported: set_config again".into());
        }
        Some(other) => return Err(format!("choice: '{other}' is not flows or protocols")),
    }
    let f = u
        .flows
        .as_ref()
        .ok_or("flows: missing (the flows to update and property_names)")?;
    if let Some(k) = f.rest.keys().next() {
        return Err(format!("flows.{k}: not in the model of Flows.Update"));
    }
    for (i, p) in f.property_names.iter().enumerate() {
        match p.as_str() {
            "rate" => {}
            "size" => {
                return Err(format!(
                    "flows.property_names[{i}]: size is not changed while a flow runs (its \
                     frames are laid before the run): set_config with the new size"
                ));
            }
            other => {
                return Err(format!(
                    "flows.property_names[{i}]: '{other}' is not rate or size"
                ));
            }
        }
    }
    if f.property_names.is_empty() {
        return Err("flows.property_names: name the properties to update (rate)".into());
    }
    let mut updates = Vec::with_capacity(f.flows.len());
    for (i, flow) in f.flows.iter().enumerate() {
        let at = format!("flows.flows[{i}]");
        let index = mapped
            .flows
            .iter()
            .position(|m| m.name == flow.name)
            .ok_or_else(|| format!("{at}.name: no flow is named '{}'", flow.name))?;
        let rate = crate::map::rate_of(&at, flow.rate.as_ref())?;
        updates.push(RateUpdate { flow: index, rate });
    }
    Ok(updates)
}

/// How many times its old rate `new` is, when both are in one unit (a bit rate keeps its frame
/// sizes, a percentage its link, so its planned frame rate scales by as much).
pub fn same_unit_scale(old: Rate, new: Rate) -> Option<f64> {
    match (old, new) {
        (Rate::Pps(a), Rate::Pps(b))
        | (Rate::L2(a), Rate::L2(b))
        | (Rate::L1(a), Rate::L1(b))
        | (Rate::Percent(a), Rate::Percent(b)) => Some(b / a),
        _ => None,
    }
}

/// The frame rate that gives `new` for a flow planned at `planned_pps` frames per second to
/// give `old`: the same unit scales the planned rate (a bit rate's frames keep their sizes);
/// frames per second are themselves; bits against frames need the flow's bits per frame, read
/// from its old bit rate.
pub fn frame_rate(old: Rate, new: Rate, planned_pps: f64) -> Result<f64, String> {
    // L2 bits per frame of the planned schedule, where the old rate says it.
    let l2_bits = match old {
        Rate::L2(b) => Some(b / planned_pps),
        Rate::L1(b) => Some(b / planned_pps - 160.0),
        Rate::Pps(_) | Rate::Percent(_) | Rate::Max => None,
    };
    let pps = match (old, new) {
        (_, Rate::Pps(p)) => p,
        _ if same_unit_scale(old, new).is_some() => {
            planned_pps * same_unit_scale(old, new).unwrap_or(1.0)
        }
        (_, Rate::L2(b)) if l2_bits.is_some() => b / l2_bits.unwrap_or(1.0),
        (_, Rate::L1(b)) if l2_bits.is_some() => b / (l2_bits.unwrap_or(1.0) + 160.0),
        (Rate::Max, _) => {
            return Err(
                "the flow is sent at the port's max rate, unpaced: it has no schedule to change \
                 (set_config with a rate)"
                    .into(),
            );
        }
        (_, Rate::Max) => return Err("rate: max is not a rate a running flow can take".into()),
        _ => {
            return Err(
                "rate: give the new rate in the unit the flow was configured with (pps, a bit \
                 rate or percentage): its frame sizes are not known here"
                    .into(),
            );
        }
    };
    if pps.is_finite() && pps > 0.0 {
        Ok(pps)
    } else {
        Err(format!("rate: {pps} frames per second is not a rate"))
    }
}

fn capture(c: &crate::StatePortCapture, mapped: &Mapped) -> Result<Control, String> {
    let ports: Vec<String> = if c.port_names.is_empty() {
        mapped
            .ports
            .iter()
            .filter(|p| p.capture)
            .map(|p| p.name.clone())
            .collect()
    } else {
        c.port_names.clone()
    };
    for (i, name) in ports.iter().enumerate() {
        match mapped.port(name) {
            None => {
                return Err(format!(
                    "port.capture.port_names[{i}]: no port is named '{name}'"
                ));
            }
            Some(p) if !p.capture => {
                return Err(format!(
                    "port.capture.port_names[{i}]: port '{name}' has no capture in the config \
                     (add one under captures)"
                ));
            }
            Some(_) => {}
        }
    }
    let start = match c.state.as_deref() {
        Some("start") => true,
        Some("stop") => false,
        other => {
            return Err(format!(
                "port.capture.state: '{}' is not start or stop",
                other.unwrap_or("")
            ));
        }
    };
    Ok(Control::Capture { ports, start })
}

/// The metrics a get_metrics body asks for, checked against the config.
pub fn metrics(req: &MetricsRequest, mapped: &Mapped) -> Result<MetricsAsk, String> {
    match (req.choice.as_deref(), &req.flow, &req.port) {
        (Some("flow") | None, Some(f), _) => {
            for (i, name) in f.flow_names.iter().enumerate() {
                if !mapped.flows.iter().any(|g| &g.name == name) {
                    return Err(format!("flow.flow_names[{i}]: no flow is named '{name}'"));
                }
            }
            Ok(MetricsAsk::Flows(f.flow_names.clone()))
        }
        (Some("port") | None, _, p) => {
            let names = p.as_ref().map(|p| p.port_names.clone()).unwrap_or_default();
            for (i, name) in names.iter().enumerate() {
                if mapped.port(name).is_none() {
                    return Err(format!("port.port_names[{i}]: no port is named '{name}'"));
                }
            }
            Ok(MetricsAsk::Ports(names))
        }
        (Some(c @ ("bgpv4" | "bgpv6")), _, _) => {
            let v6 = c == "bgpv6";
            let asked = if v6 { &req.bgpv6 } else { &req.bgpv4 };
            let asked = asked.clone().unwrap_or_default();
            let known = bgp_peers(mapped, Some(v6));
            for (i, name) in asked.peer_names.iter().enumerate() {
                if !known.contains(&name.as_str()) {
                    return Err(format!(
                        "{c}.peer_names[{i}]: no {c} peer is named '{name}'"
                    ));
                }
            }
            Ok(MetricsAsk::Bgp {
                v6,
                peers: asked.peer_names,
            })
        }
        (Some("isis"), _, _) => {
            let asked = req.isis.clone().unwrap_or_default();
            rest("isis", &asked.rest)?;
            let known = isis_routers(mapped);
            if known.is_empty() {
                return Err("isis: the config has no IS-IS router (devices[].isis)".into());
            }
            for (i, name) in asked.router_names.iter().enumerate() {
                if !known.contains(&name.as_str()) {
                    return Err(format!(
                        "isis.router_names[{i}]: no IS-IS router is named '{name}'"
                    ));
                }
            }
            Ok(MetricsAsk::Isis(asked.router_names))
        }
        (Some("ospfv2"), _, _) => {
            let asked = req.ospfv2.clone().unwrap_or_default();
            rest("ospfv2", &asked.rest)?;
            routers_named(
                ("OSPFv2", "router", "devices[].ospfv2"),
                "ospfv2.router_names",
                &asked.router_names,
                &ospfv2_routers(mapped),
            )
            .map(MetricsAsk::Ospfv2)
        }
        (Some("ospfv3"), _, _) => {
            let asked = req.ospfv3.clone().unwrap_or_default();
            rest("ospfv3", &asked.rest)?;
            routers_named(
                ("OSPFv3", "router", "devices[].ospfv3"),
                "ospfv3.router_names",
                &asked.router_names,
                &ospfv3_routers(mapped),
            )
            .map(MetricsAsk::Ospfv3)
        }
        (Some("lldp"), _, _) => {
            let asked = req.lldp.clone().unwrap_or_default();
            rest("lldp", &asked.rest)?;
            routers_named(
                ("LLDP", "agent", "lldp[]"),
                "lldp.lldp_names",
                &asked.lldp_names,
                &lldp_agents(mapped),
            )
            .map(MetricsAsk::Lldp)
        }
        (Some("lag"), _, _) => {
            let asked = req.lag.clone().unwrap_or_default();
            rest("lag", &asked.rest)?;
            let known: Vec<&str> = mapped.lags.iter().map(|l| l.name.as_str()).collect();
            routers_named(
                ("static or LACP", "LAG", "lags[]"),
                "lag.lag_names",
                &asked.lag_names,
                &known,
            )
            .map(MetricsAsk::Lag)
        }
        (Some("lacp"), _, _) => {
            let asked = req.lacp.clone().unwrap_or_default();
            rest("lacp", &asked.rest)?;
            let lacp = mapped
                .lags
                .iter()
                .filter(|l| matches!(l.protocol, linerate_lacp::Protocol::Lacp { .. }));
            let known: Vec<&str> = lacp.clone().map(|l| l.name.as_str()).collect();
            let lags = routers_named(
                ("LACP", "LAG", "lags[].protocol.lacp"),
                "lacp.lag_names",
                &asked.lag_names,
                &known,
            )?;
            let ports: Vec<&str> = lacp
                .flat_map(|l| &l.members)
                .map(|m| m.port.as_str())
                .collect();
            for (i, name) in asked.lag_member_port_names.iter().enumerate() {
                if !ports.contains(&name.as_str()) {
                    return Err(format!(
                        "lacp.lag_member_port_names[{i}]: no LACP LAG has a port named '{name}'"
                    ));
                }
            }
            Ok(MetricsAsk::Lacp {
                lags,
                members: asked.lag_member_port_names,
            })
        }
        (Some(other), _, _) => Err(format!(
            "choice: '{other}' metrics are not supported (port, flow, bgpv4, bgpv6, isis, \
             ospfv2, ospfv3, lldp, lag and lacp are)"
        )),
    }
}

/// The neighbours a get_states body asks for, checked against the config.
pub fn states(req: &StatesRequest, mapped: &Mapped) -> Result<StatesAsk, String> {
    rest("", &req.rest)?;
    let (v6, asked) = match req.choice.as_deref() {
        Some("ipv4_neighbors") | None => (false, &req.ipv4_neighbors),
        Some("ipv6_neighbors") => (true, &req.ipv6_neighbors),
        Some("bgp_prefixes") => return bgp_prefixes(req, mapped),
        Some("isis_lsps") => {
            let asked = req.isis_lsps.clone().unwrap_or_default();
            rest("isis_lsps", &asked.rest)?;
            let known = isis_routers(mapped);
            if known.is_empty() {
                return Err("isis_lsps: the config has no IS-IS router (devices[].isis)".into());
            }
            for (i, name) in asked.isis_router_names.iter().enumerate() {
                if !known.contains(&name.as_str()) {
                    return Err(format!(
                        "isis_lsps.isis_router_names[{i}]: no IS-IS router is named '{name}'"
                    ));
                }
            }
            return Ok(StatesAsk::IsisLsps(asked.isis_router_names));
        }
        Some("ospfv2_lsas") => {
            let asked = req.ospfv2_lsas.clone().unwrap_or_default();
            rest("ospfv2_lsas", &asked.rest)?;
            return routers_named(
                ("OSPFv2", "router", "devices[].ospfv2"),
                "ospfv2_lsas.router_names",
                &asked.router_names,
                &ospfv2_routers(mapped),
            )
            .map(StatesAsk::Ospfv2Lsas);
        }
        Some("ospfv3_lsas") => {
            let asked = req.ospfv3_lsas.clone().unwrap_or_default();
            rest("ospfv3_lsas", &asked.rest)?;
            return routers_named(
                ("OSPFv3", "router", "devices[].ospfv3"),
                "ospfv3_lsas.router_names",
                &asked.router_names,
                &ospfv3_routers(mapped),
            )
            .map(StatesAsk::Ospfv3Lsas);
        }
        Some("lldp_neighbors") => {
            let asked = req.lldp_neighbors.clone().unwrap_or_default();
            rest("lldp_neighbors", &asked.rest)?;
            let agents = routers_named(
                ("LLDP", "agent", "lldp[]"),
                "lldp_neighbors.lldp_names",
                &asked.lldp_names,
                &lldp_agents(mapped),
            )?;
            return Ok(StatesAsk::LldpNeighbors {
                agents,
                neighbors: asked.neighbor_id_filters,
            });
        }
        Some(other) => {
            return Err(format!(
                "choice: '{other}' is not supported (ipv4_neighbors, ipv6_neighbors, \
                 bgp_prefixes, isis_lsps, ospfv2_lsas, ospfv3_lsas and lldp_neighbors are)"
            ));
        }
    };
    let key = if v6 {
        "ipv6_neighbors"
    } else {
        "ipv4_neighbors"
    };
    let asked = asked.clone().unwrap_or_default();
    rest(key, &asked.rest)?;
    for (i, name) in asked.ethernet_names.iter().enumerate() {
        if !mapped.hosts.iter().any(|h| &h.ethernet == name) {
            return Err(format!(
                "{key}.ethernet_names[{i}]: no ethernet with an address is named '{name}'"
            ));
        }
    }
    Ok(StatesAsk::Neighbors(NeighborsAsk {
        v6,
        ethernets: asked.ethernet_names,
    }))
}

fn bgp_prefixes(req: &StatesRequest, mapped: &Mapped) -> Result<StatesAsk, String> {
    let asked = req.bgp_prefixes.clone().unwrap_or_default();
    rest("bgp_prefixes", &asked.rest)?;
    let known = bgp_peers(mapped, None);
    for (i, name) in asked.bgp_peer_names.iter().enumerate() {
        if !known.contains(&name.as_str()) {
            return Err(format!(
                "bgp_prefixes.bgp_peer_names[{i}]: no BGP peer is named '{name}'"
            ));
        }
    }
    let (mut v4, mut v6) = (
        asked.prefix_filters.is_empty(),
        asked.prefix_filters.is_empty(),
    );
    for (i, f) in asked.prefix_filters.iter().enumerate() {
        match f.as_str() {
            "ipv4_unicast" => v4 = true,
            "ipv6_unicast" => v6 = true,
            other => {
                return Err(format!(
                    "bgp_prefixes.prefix_filters[{i}]: '{other}' is not ipv4_unicast or ipv6_unicast"
                ));
            }
        }
    }
    let peers = if asked.bgp_peer_names.is_empty() {
        known.iter().map(|s| (*s).to_owned()).collect()
    } else {
        asked.bgp_peer_names
    };
    Ok(StatesAsk::BgpPrefixes { peers, v4, v6 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped() -> Mapped {
        let config = serde_json::json!({
            "ports": [{"name": "p1", "location": "a0"}, {"name": "p2", "location": "a1"}],
            "captures": [{"name": "c", "port_names": ["p2"]}],
            "flows": [{"name": "f", "tx_rx": {"choice": "port",
                "port": {"tx_name": "p1", "rx_names": ["p2"]}},
                "packet": [{"choice": "ethernet", "ethernet": {}}, {"choice": "ipv4", "ipv4": {}},
                    {"choice": "udp", "udp": {}}]}]
        });
        crate::map_config(&crate::parse_config(config.to_string().as_bytes()).unwrap()).unwrap()
    }

    fn body<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn controls_are_read_into_values_and_refused_by_path() {
        let m = mapped();
        let start = body(serde_json::json!({"choice": "traffic",
            "traffic": {"choice": "flow_transmit", "flow_transmit": {"state": "start"}}}));
        assert_eq!(
            control(&start, &m),
            Ok(Control::Transmit {
                action: Transmit::Start,
                flows: vec![0],
                all: true
            })
        );
        let capture = body(serde_json::json!({"choice": "port",
            "port": {"choice": "capture", "capture": {"state": "stop"}}}));
        assert_eq!(
            control(&capture, &m),
            Ok(Control::Capture {
                ports: vec!["p2".into()],
                start: false
            })
        );
        let pause = body(serde_json::json!({"traffic": {"flow_transmit":
            {"state": "pause", "flow_names": ["f", "f"]}}}));
        assert_eq!(
            control(&pause, &m),
            Ok(Control::Transmit {
                action: Transmit::Pause,
                flows: vec![0],
                all: true
            })
        );
        let hold = body(serde_json::json!({"traffic": {"flow_transmit": {"state": "hold"}}}));
        assert!(
            control(&hold, &m)
                .unwrap_err()
                .starts_with("traffic.flow_transmit.state")
        );
        let no_capture = body(serde_json::json!({"port": {"capture":
            {"port_names": ["p1"], "state": "start"}}}));
        let e = control(&no_capture, &m).unwrap_err();
        assert!(e.starts_with("port.capture.port_names[0]"), "{e}");
        let protocol = body(serde_json::json!({"choice": "protocol",
            "protocol": {"choice": "all", "all": {"state": "start"}}}));
        assert!(
            control(&protocol, &m)
                .unwrap_err()
                .contains("no devices (devices[]) and no LAGs")
        );
    }

    #[test]
    fn an_update_gives_each_flow_named_its_new_rate_and_refuses_the_rest_by_path() {
        let m = mapped();
        let up = |v: serde_json::Value| update(&body(v), &m);
        let rate = serde_json::json!({"choice": "flows", "flows": {"property_names": ["rate"],
            "flows": [{"name": "f", "rate": {"choice": "pps", "pps": 2500}}]}});
        assert_eq!(
            up(rate),
            Ok(vec![RateUpdate {
                flow: 0,
                rate: Rate::Pps(2500.0)
            }])
        );
        let size = serde_json::json!({"flows": {"property_names": ["size"], "flows": []}});
        assert!(
            up(size)
                .unwrap_err()
                .starts_with("flows.property_names[0]: size")
        );
        let nosuch = serde_json::json!({"flows": {"property_names": ["rate"],
            "flows": [{"name": "g"}]}});
        assert_eq!(
            up(nosuch).unwrap_err(),
            "flows.flows[0].name: no flow is named 'g'"
        );
        let zero = serde_json::json!({"flows": {"property_names": ["rate"],
            "flows": [{"name": "f", "rate": {"choice": "mbps", "mbps": 0}}]}});
        assert!(
            up(zero)
                .unwrap_err()
                .starts_with("flows.flows[0].rate.mbps")
        );
    }

    #[test]
    fn a_new_rate_is_a_frame_rate_by_the_unit_it_and_the_old_one_are_given_in() {
        // Planned at 1000 frames/s of 1000 L2 bits (125-byte frames).
        let planned = 1000.0;
        assert_eq!(
            frame_rate(Rate::Pps(1000.0), Rate::Pps(4000.0), planned),
            Ok(4000.0)
        );
        assert_eq!(
            frame_rate(Rate::L2(1e6), Rate::L2(3e6), planned),
            Ok(3000.0)
        );
        assert_eq!(
            frame_rate(Rate::Percent(10.0), Rate::Percent(5.0), planned),
            Ok(500.0)
        );
        // Frames of 1000 L2 bits are 1160 on the wire.
        assert_eq!(
            frame_rate(Rate::L2(1e6), Rate::L1(2.32e6), planned),
            Ok(2000.0)
        );
        assert!(
            frame_rate(Rate::Pps(1000.0), Rate::L2(1e6), planned)
                .unwrap_err()
                .contains("in the unit the flow was configured with")
        );
        assert!(frame_rate(Rate::Max, Rate::Pps(5.0), planned).is_ok());
    }

    #[test]
    fn metrics_and_states_name_what_is_not_in_the_config() {
        let m = mapped();
        let flows = body(serde_json::json!({"choice": "flow", "flow": {"flow_names": ["f"]}}));
        assert_eq!(metrics(&flows, &m), Ok(MetricsAsk::Flows(vec!["f".into()])));
        let nosuch = body(serde_json::json!({"choice": "port", "port": {"port_names": ["x"]}}));
        assert!(
            metrics(&nosuch, &m)
                .unwrap_err()
                .starts_with("port.port_names[0]")
        );
        let v6 = body(serde_json::json!({"choice": "ipv6_neighbors", "ipv6_neighbors": {}}));
        assert_eq!(
            states(&v6, &m),
            Ok(StatesAsk::Neighbors(NeighborsAsk {
                v6: true,
                ethernets: vec![]
            }))
        );
        let bgp = body(serde_json::json!({"choice": "bgp_prefixes",
            "bgp_prefixes": {"bgp_peer_names": ["nobody"]}}));
        assert!(
            states(&bgp, &m)
                .unwrap_err()
                .starts_with("bgp_prefixes.bgp_peer_names[0]")
        );
        let lsps = body(serde_json::json!({"choice": "isis_lsps"}));
        assert!(states(&lsps, &m).unwrap_err().contains("isis_lsps"));
    }
}
