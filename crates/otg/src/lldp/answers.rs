//! What lldpd reports, in OTG's words: an agent's counters as an `Lldp.Metric`, the neighbours
//! it heard as `LldpNeighbors.State`.

use linerate_routing::lldp::{LldpState, Neighbour};

use crate::{MetricsResponse, StatesResponse};

use super::{LldpCapabilityState, LldpCustomTlvState, LldpMetric, LldpNeighborsState};

/// get_metrics `lldp`: the agents named (all, with none). lldpd counts the frames it sent and
/// took, those it discarded (malformed: IEEE 802.1AB's statsFramesDiscardedTotal, which is
/// also every frame in error) and the TLVs it did not know.
pub fn metrics_response(agents: &[LldpState], names: &[String]) -> MetricsResponse {
    let list = agents
        .iter()
        .filter(|a| names.is_empty() || names.contains(&a.name))
        .map(|a| LldpMetric {
            name: a.name.clone(),
            frames_rx: a.counts.rx,
            frames_tx: a.counts.tx,
            frames_error_rx: a.counts.discarded,
            frames_discard: a.counts.discarded,
            tlvs_discard: 0,
            tlvs_unknown: a.counts.unrecognized,
        })
        .collect();
    MetricsResponse {
        choice: "lldp_metrics".into(),
        lldp_metrics: Some(list),
        ..Default::default()
    }
}

/// OTG's word for one of lldpd's id subtypes; None for one OTG has no word for.
fn id_type(lldpd: &str) -> Option<String> {
    Some(
        match lldpd {
            "mac" => "mac_address",
            "ifname" => "interface_name",
            "local" => "local",
            "ip" => "network_address",
            "ifalias" => "interface_alias",
            _ => return None,
        }
        .to_owned(),
    )
}

/// OTG's word for one of lldpd's capability names.
fn capability(lldpd: &str) -> Option<&'static str> {
    Some(match lldpd {
        "Bridge" => "mac_bridge",
        "Router" => "router",
        "Wlan" => "wlan_access_point",
        "Station" => "station_only",
        "Repeater" => "repeater",
        "Telephone" => "telephone",
        "Docsis" => "docsis_cable_device",
        "Other" => "other",
        _ => return None,
    })
}

fn neighbour(agent: &str, n: &Neighbour) -> LldpNeighborsState {
    LldpNeighborsState {
        lldp_name: agent.to_owned(),
        system_name: n.system_name.clone().unwrap_or_default(),
        system_description: n.system_description.clone().unwrap_or_default(),
        chassis_id: n.chassis_id.clone(),
        chassis_id_type: id_type(&n.chassis_id_type),
        neighbor_id: n.id.clone(),
        age: n.age,
        // lldpd does not say when it last heard the neighbour: 0.
        last_update: 0,
        ttl: n.ttl,
        port_id: n.port_id.clone(),
        port_id_type: id_type(&n.port_id_type),
        port_description: n.port_description.clone().unwrap_or_default(),
        management_address: n.management_address.clone().unwrap_or_default(),
        management_address_type: match &n.management_address {
            Some(a) if a.contains(':') => "ipv6".into(),
            Some(_) => "ipv4".into(),
            None => String::new(),
        },
        custom_tlvs: n
            .org_infos
            .iter()
            .map(|o| LldpCustomTlvState {
                custom_type: 127,
                oui: o.oui.iter().map(|b| format!("{b:02X}")).collect(),
                oui_subtype: u32::from(o.subtype),
                information: o.info.iter().map(|b| format!("{b:02x}")).collect(),
            })
            .collect(),
        capabilities: n
            .capabilities
            .iter()
            .filter_map(|(name, enabled)| {
                Some(LldpCapabilityState {
                    capability_name: capability(name)?.into(),
                    capability_enabled: *enabled,
                })
            })
            .collect(),
    }
}

/// get_states `lldp_neighbors`: every neighbour the agents named heard (all agents, with
/// none), those whose neighbor_id is in `filters` when some are given.
pub fn neighbors_response(
    agents: &[LldpState],
    names: &[String],
    filters: &[String],
) -> StatesResponse {
    let list = agents
        .iter()
        .filter(|a| names.is_empty() || names.contains(&a.name))
        .flat_map(|a| a.neighbours.iter().map(|n| neighbour(&a.name, n)))
        .filter(|n| filters.is_empty() || filters.contains(&n.neighbor_id))
        .collect();
    StatesResponse {
        choice: "lldp_neighbors".into(),
        lldp_neighbors: Some(list),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use linerate_routing::lldp::{LldpCounts, OrgInfo};

    use super::*;

    #[test]
    fn lldpds_words_become_otgs() {
        let n = Neighbour {
            interface: "veth-b".into(),
            id: "1".into(),
            age: 64,
            system_name: Some("lldp_rx".into()),
            system_description: Some("Debian".into()),
            chassis_id_type: "mac".into(),
            chassis_id: "00:00:01:01:01:02".into(),
            port_id_type: "ifname".into(),
            port_id: "veth-b".into(),
            port_description: None,
            ttl: 120,
            management_address: Some("fe80::1".into()),
            capabilities: vec![("Station".into(), true), ("Bridge".into(), false)],
            org_infos: vec![OrgInfo {
                oui: [0x33, 0x44, 0x5a],
                subtype: 44,
                info: vec![0x0a, 0xff],
            }],
        };
        let agents = [LldpState {
            name: "lldp_tx".into(),
            counts: LldpCounts {
                tx: 3,
                rx: 2,
                discarded: 1,
                unrecognized: 4,
                ageouts: 0,
            },
            neighbours: vec![n],
        }];
        let s = neighbors_response(&agents, &[], &[])
            .lldp_neighbors
            .unwrap();
        let s = &s[0];
        assert_eq!(s.chassis_id_type.as_deref(), Some("mac_address"));
        assert_eq!(s.port_id_type.as_deref(), Some("interface_name"));
        assert_eq!((s.ttl, s.age, s.neighbor_id.as_str()), (120, 64, "1"));
        assert_eq!(s.management_address_type, "ipv6");
        assert_eq!(s.capabilities[0].capability_name, "station_only");
        assert_eq!(
            s.custom_tlvs,
            [LldpCustomTlvState {
                custom_type: 127,
                oui: "33445A".into(),
                oui_subtype: 44,
                information: "0aff".into(),
            }]
        );
        assert!(
            neighbors_response(&agents, &[], &["2".into()])
                .lldp_neighbors
                .unwrap()
                .is_empty()
        );
        let m = &metrics_response(&agents, &[]).lldp_metrics.unwrap()[0];
        assert_eq!(
            (m.frames_tx, m.frames_rx, m.frames_discard, m.tlvs_unknown),
            (3, 2, 1, 4)
        );
        assert_eq!(id_type("unhandled"), None);
    }
}
