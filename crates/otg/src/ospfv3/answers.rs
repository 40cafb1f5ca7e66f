//! What ospf6d and the wire report, in OTG's words: a router's neighbours and the packets and
//! LSAs counted on its links as an `Ospfv3.Metric`, the LSAs it learned from others as an
//! `Ospfv3Lsa.State`.

use std::net::{Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use linerate_routing::frr::ospf::LsaHeader;
use linerate_routing::frr::ospf6::{Body6, External6, Lsa6, Ospf6State, Ospf6View};

use crate::{MetricsResponse, StatesResponse};

use super::{
    Ospfv3ExternalAsLsa, Ospfv3InterAreaPrefixLsa, Ospfv3InterAreaRouterLsa,
    Ospfv3IntraAreaPrefixLsa, Ospfv3Link, Ospfv3LinkLsa, Ospfv3LsaHeader, Ospfv3LsaState,
    Ospfv3Metric, Ospfv3NetworkLsa, Ospfv3NssaLsa, Ospfv3RouterLsa,
};

/// get_metrics `ospfv3`: the routers named (all, with none).
pub fn metrics_response(routers: &[Ospf6State], names: &[String]) -> MetricsResponse {
    let list = routers
        .iter()
        .filter(|r| names.is_empty() || names.contains(&r.name))
        .map(metric)
        .collect();
    MetricsResponse {
        choice: "ospfv3_metrics".into(),
        ospfv3_metrics: Some(list),
        ..Default::default()
    }
}

/// One router's metric, as OSPFv2's (`ospfv2::answers::metric`): sessions from ospf6d's
/// neighbours, every count from the wire, LSAs by their function codes.
pub fn metric(r: &Ospf6State) -> Ospfv3Metric {
    let neighbours = r.view.as_ref().map_or(&[][..], |v| &v.neighbours);
    let (full, down) = crate::ospfv2::answers::sessions(neighbours, &r.interfaces);
    let (s, x) = (r.counts.sent, r.counts.received);
    Ospfv3Metric {
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
        router_lsa_sent: s.lsa_by_type[1],
        router_lsa_received: x.lsa_by_type[1],
        network_lsa_sent: s.lsa_by_type[2],
        network_lsa_received: x.lsa_by_type[2],
        inter_area_prefix_lsa_sent: s.lsa_by_type[3],
        inter_area_prefix_lsa_received: x.lsa_by_type[3],
        inter_area_router_lsa_sent: s.lsa_by_type[4],
        inter_area_router_lsa_received: x.lsa_by_type[4],
        external_lsa_sent: s.lsa_by_type[5],
        external_lsa_received: x.lsa_by_type[5],
        nssa_lsa_sent: s.lsa_by_type[7],
        nssa_lsa_received: x.lsa_by_type[7],
        link_lsa_sent: s.lsa_by_type[8],
        link_lsa_received: x.lsa_by_type[8],
        intra_area_prefix_lsa_sent: s.lsa_by_type[9],
        intra_area_prefix_lsa_received: x.lsa_by_type[9],
    }
}

/// get_states `ospfv3_lsas`: the LSAs each router named learned from others, of every link,
/// area and the AS; an LSA at MaxAge (being flushed) is left out.
pub fn lsas_response(routers: &[Ospf6State], names: &[String]) -> StatesResponse {
    let states = routers
        .iter()
        .filter(|r| names.is_empty() || names.contains(&r.name))
        .map(|r| lsas(&r.name, r.view.as_ref()))
        .collect();
    StatesResponse {
        choice: "ospfv3_lsas".into(),
        ospfv3_lsas: Some(states),
        ..Default::default()
    }
}

/// RFC 5340's MaxAge, in seconds.
const MAX_AGE: u16 = 3600;

/// An address as eight groups without leading zeros and without `::` (RFC 4291 §2.2's first
/// form): `6:6:6:0:0:0:0:0`, the way ixia-c writes a prefix and the conformance test compares it.
fn full(a: Ipv6Addr) -> String {
    let groups: Vec<String> = a.segments().iter().map(|g| format!("{g:x}")).collect();
    groups.join(":")
}

fn prefix(p: &IpNet) -> (String, u32) {
    match p {
        IpNet::V6(n) => (full(n.network()), u32::from(n.prefix_len())),
        IpNet::V4(n) => (n.network().to_string(), u32::from(n.prefix_len())),
    }
}

fn header(h: &LsaHeader) -> Ospfv3LsaHeader {
    Ospfv3LsaHeader {
        lsa_id: h.id.to_string(),
        advertising_router_id: h.advertising_router.to_string(),
        sequence_number: h.sequence,
        age: u32::from(h.age),
    }
}

fn external(l: &Lsa6, e: &External6) -> Ospfv3ExternalAsLsa {
    let (address_prefix, prefix_length) = prefix(&e.prefix);
    Ospfv3ExternalAsLsa {
        header: header(&l.header),
        address_prefix,
        prefix_length,
        metric: e.metric,
        referenced_ls_type: 0,
        forwarding_address: full(e.forwarding.unwrap_or(Ipv6Addr::UNSPECIFIED)),
        // OTG writes the 32-bit route tag dotted.
        route_tag: Ipv4Addr::from(e.tag.unwrap_or(0)).to_string(),
    }
}

/// What router `name` learned; nothing while it is stopped. An intra-area-prefix or link LSA
/// of several prefixes is one entry a prefix (OTG's have one each).
pub fn lsas(name: &str, view: Option<&Ospf6View>) -> Ospfv3LsaState {
    let mut out = Ospfv3LsaState {
        router_name: name.to_owned(),
        ..Default::default()
    };
    let learned = view
        .into_iter()
        .flat_map(|v| &v.lsas)
        .filter(|l| !l.header.own && l.header.age < MAX_AGE);
    for l in learned {
        let h = header(&l.header);
        match &l.body {
            Body6::Router(links) => out.router_lsas.push(Ospfv3RouterLsa {
                header: h,
                neighbor_router_id: links
                    .first()
                    .map_or(Ipv4Addr::UNSPECIFIED, |k| k.neighbour)
                    .to_string(),
                links: links
                    .iter()
                    .map(|k| Ospfv3Link {
                        kind: k.kind.clone(),
                        metric: k.metric,
                    })
                    .collect(),
            }),
            Body6::Network(routers) => out.network_lsas.push(Ospfv3NetworkLsa {
                header: h,
                attached_router_ids: routers.iter().map(ToString::to_string).collect(),
            }),
            Body6::InterPrefix { prefix: p, metric } => {
                let (address_prefix, prefix_length) = prefix(p);
                out.inter_area_prefix_lsas.push(Ospfv3InterAreaPrefixLsa {
                    header: h,
                    address_prefix,
                    prefix_length,
                    metric: *metric,
                });
            }
            Body6::InterRouter { router, metric } => {
                out.inter_area_router_lsas.push(Ospfv3InterAreaRouterLsa {
                    header: h,
                    metric: *metric,
                    destination_router_id: router.to_string(),
                });
            }
            Body6::External(e) => out.external_as_lsas.push(external(l, e)),
            Body6::Nssa(e) => {
                let x = external(l, e);
                out.nssa_lsas.push(Ospfv3NssaLsa {
                    header: x.header,
                    address_prefix: x.address_prefix,
                    prefix_length: x.prefix_length,
                    metric: x.metric,
                    forwarding_address: x.forwarding_address,
                    route_tag: x.route_tag,
                });
            }
            Body6::Link {
                link_local,
                prefixes,
            } => {
                let none = [IpNet::V6(Default::default())];
                let list = if prefixes.is_empty() {
                    &none[..]
                } else {
                    prefixes
                };
                for p in list {
                    let (address_prefix, prefix_length) = prefix(p);
                    out.link_lsas.push(Ospfv3LinkLsa {
                        header: h.clone(),
                        address_prefix,
                        prefix_length,
                        link_local_address: link_local.to_string(),
                    });
                }
            }
            Body6::IntraPrefix(prefixes) => {
                for (p, metric) in prefixes {
                    let (address_prefix, prefix_length) = prefix(p);
                    out.intra_area_prefix_lsas.push(Ospfv3IntraAreaPrefixLsa {
                        header: h.clone(),
                        address_prefix,
                        prefix_length,
                        metric: *metric,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use linerate_routing::frr::ospf6::Link6;

    use super::*;

    fn lsa(body: Body6, own: bool) -> Lsa6 {
        Lsa6 {
            header: LsaHeader {
                area: Some(Ipv4Addr::UNSPECIFIED),
                id: Ipv4Addr::new(0, 0, 0, 1),
                advertising_router: Ipv4Addr::new(7, 7, 7, 7),
                sequence: 0x8000_0001,
                age: 3,
                options: 0x13,
                own,
            },
            body,
        }
    }

    #[test]
    fn prefixes_are_eight_groups_and_a_prefix_an_entry() {
        assert_eq!(full("6:6:6::".parse().unwrap()), "6:6:6:0:0:0:0:0");
        let view = Ospf6View {
            neighbours: Vec::new(),
            lsas: vec![
                lsa(
                    Body6::InterPrefix {
                        prefix: "6:6:6::/64".parse().unwrap(),
                        metric: 9,
                    },
                    false,
                ),
                lsa(
                    Body6::InterPrefix {
                        prefix: "4:4:4::/64".parse().unwrap(),
                        metric: 10,
                    },
                    true,
                ),
                lsa(
                    Body6::IntraPrefix(vec![
                        ("::/64".parse().unwrap(), 19),
                        ("2001:db8::/64".parse().unwrap(), 1),
                    ]),
                    false,
                ),
                lsa(
                    Body6::Router(vec![Link6 {
                        kind: "point_to_point".into(),
                        metric: 19,
                        neighbour: Ipv4Addr::new(5, 5, 5, 5),
                    }]),
                    false,
                ),
            ],
        };
        let s = lsas("r", Some(&view));
        assert_eq!(s.inter_area_prefix_lsas.len(), 1);
        let p = &s.inter_area_prefix_lsas[0];
        assert_eq!(
            (p.address_prefix.as_str(), p.prefix_length, p.metric),
            ("6:6:6:0:0:0:0:0", 64, 9)
        );
        assert_eq!(s.intra_area_prefix_lsas.len(), 2);
        assert_eq!(
            s.intra_area_prefix_lsas[1].address_prefix,
            "2001:db8:0:0:0:0:0:0"
        );
        let r = &s.router_lsas[0];
        assert_eq!(r.neighbor_router_id, "5.5.5.5");
        assert_eq!(
            (r.links[0].kind.as_str(), r.links[0].metric),
            ("point_to_point", 19)
        );
    }
}
