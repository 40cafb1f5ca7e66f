use std::time::Duration;

use linerate_lacp::Protocol;
use serde_json::{Value, json};

use super::bgp_tests::{map, refused_at};

/// The conformance repo's b2b LAG test's config (feature/b2b/lag/lag_lacp_partner_test.go), as
/// snappi 1.60.0 writes it: two LAGs of one port each, LACP active, a flow from one to the
/// other.
fn b2b() -> Value {
    let lag = |name: &str, port: &str, system: &str, mac: &str| {
        json!({"name": name, "min_links": 1,
            "protocol": {"choice": "lacp", "lacp": {"actor_system_id": system,
                "actor_system_priority": 1, "actor_key": 1}},
            "ports": [{"port_name": port,
                "lacp": {"actor_port_number": 1, "actor_port_priority": 1,
                    "actor_activity": "active", "lacpdu_periodic_time_interval": 0,
                    "lacpdu_timeout": 0},
                "ethernet": {"name": format!("{name}PortEth"), "mac": mac, "mtu": 1500}}]})
    };
    json!({
        "ports": [{"name": "ptx", "location": "lr0"}, {"name": "prx", "location": "lr1@lr-sink"}],
        "lags": [lag("lagTx", "ptx", "01:01:01:01:01:01", "00:00:01:01:01:01"),
                 lag("lagRx", "prx", "02:02:02:02:02:02", "00:00:01:01:01:02")],
        "flows": [{"name": "f1", "tx_rx": {"choice": "port",
                "port": {"tx_name": "lagTx", "rx_name": "lagRx"}},
            "duration": {"choice": "fixed_packets", "fixed_packets": {"packets": 100}},
            "rate": {"choice": "pps", "pps": "50"},
            "size": {"choice": "fixed", "fixed": 128},
            "metrics": {"enable": true},
            "packet": [{"choice": "ethernet", "ethernet": {}}, {"choice": "ipv4", "ipv4": {}},
                {"choice": "udp", "udp": {}}]}]
    })
}

#[test]
fn each_lag_is_its_ports_with_its_system_and_a_flow_runs_on_its_members() {
    let m = map(&b2b()).unwrap();
    assert_eq!(m.lags.len(), 2);
    let l = &m.lags[1];
    assert_eq!((l.name.as_str(), l.min_links), ("lagRx", 1));
    assert_eq!(
        l.protocol,
        Protocol::Lacp {
            system_id: [2; 6],
            system_priority: 1,
            key: 1
        }
    );
    let p = &l.members[0];
    assert_eq!(
        (p.port.as_str(), p.location.as_str()),
        ("prx", "lr1@lr-sink")
    );
    assert_eq!(p.mac, Some([0, 0, 1, 1, 1, 2]));
    assert_eq!((p.lacp.port_number, p.lacp.port_priority), (1, 1));
    assert!(p.lacp.active && p.lacp.short_timeout && p.lacp.periodic.is_none());
    assert_eq!(m.tx_port.as_deref(), Some("ptx"));
    assert_eq!(m.rx_port.as_deref(), Some("prx"));
    assert_eq!(m.flows[0].tx_port, "ptx");
    let placed: Vec<(&str, &str, &str)> = m
        .lag_flows
        .iter()
        .map(|p| (p.flow.as_str(), p.lag.as_str(), p.port.as_str()))
        .collect();
    assert_eq!(placed, [("f1", "lagTx", "ptx"), ("f1", "lagRx", "prx")]);
}

#[test]
fn a_static_lag_and_the_timers_given_are_mapped() {
    let mut c = b2b();
    c["lags"][0]["protocol"] = json!({"choice": "static", "static": {"lag_id": 7}});
    c["lags"][1]["ports"][0]["lacp"]["lacpdu_timeout"] = json!(90);
    c["lags"][1]["ports"][0]["lacp"]["lacpdu_periodic_time_interval"] = json!(30);
    c["lags"][1]["ports"][0]["lacp"]["actor_activity"] = json!("passive");
    let m = map(&c).unwrap();
    assert_eq!(m.lags[0].protocol, Protocol::Static { lag_id: 7 });
    let p = m.lags[1].members[0].lacp;
    assert!(!p.short_timeout && !p.active);
    assert_eq!(p.periodic, Some(Duration::from_secs(30)));
}

/// Two LAGs of two members each (a1, a2 and b1, b2) and eight flows f0..f7 from one to the
/// other.
pub(crate) fn b2b_of_two_members() -> Value {
    let mut c = b2b();
    c["ports"] = json!([{"name": "a1", "location": "x1"}, {"name": "a2", "location": "x2"},
        {"name": "b1", "location": "y1"}, {"name": "b2", "location": "y2"}]);
    for (l, ports) in [(0, ["a1", "a2"]), (1, ["b1", "b2"])] {
        let member = c["lags"][l]["ports"][0].clone();
        c["lags"][l]["ports"] = json!(
            ports
                .iter()
                .map(|p| {
                    let mut m = member.clone();
                    m["port_name"] = json!(p);
                    m["ethernet"].as_object_mut().unwrap().remove("mac");
                    m
                })
                .collect::<Vec<_>>()
        );
    }
    let mut flows = Vec::new();
    for i in 0..8 {
        let mut f = c["flows"][0].clone();
        f["name"] = json!(format!("f{i}"));
        flows.push(f);
    }
    c["flows"] = json!(flows);
    c
}

#[test]
fn flows_over_lags_of_several_members_keep_one_member_index_each() {
    let c = b2b_of_two_members();
    let m = map(&c).unwrap();
    let placed: Vec<(String, String)> = m
        .flows
        .iter()
        .map(|f| (f.tx_port.clone(), f.rx_port.clone().unwrap()))
        .collect();
    for (tx, rx) in &placed {
        assert_eq!(tx[1..], rx[1..], "member i to member i: {placed:?}");
    }
    assert!(placed.iter().any(|(t, _)| t == "a1") && placed.iter().any(|(t, _)| t == "a2"));
    // The same config, the same placement.
    let again: Vec<String> = map(&c)
        .unwrap()
        .flows
        .iter()
        .map(|f| f.tx_port.clone())
        .collect();
    assert_eq!(
        again,
        placed.iter().map(|p| p.0.clone()).collect::<Vec<_>>()
    );
}

#[test]
fn bad_lags_are_refused_by_path_one_line_each() {
    let mut c = b2b();
    c["lags"][1]["ports"][0]["port_name"] = json!("nope");
    assert_eq!(
        refused_at(&c, "lags[1].ports[0].port_name"),
        "no port is named 'nope'"
    );
    let mut c = b2b();
    c["lags"][1]["ports"][0]["port_name"] = json!("ptx");
    assert_eq!(
        refused_at(&c, "lags[1].ports[0].port_name"),
        "port 'ptx' is a member of LAG 'lagTx' already"
    );
    let mut c = b2b();
    c["lags"][0]["protocol"]["lacp"]["actor_system_id"] = json!("01:01:01:01:01");
    assert!(refused_at(&c, "lags[0].protocol.lacp.actor_system_id").contains("is not a MAC"));
    let mut c = b2b();
    c["lags"][0]["ports"][0]["ethernet"]["mac"] = json!("zz:00:01:01:01:01");
    assert!(refused_at(&c, "lags[0].ports[0].ethernet.mac").contains("not a unicast MAC"));
    let mut c = b2b();
    c["lags"][0]["ports"][0]["lacp"]["lacpdu_timeout"] = json!(10);
    assert!(refused_at(&c, "lags[0].ports[0].lacp.lacpdu_timeout").contains("90 (long)"));
    let mut c = b2b();
    c["lags"][0]["ports"][0]["lacp"]["actor_activity"] = json!("lazy");
    assert!(refused_at(&c, "lags[0].ports[0].lacp.actor_activity").contains("'lazy'"));
    let mut c = b2b();
    c["lags"][0]["min_links"] = json!(33);
    assert_eq!(refused_at(&c, "lags[0].min_links"), "0 to 32");
    let mut c = b2b();
    c["lags"][0]["ports"][0]["macsec"] = json!({"crypto_engine": {}});
    refused_at(&c, "lags[0].ports[0].macsec");
    let mut c = b2b();
    c["lags"][0]["name"] = json!("prx");
    assert!(refused_at(&c, "lags[0].name").contains("a port's name too"));
    let mut c = b2b();
    c["lags"][1]["name"] = json!("lagTx");
    assert!(refused_at(&c, "lags[1].name").contains("used twice"));
    let mut c = b2b();
    c["lags"][0]["ports"] = json!([]);
    assert_eq!(
        refused_at(&c, "lags[0].ports"),
        "a LAG needs at least one port"
    );
    let mut c = b2b();
    c["lags"][0]["protocol"]["choice"] = json!("pagp");
    assert!(refused_at(&c, "lags[0].protocol.choice").contains("'pagp'"));
}

#[test]
fn lag_and_lacp_metrics_and_lacp_admin_are_asked_by_name() {
    use crate::requests::{Control, MetricsAsk, control, metrics};
    let m = map(&b2b()).unwrap();
    let ask = |v: Value| metrics(&serde_json::from_value(v).unwrap(), &m);
    assert_eq!(
        ask(json!({"choice": "lag", "lag": {"lag_names": ["lagTx"]}})),
        Ok(MetricsAsk::Lag(vec!["lagTx".into()]))
    );
    assert_eq!(
        ask(json!({"choice": "lacp", "lacp": {"lag_member_port_names": ["prx"]}})),
        Ok(MetricsAsk::Lacp {
            lags: vec![],
            members: vec!["prx".into()]
        })
    );
    assert!(
        ask(json!({"choice": "lag", "lag": {"lag_names": ["x"]}}))
            .unwrap_err()
            .starts_with("lag.lag_names[0]: no static or LACP LAG is named 'x'")
    );
    assert!(
        ask(json!({"choice": "lacp", "lacp": {"lag_member_port_names": ["x"]}}))
            .unwrap_err()
            .starts_with("lacp.lag_member_port_names[0]")
    );
    let state = |v: Value| control(&serde_json::from_value(v).unwrap(), &m);
    assert_eq!(
        state(json!({"choice": "protocol", "protocol": {"choice": "lacp",
            "lacp": {"choice": "admin", "admin": {"lag_member_names": ["ptx"], "state": "down"}}}})),
        Ok(Control::LacpAdmin {
            ports: vec!["ptx".into()],
            up: false
        })
    );
    assert_eq!(
        state(json!({"choice": "protocol", "protocol": {"choice": "all",
            "all": {"state": "stop"}}})),
        Ok(Control::Protocols { start: false })
    );
    assert_eq!(
        state(json!({"choice": "port", "port": {"choice": "link",
            "link": {"port_names": ["prx"], "state": "down"}}})),
        Ok(Control::Link {
            locations: vec!["lr1@lr-sink".into()],
            up: false
        })
    );
    // Static LAGs have no LACP to ask about.
    let mut c = b2b();
    for l in 0..2 {
        c["lags"][l]["protocol"] = json!({"choice": "static", "static": {"lag_id": 1}});
    }
    let s = map(&c).unwrap();
    let req = serde_json::from_value(json!({"choice": "lacp", "lacp": {}})).unwrap();
    assert!(metrics(&req, &s).unwrap_err().contains("no LACP LAG"));
}

#[test]
fn flows_over_lags_go_on_the_members_in_their_lags() {
    let c: crate::Config = serde_json::from_value(b2b_of_two_members()).unwrap();
    let placed = |out: &[&str]| -> Vec<(String, String)> {
        let out: Vec<String> = out.iter().map(|p| p.to_string()).collect();
        crate::map_config_over_lags(&c, &out)
            .unwrap()
            .flows
            .iter()
            .map(|f| (f.tx_port.clone(), f.rx_port.clone().unwrap()))
            .collect()
    };
    // a1 out (its link down takes b1 out with it, or not): every flow on the second members.
    for out in [&["a1"][..], &["a1", "b1"]] {
        assert!(
            placed(out).iter().all(|(t, r)| t == "a2" && r == "b2"),
            "{out:?}: {:?}",
            placed(out)
        );
    }
    // No index in both LAGs: each LAG its own member in.
    assert!(
        placed(&["a1", "b2"])
            .iter()
            .all(|(t, r)| t == "a2" && r == "b1")
    );
    // A LAG with none in keeps the placement set_config had.
    let all = placed(&[]);
    let a_none: Vec<(String, String)> = placed(&["a1", "a2"]);
    assert_eq!(a_none, all);
    let m = crate::map_config_over_lags(&c, &["a1".into()]).unwrap();
    assert!(
        m.lag_flows.iter().all(|p| p.port.ends_with('2')),
        "{:?}",
        m.lag_flows
    );
    assert_eq!(m.lag_flows.len(), 16);
}

/// [`b2b_of_two_members`] with a device on each LAG (featureprofiles' aggregate tests' shape):
/// an address, a MAC of its own and an eBGP peer over the LAG; its flows go between the
/// devices' addresses.
fn devices_on_lags() -> Value {
    let mut c = b2b_of_two_members();
    let device = |n: &str, lag: &str, mac: &str, me: &str, peer: &str| {
        json!({"name": n, "ethernets": [{"name": format!("{n}Eth"), "mac": mac,
                "connection": {"choice": "lag_name", "lag_name": lag},
                "ipv4_addresses": [{"name": format!("{n}Ip"), "address": me, "gateway": peer,
                    "prefix": 24}]}],
            "bgp": {"router_id": me, "ipv4_interfaces": [{"ipv4_name": format!("{n}Ip"),
                "peers": [{"name": format!("{n}Peer"), "peer_address": peer,
                    "as_type": "ebgp", "as_number": 65001}]}]}})
    };
    c["devices"] = json!([
        device(
            "dtx",
            "lagTx",
            "02:00:00:00:01:01",
            "192.0.2.1",
            "192.0.2.2"
        ),
        device(
            "drx",
            "lagRx",
            "02:00:00:00:02:01",
            "192.0.2.2",
            "192.0.2.1"
        ),
    ]);
    for f in c["flows"].as_array_mut().unwrap() {
        f["tx_rx"] = json!({"choice": "device", "device": {"tx_names": ["dtxIp"],
            "rx_names": ["drxIp"]}});
    }
    c
}

/// A device on a LAG is a host on each member (the first named by its address, the others
/// `NAME@PORT`), its BGP a link on each member; each flow takes one member index in both LAGs
/// by the hash of its name (the members in their LAGs), as port flows over LAGs do.
#[test]
fn a_device_on_a_lag_is_a_host_on_each_member_and_its_flows_spread_over_them() {
    let m = map(&devices_on_lags()).unwrap();
    let hosts: Vec<(&str, &str, Option<&str>)> = m
        .hosts
        .iter()
        .map(|h| (h.spec.name.as_str(), h.port.as_str(), h.spec.lag.as_deref()))
        .collect();
    assert_eq!(
        hosts,
        [
            ("dtxIp", "a1", Some("lagTx")),
            ("dtxIp@a2", "a2", Some("lagTx")),
            ("drxIp", "b1", Some("lagRx")),
            ("drxIp@b2", "b2", Some("lagRx")),
        ]
    );
    assert!(m.hosts.iter().all(|h| h.spec.mac.is_some()));
    let links: Vec<&str> = m.routers[0].links.iter().map(|l| l.port.as_str()).collect();
    assert_eq!(links, ["x1", "x2"]);
    assert!(
        m.routers[0].links.iter().all(|l| l.mac == [2, 0, 0, 0, 1, 1]
            && l.addrs == [("192.0.2.1".parse().unwrap(), 24)])
    );
    // Every member host passes the device's other frames to the stack.
    assert_eq!(m.routed_hosts().len(), 4);
    // Each flow on one member index at both ends, the same as port flows over these LAGs.
    let ports: Vec<(String, String)> = m
        .flows
        .iter()
        .map(|f| (f.tx_port.clone(), f.rx_port.clone().unwrap()))
        .collect();
    let port_flows = map(&b2b_of_two_members()).unwrap();
    let expected: Vec<(String, String)> = port_flows
        .flows
        .iter()
        .map(|f| (f.tx_port.clone(), f.rx_port.clone().unwrap()))
        .collect();
    assert_eq!(ports, expected);
    assert!(ports.iter().any(|(t, _)| t == "a1") && ports.iter().any(|(t, _)| t == "a2"));
    for (s, (tx, rx)) in m.streams.iter().zip(&ports) {
        let on = |host: &Option<String>| {
            m.hosts
                .iter()
                .find(|h| Some(&h.spec.name) == host.as_ref())
                .map(|h| h.port.clone())
        };
        assert_eq!(
            (on(&s.from), on(&s.to)),
            (Some(tx.clone()), Some(rx.clone()))
        );
    }
    assert_eq!(m.lag_flows.len(), 16);
    // a1 out of lagTx: every flow on the second members.
    let c: crate::Config = serde_json::from_value(devices_on_lags()).unwrap();
    let m = crate::map_config_over_lags(&c, &["a1".into()]).unwrap();
    assert!(
        m.flows
            .iter()
            .all(|f| f.tx_port == "a2" && f.rx_port.as_deref() == Some("b2"))
    );
}

#[test]
fn what_a_device_on_a_lag_cannot_be_is_refused_by_path() {
    let mut c = devices_on_lags();
    c["devices"][0]["ethernets"][0]
        .as_object_mut()
        .unwrap()
        .remove("mac");
    assert!(refused_at(&c, "devices[0].ethernets[0].mac").contains("answers on every member"));
    let mut c = devices_on_lags();
    c["devices"][0]["ethernets"][0]["connection"]["lag_name"] = json!("nope");
    assert_eq!(
        refused_at(&c, "devices[0].ethernets[0].connection.lag_name"),
        "no LAG is named 'nope'"
    );
    // A bad address is refused once, not once a member.
    let mut c = devices_on_lags();
    c["devices"][0]["ethernets"][0]["ipv4_addresses"][0]["gateway"] = json!("10.9.9.9");
    let path = "devices[0].ethernets[0].ipv4_addresses[0]";
    let refusals = map(&c).unwrap_err().0;
    assert_eq!(
        refusals.iter().filter(|r| r.path == path).count(),
        1,
        "{refusals:?}"
    );
    let mut c = devices_on_lags();
    c["devices"][0]["isis"] = json!({"name": "isis1", "system_id": "640000000001", "interfaces": [
        {"eth_name": "dtxEth", "name": "i1"}], "basic": {}, "advanced": {}});
    assert!(refused_at(&c, "devices[0].isis.interfaces[0].eth_name").contains("over a LAG"));
}
