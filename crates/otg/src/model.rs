//! Request models, hand-written from `artifacts/openapi.yaml` of open-traffic-generator/models
//! v1.60.0. Each struct names its schema (`components/schemas/<Name>`). Only what linerate maps is
//! a typed field; every other key lands in `rest` and the mapping refuses it by its JSON path
//! (an empty list or object there is accepted: it asks for nothing). Integers the schema formats
//! as uint64 arrive as JSON strings from snappi (`"pps": "1000"`), so numbers are kept as
//! `serde_json::Value` and read by the mapping.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Keys a model does not map, by name, for the refusal.
pub type Rest = Map<String, Value>;

/// Config
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Config {
    #[serde(default)]
    pub ports: Vec<Port>,
    #[serde(default)]
    pub layer1: Vec<Layer1>,
    #[serde(default)]
    pub captures: Vec<Capture>,
    #[serde(default)]
    pub devices: Vec<Device>,
    #[serde(default)]
    pub flows: Vec<Flow>,
    pub options: Option<ConfigOptions>,
    /// The LLDP agents, each on a port.
    #[serde(default)]
    pub lldp: Vec<crate::lldp::Lldp>,
    /// The LAGs: ports aggregated by LACP or statically.
    #[serde(default)]
    pub lags: Vec<crate::lag::Lag>,
    /// events, stateful_flows, egress_only_tracking, …
    #[serde(flatten)]
    pub rest: Rest,
}

/// Config.Options
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ConfigOptions {
    pub port_options: Option<PortOptions>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Port.Options
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PortOptions {
    /// Accepted and moot: linerate's ports are interfaces of this host, never held by another
    /// client of this server.
    pub location_preemption: Option<bool>,
    pub data_integrity: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Port
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Port {
    pub name: String,
    /// `IFACE` or `IFACE@NETNS` (linerate's own format; the schema leaves it to implementations).
    pub location: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Layer1
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Layer1 {
    pub name: String,
    #[serde(default)]
    pub port_names: Vec<String>,
    /// `speed_10_fd_mbps` … `speed_800_gbps`: the link speed rates in % are taken of.
    pub speed: Option<String>,
    pub mtu: Option<Value>,
    pub promiscuous: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Capture
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Capture {
    pub name: String,
    #[serde(default)]
    pub port_names: Vec<String>,
    /// `pcap` (the default) or `pcapng`.
    pub format: Option<String>,
    pub overwrite: Option<bool>,
    pub packet_size: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Device: an emulated host's interfaces, its BGP, its IS-IS, its OSPFv2 and its OSPFv3; its
/// other control planes (rsvp, …) land in `rest` and are refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Device {
    pub name: String,
    #[serde(default)]
    pub ethernets: Vec<DeviceEthernet>,
    pub bgp: Option<crate::bgp::DeviceBgp>,
    pub isis: Option<crate::isis::DeviceIsis>,
    pub ospfv2: Option<crate::ospfv2::DeviceOspfv2>,
    pub ospfv3: Option<crate::ospfv3::DeviceOspfv3>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Device.Ethernet
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceEthernet {
    pub name: String,
    pub connection: Option<EthernetConnection>,
    pub mac: Option<String>,
    pub mtu: Option<Value>,
    #[serde(default)]
    pub vlans: Vec<DeviceVlan>,
    #[serde(default)]
    pub ipv4_addresses: Vec<DeviceIp>,
    #[serde(default)]
    pub ipv6_addresses: Vec<DeviceIp>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ethernet.Connection
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EthernetConnection {
    pub choice: Option<String>,
    pub port_name: Option<String>,
    pub lag_name: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Device.Vlan
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceVlan {
    pub name: String,
    pub id: Option<Value>,
    pub priority: Option<Value>,
    pub tpid: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Device.Ipv4 and Device.Ipv6 (the same keys; the addresses are read by family).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceIp {
    pub name: String,
    pub address: Option<String>,
    pub prefix: Option<Value>,
    pub gateway: Option<String>,
    pub gateway_mac: Option<DeviceGatewayMac>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Device.Ipv4GatewayMAC and Device.Ipv6GatewayMAC: `auto` (resolved; the `auto` key is the
/// state snappi echoes) or `value` (given, never resolved).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceGatewayMac {
    pub choice: Option<String>,
    pub auto: Option<String>,
    pub value: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Flow {
    pub name: String,
    pub tx_rx: Option<FlowTxRx>,
    #[serde(default)]
    pub packet: Vec<FlowHeader>,
    pub size: Option<FlowSize>,
    pub rate: Option<FlowRate>,
    pub duration: Option<FlowDuration>,
    pub metrics: Option<FlowMetrics>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.TxRx
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowTxRx {
    pub choice: Option<String>,
    pub port: Option<FlowPort>,
    pub device: Option<FlowRouter>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Router: a flow between device address objects.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowRouter {
    /// `mesh` or `one_to_one`: the same for one name each way.
    pub mode: Option<String>,
    #[serde(default)]
    pub tx_names: Vec<String>,
    #[serde(default)]
    pub rx_names: Vec<String>,
    pub bidirectional: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Port
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowPort {
    pub tx_name: String,
    /// Deprecated in the schema for `rx_names`; read the same.
    pub rx_name: Option<String>,
    #[serde(default)]
    pub rx_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Header
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowHeader {
    pub choice: Option<String>,
    // Boxed: each header is kilobytes of patterns, and a header holds one of them; inline, every
    // header of every flow cost 28 KB whatever it carried.
    pub ethernet: Option<Box<FlowEthernet>>,
    pub vlan: Option<Box<FlowVlan>>,
    pub ipv4: Option<Box<FlowIpv4>>,
    pub ipv6: Option<Box<FlowIpv6>>,
    pub udp: Option<Box<FlowUdp>>,
    pub tcp: Option<Box<FlowTcp>>,
    pub icmp: Option<Box<FlowIcmp>>,
    /// Flow.Icmpv6: the shape of Flow.Icmp (an echo: type, code, identifier, sequence number,
    /// checksum), with type 128 for a request.
    pub icmpv6: Option<Box<FlowIcmp>>,
    pub custom: Option<Box<FlowCustom>>,
    pub vxlan: Option<Box<FlowVxlan>>,
    pub gre: Option<Box<FlowGre>>,
    pub mpls: Option<Box<FlowMpls>>,
    pub gtpv1: Option<Box<FlowGtpv1>>,
    pub arp: Option<Box<FlowArp>>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Pattern.Flow.<Header>.<Field>: every field pattern of a flow header has this shape (value,
/// values, increment, decrement, random, auto; counters and random as sub-objects).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Pattern {
    pub choice: Option<String>,
    pub value: Option<Value>,
    pub values: Option<Vec<Value>>,
    pub increment: Option<PatternCounter>,
    pub decrement: Option<PatternCounter>,
    pub random: Option<PatternRandom>,
    pub auto: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Pattern.Flow.<Header>.<Field>.Counter
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PatternCounter {
    pub start: Option<Value>,
    pub step: Option<Value>,
    pub count: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Pattern.Flow.<Header>.<Field>.Random
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PatternRandom {
    pub min: Option<Value>,
    pub max: Option<Value>,
    pub seed: Option<Value>,
    pub count: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Pattern.Flow.<Header>.Checksum: `generated` (good/bad) or `custom`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChecksumPattern {
    pub choice: Option<String>,
    pub generated: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Ethernet
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowEthernet {
    pub dst: Option<Pattern>,
    pub src: Option<Pattern>,
    pub ether_type: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Vlan
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowVlan {
    pub priority: Option<Pattern>,
    pub cfi: Option<Pattern>,
    pub id: Option<Pattern>,
    pub tpid: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Ipv4
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowIpv4 {
    pub version: Option<Pattern>,
    pub header_length: Option<Pattern>,
    pub priority: Option<FlowIpv4Priority>,
    pub total_length: Option<Pattern>,
    pub identification: Option<Pattern>,
    pub reserved: Option<Pattern>,
    pub dont_fragment: Option<Pattern>,
    pub more_fragments: Option<Pattern>,
    pub fragment_offset: Option<Pattern>,
    pub time_to_live: Option<Pattern>,
    pub protocol: Option<Pattern>,
    pub header_checksum: Option<ChecksumPattern>,
    pub src: Option<Pattern>,
    pub dst: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Ipv4.Priority
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowIpv4Priority {
    pub choice: Option<String>,
    pub raw: Option<Pattern>,
    pub dscp: Option<FlowIpv4Dscp>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Ipv4.Dscp
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowIpv4Dscp {
    pub phb: Option<Pattern>,
    pub ecn: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Ipv6
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowIpv6 {
    pub version: Option<Pattern>,
    pub traffic_class: Option<Pattern>,
    pub flow_label: Option<Pattern>,
    pub payload_length: Option<Pattern>,
    pub next_header: Option<Pattern>,
    pub hop_limit: Option<Pattern>,
    pub src: Option<Pattern>,
    pub dst: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Udp
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowUdp {
    pub src_port: Option<Pattern>,
    pub dst_port: Option<Pattern>,
    pub length: Option<Pattern>,
    pub checksum: Option<ChecksumPattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Vxlan
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowVxlan {
    pub flags: Option<Pattern>,
    pub reserved0: Option<Pattern>,
    pub vni: Option<Pattern>,
    pub reserved1: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Gre (RFC 2784: no key or sequence number in the model)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowGre {
    pub checksum_present: Option<Pattern>,
    pub reserved0: Option<Pattern>,
    pub version: Option<Pattern>,
    pub protocol: Option<Pattern>,
    pub checksum: Option<ChecksumPattern>,
    pub reserved1: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Mpls
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowMpls {
    pub label: Option<Pattern>,
    pub traffic_class: Option<Pattern>,
    pub bottom_of_stack: Option<Pattern>,
    pub time_to_live: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Gtpv1 (`squence_number` is the schema's spelling)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowGtpv1 {
    pub version: Option<Pattern>,
    pub protocol_type: Option<Pattern>,
    pub reserved: Option<Pattern>,
    pub e_flag: Option<Pattern>,
    pub s_flag: Option<Pattern>,
    pub pn_flag: Option<Pattern>,
    pub message_type: Option<Pattern>,
    pub message_length: Option<Pattern>,
    pub teid: Option<Pattern>,
    pub squence_number: Option<Pattern>,
    pub n_pdu_number: Option<Pattern>,
    pub next_extension_header_type: Option<Pattern>,
    pub extension_headers: Option<Vec<Value>>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Arp
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowArp {
    pub hardware_type: Option<Pattern>,
    pub protocol_type: Option<Pattern>,
    pub hardware_length: Option<Pattern>,
    pub protocol_length: Option<Pattern>,
    pub operation: Option<Pattern>,
    pub sender_hardware_addr: Option<Pattern>,
    pub sender_protocol_addr: Option<Pattern>,
    pub target_hardware_addr: Option<Pattern>,
    pub target_protocol_addr: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Tcp
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowTcp {
    pub src_port: Option<Pattern>,
    pub dst_port: Option<Pattern>,
    pub seq_num: Option<Pattern>,
    pub ack_num: Option<Pattern>,
    pub data_offset: Option<Pattern>,
    pub ecn_ns: Option<Pattern>,
    pub ecn_cwr: Option<Pattern>,
    pub ecn_echo: Option<Pattern>,
    pub ctl_urg: Option<Pattern>,
    pub ctl_ack: Option<Pattern>,
    pub ctl_psh: Option<Pattern>,
    pub ctl_rst: Option<Pattern>,
    pub ctl_syn: Option<Pattern>,
    pub ctl_fin: Option<Pattern>,
    pub window: Option<Pattern>,
    pub checksum: Option<ChecksumPattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Icmp
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowIcmp {
    pub choice: Option<String>,
    pub echo: Option<FlowIcmpEcho>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Icmp.Echo
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowIcmpEcho {
    #[serde(rename = "type")]
    pub kind: Option<Pattern>,
    pub code: Option<Pattern>,
    pub checksum: Option<ChecksumPattern>,
    pub identifier: Option<Pattern>,
    pub sequence_number: Option<Pattern>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Custom
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowCustom {
    pub bytes: String,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Size
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowSize {
    pub choice: Option<String>,
    pub fixed: Option<Value>,
    pub increment: Option<FlowSizeIncrement>,
    pub random: Option<FlowSizeRandom>,
    pub weight_pairs: Option<FlowSizeWeightPairs>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.SizeIncrement
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowSizeIncrement {
    pub start: Option<Value>,
    pub end: Option<Value>,
    pub step: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.SizeRandom
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowSizeRandom {
    pub min: Option<Value>,
    pub max: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.SizeWeightPairs
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowSizeWeightPairs {
    pub choice: Option<String>,
    pub predefined: Option<String>,
    #[serde(default)]
    pub custom: Vec<FlowSizeWeightPairsCustom>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.SizeWeightPairs.Custom
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowSizeWeightPairsCustom {
    pub size: Option<Value>,
    pub weight: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Rate
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowRate {
    pub choice: Option<String>,
    pub pps: Option<Value>,
    pub bps: Option<Value>,
    pub kbps: Option<Value>,
    pub mbps: Option<Value>,
    pub gbps: Option<Value>,
    pub percentage: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Duration
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowDuration {
    pub choice: Option<String>,
    pub fixed_packets: Option<FlowFixedPackets>,
    pub fixed_seconds: Option<FlowFixedSeconds>,
    pub burst: Option<FlowBurst>,
    pub continuous: Option<FlowContinuous>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.FixedPackets
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowFixedPackets {
    pub packets: Option<Value>,
    pub gap: Option<Value>,
    pub delay: Option<FlowDelay>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.FixedSeconds
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowFixedSeconds {
    pub seconds: Option<Value>,
    pub gap: Option<Value>,
    pub delay: Option<FlowDelay>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Burst
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowBurst {
    pub bursts: Option<Value>,
    pub packets: Option<Value>,
    pub gap: Option<Value>,
    pub inter_burst_gap: Option<FlowDelay>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Continuous
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowContinuous {
    pub gap: Option<Value>,
    pub delay: Option<FlowDelay>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Delay and Flow.Duration.InterBurstGap (the same three choices).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowDelay {
    pub choice: Option<String>,
    pub bytes: Option<Value>,
    pub nanoseconds: Option<Value>,
    pub microseconds: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Metrics
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowMetrics {
    pub enable: Option<bool>,
    pub loss: Option<bool>,
    pub timestamps: Option<bool>,
    pub latency: Option<FlowLatencyMetrics>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.Latency.Metrics
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowLatencyMetrics {
    pub enable: Option<bool>,
    /// `store_forward` or `cut_through`: the same software stamp either way (docs/otg.md).
    pub mode: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Control.State
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ControlState {
    pub choice: Option<String>,
    pub port: Option<StatePort>,
    pub traffic: Option<StateTraffic>,
    pub protocol: Option<crate::bgp::StateProtocol>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Port
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatePort {
    pub choice: Option<String>,
    pub capture: Option<StatePortCapture>,
    pub link: Option<StatePortLink>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Port.Link: the links of the ports named (every LAG member, with none) `up` or `down`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatePortLink {
    #[serde(default)]
    pub port_names: Vec<String>,
    pub state: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Port.Capture
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatePortCapture {
    /// Empty: every port with a capture configured.
    #[serde(default)]
    pub port_names: Vec<String>,
    /// `start` or `stop`.
    pub state: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Traffic
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateTraffic {
    pub choice: Option<String>,
    pub flow_transmit: Option<StateTrafficFlowTransmit>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Config.Update (`PATCH /config`, update_config)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ConfigUpdate {
    pub choice: Option<String>,
    pub flows: Option<FlowsUpdate>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flows.Update
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowsUpdate {
    #[serde(default)]
    pub property_names: Vec<String>,
    #[serde(default)]
    pub flows: Vec<Flow>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Traffic.FlowTransmit
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateTrafficFlowTransmit {
    /// Empty: every flow.
    #[serde(default)]
    pub flow_names: Vec<String>,
    /// `start`, `stop`, `pause` or `resume`.
    pub state: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Metrics.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MetricsRequest {
    pub choice: Option<String>,
    pub port: Option<PortMetricsRequest>,
    pub flow: Option<FlowMetricsRequest>,
    pub bgpv4: Option<crate::bgp::BgpMetricsRequest>,
    pub bgpv6: Option<crate::bgp::BgpMetricsRequest>,
    pub isis: Option<crate::isis::IsisMetricsRequest>,
    pub ospfv2: Option<crate::ospfv2::Ospfv2MetricsRequest>,
    pub ospfv3: Option<crate::ospfv3::Ospfv3MetricsRequest>,
    pub lldp: Option<crate::lldp::LldpMetricsRequest>,
    pub lag: Option<crate::lag::LagMetricsRequest>,
    pub lacp: Option<crate::lag::LacpMetricsRequest>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Port.MetricsRequest
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PortMetricsRequest {
    #[serde(default)]
    pub port_names: Vec<String>,
    #[serde(default)]
    pub column_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Flow.MetricsRequest
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowMetricsRequest {
    #[serde(default)]
    pub flow_names: Vec<String>,
    #[serde(default)]
    pub metric_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Capture.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CaptureRequest {
    pub port_name: String,
    #[serde(flatten)]
    pub rest: Rest,
}

/// States.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatesRequest {
    pub choice: Option<String>,
    pub ipv4_neighbors: Option<NeighborsStatesRequest>,
    pub ipv6_neighbors: Option<NeighborsStatesRequest>,
    pub bgp_prefixes: Option<crate::bgp::BgpPrefixStateRequest>,
    pub isis_lsps: Option<crate::isis::IsisLspsStateRequest>,
    pub ospfv2_lsas: Option<crate::ospfv2::Ospfv2LsasStateRequest>,
    pub ospfv3_lsas: Option<crate::ospfv3::Ospfv3LsasStateRequest>,
    pub lldp_neighbors: Option<crate::lldp::LldpNeighborsStateRequest>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Neighborsv4.States.Request and Neighborsv6.States.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NeighborsStatesRequest {
    /// Empty: every ethernet.
    #[serde(default)]
    pub ethernet_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}
