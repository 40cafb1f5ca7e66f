//! The LAGs' state in OTG's words: a LAG as a `Lag.Metric` (its status by `min_links`, its
//! members' port counts summed), a member's LACP as a `Lacp.Metric`.

use linerate_lacp::LagView;
use linerate_lacp::pdu::state;

use super::{LacpMetric, LagMetric};
use crate::{MetricsResponse, PortMetric};

fn mac(m: [u8; 6]) -> String {
    m.map(|b| format!("{b:02x}")).join(":")
}

/// get_metrics `lag`: the LAGs named (all, with none); `ports` are the port metrics of every
/// member, whose counts and rates each LAG sums.
pub fn lag_response(lags: &[LagView], ports: &[PortMetric], names: &[String]) -> MetricsResponse {
    let list = lags
        .iter()
        .filter(|l| names.is_empty() || names.contains(&l.name))
        .map(|l| {
            let members: Vec<&PortMetric> = ports
                .iter()
                .filter(|p| l.members.iter().any(|m| m.port == p.name))
                .collect();
            let sum = |f: fn(&PortMetric) -> u64| -> u64 { members.iter().map(|&p| f(p)).sum() };
            let rate = |f: fn(&PortMetric) -> f64| -> f64 { members.iter().map(|&p| f(p)).sum() };
            LagMetric {
                name: l.name.clone(),
                oper_status: if l.up() { "up" } else { "down" }.into(),
                member_ports_up: l.members_up() as u32,
                frames_tx: sum(|p| p.frames_tx),
                frames_rx: sum(|p| p.frames_rx),
                bytes_tx: sum(|p| p.bytes_tx),
                bytes_rx: sum(|p| p.bytes_rx),
                frames_tx_rate: rate(|p| p.frames_tx_rate),
                frames_rx_rate: rate(|p| p.frames_rx_rate),
                bytes_tx_rate: rate(|p| p.bytes_tx_rate),
                bytes_rx_rate: rate(|p| p.bytes_rx_rate),
            }
        })
        .collect();
    MetricsResponse {
        choice: "lag_metrics".into(),
        lag_metrics: Some(list),
        ..Default::default()
    }
}

/// get_metrics `lacp`: every member of the LACP LAGs named (all, with none), those of the
/// member ports named (all, with none).
pub fn lacp_response(lags: &[LagView], names: &[String], members: &[String]) -> MetricsResponse {
    let mut list = Vec::new();
    for l in lags
        .iter()
        .filter(|l| l.lacp && (names.is_empty() || names.contains(&l.name)))
    {
        for m in l
            .members
            .iter()
            .filter(|m| members.is_empty() || members.contains(&m.port))
        {
            let a = &m.actor;
            list.push(LacpMetric {
                lag_name: l.name.clone(),
                lag_member_port_name: m.port.clone(),
                lacp_packets_rx: m.pdus_rx,
                lacp_packets_tx: m.pdus_tx,
                lacp_rx_errors: m.rx_errors,
                activity: if a.has(state::ACTIVITY) {
                    "active"
                } else {
                    "passive"
                }
                .into(),
                timeout: if a.has(state::TIMEOUT) {
                    "short"
                } else {
                    "long"
                }
                .into(),
                synchronization: if a.has(state::SYNCHRONIZATION) {
                    "in_sync"
                } else {
                    "out_sync"
                }
                .into(),
                aggregatable: a.has(state::AGGREGATION),
                collecting: a.has(state::COLLECTING),
                distributing: a.has(state::DISTRIBUTING),
                system_id: mac(a.system),
                oper_key: u32::from(a.key),
                partner_id: mac(m.partner.system),
                partner_key: u32::from(m.partner.key),
                port_num: u32::from(a.port),
                partner_port_num: u32::from(m.partner.port),
            });
        }
    }
    MetricsResponse {
        choice: "lacp_metrics".into(),
        lacp_metrics: Some(list),
        ..Default::default()
    }
}
