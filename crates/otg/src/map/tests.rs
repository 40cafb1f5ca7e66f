use super::*;
use linerate_stream::{Limits, Mode, Plan, Proto, Rate, StreamSpec};
use serde_json::json;

/// What snappi 1.60.0 serialises for its README quickstart (ports renamed to a lab's, an rx port
/// added), captured with `config.serialize()`.
fn quickstart() -> Value {
    json!({
      "ports": [{"location": "lr0", "name": "ptx"}, {"location": "lr1@lr-sink", "name": "prx"}],
      "flows": [{
        "duration": {"choice": "fixed_packets", "fixed_packets": {"gap": 12, "packets": 100}},
        "metrics": {"enable": true, "loss": false, "timestamps": false},
        "name": "flow",
        "packet": [
          {"choice": "ethernet", "ethernet": {
            "dst": {"choice": "value", "value": "00:11:22:33:44:66"},
            "src": {"choice": "value", "value": "00:11:22:33:44:55"}}},
          {"choice": "ipv4", "ipv4": {
            "dst": {"choice": "value", "value": "20.1.1.1"},
            "src": {"choice": "value", "value": "10.1.1.1"}}},
          {"choice": "udp", "udp": {
            "dst_port": {"choice": "increment", "increment": {"count": 5, "start": 6010, "step": 5}},
            "src_port": {"choice": "values", "values": [5010, 5015, 5020, 5025, 5030]}}},
          {"choice": "custom", "custom": {"bytes": "2e2e515549434b53544152"}}
        ],
        "size": {"choice": "fixed", "fixed": 128},
        "tx_rx": {"choice": "port", "port": {"rx_names": ["prx"], "tx_name": "ptx"}}
      }]
    })
}

/// A typed value as the text it reads back from; none as empty.
fn text<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map(T::to_string).unwrap_or_default()
}

fn varies(s: &StreamSpec) -> Vec<String> {
    s.vary.iter().map(|v| v.to_string()).collect()
}

fn map(v: &Value) -> Result<Mapped, Refusals> {
    map_config(&parse_config(v.to_string().as_bytes())?)
}

fn refusal_paths(v: &Value) -> Vec<String> {
    map(v).unwrap_err().0.into_iter().map(|r| r.path).collect()
}

fn compiles(m: &Mapped) {
    Plan::compile(
        &m.streams,
        &Limits {
            link_mbps: Some(10_000),
            ..Limits::default()
        },
    )
    .unwrap();
}

#[test]
fn the_quickstart_maps_field_by_field() {
    let m = map(&quickstart()).unwrap();
    assert_eq!(m.tx_port.as_deref(), Some("ptx"));
    assert_eq!(m.rx_port.as_deref(), Some("prx"));
    assert_eq!(
        m.port("prx").unwrap().location,
        Location {
            agent: None,
            iface: "lr1".into(),
            netns: Some("lr-sink".into())
        }
    );
    let s = &m.streams[0];
    assert_eq!(
        (text(&s.src_mac), text(&s.dst_mac)),
        ("00:11:22:33:44:55".into(), "00:11:22:33:44:66".into())
    );
    assert_eq!(
        (text(&s.src_ip), text(&s.dst_ip)),
        ("10.1.1.1".into(), "20.1.1.1".into())
    );
    assert_eq!(
        (s.src_port, s.dst_port, s.size, s.count),
        (5010, 6010, 128, Some(100))
    );
    assert_eq!(
        varies(s),
        vec!["src-port:inc:5010-5030:5", "dst-port:inc:6010-6030:5"]
    );
    assert_eq!(s.payload.to_string(), "raw:2e2e515549434b53544152");
    assert_eq!(s.rate, Rate::Pps(1000.0));
    assert!(s.signature && m.flows[0].metrics);
    assert_eq!(m.duration, None);
    compiles(&m);
}

#[test]
fn every_refusal_names_its_path_in_one_answer() {
    let mut c = quickstart();
    c["devices"] = json!([{"name": "d1", "bgp": {"router_id": "1.1.1.1"}}]);
    c["lags"] = json!([]);
    c["flows"][0]["packet"][1]["ipv4"]["options"] = json!([{"choice": "router_alert"}]);
    c["flows"][0]["packet"][2]["udp"]["src_port"]["metric_tags"] = json!([{"name": "t"}]);
    c["flows"][0]["tx_rx"]["port"]["tx_name"] = json!("nope");
    let paths = refusal_paths(&c);
    for want in [
        "devices[0].bgp",
        "flows[0].packet[1].ipv4.options",
        "flows[0].packet[2].udp.src_port.metric_tags",
        "flows[0].tx_rx.port.tx_name",
    ] {
        assert!(paths.iter().any(|p| p == want), "{want} not in {paths:?}");
    }
    // An empty list asks for nothing.
    assert!(!paths.iter().any(|p| p == "lags"), "{paths:?}");
    let msg = map(&c).unwrap_err().to_string();
    assert!(msg.contains("BGP") && msg.contains("'nope'"), "{msg}");
}

#[test]
fn headers_beyond_the_subset_are_refused_by_name() {
    let mut c = quickstart();
    c["flows"][0]["packet"][1] = json!({"choice": "ppp", "ppp": {}});
    let err = map(&c).unwrap_err().to_string();
    assert!(
        err.contains("flows[0].packet[1].choice") && err.contains("'ppp'"),
        "{err}"
    );
    // The right headers in the wrong order.
    let mut c = quickstart();
    c["flows"][0]["packet"].as_array_mut().unwrap().swap(1, 2);
    assert_eq!(refusal_paths(&c)[0], "flows[0].packet[1].choice");
    // Custom bytes cannot start a frame, nor follow ARP.
    let mut c = quickstart();
    c["flows"][0]["packet"] = json!([{"choice": "custom", "custom": {"bytes": "00"}}]);
    assert_eq!(refusal_paths(&c), ["flows[0].packet[0].choice"]);
}

#[test]
fn frames_may_end_after_ethernet_vlan_or_ip_and_icmpv6_follows_ipv6() {
    // IPv4 and no L4 (the conformance repo's ip_neighbors flow): the payload after the header.
    let mut c = quickstart();
    c["flows"][0]["packet"].as_array_mut().unwrap().truncate(2);
    let m = map(&c).unwrap();
    assert_eq!(m.streams[0].proto, Proto::Ip);
    compiles(&m);
    // Ethernet, a VLAN tag and custom bytes: no IP.
    let mut c = quickstart();
    c["flows"][0]["packet"] = json!([
        {"choice": "ethernet", "ethernet": {
            "src": {"choice": "values", "values": ["00:00:00:00:00:05", "00:00:00:00:00:01", "00:00:00:00:00:02"]}}},
        {"choice": "vlan", "vlan": {"id": {"choice": "value", "value": 9}}},
        {"choice": "custom", "custom": {"bytes": "abcd"}}
    ]);
    let m = map(&c).unwrap();
    let s = &m.streams[0];
    assert_eq!((s.proto, s.vlan), (Proto::Ethernet, Some(9)));
    assert_eq!(s.payload.to_string(), "raw:abcd");
    assert_eq!(
        varies(s),
        ["src-mac:list:00:00:00:00:00:05,00:00:00:00:00:01,00:00:00:00:00:02"]
    );
    compiles(&m);
    // Right before the payload, an EtherType given must be 0xFFFF, which linerate writes.
    let ether_type = |v: u64| {
        let mut c = quickstart();
        c["flows"][0]["packet"] = json!([{"choice": "ethernet", "ethernet": {
            "ether_type": {"choice": "value", "value": v}}}]);
        c
    };
    assert_eq!(
        map(&ether_type(65535)).unwrap().streams[0].proto,
        Proto::Ethernet
    );
    assert_eq!(
        refusal_paths(&ether_type(2048)),
        ["flows[0].packet[0].ethernet.ether_type"]
    );
    // icmpv6 after ipv6; icmp after ipv6 (and icmpv6 after ipv4) refused by its path.
    let mut c = quickstart();
    c["flows"][0]["packet"] = json!([
        {"choice": "ethernet", "ethernet": {}},
        {"choice": "ipv6", "ipv6": {}},
        {"choice": "icmpv6", "icmpv6": {"echo": {
            "identifier": {"choice": "value", "value": 77},
            "type": {"choice": "value", "value": 128}}}}
    ]);
    let m = map(&c).unwrap();
    assert_eq!(
        (m.streams[0].proto, m.streams[0].src_port),
        (Proto::Icmp, 77)
    );
    assert!(m.streams[0].ipv6);
    compiles(&m);
    c["flows"][0]["packet"][2]["icmpv6"]["echo"]["type"]["value"] = json!(8);
    assert_eq!(refusal_paths(&c), ["flows[0].packet[2].icmpv6.echo.type"]);
    c["flows"][0]["packet"][2] = json!({"choice": "icmp", "icmp": {}});
    assert_eq!(refusal_paths(&c), ["flows[0].packet[2].choice"]);
}

#[test]
fn value_lists_of_any_spacing_and_counters_map_exactly() {
    let with_src = |pattern: Value| {
        let mut c = quickstart();
        c["flows"][0]["packet"][1]["ipv4"]["src"] = pattern;
        map(&c)
    };
    let m = with_src(json!({"choice": "values", "values": ["10.0.0.9", "10.0.0.6", "10.0.0.3"]}))
        .unwrap();
    assert_eq!(text(&m.streams[0].src_ip), "10.0.0.9");
    assert_eq!(varies(&m.streams[0])[0], "src-ip:dec:10.0.0.3-10.0.0.9:3");
    compiles(&m);
    // Any other list: the values in their order, one pre-built frame each.
    let m = with_src(
        json!({"choice": "values", "values": ["10.0.0.1", "10.0.0.2", "10.0.0.7", "10.0.0.2"]}),
    )
    .unwrap();
    assert_eq!(text(&m.streams[0].src_ip), "10.0.0.1");
    assert_eq!(
        varies(&m.streams[0])[0],
        "src-ip:list:10.0.0.1,10.0.0.2,10.0.0.7,10.0.0.2"
    );
    compiles(&m);
    let mut c = quickstart();
    c["flows"][0]["packet"][1] = json!({"choice": "ipv6", "ipv6": {
        "src": {"choice": "values", "values": ["2001:db8::1", "2001:db9::1", "2001:db8::4"]}}});
    let err = map(&c).unwrap_err().to_string();
    assert!(
        err.contains("ipv6.src.values") && err.contains("low 64 bits"),
        "{err}"
    );
    let m = with_src(json!({"choice": "decrement", "decrement": {"start": "10.0.1.0", "step": "0.0.0.2", "count": 4}})).unwrap();
    assert_eq!(varies(&m.streams[0])[0], "src-ip:dec:10.0.0.250-10.0.1.0:2");
    assert_eq!(text(&m.streams[0].src_ip), "10.0.1.0");
    let m = with_src(json!({"choice": "increment", "increment": {"start": "10.0.0.1", "step": "0.0.0.1", "count": 1}})).unwrap();
    assert!(m.streams[0].vary.len() == 2 && text(&m.streams[0].src_ip) == "10.0.0.1");
    let err = with_src(json!({"choice": "increment", "increment": {"start": "255.255.255.254", "step": "0.0.0.1", "count": 5}}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("wraps"), "{err}");
    let m = with_src(json!({"choice": "random", "random": {"min": "10.0.0.1", "max": "10.0.0.100", "seed": 7, "count": 1}})).unwrap();
    assert_eq!(
        varies(&m.streams[0])[0],
        "src-ip:random:10.0.0.1-10.0.0.100"
    );
    // The field's seed is the stream's: another seed, another draw.
    assert_eq!(m.streams[0].seed, 7);
    compiles(&m);
    let random = |seed: u64| json!({"choice": "random", "random": {"min": "10.0.0.1", "max": "10.0.0.100", "seed": seed}});
    let mut c = quickstart();
    c["flows"][0]["packet"][1]["ipv4"]["src"] = random(3);
    c["flows"][0]["packet"][1]["ipv4"]["dst"] = random(3);
    assert_eq!(map(&c).unwrap().streams[0].seed, 3);
    c["flows"][0]["packet"][1]["ipv4"]["dst"] = random(4);
    let err = map(&c).unwrap_err().to_string();
    assert!(
        err.contains("ipv4.dst.random.seed") && err.contains("ipv4.src.random.seed gave 3"),
        "{err}"
    );
    let err = with_src(json!({"choice": "value", "value": "10.0.0.300"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("flows[0].packet[1].ipv4.src.value"), "{err}");
}

#[test]
fn ipv6_tcp_and_vlan() {
    let c = json!({
      "ports": [{"name": "a", "location": "lr0"}, {"name": "b", "location": "lr1@lr-sink"}],
      "flows": [{
        "name": "v6", "tx_rx": {"choice": "port", "port": {"tx_name": "a", "rx_names": ["b"]}},
        "packet": [
          {"choice": "ethernet", "ethernet": {}},
          {"choice": "vlan", "vlan": {"id": {"choice": "value", "value": 100}, "priority": {"choice": "value", "value": 5}}},
          {"choice": "ipv6", "ipv6": {
            "src": {"choice": "increment", "increment": {"start": "2001:db8::1", "step": "::1", "count": 4}},
            "dst": {"choice": "value", "value": "2001:db8::ff"}}},
          {"choice": "tcp", "tcp": {"src_port": {"choice": "value", "value": 80}, "ctl_syn": {"choice": "value", "value": 1}, "ctl_ack": {"choice": "value", "value": 1}}}
        ],
        "size": {"choice": "fixed", "fixed": 128},
        "rate": {"choice": "percentage", "percentage": 1},
        "duration": {"choice": "fixed_seconds", "fixed_seconds": {"seconds": 0.5, "gap": 12}}
      }],
      "layer1": [{"name": "l1", "port_names": ["a", "b"], "speed": "speed_1_gbps", "mtu": 1500, "promiscuous": true}]
    });
    let m = map(&c).unwrap();
    let s = &m.streams[0];
    assert!(s.ipv6 && s.proto == Proto::Tcp);
    assert_eq!((s.vlan, s.vlan_pcp, s.src_port), (Some(100), 5, 80));
    assert_eq!(varies(s), vec!["src-ip:inc:2001:db8::1-2001:db8::4"]);
    assert_eq!(
        (s.tcp_flags.to_string(), s.rate),
        ("SA".into(), Rate::Percent(1.0))
    );
    assert_eq!(m.duration, Some(Duration::from_millis(500)));
    assert_eq!(m.port("a").unwrap().link_mbps, Some(1000));
    compiles(&m);
    // The high 64 bits of an IPv6 address do not move.
    let mut c2 = c.clone();
    c2["flows"][0]["packet"][2]["ipv6"]["src"]["increment"]["step"] = json!("1::");
    assert!(map(&c2).unwrap_err().to_string().contains("low 64 bits"));
}

#[test]
fn two_flows_share_the_port_interleaved_and_fixed_seconds_must_agree() {
    let mut c = quickstart();
    let mut second = c["flows"][0].clone();
    second["name"] = json!("flow2");
    c["flows"].as_array_mut().unwrap().push(second);
    let m = map(&c).unwrap();
    assert!(
        m.streams
            .iter()
            .all(|s| s.mode == Mode::Interleaved && s.signature)
    );
    compiles(&m);
    c["flows"][1]["name"] = json!("flow");
    assert!(refusal_paths(&c).contains(&"flows[1].name".to_string()));
    c["flows"][1]["name"] = json!("flow2");
    c["flows"][1]["duration"] = json!({"choice": "fixed_seconds", "fixed_seconds": {"seconds": 2}});
    assert!(refusal_paths(&c).contains(&"flows[0].duration".to_string()));
    c["ports"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "p3", "location": "lr2"}));
    c["flows"][1]["duration"] = json!({"choice": "fixed_packets", "fixed_packets": {"packets": 5}});
    c["flows"][1]["tx_rx"]["port"]["tx_name"] = json!("p3");
    // Each port sends one flow now: neither is interleaved with another.
    let m = map(&c).unwrap();
    assert_eq!(m.flow_ports, ["ptx", "prx", "p3"]);
    assert!(m.streams.iter().all(|s| s.mode != Mode::Interleaved));
}

/// The config of two port flows in opposite directions, p1→p2 and p2→p1, the quickstart's flow
/// and its mirror.
fn both_ways() -> Value {
    let mut c = quickstart();
    let mut back = c["flows"][0].clone();
    back["name"] = json!("back");
    back["tx_rx"]["port"] = json!({"tx_name": "prx", "rx_names": ["ptx"]});
    c["flows"].as_array_mut().unwrap().push(back);
    c
}

#[test]
fn port_flows_both_ways_run_on_both_ports_as_places_of_one_bed() {
    let m = map(&both_ways()).unwrap();
    assert_eq!((m.tx_port.as_deref(), m.rx_port.as_deref()), (None, None));
    assert_eq!(m.flow_ports, ["ptx", "prx"]);
    assert!(m.hosts.is_empty());
    // Each stream leaves from its transmit port's place and goes to its receive port's, by
    // location; each port sends one flow, so neither is interleaved; both are signed.
    let ends: Vec<(Option<&str>, Option<&str>)> = m
        .streams
        .iter()
        .map(|s| (s.from.as_deref(), s.to.as_deref()))
        .collect();
    assert_eq!(
        ends,
        [
            (Some("lr0"), Some("lr1@lr-sink")),
            (Some("lr1@lr-sink"), Some("lr0"))
        ]
    );
    assert!(
        m.streams
            .iter()
            .all(|s| s.signature && s.mode != Mode::Interleaved && s.count == Some(100))
    );
    let flows: Vec<(&str, Option<&str>)> = m
        .flows
        .iter()
        .map(|f| (f.tx_port.as_str(), f.rx_port.as_deref()))
        .collect();
    assert_eq!(flows, [("ptx", Some("prx")), ("prx", Some("ptx"))]);
    // Each place compiles its own streams.
    for s in &m.streams {
        compiles(&Mapped {
            streams: vec![s.clone()],
            ..m.clone()
        });
    }
    // Each OTG port is the place of its location, sending and receiving there.
    let places = ["lr1@lr-sink".to_string(), "lr0".to_string()];
    let counted = crate::metrics::PortCounted::of_ports(&m, &places, Some(0));
    let at = |tx, rx| crate::metrics::PortCounted { tx, rx };
    assert_eq!(counted["ptx"], at(Some(1), Some(1)));
    assert_eq!(counted["prx"], at(Some(0), Some(0)));
    // A third flow on the first port: that port's two are interleaved, the other's is not.
    let mut c = both_ways();
    let mut third = c["flows"][0].clone();
    third["name"] = json!("third");
    c["flows"].as_array_mut().unwrap().push(third);
    let m = map(&c).unwrap();
    let interleaved: Vec<bool> = m
        .streams
        .iter()
        .map(|s| s.mode == Mode::Interleaved)
        .collect();
    assert_eq!(interleaved, [true, false, true]);
}

#[test]
fn one_transmit_port_toward_two_receive_ports_is_a_bed_of_three() {
    let mut c = quickstart();
    c["ports"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "p3", "location": "lr3@ns3"}));
    let mut other = c["flows"][0].clone();
    other["name"] = json!("other");
    other["tx_rx"]["port"]["rx_names"] = json!(["p3"]);
    c["flows"].as_array_mut().unwrap().push(other);
    let m = map(&c).unwrap();
    assert_eq!(m.flow_ports, ["ptx", "prx", "p3"]);
    assert_eq!(m.streams[1].to.as_deref(), Some("lr3@ns3"));
    // A port no flow uses is no place; the flows of one port and one receive port keep the
    // lone port's way.
    c["flows"][1]["tx_rx"]["port"]["rx_names"] = json!(["prx"]);
    let m = map(&c).unwrap();
    assert_eq!(m.tx_port.as_deref(), Some("ptx"));
    assert_eq!(m.rx_port.as_deref(), Some("prx"));
    assert!(m.flow_ports.is_empty());
    assert!(m.streams.iter().all(|s| s.from.is_none() && s.to.is_none()));
    let counted = crate::metrics::PortCounted::of_ports(&m, &["lr0".into()], Some(0));
    assert_eq!(counted["ptx"].tx, Some(0));
    assert_eq!(counted["prx"].rx, Some(0));
}

#[test]
fn a_port_flow_to_several_ports_or_to_its_own_is_refused_by_path() {
    let mut c = both_ways();
    c["ports"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "p3", "location": "lr3"}));
    // One flow counted at two receivers: device flows have one destination too.
    c["flows"][1]["tx_rx"]["port"]["rx_names"] = json!(["ptx", "p3"]);
    let err = map(&c).unwrap_err();
    assert_eq!(err.0.len(), 1, "{err}");
    assert_eq!(err.0[0].path, "flows[1].tx_rx.port.rx_names");
    assert!(err.0[0].why.contains("one receive port per flow"), "{err}");
    // Its own transmit port: it would count nothing (a port does not receive what it sends).
    c["flows"][1]["tx_rx"]["port"]["rx_names"] = json!(["prx"]);
    let err = map(&c).unwrap_err();
    assert_eq!(err.0.len(), 1, "{err}");
    assert_eq!(err.0[0].path, "flows[1].tx_rx.port.rx_names");
    assert!(err.0[0].why.contains("far end"), "{err}");
}

#[test]
fn sizes_rates_and_bursts() {
    let with = |key: &str, v: Value| {
        let mut c = quickstart();
        c["flows"][0][key] = v;
        map(&c)
    };
    let m = with(
        "size",
        json!({"choice": "increment", "increment": {"start": 64, "end": 128, "step": 32}}),
    )
    .unwrap();
    assert_eq!(m.streams[0].size_mode.to_string(), "inc:64-128:32");
    compiles(&m);
    let m = with("size", json!({"choice": "weight_pairs", "weight_pairs": {"choice": "predefined", "predefined": "imix"}})).unwrap();
    assert_eq!(m.streams[0].size_mode.to_string(), "imix:64x7,570x4,1518x1");
    let m = with("size", json!({"choice": "weight_pairs", "weight_pairs": {"choice": "custom", "custom": [{"size": 100, "weight": 3}, {"size": 200, "weight": 1}]}})).unwrap();
    assert_eq!(m.streams[0].size_mode.to_string(), "imix:100x3,200x1");
    assert!(with("size", json!({"choice": "weight_pairs", "weight_pairs": {"choice": "predefined", "predefined": "tcp_imix"}})).is_err());
    // uint64 rates arrive as strings from snappi.
    let m = with("rate", json!({"choice": "pps", "pps": "10000"})).unwrap();
    assert_eq!(m.streams[0].rate, Rate::Pps(10000.0));
    let m = with("rate", json!({"choice": "mbps", "mbps": 50})).unwrap();
    assert_eq!(m.streams[0].rate, Rate::L2(50e6));
    assert!(with("rate", json!({"choice": "percentage", "percentage": 150})).is_err());
    // 3 bursts of 10 at 10 kpps with 1 ms between them: 1 ms of frames + 1 ms of gap.
    let mut c = quickstart();
    c["flows"][0]["rate"] = json!({"choice": "pps", "pps": "10000"});
    c["flows"][0]["duration"] = json!({"choice": "burst", "burst": {"bursts": 3, "packets": 10, "gap": 12,
        "inter_burst_gap": {"choice": "microseconds", "microseconds": 1000}}});
    let m = map(&c).unwrap();
    let b = m.streams[0].bursts.unwrap();
    assert_eq!((b.frames, m.streams[0].count), (10, Some(30)));
    assert!((b.per_second - 500.0).abs() < 1e-6, "{}", b.per_second);
    compiles(&m);
    let err = with(
        "duration",
        json!({"choice": "continuous", "continuous": {"gap": 20}}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("flows[0].duration.continuous.gap"), "{err}");
}

#[test]
fn malformed_and_mistyped_bodies_name_where() {
    let err = parse_config(b"{\"ports\": [").unwrap_err().to_string();
    assert!(err.contains("malformed JSON"), "{err}");
    let err = parse_config(br#"{"ports": [{"name": 5}]}"#)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("ports[0].name"), "{err}");
    let err = map(&json!({"ports": [{"name": "p", "location": "eth0; rm -rf /"}]}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("ports[0].location"), "{err}");
}

#[test]
fn header_fields_linerate_writes_itself_accept_only_its_values() {
    let mut c = quickstart();
    c["flows"][0]["packet"][1]["ipv4"]["time_to_live"] = json!({"choice": "value", "value": 9});
    c["flows"][0]["packet"][1]["ipv4"]["priority"] =
        json!({"choice": "dscp", "dscp": {"phb": {"choice": "value", "value": 46}}});
    c["flows"][0]["packet"][1]["ipv4"]["version"] = json!({"choice": "value", "value": 4});
    c["flows"][0]["packet"][2]["udp"]["checksum"] =
        json!({"choice": "generated", "generated": "good"});
    let m = map(&c).unwrap();
    assert_eq!((m.streams[0].ttl, m.streams[0].dscp), (9, 46));
    c["flows"][0]["packet"][1]["ipv4"]["dont_fragment"] = json!({"choice": "value", "value": 1});
    c["flows"][0]["packet"][2]["udp"]["checksum"] =
        json!({"choice": "generated", "generated": "bad"});
    c["flows"][0]["packet"][0]["ethernet"]["ether_type"] =
        json!({"choice": "value", "value": 2048});
    let paths = refusal_paths(&c);
    assert_eq!(
        paths,
        vec![
            "flows[0].packet[0].ethernet.ether_type",
            "flows[0].packet[1].ipv4.dont_fragment",
            "flows[0].packet[2].udp.checksum"
        ]
    );
}

#[test]
fn a_start_delay_moves_the_flow_and_fixed_seconds_end_after_it() {
    let mut c = quickstart();
    c["flows"][0]["duration"]["fixed_packets"]["delay"] =
        json!({"choice": "microseconds", "microseconds": 1500});
    let m = map(&c).unwrap();
    assert_eq!(text(&m.streams[0].delay), "1500us");
    compiles(&m);
    // Bytes are a time at the link's speed: 125,000 bytes at 1 Gb/s are 1 ms.
    c["flows"][0]["duration"]["fixed_packets"]["delay"] =
        json!({"choice": "bytes", "bytes": 125000});
    assert!(refusal_paths(&c).contains(&"flows[0].duration.fixed_packets.delay.bytes".to_string()));
    c["layer1"] = json!([{"name": "l1", "port_names": ["ptx", "prx"], "speed": "speed_1_gbps"}]);
    assert_eq!(text(&map(&c).unwrap().streams[0].delay), "1ms");
    c["flows"][0]["duration"]["fixed_packets"]["delay"] =
        json!({"choice": "nanoseconds", "nanoseconds": -1});
    assert!(
        refusal_paths(&c)
            .contains(&"flows[0].duration.fixed_packets.delay.nanoseconds".to_string())
    );
    // The run ends when every flow has sent for its seconds after its own delay.
    let mut second = c["flows"][0].clone();
    second["name"] = json!("flow2");
    c["flows"].as_array_mut().unwrap().push(second);
    c["flows"][0]["duration"] = json!({"choice": "fixed_seconds", "fixed_seconds": {"seconds": 2,
        "delay": {"choice": "microseconds", "microseconds": 500000}}});
    c["flows"][1]["duration"] =
        json!({"choice": "fixed_seconds", "fixed_seconds": {"seconds": 2.5}});
    assert_eq!(
        map(&c).unwrap().duration,
        Some(std::time::Duration::from_millis(2500))
    );
    c["flows"][1]["duration"]["fixed_seconds"]["seconds"] = json!(2);
    assert!(refusal_paths(&c).contains(&"flows[1].duration.fixed_seconds.seconds".to_string()));
}

#[test]
fn a_flow_without_size_holds_its_headers_custom_bytes_and_signature() {
    let mut c = quickstart();
    c["flows"][0].as_object_mut().unwrap().remove("size");
    let m = map(&c).unwrap();
    // 14 + 20 + 8 header bytes, 11 custom bytes, the 18-byte signature, the FCS.
    assert_eq!(m.streams[0].size, 14 + 20 + 8 + 11 + 18 + 4);
    assert!(
        m.warnings.iter().any(|w| w.contains("75 B")),
        "{:?}",
        m.warnings
    );
    compiles(&m);
    // Without custom bytes the schema's 64 stands; a size given is never grown.
    c["flows"][0]["packet"].as_array_mut().unwrap().pop();
    assert_eq!(map(&c).unwrap().streams[0].size, 64);
    c["flows"][0]["size"] = json!({"choice": "fixed", "fixed": 64});
    c["flows"][0]["packet"]
        .as_array_mut()
        .unwrap()
        .push(json!({"choice": "custom", "custom": {"bytes": "2e2e515549434b53544152"}}));
    assert_eq!(map(&c).unwrap().streams[0].size, 64);
}

#[test]
fn a_port_flow_without_a_packet_is_one_ethernet_header() {
    let mut c = quickstart();
    c["flows"][0]["packet"] = json!([]);
    let m = map(&c).unwrap();
    assert_eq!(m.streams[0].proto, Proto::Ethernet);
    compiles(&m);
}

#[test]
fn device_endpoints_and_metrics_without_enable_are_refused() {
    let mut c = quickstart();
    c["flows"][0]["tx_rx"] =
        json!({"choice": "device", "device": {"tx_names": ["d"], "rx_names": ["e"]}});
    // Without devices no address object has those names.
    assert!(refusal_paths(&c).contains(&"flows[0].tx_rx.device.tx_names[0]".to_string()));
    let mut c = quickstart();
    c["flows"][0]["metrics"] =
        json!({"enable": false, "latency": {"enable": true, "mode": "cut_through"}});
    assert!(refusal_paths(&c).contains(&"flows[0].metrics.enable".to_string()));
    c["flows"][0]["metrics"]["enable"] = json!(true);
    let m = map(&c).unwrap();
    assert!(m.flows[0].latency && !m.flows[0].timestamps);
}

#[test]
fn values_that_do_not_fit_are_refused_by_path_never_defaulted() {
    let with = |at: &[&str], v: Value| {
        let mut c = quickstart();
        let mut node = &mut c["flows"][0];
        for key in at {
            node = match key.parse::<usize>() {
                Ok(i) => &mut node[i],
                Err(_) => &mut node[*key],
            };
        }
        *node = v;
        map(&c)
    };
    let err = with(
        &["packet", "2", "udp", "src_port"],
        json!({"choice": "value", "value": 70000}),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("flows[0].packet[2].udp.src_port.value"),
        "{err}"
    );
    let err = with(
        &["packet", "1", "ipv4", "time_to_live"],
        json!({"choice": "value", "value": "lots"}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("ipv4.time_to_live.value"), "{err}");
    // A size mode linerate cannot build is refused at the size, not when the plan compiles.
    let err = with(
        &["size"],
        json!({"choice": "increment", "increment": {"start": 64, "end": 128, "step": 0}}),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("flows[0].size.increment") && err.contains("STEP"),
        "{err}"
    );
    // Typed through: a TTL lands as its value.
    let m = with(
        &["packet", "1", "ipv4", "time_to_live"],
        json!({"choice": "value", "value": 7}),
    )
    .unwrap();
    assert_eq!(m.streams[0].ttl, 7);
}

#[test]
fn a_location_names_an_agents_port_before_a_slash() {
    let l = Location::parse("192.0.2.10:8443/eth1@ns").unwrap();
    assert_eq!(l.agent.as_deref(), Some("192.0.2.10:8443"));
    assert_eq!((l.iface.as_str(), l.netns.as_deref()), ("eth1", Some("ns")));
    assert_eq!(l.local(), "eth1@ns");
    assert_eq!(l.to_string(), "192.0.2.10:8443/eth1@ns");
    let v6 = Location::parse("[2001:db8::1]:9000/eth0").unwrap();
    assert_eq!(v6.agent.as_deref(), Some("[2001:db8::1]:9000"));
    assert_eq!(
        Location::parse("node-a.lab:8443/eth0").unwrap().local(),
        "eth0"
    );
    for bad in [
        "192.0.2.1/eth0",
        "192.0.2.1:0/eth0",
        "a b:1/eth0",
        "h:1/",
        "[zz]:1/eth0",
    ] {
        assert_eq!(Location::parse(bad), None, "{bad}");
    }
}

#[test]
fn where_port_flows_run_is_checked_with_the_header_refusals() {
    // A p1→p2 and a p2→p1 port flow, the first with a header linerate does not build and the
    // second toward its own port: one answer names both problems.
    let mut c = both_ways();
    c["flows"][0]["packet"][1] = json!({"choice": "ppp", "ppp": {}});
    c["flows"][1]["tx_rx"]["port"]["rx_names"] = json!(["prx"]);
    let paths = refusal_paths(&c);
    assert_eq!(
        paths,
        ["flows[0].packet[1].choice", "flows[1].tx_rx.port.rx_names"]
    );
}
