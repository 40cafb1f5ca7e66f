//! The `Flow` node: its endpoints, its metrics, and the order of its `packet` headers, each of
//! which its own module maps.

use linerate_stream::{Proto, Rate, StreamSpec};
use linerate_wire::Payload;

use super::{Cx, FlowPlan, HostPlan, PortPlan};
use crate::model::*;

/// Where a header may stand: ethernet, one optional vlan, ipv4 or ipv6, udp, tcp, icmp or
/// icmpv6, then custom bytes; or ethernet, one optional vlan and arp, which ends the frame. The
/// frame may end (custom bytes may follow) after ethernet, vlan or the IP header too.
#[derive(PartialEq, PartialOrd, Clone, Copy)]
enum Stage {
    Start,
    Eth,
    Vlan,
    Ip,
    L4,
    Custom,
    Arp,
}

impl Stage {
    fn of(choice: &str) -> Option<Self> {
        Some(match choice {
            "ethernet" => Stage::Eth,
            "vlan" => Stage::Vlan,
            "ipv4" | "ipv6" => Stage::Ip,
            "udp" | "tcp" | "icmp" | "icmpv6" => Stage::L4,
            "custom" => Stage::Custom,
            "arp" => Stage::Arp,
            _ => return None,
        })
    }

    fn may_follow(self, before: Stage) -> bool {
        match self {
            Stage::Eth => before == Stage::Start,
            Stage::Vlan => before == Stage::Eth,
            Stage::Ip => matches!(before, Stage::Eth | Stage::Vlan),
            Stage::L4 => before == Stage::Ip,
            Stage::Custom => before != Stage::Start && before != Stage::Arp,
            Stage::Arp => matches!(before, Stage::Eth | Stage::Vlan),
            Stage::Start => false,
        }
    }
}

/// Where a flow leaves and arrives: its ports, and its pairs of hosts when it goes between
/// devices (the first pair first).
struct Endpoints<'h> {
    tx_port: String,
    rx_port: Option<String>,
    between: Option<Vec<(&'h HostPlan, &'h HostPlan)>>,
}

impl Cx {
    pub(super) fn flow(
        &mut self,
        path: &str,
        index: usize,
        f: &Flow,
        ports: &[PortPlan],
        hosts: &[HostPlan],
    ) -> Option<(FlowPlan, StreamSpec, Option<f64>)> {
        let before = self.refusals.len();
        self.seed = None;
        self.rest(path, &f.rest);
        if f.name.is_empty() {
            self.refuse(format!("{path}.name"), "a flow needs a name");
        }
        let mut spec = StreamSpec {
            name: f.name.clone(),
            size: 64,
            rate: Rate::Pps(1000.0),
            payload: Payload::Increment,
            ..StreamSpec::default()
        };
        let family = packet_family(&f.packet);
        let Endpoints {
            tx_port,
            rx_port,
            between,
        } = self.endpoints(path, &f.name, f.tx_rx.as_ref(), ports, hosts, family)?;
        if between.is_none() {
            self.endpoints
                .push((index, tx_port.clone(), rx_port.clone()));
        }
        let link_mbps = ports
            .iter()
            .find(|p| p.name == tx_port)
            .and_then(|p| p.link_mbps);
        match (&between, f.packet.is_empty()) {
            (_, false) => self.headers(path, &f.packet, &mut spec),
            // The schema's default packet is one ethernet header; between devices, which have
            // addresses, the IP header of their family follows it (as ixia-c sends it).
            (Some(pairs), true) => {
                spec.proto = Proto::Ip;
                spec.ipv6 = pairs[0].0.spec.ipv6.is_some();
            }
            (None, true) => spec.proto = Proto::Ethernet,
        }
        if let Some(pairs) = between {
            let (from, to) = pairs[0];
            let d = f.tx_rx.as_ref().and_then(|t| t.device.as_ref());
            // A route range's family is its own, not its interface's (MP-BGP carries IPv6
            // routes over an IPv4 session).
            let ranges = d.is_some_and(|d| {
                d.tx_names
                    .iter()
                    .chain(&d.rx_names)
                    .any(|n| self.ranges.iter().any(|r| &r.name == n))
            });
            if !ranges {
                self.host_family(path, &spec, &pairs);
            }
            spec.from = Some(from.spec.name.clone());
            spec.to = Some(to.spec.name.clone());
            spec.pairs = pairs[1..]
                .iter()
                .map(|(a, b)| (a.spec.name.clone(), b.spec.name.clone()))
                .collect();
            if let Some(d) = d {
                self.range_addresses(path, d, &mut spec);
            }
        }
        self.size(path, f.size.as_ref(), &mut spec);
        let pps = self.rate(path, f.rate.as_ref(), &mut spec);
        let seconds = self.duration(path, f.duration.as_ref(), &mut spec, pps, link_mbps);
        let (metrics, timestamps, latency) = self.metrics(path, f.metrics.as_ref());
        if let Some((_, seed)) = self.seed.take() {
            spec.seed = seed;
        }
        if self.refusals.len() > before {
            return None;
        }
        let plan = FlowPlan {
            name: f.name.clone(),
            tx_port,
            rx_port,
            metrics,
            timestamps,
            latency,
        };
        Some((plan, spec, seconds))
    }

    /// The transmit port and the receive port, when given, and the hosts of a flow between
    /// device addresses.
    fn endpoints<'h>(
        &mut self,
        path: &str,
        flow: &str,
        tx_rx: Option<&FlowTxRx>,
        ports: &[PortPlan],
        hosts: &'h [HostPlan],
        family: Option<bool>,
    ) -> Option<Endpoints<'h>> {
        let Some(t) = tx_rx else {
            self.refuse(format!("{path}.tx_rx"), "a flow needs tx_rx");
            return None;
        };
        let p = format!("{path}.tx_rx");
        self.rest(&p, &t.rest);
        let port = match (t.choice.as_deref(), &t.port, &t.device) {
            (Some("port") | None, Some(port), _) if hosts.is_empty() => port,
            (Some("port") | None, Some(_), _) => {
                self.refuse(
                    format!("{p}.port"),
                    "with devices, every flow goes between their addresses: use tx_rx.device",
                );
                return None;
            }
            (Some("device"), _, Some(d)) => {
                let pairs = self.device_endpoints(&format!("{p}.device"), d, hosts, family)?;
                let pairs = self.pairs_over_lags(flow, pairs, hosts);
                let (from, to) = pairs[0];
                return Some(Endpoints {
                    tx_port: from.port.clone(),
                    rx_port: Some(to.port.clone()),
                    between: Some(pairs),
                });
            }
            (choice, ..) => {
                self.refuse(
                    format!("{p}.choice"),
                    format!(
                        "'{}' without its endpoints: give tx_rx.port or tx_rx.device",
                        choice.unwrap_or("port")
                    ),
                );
                return None;
            }
        };
        let p = format!("{p}.port");
        self.rest(&p, &port.rest);
        let known = |n: &str| ports.iter().any(|q| q.name == n);
        if !known(&port.tx_name) {
            self.refuse(format!("{p}.tx_name"), self.unknown_port(&port.tx_name));
        }
        let mut rx: Vec<&String> = port.rx_names.iter().collect();
        if let Some(r) = &port.rx_name
            && !rx.contains(&r)
        {
            rx.push(r);
        }
        for (j, r) in port.rx_names.iter().enumerate() {
            if !known(r) {
                self.refuse(format!("{p}.rx_names[{j}]"), self.unknown_port(r));
            }
        }
        if rx.len() > 1 {
            self.refuse(
                format!("{p}.rx_names"),
                "one receive port per flow (linerate's receiver is one interface)",
            );
        }
        Some(Endpoints {
            tx_port: port.tx_name.clone(),
            rx_port: rx.first().map(|r| (*r).clone()),
            between: None,
        })
    }

    /// The pairs of hosts a flow goes between, the first pair first: each sender with the
    /// receiver at its place (`one_to_one`), or every sender with every other receiver (`mesh`,
    /// the schema's default), senders first. Names are address objects, route ranges (their
    /// device's session host), or ethernets and devices, which stand for their address objects
    /// of the flow's family. One port sends a flow and one receiver counts it: every sender on
    /// one port, every receiver on one port.
    fn device_endpoints<'h>(
        &mut self,
        p: &str,
        d: &FlowRouter,
        hosts: &'h [HostPlan],
        family: Option<bool>,
    ) -> Option<Vec<(&'h HostPlan, &'h HostPlan)>> {
        self.rest(p, &d.rest);
        let mode = d.mode.as_deref().unwrap_or("mesh");
        if !matches!(mode, "mesh" | "one_to_one") {
            self.refuse(format!("{p}.mode"), format!("unknown mode '{mode}'"));
        }
        if d.bidirectional == Some(true) {
            self.refuse(
                format!("{p}.bidirectional"),
                "give each direction its own flow (each is counted on its own)",
            );
        }
        let txs = self.named_hosts(p, "tx_names", &d.tx_names, hosts, family);
        let rxs = self.named_hosts(p, "rx_names", &d.rx_names, hosts, family);
        let (txs, rxs) = (txs?, rxs?);
        let pairs: Vec<(&HostPlan, &HostPlan)> = if mode == "one_to_one" {
            if txs.len() != rxs.len() {
                self.refuse(
                    format!("{p}.mode"),
                    format!(
                        "one_to_one pairs each sender with the receiver at its place, but tx_names stand for {} hosts and rx_names for {}",
                        txs.len(),
                        rxs.len()
                    ),
                );
                return None;
            }
            txs.iter().copied().zip(rxs.iter().copied()).collect()
        } else {
            txs.iter()
                .flat_map(|&a| rxs.iter().map(move |&b| (a, b)))
                .filter(|(a, b)| a.spec.name != b.spec.name)
                .collect()
        };
        if pairs.is_empty() || pairs.iter().any(|(a, b)| a.spec.name == b.spec.name) {
            self.refuse(format!("{p}.rx_names[0]"), "a flow goes to another address");
            return None;
        }
        for (key, side) in [("tx_names", &txs), ("rx_names", &rxs)] {
            if let Some(other) = side.iter().find(|h| h.port != side[0].port) {
                self.refuse(
                    format!("{p}.{key}"),
                    format!(
                        "'{}' is on port {} and '{}' on port {}: one port sends a flow and one receiver counts it, so give each port its own flow",
                        side[0].spec.name, side[0].port, other.spec.name, other.port
                    ),
                );
                return None;
            }
        }
        Some(pairs)
    }

    /// The hosts `names` stand for, in order (see `device_endpoints`).
    fn named_hosts<'h>(
        &mut self,
        p: &str,
        key: &str,
        names: &[String],
        hosts: &'h [HostPlan],
        family: Option<bool>,
    ) -> Option<Vec<&'h HostPlan>> {
        if names.is_empty() {
            self.refuse(
                format!("{p}.{key}"),
                "name at least one address object, ethernet, device or route range",
            );
            return None;
        }
        let before = self.refusals.len();
        let mut out = Vec::new();
        for (j, n) in names.iter().enumerate() {
            let at = format!("{p}.{key}[{j}]");
            // A route range stands for the host its sessions leave from, and is a flow's only
            // endpoint on its side: the flow steps over its prefixes.
            if let Some(r) = self.ranges.iter().find(|r| &r.name == n) {
                let host = r.host.clone();
                if names.len() > 1 {
                    self.refuse(
                        at,
                        "a route range is the only name on its side of a flow (the flow steps over its prefixes)",
                    );
                } else if let Some(h) = hosts.iter().find(|h| h.spec.name == host) {
                    out.push(h);
                }
                continue;
            }
            if let Some(h) = hosts.iter().find(|h| &h.spec.name == n) {
                out.push(h);
                continue;
            }
            // A device on a LAG stands for its first member's hosts; the flow's member is
            // chosen once its pairs are known.
            let of: Vec<&HostPlan> = hosts
                .iter()
                .filter(|h| &h.ethernet == n || &h.device == n)
                .filter(|h| h.lag.as_ref().is_none_or(|(_, m)| *m == 0))
                .collect();
            if of.is_empty() {
                self.refuse(
                    at,
                    format!(
                        "no ipv4 or ipv6 address object, ethernet, device or route range is named '{n}' (flows go between device addresses)"
                    ),
                );
                continue;
            }
            // Without an IP header in the packet, IPv4 unless it has IPv6 addresses alone.
            let v6 = family.unwrap_or_else(|| of.iter().all(|h| h.spec.ipv4.is_none()));
            let len = out.len();
            out.extend(of.into_iter().filter(|h| h.spec.ipv6.is_some() == v6));
            if out.len() == len {
                self.refuse(
                    at,
                    format!(
                        "'{n}' has no {} address object, the family of the flow's packet",
                        if v6 { "IPv6" } else { "IPv4" }
                    ),
                );
            }
        }
        (self.refusals.len() == before).then_some(out)
    }

    /// A flow from or to a route range takes its address from the range where its headers set
    /// none; to a range of one block, it steps over every prefix of it.
    fn range_addresses(&mut self, path: &str, d: &FlowRouter, spec: &mut StreamSpec) {
        let range = |names: &[String]| {
            let name = names.first()?;
            self.ranges.iter().find(|r| &r.name == name).cloned()
        };
        let (from, to) = (range(&d.tx_names), range(&d.rx_names));
        for end in from.iter().chain(&to) {
            if end.first.is_ipv6() != spec.ipv6 {
                self.refuse(
                    format!("{path}.tx_rx.device"),
                    format!(
                        "route range '{}' is of the other IP family than the flow's packet",
                        end.name
                    ),
                );
                return;
            }
        }
        if let Some(r) = from
            && spec.src_ip.is_none()
        {
            spec.src_ip = Some(r.first);
        }
        let Some(r) = to else { return };
        if spec.dst_ip.is_some()
            || spec
                .vary
                .iter()
                .any(|v| v.field == linerate_wire::Field::DstIp)
        {
            return;
        }
        spec.dst_ip = Some(r.first);
        let Some((count, step)) = r.block.filter(|(count, _)| *count > 1) else {
            return;
        };
        let first: u128 = match r.first {
            std::net::IpAddr::V4(a) => u32::from(a).into(),
            std::net::IpAddr::V6(a) => a.into(),
        };
        let last = first + step * u128::from(count - 1);
        let last = match r.first {
            std::net::IpAddr::V4(_) => std::net::IpAddr::V4((last as u32).into()),
            std::net::IpAddr::V6(_) => std::net::IpAddr::V6(last.into()),
        };
        let vary = format!("dst-ip:inc:{}-{last}:{step}", r.first);
        match (u64::try_from(step), vary.parse::<linerate_stream::Vary>()) {
            (Ok(_), Ok(v)) => spec.vary.push(v),
            _ => self.refuse(
                format!("{path}.tx_rx.device.rx_names[0]"),
                format!("route range '{}': its prefixes are too far apart to step over (more than 2^64 addresses)", r.name),
            ),
        }
    }

    /// The flow's IP header is of its hosts' family.
    /// Each host of the pairs once: a mesh of ten by ten with the wrong family is ten
    /// refusals a side, not a hundred.
    fn host_family(&mut self, path: &str, spec: &StreamSpec, pairs: &[(&HostPlan, &HostPlan)]) {
        let p = format!("{path}.tx_rx.device");
        let mut seen: Vec<&str> = Vec::new();
        let ends = pairs
            .iter()
            .flat_map(|(from, to)| [("tx_names", *from), ("rx_names", *to)]);
        for (key, h) in ends {
            if seen.contains(&h.spec.name.as_str()) {
                continue;
            }
            seen.push(&h.spec.name);
            let v6 = h.spec.ipv6.is_some();
            if v6 != spec.ipv6 {
                self.refuse(
                    format!("{p}.{key}[0]"),
                    format!(
                        "'{}' is an {} address but the flow's packet is {}",
                        h.spec.name,
                        if v6 { "IPv6" } else { "IPv4" },
                        if spec.ipv6 { "ipv6" } else { "ipv4" }
                    ),
                );
            }
        }
    }

    /// (metrics, timestamps, latency) as the flow enables them.
    fn metrics(&mut self, path: &str, m: Option<&FlowMetrics>) -> (bool, bool, bool) {
        let Some(m) = m else {
            return (false, false, false);
        };
        let p = format!("{path}.metrics");
        self.rest(&p, &m.rest);
        let latency = match &m.latency {
            Some(l) => {
                self.rest(&format!("{p}.latency"), &l.rest);
                if let Some(mode) = l.mode.as_deref()
                    && !matches!(mode, "store_forward" | "cut_through")
                {
                    self.refuse(
                        format!("{p}.latency.mode"),
                        format!("unknown mode '{mode}'"),
                    );
                }
                l.enable.unwrap_or(false)
            }
            None => false,
        };
        let enable = m.enable.unwrap_or(false);
        if !enable && (latency || m.timestamps == Some(true)) {
            self.refuse(
                format!("{p}.enable"),
                "latency and timestamps need metrics.enable = true",
            );
        }
        (enable, m.timestamps.unwrap_or(false), latency)
    }

    /// The `packet` headers in order: those before a tunnel onto `spec.encap` (`outer`), the
    /// flow's own each by its own module onto `spec`.
    fn headers(&mut self, path: &str, packet: &[FlowHeader], spec: &mut StreamSpec) {
        let choices: Vec<String> = packet
            .iter()
            .map(|h| h.choice.clone().unwrap_or_else(|| implied_choice(h).into()))
            .collect();
        let Some(inner) = self.encap(path, packet, &choices, spec) else {
            return;
        };
        // Inside a tunnel other than VXLAN the flow may start at its IP header.
        let mut stage = match choices.get(inner).map(String::as_str) {
            Some("ipv4" | "ipv6") if inner > 0 => Stage::Eth,
            _ => Stage::Start,
        };
        let mut payload: Vec<u8> = Vec::new();
        // The innermost header, custom bytes aside: where the frame's headers end.
        let mut last = stage;
        for (i, (h, choice)) in packet.iter().zip(&choices).enumerate().skip(inner) {
            let p = format!("{path}.packet[{i}]");
            self.rest(&p, &h.rest);
            let Some(want) = Stage::of(choice) else {
                self.refuse(
                    format!("{p}.choice"),
                    format!(
                        "the '{choice}' header is not supported: linerate builds ethernet, vlan, ipv4 or ipv6, udp, tcp, icmp or icmpv6, and custom bytes after any of them, or arp after ethernet and vlan, inside vxlan, gre, mpls or gtpv1 tunnels"
                    ),
                );
                return;
            };
            if !want.may_follow(stage) {
                self.refuse(
                    format!("{p}.choice"),
                    format!(
                        "'{choice}' here is not supported: linerate's frames are ethernet, one optional vlan, ipv4 or ipv6, udp, tcp, icmp or icmpv6, each level but ethernet optional, then optional custom bytes; or ethernet, one optional vlan and arp (after a tunnel header, from ipv4 or ipv6 on)"
                    ),
                );
                return;
            }
            stage = want;
            if want != Stage::Custom {
                last = want;
            }
            let at = format!("{p}.{choice}");
            let ends = choices[i + 1..].iter().all(|c| c == "custom");
            let mapped = match choice.as_str() {
                "ethernet" => self.ethernet(&at, h.ethernet.as_deref(), spec, ends),
                "vlan" => self.vlan(&at, h.vlan.as_deref(), spec),
                "ipv4" => self.ipv4(&at, h.ipv4.as_deref(), spec),
                "ipv6" => self.ipv6(&at, h.ipv6.as_deref(), spec),
                "udp" => self.udp(&at, h.udp.as_deref(), spec),
                "tcp" => self.tcp(&at, h.tcp.as_deref(), spec),
                "icmp" => self.icmp(&p, h.icmp.as_deref(), spec, false),
                "icmpv6" => self.icmp(&p, h.icmpv6.as_deref(), spec, true),
                "arp" => self.arp(&at, h.arp.as_deref(), spec),
                _ => self.custom(&at, h.custom.as_deref(), &mut payload),
            };
            if mapped.is_none() {
                return;
            }
        }
        match last {
            Stage::Eth | Stage::Vlan => spec.proto = Proto::Ethernet,
            Stage::Ip => spec.proto = Proto::Ip,
            _ => {}
        }
        if !payload.is_empty() {
            spec.payload = Payload::Raw(payload);
        }
    }
}

/// The family of a packet's innermost IP header (true: IPv6); None without one.
fn packet_family(packet: &[FlowHeader]) -> Option<bool> {
    packet
        .iter()
        .rev()
        .map(|h| h.choice.as_deref().unwrap_or_else(|| implied_choice(h)))
        .find_map(|c| match c {
            "ipv4" => Some(false),
            "ipv6" => Some(true),
            _ => None,
        })
}

/// The header a `FlowHeader` without `choice` holds: the first one given, else ethernet.
fn implied_choice(h: &FlowHeader) -> &'static str {
    [
        ("vlan", h.vlan.is_some()),
        ("ipv4", h.ipv4.is_some()),
        ("ipv6", h.ipv6.is_some()),
        ("udp", h.udp.is_some()),
        ("tcp", h.tcp.is_some()),
        ("icmp", h.icmp.is_some()),
        ("icmpv6", h.icmpv6.is_some()),
        ("custom", h.custom.is_some()),
        ("vxlan", h.vxlan.is_some()),
        ("gre", h.gre.is_some()),
        ("mpls", h.mpls.is_some()),
        ("gtpv1", h.gtpv1.is_some()),
        ("arp", h.arp.is_some()),
    ]
    .iter()
    .find(|(_, s)| *s)
    .map_or("ethernet", |(c, _)| c)
}
