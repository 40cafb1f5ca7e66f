//! `[host.bgp]`: a host of a stream file that speaks BGP. Each becomes a `linerate_routing`
//! device (FRR's bgpd in a namespace of its own, on a macvlan of the host's port with the
//! host's MAC and address), the same devices OTG's `devices[].bgp` makes; `tx` starts them
//! after the ports open and sends once every session is up and has advertised its ranges.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use linerate_routing::{Bgp, Block, Device, Link, Origin, Peer, PeerKind, RouteRange, Routers};
use linerate_stream::{HostBgp, HostSpec};

use crate::usage;

/// How long the sessions have to come up and advertise everything before the run gives up.
const SESSIONS_WAIT: Duration = Duration::from_secs(60);

/// The devices of the hosts that have a `[host.bgp]` table; a host's mistakes are one line
/// naming it (exit 2).
pub fn devices(hosts: &[HostSpec]) -> Result<Vec<Device>> {
    hosts
        .iter()
        .filter_map(|h| Some((h, h.bgp.as_ref()?)))
        .map(|(h, b)| {
            device(h, b).map_err(|why| usage(format!("host {}: [host.bgp]: {why}", h.name)))
        })
        .collect()
}

fn device(h: &HostSpec, b: &HostBgp) -> Result<Device, String> {
    // The daemon's macvlan takes the host's MAC: the port's own would leave the frames with
    // the port, never reaching the namespace.
    let mac = h.mac.ok_or(
        "a BGP host needs a mac of its own (mac = \"02:…\"): its bgpd answers on that MAC, beside the port's",
    )?;
    if h.vlan.is_some() {
        return Err("a BGP host on a VLAN is not supported yet: drop vlan".into());
    }
    let mut addrs: Vec<(IpAddr, u8)> = Vec::new();
    if let Some(a) = h.ipv4 {
        addrs.push((a.addr().into(), a.prefix_len()));
    }
    if let Some(a) = h.ipv6 {
        addrs.push((a.addr().into(), a.prefix_len()));
    }
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
    let device = Device {
        name: h.name.clone(),
        links: vec![Link {
            port: h.port.clone(),
            mac: mac.octets(),
            addrs,
        }],
        bgp: Some(Bgp {
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
        }),
        isis: None,
        ospf: None,
        ospf6: None,
        lldp: None,
    };
    // The checks OTG's mapping makes: the peer on the host's subnet, ranges inside the
    // address space, names unique.
    device.validate().map_err(|e| e.to_string())?;
    Ok(device)
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

/// Starts the devices' daemons and waits until each session is established and has
/// advertised every prefix of its ranges (bgpd's own count); Ctrl-C ends the wait.
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
    let mut routers = Routers::start(devices).context("the hosts' BGP speakers")?;
    let deadline = Instant::now() + SESSIONS_WAIT;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(
                crate::usage::Interrupted("stopped while the BGP sessions came up".into()).into(),
            );
        }
        let sessions = routers.sessions().context("the hosts' BGP sessions")?;
        let behind: Vec<String> = want
            .iter()
            .filter_map(|(peer, n)| {
                let s = sessions.iter().map(|(_, s)| s).find(|s| &s.address == peer);
                match s {
                    Some(s) if s.state == "Established" && s.advertised >= *n => None,
                    Some(s) => Some(format!(
                        "{peer} {} ({} of {n} advertised)",
                        s.state, s.advertised
                    )),
                    None => Some(format!("{peer} not configured")),
                }
            })
            .collect();
        if behind.is_empty() {
            return Ok(routers);
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "BGP sessions not up after {} s: {} (is the peer configured for this AS and address?)",
                SESSIONS_WAIT.as_secs(),
                behind.join(", ")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
