//! FRR's IS-IS side: the `isisd`, `staticd` and `zebra` configurations of a device with
//! [`Isis`], and the daemon's answers (`show isis neighbor detail json`, `show isis summary
//! json`, `show isis database detail`, `show isis hostname`) read into linerate's terms. Pure
//! text both ways, so it is tested without a daemon.
//!
//! A route range is a set of `staticd` blackhole routes tagged with the range's number, which
//! isisd redistributes through one route-map that sets each tag's metric: a tag is matched in
//! constant time, where a prefix-list per range grows with the square of its entries (as bgpd's
//! did). The blackholes sit in the device's own namespace, whose FIB carries no test traffic.

use std::fmt::Write as _;

use ipnet::IpNet;
use serde_json::Value;

use crate::{Device, Isis, IsisRange, Level, RoutingError};

/// The area tag of every device's `router isis` (one instance a device).
pub const AREA: &str = "lr";
/// The route-map isisd redistributes the ranges through.
const MAP: &str = "lr-isis";

/// The tag of route range `i`'s static routes.
fn tag(i: usize) -> usize {
    i + 1
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::L1 => "level-1",
        Level::L2 => "level-2-only",
        Level::L12 => "level-1-2",
    }
}

/// `49.0001`: an area address as FRR writes it (the first byte, then two bytes a group).
fn area(a: &[u8]) -> String {
    let mut out = format!("{:02x}", a[0]);
    for pair in a[1..].chunks(2) {
        out.push('.');
        for b in pair {
            let _ = write!(out, "{b:02x}");
        }
    }
    out
}

/// `6400.0000.0001`: a system id as FRR writes it.
pub fn system_id(id: &[u8; 6]) -> String {
    format!(
        "{:02x}{:02x}.{:02x}{:02x}.{:02x}{:02x}",
        id[0], id[1], id[2], id[3], id[4], id[5]
    )
}

/// The whole `isisd.conf` of `device`, whose `isis` is `isis`.
pub fn isisd_config(device: &Device, isis: &Isis) -> String {
    // The dynamic hostname TLV carries the daemon's hostname.
    let mut out = super::header(isis.hostname.as_deref().unwrap_or(&device.name));
    // The route-map before the `router isis` that names it: a redistribute whose route-map is
    // not there yet lets nothing through until the route-map delay timer runs.
    for (i, r) in isis.routes.iter().enumerate() {
        let _ = writeln!(
            out,
            "route-map {MAP} permit {}\n match tag {}\n set metric {}\nexit",
            (i + 1) * 10,
            tag(i),
            r.metric
        );
    }
    if isis.routes.is_empty() {
        let _ = writeln!(out, "route-map {MAP} deny 10\nexit");
    }
    for c in &isis.circuits {
        let link = &device.links[c.link];
        let _ = writeln!(out, "interface eth{}", c.link);
        if link.addrs.iter().any(|(a, _)| a.is_ipv4()) {
            let _ = writeln!(out, " ip router isis {AREA}");
        }
        if link.addrs.iter().any(|(a, _)| a.is_ipv6()) {
            let _ = writeln!(out, " ipv6 router isis {AREA}");
        }
        let _ = writeln!(out, " isis circuit-type {}", level_name(c.level));
        if c.point_to_point {
            out.push_str(" isis network point-to-point\n");
        }
        let _ = writeln!(out, " isis metric {}", c.metric);
        for (n, h) in [(1u8, c.hellos[0]), (2, c.hellos[1])] {
            if !c.level.has(n) {
                continue;
            }
            let _ = writeln!(out, " isis hello-interval {} level-{n}", h.interval);
            // FRR holds a neighbour for interval × multiplier: the dead interval, rounded up.
            let multiplier = h.dead.div_ceil(h.interval).clamp(2, 100);
            let _ = writeln!(out, " isis hello-multiplier {multiplier} level-{n}");
            if !c.point_to_point {
                let _ = writeln!(out, " isis priority {} level-{n}", h.priority);
            }
        }
        if !isis.hello_padding {
            out.push_str(" no isis hello padding\n");
        }
        if let Some(s) = isis.csnp_interval {
            let _ = writeln!(out, " isis csnp-interval {s}");
        }
        if let Some(s) = isis.psnp_interval {
            let _ = writeln!(out, " isis psnp-interval {s}");
        }
        out.push_str("exit\n");
    }
    let _ = writeln!(out, "router isis {AREA}");
    // A test device converges at once: its LSPs are regenerated and its SPF run within a
    // second of a change, not after FRR's 30 s generation hold-down. Before `net`: the area
    // address starts the instance, whose first LSP generation schedules the next one by the
    // interval in force then — the 30 s default, had the timers come after (measured: the
    // ranges reached the LSP 30 s after start).
    let _ = writeln!(
        out,
        " lsp-timers gen-interval 1 refresh-interval {} max-lifetime {}",
        isis.lsp_refresh, isis.lsp_lifetime
    );
    out.push_str(" spf-interval 1\n");
    for a in &isis.areas {
        let _ = writeln!(out, " net {}.{}.00", area(a), system_id(&isis.system_id));
    }
    let level = isis
        .circuits
        .iter()
        .fold(None, |acc: Option<Level>, c| match (acc, c.level) {
            (None, l) => Some(l),
            (Some(a), b) if a == b => Some(a),
            _ => Some(Level::L12),
        })
        .unwrap_or(Level::L12);
    let _ = writeln!(out, " is-type {}", level_name(level));
    let _ = writeln!(
        out,
        " metric-style {}",
        if isis.wide_metrics { "wide" } else { "narrow" }
    );
    if !isis.attached_bit {
        out.push_str(" no attached-bit send\n");
    }
    if let Some(m) = isis.lsp_mtu {
        let _ = writeln!(out, " lsp-mtu {m}");
    }
    for family in ["ipv4", "ipv6"] {
        for n in [1u8, 2] {
            if level.has(n) {
                let _ = writeln!(
                    out,
                    " redistribute {family} static level-{n} route-map {MAP}"
                );
            }
        }
    }
    out.push_str("exit\n");
    out
}

/// `zebra.conf`: the router id isisd puts in its TE router id TLV (RFC 5305 §4.3).
pub fn zebra_config(device: &Device, isis: &Isis) -> String {
    let mut out = super::header(&device.name);
    if let Some(id) = isis.te_router_id {
        let _ = writeln!(out, "ip router-id {id}");
    }
    out
}

/// The one line of `staticd` configuration that originates prefix `n` of range `i`.
fn static_route(n: &IpNet, i: usize) -> String {
    let family = if matches!(n, IpNet::V4(_)) {
        "ip"
    } else {
        "ipv6"
    };
    format!("{family} route {n} blackhole tag {}", tag(i))
}

/// The `staticd` lines of every advertised range: a tagged blackhole route a prefix.
pub fn static_routes(isis: &Isis) -> Result<String, RoutingError> {
    let mut out = String::new();
    for (i, r) in isis.routes.iter().enumerate() {
        if !r.advertised {
            continue;
        }
        for n in r.prefixes()? {
            out.push_str(&static_route(&n, i));
            out.push('\n');
        }
    }
    Ok(out)
}

/// The `staticd` commands that advertise (or withdraw) range `name`, as a vtysh input file;
/// None when no range has that name.
pub fn announce(isis: &Isis, name: &str, advertise: bool) -> Result<Option<String>, RoutingError> {
    let Some(i) = isis.routes.iter().position(|r| r.name == name) else {
        return Ok(None);
    };
    let range: &IsisRange = &isis.routes[i];
    let no = if advertise { "" } else { "no " };
    // `vtysh -f` reads a file in configuration mode already.
    let mut out = String::new();
    for n in range.prefixes()? {
        let _ = writeln!(out, "{no}{}", static_route(&n, i));
    }
    Ok(Some(out))
}

/// An IS-IS router's state, as its daemon holds it.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct IsisView {
    pub adjacencies: Vec<Adjacency>,
    pub pdus: Pdus,
    /// Both levels' databases, the device's own LSPs among them.
    pub lsps: Vec<Lsp>,
}

/// One adjacency as isisd holds it (`show isis neighbor detail json`).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Adjacency {
    /// The neighbour's dynamic hostname, or its system id.
    pub neighbour: String,
    pub interface: String,
    /// Levels it holds: bit 0 level 1, bit 1 level 2.
    pub levels: u8,
    pub up: bool,
    pub flaps: u64,
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn number(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Every adjacency of `show isis neighbor detail json`.
pub fn adjacencies(json: &Value) -> Vec<Adjacency> {
    let mut out = Vec::new();
    for a in json
        .get("areas")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for c in a
            .get("circuits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if c.get("adj").is_none() {
                continue;
            }
            let iface = c.get("interface").cloned().unwrap_or_default();
            let (interface, state, flaps) = match &iface {
                Value::Object(_) => (
                    text(&iface, "name").to_owned(),
                    text(&iface, "state").to_owned(),
                    number(&iface, "adj-flaps"),
                ),
                Value::String(s) => (s.clone(), text(c, "state").to_owned(), 0),
                _ => (String::new(), text(c, "state").to_owned(), 0),
            };
            out.push(Adjacency {
                neighbour: text(c, "adj").to_owned(),
                interface,
                levels: number(c, "level") as u8 & 3,
                up: state == "Up",
                flaps,
            });
        }
    }
    out
}

/// The PDUs isisd sent and received, by FRR's kind (`p2p-iih`, `l1-iih`, `l1-lsp`, `l2-csnp`,
/// …), from `show isis summary json`, summed over its areas.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Pdus {
    pub sent: Vec<(String, u64)>,
    pub received: Vec<(String, u64)>,
}

impl Pdus {
    /// How many of `kind` went each way.
    pub fn of(&self, kind: &str) -> (u64, u64) {
        let find =
            |list: &[(String, u64)]| list.iter().filter(|(k, _)| k == kind).map(|(_, n)| n).sum();
        (find(&self.sent), find(&self.received))
    }
}

pub fn pdus(json: &Value) -> Pdus {
    let mut out = Pdus::default();
    for a in json
        .get("areas")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (key, list) in [
            ("tx-pdu-type", &mut out.sent),
            ("rx-pdu-type", &mut out.received),
        ] {
            for (kind, n) in a.get(key).and_then(Value::as_object).into_iter().flatten() {
                list.push((kind.clone(), n.as_u64().unwrap_or(0)));
            }
        }
    }
    out
}

/// `show isis hostname`: each system id the daemon knows a dynamic hostname for.
pub fn hostnames(text: &str) -> Vec<(String, [u8; 6])> {
    text.lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            // `2      6400.0000.0002 devb` or `     * 6400.0000.0001 deva`
            let i = words.iter().position(|w| parse_system_id(w).is_some())?;
            let id = parse_system_id(words[i])?;
            Some((words.get(i + 1)?.to_string(), id))
        })
        .collect()
}

/// `6400.0000.0001` (or `640000000001`) as bytes.
pub fn parse_system_id(text: &str) -> Option<[u8; 6]> {
    let hex: String = text.chars().filter(|c| *c != '.').collect();
    if hex.len() != 12 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut id = [0u8; 6];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(id)
}

/// One LSP of a level's database, as `show isis database detail` prints it.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Lsp {
    pub level: u8,
    /// The originating system, the pseudonode and the fragment number.
    pub system_id: [u8; 6],
    pub pseudonode: u8,
    pub fragment: u8,
    /// The device's own LSP.
    pub own: bool,
    pub pdu_length: u32,
    pub sequence: u64,
    pub remaining_lifetime: u32,
    pub attached: bool,
    pub partition: bool,
    pub overload: bool,
    pub hostname: Option<String>,
    /// Extended IS reachability: neighbour system ids (with their pseudonode byte dropped).
    pub neighbours: Vec<[u8; 6]>,
    /// IP reachability: (prefix, metric), IPv4 and IPv6 alike.
    pub prefixes: Vec<(IpNet, u32)>,
}

/// Every LSP of `show isis database detail`; `names` (from [`hostnames`]) turns a dynamic
/// hostname in an LSP id back into its system id. An LSP whose originator has no known id is
/// skipped: it cannot be named the way OTG names LSPs.
pub fn database(text: &str, names: &[(String, [u8; 6])]) -> Vec<Lsp> {
    let id_of = |name: &str| {
        parse_system_id(name).or_else(|| names.iter().find(|(n, _)| n == name).map(|(_, id)| *id))
    };
    let mut out: Vec<Lsp> = Vec::new();
    let mut level = 0u8;
    let mut current: Option<Lsp> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("IS-IS Level-") {
            level = rest
                .chars()
                .next()
                .and_then(|c| c.to_digit(10))
                .unwrap_or(0) as u8;
            out.extend(current.take());
            continue;
        }
        if !line.starts_with(' ') && !trimmed.is_empty() && !trimmed.starts_with("LSP ID") {
            // `devb.00-00                121   0x00000002  0x9962    1138    1/0/0`
            out.extend(current.take());
            let words: Vec<&str> = trimmed.split_whitespace().collect();
            let Some((name, tail)) = words.first().and_then(|w| w.rsplit_once('.')) else {
                continue;
            };
            let Some((pseudo, fragment)) = tail.split_once('-') else {
                continue;
            };
            let own = words.get(1) == Some(&"*");
            let nums: Vec<&str> = words[1..].iter().copied().filter(|w| *w != "*").collect();
            let (Some(id), 5) = (id_of(name), nums.len()) else {
                continue;
            };
            let flags: Vec<bool> = nums[4].split('/').map(|f| f == "1").collect();
            current = Some(Lsp {
                level,
                system_id: id,
                pseudonode: u8::from_str_radix(pseudo, 16).unwrap_or(0),
                fragment: u8::from_str_radix(fragment, 16).unwrap_or(0),
                own,
                pdu_length: nums[0].parse().unwrap_or(0),
                sequence: u64::from_str_radix(nums[1].trim_start_matches("0x"), 16).unwrap_or(0),
                remaining_lifetime: nums[3].parse().unwrap_or(0),
                attached: flags.first().copied().unwrap_or(false),
                partition: flags.get(1).copied().unwrap_or(false),
                overload: flags.get(2).copied().unwrap_or(false),
                ..Lsp::default()
            });
            continue;
        }
        let Some(lsp) = current.as_mut() else {
            continue;
        };
        let Some((key, value)) = trimmed.split_once(": ") else {
            continue;
        };
        match key {
            "Hostname" => lsp.hostname = Some(value.trim().to_owned()),
            "Extended Reachability" | "IS Reachability" => {
                // `6400.0000.0001.00 (Metric: 10)`, or the neighbour's hostname.
                let who = value.split_whitespace().next().unwrap_or_default();
                let who = who.rsplit_once('.').map_or(who, |(s, _)| s);
                if let Some(id) = id_of(who) {
                    lsp.neighbours.push(id);
                }
            }
            "Extended IP Reachability"
            | "IP Reachability"
            | "IPv6 Reachability"
            | "IP Reachability (internal)"
            | "IP Reachability (external)" => {
                // `10.10.12.0/24 (Metric: 10)`
                let mut words = value.split_whitespace();
                let prefix = words.next().and_then(|p| p.parse::<IpNet>().ok());
                let metric = value
                    .split("Metric: ")
                    .nth(1)
                    .and_then(|m| m.trim_end_matches(')').split([')', ' ']).next())
                    .and_then(|m| m.parse().ok());
                if let (Some(p), Some(m)) = (prefix, metric) {
                    lsp.prefixes.push((p, m));
                }
            }
            _ => {}
        }
    }
    out.extend(current);
    out
}

#[cfg(test)]
mod tests;
