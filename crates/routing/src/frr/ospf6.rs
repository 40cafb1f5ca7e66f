//! FRR's OSPFv3 side: the `ospf6d` configuration of a device with an OSPFv3 [`Ospf`], and the
//! daemon's answers (`show ipv6 ospf6 neighbor detail json`, `show ipv6 ospf6 database detail
//! json`) read into linerate's terms. Ranges are given to ospf6d as OSPFv2's are to ospfd
//! (`frr::ospf`): a veth pair of the device's in an area of its own for inter-area and in the
//! interfaces' area for intra-area ranges, tagged static routes for external ones.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use serde_json::Value;

use super::ospf::{Change, Flavour, LsaHeader, Neighbour};
use crate::{Device, Ospf, RoutingError};

/// OSPFv3's: ospf6d's words, links `r6r<i>`, tags from 20001 (above IS-IS's and OSPFv2's).
const V3: Flavour = Flavour {
    map: "lr-ospf6",
    cmd: "ipv6 ospf6",
    route: "ipv6",
    first_tag: 20_001,
    link: "r6r",
};

/// The device's side of OSPFv3 range `i`'s veth pair; its peer is the same name with `p`.
pub fn range_link(i: usize) -> String {
    V3.range_link(i)
}

/// The whole `ospf6d.conf` of `device`, whose OSPFv3 router is `ospf`.
pub fn ospf6d_config(device: &Device, ospf: &Ospf) -> String {
    let mut out = super::header(&device.name);
    let entries = V3.external_maps(ospf, &mut out);
    for i in &ospf.interfaces {
        let _ = writeln!(out, "interface eth{}", i.link);
        let _ = writeln!(out, " ipv6 ospf6 area {}", i.area);
        if i.point_to_point {
            out.push_str(" ipv6 ospf6 network point-to-point\n");
        } else {
            let _ = writeln!(out, " ipv6 ospf6 priority {}", i.priority);
        }
        let _ = writeln!(out, " ipv6 ospf6 cost {}", i.cost);
        let _ = writeln!(out, " ipv6 ospf6 hello-interval {}", i.hello);
        let _ = writeln!(out, " ipv6 ospf6 dead-interval {}", i.dead);
        let _ = writeln!(out, " ipv6 ospf6 retransmit-interval {}", ospf.retransmit);
        if i.instance != 0 {
            let _ = writeln!(out, " ipv6 ospf6 instance-id {}", i.instance);
        }
        if !i.mtu_check {
            out.push_str(" ipv6 ospf6 mtu-ignore\n");
        }
        out.push_str("exit\n");
    }
    V3.range_interfaces(ospf, &mut out);
    out.push_str("router ospf6\n");
    let _ = writeln!(out, " ospf6 router-id {}", ospf.router_id);
    // As ospfd's (frr::ospf): SPF at once, a new instance taken however soon after the last.
    out.push_str(" timers throttle spf 0 50 1000\n");
    out.push_str(" timers lsa min-arrival 0\n");
    out.push_str(" log-adjacency-changes\n");
    if entries > 0 {
        let _ = writeln!(out, " redistribute static route-map {}", V3.map);
    }
    out.push_str("exit\n");
    out
}

/// The `staticd` lines of every advertised external range.
pub fn static_routes(ospf: &Ospf) -> Result<String, RoutingError> {
    V3.static_routes(ospf)
}

/// What advertises (or withdraws) range `name`; None when no range has that name.
pub fn announce(ospf: &Ospf, name: &str, advertise: bool) -> Result<Option<Change>, RoutingError> {
    V3.announce(ospf, name, advertise)
}

/// An OSPFv3 router as linerate reads it (as [`super::ospf::OspfState`] for OSPFv2).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Ospf6State {
    /// OTG's name of the router (its instance's).
    pub name: String,
    /// None while its daemons are stopped.
    pub view: Option<Ospf6View>,
    pub counts: crate::wire::OspfCounts,
    pub flaps: u64,
    /// Its interfaces' names in the device's namespace.
    pub interfaces: Vec<String>,
}

/// An OSPFv3 router's state, as ospf6d holds it.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Ospf6View {
    pub neighbours: Vec<Neighbour>,
    /// Every LSA of every link, area and of the AS, the router's own among them.
    pub lsas: Vec<Lsa6>,
}

impl Ospf6View {
    /// The prefixes the router's own LSAs advertise: its intra-area-prefix, inter-area-prefix,
    /// AS-external and NSSA LSAs'.
    pub fn own_prefixes(&self) -> Vec<IpNet> {
        let mut out = Vec::new();
        for l in self.lsas.iter().filter(|l| l.header.own) {
            match &l.body {
                Body6::IntraPrefix(p) => out.extend(p.iter().map(|(n, _)| *n)),
                Body6::InterPrefix { prefix, .. } => out.push(*prefix),
                Body6::External(e) | Body6::Nssa(e) => out.push(e.prefix),
                _ => {}
            }
        }
        out
    }
}

/// One OSPFv3 LSA: its header and what its type carries.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Lsa6 {
    /// `area` is the area of an area- or link-scoped LSA.
    pub header: LsaHeader,
    pub body: Body6,
}

/// A router LSA's link (RFC 5340 A.4.3).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Link6 {
    /// `point_to_point`, `transit` or `virtual`, as OTG names them.
    pub kind: String,
    pub metric: u32,
    pub neighbour: Ipv4Addr,
}

/// An external (type 5) or NSSA (type 7) LSA's fields.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct External6 {
    pub prefix: IpNet,
    pub metric: u32,
    pub type_2: bool,
    pub forwarding: Option<Ipv6Addr>,
    pub tag: Option<u32>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub enum Body6 {
    Router(Vec<Link6>),
    Network(Vec<Ipv4Addr>),
    InterPrefix {
        prefix: IpNet,
        metric: u32,
    },
    InterRouter {
        router: Ipv4Addr,
        metric: u32,
    },
    External(External6),
    Nssa(External6),
    Link {
        link_local: Ipv6Addr,
        prefixes: Vec<IpNet>,
    },
    IntraPrefix(Vec<(IpNet, u32)>),
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn number(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn address(v: &Value, key: &str) -> Ipv4Addr {
    text(v, key).parse().unwrap_or(Ipv4Addr::UNSPECIFIED)
}

/// Every neighbour of `show ipv6 ospf6 neighbor detail json` (an object keyed `ID%IFACE`).
pub fn neighbours(json: &Value) -> Vec<Neighbour> {
    json.as_object()
        .into_iter()
        .flatten()
        .map(|(key, n)| Neighbour {
            router_id: key
                .split('%')
                .next()
                .and_then(|id| id.parse().ok())
                .unwrap_or(Ipv4Addr::UNSPECIFIED),
            state: text(n, "neighborState").to_owned(),
            interface: text(n, "interface").to_owned(),
            changes: 0,
        })
        .collect()
}

/// The options bits (RFC 5340 A.2) from FRR's `AT|L|AF|-|-|DC|R|N|MC|E|V6` (dashes for bits
/// clear).
fn options(text: &str) -> u32 {
    text.split('|')
        .map(|f| match f {
            "V6" => 0x01,
            "E" => 0x02,
            "MC" => 0x04,
            "N" => 0x08,
            "R" => 0x10,
            "DC" => 0x20,
            "AF" => 0x100,
            "L" => 0x200,
            "AT" => 0x400,
            _ => 0,
        })
        .fold(0, |a, b| a | b)
}

fn prefix(v: &Value, key: &str) -> Option<IpNet> {
    text(v, key).parse().ok()
}

fn external(l: &Value) -> Option<External6> {
    let bits = text(l, "bits");
    Some(External6 {
        prefix: prefix(l, "prefix")?,
        metric: number(l, "metric") as u32,
        // FRR prints the E, F and T bits, a dash for each clear: E is a type 2 metric.
        type_2: bits.contains('E'),
        forwarding: if l.get("forwardingAddressPresent") == Some(&Value::Bool(true)) {
            text(l, "forwardingAddress").parse().ok()
        } else {
            None
        },
        tag: (l.get("tagPresent") == Some(&Value::Bool(true))).then(|| number(l, "tag") as u32),
    })
}

fn body(l: &Value) -> Option<Body6> {
    let list = |key: &str| l.get(key).and_then(Value::as_array).into_iter().flatten();
    Some(match text(l, "type") {
        "Router" => Body6::Router(
            list("lsaDescription")
                .filter_map(|d| {
                    let kind = match text(d, "type") {
                        "Point-To-Point" => "point_to_point",
                        "Transit-Network" => "transit",
                        "Virtual-Link" => "virtual",
                        _ => return None,
                    };
                    Some(Link6 {
                        kind: kind.to_owned(),
                        metric: number(d, "metric") as u32,
                        neighbour: address(d, "neighborRouterId"),
                    })
                })
                .collect(),
        ),
        "Network" => Body6::Network(
            list("attachedRouter")
                .filter_map(|r| r.as_str().and_then(|s| s.parse().ok()))
                .collect(),
        ),
        "Inter-Prefix" => Body6::InterPrefix {
            prefix: prefix(l, "prefix")?,
            metric: number(l, "metric") as u32,
        },
        "Inter-Router" => Body6::InterRouter {
            router: address(l, "destinationRouterId"),
            metric: number(l, "metric") as u32,
        },
        "AS-External" => Body6::External(external(l)?),
        "NSSA" => Body6::Nssa(external(l)?),
        "Link" => Body6::Link {
            link_local: text(l, "linkLocalAddress")
                .parse()
                .unwrap_or(Ipv6Addr::UNSPECIFIED),
            prefixes: list("prefix").filter_map(|p| prefix(p, "prefix")).collect(),
        },
        "Intra-Prefix" => Body6::IntraPrefix(
            list("prefix")
                .filter_map(|p| Some((prefix(p, "prefix")?, number(p, "metric") as u32)))
                .collect(),
        ),
        _ => return None,
    })
}

/// Every LSA of `show ipv6 ospf6 database detail json`: its area-, link- and AS-scoped
/// databases. `me` is the router's own id (ospf6d's answer does not say it).
pub fn database(json: &Value, me: Ipv4Addr) -> Vec<Lsa6> {
    let mut out = Vec::new();
    for key in [
        "areaScopedLinkStateDb",
        "interfaceScopedLinkStateDb",
        "asScopedLinkStateDb",
    ] {
        for scope in json
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let area = scope
                .get("areaId")
                .and_then(Value::as_str)
                .and_then(|a| a.parse().ok());
            for l in scope
                .get("lsa")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(body) = body(l) else { continue };
                let advertising_router = address(l, "advertisingRouter");
                out.push(Lsa6 {
                    header: LsaHeader {
                        area,
                        id: address(l, "linkStateId"),
                        advertising_router,
                        sequence: number(l, "lsSequenceNumber") as u32,
                        age: number(l, "age") as u16,
                        options: options(text(l, "options")),
                        own: advertising_router == me,
                    },
                    body,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
