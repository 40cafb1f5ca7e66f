//! The configurations written and the answers read, against what FRR 8.4's isisd printed in
//! two namespaces over a veth pair (testdata/, captured by hand).

use super::*;
use crate::{Circuit, Hellos, Link};

fn device() -> (Device, Isis) {
    let isis = Isis {
        name: "dtx_isis".into(),
        system_id: [0x64, 0, 0, 0, 0, 1],
        areas: vec![vec![0x49, 0, 1]],
        hostname: Some("dtx host".into()),
        te_router_id: Some("1.1.1.1".parse().unwrap()),
        wide_metrics: true,
        attached_bit: false,
        lsp_refresh: 900,
        lsp_lifetime: 1200,
        csnp_interval: None,
        psnp_interval: Some(2),
        lsp_mtu: None,
        hello_padding: true,
        circuits: vec![Circuit {
            name: "dtx_isis_int".into(),
            link: 0,
            metric: 10,
            point_to_point: true,
            level: Level::L12,
            hellos: [Hellos {
                interval: 10,
                dead: 25,
                priority: 0,
            }; 2],
        }],
        routes: vec![
            IsisRange {
                name: "rr4".into(),
                blocks: vec![crate::Block {
                    first: "10.10.10.1/32".parse().unwrap(),
                    count: 2,
                    step: 1,
                }],
                metric: 20,
                advertised: true,
            },
            IsisRange {
                name: "rr6".into(),
                blocks: vec![crate::Block {
                    first: "2001:db8::/64".parse().unwrap(),
                    count: 1,
                    step: 1,
                }],
                metric: 0,
                advertised: false,
            },
        ],
    };
    let device = Device {
        name: "dtx".into(),
        links: vec![Link {
            port: "p0".into(),
            mac: [2, 0, 0, 0, 0, 1],
            addrs: vec![
                ("1.1.1.1".parse().unwrap(), 24),
                ("1100::1".parse().unwrap(), 64),
            ],
        }],
        bgp: None,
        isis: Some(isis.clone()),
        ospf: None,
        ospf6: None,
        lldp: None,
    };
    (device, isis)
}

#[test]
fn isisd_config_names_the_net_the_circuit_and_a_metric_per_range() {
    let (d, isis) = device();
    let conf = isisd_config(&d, &isis);
    for line in [
        "hostname dtx_host",
        "route-map lr-isis permit 10\n match tag 1\n set metric 20\nexit",
        "route-map lr-isis permit 20\n match tag 2\n set metric 0\nexit",
        "interface eth0\n ip router isis lr\n ipv6 router isis lr\n isis circuit-type level-1-2\n isis network point-to-point\n isis metric 10",
        " isis hello-interval 10 level-1\n isis hello-multiplier 3 level-1",
        " isis hello-interval 10 level-2\n isis hello-multiplier 3 level-2",
        " isis psnp-interval 2",
        // The timers before the net that starts the instance (its first LSP schedules the
        // next by the interval in force then).
        "router isis lr\n lsp-timers gen-interval 1 refresh-interval 900 max-lifetime 1200\n spf-interval 1\n net 49.0001.6400.0000.0001.00\n is-type level-1-2\n metric-style wide",
        " no attached-bit send",
        " redistribute ipv4 static level-1 route-map lr-isis",
        " redistribute ipv6 static level-2 route-map lr-isis",
    ] {
        assert!(conf.contains(line), "{line:?} missing from\n{conf}");
    }
    // A point-to-point circuit elects no DIS.
    assert!(!conf.contains("isis priority"), "{conf}");
    // The route-maps come before the router that names them.
    assert!(conf.find("route-map").unwrap() < conf.find("router isis").unwrap());
}

#[test]
fn staticd_originates_the_advertised_ranges_and_announce_toggles_one() {
    let (d, isis) = device();
    let conf = static_routes(&isis).unwrap();
    assert!(
        conf.contains(
            "ip route 10.10.10.1/32 blackhole tag 1\nip route 10.10.10.2/32 blackhole tag 1\n"
        ),
        "{conf}"
    );
    assert!(
        !conf.contains("2001:db8::/64"),
        "a withdrawn range is not originated:\n{conf}"
    );
    let on = announce(&isis, "rr6", true).unwrap().unwrap();
    assert_eq!(on, "ipv6 route 2001:db8::/64 blackhole tag 2\n");
    let off = announce(&isis, "rr4", false).unwrap().unwrap();
    assert!(
        off.contains("no ip route 10.10.10.2/32 blackhole tag 1\n"),
        "{off}"
    );
    assert_eq!(announce(&isis, "nosuch", true).unwrap(), None);
    assert_eq!(
        zebra_config(&d, &isis),
        "frr defaults traditional\nhostname dtx\n!\nip router-id 1.1.1.1\n"
    );
}

#[test]
fn area_and_system_ids_are_written_and_read_as_frr_does() {
    assert_eq!(area(&[0x49, 0, 1]), "49.0001");
    assert_eq!(area(&[0x49]), "49");
    assert_eq!(area(&[0x47, 0, 5, 0x80]), "47.0005.80");
    assert_eq!(system_id(&[0x64, 0, 0, 0, 0, 1]), "6400.0000.0001");
    assert_eq!(
        parse_system_id("6400.0000.0002"),
        Some([0x64, 0, 0, 0, 0, 2])
    );
    assert_eq!(parse_system_id("650000000001"), Some([0x65, 0, 0, 0, 0, 1]));
    assert_eq!(parse_system_id("6400.0000"), None);
}

#[test]
fn the_daemons_answers_are_read() {
    let json: Value = serde_json::from_str(include_str!("../testdata/isis_neighbor.json")).unwrap();
    let adj = adjacencies(&json);
    assert_eq!(adj.len(), 1, "{adj:?}");
    assert_eq!(adj[0].neighbour, "devb");
    assert_eq!(adj[0].interface, "isxa0");
    assert_eq!(adj[0].levels, 3);
    assert!(adj[0].up);
    assert_eq!(adj[0].flaps, 2);

    let json: Value = serde_json::from_str(include_str!("../testdata/isis_summary.json")).unwrap();
    let pdus = pdus(&json);
    let (sent, received) = pdus.of("p2p-iih");
    assert!(sent > 100 && received > 100, "{pdus:?}");
    assert_eq!(pdus.of("l1-lsp"), (2, 2));

    let names = hostnames(include_str!("../testdata/isis_hostname.txt"));
    assert_eq!(
        names,
        vec![
            ("devb".to_owned(), [0x64, 0, 0, 0, 0, 2]),
            ("deva".to_owned(), [0x64, 0, 0, 0, 0, 1])
        ]
    );
    let lsps = database(include_str!("../testdata/isis_database.txt"), &names);
    assert_eq!(lsps.len(), 4, "{lsps:#?}");
    let theirs: Vec<&Lsp> = lsps.iter().filter(|l| !l.own).collect();
    assert_eq!(theirs.len(), 2);
    assert_eq!(theirs.iter().map(|l| l.level).collect::<Vec<_>>(), [1, 2]);
    let b = theirs[0];
    assert_eq!(b.system_id, [0x64, 0, 0, 0, 0, 2]);
    assert_eq!((b.pseudonode, b.fragment), (0, 0));
    assert_eq!(b.hostname.as_deref(), Some("devb"));
    assert_eq!(b.pdu_length, 121);
    assert_eq!(b.sequence, 2);
    assert!(b.attached && !b.partition && !b.overload);
    assert_eq!(b.neighbours, [[0x64, 0, 0, 0, 0, 1]]);
    assert_eq!(
        b.prefixes,
        [
            ("1.1.1.0/24".parse().unwrap(), 10),
            ("10.10.12.0/24".parse().unwrap(), 10),
            ("1100::/64".parse().unwrap(), 10),
            ("2001:db8:2::/48".parse().unwrap(), 10),
        ]
    );
}
