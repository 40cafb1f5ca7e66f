//! Flows whose `packet` ends in `arp`: the stream they map to, its frames, and what is refused.

use linerate_stream::{ArpOp, Limits, Plan, Proto, Shape};
use serde_json::{Value, json};

use crate::Refusals;
use crate::map::{Mapped, map_config, parse_config};

fn config(packet: Value) -> Value {
    json!({
      "ports": [{"location": "lr0", "name": "ptx"}, {"location": "lr1", "name": "prx"}],
      "flows": [{
        "name": "arp",
        "packet": packet,
        "size": {"choice": "fixed", "fixed": 68},
        "tx_rx": {"choice": "port", "port": {"rx_names": ["prx"], "tx_name": "ptx"}},
        "metrics": {"enable": true}
      }]
    })
}

fn map(packet: Value) -> Result<Mapped, Refusals> {
    map_config(&parse_config(config(packet).to_string().as_bytes())?)
}

fn one(v: Value) -> Value {
    json!({"choice": "value", "value": v})
}

fn eth() -> Value {
    json!({"choice": "ethernet", "ethernet": {"dst": one(json!("ff:ff:ff:ff:ff:ff"))}})
}

#[test]
fn an_arp_flow_maps_its_fields_and_moves_the_addresses_it_counts() {
    let m = map(json!([
        eth(),
        {"choice": "vlan", "vlan": {"id": one(json!(10))}},
        {"choice": "arp", "arp": {
            "operation": one(json!(2)),
            "hardware_type": one(json!(1)),
            "sender_hardware_addr": one(json!("02:00:00:00:00:0a")),
            "sender_protocol_addr": {"choice": "increment",
                "increment": {"start": "10.0.0.1", "step": "0.0.0.1", "count": 100}},
            "target_hardware_addr": one(json!("02:00:00:00:00:0b")),
            "target_protocol_addr": one(json!("10.0.0.254"))
        }}
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let s = &m.streams[0];
    assert_eq!(
        (s.proto, s.arp_op, s.vlan),
        (Proto::Arp, ArpOp::Reply, Some(10))
    );
    assert_eq!(s.arp_sender_mac, Some("02:00:00:00:00:0a".parse().unwrap()));
    assert_eq!(s.arp_target_ip, Some("10.0.0.254".parse().unwrap()));
    let vary: Vec<String> = s.vary.iter().map(ToString::to_string).collect();
    assert_eq!(vary, ["arp-sender-ip:inc:10.0.0.1-10.0.0.100"]);
    let plan = Plan::compile(&m.streams, &Limits::default()).unwrap();
    let Shape::Cycle { cycle, .. } = &plan.shape else {
        panic!("one cycle");
    };
    // Tagged, the signature needs 68 bytes with the FCS: Ethernet 14, tag 4, ARP 28, then 18
    // of padding that hold it.
    let f = &cycle.frames[0];
    assert_eq!(f.len(), 64);
    assert_eq!(&f[16..18], &[0x08, 0x06]);
    let a = &f[18..46];
    assert_eq!(&a[..8], &[0, 1, 8, 0, 6, 4, 0, 2]);
    assert_eq!(&a[8..14], &[2, 0, 0, 0, 0, 0x0a]);
    assert_eq!(&a[14..18], &[10, 0, 0, 1]);
    assert_eq!(&a[18..24], &[2, 0, 0, 0, 0, 0x0b]);
    assert_eq!(&a[24..28], &[10, 0, 0, 254]);
}

#[test]
fn what_arp_cannot_send_is_refused_by_path() {
    let refused = |packet: Value| map(packet).unwrap_err().to_string();
    let e = refused(json!([eth(), {"choice": "arp", "arp": {
        "operation": {"choice": "values", "values": [1, 2]},
        "hardware_type": one(json!(6)),
        "protocol_length": one(json!(16))
    }}]));
    for path in [
        "flows[0].packet[1].arp.operation",
        "flows[0].packet[1].arp.hardware_type",
        "flows[0].packet[1].arp.protocol_length",
    ] {
        assert!(e.contains(path), "{path}: {e}");
    }
    let e = refused(json!([eth(), {"choice": "arp", "arp": {}},
        {"choice": "udp", "udp": {}}]));
    assert!(e.contains("flows[0].packet[2]"), "{e}");
    let e = refused(json!([eth(), {"choice": "ipv4", "ipv4": {}}, {"choice": "arp", "arp": {}}]));
    assert!(e.contains("flows[0].packet[2]"), "{e}");
}

#[test]
fn an_arp_flow_without_fields_takes_the_stream_defaults() {
    let m = map(json!([eth(), {"arp": {}}])).unwrap_or_else(|e| panic!("{e}"));
    let s = &m.streams[0];
    assert_eq!((s.proto, s.arp_op), (Proto::Arp, ArpOp::Request));
    assert_eq!(s.arp_sender_ip, None);
    Plan::compile(&m.streams, &Limits::default()).unwrap();
}

#[test]
fn arp_inside_vxlan_keeps_its_ethernet_header() {
    let m = map(json!([
        {"choice": "ethernet", "ethernet": {}},
        {"choice": "ipv4", "ipv4": {"dst": one(json!("192.0.2.2"))}},
        {"choice": "udp", "udp": {}},
        {"choice": "vxlan", "vxlan": {"vni": one(json!(9))}},
        eth(),
        {"choice": "arp", "arp": {"target_protocol_addr": one(json!("10.0.0.7"))}}
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let s = &m.streams[0];
    assert_eq!(s.proto, Proto::Arp);
    let encap = s
        .encap
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert_eq!(encap, "ethernet/ipv4:dst=192.0.2.2/udp/vxlan:vni=9");
    // The outer headers take 50 bytes of the 68 the config asks and the inner frame keeps 4
    // for its FCS: the smallest frame is 100.
    let err = Plan::compile(&m.streams, &Limits::default()).unwrap_err();
    assert!(err.to_string().contains("100"), "{err}");
    let mut streams = m.streams.clone();
    streams[0].size = 128;
    let plan = Plan::compile(&streams, &Limits::default()).unwrap();
    let Shape::Cycle { cycle, .. } = &plan.shape else {
        panic!("one cycle");
    };
    // Outer Ethernet, IPv4, UDP and VXLAN (50 bytes), then the inner Ethernet and ARP.
    let inner = &cycle.frames[0][50..];
    assert_eq!(&inner[12..14], &[0x08, 0x06]);
    assert_eq!(&inner[14 + 24..14 + 28], &[10, 0, 0, 7]);
}
