//! Flows whose `packet` holds a tunnel: the headers before it become the stream's `encap`.

use super::*;
use linerate_stream::{Limits, Plan};
use serde_json::json;

fn config(packet: Value) -> Value {
    json!({
      "ports": [{"location": "lr0", "name": "ptx"}, {"location": "lr1@lr-sink", "name": "prx"}],
      "flows": [{
        "name": "tunnel",
        "packet": packet,
        "size": {"choice": "fixed", "fixed": 160},
        "tx_rx": {"choice": "port", "port": {"rx_names": ["prx"], "tx_name": "ptx"}}
      }]
    })
}

fn map(v: &Value) -> Result<Mapped, Refusals> {
    map_config(&parse_config(v.to_string().as_bytes())?)
}

fn one(v: Value) -> Value {
    json!({"choice": "value", "value": v})
}

fn eth() -> Value {
    json!({"choice": "ethernet", "ethernet": {}})
}

fn ipv4(dst: &str) -> Value {
    json!({"choice": "ipv4", "ipv4": {"dst": one(json!(dst))}})
}

fn udp() -> Value {
    json!({"choice": "udp", "udp": {
        "src_port": {"choice": "increment", "increment": {"start": 1000, "step": 1, "count": 4}}}})
}

/// The flow's encap as linerate writes it, and its variable fields; the plan compiles.
fn mapped(packet: Value) -> (String, Vec<String>) {
    let m = map(&config(packet)).unwrap_or_else(|e| panic!("{e}"));
    Plan::compile(&m.streams, &Limits::default()).unwrap();
    let s = &m.streams[0];
    let encap = s
        .encap
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    (encap, s.vary.iter().map(ToString::to_string).collect())
}

#[test]
fn a_vxlan_flow_maps_its_outer_headers_onto_the_encap() {
    let (encap, vary) = mapped(json!([
        {"choice": "ethernet", "ethernet": {"src": one(json!("02:00:00:00:00:0a"))}},
        ipv4("192.0.2.2"),
        {"choice": "udp", "udp": {"src_port": one(json!(5000))}},
        {"choice": "vxlan", "vxlan": {"vni": one(json!(100)), "flags": one(json!(8))}},
        eth(),
        ipv4("10.0.0.2"),
        udp(),
    ]));
    assert_eq!(
        encap,
        "ethernet:src=02:00:00:00:00:0a/ipv4:dst=192.0.2.2/udp:src-port=5000/vxlan:vni=100"
    );
    // The inner headers carry the flow's patterns.
    assert_eq!(vary, vec!["src-port:inc:1000-1003"]);
}

#[test]
fn gre_mpls_gtpv1_and_ip_in_ip_flows_map() {
    for (packet, want) in [
        (
            json!([eth(), ipv4("192.0.2.2"), {"choice": "gre", "gre": {"checksum_present": one(json!(1))}}, ipv4("10.0.0.2"), udp()]),
            "ethernet/ipv4:dst=192.0.2.2/gre:checksum=on",
        ),
        (
            json!([eth(), ipv4("192.0.2.2"), {"choice": "gre"}, eth(), ipv4("10.0.0.2"), udp()]),
            "ethernet/ipv4:dst=192.0.2.2/gre/ethernet",
        ),
        (
            json!([eth(),
                {"choice": "mpls", "mpls": {"label": one(json!(100)), "bottom_of_stack": one(json!(0))}},
                {"choice": "mpls", "mpls": {"label": one(json!(200)), "traffic_class": one(json!(5))}},
                ipv4("10.0.0.2"), udp()]),
            "ethernet/mpls:label=100/mpls:label=200,tc=5",
        ),
        (
            json!([eth(), ipv4("192.0.2.2"), {"choice": "udp"},
                {"choice": "gtpv1", "gtpv1": {"teid": one(json!(7)), "s_flag": one(json!(1)), "squence_number": one(json!(9))}},
                ipv4("10.0.0.2"), udp()]),
            "ethernet/ipv4:dst=192.0.2.2/udp/gtpv1u:teid=7,seq=9",
        ),
        (
            json!([eth(), ipv4("192.0.2.2"), ipv4("10.0.0.2"), udp()]),
            "ethernet/ipv4:dst=192.0.2.2",
        ),
    ] {
        assert_eq!(mapped(packet).0, want);
    }
}

#[test]
fn what_a_tunnel_cannot_carry_is_refused_by_its_path() {
    let paths = |packet: Value| -> Vec<String> {
        map(&config(packet))
            .unwrap_err()
            .0
            .into_iter()
            .map(|r| r.path)
            .collect()
    };
    // An outer field that moves.
    let p = paths(
        json!([eth(), ipv4("192.0.2.2"), udp(), {"choice": "vxlan"}, eth(), ipv4("10.0.0.2"), udp()]),
    );
    assert_eq!(p, vec!["flows[0].packet[2].udp.src_port"]);
    // VXLAN carries Ethernet; its flags are the RFC's.
    let p = paths(json!([eth(), ipv4("192.0.2.2"), {"choice": "udp"},
        {"choice": "vxlan", "vxlan": {"flags": one(json!(0))}}, ipv4("10.0.0.2"), udp()]));
    assert_eq!(
        p,
        vec!["flows[0].packet[3].vxlan.flags", "flows[0].packet[4]"]
    );
    // Bottom of stack where a label follows; a sequence number without s_flag.
    let p = paths(json!([eth(),
        {"choice": "mpls", "mpls": {"bottom_of_stack": one(json!(1))}},
        {"choice": "mpls"}, ipv4("10.0.0.2"), udp()]));
    assert_eq!(p, vec!["flows[0].packet[1].mpls.bottom_of_stack"]);
    let p = paths(json!([eth(), ipv4("192.0.2.2"), {"choice": "udp"},
        {"choice": "gtpv1", "gtpv1": {"squence_number": one(json!(9))}}, ipv4("10.0.0.2"), udp()]));
    assert_eq!(p, vec!["flows[0].packet[3].gtpv1.squence_number"]);
    // A header linerate does not build, before the tunnel.
    let p = paths(json!([eth(), {"choice": "arp"}, ipv4("192.0.2.2"), ipv4("10.0.0.2"), udp()]));
    assert_eq!(p, vec!["flows[0].packet[1].choice"]);
}

#[test]
fn the_innermost_vxlan_vni_may_move_and_every_frame_carries_its_value() {
    use linerate_wire::etherparse::{NetSlice, SlicedPacket, TransportSlice};
    // The conformance repo's vxlan_inner_ipv4 flow: VNI values 1000..=1004 over IPv6 (its UDP
    // checksum, which covers the VNI, is refilled in every pre-built frame), and a list that is
    // not evenly spaced over IPv4.
    for (outer, vni, want) in [
        (
            json!({"choice": "ipv6", "ipv6": {"dst": one(json!("::2"))}}),
            json!({"choice": "values", "values": [1000, 1001, 1002, 1003, 1004]}),
            vec![1000u32, 1001, 1002, 1003, 1004],
        ),
        (
            ipv4("192.0.2.2"),
            json!({"choice": "values", "values": [7, 3, 900]}),
            vec![7, 3, 900],
        ),
    ] {
        let m = map(&config(json!([
            eth(),
            outer,
            {"choice": "udp", "udp": {"src_port": one(json!(4789)), "dst_port": one(json!(4789))}},
            {"choice": "vxlan", "vxlan": {"vni": vni}},
            eth(),
            ipv4("10.0.0.2"),
            {"choice": "tcp", "tcp": {"src_port": one(json!(80))}},
        ])))
        .unwrap_or_else(|e| panic!("{e}"));
        let plan = Plan::compile(&m.streams, &Limits::default()).unwrap();
        let linerate_stream::Shape::Cycle { cycle, .. } = &plan.shape else {
            panic!("one cycle");
        };
        assert!(cycle.patches.is_empty(), "the VNI is pre-built");
        for k in 0..2 * want.len() {
            let f = &cycle.frames[k % cycle.frames.len()];
            let p = SlicedPacket::from_ethernet(f).unwrap();
            let Some(TransportSlice::Udp(u)) = &p.transport else {
                panic!("udp");
            };
            let vx = u.payload();
            assert_eq!(vx[0], 0x08);
            let got = u32::from_be_bytes([0, vx[4], vx[5], vx[6]]);
            assert_eq!((got, vx[7]), (want[k % want.len()], 0), "frame {k}");
            let h = u.to_header();
            match &p.net {
                Some(NetSlice::Ipv6(ip)) => {
                    let sum = h.calc_checksum_ipv6(&ip.header().to_header(), u.payload());
                    assert_eq!(sum.unwrap(), h.checksum, "frame {k}");
                }
                Some(NetSlice::Ipv4(_)) => assert_eq!(h.checksum, 0),
                _ => panic!("ip"),
            }
        }
    }
    // A VXLAN inside another: only the inner VNI may move.
    let err = map(&config(json!([
        eth(), ipv4("192.0.2.2"), {"choice": "udp"},
        {"choice": "vxlan", "vxlan": {"vni": {"choice": "values", "values": [1, 5]}}},
        eth(), ipv4("192.0.2.3"), {"choice": "udp"}, {"choice": "vxlan"},
        eth(), ipv4("10.0.0.2"), udp(),
    ])))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("packet[3].vxlan.vni") && err.contains("innermost"),
        "{err}"
    );
}
