//! `[host.bgp]`, `[host.ospf]`, `[host.ospf6]`, `[host.isis]`: a host of a stream file that
//! speaks BGP, OSPFv2, OSPFv3 or IS-IS. Each such host becomes a `linerate_routing` device
//! (FRR's daemons in a namespace of its own, on a macvlan of the host's port with the host's
//! MAC and addresses), the same devices OTG's `devices[].bgp`, `ospfv2`, `ospfv3` and `isis`
//! make; `tx` starts them after the ports open and sends once every BGP session is up and has
//! advertised its ranges, every OSPF neighbour is Full and every IS-IS adjacency up with the
//! ranges in the host's own LSAs and LSPs.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ipnet::IpNet;
use linerate_routing::{
    Bgp, Block, Circuit, Device, Hellos, Isis, IsisRange, Level, Link, Origin, Ospf, OspfAuth,
    OspfInterface, OspfOrigin, OspfRange, Peer, PeerKind, RouteRange, Routers,
};
use linerate_stream::{HostBgp, HostIgpRoutes, HostIsis, HostOspf, HostSpec};

use crate::usage;

/// How long the sessions have to come up and advertise everything before the run gives up.
const SESSIONS_WAIT: Duration = Duration::from_secs(60);

/// The devices of the hosts that have a `[host.bgp]`, `[host.ospf]`, `[host.ospf6]` or
/// `[host.isis]` table,
/// with the group MACs their ports pass to the stack for them; a host's mistakes are one line
/// naming it and the table (exit 2).
pub fn devices(hosts: &[HostSpec]) -> Result<Vec<(Device, Vec<[u8; 6]>)>> {
    hosts
        .iter()
        .filter(|h| h.bgp.is_some() || h.ospf.is_some() || h.ospf6.is_some() || h.isis.is_some())
        .map(|h| device(h).map_err(|why| usage(format!("host {}: {why}", h.name))))
        .collect()
}

fn device(h: &HostSpec) -> Result<(Device, Vec<[u8; 6]>), String> {
    let tables: Vec<&str> = [
        h.bgp.as_ref().map(|_| "[host.bgp]"),
        h.ospf.as_ref().map(|_| "[host.ospf]"),
        h.ospf6.as_ref().map(|_| "[host.ospf6]"),
        h.isis.as_ref().map(|_| "[host.isis]"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let tables = tables.join(", ");
    // The daemons' macvlan takes the host's MAC: the port's own would leave the frames with
    // the port, never reaching the namespace.
    let mac = h.mac.ok_or_else(|| {
        format!(
            "{tables}: a routing host needs a mac of its own (mac = \"02:…\"): its daemons answer on that MAC, beside the port's"
        )
    })?;
    if h.vlan.is_some() {
        return Err(format!(
            "{tables}: a routing host on a VLAN is not supported yet: drop vlan"
        ));
    }
    let mut addrs: Vec<(IpAddr, u8)> = Vec::new();
    if let Some(a) = h.ipv4 {
        addrs.push((a.addr().into(), a.prefix_len()));
    }
    if let Some(a) = h.ipv6 {
        addrs.push((a.addr().into(), a.prefix_len()));
    }
    let mut groups = Vec::new();
    let mut device = Device {
        name: h.name.clone(),
        links: vec![Link {
            port: h.port.clone(),
            mac: mac.octets(),
            addrs,
        }],
        bgp: None,
        isis: None,
        ospf: None,
        ospf6: None,
        lldp: None,
    };
    if let Some(b) = &h.bgp {
        device.bgp = Some(bgp(h, b).map_err(|why| format!("[host.bgp]: {why}"))?);
    }
    if let Some(o) = &h.ospf {
        device.ospf = Some(ospf(h, o, false).map_err(|why| format!("[host.ospf]: {why}"))?);
        groups.extend(linerate_routing::OSPF_GROUPS);
    }
    if let Some(o) = &h.ospf6 {
        device.ospf6 = Some(ospf(h, o, true).map_err(|why| format!("[host.ospf6]: {why}"))?);
        groups.extend(linerate_routing::OSPF6_GROUPS);
    }
    if let Some(i) = &h.isis {
        device.isis = Some(isis(h, i).map_err(|why| format!("[host.isis]: {why}"))?);
        groups.extend(linerate_routing::ISIS_GROUPS);
    }
    // The checks OTG's mapping makes: the peer on the host's subnet, ranges inside the
    // address space, names unique, timers that make sense.
    device.validate().map_err(|e| format!("{tables}: {e}"))?;
    Ok((device, groups))
}

fn bgp(h: &HostSpec, b: &HostBgp) -> Result<Bgp, String> {
    let peer = b
        .peer
        .or(h.gateway.map(IpAddr::from))
        .or(h.gateway6.map(IpAddr::from))
        .ok_or("no peer: give peer = \"ADDRESS\" or the host a gateway")?;
    let router_id = b
        .router_id
        .or(h.ipv4.map(|a| a.addr()))
        .ok_or("no router-id: give router-id = \"A.B.C.D\" or the host an IPv4 address")?;
    if b.asn == 0 {
        return Err("as 0 is reserved (RFC 7607)".into());
    }
    let routes = b
        .routes
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let name = r
                .name
                .clone()
                .unwrap_or_else(|| format!("{}-routes{i}", h.name));
            if r.count == 0 || r.step == 0 {
                return Err(format!("route range {name}: count and step are 1 or more"));
            }
            Ok(RouteRange {
                blocks: vec![Block {
                    first: r.prefix.trunc(),
                    count: r.count,
                    step: r.step,
                }],
                next_hop: r.next_hop,
                med: r.med,
                origin: r.origin.as_deref().map(origin).transpose()?,
                local_pref: r.local_pref,
                communities: r
                    .communities
                    .iter()
                    .map(|c| community(c))
                    .collect::<Result<_, _>>()?,
                as_path: r.as_path.clone(),
                advertised: true,
                name,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Bgp {
        router_id,
        peers: vec![Peer {
            name: format!("{}-peer", h.name),
            address: peer,
            local_as: b.asn,
            kind: if b.ibgp {
                PeerKind::Ibgp
            } else {
                PeerKind::Ebgp
            },
            keepalive: b.keepalive,
            hold: b.hold,
            md5: b.md5.clone(),
            routes,
        }],
    })
}

/// An IGP range's one block, named `<host>-<igp><i>` unless it has a name.
fn igp_range(
    h: &HostSpec,
    igp: &str,
    i: usize,
    r: &HostIgpRoutes,
) -> Result<(String, Block), String> {
    let name = r
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-{igp}{i}", h.name));
    if r.count == 0 || r.step == 0 {
        return Err(format!("route range {name}: count and step are 1 or more"));
    }
    Ok((
        name,
        Block {
            first: r.prefix.trunc(),
            count: r.count,
            step: r.step,
        },
    ))
}

/// The host's OSPFv2 router, or its OSPFv3 one (`v3`: on its IPv6 address, IPv6 ranges).
fn ospf(h: &HostSpec, o: &HostOspf, v3: bool) -> Result<Ospf, String> {
    let (version, family) = if v3 {
        ("OSPFv3", "IPv6")
    } else {
        ("OSPFv2", "IPv4")
    };
    let has = if v3 {
        h.ipv6.is_some()
    } else {
        h.ipv4.is_some()
    };
    if !has {
        return Err(format!(
            "{version} runs on the host's {family} address: give it one"
        ));
    }
    let router_id = o
        .router_id
        .or(h.ipv4.map(|a| a.addr()))
        .ok_or("no router-id: give router-id = \"A.B.C.D\" or the host an IPv4 address")?;
    let hello = o.hello.unwrap_or(10);
    let routes = o
        .routes
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (name, block) = igp_range(h, if v3 { "ospf6-" } else { "ospf" }, i, r)?;
            if matches!(r.prefix, IpNet::V4(_)) == v3 {
                return Err(format!(
                    "route range {name}: {version} advertises {family} prefixes"
                ));
            }
            let origin = match r.origin.as_deref() {
                None | Some("external-type-2") => OspfOrigin::External2,
                Some("external-type-1") => OspfOrigin::External1,
                Some("inter-area") => OspfOrigin::InterArea,
                Some("intra-area") => OspfOrigin::IntraArea,
                Some(other) => {
                    return Err(format!(
                        "route range {name}: origin {other:?}: intra-area, inter-area, external-type-1 or external-type-2"
                    ));
                }
            };
            Ok(OspfRange {
                name,
                blocks: vec![block],
                metric: r.metric.unwrap_or(10),
                origin,
                advertised: true,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let igp = if v3 { "ospf6" } else { "ospf" };
    Ok(Ospf {
        name: format!("{}-{igp}", h.name),
        router_id,
        lsa_refresh: 1800,
        retransmit: 5,
        interfaces: vec![OspfInterface {
            name: format!("{}-{igp}-if", h.name),
            link: 0,
            area: o.area.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
            point_to_point: o.point_to_point,
            hello,
            dead: o.dead.unwrap_or(hello.saturating_mul(4)),
            priority: 1,
            cost: o.cost.unwrap_or(10),
            mtu_check: true,
            instance: 0,
            auth: OspfAuth::None,
        }],
        routes,
    })
}

/// `49.0001`: the area address's bytes.
fn area(text: &str) -> Option<Vec<u8>> {
    let hex: String = text.chars().filter(|c| *c != '.').collect();
    if hex.is_empty() || !hex.len().is_multiple_of(2) || hex.len() > 26 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

fn isis(h: &HostSpec, i: &HostIsis) -> Result<Isis, String> {
    let system_id = match &i.system_id {
        Some(t) => linerate_routing::frr::isis::parse_system_id(t)
            .ok_or_else(|| format!("system-id {t:?}: xxxx.xxxx.xxxx, twelve hex digits"))?,
        None => h.mac.map(|m| m.octets()).unwrap_or_default(),
    };
    let area_text = i.area.as_deref().unwrap_or("49.0001");
    let areas =
        vec![area(area_text).ok_or_else(|| {
            format!("area {area_text:?}: 1 to 13 bytes in hex, dotted as 49.0001")
        })?];
    let level = match i.level.as_deref() {
        None | Some("l2") => Level::L2,
        Some("l1") => Level::L1,
        Some("l1-2") => Level::L12,
        Some(other) => return Err(format!("level {other:?}: l1, l2 or l1-2")),
    };
    let hello = i.hello.unwrap_or(10);
    let hellos = Hellos {
        interval: hello,
        dead: i.dead.unwrap_or(hello.saturating_mul(3)),
        priority: 64,
    };
    let routes = i
        .routes
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let (name, block) = igp_range(h, "isis", k, r)?;
            if r.origin.is_some() {
                return Err(format!("route range {name}: origin is OSPF's: drop it"));
            }
            Ok(IsisRange {
                name,
                blocks: vec![block],
                metric: r.metric.unwrap_or(10),
                advertised: true,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Isis {
        areas,
        hostname: Some(h.name.clone()),
        circuits: vec![Circuit {
            name: format!("{}-isis-if", h.name),
            link: 0,
            metric: i.metric.unwrap_or(10),
            point_to_point: i.point_to_point,
            level,
            hellos: [hellos, hellos],
        }],
        routes,
        ..Isis::new(format!("{}-isis", h.name), system_id)
    })
}

fn origin(o: &str) -> Result<Origin, String> {
    match o {
        "igp" => Ok(Origin::Igp),
        "egp" => Ok(Origin::Egp),
        "incomplete" => Ok(Origin::Incomplete),
        _ => Err(format!("origin {o:?}: igp, egp or incomplete")),
    }
}

fn community(c: &str) -> Result<(u16, u16), String> {
    let bad = || format!("community {c:?}: AS:VALUE, each 0 to 65535");
    let (a, v) = c.split_once(':').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, v.parse().map_err(|_| bad())?))
}

/// An OSPF router's name and every prefix of its ranges.
fn ospf_ranges(o: &Ospf) -> (String, Vec<IpNet>) {
    let prefixes = o
        .routes
        .iter()
        .flat_map(|r| r.prefixes().unwrap_or_default());
    (o.name.clone(), prefixes.collect())
}

/// Where an OSPF router stands when not every neighbour is Full or not every prefix of its
/// ranges is in its own LSAs (`view`: its neighbours and those prefixes; None: not running).
fn ospf_behind(
    version: &str,
    name: &str,
    prefixes: &[IpNet],
    view: Option<(&[linerate_routing::frr::ospf::Neighbour], Vec<IpNet>)>,
) -> Option<String> {
    let (neighbours, own) = view.unwrap_or_default();
    let full = !neighbours.is_empty() && neighbours.iter().all(|n| n.full());
    let missing = prefixes.iter().filter(|p| !own.contains(p)).count();
    if full && missing == 0 {
        return None;
    }
    let states: Vec<String> = neighbours
        .iter()
        .map(|n| format!("{} {}", n.router_id, n.state))
        .collect();
    Some(format!(
        "{version} {name}: neighbours [{}], {} of {} ranges' prefixes in its LSAs",
        states.join(", "),
        prefixes.len() - missing,
        prefixes.len()
    ))
}

/// Starts the devices' daemons and waits until each BGP session is established and has
/// advertised every prefix of its ranges (bgpd's own count), each OSPF neighbour is Full and
/// each IS-IS adjacency up, with every range in the host's own LSAs and LSPs (the daemons'
/// own databases); Ctrl-C ends the wait.
pub fn start(devices: Vec<Device>, stop: &AtomicBool) -> Result<Routers> {
    let want: Vec<(String, u64)> = devices
        .iter()
        .flat_map(|d| d.bgp.iter().flat_map(|b| &b.peers))
        .map(|p| {
            let n = p
                .routes
                .iter()
                .map(|r| r.prefixes().map_or(0, |v| v.len() as u64));
            (p.address.to_string(), n.sum())
        })
        .collect();
    // Each IGP router's name and the prefixes its own database must hold.
    let ospf_want: Vec<_> = devices
        .iter()
        .filter_map(|d| d.ospf.as_ref())
        .map(ospf_ranges)
        .collect();
    let ospf6_want: Vec<_> = devices
        .iter()
        .filter_map(|d| d.ospf6.as_ref())
        .map(ospf_ranges)
        .collect();
    let isis_want: Vec<(String, Vec<IpNet>)> = devices
        .iter()
        .filter_map(|d| d.isis.as_ref())
        .map(|i| {
            (
                i.name.clone(),
                i.routes
                    .iter()
                    .flat_map(|r| r.prefixes().unwrap_or_default())
                    .collect(),
            )
        })
        .collect();
    let mut routers = Routers::start(devices).context("the hosts' routing daemons")?;
    let deadline = Instant::now() + SESSIONS_WAIT;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(crate::usage::Interrupted(
                "stopped while the hosts' routing sessions came up".into(),
            )
            .into());
        }
        let mut behind: Vec<String> = Vec::new();
        if !want.is_empty() {
            let sessions = routers.sessions().context("the hosts' BGP sessions")?;
            behind.extend(want.iter().filter_map(|(peer, n)| {
                let s = sessions.iter().map(|(_, s)| s).find(|s| &s.address == peer);
                match s {
                    Some(s) if s.state == "Established" && s.advertised >= *n => None,
                    Some(s) => Some(format!(
                        "BGP {peer} {} ({} of {n} advertised)",
                        s.state, s.advertised
                    )),
                    None => Some(format!("BGP {peer} not configured")),
                }
            }));
        }
        if !ospf_want.is_empty() {
            let states = routers.ospf().context("the hosts' OSPF routers")?;
            for (name, prefixes) in &ospf_want {
                let view = states
                    .iter()
                    .find(|s| &s.name == name)
                    .and_then(|s| s.view.as_ref());
                behind.extend(ospf_behind(
                    "OSPF",
                    name,
                    prefixes,
                    view.map(|v| (&v.neighbours[..], v.lsas.own_prefixes())),
                ));
            }
        }
        if !ospf6_want.is_empty() {
            let states = routers.ospf6().context("the hosts' OSPFv3 routers")?;
            for (name, prefixes) in &ospf6_want {
                let view = states
                    .iter()
                    .find(|s| &s.name == name)
                    .and_then(|s| s.view.as_ref());
                behind.extend(ospf_behind(
                    "OSPFv3",
                    name,
                    prefixes,
                    view.map(|v| (&v.neighbours[..], v.own_prefixes())),
                ));
            }
        }
        if !isis_want.is_empty() {
            let views = routers.isis().context("the hosts' IS-IS routers")?;
            for (name, prefixes) in &isis_want {
                let view = views
                    .iter()
                    .find(|(n, _)| n == name)
                    .and_then(|(_, v)| v.as_ref());
                let up = view.is_some_and(|v| {
                    !v.adjacencies.is_empty() && v.adjacencies.iter().all(|a| a.up)
                });
                let own: Vec<IpNet> = view
                    .map(|v| {
                        v.lsps
                            .iter()
                            .filter(|l| l.own)
                            .flat_map(|l| l.prefixes.iter().map(|(p, _)| *p))
                            .collect()
                    })
                    .unwrap_or_default();
                let missing = prefixes.iter().filter(|p| !own.contains(p)).count();
                if !up || missing > 0 {
                    behind.push(format!(
                        "IS-IS {name}: {} adjacencies up of {}, {} of {} ranges' prefixes in its LSPs",
                        view.map_or(0, |v| v.adjacencies.iter().filter(|a| a.up).count()),
                        view.map_or(0, |v| v.adjacencies.len()),
                        prefixes.len() - missing,
                        prefixes.len()
                    ));
                }
            }
        }
        if behind.is_empty() {
            return Ok(routers);
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "routing sessions not up after {} s: {} (is the neighbour configured for this host's AS, area or level and address?)",
                SESSIONS_WAIT.as_secs(),
                behind.join("; ")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
