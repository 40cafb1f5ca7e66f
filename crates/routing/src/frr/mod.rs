//! FRR's side: the `bgpd` configuration of a [`Device`], and the daemon's JSON answers read into
//! linerate's terms. Pure text both ways, so it is tested without a daemon.

use std::fmt::Write as _;
use std::net::IpAddr;

use ipnet::IpNet;
use serde_json::Value;

use crate::{Device, Origin, Peer, PeerKind, RouteRange, RoutingError};

pub mod isis;
pub mod ospf;
pub mod ospf6;

/// The device's BGP peers (none without BGP).
fn peers(device: &Device) -> &[Peer] {
    device.bgp.as_ref().map_or(&[][..], |b| &b.peers)
}

/// The AS of the `router bgp` block: the first peer's; a peer in another AS of the device gets
/// `local-as`.
pub fn router_as(device: &Device) -> u32 {
    peers(device).first().map_or(0, |p| p.local_as)
}

/// The route-map of route range `i`: its path attributes, set where the prefix is originated.
fn route_map(i: usize, r: &RouteRange, out: &mut String) {
    let _ = writeln!(out, "route-map lr-rr{i} permit 10");
    let _ = writeln!(out, " set tag {}", tag(i));
    if let Some(m) = r.med {
        let _ = writeln!(out, " set metric {m}");
    }
    if let Some(o) = r.origin {
        let o = match o {
            Origin::Igp => "igp",
            Origin::Egp => "egp",
            Origin::Incomplete => "incomplete",
        };
        let _ = writeln!(out, " set origin {o}");
    }
    if let Some(lp) = r.local_pref {
        let _ = writeln!(out, " set local-preference {lp}");
    }
    if !r.communities.is_empty() {
        let list: Vec<String> = r
            .communities
            .iter()
            .map(|(a, v)| format!("{a}:{v}"))
            .collect();
        let _ = writeln!(out, " set community {}", list.join(" "));
    }
    if !r.as_path.is_empty() {
        let list: Vec<String> = r.as_path.iter().map(u32::to_string).collect();
        let _ = writeln!(out, " set as-path prepend {}", list.join(" "));
    }
    out.push_str("exit\n");
}

/// The outbound route-map of peer `p` in one family.
fn out_map(p: usize, v6: bool) -> String {
    format!("lr-out{p}-{}", if v6 { 6 } else { 4 })
}

/// The tag route range `i`'s routes are originated with. FRR's `match peer local` does not
/// hold for `network` routes on the way out, and a prefix-list per range costs bgpd time
/// quadratic in its entries (minutes at a few thousand); a tag is matched in constant time.
fn tag(i: usize) -> usize {
    i + 1
}

/// The first lines of every daemon's configuration: FRR's traditional defaults and `host`'s
/// name.
pub fn header(host: &str) -> String {
    format!("frr defaults traditional\nhostname {}\n!\n", safe(host))
}

/// The whole `bgpd.conf` of `device`, its ranges' prefixes expanded.
pub fn config(device: &Device) -> Result<String, RoutingError> {
    let asn = router_as(device);
    let mut out = header(&device.name);
    let mut ranges: Vec<(usize, &RouteRange, Vec<IpNet>)> = Vec::new();
    for (pi, p) in peers(device).iter().enumerate() {
        for r in &p.routes {
            ranges.push((pi, r, r.prefixes()?));
        }
    }
    // Route-maps before the `router bgp` that names them: a `network` whose route-map is not
    // there yet is denied until the route-map delay timer runs.
    maps(device, &ranges, &mut out);
    let _ = writeln!(out, "router bgp {asn}");
    if let Some(b) = &device.bgp {
        let _ = writeln!(out, " bgp router-id {}", b.router_id);
    }
    // A test device advertises what it is told, with no policy and no route in a RIB of its
    // own to import from: zebra does not run.
    out.push_str(" no bgp ebgp-requires-policy\n no bgp network import-check\n");
    out.push_str(" no bgp default ipv4-unicast\n");
    // OTG's graceful_restart is not modelled (refused): a device must not offer it either.
    // With FRR's default helper mode its peers saw the capability with the N bit (RFC 8538),
    // so a DUT kept a stopped device's routes as stale for 120 s after its Cease instead of
    // withdrawing them (the convergence benchmark's `--event down` measured nothing).
    out.push_str(" bgp graceful-restart-disable\n");
    for p in peers(device) {
        let a = p.address;
        let remote = match p.kind {
            PeerKind::Ebgp => "external",
            PeerKind::Ibgp => "internal",
        };
        let _ = writeln!(out, " neighbor {a} remote-as {remote}");
        let _ = writeln!(out, " neighbor {a} description {}", safe(&p.name));
        if p.local_as != asn {
            let _ = writeln!(
                out,
                " neighbor {a} local-as {} no-prepend replace-as",
                p.local_as
            );
        }
        if p.keepalive.is_some() || p.hold.is_some() {
            let k = p.keepalive.unwrap_or(60);
            let h = p.hold.unwrap_or(k.saturating_mul(3));
            let _ = writeln!(out, " neighbor {a} timers {k} {h}");
        }
        // A session that failed is tried again within a second, not FRR's default 120 s: a
        // test waits for it.
        let _ = writeln!(out, " neighbor {a} timers connect 1");
        if let Some(key) = &p.md5 {
            let _ = writeln!(out, " neighbor {a} password {}", safe(key));
        }
    }
    for v6 in [false, true] {
        let _ = writeln!(
            out,
            " address-family {} unicast",
            if v6 { "ipv6" } else { "ipv4" }
        );
        for (i, (_, r, prefixes)) in ranges.iter().enumerate() {
            if !r.advertised {
                continue;
            }
            for n in prefixes.iter().filter(|n| matches!(n, IpNet::V6(_)) == v6) {
                let _ = writeln!(out, "  network {n} route-map lr-rr{i}");
            }
        }
        for (pi, p) in peers(device).iter().enumerate() {
            let _ = writeln!(out, "  neighbor {} activate", p.address);
            // A test device learns what its peer sends, as a tester's emulated peer does: a
            // path that carries the device's own AS (the OTG project's eBGP test has each
            // device's ranges prepend the other's) is kept, not dropped as a loop. It goes
            // into no FIB (bgpd runs without zebra) and is never passed on (`maps`).
            let _ = writeln!(out, "  neighbor {} allowas-in 10", p.address);
            let _ = writeln!(
                out,
                "  neighbor {} route-map {} out",
                p.address,
                out_map(pi, v6)
            );
        }
        out.push_str(" exit-address-family\n");
    }
    out.push_str("exit\n");
    Ok(out)
}

/// Every route-map of `device`: each peer's outbound one and each range's own.
fn maps(device: &Device, ranges: &[(usize, &RouteRange, Vec<IpNet>)], out: &mut String) {
    // A test device is no transit router: each peer gets its own ranges, never what the device
    // learned (from another peer or from that one), told apart by the tag each range's routes
    // are originated with (a route's tag stays inside bgpd: it is no path attribute). The next
    // hop is set here, on the way out: set where the route is originated, FRR replaces it with
    // its own on an eBGP session.
    for (pi, _) in peers(device).iter().enumerate() {
        for v6 in [false, true] {
            let mine = ranges
                .iter()
                .enumerate()
                .filter(|(_, (owner, _, prefixes))| {
                    *owner == pi && prefixes.iter().any(|n| matches!(n, IpNet::V6(_)) == v6)
                });
            let mut seq = 10;
            for (i, (_, r, _)) in mine {
                let _ = writeln!(out, "route-map {} permit {seq}", out_map(pi, v6));
                let _ = writeln!(out, " match tag {}", tag(i));
                match r.next_hop {
                    Some(IpAddr::V4(a)) if !v6 => {
                        let _ = writeln!(out, " set ip next-hop {a}");
                    }
                    Some(IpAddr::V6(a)) if v6 => {
                        let _ = writeln!(out, " set ipv6 next-hop global {a}");
                    }
                    _ => {}
                }
                out.push_str("exit\n");
                seq += 10;
            }
            if seq == 10 {
                let _ = writeln!(out, "route-map {} deny 10\nexit", out_map(pi, v6));
            }
        }
    }
    for (i, (_, r, _)) in ranges.iter().enumerate() {
        route_map(i, r, out);
    }
}

/// The commands that advertise (or withdraw) route range `name` of `device` on a running daemon,
/// as a vtysh input file; None when no range has that name.
pub fn announce(
    device: &Device,
    name: &str,
    advertise: bool,
) -> Result<Option<String>, RoutingError> {
    let ranges: Vec<&RouteRange> = peers(device).iter().flat_map(|p| &p.routes).collect();
    let Some(i) = ranges.iter().position(|r| r.name == name) else {
        return Ok(None);
    };
    let prefixes = ranges[i].prefixes()?;
    let mut out = format!("router bgp {}\n", router_as(device));
    let no = if advertise { "" } else { "no " };
    for v6 in [false, true] {
        let family = if v6 { "ipv6" } else { "ipv4" };
        let _ = writeln!(out, " address-family {family} unicast");
        for n in prefixes.iter().filter(|n| matches!(n, IpNet::V6(_)) == v6) {
            let _ = writeln!(out, "  {no}network {n} route-map lr-rr{i}");
        }
        out.push_str(" exit-address-family\n");
    }
    out.push_str("exit\n");
    Ok(Some(out))
}

/// A name or key as one word of FRR's CLI: spaces and control characters would end it early.
pub(crate) fn safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// One BGP session as the daemon counts it (`show bgp neighbors json`).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Session {
    /// The neighbour's address.
    pub address: String,
    /// FRR's state: Idle, Connect, Active, OpenSent, OpenConfirm, Established.
    pub state: String,
    pub flaps: u64,
    /// Prefixes advertised to the peer and accepted from it, over every family.
    pub advertised: u64,
    pub received: u64,
    pub opens_sent: u64,
    pub opens_received: u64,
    pub updates_sent: u64,
    pub updates_received: u64,
    pub keepalives_sent: u64,
    pub keepalives_received: u64,
    pub notifications_sent: u64,
    pub notifications_received: u64,
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Every session of `show bgp neighbors json`, keyed by neighbour address.
pub fn sessions(json: &Value) -> Vec<Session> {
    let Some(all) = json.as_object() else {
        return Vec::new();
    };
    all.iter()
        .filter(|(_, n)| n.get("bgpState").is_some())
        .map(|(address, n)| {
            let stats = n.get("messageStats").cloned().unwrap_or_default();
            let (mut advertised, mut received) = (0, 0);
            if let Some(afs) = n.get("addressFamilyInfo").and_then(Value::as_object) {
                for af in afs.values() {
                    advertised += count(af, "sentPrefixCounter");
                    received += count(af, "acceptedPrefixCounter");
                }
            }
            Session {
                address: address.clone(),
                state: n["bgpState"].as_str().unwrap_or_default().to_owned(),
                flaps: count(n, "connectionsDropped"),
                advertised,
                received,
                opens_sent: count(&stats, "opensSent"),
                opens_received: count(&stats, "opensRecv"),
                updates_sent: count(&stats, "updatesSent"),
                updates_received: count(&stats, "updatesRecv"),
                keepalives_sent: count(&stats, "keepalivesSent"),
                keepalives_received: count(&stats, "keepalivesRecv"),
                notifications_sent: count(&stats, "notificationsSent"),
                notifications_received: count(&stats, "notificationsRecv"),
            }
        })
        .collect()
}

/// What a peer sent a device: its IPv4 and its IPv6 prefixes.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Prefixes {
    pub v4: Vec<Learned>,
    pub v6: Vec<Learned>,
}

/// A prefix learned from a peer, with the attributes it came with.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Learned {
    pub prefix: IpNet,
    pub next_hop: Option<IpAddr>,
    pub origin: Option<Origin>,
    pub med: Option<u32>,
    pub local_pref: Option<u32>,
    /// AS numbers of the path, in order (AS_SET members as FRR lists them, braces dropped).
    pub as_path: Vec<u32>,
    pub communities: Vec<(u16, u16)>,
}

/// The prefixes of `show bgp <family> unicast json detail` that came from `peer`.
pub fn learned(json: &Value, peer: IpAddr) -> Vec<Learned> {
    let Some(routes) = json.get("routes").and_then(Value::as_object) else {
        return Vec::new();
    };
    let peer = peer.to_string();
    let mut out = Vec::new();
    for (key, paths) in routes {
        let Ok(prefix) = key.parse::<IpNet>() else {
            continue;
        };
        for path in paths.as_array().into_iter().flatten() {
            let from = path
                .get("peer")
                .and_then(|p| p.get("peerId"))
                .or_else(|| path.get("peerId"))
                .and_then(Value::as_str);
            if from != Some(peer.as_str()) {
                continue;
            }
            out.push(Learned {
                prefix,
                next_hop: path
                    .get("nexthops")
                    .and_then(Value::as_array)
                    .and_then(|n| n.first())
                    .and_then(|n| n.get("ip"))
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse().ok()),
                origin: path.get("origin").and_then(Value::as_str).and_then(|o| {
                    match o.to_ascii_lowercase().as_str() {
                        "igp" => Some(Origin::Igp),
                        "egp" => Some(Origin::Egp),
                        "incomplete" | "?" => Some(Origin::Incomplete),
                        _ => None,
                    }
                }),
                med: path.get("metric").and_then(Value::as_u64).map(|m| m as u32),
                local_pref: path.get("locPrf").and_then(Value::as_u64).map(|m| m as u32),
                as_path: as_path(path),
                communities: communities(path),
            });
        }
    }
    out.sort_by_key(|l| l.prefix);
    out
}

fn as_path(path: &Value) -> Vec<u32> {
    let text = path
        .get("aspath")
        .and_then(|a| a.get("string"))
        .or_else(|| path.get("path"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    text.split(|c: char| c.is_whitespace() || c == '{' || c == '}' || c == ',')
        .filter_map(|w| w.parse().ok())
        .collect()
}

fn communities(path: &Value) -> Vec<(u16, u16)> {
    let text = path
        .get("community")
        .and_then(|c| c.get("string"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    text.split_whitespace()
        .filter_map(|w| {
            let (a, v) = w.split_once(':')?;
            Some((a.parse().ok()?, v.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests;
