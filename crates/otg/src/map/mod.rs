//! A `Config` onto linerate: the ports and where they are, one `StreamSpec` per flow (the test
//! bed gives each the flow id its signature carries), and what each flow's metrics report. Everything the
//! config asks that linerate cannot do is refused by its JSON path, all in one answer.

use std::time::Duration;

use linerate_stream::{HostSpec, StreamSpec};
use linerate_wire::Mac;
use serde_json::Value;

use crate::error::{Refusal, Refusals};
use crate::model::*;

pub use bgp::RangeEnd;

mod arp;
mod bgp;
#[cfg(test)]
mod bgp_tests;
mod config;
mod custom;
mod device;
mod duration;
mod ethernet;
mod flow;
mod gre;
mod gtpv1;
mod icmp;
mod ipv4;
mod ipv6;
mod isis;
#[cfg(test)]
mod isis_tests;
mod lag;
#[cfg(test)]
pub(crate) mod lag_tests;
mod lldp;
#[cfg(test)]
mod lldp_tests;
mod mpls;
mod ospfv2;
#[cfg(test)]
mod ospfv2_tests;
mod ospfv3;
#[cfg(test)]
mod ospfv3_tests;
mod outer;
mod pattern;
mod rate;
mod size;
mod tcp;
mod udp;
mod vlan;
mod vxlan;

/// Where a port is: an interface of this host or of an agent's (`ADDR:PORT/`), in a network
/// namespace when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The agent that owns the port, `HOST:PORT` (None: this host's own).
    pub agent: Option<String>,
    pub iface: String,
    pub netns: Option<String>,
}

impl Location {
    /// `IFACE`, `IFACE@NETNS`, or either after `HOST:PORT/` (an agent's port).
    pub fn parse(text: &str) -> Option<Self> {
        let (agent, local) = match text.split_once('/') {
            Some((agent, local)) => (Some(agent_address(agent)?), local),
            None => (None, text),
        };
        let ok = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
        };
        let (iface, netns) = match local.split_once('@') {
            Some((i, n)) if ok(i) && ok(n) && i.len() < 16 => (i, Some(n.into())),
            None if ok(local) && local.len() < 16 => (local, None),
            _ => return None,
        };
        Some(Self {
            agent,
            iface: iface.into(),
            netns,
        })
    }

    /// The port as its own host names it: `IFACE` or `IFACE@NETNS`, without the agent.
    pub fn local(&self) -> String {
        match &self.netns {
            Some(n) => format!("{}@{n}", self.iface),
            None => self.iface.clone(),
        }
    }
}

/// `HOST:PORT`: an IPv4 address or a DNS name, or `[IPv6]`, and a port other than 0.
fn agent_address(text: &str) -> Option<String> {
    let (host, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok().filter(|&p| p != 0)?;
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host.len() <= 253
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-.".contains(c))
        }
    };
    host_ok.then(|| text.to_owned())
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(a) = &self.agent {
            write!(f, "{a}/")?;
        }
        f.write_str(&self.local())
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
    /// The file its capture is read out as (`captures[].format`).
    pub capture_format: CaptureFormat,
}

/// A capture's file format, as `captures[].format` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CaptureFormat {
    #[default]
    Pcap,
    Pcapng,
}

/// One emulated host: an IPv4 or IPv6 address object of a device's ethernet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPlan {
    /// Named by the address object; its port is the ethernet's port's location.
    pub spec: HostSpec,
    /// The device and the ethernet it is an address of.
    pub device: String,
    pub ethernet: String,
    /// The OTG port the ethernet is connected to.
    pub port: String,
    /// `gateway_mac.value`: the gateway's MAC, given (never resolved).
    pub gateway_mac: Option<Mac>,
    /// The LAG the ethernet is connected to, and which of its members `port` is: a device on
    /// a LAG is a host on each member (the first named by its address object, the others
    /// `NAME@PORT`), and each of its flows runs on one member.
    pub lag: Option<(String, usize)>,
}

impl Mapped {
    /// Every host, its port the location of its OTG port (how a test bed names its places).
    pub fn placed_hosts(&self) -> Vec<HostSpec> {
        self.hosts
            .iter()
            .map(|h| HostSpec {
                port: self
                    .port(&h.port)
                    .map_or_else(|| h.spec.port.clone(), |p| p.location.to_string()),
                ..h.spec.clone()
            })
            .collect()
    }

    /// The link speed (`layer1.speed`) of the devices' ports, which share one set of port
    /// options: given when every port with a device that has one gives the same (a rate in %
    /// is taken of it); None when none does or they differ (then a rate in % is refused, naming
    /// the port, as on a port that reports no speed).
    pub fn hosts_link_mbps(&self) -> Option<u64> {
        let mut speeds = self
            .hosts
            .iter()
            .filter_map(|h| self.port(&h.port).and_then(|p| p.link_mbps));
        let first = speeds.next()?;
        speeds.all(|s| s == first).then_some(first)
    }

    /// The gateways whose MAC is given, never resolved: (host, gateway, MAC).
    pub fn given_gateways(&self) -> Vec<(String, std::net::IpAddr, [u8; 6])> {
        self.hosts
            .iter()
            .filter_map(|h| Some((h.spec.name.clone(), h.gateway()?, h.gateway_mac?.octets())))
            .collect()
    }

    /// The hosts whose frames go on to a control plane: those on an ethernet of a device with
    /// BGP, IS-IS or OSPF (its daemons have that MAC).
    /// Each comes with the group MACs its device's link-state protocols send to (IS-IS:
    /// AllISs, AllL1ISs, AllL2ISs; OSPFv2 and OSPFv3: AllSPFRouters, AllDRouters), which its port must
    /// pass to the stack too.
    pub fn routed_hosts(&self) -> Vec<(String, Vec<[u8; 6]>)> {
        let macs: Vec<([u8; 6], &linerate_routing::Device)> = self
            .routers
            .iter()
            .flat_map(|r| r.links.iter().map(move |l| (l.mac, r)))
            .collect();
        self.hosts
            .iter()
            .filter_map(|h| {
                let mac = h.spec.mac?.octets();
                let (_, router) = macs.iter().find(|(m, _)| *m == mac)?;
                let mut groups = Vec::new();
                if router.isis.is_some() {
                    groups.extend(linerate_routing::ISIS_GROUPS);
                }
                if router.ospf.is_some() {
                    groups.extend(linerate_routing::OSPF_GROUPS);
                }
                if router.ospf6.is_some() {
                    groups.extend(linerate_routing::OSPF6_GROUPS);
                }
                Some((h.spec.name.clone(), groups))
            })
            .chain(self.lldp_agents_to_stack())
            .collect()
    }

    /// Each LLDP agent's MAC and the LLDP group, passed to the stack of its port by way of a
    /// host there (the port's table is the hosts'). A port with no host has no programs of the
    /// hosts, or none at all: its frames reach the agent's macvlan as they are.
    fn lldp_agents_to_stack(&self) -> Vec<(String, Vec<[u8; 6]>)> {
        let mut out = Vec::new();
        for r in self.routers.iter().filter(|r| r.lldp.is_some()) {
            let Some(link) = r.links.first() else {
                continue;
            };
            let host = self.hosts.iter().find(|h| {
                self.port(&h.port)
                    .is_some_and(|p| p.location.to_string() == link.port)
            });
            if let Some(h) = host {
                out.push((
                    h.spec.name.clone(),
                    vec![linerate_routing::lldp::LLDP_GROUP, link.mac],
                ));
            }
        }
        out
    }

    /// The locations of the ports with a capture.
    pub fn capture_locations(&self) -> Vec<String> {
        self.ports
            .iter()
            .filter(|p| p.capture)
            .map(|p| p.location.to_string())
            .collect()
    }
}

impl HostPlan {
    /// The host's gateway, of its family.
    pub fn gateway(&self) -> Option<std::net::IpAddr> {
        self.spec
            .gateway
            .map(std::net::IpAddr::V4)
            .or(self.spec.gateway6.map(std::net::IpAddr::V6))
    }
}

/// A flow's end that names a LAG, and the member port it runs on (placed at set_config, and
/// again at a start when members have left or joined their LAGs since).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LagFlow {
    pub flow: String,
    pub lag: String,
    pub port: String,
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
    /// The devices' hosts. When there are any, every flow goes from one to another (its
    /// stream's `from` and `to`), on as many ports as they live on, and `tx_port`/`rx_port` are
    /// None.
    pub hosts: Vec<HostPlan>,
    /// The one port every flow transmits on (None: no flows, hosts, or port flows on several
    /// ports).
    pub tx_port: Option<String>,
    /// The one port flows name as their receive port (None: no flow names one, or several
    /// do).
    pub rx_port: Option<String>,
    /// Port flows (no hosts) that leave from several ports or arrive at several: every OTG port
    /// they leave from or arrive at, in the config's order, each a place of the test bed, and
    /// each stream's `from` and `to` the locations of its transmit and receive ports (empty:
    /// one transmit port and at most one receive port, `tx_port` and `rx_port`).
    pub flow_ports: Vec<String>,
    /// One per flow, in the config's order (the test bed numbers them: `TestBed::flows`).
    pub streams: Vec<StreamSpec>,
    pub flows: Vec<FlowPlan>,
    /// `fixed_seconds` (the same on every flow): the run ends then.
    pub duration: Option<Duration>,
    /// The devices that speak BGP, each a control plane of its own (`linerate_routing`).
    pub routers: Vec<linerate_routing::Device>,
    /// Every route range, as a flow endpoint.
    pub ranges: Vec<RangeEnd>,
    /// The LAGs; the port flows that name one run on its members (`tx_port`, `rx_port` and
    /// the flows' ports are members' names).
    pub lags: Vec<linerate_lacp::LagSpec>,
    /// Each end of a flow that names a LAG: the member it was placed on.
    pub lag_flows: Vec<LagFlow>,
    /// The LAG members that were out of their LAGs when `lag_flows` were placed.
    pub lag_out: Vec<String>,
    /// Set_config's warnings: what was taken, but not quite as asked.
    pub warnings: Vec<String>,
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

/// A config's body with the `rate` of each flow named replaced (update_config's changes, for
/// get_config to answer with); the rest as given.
pub fn with_rates<'a>(
    body: &[u8],
    rates: impl IntoIterator<Item = (&'a str, &'a Option<FlowRate>)>,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut config: Value = serde_json::from_slice(body)?;
    let rates: Vec<_> = rates.into_iter().collect();
    if let Some(flows) = config.get_mut("flows").and_then(Value::as_array_mut) {
        for flow in flows {
            let name = flow.get("name").and_then(Value::as_str).map(str::to_owned);
            if let Some((_, rate)) = rates.iter().find(|(n, _)| Some(*n) == name.as_deref())
                && let Some(f) = flow.as_object_mut()
            {
                match rate {
                    Some(r) => f.insert("rate".into(), serde_json::to_value(r)?),
                    None => f.remove("rate"),
                };
            }
        }
    }
    serde_json::to_vec(&config)
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
    map_config_over_lags(config, &[])
}

/// The config mapped with its LAGs' flows placed over the members in their LAGs: none of
/// `out` (member ports out of their LAG now), or every refusal it earned.
pub fn map_config_over_lags(config: &Config, out: &[String]) -> Result<Mapped, Refusals> {
    let mut cx = Cx {
        lag_out: out.to_vec(),
        ..Cx::default()
    };
    let mapped = cx.config(config);
    if cx.refusals.is_empty() {
        Ok(mapped)
    } else {
        Err(Refusals(cx.refusals))
    }
}

/// A flow's `rate` node (at `path`) as a typed rate, or its first refusal as one line.
pub(crate) fn rate_of(
    path: &str,
    rate: Option<&FlowRate>,
) -> Result<linerate_stream::Rate, String> {
    let mut cx = Cx::default();
    let mut spec = StreamSpec::default();
    cx.rate(path, rate, &mut spec);
    match cx.refusals.into_iter().next() {
        Some(r) => Err(r.to_string()),
        None => Ok(spec.rate),
    }
}

#[derive(Default)]
struct Cx {
    refusals: Vec<Refusal>,
    /// The flow's `random.seed`, with the path that gave it: linerate draws every random
    /// field of a stream from one seed.
    seed: Option<(String, u64)>,
    /// The config's route ranges, mapped before its flows: a device flow may name one.
    ranges: Vec<RangeEnd>,
    /// What set_config's answer says of what was taken but not quite as asked.
    warnings: Vec<String>,
    /// Which member of which LAG each flow naming a LAG runs on.
    lag_flows: Vec<LagFlow>,
    /// The LAGs left without a member (each of their ports refused): a flow naming one is
    /// refused for that, not as naming no port.
    lags_unplaced: Vec<String>,
    /// LAG members out of their LAG: flows are placed on the others.
    lag_out: Vec<String>,
    /// The config's LAGs, mapped before its devices: an ethernet may connect to one.
    lag_specs: Vec<linerate_lacp::LagSpec>,
    /// Each port flow's (index in the config, transmit port, receive port), recorded as soon
    /// as its endpoints are read, so the checks of where port flows run see the flows refused
    /// for their headers too and one answer lists every refusal.
    endpoints: Vec<(usize, String, Option<String>)>,
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
        k if device::is_control_plane(k) => {
            "control planes other than BGP, IS-IS, OSPFv2 and OSPFv3 (RSVP, DHCP, VXLAN, loopbacks, …) are not supported: linerate's devices answer ARP, ND and ping and speak BGP, IS-IS and OSPF (devices[].bgp, devices[].isis, devices[].ospfv2, devices[].ospfv3)"
        }
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
mod tests;
#[cfg(test)]
mod tunnel_tests;
