//! What a device's control plane is: its links, its BGP peers, its IS-IS circuits and the routes
//! it advertises. Plain data, checked by [`Device::validate`]; the OTG mapping and the CLI build
//! it.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use crate::RoutingError;

/// One device that speaks a routing protocol.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Device {
    /// What errors, metrics and states call it.
    pub name: String,
    /// Its interfaces: one per port it sits on.
    pub links: Vec<Link>,
    pub bgp: Option<Bgp>,
    pub isis: Option<Isis>,
    /// OSPFv2 (ospfd).
    pub ospf: Option<Ospf>,
    /// OSPFv3 (ospf6d, RFC 5340): the same router description, its interfaces and ranges IPv6.
    pub ospf6: Option<Ospf>,
    /// An LLDP agent (lldpd): a device of its own, on one link with no address.
    pub lldp: Option<crate::lldp::Lldp>,
}

/// A device's interface on a port.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Link {
    /// The port: `IFACE` or `IFACE@NETNS`.
    pub port: String,
    pub mac: [u8; 6],
    /// Its addresses with their prefix lengths.
    pub addrs: Vec<(IpAddr, u8)>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Bgp {
    pub router_id: Ipv4Addr,
    pub peers: Vec<Peer>,
}

/// An IS-IS router (ISO 10589, RFC 1195 and RFC 5308): its identity, its circuits and the
/// ranges it advertises.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Isis {
    /// What get_metrics and get_states call it (OTG's `isis.name`).
    pub name: String,
    pub system_id: [u8; 6],
    /// Area addresses, 1 to 13 bytes each.
    pub areas: Vec<Vec<u8>>,
    /// Sent in the dynamic hostname TLV (RFC 5301); None: the device's name.
    pub hostname: Option<String>,
    /// The TE router id TLV's address.
    pub te_router_id: Option<Ipv4Addr>,
    /// Wide metrics (RFC 5305's TLVs 22 and 135); false: narrow (TLVs 2, 128 and 130).
    pub wide_metrics: bool,
    /// The attached bit in the level 1 LSPs of a level 1-2 router.
    pub attached_bit: bool,
    /// Seconds.
    pub lsp_refresh: u16,
    pub lsp_lifetime: u16,
    /// Seconds; None: the daemon's defaults.
    pub csnp_interval: Option<u16>,
    pub psnp_interval: Option<u16>,
    /// The largest LSP, in bytes.
    pub lsp_mtu: Option<u16>,
    /// Hellos padded to the link's MTU (ISO 10589 §8.2.3).
    pub hello_padding: bool,
    pub circuits: Vec<Circuit>,
    pub routes: Vec<IsisRange>,
}

impl Isis {
    /// A router named `name` with OTG's defaults (those of its `isis.advanced` and `basic`):
    /// wide metrics, the attached bit, LSPs refreshed every 600 s and living 1200 s, padded
    /// hellos, the daemon's own SNP intervals and LSP size; no area, circuit or range yet.
    pub fn new(name: String, system_id: [u8; 6]) -> Isis {
        Isis {
            name,
            system_id,
            areas: Vec::new(),
            hostname: None,
            te_router_id: None,
            wide_metrics: true,
            attached_bit: true,
            lsp_refresh: 600,
            lsp_lifetime: 1200,
            csnp_interval: None,
            psnp_interval: None,
            lsp_mtu: None,
            hello_padding: true,
            circuits: Vec::new(),
            routes: Vec::new(),
        }
    }
}

/// An OSPF router (OSPFv2, RFC 2328, or OSPFv3, RFC 5340): its identity, its interfaces and
/// the ranges it advertises.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Ospf {
    /// What get_metrics and get_states call it (OTG's `ospfv2.name`, or the name of the
    /// `ospfv3` instance).
    pub name: String,
    pub router_id: Ipv4Addr,
    /// Seconds between refreshes of the router's own LSAs (RFC 2328's LSRefreshTime).
    pub lsa_refresh: u16,
    /// Seconds before an unacknowledged LSA is sent again (RxmtInterval).
    pub retransmit: u16,
    pub interfaces: Vec<OspfInterface>,
    pub routes: Vec<OspfRange>,
}

/// One OSPF interface: a link of the device in one area.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct OspfInterface {
    /// OTG's interface name.
    pub name: String,
    /// Index into the device's links.
    pub link: usize,
    /// The area id, dotted (`0.0.0.0` is the backbone).
    pub area: Ipv4Addr,
    pub point_to_point: bool,
    /// Seconds.
    pub hello: u16,
    pub dead: u16,
    /// The designated router election's priority (broadcast interfaces).
    pub priority: u8,
    /// The interface's output cost: its links' metric in the router LSA.
    pub cost: u16,
    /// Refuse a neighbour whose database description says another MTU (RFC 2328 §10.6).
    pub mtu_check: bool,
    /// OSPFv3's interface instance id (RFC 5340 §2.4); 0 for OSPFv2.
    pub instance: u8,
    /// OSPFv2's packet authentication (RFC 2328 appendix D).
    pub auth: OspfAuth,
}

/// How an OSPFv2 interface authenticates its packets (RFC 2328 D.3).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq, Default)]
pub enum OspfAuth {
    #[default]
    None,
    /// A password of up to 8 characters, in the clear.
    ClearText(String),
    /// MD5 digests (RFC 2328 D.3), with keys of up to 16 characters by key id.
    Md5(Vec<(u8, String)>),
}

/// How an OSPF router advertises a range, after OTG's `route_origin`.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq)]
pub enum OspfOrigin {
    /// Stub links of the router LSA in the interfaces' area.
    IntraArea,
    /// Summary LSAs (type 3) from the router as an area border router.
    InterArea,
    /// AS-external LSAs (type 5) with a type 1 or a type 2 metric.
    External1,
    External2,
}

/// A named set of prefixes an OSPF router advertises, with one metric.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct OspfRange {
    pub name: String,
    pub blocks: Vec<Block>,
    pub metric: u32,
    pub origin: OspfOrigin,
    /// Advertised now (a withdrawn range is kept, to be advertised again by name).
    pub advertised: bool,
}

impl OspfRange {
    /// Every prefix of every block, in order.
    pub fn prefixes(&self) -> Result<Vec<IpNet>, RoutingError> {
        prefixes_of(&self.blocks)
    }
}

impl Ospf {
    /// The area a range that is not in an interface's area is put in: the backbone when no
    /// interface is in it (the router then borders it), otherwise the first other area.
    pub fn range_area(&self) -> Ipv4Addr {
        let used = |a: Ipv4Addr| self.interfaces.iter().any(|i| i.area == a);
        if !used(Ipv4Addr::UNSPECIFIED) {
            return Ipv4Addr::UNSPECIFIED;
        }
        (1u32..)
            .map(Ipv4Addr::from)
            .find(|a| !used(*a))
            .expect("fewer interfaces than areas")
    }
}

/// Which levels an IS-IS router or circuit runs.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    L1,
    L2,
    L12,
}

impl Level {
    /// Whether it runs level `n` (1 or 2).
    pub fn has(self, n: u8) -> bool {
        matches!(
            (self, n),
            (Level::L1 | Level::L12, 1) | (Level::L2 | Level::L12, 2)
        )
    }
}

/// One IS-IS circuit: a link of the device.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Circuit {
    /// OTG's interface name.
    pub name: String,
    /// Index into the device's links.
    pub link: usize,
    pub metric: u32,
    pub point_to_point: bool,
    pub level: Level,
    /// Level 1's and level 2's hello timing and DIS priority.
    pub hellos: [Hellos; 2],
}

/// A level's hellos on a circuit: seconds between them, seconds until a silent neighbour is
/// dropped, and the DIS priority (broadcast circuits).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq)]
pub struct Hellos {
    pub interval: u16,
    pub dead: u16,
    pub priority: u8,
}

/// A named set of prefixes an IS-IS router advertises as reachable from it, with one metric.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct IsisRange {
    pub name: String,
    pub blocks: Vec<Block>,
    pub metric: u32,
    /// Advertised now (a withdrawn range is kept, to be advertised again by name).
    pub advertised: bool,
}

impl IsisRange {
    /// Every prefix of every block, in order.
    pub fn prefixes(&self) -> Result<Vec<IpNet>, RoutingError> {
        prefixes_of(&self.blocks)
    }
}

/// Every prefix of `blocks`, in order.
fn prefixes_of(blocks: &[Block]) -> Result<Vec<IpNet>, RoutingError> {
    let mut all = Vec::new();
    for b in blocks {
        all.extend(b.prefixes()?);
    }
    Ok(all)
}

/// OTG's `as_type`: a peer in the device's own AS or in another.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq)]
pub enum PeerKind {
    Ebgp,
    Ibgp,
}

/// One BGP session and what the device advertises over it.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Peer {
    pub name: String,
    /// The neighbour's address, on one of the device's subnets.
    pub address: IpAddr,
    /// The device's AS on this session (OTG's `as_number`); the neighbour's is whatever it
    /// says in its OPEN: another for eBGP, the same for iBGP.
    pub local_as: u32,
    pub kind: PeerKind,
    /// Seconds; None: FRR's defaults (60 and 180, RFC 4271's suggestion).
    pub keepalive: Option<u16>,
    pub hold: Option<u16>,
    /// TCP-MD5 (RFC 2385) key.
    pub md5: Option<String>,
    pub routes: Vec<RouteRange>,
}

/// A named set of prefixes with the path attributes they are advertised with.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq, Default)]
pub struct RouteRange {
    pub name: String,
    pub blocks: Vec<Block>,
    /// None: the device's own address on the session (next-hop-self).
    pub next_hop: Option<IpAddr>,
    pub med: Option<u32>,
    pub origin: Option<Origin>,
    /// Sent to iBGP peers only (RFC 4271 §5.1.5).
    pub local_pref: Option<u32>,
    /// `AS:VALUE` standard communities (RFC 1997).
    pub communities: Vec<(u16, u16)>,
    /// AS numbers put before the device's own (an AS_SEQUENCE).
    pub as_path: Vec<u32>,
    /// Advertised now (a withdrawn range is kept, to be advertised again by name).
    pub advertised: bool,
}

/// `count` prefixes from `first`, each `step` prefix-sized blocks after the last.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub first: IpNet,
    pub count: u32,
    pub step: u32,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Igp,
    Egp,
    Incomplete,
}

impl Block {
    /// Every prefix of the block, or why the block runs past its family's address space.
    pub fn prefixes(&self) -> Result<Vec<IpNet>, RoutingError> {
        let bits = u32::from(self.first.max_prefix_len() - self.first.prefix_len());
        let size: u128 = 1u128 << bits;
        let base: u128 = match self.first.network() {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        };
        let top: u128 = match self.first {
            IpNet::V4(_) => u128::from(u32::MAX),
            IpNet::V6(_) => u128::MAX,
        };
        let span = size
            .checked_mul(u128::from(self.step.max(1)))
            .and_then(|s| s.checked_mul(u128::from(self.count.saturating_sub(1))));
        let last = span.and_then(|s| base.checked_add(s));
        if self.count == 0
            || last.is_none_or(|l| l > top || l.checked_add(size - 1).is_none_or(|e| e > top))
        {
            return Err(RoutingError::Invalid(format!(
                "{} prefixes from {} every {} run past the address space",
                self.count, self.first, self.step
            )));
        }
        let step = size * u128::from(self.step.max(1));
        let prefix = self.first.prefix_len();
        Ok((0..u128::from(self.count))
            .map(|i| {
                let n = base + i * step;
                match self.first {
                    IpNet::V4(_) => IpNet::new(IpAddr::V4(Ipv4Addr::from(n as u32)), prefix),
                    IpNet::V6(_) => IpNet::new(IpAddr::V6(n.into()), prefix),
                }
                .expect("the prefix length is the block's")
            })
            .collect())
    }
}

impl RouteRange {
    /// Every prefix of every block, in order.
    pub fn prefixes(&self) -> Result<Vec<IpNet>, RoutingError> {
        prefixes_of(&self.blocks)
    }
}

impl Device {
    /// Refuses what cannot run, naming the device and the field: an AS of 0, a peer off every
    /// subnet of the device, a range past its address space, names used twice, an IS-IS
    /// circuit on no link.
    pub fn validate(&self) -> Result<(), RoutingError> {
        let bad = |why: String| {
            Err(RoutingError::Invalid(format!(
                "device {}: {why}",
                self.name
            )))
        };
        if let Some(l) = &self.lldp {
            return self.validate_lldp(l);
        }
        if self.links.is_empty() {
            return bad("a device with a control plane needs an interface with an address".into());
        }
        if !self.has_control_plane() {
            return bad("the device has no control plane (bgp, isis, ospfv2 or ospfv3)".into());
        }
        let mut names: Vec<&str> = Vec::new();
        if let Some(bgp) = &self.bgp {
            self.validate_bgp(bgp, &mut names)?;
        }
        if let Some(isis) = &self.isis {
            self.validate_isis(isis, &mut names)?;
        }
        if let Some(ospf) = &self.ospf {
            self.validate_ospf(ospf, false, &mut names)?;
        }
        if let Some(ospf) = &self.ospf6 {
            self.validate_ospf(ospf, true, &mut names)?;
        }
        Ok(())
    }

    /// Whether it speaks a routing protocol (an LLDP agent's lldpd is none).
    pub fn has_control_plane(&self) -> bool {
        self.bgp.is_some() || self.isis.is_some() || self.ospf.is_some() || self.ospf6.is_some()
    }

    fn validate_lldp(&self, l: &crate::lldp::Lldp) -> Result<(), RoutingError> {
        if self.has_control_plane() {
            return Err(self.invalid("an LLDP agent is a device of its own".into()));
        }
        if self.links.len() != 1 {
            return Err(self.invalid("an LLDP agent sits on one port".into()));
        }
        let ifname_ok = !l.interface.is_empty()
            && l.interface.len() <= 15
            && l.interface
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'/' && b != b':');
        if !ifname_ok {
            return Err(self.invalid(format!(
                "lldp port id '{}': an interface name is 1 to 15 printable characters, no '/' or ':'",
                l.interface
            )));
        }
        if l.interval == 0 {
            return Err(self.invalid("lldp advertisement_interval 0 s".into()));
        }
        if l.hold_time < l.interval || !l.hold_time.is_multiple_of(l.interval) {
            return Err(self.invalid(format!(
                "lldp hold_time {} s must be a multiple of advertisement_interval {} s: \
                 lldpd sends a TTL of the interval times its hold multiplier",
                l.hold_time, l.interval
            )));
        }
        Ok(())
    }

    fn invalid(&self, why: String) -> RoutingError {
        RoutingError::Invalid(format!("device {}: {why}", self.name))
    }

    fn validate_bgp<'a>(&self, bgp: &'a Bgp, names: &mut Vec<&'a str>) -> Result<(), RoutingError> {
        if bgp.peers.is_empty() {
            return Err(self.invalid("bgp has no peer".into()));
        }
        for p in &bgp.peers {
            if p.local_as == 0 {
                return Err(self.invalid(format!(
                    "peer {}: as_number 0 is reserved (RFC 7607)",
                    p.name
                )));
            }
            let on_subnet = self.links.iter().flat_map(|l| &l.addrs).any(|(a, len)| {
                IpNet::new(*a, *len).is_ok_and(|n| n.contains(&p.address) && *a != p.address)
            });
            if !on_subnet {
                return Err(self.invalid(format!(
                    "peer {}: {} is on none of the device's subnets (linerate's BGP sessions are single-hop)",
                    p.name, p.address
                )));
            }
            if let (Some(k), Some(h)) = (p.keepalive, p.hold)
                && h != 0
                && (h < 3 || k >= h)
            {
                return Err(self.invalid(format!(
                    "peer {}: hold time {h} s must be 0 or at least 3 s and above the keepalive {k} s",
                    p.name
                )));
            }
            for r in &p.routes {
                self.unique(&r.name, names)?;
                r.prefixes()
                    .map_err(|e| self.invalid(format!("route range {}: {e}", r.name)))?;
            }
        }
        Ok(())
    }

    fn unique<'a>(&self, name: &'a str, names: &mut Vec<&'a str>) -> Result<(), RoutingError> {
        if names.contains(&name) {
            return Err(self.invalid(format!("route range name '{name}' is used twice")));
        }
        names.push(name);
        Ok(())
    }

    fn validate_isis<'a>(
        &self,
        isis: &'a Isis,
        names: &mut Vec<&'a str>,
    ) -> Result<(), RoutingError> {
        if isis.areas.is_empty() || isis.areas.iter().any(|a| a.is_empty() || a.len() > 13) {
            return Err(
                self.invalid("isis needs area addresses of 1 to 13 bytes (ISO 10589)".into())
            );
        }
        if isis.system_id == [0; 6] {
            return Err(self.invalid("isis system_id 0000.0000.0000 is not a system's".into()));
        }
        if isis.circuits.is_empty() {
            return Err(self.invalid("isis has no interface".into()));
        }
        if isis.lsp_lifetime < isis.lsp_refresh.saturating_add(300) {
            return Err(self.invalid(format!(
                "isis lsp_lifetime {} s must be at least 300 s above lsp_refresh_rate {} s \
                 (an LSP must be refreshed well before it expires)",
                isis.lsp_lifetime, isis.lsp_refresh
            )));
        }
        for c in &isis.circuits {
            if c.link >= self.links.len() {
                return Err(self.invalid(format!("isis interface {}: no such link", c.name)));
            }
            let max = if isis.wide_metrics { 16_777_215 } else { 63 };
            if c.metric > max {
                return Err(self.invalid(format!(
                    "isis interface {}: metric {} above {max}",
                    c.name, c.metric
                )));
            }
            for h in &c.hellos {
                if h.interval == 0 || h.dead < h.interval.saturating_mul(2) {
                    return Err(self.invalid(format!(
                        "isis interface {}: hello_interval {} s and dead_interval {} s: the \
                         dead interval must be at least two hellos",
                        c.name, h.interval, h.dead
                    )));
                }
            }
        }
        for r in &isis.routes {
            self.unique(&r.name, names)?;
            let max = if isis.wide_metrics { 16_777_215 } else { 63 };
            if r.metric > max {
                return Err(self.invalid(format!(
                    "isis route range {}: link_metric {} above {max}",
                    r.name, r.metric
                )));
            }
            r.prefixes()
                .map_err(|e| self.invalid(format!("route range {}: {e}", r.name)))?;
        }
        Ok(())
    }

    fn validate_ospf<'a>(
        &self,
        ospf: &'a Ospf,
        v3: bool,
        names: &mut Vec<&'a str>,
    ) -> Result<(), RoutingError> {
        let (what, family) = if v3 {
            ("ospfv3", "IPv6")
        } else {
            ("ospfv2", "IPv4")
        };
        if ospf.router_id.is_unspecified() {
            return Err(self.invalid(format!("{what} router id 0.0.0.0 is not a router's")));
        }
        if ospf.interfaces.is_empty() {
            return Err(self.invalid(format!("{what} has no interface")));
        }
        if !(10..=1800).contains(&ospf.lsa_refresh) {
            return Err(self.invalid(format!(
                "{what} lsa_refresh_time {} s: FRR refreshes every 10 to 1800 s",
                ospf.lsa_refresh
            )));
        }
        if ospf.retransmit == 0 {
            return Err(self.invalid(format!("{what} lsa_retransmit_time must be at least 1 s")));
        }
        for i in &ospf.interfaces {
            let Some(link) = self.links.get(i.link) else {
                return Err(self.invalid(format!("{what} interface {}: no such link", i.name)));
            };
            if !link.addrs.iter().any(|(a, _)| a.is_ipv6() == v3) {
                return Err(self.invalid(format!(
                    "{what} interface {}: its link has no {family} address",
                    i.name
                )));
            }
            if i.hello == 0 || i.dead <= i.hello {
                return Err(self.invalid(format!(
                    "{what} interface {}: hello_interval {} s and dead_interval {} s: the dead \
                     interval must be longer than a hello",
                    i.name, i.hello, i.dead
                )));
            }
            let printable = |k: &str| k.bytes().all(|b| b.is_ascii_graphic());
            match &i.auth {
                OspfAuth::None => {}
                OspfAuth::ClearText(k) if !k.is_empty() && k.len() <= 8 && printable(k) => {}
                OspfAuth::ClearText(_) => {
                    return Err(self.invalid(format!(
                        "{what} interface {}: a clear text key is 1 to 8 printable characters",
                        i.name
                    )));
                }
                OspfAuth::Md5(keys)
                    if !keys.is_empty()
                        && keys.iter().all(|(id, k)| {
                            *id != 0 && !k.is_empty() && k.len() <= 16 && printable(k)
                        }) => {}
                OspfAuth::Md5(_) => {
                    return Err(self.invalid(format!(
                        "{what} interface {}: MD5 keys are key ids 1 to 255 with keys of 1 to 16 \
                         printable characters",
                        i.name
                    )));
                }
            }
            if v3 && i.auth != OspfAuth::None {
                return Err(self.invalid(format!(
                    "{what} interface {}: OSPFv3 authentication is not supported",
                    i.name
                )));
            }
            if i.cost == 0 {
                return Err(self.invalid(format!(
                    "{what} interface {}: metric 0: an interface's cost is 1 to 65535",
                    i.name
                )));
            }
        }
        for r in &ospf.routes {
            self.unique(&r.name, names)?;
            // An intra- or inter-area range's metric is its link's cost, which FRR takes from
            // 1 to 65535; an external one's is the LSA's 24 bits, 16777215 meaning unreachable.
            let (min, max, why) = match r.origin {
                OspfOrigin::IntraArea | OspfOrigin::InterArea => (
                    1,
                    65_535,
                    "an intra- or inter-area range's metric is 1 to 65535",
                ),
                OspfOrigin::External1 | OspfOrigin::External2 => {
                    (0, 16_777_214, "an external range's metric is 0 to 16777214")
                }
            };
            if !(min..=max).contains(&r.metric) {
                return Err(self.invalid(format!(
                    "{what} route range {}: metric {}: {why}",
                    r.name, r.metric
                )));
            }
            let prefixes = r
                .prefixes()
                .map_err(|e| self.invalid(format!("route range {}: {e}", r.name)))?;
            if prefixes.iter().any(|p| matches!(p, IpNet::V6(_)) != v3) {
                return Err(self.invalid(format!(
                    "{what} route range {}: it carries {family} prefixes only",
                    r.name
                )));
            }
        }
        Ok(())
    }
}
