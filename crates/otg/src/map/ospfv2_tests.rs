use std::net::Ipv4Addr;

use linerate_routing::OspfOrigin;
use serde_json::{Value, json};

use super::bgp_tests::{body, map, refused_at};
use crate::requests::{MetricsAsk, StatesAsk};

/// The OTG project's b2b OSPFv2 test's devices (conformance feature/b2b/ospfv2), as snappi
/// 1.60.0 writes them: every default of every object the test made, and a flow between the
/// two ranges.
fn b2b() -> Value {
    let device = |n: u8, me: &str, peer: &str, route: &str| {
        json!({
            "name": format!("d{n}"),
            "ethernets": [{
                "name": format!("e{n}"),
                "connection": {"choice": "port_name", "port_name": format!("p{n}")},
                "mac": format!("00:00:01:01:01:0{n}"),
                "mtu": 1500,
                "ipv4_addresses": [{"name": format!("ip{n}"), "address": me, "gateway": peer, "prefix": 24}]
            }],
            "ospfv2": {
                "name": format!("ospf{n}"),
                "inter_burst_lsu_interval": 33, "lsa_refresh_time": 1800,
                "lsa_retransmit_time": 5, "max_flood_lsu_per_burst": 1, "store_lsa": true,
                "interfaces": [{"name": format!("i{n}"), "ipv4_name": format!("ip{n}"),
                    "advanced": {"dead_interval": 40, "hello_interval": 10, "priority": 0,
                        "routing_metric": 2, "validate_received_mtu": true},
                    "network_type": {"choice": "point_to_point"}}],
                "v4_routes": [{"name": format!("rr{n}"), "metric": 10,
                    "addresses": [{"address": route, "prefix": 32, "count": 3, "step": 1}]}]
            }
        })
    };
    let flow = json!({"name": "f", "tx_rx": {"choice": "device", "device":
            {"tx_names": ["rr1"], "rx_names": ["rr2"]}},
        "packet": [{"choice": "ethernet", "ethernet": {}}, {"choice": "ipv4", "ipv4": {}},
            {"choice": "tcp", "tcp": {}}]});
    json!({
        "ports": [{"name": "p1", "location": "lr0"}, {"name": "p2", "location": "lr1@lr-sink"}],
        "devices": [
            device(1, "1.1.1.1", "1.1.1.2", "10.10.10.1"),
            device(2, "1.1.1.2", "1.1.1.1", "20.20.20.1")
        ],
        "flows": [flow]
    })
}

#[test]
fn the_b2b_tests_devices_are_ospf_routers_whose_ranges_are_flow_ends() {
    let m = map(&b2b()).unwrap();
    assert_eq!(m.routers.len(), 2);
    let d = &m.routers[0];
    assert!(d.bgp.is_none() && d.isis.is_none());
    let o = d.ospf.as_ref().unwrap();
    assert_eq!(o.name, "ospf1");
    // The router id defaults to the interface's address.
    assert_eq!(o.router_id, Ipv4Addr::new(1, 1, 1, 1));
    assert_eq!((o.lsa_refresh, o.retransmit), (1800, 5));
    let i = &o.interfaces[0];
    assert!(i.point_to_point && i.mtu_check);
    assert_eq!(
        (i.area, i.cost, i.hello, i.dead),
        (Ipv4Addr::UNSPECIFIED, 2, 10, 40)
    );
    assert_eq!(d.links[i.link].mac, [0, 0, 1, 1, 1, 1]);
    let r = &o.routes[0];
    assert_eq!((r.metric, r.origin), (10, OspfOrigin::InterArea));
    assert_eq!(r.prefixes().unwrap().len(), 3);
    let end = m.ranges.iter().find(|r| r.name == "rr1").unwrap();
    assert_eq!(end.host, "ip1");
    assert_eq!(end.first.to_string(), "10.10.10.1");
    // The port passes OSPF's group MACs to the device's stack.
    let (_, groups) = m
        .routed_hosts()
        .into_iter()
        .find(|(h, _)| h == "ip1")
        .unwrap();
    assert_eq!(groups, linerate_routing::OSPF_GROUPS.to_vec());
}

#[test]
fn areas_origins_and_a_custom_router_id_are_mapped() {
    let mut c = b2b();
    let o = &mut c["devices"][0]["ospfv2"];
    o["router_id"] = json!({"choice": "custom", "custom": "9.9.9.9"});
    o["interfaces"][0]["area"] = json!({"choice": "ip", "ip": "0.0.0.7"});
    o["interfaces"][0]["network_type"] = json!({"choice": "broadcast"});
    o["v4_routes"][0]["route_origin"] = json!({"choice": "external_type_2",
        "external_type_2": {"flags": {"a_flag": false, "n_flag": false}}});
    let c2 = &mut c["devices"][1]["ospfv2"];
    c2["interfaces"][0]["area"] = json!({"choice": "id", "id": 7});
    let m = map(&c).unwrap();
    let o = m.routers[0].ospf.as_ref().unwrap();
    assert_eq!(o.router_id, Ipv4Addr::new(9, 9, 9, 9));
    assert_eq!(o.interfaces[0].area, Ipv4Addr::new(0, 0, 0, 7));
    assert!(!o.interfaces[0].point_to_point);
    assert_eq!(o.routes[0].origin, OspfOrigin::External2);
    let o2 = m.routers[1].ospf.as_ref().unwrap();
    assert_eq!(o2.interfaces[0].area, Ipv4Addr::new(0, 0, 0, 7));
}

#[test]
fn what_ospfd_cannot_do_is_refused_by_path() {
    let cases: [(&str, Value, &str, &str); 7] = [
        (
            "/v4_routes/0/route_origin",
            json!({"choice": "nssa_external"}),
            "devices[0].ospfv2.v4_routes[0].route_origin.choice",
            "NSSA",
        ),
        (
            "/interfaces/0/network_type",
            json!({"choice": "point_to_multipoint"}),
            "devices[0].ospfv2.interfaces[0].network_type.choice",
            "point_to_point",
        ),
        (
            "/interfaces/0/advanced/routing_metric",
            json!(0),
            "devices[0].ospfv2.interfaces[0].advanced.routing_metric",
            "1 to 65535",
        ),
        (
            "/max_flood_lsu_per_burst",
            json!(4),
            "devices[0].ospfv2.max_flood_lsu_per_burst",
            "only the default",
        ),
        (
            "/interfaces/0/ipv4_name",
            json!("nosuch"),
            "devices[0].ospfv2.interfaces[0].ipv4_name",
            "no IPv4 address is named 'nosuch'",
        ),
        (
            "/v4_routes/0/metric",
            json!(0),
            "devices[0].ospfv2",
            "an intra- or inter-area range's metric is 1 to 65535",
        ),
        (
            "/v4_routes/0/addresses/0/address",
            json!("255.255.255.255"),
            "devices[0].ospfv2",
            "run past the address space",
        ),
    ];
    for (pointer, value, path, why) in cases {
        let mut c = b2b();
        *c.pointer_mut(&format!("/devices/0/ospfv2{}", parent(pointer)))
            .unwrap()
            .as_object_mut()
            .unwrap()
            .entry(last(pointer))
            .or_insert(Value::Null) = value;
        let got = refused_at(&c, path);
        assert!(got.contains(why), "{path}: {got}");
    }
    let mut c = b2b();
    c["devices"][0]["ospfv2"]["capabilities"] = json!({"o_bit": true});
    assert!(refused_at(&c, "devices[0].ospfv2.capabilities.o_bit").contains("only false"));
}

fn parent(pointer: &str) -> &str {
    pointer.rsplit_once('/').map_or("", |(p, _)| p)
}

fn last(pointer: &str) -> String {
    pointer.rsplit('/').next().unwrap_or_default().to_owned()
}

#[test]
fn ospfv2_metrics_and_lsas_name_routers_that_are_there() {
    let m = map(&b2b()).unwrap();
    let ask = |v: Value| crate::requests::metrics(&body(v), &m);
    assert_eq!(
        ask(json!({"choice": "ospfv2", "ospfv2": {"router_names": ["ospf2"]}})),
        Ok(MetricsAsk::Ospfv2(vec!["ospf2".into()]))
    );
    assert!(
        ask(json!({"choice": "ospfv2", "ospfv2": {"router_names": ["nosuch"]}}))
            .unwrap_err()
            .contains("ospfv2.router_names[0]: no OSPFv2 router is named 'nosuch'")
    );
    let states = |v: Value| crate::requests::states(&body(v), &m);
    assert_eq!(
        states(json!({"choice": "ospfv2_lsas", "ospfv2_lsas": {}})),
        Ok(StatesAsk::Ospfv2Lsas(vec![]))
    );
}
