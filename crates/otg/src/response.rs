//! Response models (components/schemas/…), written as snappi 1.60.0 reads them.

use serde::{Deserialize, Serialize};

/// Warning: the body of a successful set_config / set_control_state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub warnings: Vec<String>,
}

/// Version
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    pub api_spec_version: String,
    pub sdk_version: String,
    pub app_version: String,
}

impl Version {
    /// The API version linerate serves (the snappi it speaks), for an app of `app_version`.
    pub fn of(app_version: &str) -> Self {
        Version {
            api_spec_version: crate::API_SPEC_VERSION.into(),
            sdk_version: crate::API_SPEC_VERSION.into(),
            app_version: app_version.into(),
        }
    }
}

/// Metrics.Response
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsResponse {
    /// `port_metrics`, `flow_metrics`, `bgpv4_metrics`, `bgpv6_metrics`, `isis_metrics`,
    /// `ospfv2_metrics`, `ospfv3_metrics`, `lldp_metrics`, `lag_metrics` or `lacp_metrics`.
    pub choice: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_metrics: Option<Vec<PortMetric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_metrics: Option<Vec<FlowMetric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgpv4_metrics: Option<Vec<crate::bgp::BgpMetric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgpv6_metrics: Option<Vec<crate::bgp::BgpMetric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isis_metrics: Option<Vec<crate::isis::IsisMetric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ospfv2_metrics: Option<Vec<crate::ospfv2::Ospfv2Metric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ospfv3_metrics: Option<Vec<crate::ospfv3::Ospfv3Metric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lldp_metrics: Option<Vec<crate::lldp::LldpMetric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag_metrics: Option<Vec<crate::lag::LagMetric>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lacp_metrics: Option<Vec<crate::lag::LacpMetric>>,
}

/// Port.Metric
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortMetric {
    pub name: String,
    pub location: String,
    /// `up` or `down`.
    pub link: String,
    /// `started` or `stopped`.
    pub capture: String,
    pub frames_tx: u64,
    pub frames_rx: u64,
    pub bytes_tx: u64,
    pub bytes_rx: u64,
    pub frames_tx_rate: f64,
    pub frames_rx_rate: f64,
    pub bytes_tx_rate: f64,
    pub bytes_rx_rate: f64,
    /// `started` or `stopped`.
    pub transmit: String,
}

/// Flow.Metric
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowMetric {
    pub name: String,
    pub port_tx: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub port_rx: String,
    /// `started`, `stopped` or `paused`.
    pub transmit: String,
    pub frames_tx: u64,
    pub frames_rx: u64,
    pub bytes_tx: u64,
    pub bytes_rx: u64,
    pub frames_tx_rate: f64,
    pub frames_rx_rate: f64,
    /// Percent of the frames sent that did not arrive.
    pub loss: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<MetricTimestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<MetricLatency>,
}

/// Metric.Timestamp
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricTimestamp {
    pub first_timestamp_ns: f64,
    pub last_timestamp_ns: f64,
}

/// Metric.Latency
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricLatency {
    pub minimum_ns: f64,
    pub maximum_ns: f64,
    pub average_ns: f64,
}

/// States.Response
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatesResponse {
    /// `ipv4_neighbors`, `ipv6_neighbors`, `bgp_prefixes`, `isis_lsps`, `ospfv2_lsas`,
    /// `ospfv3_lsas` or `lldp_neighbors`.
    pub choice: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_neighbors: Option<Vec<Neighborsv4State>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_neighbors: Option<Vec<Neighborsv6State>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp_prefixes: Option<Vec<crate::bgp::BgpPrefixesState>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isis_lsps: Option<Vec<crate::isis::IsisLspsState>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ospfv2_lsas: Option<Vec<crate::ospfv2::Ospfv2LsaState>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ospfv3_lsas: Option<Vec<crate::ospfv3::Ospfv3LsaState>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lldp_neighbors: Option<Vec<crate::lldp::LldpNeighborsState>>,
}

/// Neighborsv4.State
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Neighborsv4State {
    pub ethernet_name: String,
    pub ipv4_address: String,
    /// Absent while the neighbour is unresolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_layer_address: Option<String>,
}

/// Neighborsv6.State
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Neighborsv6State {
    pub ethernet_name: String,
    pub ipv6_address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_layer_address: Option<String>,
}
