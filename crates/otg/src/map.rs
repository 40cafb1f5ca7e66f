//! A `Config` onto linerate: the ports and where they are, one `StreamSpec` per flow (its index
//! is the flow id the signature carries), and what each flow's metrics report. Everything the
//! config asks that linerate cannot do is refused by its JSON path, all in one answer.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use linerate_stream::{Bursts, Mode, Proto, StreamSpec, VarySpec};
use serde_json::Value;

use crate::error::{Refusal, Refusals};
use crate::model::*;

/// Where a port is: an interface of this host, in a network namespace when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub iface: String,
    pub netns: Option<String>,
}

impl Location {
    /// `IFACE` or `IFACE@NETNS`.
    pub fn parse(text: &str) -> Option<Self> {
        let ok = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
        };
        match text.split_once('@') {
            Some((i, n)) if ok(i) && ok(n) && i.len() < 16 => Some(Self {
                iface: i.into(),
                netns: Some(n.into()),
            }),
            None if ok(text) && text.len() < 16 => Some(Self {
                iface: text.into(),
                netns: None,
            }),
            _ => None,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.netns {
            Some(n) => write!(f, "{}@{n}", self.iface),
            None => f.write_str(&self.iface),
        }
    }
}

/// One configured port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlan {
    pub name: String,
    pub location: Location,
    /// From `layer1.speed`.
    pub link_mbps: Option<u64>,
    /// A capture is configured on it.
    pub capture: bool,
}

/// What a flow reports, besides its stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowPlan {
    pub name: String,
    pub tx_port: String,
    pub rx_port: Option<String>,
    /// `metrics.enable`: the flow's frames carry the signature and the receiver counts them.
    pub metrics: bool,
    pub timestamps: bool,
    pub latency: bool,
}

/// A config as linerate runs it.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub ports: Vec<PortPlan>,
    /// The one port every flow transmits on (None: no flows).
    pub tx_port: Option<String>,
    /// The one port flows name as their receive port (None: no flow names one).
    pub rx_port: Option<String>,
    /// One per flow, in the config's order; the index is the flow id.
    pub streams: Vec<StreamSpec>,
    pub flows: Vec<FlowPlan>,
    /// `fixed_seconds` (the same on every flow): the run ends then.
    pub duration: Option<Duration>,
}

impl Mapped {
    pub fn port(&self, name: &str) -> Option<&PortPlan> {
        self.ports.iter().find(|p| p.name == name)
    }
}

/// Reads a request body as a `Config`; a body that is not JSON, or whose values have the wrong
/// type, is refused with the path of the first bad value.
pub fn parse_config(body: &[u8]) -> Result<Config, Refusals> {
    parse_json(body)
}

/// Any request model from JSON, a type error naming its path.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Refusals> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let path = if path == "." { "body".into() } else { path };
        let why = if inner.is_syntax() || inner.is_eof() {
            format!("malformed JSON: {inner}")
        } else {
            inner.to_string()
        };
        Refusals::one(path, why)
    })
}

/// The config mapped, or every refusal it earned.
pub fn map_config(config: &Config) -> Result<Mapped, Refusals> {
    let mut cx = Cx::default();
    let mapped = cx.config(config);
    if cx.refusals.is_empty() {
        Ok(mapped)
    } else {
        Err(Refusals(cx.refusals))
    }
}

#[derive(Default)]
struct Cx {
    refusals: Vec<Refusal>,
    /// The flow's `random.seed`, with the path that gave it: linerate draws every random
    /// field of a stream from one seed.
    seed: Option<(String, u64)>,
}

/// How a field's pattern resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pat {
    /// Not given, or `auto`: linerate's default.
    Unset,
    Value(u128),
    /// Frame n carries `first` moved n steps (mod count) in `mode`.
    Vary {
        mode: VaryKind,
        lo: u128,
        hi: u128,
        step: u128,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VaryKind {
    Inc,
    Dec,
    Random,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int(u128),
    Mac,
    Ipv4,
    Ipv6,
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Why a top-level or well-known key is refused, when there is more to say than its name.
fn hint(key: &str) -> &'static str {
    match key {
        "devices" => {
            "emulated devices (interfaces, BGP, ISIS, OSPF, RSVP, DHCP, …) are not supported: linerate is a stateless generator of flows between ports"
        }
        "lags" => "LAGs are not supported: give a flow one transmit port",
        "lldp" => "LLDP is not supported",
        "events" | "stateful_flows" | "egress_only_tracking" => "not supported by linerate",
        "metric_tags" => "metric tags (tagged metrics) are not supported",
        "payload" => {
            "flow payload patterns are not supported: linerate fills the payload with an incrementing byte (a custom header after the L4 header sets its first bytes)"
        }
        "egress_packet" => "egress tracking is not supported",
        _ => "not supported by linerate",
    }
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn int(v: &Value) -> Option<u128> {
    match v {
        Value::Number(n) => n.as_u64().map(u128::from),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn mac_text(v: u128) -> String {
    let b = (v as u64).to_be_bytes();
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        b[2], b[3], b[4], b[5], b[6], b[7]
    )
}

impl Kind {
    fn parse(self, v: &Value) -> Option<u128> {
        match self {
            Kind::Int(max) => int(v).filter(|&n| n <= max),
            Kind::Mac => {
                let s = v.as_str()?;
                let parts: Vec<&str> = s.split([':', '-']).collect();
                if parts.len() != 6 {
                    return None;
                }
                parts.iter().try_fold(0u128, |acc, p| {
                    (p.len() <= 2)
                        .then(|| u8::from_str_radix(p, 16).ok())
                        .flatten()
                        .map(|b| (acc << 8) | u128::from(b))
                })
            }
            Kind::Ipv4 => Some(u128::from(u32::from(v.as_str()?.parse::<Ipv4Addr>().ok()?))),
            Kind::Ipv6 => Some(u128::from(v.as_str()?.parse::<Ipv6Addr>().ok()?)),
        }
    }

    fn max(self) -> u128 {
        match self {
            Kind::Int(max) => max,
            Kind::Mac => (1 << 48) - 1,
            Kind::Ipv4 => u128::from(u32::MAX),
            Kind::Ipv6 => u128::MAX,
        }
    }

    fn text(self, v: u128) -> String {
        match self {
            Kind::Int(_) => v.to_string(),
            Kind::Mac => mac_text(v),
            Kind::Ipv4 => Ipv4Addr::from(v as u32).to_string(),
            Kind::Ipv6 => Ipv6Addr::from(v).to_string(),
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Kind::Int(_) => "an integer in range",
            Kind::Mac => "a MAC address like 00:11:22:33:44:55",
            Kind::Ipv4 => "an IPv4 address like 10.1.1.1",
            Kind::Ipv6 => "an IPv6 address like 2001:db8::1",
        }
    }
}

impl Cx {
    fn refuse(&mut self, path: impl Into<String>, why: impl Into<String>) {
        self.refusals.push(Refusal {
            path: path.into(),
            why: why.into(),
        });
    }

    /// Refuses every key of `rest` that asks for something.
    fn rest(&mut self, path: &str, rest: &Rest) {
        for (key, value) in rest {
            if !is_empty(value) {
                self.refuse(format!("{path}.{key}"), hint(key));
            }
        }
    }

    fn config(&mut self, c: &Config) -> Mapped {
        for (key, value) in &c.rest {
            if !is_empty(value) {
                self.refuse(key.clone(), hint(key));
            }
        }
        if let Some(o) = &c.options {
            self.rest("options", &o.rest);
            if let Some(p) = &o.port_options {
                self.rest("options.port_options", &p.rest);
                if p.data_integrity == Some(true) {
                    self.refuse(
                        "options.port_options.data_integrity",
                        "payload integrity checking is not supported",
                    );
                }
            }
        }
        let mut ports: Vec<PortPlan> = Vec::new();
        for (i, p) in c.ports.iter().enumerate() {
            let path = format!("ports[{i}]");
            self.rest(&path, &p.rest);
            if p.name.is_empty() {
                self.refuse(format!("{path}.name"), "a port needs a name");
            }
            if ports.iter().any(|q| q.name == p.name) {
                self.refuse(
                    format!("{path}.name"),
                    format!("port name '{}' is used twice", p.name),
                );
            }
            let location = match p.location.as_deref().map(Location::parse) {
                Some(Some(l)) => l,
                Some(None) => {
                    self.refuse(
                        format!("{path}.location"),
                        format!(
                            "'{}' is not an interface: write IFACE or IFACE@NETNS (e.g. lr0, lr1@lr-sink)",
                            p.location.as_deref().unwrap_or_default()
                        ),
                    );
                    continue;
                }
                None => {
                    self.refuse(
                        format!("{path}.location"),
                        "a port needs a location: IFACE or IFACE@NETNS",
                    );
                    continue;
                }
            };
            ports.push(PortPlan {
                name: p.name.clone(),
                location,
                link_mbps: None,
                capture: false,
            });
        }
        for (i, l) in c.layer1.iter().enumerate() {
            let path = format!("layer1[{i}]");
            self.rest(&path, &l.rest);
            let mbps = match l.speed.as_deref() {
                None => None,
                Some(s) => match speed_mbps(s) {
                    Some(m) => Some(m),
                    None => {
                        self.refuse(format!("{path}.speed"), format!("unknown speed '{s}'"));
                        None
                    }
                },
            };
            if let Some(mtu) = &l.mtu
                && int(mtu) != Some(1500)
            {
                self.refuse(
                    format!("{path}.mtu"),
                    "linerate does not set the MTU: it uses the interface's (set it with ip link)",
                );
            }
            for (j, name) in l.port_names.iter().enumerate() {
                match ports.iter_mut().find(|p| &p.name == name) {
                    Some(p) => p.link_mbps = mbps.or(p.link_mbps),
                    None => self.refuse(
                        format!("{path}.port_names[{j}]"),
                        format!("no port is named '{name}'"),
                    ),
                }
            }
        }
        for (i, cap) in c.captures.iter().enumerate() {
            let path = format!("captures[{i}]");
            self.rest(&path, &cap.rest);
            if let Some(f) = cap.format.as_deref()
                && f != "pcap"
            {
                self.refuse(
                    format!("{path}.format"),
                    format!("captures are pcap files ('{f}' is not supported)"),
                );
            }
            if cap.packet_size.as_ref().is_some_and(|v| !is_empty(v)) {
                self.refuse(
                    format!("{path}.packet_size"),
                    "captures keep whole frames (packet_size is not supported)",
                );
            }
            for (j, name) in cap.port_names.iter().enumerate() {
                match ports.iter_mut().find(|p| &p.name == name) {
                    Some(p) => p.capture = true,
                    None => self.refuse(
                        format!("{path}.port_names[{j}]"),
                        format!("no port is named '{name}'"),
                    ),
                }
            }
        }
        let mut streams = Vec::new();
        let mut flows: Vec<FlowPlan> = Vec::new();
        let mut seconds: Option<(usize, f64)> = None;
        let mut any_seconds_missing: Option<usize> = None;
        for (i, f) in c.flows.iter().enumerate() {
            let path = format!("flows[{i}]");
            if flows.iter().any(|g| g.name == f.name) {
                self.refuse(
                    format!("{path}.name"),
                    format!("flow name '{}' is used twice", f.name),
                );
            }
            let Some((plan, spec, secs)) = self.flow(&path, f, &ports) else {
                continue;
            };
            match (secs, seconds) {
                (Some(s), None) => seconds = Some((i, s)),
                (Some(s), Some((j, t))) if s != t => self.refuse(
                    format!("{path}.duration.fixed_seconds.seconds"),
                    format!(
                        "{s} s, but flows[{j}] runs {t} s: linerate ends every flow of a run at one time, so fixed_seconds must be the same on every flow"
                    ),
                ),
                (None, _) => any_seconds_missing = any_seconds_missing.or(Some(i)),
                _ => {}
            }
            streams.push(spec);
            flows.push(plan);
        }
        if let (Some((i, _)), Some(j)) = (seconds, any_seconds_missing) {
            self.refuse(
                format!("flows[{j}].duration"),
                format!(
                    "flows[{i}] runs fixed_seconds and this flow does not: linerate ends every flow of a run at one time, so fixed_seconds must be on every flow or none"
                ),
            );
        }
        // Every flow leaves by one port and arrives at one: the signature's flow id is the
        // flow's index on its port, so two transmit ports would give a receiver two flows 0.
        let tx_port = flows.first().map(|f| f.tx_port.clone());
        for (i, f) in flows.iter().enumerate() {
            if Some(&f.tx_port) != tx_port.as_ref() {
                self.refuse(
                    format!("flows[{i}].tx_rx.port.tx_name"),
                    format!(
                        "'{}', but flows[0] transmits on '{}': linerate runs every flow of a config on one transmit port",
                        f.tx_port,
                        tx_port.as_deref().unwrap_or_default()
                    ),
                );
            }
        }
        let rx_port = flows.iter().find_map(|f| f.rx_port.clone());
        for (i, f) in flows.iter().enumerate() {
            if f.rx_port.is_some() && f.rx_port != rx_port {
                self.refuse(
                    format!("flows[{i}].tx_rx.port.rx_names"),
                    format!(
                        "'{}', but another flow receives on '{}': linerate receives every flow of a config on one port",
                        f.rx_port.as_deref().unwrap_or_default(),
                        rx_port.as_deref().unwrap_or_default()
                    ),
                );
            }
            if rx_port.is_some() && rx_port == Some(f.tx_port.clone()) {
                self.refuse(
                    format!("flows[{i}].tx_rx.port.rx_names"),
                    "the receive port is the transmit port: give the far end of the link",
                );
            }
        }
        // One port signs all its frames or none (a receiver would count the unsigned ones as
        // other traffic): any flow with metrics signs every flow.
        let signed = flows.iter().any(|f| f.metrics);
        let interleaved = streams.len() > 1;
        for s in &mut streams {
            s.signature = signed;
            if interleaved {
                s.mode = Mode::Interleaved;
            }
        }
        Mapped {
            ports,
            tx_port,
            rx_port,
            streams,
            flows,
            duration: seconds.map(|(_, s)| Duration::from_secs_f64(s)),
        }
    }

    fn flow(
        &mut self,
        path: &str,
        f: &Flow,
        ports: &[PortPlan],
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
            rate: "1000".into(),
            payload: "inc".into(),
            ..StreamSpec::default()
        };
        // Endpoints.
        let (tx_port, rx_port) = match &f.tx_rx {
            None => {
                self.refuse(format!("{path}.tx_rx"), "a flow needs tx_rx");
                return None;
            }
            Some(t) => {
                let p = format!("{path}.tx_rx");
                self.rest(&p, &t.rest);
                match (t.choice.as_deref(), &t.port) {
                    (Some("port") | None, Some(port)) => {
                        let p = format!("{p}.port");
                        self.rest(&p, &port.rest);
                        let known = |n: &str| ports.iter().any(|q| q.name == n);
                        if !known(&port.tx_name) {
                            self.refuse(
                                format!("{p}.tx_name"),
                                format!("no port is named '{}'", port.tx_name),
                            );
                        }
                        let mut rx: Vec<&String> = port.rx_names.iter().collect();
                        if let Some(r) = &port.rx_name
                            && !rx.contains(&r)
                        {
                            rx.push(r);
                        }
                        for (j, r) in port.rx_names.iter().enumerate() {
                            if !known(r) {
                                self.refuse(
                                    format!("{p}.rx_names[{j}]"),
                                    format!("no port is named '{r}'"),
                                );
                            }
                        }
                        if rx.len() > 1 {
                            self.refuse(
                                format!("{p}.rx_names"),
                                "one receive port per flow (linerate's receiver is one interface)",
                            );
                        }
                        (port.tx_name.clone(), rx.first().map(|r| (*r).clone()))
                    }
                    (Some("device"), _) => {
                        self.refuse(
                            format!("{p}.device"),
                            "device endpoints need emulated devices, which linerate does not have: use tx_rx.port",
                        );
                        return None;
                    }
                    (choice, _) => {
                        self.refuse(
                            format!("{p}.choice"),
                            format!(
                                "'{}' without its port: use tx_rx.port",
                                choice.unwrap_or("port")
                            ),
                        );
                        return None;
                    }
                }
            }
        };
        let link_mbps = ports
            .iter()
            .find(|p| p.name == tx_port)
            .and_then(|p| p.link_mbps);
        self.headers(path, &f.packet, &mut spec);
        self.size(path, f.size.as_ref(), &mut spec);
        let pps = self.rate(path, f.rate.as_ref(), &mut spec);
        let seconds = self.duration(path, f.duration.as_ref(), &mut spec, pps, link_mbps);
        let (metrics, timestamps, latency) = match &f.metrics {
            None => (false, false, false),
            Some(m) => {
                let p = format!("{path}.metrics");
                self.rest(&p, &m.rest);
                let lat = match &m.latency {
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
                if !enable && (lat || m.timestamps == Some(true)) {
                    self.refuse(
                        format!("{p}.enable"),
                        "latency and timestamps need metrics.enable = true",
                    );
                }
                (enable, m.timestamps.unwrap_or(false), lat)
            }
        };
        if let Some((_, seed)) = self.seed.take() {
            spec.seed = seed;
        }
        if self.refusals.len() > before {
            return None;
        }
        Some((
            FlowPlan {
                name: f.name.clone(),
                tx_port,
                rx_port,
                metrics,
                timestamps,
                latency,
            },
            spec,
            seconds,
        ))
    }

    /// Reads one pattern; `auto` (or nothing) means linerate's default.
    fn pattern(&mut self, path: &str, p: &Option<Pattern>, kind: Kind) -> Option<Pat> {
        let Some(p) = p else {
            return Some(Pat::Unset);
        };
        self.rest(path, &p.rest);
        let choice = p.choice.as_deref().or_else(|| {
            [
                ("value", p.value.is_some()),
                ("values", p.values.is_some()),
                ("increment", p.increment.is_some()),
                ("decrement", p.decrement.is_some()),
                ("random", p.random.is_some()),
            ]
            .iter()
            .find(|(_, set)| *set)
            .map(|(c, _)| *c)
        });
        let read = |cx: &mut Self, at: String, v: &Value| -> Option<u128> {
            let got = kind.parse(v);
            if got.is_none() {
                cx.refuse(at, format!("{v} is not {}", kind.expected()));
            }
            got
        };
        let counter = |cx: &mut Self, at: &str, c: &PatternCounter| -> Option<(u128, u128, u128)> {
            cx.rest(at, &c.rest);
            let start = match &c.start {
                Some(v) => read(cx, format!("{at}.start"), v)?,
                None => 0,
            };
            let step = match (&c.step, kind) {
                (Some(v), Kind::Ipv4 | Kind::Ipv6 | Kind::Mac) => {
                    read(cx, format!("{at}.step"), v)?
                }
                (Some(v), Kind::Int(_)) => match int(v) {
                    Some(n) => n,
                    None => {
                        cx.refuse(format!("{at}.step"), format!("{v} is not an integer"));
                        return None;
                    }
                },
                (None, _) => 1,
            };
            let count = match &c.count {
                Some(v) => match int(v) {
                    Some(n) if n >= 1 => n,
                    _ => {
                        cx.refuse(format!("{at}.count"), format!("{v} is not a count ≥ 1"));
                        return None;
                    }
                },
                None => 1,
            };
            Some((start, step, count))
        };
        match choice {
            None | Some("auto") => Some(Pat::Unset),
            Some("value") => match &p.value {
                Some(v) => read(self, format!("{path}.value"), v).map(Pat::Value),
                None => Some(Pat::Unset),
            },
            Some("values") => {
                let list = p.values.clone().unwrap_or_default();
                let mut vals = Vec::new();
                for (j, v) in list.iter().enumerate() {
                    vals.push(read(self, format!("{path}.values[{j}]"), v)?);
                }
                match vals.as_slice() {
                    [] => {
                        self.refuse(format!("{path}.values"), "an empty list of values");
                        None
                    }
                    [v] => Some(Pat::Value(*v)),
                    [a, b, ..] => {
                        let up = b > a;
                        let d = a.abs_diff(*b);
                        let even = d > 0
                            && vals
                                .windows(2)
                                .all(|w| (w[1] > w[0]) == up && w[0].abs_diff(w[1]) == d);
                        if !even {
                            self.refuse(
                                format!("{path}.values"),
                                "values that are not evenly spaced are not supported: linerate's field patterns are counters (give evenly spaced values, or increment/decrement)",
                            );
                            return None;
                        }
                        let (first, last) = (vals[0], vals[vals.len() - 1]);
                        Some(if up {
                            Pat::Vary {
                                mode: VaryKind::Inc,
                                lo: first,
                                hi: last,
                                step: d,
                            }
                        } else {
                            Pat::Vary {
                                mode: VaryKind::Dec,
                                lo: last,
                                hi: first,
                                step: d,
                            }
                        })
                    }
                }
            }
            Some(c @ ("increment" | "decrement")) => {
                let at = format!("{path}.{c}");
                let counter_value = if c == "increment" {
                    &p.increment
                } else {
                    &p.decrement
                };
                let (start, step, count) = match counter_value {
                    Some(cv) => counter(self, &at, cv)?,
                    None => (0, 1, 1),
                };
                if count == 1 || step == 0 {
                    return Some(Pat::Value(start));
                }
                let span = step.checked_mul(count - 1);
                let (lo, hi) = if c == "increment" {
                    (Some(start), span.and_then(|s| start.checked_add(s)))
                } else {
                    (span.and_then(|s| start.checked_sub(s)), Some(start))
                };
                match (lo, hi) {
                    (Some(lo), Some(hi)) if hi <= kind.max() => Some(Pat::Vary {
                        mode: if c == "increment" {
                            VaryKind::Inc
                        } else {
                            VaryKind::Dec
                        },
                        lo,
                        hi,
                        step,
                    }),
                    _ => {
                        self.refuse(
                            at,
                            "the counter wraps past the field's range: linerate's counters do not wrap (give fewer steps)",
                        );
                        None
                    }
                }
            }
            Some("random") => {
                let at = format!("{path}.random");
                let r = p.random.clone().unwrap_or_default();
                self.rest(&at, &r.rest);
                let lo = match &r.min {
                    Some(v) => read(self, format!("{at}.min"), v)?,
                    None => 0,
                };
                let hi = match &r.max {
                    Some(v) => read(self, format!("{at}.max"), v)?,
                    None => kind.max(),
                };
                if hi < lo {
                    self.refuse(at, "max is below min");
                    return None;
                }
                if let Some(v) = r.seed.as_ref().filter(|v| !v.is_null()) {
                    let at = format!("{at}.seed");
                    match int(v).and_then(|s| u64::try_from(s).ok()) {
                        None => self.refuse(at, format!("{v} is not a seed (a whole number)")),
                        Some(seed) => match &self.seed {
                            Some((first, s)) if *s != seed => {
                                let why = format!(
                                    "linerate draws all the random fields of a flow from one \
                                     seed, and {first} gave {s}: give them the same seed"
                                );
                                self.refuse(at, why);
                            }
                            Some(_) => {}
                            None => self.seed = Some((at, seed)),
                        },
                    }
                }
                Some(Pat::Vary {
                    mode: VaryKind::Random,
                    lo,
                    hi,
                    step: 1,
                })
            }
            Some(other) => {
                self.refuse(
                    format!("{path}.choice"),
                    format!("pattern '{other}' is not supported"),
                );
                None
            }
        }
    }

    /// A field linerate writes itself: accepted when unset, `auto`, or equal to what linerate
    /// writes anyway.
    fn fixed(&mut self, path: &str, p: &Option<Pattern>, kind: Kind, ours: u128, what: &str) {
        match self.pattern(path, p, kind) {
            Some(Pat::Unset) | None => {}
            Some(Pat::Value(v)) if v == ours => {}
            Some(_) => self.refuse(
                path,
                format!(
                    "linerate writes {what} here ({}); other values or patterns are not supported",
                    kind.text(ours)
                ),
            ),
        }
    }

    fn checksum(&mut self, path: &str, c: &Option<ChecksumPattern>) {
        if let Some(c) = c {
            self.rest(path, &c.rest);
            let good = matches!(c.choice.as_deref(), None | Some("generated"))
                && matches!(c.generated.as_deref(), None | Some("good"));
            if !good {
                self.refuse(
                    path,
                    "linerate always writes the correct checksum (generated: good)",
                );
            }
        }
    }

    /// Sets a field of the template and, when it varies, its `vary` entry (checked by
    /// linerate's own parser to mean exactly what the pattern asked).
    fn apply(
        &mut self,
        path: &str,
        pat: Pat,
        kind: Kind,
        field: &str,
        spec: &mut StreamSpec,
        set: fn(&mut StreamSpec, String),
    ) {
        match pat {
            Pat::Unset => {}
            Pat::Value(v) => set(spec, kind.text(v)),
            Pat::Vary { mode, lo, hi, step } => {
                if kind == Kind::Ipv6 && (lo >> 64) != (hi >> 64) {
                    self.refuse(
                        path,
                        "an IPv6 pattern may move only the address's low 64 bits",
                    );
                    return;
                }
                let first = if mode == VaryKind::Dec { hi } else { lo };
                set(spec, kind.text(first));
                let name = match mode {
                    VaryKind::Inc => "inc",
                    VaryKind::Dec => "dec",
                    VaryKind::Random => "random",
                };
                let mut text = format!("{field}:{name}:{}-{}", kind.text(lo), kind.text(hi));
                if step != 1 {
                    text.push_str(&format!(":{step}"));
                }
                // VarySpec keeps the low 64 bits (all of a MAC, an IPv4 address or a port).
                let low = |v: u128| v as u64;
                let count = (hi - lo) / step.max(1) + 1;
                match VarySpec::parse(&text, kind == Kind::Ipv6) {
                    Ok(v)
                        if u128::from(v.modifier.count) == count
                            && u128::from(v.modifier.step) == step
                            && v.modifier.start == low(first) =>
                    {
                        spec.vary.push(text)
                    }
                    Ok(_) => self.refuse(
                        path,
                        format!(
                            "linerate cannot express this pattern exactly ({text} reads otherwise)"
                        ),
                    ),
                    Err(e) => self.refuse(path, e.to_string()),
                }
            }
        }
    }

    fn headers(&mut self, path: &str, packet: &[FlowHeader], spec: &mut StreamSpec) {
        #[derive(PartialEq, PartialOrd, Clone, Copy)]
        enum Stage {
            Start,
            Eth,
            Vlan,
            Ip,
            L4,
            Custom,
        }
        let mut stage = Stage::Start;
        let mut payload: Vec<String> = Vec::new();
        if packet.is_empty() {
            self.refuse(
                format!("{path}.packet"),
                "a flow needs headers: ethernet, optionally vlan, ipv4 or ipv6, then udp, tcp or icmp",
            );
            return;
        }
        for (i, h) in packet.iter().enumerate() {
            let p = format!("{path}.packet[{i}]");
            self.rest(&p, &h.rest);
            let choice = h.choice.clone().unwrap_or_else(|| {
                [
                    ("vlan", h.vlan.is_some()),
                    ("ipv4", h.ipv4.is_some()),
                    ("ipv6", h.ipv6.is_some()),
                    ("udp", h.udp.is_some()),
                    ("tcp", h.tcp.is_some()),
                    ("icmp", h.icmp.is_some()),
                    ("custom", h.custom.is_some()),
                ]
                .iter()
                .find(|(_, s)| *s)
                .map_or("ethernet", |(c, _)| c)
                .to_string()
            });
            let want = match choice.as_str() {
                "ethernet" => Stage::Eth,
                "vlan" => Stage::Vlan,
                "ipv4" | "ipv6" => Stage::Ip,
                "udp" | "tcp" | "icmp" => Stage::L4,
                "custom" => Stage::Custom,
                other => {
                    self.refuse(
                        format!("{p}.choice"),
                        format!(
                            "the '{other}' header is not supported: linerate builds ethernet, vlan, ipv4 or ipv6, udp, tcp or icmp, and custom bytes after them"
                        ),
                    );
                    return;
                }
            };
            let next_ok = match want {
                Stage::Eth => stage == Stage::Start,
                Stage::Vlan => stage == Stage::Eth,
                Stage::Ip => matches!(stage, Stage::Eth | Stage::Vlan),
                Stage::L4 => stage == Stage::Ip,
                Stage::Custom => matches!(stage, Stage::L4 | Stage::Custom),
                Stage::Start => false,
            };
            if !next_ok {
                self.refuse(
                    format!("{p}.choice"),
                    format!(
                        "'{choice}' here is not supported: linerate's frames are ethernet, one optional vlan, ipv4 or ipv6, udp, tcp or icmp, then optional custom bytes"
                    ),
                );
                return;
            }
            stage = want;
            let at = format!("{p}.{choice}");
            match choice.as_str() {
                "ethernet" => {
                    let e = h.ethernet.clone().unwrap_or_default();
                    self.rest(&at, &e.rest);
                    let pat = self.pattern(&format!("{at}.dst"), &e.dst, Kind::Mac);
                    if let Some(pat) = pat {
                        self.apply(
                            &format!("{at}.dst"),
                            pat,
                            Kind::Mac,
                            "dst-mac",
                            spec,
                            |s, v| s.dst_mac = v,
                        );
                    }
                    let pat = self.pattern(&format!("{at}.src"), &e.src, Kind::Mac);
                    if let Some(pat) = pat {
                        self.apply(
                            &format!("{at}.src"),
                            pat,
                            Kind::Mac,
                            "src-mac",
                            spec,
                            |s, v| s.src_mac = v,
                        );
                    }
                    // The EtherType follows the next header; it is not a choice of its own.
                    if let Some(Pat::Value(_) | Pat::Vary { .. }) = self.pattern(
                        &format!("{at}.ether_type"),
                        &e.ether_type,
                        Kind::Int(0xffff),
                    ) {
                        self.refuse(
                            format!("{at}.ether_type"),
                            "linerate writes the EtherType of the next header (auto)",
                        );
                    }
                }
                "vlan" => {
                    let v = h.vlan.clone().unwrap_or_default();
                    self.rest(&at, &v.rest);
                    if let Some(pat) = self.pattern(&format!("{at}.id"), &v.id, Kind::Int(4095)) {
                        // A tag's id defaults to 0 in the schema.
                        let pat = if pat == Pat::Unset {
                            Pat::Value(0)
                        } else {
                            pat
                        };
                        self.apply(
                            &format!("{at}.id"),
                            pat,
                            Kind::Int(4095),
                            "vlan-id",
                            spec,
                            |s, v| s.vlan = v.parse().ok(),
                        );
                    }
                    match self.pattern(&format!("{at}.priority"), &v.priority, Kind::Int(7)) {
                        Some(Pat::Value(pcp)) => spec.vlan_pcp = pcp as u8,
                        Some(Pat::Vary { .. }) => self.refuse(
                            format!("{at}.priority"),
                            "the VLAN priority takes one value (patterns are not supported)",
                        ),
                        _ => {}
                    }
                    self.fixed(&format!("{at}.cfi"), &v.cfi, Kind::Int(1), 0, "CFI 0");
                    self.fixed(
                        &format!("{at}.tpid"),
                        &v.tpid,
                        Kind::Int(0xffff),
                        0x8100,
                        "TPID 0x8100",
                    );
                }
                "ipv4" => {
                    let ip = h.ipv4.clone().unwrap_or_default();
                    self.rest(&at, &ip.rest);
                    spec.ipv6 = false;
                    for (name, pat, kind, field, set) in [
                        (
                            "src",
                            &ip.src,
                            Kind::Ipv4,
                            "src-ip",
                            (|s: &mut StreamSpec, v| s.src_ip = v) as fn(&mut StreamSpec, String),
                        ),
                        ("dst", &ip.dst, Kind::Ipv4, "dst-ip", |s, v| s.dst_ip = v),
                        (
                            "identification",
                            &ip.identification,
                            Kind::Int(0xffff),
                            "ip-id",
                            |s, v| s.ip_id = v.parse().unwrap_or(0),
                        ),
                        (
                            "time_to_live",
                            &ip.time_to_live,
                            Kind::Int(255),
                            "ttl",
                            |s, v| s.ttl = v.parse().unwrap_or(64),
                        ),
                    ] {
                        let fp = format!("{at}.{name}");
                        if let Some(pat) = self.pattern(&fp, pat, kind) {
                            self.apply(&fp, pat, kind, field, spec, set);
                        }
                    }
                    // Fields linerate writes with one value: accepted only at that value.
                    for (name, pat, kind, value, what) in [
                        ("version", &ip.version, Kind::Int(15), 4, "version 4"),
                        (
                            "header_length",
                            &ip.header_length,
                            Kind::Int(15),
                            5,
                            "header length 5 (no options)",
                        ),
                        ("reserved", &ip.reserved, Kind::Int(1), 0, "0"),
                        ("dont_fragment", &ip.dont_fragment, Kind::Int(1), 0, "0"),
                        ("more_fragments", &ip.more_fragments, Kind::Int(1), 0, "0"),
                        (
                            "fragment_offset",
                            &ip.fragment_offset,
                            Kind::Int(8191),
                            0,
                            "0",
                        ),
                    ] {
                        self.fixed(&format!("{at}.{name}"), pat, kind, value, what);
                    }
                    if let Some(Pat::Value(_) | Pat::Vary { .. }) = self.pattern(
                        &format!("{at}.total_length"),
                        &ip.total_length,
                        Kind::Int(0xffff),
                    ) {
                        self.refuse(
                            format!("{at}.total_length"),
                            "linerate writes the length of the frame (auto)",
                        );
                    }
                    if let Some(Pat::Value(_) | Pat::Vary { .. }) =
                        self.pattern(&format!("{at}.protocol"), &ip.protocol, Kind::Int(255))
                    {
                        self.refuse(
                            format!("{at}.protocol"),
                            "linerate writes the protocol of the next header (auto)",
                        );
                    }
                    self.checksum(&format!("{at}.header_checksum"), &ip.header_checksum);
                    if let Some(pr) = &ip.priority {
                        let pp = format!("{at}.priority");
                        self.rest(&pp, &pr.rest);
                        match pr.choice.as_deref() {
                            None | Some("dscp") => {
                                if let Some(d) = &pr.dscp {
                                    self.rest(&format!("{pp}.dscp"), &d.rest);
                                    match self.pattern(&format!("{pp}.dscp.phb"), &d.phb, Kind::Int(63)) {
                                        Some(Pat::Value(v)) => spec.dscp = v as u8,
                                        Some(Pat::Vary { .. }) => self.refuse(format!("{pp}.dscp.phb"), "the DSCP takes one value (patterns are not supported)"),
                                        _ => {}
                                    }
                                    self.fixed(&format!("{pp}.dscp.ecn"), &d.ecn, Kind::Int(3), 0, "ECN 0");
                                }
                            }
                            Some("raw") => match self.pattern(&format!("{pp}.raw"), &pr.raw, Kind::Int(255)) {
                                Some(Pat::Value(v)) if v & 3 == 0 => spec.dscp = (v >> 2) as u8,
                                Some(Pat::Unset) | None => {}
                                _ => self.refuse(format!("{pp}.raw"), "one value with ECN bits 0 (linerate writes the DSCP and ECN 0)"),
                            },
                            Some(other) => self.refuse(format!("{pp}.choice"), format!("priority '{other}' is not supported: use dscp or raw")),
                        }
                    }
                }
                "ipv6" => {
                    let ip = h.ipv6.clone().unwrap_or_default();
                    self.rest(&at, &ip.rest);
                    spec.ipv6 = true;
                    for (name, pat, kind, field, set) in [
                        (
                            "src",
                            &ip.src,
                            Kind::Ipv6,
                            "src-ip",
                            (|s: &mut StreamSpec, v| s.src_ip = v) as fn(&mut StreamSpec, String),
                        ),
                        ("dst", &ip.dst, Kind::Ipv6, "dst-ip", |s, v| s.dst_ip = v),
                        ("hop_limit", &ip.hop_limit, Kind::Int(255), "ttl", |s, v| {
                            s.ttl = v.parse().unwrap_or(64)
                        }),
                    ] {
                        let fp = format!("{at}.{name}");
                        if let Some(pat) = self.pattern(&fp, pat, kind) {
                            self.apply(&fp, pat, kind, field, spec, set);
                        }
                    }
                    for (name, pat, kind, value, what) in [
                        ("version", &ip.version, Kind::Int(15), 6, "version 6"),
                        (
                            "traffic_class",
                            &ip.traffic_class,
                            Kind::Int(255),
                            0,
                            "traffic class 0",
                        ),
                        (
                            "flow_label",
                            &ip.flow_label,
                            Kind::Int(0xfffff),
                            0,
                            "flow label 0",
                        ),
                    ] {
                        self.fixed(&format!("{at}.{name}"), pat, kind, value, what);
                    }
                    for (name, pat) in [
                        ("payload_length", &ip.payload_length),
                        ("next_header", &ip.next_header),
                    ] {
                        if let Some(Pat::Value(_) | Pat::Vary { .. }) =
                            self.pattern(&format!("{at}.{name}"), pat, Kind::Int(0xffff))
                        {
                            self.refuse(
                                format!("{at}.{name}"),
                                "linerate writes it from the frame (auto)",
                            );
                        }
                    }
                }
                "udp" | "tcp" => {
                    let (src, dst, rest) = match (&h.udp, &h.tcp, choice.as_str()) {
                        (u, _, "udp") => {
                            let u = u.clone().unwrap_or_default();
                            spec.proto = Proto::Udp;
                            if let Some(Pat::Value(_) | Pat::Vary { .. }) =
                                self.pattern(&format!("{at}.length"), &u.length, Kind::Int(0xffff))
                            {
                                self.refuse(
                                    format!("{at}.length"),
                                    "linerate writes the length of the datagram (auto)",
                                );
                            }
                            self.checksum(&format!("{at}.checksum"), &u.checksum);
                            (u.src_port, u.dst_port, u.rest)
                        }
                        (_, t, _) => {
                            let t = t.clone().unwrap_or_default();
                            spec.proto = Proto::Tcp;
                            self.fixed(
                                &format!("{at}.seq_num"),
                                &t.seq_num,
                                Kind::Int(u32::MAX.into()),
                                1,
                                "sequence number 1",
                            );
                            self.fixed(
                                &format!("{at}.ack_num"),
                                &t.ack_num,
                                Kind::Int(u32::MAX.into()),
                                0,
                                "acknowledgement number 0",
                            );
                            self.fixed(
                                &format!("{at}.data_offset"),
                                &t.data_offset,
                                Kind::Int(15),
                                5,
                                "data offset 5",
                            );
                            self.fixed(
                                &format!("{at}.window"),
                                &t.window,
                                Kind::Int(0xffff),
                                65535,
                                "window 65535",
                            );
                            self.checksum(&format!("{at}.checksum"), &t.checksum);
                            let mut flags = String::new();
                            for (name, pat, letter) in [
                                ("ctl_fin", &t.ctl_fin, 'F'),
                                ("ctl_syn", &t.ctl_syn, 'S'),
                                ("ctl_rst", &t.ctl_rst, 'R'),
                                ("ctl_psh", &t.ctl_psh, 'P'),
                                ("ctl_ack", &t.ctl_ack, 'A'),
                                ("ctl_urg", &t.ctl_urg, 'U'),
                                ("ecn_echo", &t.ecn_echo, 'E'),
                                ("ecn_cwr", &t.ecn_cwr, 'C'),
                            ] {
                                match self.pattern(&format!("{at}.{name}"), pat, Kind::Int(1)) {
                                    Some(Pat::Value(1)) => flags.push(letter),
                                    Some(Pat::Vary { .. }) => self.refuse(
                                        format!("{at}.{name}"),
                                        "TCP flags take one value (patterns are not supported)",
                                    ),
                                    _ => {}
                                }
                            }
                            self.fixed(&format!("{at}.ecn_ns"), &t.ecn_ns, Kind::Int(1), 0, "0");
                            // The schema's flags are all 0 by default; linerate's template SYN is
                            // for its own CLI.
                            spec.tcp_flags = flags;
                            (t.src_port, t.dst_port, t.rest)
                        }
                    };
                    self.rest(&at, &rest);
                    for (name, pat, field, set) in [
                        (
                            "src_port",
                            &src,
                            "src-port",
                            (|s: &mut StreamSpec, v: String| s.src_port = v.parse().unwrap_or(0))
                                as fn(&mut StreamSpec, String),
                        ),
                        ("dst_port", &dst, "dst-port", |s, v| {
                            s.dst_port = v.parse().unwrap_or(0)
                        }),
                    ] {
                        let fp = format!("{at}.{name}");
                        if let Some(pat) = self.pattern(&fp, pat, Kind::Int(0xffff)) {
                            self.apply(&fp, pat, Kind::Int(0xffff), field, spec, set);
                        }
                    }
                }
                "icmp" => {
                    if spec.ipv6 {
                        self.refuse(
                            format!("{p}.choice"),
                            "ICMP after IPv6 is not supported (icmpv6 neither)",
                        );
                        return;
                    }
                    let ic = h.icmp.clone().unwrap_or_default();
                    self.rest(&at, &ic.rest);
                    spec.proto = Proto::Icmp;
                    if let Some(c) = ic.choice.as_deref()
                        && c != "echo"
                    {
                        self.refuse(
                            format!("{at}.choice"),
                            format!("ICMP '{c}' is not supported: echo only"),
                        );
                    }
                    let e = ic.echo.clone().unwrap_or_default();
                    let ep = format!("{at}.echo");
                    self.rest(&ep, &e.rest);
                    self.fixed(
                        &format!("{ep}.type"),
                        &e.kind,
                        Kind::Int(255),
                        8,
                        "type 8 (echo request)",
                    );
                    self.fixed(&format!("{ep}.code"), &e.code, Kind::Int(255), 0, "code 0");
                    self.fixed(
                        &format!("{ep}.sequence_number"),
                        &e.sequence_number,
                        Kind::Int(0xffff),
                        0,
                        "sequence number 0",
                    );
                    self.checksum(&format!("{ep}.checksum"), &e.checksum);
                    match self.pattern(
                        &format!("{ep}.identifier"),
                        &e.identifier,
                        Kind::Int(0xffff),
                    ) {
                        Some(Pat::Value(v)) => spec.src_port = v as u16,
                        Some(Pat::Vary { .. }) => self.refuse(
                            format!("{ep}.identifier"),
                            "the ICMP identifier takes one value (patterns are not supported)",
                        ),
                        _ => spec.src_port = 0,
                    }
                }
                "custom" => {
                    let c = h.custom.clone().unwrap_or_default();
                    self.rest(&at, &c.rest);
                    let hex: String = c
                        .bytes
                        .trim_start_matches("0x")
                        .trim_start_matches("0X")
                        .chars()
                        .filter(|ch| !matches!(ch, ':' | ' '))
                        .collect();
                    if hex.is_empty()
                        || !hex.len().is_multiple_of(2)
                        || !hex.chars().all(|ch| ch.is_ascii_hexdigit())
                    {
                        self.refuse(format!("{at}.bytes"), "not an even number of hex digits");
                    } else {
                        payload.push(hex);
                    }
                }
                _ => {}
            }
        }
        if stage < Stage::L4 {
            self.refuse(
                format!("{path}.packet"),
                "linerate builds IP frames: give ethernet, optionally vlan, ipv4 or ipv6, then udp, tcp or icmp",
            );
        }
        if !payload.is_empty() {
            spec.payload = format!("raw:{}", payload.concat());
        }
    }

    fn size(&mut self, path: &str, size: Option<&FlowSize>, spec: &mut StreamSpec) {
        let Some(s) = size else {
            return;
        };
        let at = format!("{path}.size");
        self.rest(&at, &s.rest);
        let get = |cx: &mut Self, p: String, v: &Option<Value>, default: u128| -> Option<usize> {
            match v {
                None => Some(default as usize),
                Some(v) => match int(v) {
                    Some(n) if n <= 65535 => Some(n as usize),
                    _ => {
                        cx.refuse(p, format!("{v} is not a frame size"));
                        None
                    }
                },
            }
        };
        let choice = s.choice.as_deref().unwrap_or(if s.increment.is_some() {
            "increment"
        } else if s.random.is_some() {
            "random"
        } else if s.weight_pairs.is_some() {
            "weight_pairs"
        } else {
            "fixed"
        });
        match choice {
            "fixed" => {
                if let Some(n) = get(self, format!("{at}.fixed"), &s.fixed, 64) {
                    spec.size = n;
                }
            }
            "increment" => {
                let i = s.increment.clone().unwrap_or_default();
                let p = format!("{at}.increment");
                self.rest(&p, &i.rest);
                let (a, b, st) = (
                    get(self, format!("{p}.start"), &i.start, 64),
                    get(self, format!("{p}.end"), &i.end, 1518),
                    get(self, format!("{p}.step"), &i.step, 1),
                );
                if let (Some(a), Some(b), Some(st)) = (a, b, st) {
                    spec.size = a;
                    spec.size_mode = format!("inc:{a}-{b}:{st}");
                }
            }
            "random" => {
                let r = s.random.clone().unwrap_or_default();
                let p = format!("{at}.random");
                self.rest(&p, &r.rest);
                let (a, b) = (
                    get(self, format!("{p}.min"), &r.min, 64),
                    get(self, format!("{p}.max"), &r.max, 1518),
                );
                if let (Some(a), Some(b)) = (a, b) {
                    spec.size = a;
                    spec.size_mode = format!("random:{a}-{b}");
                }
            }
            "weight_pairs" => {
                let w = s.weight_pairs.clone().unwrap_or_default();
                let p = format!("{at}.weight_pairs");
                self.rest(&p, &w.rest);
                match w.choice.as_deref().unwrap_or("predefined") {
                    "predefined" => match w.predefined.as_deref().unwrap_or("imix") {
                        // The simple IMIX: 7 × 64, 4 × 570, 1 × 1518.
                        "imix" => {
                            spec.size_mode = "imix:64x7,570x4,1518x1".into();
                        }
                        other => self.refuse(
                            format!("{p}.predefined"),
                            format!(
                                "predefined '{other}' is not supported: use imix or custom pairs"
                            ),
                        ),
                    },
                    "custom" => {
                        let mut parts = Vec::new();
                        for (j, pair) in w.custom.iter().enumerate() {
                            let pp = format!("{p}.custom[{j}]");
                            self.rest(&pp, &pair.rest);
                            let size = get(self, format!("{pp}.size"), &pair.size, 64);
                            let weight = pair.weight.as_ref().map_or(Some(1.0), num);
                            match (size, weight) {
                                (Some(sz), Some(wt)) if wt >= 1.0 && wt.fract() == 0.0 && wt <= 1e6 => {
                                    parts.push(format!("{sz}x{}", wt as u64))
                                }
                                (Some(_), _) => self.refuse(
                                    format!("{pp}.weight"),
                                    "weights must be whole numbers from 1 (linerate repeats each size that many times a cycle)",
                                ),
                                _ => {}
                            }
                        }
                        if parts.is_empty() {
                            self.refuse(format!("{p}.custom"), "no pairs");
                        } else {
                            spec.size_mode = format!("imix:{}", parts.join(","));
                        }
                    }
                    other => self.refuse(
                        format!("{p}.choice"),
                        format!("'{other}' is not a choice here"),
                    ),
                }
            }
            other => self.refuse(
                format!("{at}.choice"),
                format!("size '{other}' is not supported"),
            ),
        }
    }

    /// Sets the rate; returns it in frames/s when it is given so.
    fn rate(&mut self, path: &str, rate: Option<&FlowRate>, spec: &mut StreamSpec) -> Option<f64> {
        let Some(r) = rate else {
            return Some(1000.0);
        };
        let at = format!("{path}.rate");
        self.rest(&at, &r.rest);
        let choice = r.choice.as_deref().unwrap_or("pps");
        let (value, unit) = match choice {
            "pps" => (&r.pps, ""),
            "bps" => (&r.bps, "bps"),
            "kbps" => (&r.kbps, "kbps"),
            "mbps" => (&r.mbps, "Mbps"),
            "gbps" => (&r.gbps, "Gbps"),
            "percentage" => (&r.percentage, "%"),
            other => {
                self.refuse(
                    format!("{at}.choice"),
                    format!("rate '{other}' is not supported"),
                );
                return None;
            }
        };
        let v = match value {
            None if choice == "pps" => 1000.0,
            None if choice == "percentage" => 100.0,
            None => {
                self.refuse(format!("{at}.{choice}"), "missing");
                return None;
            }
            Some(v) => match num(v) {
                Some(n) if n > 0.0 && n.is_finite() => n,
                _ => {
                    self.refuse(
                        format!("{at}.{choice}"),
                        format!("{v} is not a rate above 0"),
                    );
                    return None;
                }
            },
        };
        if choice == "percentage" && v > 100.0 {
            self.refuse(
                format!("{at}.percentage"),
                "more than 100 % of the line rate",
            );
            return None;
        }
        spec.rate = format!("{v}{unit}");
        (choice == "pps").then_some(v)
    }

    /// Sets the count and bursts; returns fixed_seconds when given.
    fn duration(
        &mut self,
        path: &str,
        d: Option<&FlowDuration>,
        spec: &mut StreamSpec,
        pps: Option<f64>,
        link_mbps: Option<u64>,
    ) -> Option<f64> {
        let d = d?;
        let at = format!("{path}.duration");
        self.rest(&at, &d.rest);
        let gap = |cx: &mut Self, p: String, g: &Option<Value>| {
            if let Some(g) = g
                && int(g) != Some(12)
            {
                cx.refuse(
                    p,
                    "the inter-frame gap is the link's (12 bytes); other gaps are not supported",
                );
            }
        };
        let delay = |cx: &mut Self, p: String, d: &Option<FlowDelay>| {
            if let Some(d) = d {
                cx.rest(&p, &d.rest);
                let zero = [&d.bytes, &d.nanoseconds, &d.microseconds]
                    .iter()
                    .all(|v| v.as_ref().is_none_or(|v| num(v) == Some(0.0)));
                if !zero {
                    cx.refuse(p, "a start delay is not supported");
                }
            }
        };
        let choice = d.choice.as_deref().unwrap_or(if d.fixed_packets.is_some() {
            "fixed_packets"
        } else if d.fixed_seconds.is_some() {
            "fixed_seconds"
        } else if d.burst.is_some() {
            "burst"
        } else {
            "continuous"
        });
        match choice {
            "fixed_packets" => {
                let f = d.fixed_packets.clone().unwrap_or_default();
                let p = format!("{at}.fixed_packets");
                self.rest(&p, &f.rest);
                gap(self, format!("{p}.gap"), &f.gap);
                delay(self, format!("{p}.delay"), &f.delay);
                match f.packets.as_ref().map_or(Some(1), int) {
                    Some(n) if n >= 1 && n <= u128::from(u64::MAX) => spec.count = Some(n as u64),
                    _ => self.refuse(format!("{p}.packets"), "packets must be at least 1"),
                }
                None
            }
            "fixed_seconds" => {
                let f = d.fixed_seconds.clone().unwrap_or_default();
                let p = format!("{at}.fixed_seconds");
                self.rest(&p, &f.rest);
                gap(self, format!("{p}.gap"), &f.gap);
                delay(self, format!("{p}.delay"), &f.delay);
                match f.seconds.as_ref().map_or(Some(1.0), num) {
                    Some(s) if s > 0.0 && s <= 1e6 => Some(s),
                    _ => {
                        self.refuse(format!("{p}.seconds"), "seconds must be above 0");
                        None
                    }
                }
            }
            "burst" => {
                let b = d.burst.clone().unwrap_or_default();
                let p = format!("{at}.burst");
                self.rest(&p, &b.rest);
                gap(self, format!("{p}.gap"), &b.gap);
                let bursts = b.bursts.as_ref().map_or(Some(0), int);
                let packets = b.packets.as_ref().map_or(Some(1), int);
                let ibg_s = match &b.inter_burst_gap {
                    None => Some(12.0 * 8.0 / (link_mbps.unwrap_or(1000) as f64 * 1e6)),
                    Some(g) => {
                        let gp = format!("{p}.inter_burst_gap");
                        self.rest(&gp, &g.rest);
                        match g.choice.as_deref().unwrap_or("bytes") {
                            "nanoseconds" => g.nanoseconds.as_ref().and_then(num).map(|n| n / 1e9),
                            "microseconds" => {
                                g.microseconds.as_ref().and_then(num).map(|n| n / 1e6)
                            }
                            "bytes" => match link_mbps {
                                Some(m) => Some(
                                    g.bytes.as_ref().and_then(num).unwrap_or(12.0) * 8.0
                                        / (m as f64 * 1e6),
                                ),
                                None => {
                                    self.refuse(format!("{gp}.bytes"), "a gap in bytes needs the link speed: set layer1.speed for the transmit port, or give nanoseconds");
                                    None
                                }
                            },
                            other => {
                                self.refuse(
                                    format!("{gp}.choice"),
                                    format!("'{other}' is not a choice here"),
                                );
                                None
                            }
                        }
                    }
                };
                let Some(pps) = pps else {
                    self.refuse(p.clone(), "bursts need the flow's rate in pps (rate.pps): the burst period is computed from it");
                    return None;
                };
                match (bursts, packets, ibg_s) {
                    (Some(bursts), Some(packets), Some(gap_s))
                        if packets >= 1 && gap_s >= 0.0 && packets <= u128::from(u64::MAX) =>
                    {
                        let period = packets as f64 / pps + gap_s;
                        spec.bursts = Some(Bursts {
                            frames: packets as u64,
                            per_second: 1.0 / period,
                        });
                        if bursts > 0 {
                            match (bursts * packets).try_into() {
                                Ok(n) => spec.count = Some(n),
                                Err(_) => self.refuse(format!("{p}.bursts"), "too many frames"),
                            }
                        }
                    }
                    _ => self.refuse(p, "bursts need packets ≥ 1, bursts ≥ 0 and a gap ≥ 0"),
                }
                None
            }
            "continuous" => {
                if let Some(c) = &d.continuous {
                    let p = format!("{at}.continuous");
                    self.rest(&p, &c.rest);
                    gap(self, format!("{p}.gap"), &c.gap);
                    delay(self, format!("{p}.delay"), &c.delay);
                }
                None
            }
            other => {
                self.refuse(
                    format!("{at}.choice"),
                    format!("duration '{other}' is not supported"),
                );
                None
            }
        }
    }
}

/// `layer1.speed` in Mbit/s.
pub fn speed_mbps(speed: &str) -> Option<u64> {
    Some(match speed {
        "speed_10_fd_mbps" | "speed_10_hd_mbps" => 10,
        "speed_100_fd_mbps" | "speed_100_hd_mbps" => 100,
        "speed_1_gbps" => 1_000,
        "speed_10_gbps" => 10_000,
        "speed_25_gbps" => 25_000,
        "speed_40_gbps" => 40_000,
        "speed_50_gbps" => 50_000,
        "speed_100_gbps" => 100_000,
        "speed_200_gbps" => 200_000,
        "speed_400_gbps" => 400_000,
        "speed_800_gbps" => 800_000,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "map_tests.rs"]
mod tests;
