//! The BGP part of the models (v1.60.0): `Device.bgp` and what set_control_state, get_metrics
//! and get_states say of it, as snappi 1.60.0 writes and reads them. As in `model.rs`, only
//! what linerate maps is a typed field; every other key lands in `rest` and is refused by path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Rest;

/// Device.BgpRouter
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceBgp {
    pub router_id: Option<String>,
    #[serde(default)]
    pub ipv4_interfaces: Vec<BgpInterface>,
    #[serde(default)]
    pub ipv6_interfaces: Vec<BgpInterface>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgp.V4Interface and Bgp.V6Interface: the address object the sessions leave from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpInterface {
    #[serde(alias = "ipv6_name")]
    pub ipv4_name: Option<String>,
    #[serde(default)]
    pub peers: Vec<BgpPeer>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgp.V4Peer and Bgp.V6Peer
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpPeer {
    pub name: String,
    pub peer_address: Option<String>,
    /// `ebgp` or `ibgp`.
    pub as_type: Option<String>,
    pub as_number: Option<Value>,
    /// `four` (the default) or `two`.
    pub as_number_width: Option<String>,
    pub advanced: Option<BgpAdvanced>,
    /// What is kept for get_states: linerate keeps every prefix, so any filter is moot.
    pub learned_information_filter: Option<Value>,
    /// True (the default): IPv4 unicast routes in the UPDATE's own NLRI field, as FRR sends them.
    pub traditional_nlri_for_ipv4_routes: Option<bool>,
    #[serde(default)]
    pub v4_routes: Vec<BgpRouteRange>,
    #[serde(default)]
    pub v6_routes: Vec<BgpRouteRange>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgp.Advanced
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpAdvanced {
    pub hold_time_interval: Option<Value>,
    pub keep_alive_interval: Option<Value>,
    pub md5_key: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgp.V4RouteRange and Bgp.V6RouteRange
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpRouteRange {
    pub name: String,
    #[serde(default)]
    pub addresses: Vec<RouteAddress>,
    /// `local_ip` (the default) or `manual`.
    pub next_hop_mode: Option<String>,
    /// `ipv4` or `ipv6`: which of the two manual addresses is the next hop.
    pub next_hop_address_type: Option<String>,
    pub next_hop_ipv4_address: Option<String>,
    pub next_hop_ipv6_address: Option<String>,
    pub advanced: Option<BgpRouteAdvanced>,
    #[serde(default)]
    pub communities: Vec<BgpCommunity>,
    pub as_path: Option<BgpAsPath>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// V4RouteAddress and V6RouteAddress
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RouteAddress {
    pub address: Option<String>,
    pub prefix: Option<Value>,
    pub count: Option<Value>,
    pub step: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgp.RouteAdvanced
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpRouteAdvanced {
    pub include_multi_exit_discriminator: Option<bool>,
    pub multi_exit_discriminator: Option<Value>,
    pub include_origin: Option<bool>,
    /// `igp`, `egp` or `incomplete`.
    pub origin: Option<String>,
    pub include_local_preference: Option<bool>,
    pub local_preference: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgp.Community
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpCommunity {
    /// `manual_as_number`, `no_export`, `no_advertised`, …
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub as_number: Option<Value>,
    pub as_custom: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgp.AsPath
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpAsPath {
    pub as_set_mode: Option<String>,
    #[serde(default)]
    pub segments: Vec<BgpAsPathSegment>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgp.AsPathSegment
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpAsPathSegment {
    /// `as_seq`, `as_set`, `as_confed_seq`, `as_confed_set`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub as_numbers: Vec<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Protocol
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateProtocol {
    pub choice: Option<String>,
    pub all: Option<StateProtocolAll>,
    pub route: Option<StateProtocolRoute>,
    pub lacp: Option<crate::lag::StateProtocolLacp>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Protocol.All
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateProtocolAll {
    /// `start` or `stop`.
    pub state: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Protocol.Route
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateProtocolRoute {
    /// Empty: every route range.
    #[serde(default)]
    pub names: Vec<String>,
    /// `withdraw` or `advertise`.
    pub state: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgpv4.MetricsRequest and Bgpv6.MetricsRequest
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpMetricsRequest {
    /// Empty: every peer of the family.
    #[serde(default)]
    pub peer_names: Vec<String>,
    #[serde(default)]
    pub column_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// BgpPrefix.StateRequest
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BgpPrefixStateRequest {
    /// Empty: every peer.
    #[serde(default)]
    pub bgp_peer_names: Vec<String>,
    /// `ipv4_unicast`, `ipv6_unicast`; empty: both.
    #[serde(default)]
    pub prefix_filters: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Bgpv4.Metric and Bgpv6.Metric
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BgpMetric {
    pub name: String,
    /// `up` (Established) or `down`.
    pub session_state: String,
    pub session_flap_count: u64,
    pub routes_advertised: u64,
    pub routes_received: u64,
    pub updates_sent: u64,
    pub updates_received: u64,
    pub opens_sent: u64,
    pub opens_received: u64,
    pub keepalives_sent: u64,
    pub keepalives_received: u64,
    pub notifications_sent: u64,
    pub notifications_received: u64,
    /// `idle`, `connect`, `active`, `opensent`, `openconfirm`, `established`.
    pub fsm_state: String,
}

/// BgpPrefixesState
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BgpPrefixesState {
    pub bgp_peer_name: String,
    pub ipv4_unicast_prefixes: Vec<BgpPrefixState>,
    pub ipv6_unicast_prefixes: Vec<BgpPrefixState>,
}

/// BgpPrefixIpv4UnicastState and BgpPrefixIpv6UnicastState (one address key of the two).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BgpPrefixState {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_address: Option<String>,
    pub prefix_length: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_next_hop: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_next_hop: Option<String>,
    pub communities: Vec<ResultBgpCommunity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_path: Option<ResultBgpAsPath>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_preference: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_exit_discriminator: Option<u32>,
}

/// ResultBgpCommunity
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultBgpCommunity {
    #[serde(rename = "type")]
    pub kind: String,
    pub as_number: u32,
    pub as_custom: u32,
}

/// ResultBgpAsPath
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultBgpAsPath {
    pub segments: Vec<ResultBgpAsPathSegment>,
}

/// ResultBgpAsPathSegment
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultBgpAsPathSegment {
    #[serde(rename = "type")]
    pub kind: String,
    pub as_numbers: Vec<u32>,
}
