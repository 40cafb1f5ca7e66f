//! get_states' answers from what the hosts learnt: each device's gateway and its MAC.

use std::collections::BTreeMap;

use linerate_hosts::NeighbourReport;

use crate::{Mapped, Neighborsv4State, Neighborsv6State, StatesResponse};

/// Per address object of the family with a gateway (of the ethernets named, or all), the
/// gateway and its MAC: given, or the one its port's hosts resolved and its flows use — not
/// whatever answered last (a spoofer may have).
pub fn neighbors(
    mapped: &Mapped,
    learnt: &BTreeMap<String, NeighbourReport>,
    v6: bool,
    ethernets: &[String],
) -> StatesResponse {
    let rows = mapped
        .hosts
        .iter()
        .filter(|h| ethernets.is_empty() || ethernets.contains(&h.ethernet))
        .filter_map(|h| Some((h, h.gateway().filter(|g| g.is_ipv6() == v6)?)))
        .map(|(h, gw)| {
            let mac = h.gateway_mac.map(|m| m.octets()).or_else(|| {
                learnt
                    .get(&h.port)?
                    .asked
                    .iter()
                    .find(|n| n.addr == gw && n.vlan == h.spec.vlan)
                    .map(|n| n.mac)
            });
            (
                h.ethernet.clone(),
                gw,
                mac.map(|m| linerate_wire::Mac(m).to_string()),
            )
        });
    if v6 {
        StatesResponse {
            choice: "ipv6_neighbors".into(),
            ipv6_neighbors: Some(
                rows.map(|(ethernet_name, gw, link_layer_address)| Neighborsv6State {
                    ethernet_name,
                    ipv6_address: gw.to_string(),
                    link_layer_address,
                })
                .collect(),
            ),
            ..StatesResponse::default()
        }
    } else {
        StatesResponse {
            choice: "ipv4_neighbors".into(),
            ipv4_neighbors: Some(
                rows.map(|(ethernet_name, gw, link_layer_address)| Neighborsv4State {
                    ethernet_name,
                    ipv4_address: gw.to_string(),
                    link_layer_address,
                })
                .collect(),
            ),
            ..StatesResponse::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_hosts::AskedNeighbour;
    use std::collections::BTreeMap;

    /// Two ethernets on two ports: one IPv4 address resolved by auto, one IPv6 address whose
    /// gateway MAC is given.
    fn mapped() -> crate::Mapped {
        let config = serde_json::json!({
            "ports": [{"name": "p1", "location": "a0"}, {"name": "p2", "location": "a1@ns"}],
            "devices": [
                {"name": "d1", "ethernets": [{"name": "e1", "connection": {"port_name": "p1"},
                    "vlans": [{"name": "v", "id": 7}],
                    "ipv4_addresses": [{"name": "v4", "address": "10.0.0.2", "gateway": "10.0.0.1", "prefix": 24}]}]},
                {"name": "d2", "ethernets": [{"name": "e2", "connection": {"port_name": "p2"},
                    "ipv6_addresses": [{"name": "v6", "address": "2001:2::2", "gateway": "2001:2::1",
                        "gateway_mac": {"choice": "value", "value": "02:00:00:00:00:09"}}]}]}
            ]
        });
        crate::map_config(&crate::parse_config(config.to_string().as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn neighbours_are_each_gateway_with_its_learnt_or_given_mac() {
        let m = mapped();
        let learnt = BTreeMap::from([(
            "p1".to_owned(),
            NeighbourReport {
                asked: vec![
                    // Another VLAN's entry for the same address is not this ethernet's.
                    AskedNeighbour {
                        addr: "10.0.0.1".parse().unwrap(),
                        vlan: None,
                        mac: [2, 0, 0, 0, 0, 1],
                        learned: None,
                        conflict: false,
                    },
                    // A spoofer answered since: the MAC resolved is what the flows use.
                    AskedNeighbour {
                        addr: "10.0.0.1".parse().unwrap(),
                        vlan: Some(7),
                        mac: [2, 0, 0, 0, 0, 7],
                        learned: Some([2, 0, 0, 0, 0, 0x66]),
                        conflict: true,
                    },
                ],
                others: 4095,
            },
        )]);
        let v4 = neighbors(&m, &learnt, false, &[]).ipv4_neighbors.unwrap();
        assert_eq!(
            v4,
            [crate::Neighborsv4State {
                ethernet_name: "e1".into(),
                ipv4_address: "10.0.0.1".into(),
                link_layer_address: Some("02:00:00:00:00:07".into()),
            }]
        );
        let v6 = neighbors(&m, &learnt, true, &[]).ipv6_neighbors.unwrap();
        assert_eq!(v6[0].ipv6_address, "2001:2::1");
        assert_eq!(
            v6[0].link_layer_address.as_deref(),
            Some("02:00:00:00:00:09")
        );
        // Unresolved: the gateway without a MAC; filtered by ethernet.
        let none = BTreeMap::new();
        let v4 = neighbors(&m, &none, false, &["e1".into()])
            .ipv4_neighbors
            .unwrap();
        assert_eq!(v4[0].link_layer_address, None);
        assert!(
            neighbors(&m, &none, false, &["e2".into()])
                .ipv4_neighbors
                .unwrap()
                .is_empty()
        );
    }
}
