//! What ospfd and the wire report, in OTG's words: a router's neighbours and the packets and
//! LSAs counted on its links as an `Ospfv2.Metric`, the LSAs it learned from others as an
//! `Ospfv2Lsa.State`.

use std::net::Ipv4Addr;

use linerate_routing::frr::ospf::{
    ExternalLsa, LinkKind, LsaHeader, Neighbour, OspfState, OspfView, RouterLsa, SummaryLsa,
};

use crate::{MetricsResponse, StatesResponse};

use super::{
    Ospfv2ExternalAsLsa, Ospfv2Link, Ospfv2LsaHeader, Ospfv2LsaState, Ospfv2Metric,
    Ospfv2NetworkLsa, Ospfv2NetworkSummaryLsa, Ospfv2NssaLsa, Ospfv2RouterLsa, Ospfv2SummaryAsLsa,
};

/// get_metrics `ospfv2`: the routers named (all, with none).
pub fn metrics_response(routers: &[OspfState], names: &[String]) -> MetricsResponse {
    let list = routers
        .iter()
        .filter(|r| names.is_empty() || names.contains(&r.name))
        .map(metric)
        .collect();
    MetricsResponse {
        choice: "ospfv2_metrics".into(),
        ospfv2_metrics: Some(list),
        ..Default::default()
    }
}

/// One router's metric. A session is a neighbour: up when Full, down otherwise or when an
/// interface has none (a stopped router's every interface is down); the counts are the
/// packets on the wire, both ways, since the device was made.
pub fn metric(r: &OspfState) -> Ospfv2Metric {
    let neighbours = r.view.as_ref().map_or(&[][..], |v| &v.neighbours);
    let (full, down) = sessions(neighbours, &r.interfaces);
    let (s, x) = (r.counts.sent, r.counts.received);
    Ospfv2Metric {
        name: r.name.clone(),
        full_state_count: full,
        down_state_count: down,
        sessions_flap: r.flaps,
        hellos_sent: s.hellos,
        hellos_received: x.hellos,
        dbd_sent: s.dbds,
        dbd_received: x.dbds,
        ls_request_sent: s.ls_requests,
        ls_request_received: x.ls_requests,
        ls_update_sent: s.ls_updates,
        ls_update_received: x.ls_updates,
        ls_ack_sent: s.ls_acks,
        ls_ack_received: x.ls_acks,
        lsa_sent: s.lsas,
        lsa_received: x.lsas,
        lsa_ack_sent: s.lsa_acks,
        lsa_ack_received: x.lsa_acks,
        router_lsa_sent: s.lsa_by_type[1],
        router_lsa_received: x.lsa_by_type[1],
        network_lsa_sent: s.lsa_by_type[2],
        network_lsa_received: x.lsa_by_type[2],
        summary_lsa_sent: s.lsa_by_type[3],
        summary_lsa_received: x.lsa_by_type[3],
        external_lsa_sent: s.lsa_by_type[5],
        external_lsa_received: x.lsa_by_type[5],
        nssa_lsa_sent: s.lsa_by_type[7],
        nssa_lsa_received: x.lsa_by_type[7],
        opaque_local_sent: s.lsa_by_type[9],
        opaque_local_received: x.lsa_by_type[9],
        opaque_area_sent: s.lsa_by_type[10],
        opaque_area_received: x.lsa_by_type[10],
        opaque_domain_sent: s.lsa_by_type[11],
        opaque_domain_received: x.lsa_by_type[11],
    }
}

/// The sessions up (neighbours Full) and down (neighbours not Full, and interfaces of
/// `interfaces` with no neighbour at all), OSPFv2's and OSPFv3's alike.
pub(crate) fn sessions(neighbours: &[Neighbour], interfaces: &[String]) -> (u64, u64) {
    let full = neighbours.iter().filter(|n| n.full()).count() as u64;
    let lonely = interfaces
        .iter()
        .filter(|i| !neighbours.iter().any(|n| &n.interface == *i))
        .count() as u64;
    (full, neighbours.len() as u64 - full + lonely)
}

/// get_states `ospfv2_lsas`: the LSAs each router named learned from others (its own are not
/// learned), from every area it is in; an LSA at MaxAge is being flushed (RFC 2328 §14), not
/// learned, and is left out.
pub fn lsas_response(routers: &[OspfState], names: &[String]) -> StatesResponse {
    let states = routers
        .iter()
        .filter(|r| names.is_empty() || names.contains(&r.name))
        .map(|r| lsas(&r.name, r.view.as_ref()))
        .collect();
    StatesResponse {
        choice: "ospfv2_lsas".into(),
        ospfv2_lsas: Some(states),
        ..Default::default()
    }
}

/// RFC 2328's MaxAge, in seconds.
const MAX_AGE: u16 = 3600;

fn mask(len: u8) -> String {
    Ipv4Addr::from(u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)).to_string()
}

fn header(h: &LsaHeader) -> Ospfv2LsaHeader {
    Ospfv2LsaHeader {
        lsa_id: h.id.to_string(),
        advertising_router_id: h.advertising_router.to_string(),
        sequence_number: h.sequence,
        age: u32::from(h.age),
        option_bits: h.options,
    }
}

fn router(l: &RouterLsa) -> Ospfv2RouterLsa {
    Ospfv2RouterLsa {
        header: header(&l.header),
        links: l
            .links
            .iter()
            .map(|k| Ospfv2Link {
                kind: match k.kind {
                    LinkKind::PointToPoint => "point_to_point",
                    LinkKind::Transit => "transit",
                    LinkKind::Stub => "stub",
                    LinkKind::Virtual => "virtual",
                }
                .into(),
                id: k.id.to_string(),
                data: k.data.to_string(),
                metric: k.metric,
            })
            .collect(),
    }
}

fn summary(l: &SummaryLsa) -> (Ospfv2LsaHeader, String, u32) {
    (header(&l.header), mask(l.prefix_len), l.metric)
}

fn external(l: &ExternalLsa) -> Ospfv2ExternalAsLsa {
    Ospfv2ExternalAsLsa {
        header: header(&l.header),
        network_mask: mask(l.prefix_len),
        metric: l.metric,
        metric_type: if l.type_2 { 2 } else { 1 },
    }
}

/// What router `name` learned; nothing while it is stopped.
pub fn lsas(name: &str, view: Option<&OspfView>) -> Ospfv2LsaState {
    let mut out = Ospfv2LsaState {
        router_name: name.to_owned(),
        ..Default::default()
    };
    let Some(db) = view.map(|v| &v.lsas) else {
        return out;
    };
    let learned = |h: &LsaHeader| !h.own && h.age < MAX_AGE;
    out.router_lsas = db
        .router
        .iter()
        .filter(|l| learned(&l.header))
        .map(router)
        .collect();
    out.network_lsas = db
        .network
        .iter()
        .filter(|l| learned(&l.header))
        .map(|l| Ospfv2NetworkLsa {
            header: header(&l.header),
            network_mask: mask(l.prefix_len),
            neighbor_router_ids: l.routers.iter().map(ToString::to_string).collect(),
        })
        .collect();
    out.network_summary_lsas = db
        .summary
        .iter()
        .filter(|l| learned(&l.header))
        .map(summary)
        .map(|(header, network_mask, metric)| Ospfv2NetworkSummaryLsa {
            header,
            network_mask,
            metric,
        })
        .collect();
    out.summary_as_lsas = db
        .asbr_summary
        .iter()
        .filter(|l| learned(&l.header))
        .map(summary)
        .map(|(header, network_mask, metric)| Ospfv2SummaryAsLsa {
            header,
            network_mask,
            metric,
        })
        .collect();
    out.external_as_lsas = db
        .external
        .iter()
        .filter(|l| learned(&l.header))
        .map(external)
        .collect();
    out.nssa_lsas = db
        .nssa
        .iter()
        .filter(|l| learned(&l.header))
        .map(|l| {
            let e = external(l);
            Ospfv2NssaLsa {
                header: e.header,
                network_mask: e.network_mask,
                metric: e.metric,
                metric_type: e.metric_type,
                forwarding_address: l.forwarding.to_string(),
            }
        })
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use linerate_routing::frr::ospf::{Lsdb, SummaryLsa};

    use super::*;

    fn header(id: [u8; 4], own: bool, age: u16) -> LsaHeader {
        LsaHeader {
            area: Some(Ipv4Addr::UNSPECIFIED),
            id: Ipv4Addr::from(id),
            advertising_router: Ipv4Addr::new(1, 1, 1, if own { 1 } else { 2 }),
            sequence: 0x8000_0001,
            age,
            options: 2,
            own,
        }
    }

    fn state() -> OspfState {
        let summary = |id, own, age| SummaryLsa {
            header: header(id, own, age),
            prefix_len: 24,
            metric: 10,
        };
        OspfState {
            name: "o".into(),
            view: Some(OspfView {
                neighbours: vec![
                    Neighbour {
                        router_id: Ipv4Addr::new(1, 1, 1, 2),
                        state: "Full".into(),
                        interface: "eth0".into(),
                        changes: 5,
                    },
                    Neighbour {
                        router_id: Ipv4Addr::new(1, 1, 1, 3),
                        state: "2-Way".into(),
                        interface: "eth0".into(),
                        changes: 2,
                    },
                ],
                lsas: Lsdb {
                    summary: vec![
                        summary([10, 0, 0, 0], true, 5),
                        summary([20, 0, 0, 0], false, 5),
                        summary([30, 0, 0, 0], false, 3600),
                    ],
                    ..Lsdb::default()
                },
            }),
            counts: Default::default(),
            flaps: 1,
            interfaces: vec!["eth0".into(), "eth1".into()],
        }
    }

    #[test]
    fn sessions_are_neighbours_and_an_interface_with_none_is_down() {
        let m = metric(&state());
        assert_eq!(
            (m.full_state_count, m.down_state_count, m.sessions_flap),
            (1, 2, 1)
        );
        let stopped = OspfState {
            view: None,
            ..state()
        };
        let m = metric(&stopped);
        assert_eq!((m.full_state_count, m.down_state_count), (0, 2));
    }

    #[test]
    fn learned_lsas_leave_out_the_routers_own_and_those_being_flushed() {
        let s = lsas("o", state().view.as_ref());
        assert_eq!(s.network_summary_lsas.len(), 1);
        let l = &s.network_summary_lsas[0];
        assert_eq!(l.header.lsa_id, "20.0.0.0");
        assert_eq!(l.network_mask, "255.255.255.0");
        assert_eq!((l.metric, l.header.option_bits), (10, 2));
        assert_eq!(mask(0), "0.0.0.0");
        assert_eq!(mask(32), "255.255.255.255");
    }
}
