use std::net::Ipv4Addr;

use linerate_routing::OspfOrigin;
use serde_json::{Value, json};

use super::bgp_tests::{body, map, refused_at};
use crate::requests::{MetricsAsk, StatesAsk};

/// The OTG project's b2b OSPFv3 test's devices (conformance feature/b2b/ospfv3), as snappi
/// 1.60.0 writes them, and a flow between the two ranges.
fn b2b() -> Value {
    let device = |n: u8, me: &str, peer: &str, id: &str, route: &str| {
        json!({
            "name": format!("d{n}"),
            "ethernets": [{"connection": {"choice": "port_name", "port_name": format!("p{n}")},
                "ipv6_addresses": [{"address": me, "gateway": peer, "name": format!("ip{n}"), "prefix": 64}],
                "mac": format!("00:00:01:01:01:0{n}"), "mtu": 1500, "name": format!("e{n}")}],
            "ospfv3": {"instances": [{"inter_burst_lsu_interval": 1000,
                "interfaces": [{"advanced": {"dead_interval": 40, "hello_interval": 10,
                    "link_metric": 20, "validate_received_mtu": true}, "instance_id": 0,
                    "ipv6_name": format!("ip{n}"), "name": format!("i{n}"),
                    "network_type": {"choice": "point_to_point"}}],
                "lsa_refresh_time": 1800, "lsa_retransmit_time": 5, "name": format!("ospf{n}"),
                "store_lsa": true,
                "v6_routes": [{"addresses": [{"address": route, "count": 1, "prefix": 64, "step": 1}],
                    "metric": 10, "name": format!("rr{n}")}]}],
                "router_id": {"choice": "custom", "custom": id}}
        })
    };
    let flow = json!({"name": "f", "tx_rx": {"choice": "device", "device":
            {"tx_names": ["rr1"], "rx_names": ["rr2"]}},
        "packet": [{"choice": "ethernet", "ethernet": {}}, {"choice": "ipv6", "ipv6": {}},
            {"choice": "tcp", "tcp": {}}]});
    json!({
        "ports": [{"name": "p1", "location": "lr0"}, {"name": "p2", "location": "lr1@lr-sink"}],
        "devices": [
            device(1, "::1:1:1:1", "::1:1:1:2", "5.5.5.5", "4:4:4:0:0:0:0:1"),
            device(2, "::1:1:1:2", "::1:1:1:1", "7.7.7.7", "6:6:6:0:0:0:0:1")
        ],
        "flows": [flow]
    })
}

#[test]
fn the_b2b_tests_devices_are_ospf6_routers_whose_ranges_are_flow_ends() {
    let m = map(&b2b()).unwrap();
    assert_eq!(m.routers.len(), 2);
    let d = &m.routers[0];
    assert!(d.ospf.is_none());
    let o = d.ospf6.as_ref().unwrap();
    assert_eq!(o.name, "ospf1");
    assert_eq!(o.router_id, Ipv4Addr::new(5, 5, 5, 5));
    let i = &o.interfaces[0];
    assert!(i.point_to_point);
    assert_eq!((i.cost, i.hello, i.dead, i.instance), (20, 10, 40, 0));
    assert_eq!(
        (o.routes[0].metric, o.routes[0].origin),
        (10, OspfOrigin::InterArea)
    );
    assert_eq!(o.routes[0].prefixes().unwrap()[0].to_string(), "4:4:4::/64");
    assert_eq!(
        m.ranges.iter().find(|r| r.name == "rr1").unwrap().host,
        "ip1"
    );
    let (_, groups) = m
        .routed_hosts()
        .into_iter()
        .find(|(h, _)| h == "ip1")
        .unwrap();
    assert_eq!(groups, linerate_routing::OSPF6_GROUPS.to_vec());
    let ask = |v: Value| crate::requests::metrics(&body(v), &m);
    assert_eq!(
        ask(json!({"choice": "ospfv3", "ospfv3": {}})),
        Ok(MetricsAsk::Ospfv3(vec![]))
    );
    let states = |v: Value| crate::requests::states(&body(v), &m);
    assert!(
        states(json!({"choice": "ospfv3_lsas", "ospfv3_lsas": {"router_names": ["x"]}}))
            .unwrap_err()
            .contains("ospfv3_lsas.router_names[0]: no OSPFv3 router is named 'x'")
    );
    assert_eq!(
        states(json!({"choice": "ospfv3_lsas", "ospfv3_lsas": {"router_names": ["ospf2"]}})),
        Ok(StatesAsk::Ospfv3Lsas(vec!["ospf2".into()]))
    );
}

#[test]
fn what_ospf6d_cannot_do_is_refused_by_path() {
    let mut c = b2b();
    let i = &mut c["devices"][0]["ospfv3"];
    i["router_id"] = json!({"choice": "auto"});
    assert!(
        refused_at(&c, "devices[0].ospfv3.router_id.choice")
            .contains("first IPv4 address, and it has none")
    );
    let mut c = b2b();
    let inst = c["devices"][0]["ospfv3"]["instances"][0].clone();
    c["devices"][0]["ospfv3"]["instances"]
        .as_array_mut()
        .unwrap()
        .push(inst);
    assert!(refused_at(&c, "devices[0].ospfv3.instances[1]").contains("one OSPFv3 instance"));
    let mut c = b2b();
    c["devices"][0]["ospfv3"]["instances"][0]["v6_routes"][0]["route_origin"] =
        json!({"choice": "nssa_external"});
    assert!(
        refused_at(
            &c,
            "devices[0].ospfv3.instances[0].v6_routes[0].route_origin.choice"
        )
        .contains("NSSA")
    );
    let mut c = b2b();
    c["devices"][0]["ospfv3"]["instances"][0]["interfaces"][0]["options"] = json!({"n_bit": true});
    assert!(
        refused_at(
            &c,
            "devices[0].ospfv3.instances[0].interfaces[0].options.n_bit"
        )
        .contains("only the default, false")
    );
    let mut c = b2b();
    c["devices"][0]["ospfv3"]["instances"][0]["v6_routes"][0]["addresses"][0]["address"] =
        json!("10.0.0.1");
    let got = refused_at(
        &c,
        "devices[0].ospfv3.instances[0].v6_routes[0].addresses[0]",
    );
    assert!(!got.is_empty(), "{got}");
}
