//! The configuration written and the answers read, against what FRR 8.4's ospf6d printed in two
//! namespaces over a veth pair (testdata/, captured by hand: router 5.5.5.5 with an inter-area
//! range 4:4:4::/64 of metric 10 and an external type 1 range 8:8:1::/64, its neighbour
//! 7.7.7.7 the same with 6:6:6::/64 of metric 9 and 8:8:2::/64, link costs 20 and 19).

use super::*;
use crate::{Block, Link, OspfInterface, OspfOrigin, OspfRange};

fn device() -> (Device, Ospf) {
    let range = |name: &str, first: &str, metric, origin| OspfRange {
        name: name.into(),
        blocks: vec![Block {
            first: first.parse().unwrap(),
            count: 1,
            step: 1,
        }],
        metric,
        origin,
        advertised: true,
    };
    let ospf = Ospf {
        name: "dtx_ospfv3".into(),
        router_id: "5.5.5.5".parse().unwrap(),
        lsa_refresh: 1800,
        retransmit: 5,
        interfaces: vec![OspfInterface {
            name: "dtx_ospfv3_int".into(),
            link: 0,
            area: Ipv4Addr::UNSPECIFIED,
            point_to_point: true,
            hello: 10,
            dead: 40,
            priority: 0,
            cost: 20,
            mtu_check: true,
            instance: 0,
            auth: Default::default(),
        }],
        routes: vec![
            range("rr6", "4:4:4::1/64", 10, OspfOrigin::InterArea),
            range("ext", "8:8:1::/64", 30, OspfOrigin::External1),
        ],
    };
    let device = Device {
        name: "dtx".into(),
        links: vec![Link {
            port: "p0".into(),
            mac: [0, 0, 1, 1, 1, 1],
            addrs: vec![("::1:1:1:1".parse().unwrap(), 64)],
        }],
        bgp: None,
        isis: None,
        ospf: None,
        ospf6: Some(ospf.clone()),
        lldp: None,
    };
    device.validate().unwrap();
    (device, ospf)
}

fn testdata(name: &str) -> Value {
    let path = format!("{}/src/frr/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_config_is_ospf6ds_with_each_range_where_its_origin_says() {
    let (d, ospf) = device();
    let conf = ospf6d_config(&d, &ospf);
    for line in [
        "interface eth0\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 network point-to-point\n ipv6 ospf6 cost 20\n",
        "interface r6r0\n ipv6 ospf6 area 0.0.0.1\n ipv6 ospf6 cost 10\n ipv6 ospf6 passive\nexit",
        "route-map lr-ospf6 permit 20\n match tag 20002\n set metric 30\n set metric-type type-1\nexit",
        " ospf6 router-id 5.5.5.5\n",
        " redistribute static route-map lr-ospf6\n",
    ] {
        assert!(conf.contains(line), "no {line:?} in\n{conf}");
    }
    assert!(!conf.contains("instance-id"), "{conf}");
    assert_eq!(
        static_routes(&ospf).unwrap(),
        "ipv6 route 8:8:1::/64 blackhole tag 20002\n"
    );
    assert_eq!(
        announce(&ospf, "rr6", false).unwrap(),
        Some(Change::Addresses(
            "address del 4:4:4::/64 dev r6r0\n".into()
        ))
    );
}

#[test]
fn a_v3_range_of_ipv4_prefixes_is_refused() {
    let (mut d, _) = device();
    d.ospf6.as_mut().unwrap().routes[0].blocks[0].first = "10.0.0.0/24".parse().unwrap();
    let e = d.validate().unwrap_err().to_string();
    assert!(
        e.contains("ospfv3 route range rr6: it carries IPv6 prefixes only"),
        "{e}"
    );
}

#[test]
fn neighbours_are_read() {
    assert_eq!(
        neighbours(&testdata("ospf6_neighbor.json")),
        vec![Neighbour {
            router_id: "7.7.7.7".parse().unwrap(),
            state: "Full".into(),
            interface: "ea".into(),
            changes: 0,
        }]
    );
}

#[test]
fn the_database_is_read_with_every_scope() {
    let db = database(&testdata("ospf6_database.json"), "5.5.5.5".parse().unwrap());
    let learned: Vec<&Lsa6> = db.iter().filter(|l| !l.header.own).collect();
    let peer: Ipv4Addr = "7.7.7.7".parse().unwrap();
    assert!(learned.iter().all(|l| l.header.advertising_router == peer));
    let router = learned
        .iter()
        .find(|l| matches!(l.body, Body6::Router(_)))
        .unwrap();
    assert_eq!(
        router.body,
        Body6::Router(vec![Link6 {
            kind: "point_to_point".into(),
            metric: 19,
            neighbour: "5.5.5.5".parse().unwrap(),
        }])
    );
    assert_eq!(router.header.options, 0x13, "V6, E and R");
    assert_eq!(router.header.sequence, 0x8000_0002);
    assert!(learned.iter().any(|l| l.body
        == Body6::InterPrefix {
            prefix: "6:6:6::/64".parse().unwrap(),
            metric: 9
        }));
    let link = learned
        .iter()
        .find(|l| matches!(l.body, Body6::Link { .. }))
        .unwrap();
    assert_eq!(
        link.body,
        Body6::Link {
            link_local: "fe80::200:1ff:fe01:102".parse().unwrap(),
            prefixes: vec!["::/64".parse().unwrap()],
        }
    );
    assert_eq!(link.header.area, Some(Ipv4Addr::UNSPECIFIED));
    assert!(
        learned
            .iter()
            .any(|l| l.body == Body6::IntraPrefix(vec![("::/64".parse().unwrap(), 19)]))
    );
    let external = learned
        .iter()
        .find_map(|l| match &l.body {
            Body6::External(e) => Some(e),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        *external,
        External6 {
            prefix: "8:8:2::/64".parse().unwrap(),
            metric: 30,
            type_2: false,
            forwarding: None,
            tag: Some(1),
        }
    );
    // Router, inter-area prefix, intra-area prefix, link and external: five from the peer.
    assert_eq!(learned.len(), 5, "{learned:#?}");
}

/// Two OSPFv3 routers on a broadcast link (1.1.1.2 the DR), as FRR 8.4's ospf6d printed them.
#[test]
fn a_broadcast_link_gives_transit_links_and_the_drs_network_lsa() {
    let db = database(
        &testdata("ospf6_broadcast_database.json"),
        "1.1.1.1".parse().unwrap(),
    );
    let dr: Ipv4Addr = "1.1.1.2".parse().unwrap();
    assert!(db.iter().any(|l| !l.header.own
        && l.body
            == Body6::Router(vec![Link6 {
                kind: "transit".into(),
                metric: 10,
                neighbour: dr,
            }])));
    let net = db
        .iter()
        .find_map(|l| match &l.body {
            Body6::Network(r) => Some((l, r)),
            _ => None,
        })
        .unwrap();
    assert_eq!(net.0.header.advertising_router, dr);
    assert_eq!(net.1, &vec![dr, Ipv4Addr::new(1, 1, 1, 1)]);
}
