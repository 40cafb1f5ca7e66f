//! The configurations written and the answers read, against what FRR 8.4's ospfd printed in
//! two namespaces over a veth pair (testdata/, captured by hand: router 1.1.1.1 with an
//! inter-area range 10.10.10.1/32 and an external type 1 range 30.30.1.0/24, its neighbour
//! 1.1.1.2 the same with 20.20.20.1/32 and 30.30.2.0/24).

use super::*;
use crate::{Block, Link, OspfInterface};

fn range(name: &str, first: &str, metric: u32, origin: OspfOrigin) -> OspfRange {
    OspfRange {
        name: name.into(),
        blocks: vec![Block {
            first: first.parse().unwrap(),
            count: 2,
            step: 1,
        }],
        metric,
        origin,
        advertised: true,
    }
}

fn device() -> (Device, Ospf) {
    let ospf = Ospf {
        name: "dtx_ospfv2".into(),
        router_id: "1.1.1.1".parse().unwrap(),
        lsa_refresh: 1800,
        retransmit: 5,
        interfaces: vec![OspfInterface {
            name: "dtx_ospfv2_int".into(),
            link: 0,
            area: Ipv4Addr::UNSPECIFIED,
            point_to_point: true,
            hello: 10,
            dead: 40,
            priority: 1,
            cost: 2,
            mtu_check: true,
            instance: 0,
            auth: Default::default(),
        }],
        routes: vec![
            range("inter", "10.10.10.1/32", 10, OspfOrigin::InterArea),
            range("ext", "30.30.1.0/24", 20, OspfOrigin::External1),
            range("intra", "40.0.0.0/24", 7, OspfOrigin::IntraArea),
            range("ext2", "50.0.0.0/24", 30, OspfOrigin::External2),
        ],
    };
    let device = Device {
        name: "dtx".into(),
        links: vec![Link {
            port: "p0".into(),
            mac: [2, 0, 0, 0, 0, 1],
            addrs: vec![("1.1.1.1".parse().unwrap(), 24)],
        }],
        bgp: None,
        isis: None,
        ospf: Some(ospf.clone()),
        ospf6: None,
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
fn the_config_puts_each_range_where_its_origin_says() {
    let (d, ospf) = device();
    let conf = ospfd_config(&d, &ospf);
    for line in [
        "interface eth0\n ip ospf area 0.0.0.0\n ip ospf network point-to-point\n ip ospf cost 2\n ip ospf hello-interval 10\n ip ospf dead-interval 40\n ip ospf retransmit-interval 5\nexit",
        // The inter-area range borders an area of its own, the intra-area one the link's.
        "interface rr0\n ip ospf area 0.0.0.1\n ip ospf cost 10\n ip ospf passive\nexit",
        "interface rr2\n ip ospf area 0.0.0.0\n ip ospf cost 7\n ip ospf passive\nexit",
        "route-map lr-ospf permit 20\n match tag 10002\n set metric 20\n set metric-type type-1\nexit",
        "route-map lr-ospf permit 40\n match tag 10004\n set metric 30\n set metric-type type-2\nexit",
        " ospf router-id 1.1.1.1\n",
        " refresh timer 1800\n",
        " redistribute static route-map lr-ospf\n",
    ] {
        assert!(conf.contains(line), "no {line:?} in\n{conf}");
    }
    assert!(!conf.contains("interface rr1"), "{conf}");
    assert!(!conf.contains("mtu-ignore"), "{conf}");
    // The route-maps come before the router that names them.
    assert!(conf.find("route-map").unwrap() < conf.find("router ospf").unwrap());
}

#[test]
fn only_external_ranges_are_static_routes() {
    let (_, mut ospf) = device();
    assert_eq!(
        static_routes(&ospf).unwrap(),
        "ip route 30.30.1.0/24 blackhole tag 10002\nip route 30.30.2.0/24 blackhole tag 10002\n\
         ip route 50.0.0.0/24 blackhole tag 10004\nip route 50.0.1.0/24 blackhole tag 10004\n"
    );
    ospf.routes[1].advertised = false;
    assert!(!static_routes(&ospf).unwrap().contains("30.30"));
}

#[test]
fn announcing_moves_a_link_or_static_routes() {
    let (_, ospf) = device();
    assert_eq!(
        announce(&ospf, "inter", false).unwrap(),
        Some(Change::Addresses(
            "address del 10.10.10.1/32 dev rr0\naddress del 10.10.10.2/32 dev rr0\n".into()
        ))
    );
    assert_eq!(
        announce(&ospf, "ext", false).unwrap(),
        Some(Change::Staticd(
            "no ip route 30.30.1.0/24 blackhole tag 10002\nno ip route 30.30.2.0/24 blackhole tag 10002\n"
                .into()
        ))
    );
    assert_eq!(announce(&ospf, "nosuch", true).unwrap(), None);
}

#[test]
fn the_range_area_avoids_the_interfaces_areas() {
    let (_, mut ospf) = device();
    assert_eq!(ospf.range_area(), Ipv4Addr::new(0, 0, 0, 1));
    ospf.interfaces[0].area = Ipv4Addr::new(0, 0, 0, 1);
    assert_eq!(ospf.range_area(), Ipv4Addr::UNSPECIFIED);
}

#[test]
fn validation_names_the_field() {
    let (mut d, _) = device();
    let o = d.ospf.as_mut().unwrap();
    o.routes[0].metric = 70_000;
    let e = d.validate().unwrap_err().to_string();
    assert!(e.contains("route range inter: metric 70000"), "{e}");
    let (mut d, _) = device();
    d.ospf.as_mut().unwrap().interfaces[0].dead = 10;
    let e = d.validate().unwrap_err().to_string();
    assert!(e.contains("dead_interval 10 s"), "{e}");
    let (mut d, _) = device();
    d.ospf.as_mut().unwrap().routes[0].blocks[0].first = "2001:db8::/64".parse().unwrap();
    let e = d.validate().unwrap_err().to_string();
    assert!(e.contains("it carries IPv4 prefixes only"), "{e}");
}

#[test]
fn neighbours_are_read_with_their_state() {
    let n = neighbours(&testdata("ospf_neighbor.json"));
    assert_eq!(
        n,
        vec![Neighbour {
            router_id: "1.1.1.2".parse().unwrap(),
            state: "Full".into(),
            interface: "ea".into(),
            changes: 5,
        }]
    );
    assert!(n[0].full());
}

#[test]
fn router_lsas_are_read_with_their_links() {
    let lsas = router_lsas(&testdata("ospf_router.json"));
    assert_eq!(lsas.len(), 3);
    let peer = lsas.iter().find(|l| !l.header.own).unwrap();
    assert_eq!(
        peer.header,
        LsaHeader {
            area: Some(Ipv4Addr::UNSPECIFIED),
            id: "1.1.1.2".parse().unwrap(),
            advertising_router: "1.1.1.2".parse().unwrap(),
            sequence: 0x8000_0003,
            age: 16,
            options: 0x02,
            own: false,
        }
    );
    assert_eq!(
        peer.links,
        vec![
            RouterLink {
                kind: LinkKind::PointToPoint,
                id: "1.1.1.1".parse().unwrap(),
                data: "1.1.1.2".parse().unwrap(),
                metric: 2,
            },
            RouterLink {
                kind: LinkKind::Stub,
                id: "1.1.1.0".parse().unwrap(),
                data: "255.255.255.0".parse().unwrap(),
                metric: 2,
            },
        ]
    );
    let own_area1 = lsas
        .iter()
        .find(|l| l.header.area == Some(Ipv4Addr::new(0, 0, 0, 1)))
        .unwrap();
    assert!(own_area1.header.own);
    assert_eq!(own_area1.links[0].id, Ipv4Addr::new(10, 10, 10, 1));
}

#[test]
fn summaries_and_externals_are_read() {
    let s = summary_lsas(&testdata("ospf_summary.json"), "summaryLinkStates");
    assert_eq!(s.len(), 4);
    let learned: Vec<_> = s.iter().filter(|l| !l.header.own).collect();
    assert_eq!(learned.len(), 1);
    assert_eq!(learned[0].header.id, Ipv4Addr::new(20, 20, 20, 1));
    assert_eq!((learned[0].prefix_len, learned[0].metric), (32, 10));
    let a = summary_lsas(&testdata("ospf_asbr_summary.json"), "asbrSummaryLinkStates");
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].header.id, Ipv4Addr::new(1, 1, 1, 2));
    let e = external_lsas(&testdata("ospf_external.json"));
    assert_eq!(e.len(), 2);
    let peer = e.iter().find(|l| !l.header.own).unwrap();
    assert_eq!(peer.header.id, Ipv4Addr::new(30, 30, 2, 0));
    assert_eq!(peer.header.area, None);
    assert_eq!(
        (peer.prefix_len, peer.metric, peer.type_2, peer.tag),
        (24, 20, false, 1)
    );
    assert!(network_lsas(&testdata("ospf_network.json")).is_empty());
}

#[test]
fn flaps_are_the_ups_not_still_up() {
    let log = "\
2026/12/03 12:41:35 OSPF: [ABCDE-FGHIJ] AdjChg: Nbr 1.1.1.2(default) on eth0: Loading -> Full (LoadingDone)
2026/12/03 12:41:50 OSPF: [ABCDE-FGHIJ] AdjChg: Nbr 1.1.1.2(default) on eth0: Full -> Deleted (KillNbr)
2026/12/03 12:41:55 OSPF: [ABCDE-FGHIJ] AdjChg: Nbr 1.1.1.2(default) on eth0: ExChange -> Full (ExchangeDone)
";
    assert_eq!(flaps(log, 1), 1);
    assert_eq!(flaps(log, 0), 2);
    assert_eq!(flaps("", 0), 0);
}

#[test]
fn authentication_is_written_per_interface_and_checked() {
    let (mut d, _) = device();
    let o = d.ospf.as_mut().unwrap();
    o.interfaces[0].auth = crate::OspfAuth::Md5(vec![(7, "s3cret".into())]);
    let conf = ospfd_config(&d, d.ospf.as_ref().unwrap());
    assert!(
        conf.contains(
            " ip ospf authentication message-digest\n ip ospf message-digest-key 7 md5 s3cret\n"
        ),
        "{conf}"
    );
    d.ospf.as_mut().unwrap().interfaces[0].auth = crate::OspfAuth::ClearText("otg".into());
    let conf = ospfd_config(&d, d.ospf.as_ref().unwrap());
    assert!(
        conf.contains(" ip ospf authentication\n ip ospf authentication-key otg\n"),
        "{conf}"
    );
    d.ospf.as_mut().unwrap().interfaces[0].auth = crate::OspfAuth::ClearText("nine char".into());
    let e = d.validate().unwrap_err().to_string();
    assert!(e.contains("1 to 8 printable characters"), "{e}");
}

/// Two routers on a broadcast link (1.1.1.2 the DR), as FRR 8.4's ospfd printed them.
#[test]
fn a_broadcast_link_gives_transit_links_and_the_drs_network_lsa() {
    let routers = router_lsas(&testdata("ospf_broadcast_router.json"));
    let peer = routers.iter().find(|l| !l.header.own).unwrap();
    assert_eq!(
        peer.links,
        vec![RouterLink {
            kind: LinkKind::Transit,
            id: "1.1.1.2".parse().unwrap(),
            data: "1.1.1.2".parse().unwrap(),
            metric: 10,
        }]
    );
    let nets = network_lsas(&testdata("ospf_broadcast_network.json"));
    assert_eq!(nets.len(), 1);
    assert_eq!(nets[0].header.advertising_router, Ipv4Addr::new(1, 1, 1, 2));
    assert_eq!(nets[0].prefix_len, 24);
    let mut attached = nets[0].routers.clone();
    attached.sort();
    assert_eq!(
        attached,
        [Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(1, 1, 1, 2)]
    );
}
