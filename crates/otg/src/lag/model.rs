//! The LAG part of the models (v1.60.0): `lags[]` and what get_metrics says of them, as snappi
//! 1.60.0 writes and reads them. Only what linerate maps is a typed field; every other key
//! (`ports[].macsec`, …) lands in `rest` and is refused by path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Rest;

/// Lag: ports aggregated into one link.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Lag {
    pub name: String,
    #[serde(default)]
    pub ports: Vec<LagPort>,
    pub protocol: Option<LagProtocol>,
    /// Members that must be up for the LAG to be (0 to 32, 1 by default).
    pub min_links: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lag.Port: a member.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LagPort {
    pub port_name: String,
    pub lacp: Option<LagPortLacp>,
    pub ethernet: Option<LagEthernet>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lag.Port.Lacp: the member's LACP parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LagPortLacp {
    pub actor_port_number: Option<Value>,
    pub actor_port_priority: Option<Value>,
    /// `active` (the default) or `passive`.
    pub actor_activity: Option<String>,
    /// Seconds between LACPDUs: 0 auto (the default), 1 fast, 30 slow.
    pub lacpdu_periodic_time_interval: Option<Value>,
    /// Seconds: 0 auto (the default), 3 short, 90 long.
    pub lacpdu_timeout: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Device.EthernetBase, as a member has it: its name, MAC and MTU.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LagEthernet {
    pub name: Option<String>,
    pub mac: Option<String>,
    pub mtu: Option<Value>,
    #[serde(default)]
    pub vlans: Vec<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lag.Protocol: `lacp` (the default) or `static`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LagProtocol {
    pub choice: Option<String>,
    pub lacp: Option<LagProtocolLacp>,
    #[serde(rename = "static")]
    pub static_: Option<LagProtocolStatic>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lag.Protocol.Lacp: the actor's system.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LagProtocolLacp {
    /// A MAC (`00:00:00:00:00:00` by default).
    pub actor_system_id: Option<String>,
    pub actor_system_priority: Option<Value>,
    pub actor_key: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lag.Protocol.Static
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LagProtocolStatic {
    pub lag_id: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lag.Metrics.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LagMetricsRequest {
    /// LAG names; empty: every LAG.
    #[serde(default)]
    pub lag_names: Vec<String>,
    #[serde(default)]
    pub column_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lacp.Metrics.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LacpMetricsRequest {
    /// LAG names; empty: every LAG.
    #[serde(default)]
    pub lag_names: Vec<String>,
    /// Member port names; empty: every member.
    #[serde(default)]
    pub lag_member_port_names: Vec<String>,
    #[serde(default)]
    pub column_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lag.Metric
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LagMetric {
    pub name: String,
    /// `up` or `down`.
    pub oper_status: String,
    pub member_ports_up: u32,
    pub frames_tx: u64,
    pub frames_rx: u64,
    pub bytes_tx: u64,
    pub bytes_rx: u64,
    pub frames_tx_rate: f64,
    pub frames_rx_rate: f64,
    pub bytes_tx_rate: f64,
    pub bytes_rx_rate: f64,
}

/// Lacp.Metric: one member.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LacpMetric {
    pub lag_name: String,
    pub lag_member_port_name: String,
    pub lacp_packets_rx: u64,
    pub lacp_packets_tx: u64,
    pub lacp_rx_errors: u64,
    /// `active` or `passive`.
    pub activity: String,
    /// `short` or `long`.
    pub timeout: String,
    /// `in_sync` or `out_sync`.
    pub synchronization: String,
    pub aggregatable: bool,
    pub collecting: bool,
    pub distributing: bool,
    pub system_id: String,
    pub oper_key: u32,
    pub partner_id: String,
    pub partner_key: u32,
    pub port_num: u32,
    pub partner_port_num: u32,
}

/// State.Protocol.Lacp: `admin` (LACP of some members stopped or started); `member_ports` is
/// refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateProtocolLacp {
    pub choice: Option<String>,
    pub admin: Option<StateProtocolLacpAdmin>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// State.Protocol.Lacp.Admin: the members named (every member of every LACP LAG, with none)
/// `up` (LACP runs) or `down` (it stops: silent, out of its LAG).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateProtocolLacpAdmin {
    #[serde(default)]
    pub lag_member_names: Vec<String>,
    pub state: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}
