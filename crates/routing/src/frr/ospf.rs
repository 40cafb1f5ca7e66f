//! FRR's OSPFv2 side: the `ospfd` configuration of a device with [`Ospf`], its route ranges'
//! links and static routes, and the daemon's answers (`show ip ospf neighbor detail json`,
//! `show ip ospf database … json`) read into linerate's terms. Pure text both ways, so it is
//! tested without a daemon.
//!
//! How a range is advertised depends on its origin. An intra- or inter-area range is a veth
//! pair inside the device's namespace (`rr<i>`, `rr<i>p`) carrying the range's prefixes as
//! addresses, passive, its cost the range's metric: in the interfaces' area its prefixes are
//! stub links of the router LSA (intra-area); in an area of its own the router borders that
//! area and sends one summary LSA per prefix into the interfaces' area (inter-area, OTG's
//! default), exactly what an emulated ABR sends. This kernel has no `dummy` links, and a
//! loopback's addresses are always host routes (RFC 2328 §9.1), so a veth it is. An external
//! range is a set of `staticd` blackhole routes tagged with the range's number, redistributed
//! through one route-map that sets each tag's metric and metric type (as IS-IS's are).

use std::fmt::Write as _;
use std::net::Ipv4Addr;

use ipnet::{IpNet, Ipv4Net};
use serde_json::Value;

use crate::{Device, Ospf, OspfAuth, OspfOrigin, OspfRange, RoutingError};

/// What ospfd's and ospf6d's ranges differ in: their words and names, not their logic.
pub(super) struct Flavour {
    /// The route-map the daemon redistributes the external ranges through.
    pub(super) map: &'static str,
    /// The daemon's interface commands begin so: `ip ospf`, `ipv6 ospf6`.
    pub(super) cmd: &'static str,
    /// staticd's word for a route of the family: `ip`, `ipv6`.
    pub(super) route: &'static str,
    /// External range 0's tag: above IS-IS's, whose staticd they share on a device with both,
    /// and apart from the other OSPF's.
    pub(super) first_tag: usize,
    /// What a range link's name is, its number after it: `rr0`, its peer `rr0p`.
    pub(super) link: &'static str,
}

/// OSPFv2's: ospfd's words, links `rr<i>`, tags from 10001.
pub(super) const V2: Flavour = Flavour {
    map: "lr-ospf",
    cmd: "ip ospf",
    route: "ip",
    first_tag: 10_001,
    link: "rr",
};

impl Flavour {
    /// The tag of external range `i`'s static routes.
    fn tag(&self, i: usize) -> usize {
        self.first_tag + i
    }

    /// The device's side of range `i`'s veth pair; its peer is the same name with `p`.
    pub(super) fn range_link(&self, i: usize) -> String {
        format!("{}{i}", self.link)
    }

    /// The route-map that sets each external range's metric and metric type by its static
    /// routes' tag; how many ranges it has entries for.
    pub(super) fn external_maps(&self, ospf: &Ospf, out: &mut String) -> usize {
        let mut entries = 0;
        for (i, r) in ospf.routes.iter().enumerate() {
            let kind = match r.origin {
                OspfOrigin::External1 => "type-1",
                OspfOrigin::External2 => "type-2",
                _ => continue,
            };
            entries += 1;
            let _ = writeln!(
                out,
                "route-map {} permit {}\n match tag {}\n set metric {}\n set metric-type {kind}\nexit",
                self.map,
                (i + 1) * 10,
                self.tag(i),
                r.metric
            );
        }
        entries
    }

    /// Each range link's interface: in the range's area, its cost the range's metric,
    /// passive.
    pub(super) fn range_interfaces(&self, ospf: &Ospf, out: &mut String) {
        let cmd = self.cmd;
        for (i, r) in ospf.routes.iter().enumerate() {
            if !on_a_link(r) {
                continue;
            }
            let _ = writeln!(
                out,
                "interface {}\n {cmd} area {}\n {cmd} cost {}\n {cmd} passive\nexit",
                self.range_link(i),
                range_area(ospf, r),
                r.metric
            );
        }
    }

    /// The one line of `staticd` configuration that originates prefix `n` of external range
    /// `i`.
    fn static_route(&self, n: &IpNet, i: usize) -> String {
        format!("{} route {n} blackhole tag {}", self.route, self.tag(i))
    }

    /// The `staticd` lines of every advertised external range.
    pub(super) fn static_routes(&self, ospf: &Ospf) -> Result<String, RoutingError> {
        let mut out = String::new();
        for (i, r) in ospf.routes.iter().enumerate() {
            if on_a_link(r) || !r.advertised {
                continue;
            }
            for n in r.prefixes()? {
                out.push_str(&self.static_route(&n, i));
                out.push('\n');
            }
        }
        Ok(out)
    }

    /// What advertises (or withdraws) range `name`; None when no range has that name.
    pub(super) fn announce(
        &self,
        ospf: &Ospf,
        name: &str,
        advertise: bool,
    ) -> Result<Option<Change>, RoutingError> {
        let Some(i) = ospf.routes.iter().position(|r| r.name == name) else {
            return Ok(None);
        };
        let range = &ospf.routes[i];
        if on_a_link(range) {
            return Ok(Some(Change::Addresses(addresses(
                &self.range_link(i),
                &range.prefixes()?,
                advertise,
            ))));
        }
        let no = if advertise { "" } else { "no " };
        let mut out = String::new();
        for n in range.prefixes()? {
            let _ = writeln!(out, "{no}{}", self.static_route(&n, i));
        }
        Ok(Some(Change::Staticd(out)))
    }
}

/// Whether range `r` is a veth pair of the device's (intra- or inter-area) rather than static
/// routes.
pub fn on_a_link(r: &OspfRange) -> bool {
    matches!(r.origin, OspfOrigin::IntraArea | OspfOrigin::InterArea)
}

/// The device's side of range `i`'s veth pair; its peer is the same name with `p`.
pub fn range_link(i: usize) -> String {
    V2.range_link(i)
}

/// The area range `r`'s link is in.
pub fn range_area(ospf: &Ospf, r: &OspfRange) -> Ipv4Addr {
    match r.origin {
        OspfOrigin::IntraArea => ospf.interfaces[0].area,
        _ => ospf.range_area(),
    }
}

/// The whole `ospfd.conf` of `device`, whose `ospf` is `ospf`.
pub fn ospfd_config(device: &Device, ospf: &Ospf) -> String {
    let mut out = super::header(&device.name);
    // The route-map before the `router ospf` that names it (as isisd's).
    let entries = V2.external_maps(ospf, &mut out);
    for i in &ospf.interfaces {
        let _ = writeln!(out, "interface eth{}", i.link);
        let _ = writeln!(out, " ip ospf area {}", i.area);
        if i.point_to_point {
            out.push_str(" ip ospf network point-to-point\n");
        } else {
            let _ = writeln!(out, " ip ospf priority {}", i.priority);
        }
        let _ = writeln!(out, " ip ospf cost {}", i.cost);
        let _ = writeln!(out, " ip ospf hello-interval {}", i.hello);
        let _ = writeln!(out, " ip ospf dead-interval {}", i.dead);
        let _ = writeln!(out, " ip ospf retransmit-interval {}", ospf.retransmit);
        if !i.mtu_check {
            out.push_str(" ip ospf mtu-ignore\n");
        }
        match &i.auth {
            OspfAuth::None => {}
            OspfAuth::ClearText(k) => {
                let _ = writeln!(
                    out,
                    " ip ospf authentication\n ip ospf authentication-key {k}"
                );
            }
            OspfAuth::Md5(keys) => {
                out.push_str(" ip ospf authentication message-digest\n");
                for (id, k) in keys {
                    let _ = writeln!(out, " ip ospf message-digest-key {id} md5 {k}");
                }
            }
        }
        out.push_str("exit\n");
    }
    V2.range_interfaces(ospf, &mut out);
    out.push_str("router ospf\n");
    let _ = writeln!(out, " ospf router-id {}", ospf.router_id);
    out.push_str(" log-adjacency-changes\n");
    // A test device converges at once: SPF runs as soon as the database changes, its LSAs
    // are originated without RFC 2328's 5 s MinLSInterval, and a neighbour's new instance is
    // taken however soon after the last (MinLSArrival): a withdraw right after an advertise
    // must reach the peer.
    out.push_str(" timers throttle spf 0 50 1000\n");
    out.push_str(" timers throttle lsa all 0\n");
    out.push_str(" timers lsa min-arrival 0\n");
    let _ = writeln!(out, " refresh timer {}", ospf.lsa_refresh);
    if entries > 0 {
        let _ = writeln!(out, " redistribute static route-map {}", V2.map);
    }
    out.push_str("exit\n");
    out
}

/// The `ip -batch` lines that add (or delete) `prefixes` on the device's link `link`, each
/// prefix's network address with its length.
pub fn addresses(link: &str, prefixes: &[IpNet], add: bool) -> String {
    let verb = if add { "add" } else { "del" };
    let mut out = String::new();
    for n in prefixes {
        let _ = writeln!(
            out,
            "address {verb} {}/{} dev {link}",
            n.network(),
            n.prefix_len()
        );
    }
    out
}

/// What advertising or withdrawing a range changes.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub enum Change {
    /// `ip -batch` commands that give the range's link its prefixes (advertised) or take them
    /// away (withdrawn): ospfd and ospf6d originate or flush the LSAs as the addresses come and
    /// go. Not the link going down: the kernel drops a link's IPv6 addresses with it.
    Addresses(String),
    /// `staticd` commands, as a vtysh input file.
    Staticd(String),
}

/// What advertises (or withdraws) range `name`; None when no range has that name.
pub fn announce(ospf: &Ospf, name: &str, advertise: bool) -> Result<Option<Change>, RoutingError> {
    V2.announce(ospf, name, advertise)
}

/// The `staticd` lines of every advertised external range.
pub fn static_routes(ospf: &Ospf) -> Result<String, RoutingError> {
    V2.static_routes(ospf)
}

/// An OSPF router as linerate reads it: ospfd's view, the packets on its links and how often
/// an adjacency left Full.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct OspfState {
    /// OTG's name of the router.
    pub name: String,
    /// None while its daemons are stopped.
    pub view: Option<OspfView>,
    pub counts: crate::wire::OspfCounts,
    pub flaps: u64,
    /// Its interfaces' names in the device's namespace.
    pub interfaces: Vec<String>,
}

/// How often an adjacency left Full, from the daemon's log, `full` of them Full now: every
/// change to Full is logged (`log-adjacency-changes`, ospfd's and ospf6d's alike), and each but
/// the ones still Full was followed by a way down, logged or not (a daemon stopped with
/// SIGTERM does not always say). The log is appended to across restarts.
pub fn flaps(log: &str, full: u64) -> u64 {
    let ups = log
        .lines()
        .filter(|l| l.contains("AdjChg:") && l.contains(" -> Full"))
        .count() as u64;
    ups.saturating_sub(full)
}

/// An OSPF router's state, as its daemon holds it.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct OspfView {
    pub neighbours: Vec<Neighbour>,
    /// Every LSA of every area and of the AS, the router's own among them.
    pub lsas: Lsdb,
}

/// One neighbour as ospfd holds it (`show ip ospf neighbor detail json`).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Neighbour {
    pub router_id: Ipv4Addr,
    /// RFC 2328's state (`Full`, `2-Way`, `Init`, …), without the DR role FRR adds.
    pub state: String,
    pub interface: String,
    /// How often its state changed.
    pub changes: u64,
}

impl Neighbour {
    pub fn full(&self) -> bool {
        self.state == "Full"
    }
}

/// The LSA header's fields (RFC 2328 A.4.1) and where the LSA is.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct LsaHeader {
    /// None: AS-scoped (an AS-external LSA).
    pub area: Option<Ipv4Addr>,
    pub id: Ipv4Addr,
    pub advertising_router: Ipv4Addr,
    pub sequence: u32,
    pub age: u16,
    /// OSPFv2's 8 option bits, OSPFv3's 24.
    pub options: u32,
    /// Originated by the router itself.
    pub own: bool,
}

/// A router LSA's link (RFC 2328 A.4.2).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    PointToPoint,
    Transit,
    Stub,
    Virtual,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct RouterLink {
    pub kind: LinkKind,
    pub id: Ipv4Addr,
    pub data: Ipv4Addr,
    pub metric: u32,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct RouterLsa {
    pub header: LsaHeader,
    pub links: Vec<RouterLink>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct NetworkLsa {
    pub header: LsaHeader,
    pub prefix_len: u8,
    pub routers: Vec<Ipv4Addr>,
}

/// A summary LSA: of a network (type 3) or of an AS boundary router (type 4).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct SummaryLsa {
    pub header: LsaHeader,
    pub prefix_len: u8,
    pub metric: u32,
}

/// An AS-external (type 5) or NSSA (type 7) LSA.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct ExternalLsa {
    pub header: LsaHeader,
    pub prefix_len: u8,
    pub metric: u32,
    /// Type 1 (false) or type 2 (true).
    pub type_2: bool,
    pub forwarding: Ipv4Addr,
    pub tag: u32,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Lsdb {
    pub router: Vec<RouterLsa>,
    pub network: Vec<NetworkLsa>,
    pub summary: Vec<SummaryLsa>,
    pub asbr_summary: Vec<SummaryLsa>,
    pub external: Vec<ExternalLsa>,
    pub nssa: Vec<ExternalLsa>,
}

impl Lsdb {
    /// The prefixes the router's own LSAs advertise: its router LSAs' stub links, its summary
    /// LSAs and its AS-external and NSSA LSAs.
    pub fn own_prefixes(&self) -> Vec<IpNet> {
        let net = |id: Ipv4Addr, len: u8| Ipv4Net::new(id, len).ok().map(IpNet::V4);
        let stubs = self
            .router
            .iter()
            .filter(|l| l.header.own)
            .flat_map(|l| &l.links)
            .filter(|k| k.kind == LinkKind::Stub)
            .filter_map(|k| net(k.id, u32::from(k.data).leading_ones() as u8));
        let summaries = self
            .summary
            .iter()
            .filter(|l| l.header.own)
            .filter_map(|l| net(l.header.id, l.prefix_len));
        let externals = self
            .external
            .iter()
            .chain(&self.nssa)
            .filter(|l| l.header.own)
            .filter_map(|l| net(l.header.id, l.prefix_len));
        stubs.chain(summaries).chain(externals).collect()
    }
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

/// Every neighbour of `show ip ospf neighbor detail json`.
pub fn neighbours(json: &Value) -> Vec<Neighbour> {
    let mut out = Vec::new();
    for (id, list) in json
        .get("neighbors")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        for n in list.as_array().into_iter().flatten() {
            let state = text(n, "nbrState");
            out.push(Neighbour {
                router_id: id.parse().unwrap_or(Ipv4Addr::UNSPECIFIED),
                state: state.split('/').next().unwrap_or(state).to_owned(),
                interface: text(n, "ifaceName").to_owned(),
                changes: number(n, "stateChangeCounter"),
            });
        }
    }
    out
}

/// The options byte from FRR's `*|O|DC|EA|N/P|MC|E|M/T` (a `-` for each bit clear).
fn options(text: &str) -> u32 {
    text.split('|')
        .skip(1)
        .zip((0..7).rev())
        .filter(|(f, _)| *f != "-")
        .fold(0, |acc, (_, bit)| acc | 1 << bit)
}

fn header(lsa: &Value, area: Option<Ipv4Addr>, me: Ipv4Addr) -> LsaHeader {
    let advertising_router = address(lsa, "advertisingRouter");
    LsaHeader {
        area,
        id: address(lsa, "linkStateId"),
        advertising_router,
        sequence: u32::from_str_radix(text(lsa, "lsaSeqNumber"), 16).unwrap_or(0),
        age: number(lsa, "lsaAge") as u16,
        options: options(text(lsa, "options")),
        own: advertising_router == me,
    }
}

/// Each area's LSAs under `key` of a `show ip ospf database … json` answer, with the
/// answering router's id.
fn by_area<'a>(json: &'a Value, key: &str) -> (Ipv4Addr, Vec<(Ipv4Addr, &'a Value)>) {
    let me = address(json, "routerId");
    let mut out = Vec::new();
    for (area, list) in json
        .get(key)
        .and_then(|v| v.get("areas"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let area = area.parse().unwrap_or(Ipv4Addr::UNSPECIFIED);
        out.extend(list.as_array().into_iter().flatten().map(|l| (area, l)));
    }
    (me, out)
}

/// `show ip ospf database router json`.
pub fn router_lsas(json: &Value) -> Vec<RouterLsa> {
    let (me, list) = by_area(json, "routerLinkStates");
    list.into_iter()
        .map(|(area, l)| RouterLsa {
            header: header(l, Some(area), me),
            links: l
                .get("routerLinks")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(_, link)| {
                    let (kind, id, data) = match text(link, "linkType") {
                        "another Router (point-to-point)" => (
                            LinkKind::PointToPoint,
                            "neighborRouterId",
                            "routerInterfaceAddress",
                        ),
                        "a Transit Network" => (
                            LinkKind::Transit,
                            "designatedRouterAddress",
                            "routerInterfaceAddress",
                        ),
                        "Stub Network" => (LinkKind::Stub, "networkAddress", "networkMask"),
                        "a Virtual Link" => (
                            LinkKind::Virtual,
                            "neighborRouterId",
                            "routerInterfaceAddress",
                        ),
                        _ => return None,
                    };
                    Some(RouterLink {
                        kind,
                        id: address(link, id),
                        data: address(link, data),
                        metric: number(link, "tos0Metric") as u32,
                    })
                })
                .collect(),
        })
        .collect()
}

/// `show ip ospf database network json`.
pub fn network_lsas(json: &Value) -> Vec<NetworkLsa> {
    let (me, list) = by_area(json, "networkLinkStates");
    list.into_iter()
        .map(|(area, l)| NetworkLsa {
            header: header(l, Some(area), me),
            prefix_len: number(l, "networkMask") as u8,
            // FRR spells the key so.
            routers: l
                .get("attchedRouters")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(id, _)| id.parse().ok())
                .collect(),
        })
        .collect()
}

/// `show ip ospf database summary json` (`summaryLinkStates`) or `… asbr-summary json`
/// (`asbrSummaryLinkStates`).
pub fn summary_lsas(json: &Value, key: &str) -> Vec<SummaryLsa> {
    let (me, list) = by_area(json, key);
    list.into_iter()
        .map(|(area, l)| SummaryLsa {
            header: header(l, Some(area), me),
            prefix_len: number(l, "networkMask") as u8,
            metric: number(l, "tos0Metric") as u32,
        })
        .collect()
}

fn external(l: &Value, area: Option<Ipv4Addr>, me: Ipv4Addr) -> ExternalLsa {
    let forwarding = ["forwardAddress", "nssaForwardAddress"]
        .iter()
        .map(|k| address(l, k))
        .find(|a| !a.is_unspecified())
        .unwrap_or(Ipv4Addr::UNSPECIFIED);
    ExternalLsa {
        header: header(l, area, me),
        prefix_len: number(l, "networkMask") as u8,
        metric: number(l, "metric") as u32,
        type_2: text(l, "metricType").starts_with("E2"),
        forwarding,
        tag: number(l, "externalRouteTag") as u32,
    }
}

/// `show ip ospf database external json`.
pub fn external_lsas(json: &Value) -> Vec<ExternalLsa> {
    let me = address(json, "routerId");
    json.get("asExternalLinkStates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|l| external(l, None, me))
        .collect()
}

/// `show ip ospf database nssa-external json`.
pub fn nssa_lsas(json: &Value) -> Vec<ExternalLsa> {
    let (me, list) = by_area(json, "nssaExternalLinkStates");
    list.into_iter()
        .map(|(area, l)| external(l, Some(area), me))
        .collect()
}

#[cfg(test)]
mod tests;
