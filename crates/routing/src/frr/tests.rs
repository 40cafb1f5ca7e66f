use std::net::IpAddr;

use super::*;
use crate::{Bgp, Block, Device, Link, Peer};

fn device(peers: Vec<Peer>) -> Device {
    Device {
        name: "dtx".into(),
        links: vec![Link {
            port: "p0".into(),
            mac: [2, 0, 0, 0, 0, 1],
            addrs: vec![("1.1.1.1".parse().unwrap(), 24)],
        }],
        bgp: Some(Bgp {
            router_id: "1.1.1.1".parse().unwrap(),
            peers,
        }),
        isis: None,
        ospf: None,
        ospf6: None,
        lldp: None,
    }
}

fn peer(name: &str, address: &str, routes: Vec<RouteRange>) -> Peer {
    Peer {
        name: name.into(),
        address: address.parse().unwrap(),
        local_as: 1111,
        kind: PeerKind::Ebgp,
        keepalive: Some(1),
        hold: Some(3),
        md5: None,
        routes,
    }
}

fn range(name: &str, first: &str, count: u32) -> RouteRange {
    RouteRange {
        name: name.into(),
        blocks: vec![Block {
            first: first.parse().unwrap(),
            count,
            step: 1,
        }],
        advertised: true,
        ..RouteRange::default()
    }
}

#[test]
fn a_range_is_originated_prefix_by_prefix_with_its_attributes() {
    let mut r = range("rr", "10.10.10.0/24", 3);
    r.med = Some(50);
    r.origin = Some(Origin::Egp);
    r.communities = vec![(1, 2)];
    r.as_path = vec![1112, 1113];
    r.next_hop = Some("1.1.1.3".parse().unwrap());
    let conf = config(&device(vec![peer("p", "1.1.1.2", vec![r])])).unwrap();
    for line in [
        "router bgp 1111",
        " neighbor 1.1.1.2 remote-as external",
        " neighbor 1.1.1.2 timers 1 3",
        "  network 10.10.10.0/24 route-map lr-rr0",
        "  network 10.10.11.0/24 route-map lr-rr0",
        "  network 10.10.12.0/24 route-map lr-rr0",
        "route-map lr-rr0 permit 10",
        " set metric 50",
        " set origin egp",
        " set community 1:2",
        " set as-path prepend 1112 1113",
        " set tag 1",
        " match tag 1",
        " set ip next-hop 1.1.1.3",
        "route-map lr-out0-6 deny 10",
    ] {
        assert!(
            conf.lines().any(|l| l == line),
            "{line:?} missing from\n{conf}"
        );
    }
    assert!(!conf.contains("10.10.13.0"), "{conf}");
    // The peer gets what the device originates, and nothing it learned.
    assert!(
        conf.contains("  neighbor 1.1.1.2 route-map lr-out0-4 out\n"),
        "{conf}"
    );
    // Route-maps come before the `router bgp` that names them.
    assert!(conf.find("route-map lr-rr0").unwrap() < conf.find("router bgp").unwrap());
    // A path with the device's own AS in it is learned, in both families.
    assert_eq!(
        conf.matches("  neighbor 1.1.1.2 allowas-in 10\n").count(),
        2,
        "{conf}"
    );
}

#[test]
fn with_several_peers_each_sends_only_its_own_ranges() {
    let conf = config(&device(vec![
        peer("a", "1.1.1.2", vec![range("ra", "10.0.0.0/24", 1)]),
        peer("b", "1.1.1.3", vec![range("rb", "2001:db8::/64", 1)]),
    ]))
    .unwrap();
    for line in [
        "route-map lr-out0-4 permit 10",
        "route-map lr-out0-6 deny 10",
        "route-map lr-out1-4 deny 10",
        "route-map lr-out1-6 permit 10",
        " match tag 2",
        "  neighbor 1.1.1.3 route-map lr-out1-6 out",
        "  network 2001:db8::/64 route-map lr-rr1",
    ] {
        assert!(
            conf.lines().any(|l| l == line),
            "{line:?} missing from\n{conf}"
        );
    }
}

#[test]
fn a_withdraw_names_every_prefix_of_the_range_and_nothing_else() {
    let d = device(vec![peer(
        "p",
        "1.1.1.2",
        vec![
            range("keep", "10.0.0.0/24", 1),
            range("go", "20.0.0.0/31", 2),
        ],
    )]);
    let text = announce(&d, "go", false).unwrap().unwrap();
    assert!(
        text.contains("  no network 20.0.0.0/31 route-map lr-rr1\n"),
        "{text}"
    );
    assert!(
        text.contains("  no network 20.0.0.2/31 route-map lr-rr1\n"),
        "{text}"
    );
    assert!(!text.contains("10.0.0.0"), "{text}");
    assert!(announce(&d, "nothing", false).unwrap().is_none());
}

#[test]
fn blocks_step_in_units_of_their_prefix_and_stop_at_the_address_space() {
    let b = Block {
        first: "10.0.0.0/24".parse().unwrap(),
        count: 3,
        step: 2,
    };
    let got: Vec<String> = b
        .prefixes()
        .unwrap()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(got, ["10.0.0.0/24", "10.0.2.0/24", "10.0.4.0/24"]);
    let past = Block {
        first: "255.255.255.0/24".parse().unwrap(),
        count: 2,
        step: 1,
    };
    assert!(
        past.prefixes()
            .unwrap_err()
            .to_string()
            .contains("past the address space")
    );
    let v6 = Block {
        first: "::20:20:20:1/128".parse().unwrap(),
        count: 2,
        step: 1,
    };
    let got: Vec<String> = v6
        .prefixes()
        .unwrap()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(got, ["::20:20:20:1/128", "::20:20:20:2/128"]);
}

#[test]
fn a_device_is_refused_for_an_as_of_zero_or_a_peer_off_its_subnets() {
    let mut p = peer("p", "1.1.1.2", Vec::new());
    p.local_as = 0;
    let e = device(vec![p]).validate().unwrap_err().to_string();
    assert!(e.contains("as_number 0"), "{e}");
    let e = device(vec![peer("p", "9.9.9.9", Vec::new())])
        .validate()
        .unwrap_err()
        .to_string();
    assert!(e.contains("none of the device's subnets"), "{e}");
    device(vec![peer("p", "1.1.1.2", Vec::new())])
        .validate()
        .unwrap();
}

#[test]
fn sessions_and_learned_prefixes_are_read_from_frr_json() {
    let neighbors: serde_json::Value = serde_json::from_str(
        r#"{"1.1.1.2":{"bgpState":"Established","connectionsDropped":1,
            "messageStats":{"opensSent":2,"opensRecv":2,"updatesSent":3,"updatesRecv":4,
            "keepalivesSent":5,"keepalivesRecv":6,"notificationsSent":0,"notificationsRecv":1},
            "addressFamilyInfo":{"ipv4Unicast":{"sentPrefixCounter":1,"acceptedPrefixCounter":2},
            "ipv6Unicast":{"sentPrefixCounter":1,"acceptedPrefixCounter":1}}}}"#,
    )
    .unwrap();
    let s = &sessions(&neighbors)[0];
    assert_eq!(
        (
            s.state.as_str(),
            s.flaps,
            s.advertised,
            s.received,
            s.updates_received
        ),
        ("Established", 1, 2, 3, 4)
    );
    let routes: serde_json::Value = serde_json::from_str(
        r#"{"routes":{"20.20.20.1/32":[{"origin":"EGP","metric":50,
            "aspath":{"string":"1112 1112 1113"},"community":{"string":"1:2"},
            "nexthops":[{"ip":"1.1.1.4"}],"peer":{"peerId":"1.1.1.2"}}],
            "10.0.0.0/24":[{"origin":"IGP","nexthops":[{"ip":"0.0.0.0"}],"peer":{"peerId":"(unspec)"}}]}}"#,
    )
    .unwrap();
    let l = learned(&routes, "1.1.1.2".parse::<IpAddr>().unwrap());
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].prefix.to_string(), "20.20.20.1/32");
    assert_eq!(l[0].next_hop, Some("1.1.1.4".parse().unwrap()));
    assert_eq!(l[0].origin, Some(Origin::Egp));
    assert_eq!(l[0].med, Some(50));
    assert_eq!(l[0].as_path, [1112, 1112, 1113]);
    assert_eq!(l[0].communities, [(1, 2)]);
}
