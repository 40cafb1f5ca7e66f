//! The IS-IS part of the models (v1.60.0): `Device.isis` and what get_metrics and get_states say
//! of it, as snappi 1.60.0 writes and reads them. Only what linerate maps is a typed field;
//! every other key lands in `rest` and is refused by path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Rest;
use crate::bgp::RouteAddress;

/// Device.IsisRouter
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceIsis {
    pub name: String,
    pub system_id: Option<String>,
    #[serde(default)]
    pub interfaces: Vec<IsisInterface>,
    pub basic: Option<IsisBasic>,
    pub advanced: Option<IsisAdvanced>,
    #[serde(default)]
    pub v4_routes: Vec<IsisRouteRange>,
    #[serde(default)]
    pub v6_routes: Vec<IsisRouteRange>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Isis.Interface
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IsisInterface {
    pub name: String,
    pub eth_name: Option<String>,
    pub metric: Option<Value>,
    /// `broadcast` (the default) or `point_to_point`.
    pub network_type: Option<String>,
    /// `level_1`, `level_2` (the default) or `level_1_2`.
    pub level_type: Option<String>,
    pub l1_settings: Option<IsisLevelSettings>,
    pub l2_settings: Option<IsisLevelSettings>,
    pub advanced: Option<IsisInterfaceAdvanced>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Isis.InterfaceLevel
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IsisLevelSettings {
    pub priority: Option<Value>,
    pub hello_interval: Option<Value>,
    pub dead_interval: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Isis.InterfaceAdvanced
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IsisInterfaceAdvanced {
    pub auto_adjust_mtu: Option<bool>,
    pub auto_adjust_area: Option<bool>,
    pub auto_adjust_supported_protocols: Option<bool>,
    pub enable_3way_handshake: Option<bool>,
    pub p2p_hellos_to_unicast_mac: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Isis.Basic
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IsisBasic {
    pub ipv4_te_router_id: Option<String>,
    pub hostname: Option<String>,
    pub enable_wide_metric: Option<bool>,
    /// What get_states keeps: linerate always reports the LSPs learned from neighbours.
    pub learned_lsp_filter: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Isis.Advanced
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IsisAdvanced {
    pub enable_hello_padding: Option<bool>,
    pub max_area_addresses: Option<Value>,
    #[serde(default)]
    pub area_addresses: Vec<String>,
    pub lsp_refresh_rate: Option<Value>,
    pub lsp_lifetime: Option<Value>,
    /// Milliseconds.
    pub psnp_interval: Option<Value>,
    pub csnp_interval: Option<Value>,
    pub max_lsp_size: Option<Value>,
    pub lsp_mgroup_min_trans_interval: Option<Value>,
    pub enable_attached_bit: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Isis.V4RouteRange and Isis.V6RouteRange
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IsisRouteRange {
    pub name: String,
    #[serde(default)]
    pub addresses: Vec<RouteAddress>,
    pub link_metric: Option<Value>,
    /// `internal` (the default) or `external`.
    pub origin_type: Option<String>,
    /// `up` (the default) or `down`.
    pub redistribution_type: Option<String>,
    pub prefix_attr_enabled: Option<bool>,
    pub x_flag: Option<bool>,
    pub r_flag: Option<bool>,
    pub n_flag: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Isis.MetricsRequest
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IsisMetricsRequest {
    /// Empty: every IS-IS router.
    #[serde(default)]
    pub router_names: Vec<String>,
    #[serde(default)]
    pub column_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// IsisLsps.StateRequest
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IsisLspsStateRequest {
    /// Empty: every IS-IS router.
    #[serde(default)]
    pub isis_router_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Isis.Metric
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisMetric {
    pub name: String,
    pub l1_sessions_up: u64,
    pub l1_session_flap: u64,
    pub l1_broadcast_hellos_sent: u64,
    pub l1_broadcast_hellos_received: u64,
    pub l1_point_to_point_hellos_sent: u64,
    pub l1_point_to_point_hellos_received: u64,
    pub l1_database_size: u64,
    pub l1_psnp_sent: u64,
    pub l1_psnp_received: u64,
    pub l1_csnp_sent: u64,
    pub l1_csnp_received: u64,
    pub l1_lsp_sent: u64,
    pub l1_lsp_received: u64,
    pub l2_sessions_up: u64,
    pub l2_session_flap: u64,
    pub l2_broadcast_hellos_sent: u64,
    pub l2_broadcast_hellos_received: u64,
    pub l2_point_to_point_hellos_sent: u64,
    pub l2_point_to_point_hellos_received: u64,
    pub l2_database_size: u64,
    pub l2_psnp_sent: u64,
    pub l2_psnp_received: u64,
    pub l2_csnp_sent: u64,
    pub l2_csnp_received: u64,
    pub l2_lsp_sent: u64,
    pub l2_lsp_received: u64,
}

/// IsisLspsState
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspsState {
    pub isis_router_name: String,
    pub lsps: Vec<IsisLspState>,
}

/// IsisLspState
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspState {
    /// `640000000001-00-00`: the originator's system id, the pseudonode and the fragment.
    pub lsp_id: String,
    /// `level_1` or `level_2`.
    pub pdu_type: String,
    pub remaining_lifetime: u32,
    pub sequence_number: u64,
    pub pdu_length: u32,
    pub flags: IsisLspFlags,
    pub tlvs: IsisLspTlvs,
}

/// IsisLspFlags
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspFlags {
    pub partition_repair: bool,
    pub attached_error: bool,
    pub attached_expense: bool,
    pub attached_delay: bool,
    pub attached_default: bool,
    pub overload: bool,
}

/// IsisLspTlvs: the TLVs linerate reads back (hostname, IS and IP reachability).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspTlvs {
    pub hostname_tlvs: Vec<IsisLspHostname>,
    pub extended_is_reachability_tlvs: Vec<IsisLspExtendedIsReachability>,
    pub extended_ipv4_reachability_tlvs: Vec<IsisLspV4Reachability>,
    pub ipv6_reachability_tlvs: Vec<IsisLspV6Reachability>,
}

/// IsisLspHostname
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspHostname {
    pub hostname: String,
}

/// IsisLspExtendedIsReachabilityTlv
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspExtendedIsReachability {
    pub neighbors: Vec<IsisLspNeighbor>,
}

/// IsisLspneighbor
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspNeighbor {
    pub system_id: String,
}

/// IsisLspExtendedIpv4ReachabilityTlv
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspV4Reachability {
    pub prefixes: Vec<IsisLspV4Prefix>,
}

/// IsisLspExtendedV4Prefix
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspV4Prefix {
    pub ipv4_address: String,
    pub prefix_length: u32,
    pub metric: u32,
}

/// IsisLspIpv6ReachabilityTlv
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspV6Reachability {
    pub prefixes: Vec<IsisLspV6Prefix>,
}

/// IsisLspV6Prefix
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IsisLspV6Prefix {
    pub ipv6_address: String,
    pub prefix_length: u32,
    pub metric: u32,
}
