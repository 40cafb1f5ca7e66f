//! What isisd reports, in OTG's words: a router's adjacencies, PDU counts and databases as an
//! `Isis.Metric`, the LSPs it learned from its neighbours as an `IsisLspsState`.

use ipnet::IpNet;
use linerate_routing::frr::isis::{IsisView, Lsp};

use crate::{MetricsResponse, StatesResponse};

use super::{
    IsisLspExtendedIsReachability, IsisLspFlags, IsisLspHostname, IsisLspNeighbor, IsisLspState,
    IsisLspTlvs, IsisLspV4Prefix, IsisLspV4Reachability, IsisLspV6Prefix, IsisLspV6Reachability,
    IsisLspsState, IsisMetric,
};

/// get_metrics `isis`: the routers named (all, with none); a stopped router's counters are 0.
pub fn metrics_response(
    devices: &[linerate_routing::Device],
    views: &[(String, Option<IsisView>)],
    routers: &[String],
) -> MetricsResponse {
    let list = views
        .iter()
        .filter(|(name, _)| routers.is_empty() || routers.contains(name))
        .map(|(name, view)| {
            let spec = devices
                .iter()
                .filter_map(|d| d.isis.as_ref())
                .find(|i| &i.name == name);
            let p2p = [1u8, 2].map(|n| {
                spec.is_some_and(|i| {
                    i.circuits
                        .iter()
                        .any(|c| c.point_to_point && c.level.has(n))
                })
            });
            metric(name, p2p, view.as_ref())
        })
        .collect();
    MetricsResponse {
        choice: "isis_metrics".into(),
        isis_metrics: Some(list),
        ..Default::default()
    }
}

/// One router's metric. FRR counts point-to-point hellos once for both levels (one IIH serves
/// both on a level 1-2 circuit), so each level `p2p` says a point-to-point circuit runs
/// reports them; a database's size counts every LSP in it, the router's own among them.
pub fn metric(name: &str, p2p: [bool; 2], view: Option<&IsisView>) -> IsisMetric {
    let mut m = IsisMetric {
        name: name.to_owned(),
        ..Default::default()
    };
    let Some(v) = view else {
        return m;
    };
    let up = |level: u8| {
        v.adjacencies
            .iter()
            .filter(|a| a.up && a.levels & level != 0)
            .count() as u64
    };
    let flaps = |level: u8| {
        v.adjacencies
            .iter()
            .filter(|a| a.levels & level != 0)
            .map(|a| a.flaps)
            .sum()
    };
    let size = |level: u8| v.lsps.iter().filter(|l| l.level == level).count() as u64;
    let (p2p_sent, p2p_received) = v.pdus.of("p2p-iih");
    let levels = [1u8, 2];
    let [l1, l2] = levels.map(|n| {
        let kind = |k: &str| v.pdus.of(&format!("l{n}-{k}"));
        (kind("iih"), kind("psnp"), kind("csnp"), kind("lsp"))
    });
    m.l1_sessions_up = up(1);
    m.l1_session_flap = flaps(1);
    m.l1_database_size = size(1);
    (m.l1_broadcast_hellos_sent, m.l1_broadcast_hellos_received) = l1.0;
    (m.l1_psnp_sent, m.l1_psnp_received) = l1.1;
    (m.l1_csnp_sent, m.l1_csnp_received) = l1.2;
    (m.l1_lsp_sent, m.l1_lsp_received) = l1.3;
    m.l2_sessions_up = up(2);
    m.l2_session_flap = flaps(2);
    m.l2_database_size = size(2);
    (m.l2_broadcast_hellos_sent, m.l2_broadcast_hellos_received) = l2.0;
    (m.l2_psnp_sent, m.l2_psnp_received) = l2.1;
    (m.l2_csnp_sent, m.l2_csnp_received) = l2.2;
    (m.l2_lsp_sent, m.l2_lsp_received) = l2.3;
    if p2p[0] {
        (
            m.l1_point_to_point_hellos_sent,
            m.l1_point_to_point_hellos_received,
        ) = (p2p_sent, p2p_received);
    }
    if p2p[1] {
        (
            m.l2_point_to_point_hellos_sent,
            m.l2_point_to_point_hellos_received,
        ) = (p2p_sent, p2p_received);
    }
    m
}

/// get_states `isis_lsps`: the LSPs each router named learned from others (its own are not
/// learned), as OTG's `learned_lsp_filter` keeps them.
pub fn lsps_response(views: &[(String, Option<IsisView>)], routers: &[String]) -> StatesResponse {
    let states = views
        .iter()
        .filter(|(name, _)| routers.is_empty() || routers.contains(name))
        .map(|(name, view)| IsisLspsState {
            isis_router_name: name.clone(),
            lsps: view
                .iter()
                .flat_map(|v| &v.lsps)
                .filter(|l| !l.own)
                .map(lsp)
                .collect(),
        })
        .collect();
    StatesResponse {
        choice: "isis_lsps".into(),
        isis_lsps: Some(states),
        ..Default::default()
    }
}

fn hex(id: &[u8; 6]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn lsp(l: &Lsp) -> IsisLspState {
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    for (p, metric) in &l.prefixes {
        match p {
            IpNet::V4(n) => v4.push(IsisLspV4Prefix {
                ipv4_address: n.network().to_string(),
                prefix_length: u32::from(n.prefix_len()),
                metric: *metric,
            }),
            IpNet::V6(n) => v6.push(IsisLspV6Prefix {
                ipv6_address: n.network().to_string(),
                prefix_length: u32::from(n.prefix_len()),
                metric: *metric,
            }),
        }
    }
    IsisLspState {
        lsp_id: format!(
            "{}-{:02x}-{:02x}",
            hex(&l.system_id),
            l.pseudonode,
            l.fragment
        ),
        pdu_type: if l.level == 1 { "level_1" } else { "level_2" }.into(),
        remaining_lifetime: l.remaining_lifetime,
        sequence_number: l.sequence,
        pdu_length: l.pdu_length,
        flags: IsisLspFlags {
            partition_repair: l.partition,
            // FRR prints one ATT bit: the default metric's (ISO 10589 §9.9).
            attached_default: l.attached,
            overload: l.overload,
            ..Default::default()
        },
        tlvs: IsisLspTlvs {
            hostname_tlvs: l
                .hostname
                .iter()
                .map(|h| IsisLspHostname {
                    hostname: h.clone(),
                })
                .collect(),
            extended_is_reachability_tlvs: if l.neighbours.is_empty() {
                Vec::new()
            } else {
                vec![IsisLspExtendedIsReachability {
                    neighbors: l
                        .neighbours
                        .iter()
                        .map(|n| IsisLspNeighbor { system_id: hex(n) })
                        .collect(),
                }]
            },
            extended_ipv4_reachability_tlvs: if v4.is_empty() {
                Vec::new()
            } else {
                vec![IsisLspV4Reachability { prefixes: v4 }]
            },
            ipv6_reachability_tlvs: if v6.is_empty() {
                Vec::new()
            } else {
                vec![IsisLspV6Reachability { prefixes: v6 }]
            },
        },
    }
}
