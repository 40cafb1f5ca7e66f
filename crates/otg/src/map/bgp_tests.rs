use serde_json::{Value, json};

use crate::{Mapped, Refusals, map_config, parse_config};

/// Two devices back to back on one /24, each with an eBGP peer to the other and a range.
fn b2b() -> Value {
    let device = |n: u8, me: &str, peer: &str, asn: u32, route: &str| {
        json!({
            "name": format!("d{n}"),
            "ethernets": [{
                "name": format!("e{n}"),
                "connection": {"choice": "port_name", "port_name": format!("p{n}")},
                "mac": format!("02:00:00:00:00:0{n}"),
                "ipv4_addresses": [{"name": format!("ip{n}"), "address": me, "gateway": peer, "prefix": 24}]
            }],
            "bgp": {
                "router_id": me,
                "ipv4_interfaces": [{"ipv4_name": format!("ip{n}"), "peers": [{
                    "name": format!("peer{n}"), "peer_address": peer, "as_type": "ebgp",
                    "as_number": asn, "as_number_width": "four",
                    "advanced": {"hold_time_interval": 9, "keep_alive_interval": 3, "md5_key": "k"},
                    "v4_routes": [{"name": format!("rr{n}"),
                        "addresses": [{"address": route, "prefix": 24, "count": 10, "step": 1}],
                        "next_hop_mode": "local_ip"}]
                }]}]
            }
        })
    };
    let flow = json!({"name": "f", "tx_rx": {"choice": "device", "device":
            {"tx_names": ["rr1"], "rx_names": ["rr2"]}},
        "packet": [{"choice": "ethernet", "ethernet": {}}, {"choice": "ipv4", "ipv4": {}},
            {"choice": "udp", "udp": {}}]});
    json!({
        "ports": [{"name": "p1", "location": "lr0"}, {"name": "p2", "location": "lr1@lr-sink"}],
        "devices": [
            device(1, "1.1.1.1", "1.1.1.2", 65001, "10.0.0.0"),
            device(2, "1.1.1.2", "1.1.1.1", 65002, "20.0.0.0")
        ],
        "flows": [flow]
    })
}

pub(super) fn map(v: &Value) -> Result<Mapped, Refusals> {
    map_config(&parse_config(v.to_string().as_bytes())?)
}

pub(super) fn refused_at(v: &Value, path: &str) -> String {
    let all: Vec<(String, String)> = map(v)
        .unwrap_err()
        .0
        .into_iter()
        .map(|r| (r.path, r.why))
        .collect();
    all.iter()
        .find(|(p, _)| p == path)
        .map(|(_, why)| why.clone())
        .unwrap_or_else(|| panic!("{path} not in {all:?}"))
}

#[test]
fn a_device_with_bgp_is_a_router_on_its_ethernet_and_its_ranges_are_flow_ends() {
    let m = map(&b2b()).unwrap();
    assert_eq!(m.routers.len(), 2);
    let r = &m.routers[0];
    assert_eq!(r.links[0].port, "lr0");
    assert_eq!(r.links[0].mac, [2, 0, 0, 0, 0, 1]);
    let p = &r.bgp.as_ref().unwrap().peers[0];
    assert_eq!((p.local_as, p.keepalive, p.hold), (65001, Some(3), Some(9)));
    assert_eq!(p.md5.as_deref(), Some("k"));
    assert_eq!(p.routes[0].prefixes().unwrap().len(), 10);
    assert_eq!(
        m.routed_hosts(),
        [
            ("ip1".to_owned(), Vec::new()),
            ("ip2".to_owned(), Vec::new())
        ]
    );
    // The flow leaves from rr1's interface host, from rr1's first address, and steps over
    // every /24 of rr2.
    let s = &m.streams[0];
    assert_eq!(
        (s.from.as_deref(), s.to.as_deref()),
        (Some("ip1"), Some("ip2"))
    );
    assert_eq!(s.src_ip, Some("10.0.0.0".parse().unwrap()));
    assert_eq!(s.dst_ip, Some("20.0.0.0".parse().unwrap()));
    let v = &s.vary[0];
    assert_eq!(v.field, linerate_wire::Field::DstIp);
    assert_eq!(v.step, 256);
}

/// A device on an agent's port keeps its agent in its link's port: the controller hands the
/// device to that agent, which runs its daemons.
#[test]
fn a_device_on_an_agents_port_names_the_agent_in_its_link() {
    let mut c = b2b();
    c["ports"][0]["location"] = json!("192.0.2.1:9000/d12");
    c["ports"][1]["location"] = json!("192.0.2.2:9000/d21@h2");
    let m = map(&c).unwrap();
    assert_eq!(m.routers[0].links[0].port, "192.0.2.1:9000/d12");
    assert_eq!(m.routers[1].links[0].port, "192.0.2.2:9000/d21@h2");
    assert_eq!(m.routed_hosts().len(), 2);
}

#[test]
fn bad_bgp_is_refused_by_the_path_of_its_field() {
    let peer = "devices[0].bgp.ipv4_interfaces[0].peers[0]";
    let mut c = b2b();
    c["devices"][0]["bgp"]["ipv4_interfaces"][0]["peers"][0]["as_number"] = json!(0);
    assert!(refused_at(&c, &format!("{peer}.as_number")).contains("reserved"));

    let mut c = b2b();
    c["devices"][0]["bgp"]["ipv4_interfaces"][0]["peers"][0]["v4_routes"][0]["addresses"][0]["address"] =
        json!("255.255.255.0");
    assert!(refused_at(&c, "devices[0].bgp").contains("past the address space"));

    let mut c = b2b();
    c["devices"][0]["bgp"]["ipv4_interfaces"][0]["peers"][0]["peer_address"] = json!("9.9.9.9");
    assert!(refused_at(&c, "devices[0].bgp").contains("none of the device's subnets"));

    let mut c = b2b();
    c["devices"][0]["ethernets"][0]
        .as_object_mut()
        .unwrap()
        .remove("mac");
    assert!(refused_at(&c, "devices[0].ethernets[0].mac").contains("its own MAC"));

    let mut c = b2b();
    c["devices"][0]["bgp"]["ipv4_interfaces"][0]["ipv4_name"] = json!("nothing");
    assert!(refused_at(&c, "devices[0].bgp.ipv4_interfaces[0].ipv4_name").contains("'nothing'"));

    let mut c = b2b();
    c["devices"][0]["bgp"]["ipv4_interfaces"][0]["peers"][0]["v4_routes"][0]["as_path"] = json!({"as_set_mode": "include_as_seq", "segments": [{"type": "as_set", "as_numbers": [1]}]});
    assert!(
        refused_at(&c, &format!("{peer}.v4_routes[0].as_path.segments[0].type"))
            .contains("AS_SEQUENCE")
    );

    let mut c = b2b();
    c["devices"][0]["bgp"]["ipv4_interfaces"][0]["peers"][0]["graceful_restart"] =
        json!({"enable_gr": true});
    assert!(refused_at(&c, &format!("{peer}.graceful_restart")).contains("not supported"));
}

pub(super) fn body<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

#[test]
fn control_metrics_and_states_of_bgp_name_what_is_not_there() {
    use crate::requests::{Control, MetricsAsk, StatesAsk, control, metrics, states};
    let m = map(&b2b()).unwrap();
    let withdraw = body(json!({"choice": "protocol", "protocol": {"choice": "route",
        "route": {"names": ["rr2"], "state": "withdraw"}}}));
    assert_eq!(
        control(&withdraw, &m),
        Ok(Control::Routes {
            names: vec!["rr2".into()],
            advertise: false
        })
    );
    let nosuch = body(json!({"choice": "protocol", "protocol": {"choice": "route",
        "route": {"names": ["x"], "state": "withdraw"}}}));
    assert!(
        control(&nosuch, &m)
            .unwrap_err()
            .starts_with("protocol.route.names[0]")
    );
    let v4 = body(json!({"choice": "bgpv4", "bgpv4": {"peer_names": ["peer2"]}}));
    assert_eq!(
        metrics(&v4, &m),
        Ok(MetricsAsk::Bgp {
            v6: false,
            peers: vec!["peer2".into()]
        })
    );
    let v6 = body(json!({"choice": "bgpv6", "bgpv6": {"peer_names": ["peer2"]}}));
    assert!(metrics(&v6, &m).unwrap_err().contains("no bgpv6 peer"));
    let all = body(json!({"choice": "bgp_prefixes", "bgp_prefixes": {}}));
    assert_eq!(
        states(&all, &m),
        Ok(StatesAsk::BgpPrefixes {
            peers: vec!["peer1".into(), "peer2".into()],
            v4: true,
            v6: true
        })
    );
}
