use serde_json::{Value, json};

use super::bgp_tests::{body, map, refused_at};
use crate::requests::{MetricsAsk, StatesAsk};

/// Two devices back to back, each an IS-IS router on a point-to-point level 1-2 circuit with a
/// v4 and a v6 range, written the way snappi writes them (every default of every object it
/// made), and a flow between the v4 ranges.
fn b2b() -> Value {
    let device = |n: u8, me: &str, peer: &str, sysid: &str, route: &str| {
        json!({
            "name": format!("d{n}"),
            "ethernets": [{
                "name": format!("e{n}"),
                "connection": {"choice": "port_name", "port_name": format!("p{n}")},
                "mac": format!("02:00:00:00:00:0{n}"),
                "ipv4_addresses": [{"name": format!("ip{n}"), "address": me, "gateway": peer, "prefix": 24}]
            }],
            "isis": {
                "name": format!("isis{n}"), "system_id": sysid,
                "basic": {"ipv4_te_router_id": me, "hostname": format!("h{n}"),
                    "enable_wide_metric": true, "learned_lsp_filter": true},
                "advanced": {"enable_hello_padding": true, "max_area_addresses": 3,
                    "area_addresses": ["490001"], "lsp_refresh_rate": 900, "lsp_lifetime": 1200,
                    "psnp_interval": 2000, "csnp_interval": 10000, "max_lsp_size": 1492,
                    "lsp_mgroup_min_trans_interval": 5000, "enable_attached_bit": false},
                "interfaces": [{"name": format!("i{n}"), "eth_name": format!("e{n}"), "metric": 10,
                    "network_type": "point_to_point", "level_type": "level_1_2",
                    "l2_settings": {"priority": 0, "hello_interval": 10, "dead_interval": 30},
                    "advanced": {"auto_adjust_mtu": true, "auto_adjust_area": true,
                        "auto_adjust_supported_protocols": true, "enable_3way_handshake": true,
                        "p2p_hellos_to_unicast_mac": false}}],
                "v4_routes": [{"name": format!("rr4_{n}"), "link_metric": 10,
                    "origin_type": "internal", "redistribution_type": "up",
                    "prefix_attr_enabled": false, "x_flag": false, "r_flag": false, "n_flag": false,
                    "addresses": [{"address": route, "prefix": 32, "count": 5, "step": 1}]}],
                "v6_routes": [{"name": format!("rr6_{n}"),
                    "addresses": [{"address": format!("2001:db8:{n}::1"), "prefix": 128, "count": 1, "step": 1}]}]
            }
        })
    };
    let flow = json!({"name": "f", "tx_rx": {"choice": "device", "device":
            {"tx_names": ["rr4_1"], "rx_names": ["rr4_2"]}},
        "packet": [{"choice": "ethernet", "ethernet": {}}, {"choice": "ipv4", "ipv4": {}},
            {"choice": "udp", "udp": {}}]});
    json!({
        "ports": [{"name": "p1", "location": "lr0"}, {"name": "p2", "location": "lr1@lr-sink"}],
        "devices": [
            device(1, "1.1.1.1", "1.1.1.2", "640000000001", "10.0.0.1"),
            device(2, "1.1.1.2", "1.1.1.1", "650000000001", "20.0.0.1")
        ],
        "flows": [flow]
    })
}

#[test]
fn a_device_with_isis_is_a_router_whose_ranges_are_flow_ends_and_whose_port_passes_its_groups() {
    let m = map(&b2b()).unwrap();
    assert_eq!(m.routers.len(), 2);
    let d = &m.routers[0];
    assert!(d.bgp.is_none());
    let i = d.isis.as_ref().unwrap();
    assert_eq!(i.name, "isis1");
    assert_eq!(i.system_id, [0x64, 0, 0, 0, 0, 1]);
    assert_eq!(i.areas, [vec![0x49, 0, 1]]);
    assert_eq!(i.hostname.as_deref(), Some("h1"));
    assert!(i.wide_metrics && !i.attached_bit && i.hello_padding);
    assert_eq!((i.lsp_refresh, i.lsp_lifetime), (900, 1200));
    assert_eq!(
        (i.psnp_interval, i.csnp_interval, i.lsp_mtu),
        (Some(2), Some(10), Some(1492))
    );
    let c = &i.circuits[0];
    assert!(c.point_to_point && c.level == linerate_routing::Level::L12 && c.metric == 10);
    assert_eq!((c.hellos[1].interval, c.hellos[1].dead), (10, 30));
    assert_eq!(d.links[c.link].mac, [2, 0, 0, 0, 0, 1]);
    assert_eq!(i.routes.len(), 2);
    assert_eq!(i.routes[0].metric, 10);
    assert_eq!(i.routes[0].prefixes().unwrap().len(), 5);
    let end = m.ranges.iter().find(|r| r.name == "rr4_1").unwrap();
    assert_eq!(end.host, "ip1");
    assert_eq!(end.block, Some((5, 1)));
    assert_eq!(
        m.routed_hosts(),
        [
            ("ip1".to_owned(), linerate_routing::ISIS_GROUPS.to_vec()),
            ("ip2".to_owned(), linerate_routing::ISIS_GROUPS.to_vec())
        ]
    );
}

#[test]
fn bad_isis_is_refused_by_the_path_of_its_field() {
    let mut c = b2b();
    c["devices"][0]["isis"]["system_id"] = json!("64");
    assert!(refused_at(&c, "devices[0].isis.system_id").contains("6 bytes"));
    let mut c = b2b();
    c["devices"][0]["isis"]["interfaces"][0]["eth_name"] = json!("nope");
    assert!(refused_at(&c, "devices[0].isis.interfaces[0].eth_name").contains("'nope'"));
    let mut c = b2b();
    c["devices"][0]["isis"]["v4_routes"][0]["origin_type"] = json!("external");
    assert!(refused_at(&c, "devices[0].isis.v4_routes[0].origin_type").contains("internal"));
    let mut c = b2b();
    c["devices"][0]["isis"]["advanced"]["lsp_lifetime"] = json!(1000);
    assert!(refused_at(&c, "devices[0].isis").contains("300 s above"));
    let mut c = b2b();
    c["devices"][0]["isis"]["interfaces"][0]["l2_settings"]["dead_interval"] = json!(10);
    assert!(refused_at(&c, "devices[0].isis").contains("at least two hellos"));
    let mut c = b2b();
    c["devices"][0]["isis"]["interfaces"][0]["advanced"]["p2p_hellos_to_unicast_mac"] = json!(true);
    assert!(
        refused_at(
            &c,
            "devices[0].isis.interfaces[0].advanced.p2p_hellos_to_unicast_mac"
        )
        .contains("default")
    );
    for bad in ["4", "49.00x1", "490001é", ""] {
        let mut c = b2b();
        c["devices"][0]["isis"]["advanced"]["area_addresses"] = json!([bad]);
        assert!(
            refused_at(&c, "devices[0].isis.advanced.area_addresses[0]").contains("1 to 13 bytes"),
            "{bad}"
        );
    }
    let mut c = b2b();
    c["devices"][0]["isis"]["segment_routing"] = json!({"router_capability": {}});
    refused_at(&c, "devices[0].isis.segment_routing");
    let mut c = b2b();
    c["devices"][0]["isis"]["v4_routes"][0]["addresses"][0]["address"] = json!("255.255.255.255");
    assert!(refused_at(&c, "devices[0].isis").contains("past the address space"));
}

#[test]
fn isis_metrics_and_lsps_name_routers_that_are_there() {
    let m = map(&b2b()).unwrap();
    let req = body(json!({"choice": "isis", "isis": {"router_names": ["isis2"]}}));
    assert_eq!(
        crate::requests::metrics(&req, &m),
        Ok(MetricsAsk::Isis(vec!["isis2".into()]))
    );
    let req = body(json!({"choice": "isis", "isis": {"router_names": ["nobody"]}}));
    assert!(
        crate::requests::metrics(&req, &m)
            .unwrap_err()
            .starts_with("isis.router_names[0]")
    );
    let req = body(json!({"choice": "isis_lsps", "isis_lsps": {}}));
    assert_eq!(
        crate::requests::states(&req, &m),
        Ok(StatesAsk::IsisLsps(vec![]))
    );
    let req = body(json!({"choice": "isis_lsps", "isis_lsps": {"isis_router_names": ["x"]}}));
    assert!(
        crate::requests::states(&req, &m)
            .unwrap_err()
            .starts_with("isis_lsps.isis_router_names[0]")
    );
}
