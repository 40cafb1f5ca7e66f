//! Every header stack decoded by scapy, an independent decoder: frames of each stack at several
//! sizes go to a pcap, `stack_decode.py` prints what scapy reads and the checksums scapy computes,
//! and each layer is compared with the spec that built it.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use linerate_wire::header::udp;
use linerate_wire::{
    GreSpec, HeaderSpec, IpSpec, LayerKind, Payload, StackFrame, StackSpec, TcpFlags, VlanTpid,
};
use serde_json::Value;

fn eth(last: u8) -> HeaderSpec {
    HeaderSpec::Ethernet {
        src: [0x02, 0, 0, 0, 0, last],
        dst: [0x02, 0, 0, 0, 0, last + 1],
    }
}

fn v4(a: u8) -> HeaderSpec {
    HeaderSpec::Ip(IpSpec::V4 {
        src: Ipv4Addr::new(10, a, 0, 1),
        dst: Ipv4Addr::new(10, a, 0, 2),
        ttl: 64,
        id: 0x1234,
        dscp: 10,
    })
}

fn v6(a: u16) -> HeaderSpec {
    HeaderSpec::Ip(IpSpec::V6 {
        src: Ipv6Addr::new(0x2001, 0xdb8, a, 0, 0, 0, 0, 1),
        dst: Ipv6Addr::new(0x2001, 0xdb8, a, 0, 0, 0, 0, 2),
        hop_limit: 63,
        flow_label: 0x12345,
    })
}

fn udp(src: u16, dst: Option<u16>) -> HeaderSpec {
    HeaderSpec::Udp {
        src_port: src,
        dst_port: dst,
        zero_checksum: false,
    }
}

fn tcp() -> HeaderSpec {
    HeaderSpec::Tcp {
        src_port: 1024,
        dst_port: 80,
        seq: 7,
        ack: 0,
        flags: TcpFlags {
            syn: true,
            ..TcpFlags::default()
        },
        window: 8192,
    }
}

fn mpls(label: u32) -> HeaderSpec {
    HeaderSpec::Mpls {
        label,
        tc: 5,
        ttl: 64,
    }
}

fn vxlan() -> HeaderSpec {
    HeaderSpec::Vxlan { vni: 0x12_3456 }
}

/// The stacks the issue names, each a name and its headers.
fn stacks() -> Vec<(&'static str, Vec<HeaderSpec>)> {
    let inner_udp = udp(1024, Some(5001));
    let gre_all = GreSpec {
        checksum: true,
        key: Some(0xdead_beef),
        seq: Some(42),
    };
    vec![
        (
            "vxlan-ipv4",
            vec![
                eth(1),
                v4(0),
                udp(49152, None),
                vxlan(),
                eth(11),
                v4(1),
                inner_udp.clone(),
            ],
        ),
        (
            "vxlan-ipv6",
            vec![
                eth(1),
                v4(0),
                udp(49152, None),
                vxlan(),
                eth(11),
                v6(1),
                inner_udp.clone(),
            ],
        ),
        (
            "vxlan-zero-udp-checksum",
            vec![
                eth(1),
                v4(0),
                HeaderSpec::Udp {
                    src_port: 49152,
                    dst_port: None,
                    zero_checksum: true,
                },
                vxlan(),
                eth(11),
                v4(1),
                tcp(),
            ],
        ),
        (
            "vxlan-over-ipv6",
            vec![
                eth(1),
                v6(0),
                udp(49152, None),
                vxlan(),
                eth(11),
                v4(1),
                tcp(),
            ],
        ),
        (
            "gre",
            vec![
                eth(1),
                v4(0),
                HeaderSpec::Gre(GreSpec::default()),
                v4(1),
                inner_udp.clone(),
            ],
        ),
        (
            "gre-csum-key-seq",
            vec![
                eth(1),
                v4(0),
                HeaderSpec::Gre(gre_all),
                v6(1),
                HeaderSpec::IcmpEcho { id: 9, seq: 3 },
            ],
        ),
        (
            "gre-key-mpls",
            vec![
                eth(1),
                v4(0),
                HeaderSpec::Gre(GreSpec {
                    key: Some(5),
                    ..GreSpec::default()
                }),
                mpls(100),
                v4(1),
                inner_udp.clone(),
            ],
        ),
        (
            "nvgre",
            vec![
                eth(1),
                v4(0),
                HeaderSpec::Gre(GreSpec::nvgre(0xab_cdef, 0x12).unwrap()),
                eth(11),
                v4(1),
                inner_udp.clone(),
            ],
        ),
        (
            "mpls-3",
            vec![
                eth(1),
                mpls(16),
                mpls(17),
                mpls(0xf_ffff),
                v4(1),
                inner_udp.clone(),
            ],
        ),
        (
            "qinq",
            vec![
                eth(1),
                HeaderSpec::Vlan {
                    tpid: VlanTpid::Dot1Ad,
                    id: 100,
                    pcp: 3,
                },
                HeaderSpec::Vlan {
                    tpid: VlanTpid::Dot1Q,
                    id: 4094,
                    pcp: 7,
                },
                v4(1),
                inner_udp.clone(),
            ],
        ),
        (
            "gtpu-ipv4",
            vec![
                eth(1),
                v4(0),
                udp(2152, None),
                HeaderSpec::GtpV1U {
                    teid: 0x0102_0304,
                    seq: None,
                },
                v4(1),
                inner_udp.clone(),
            ],
        ),
        (
            "gtpu-seq-ipv6",
            vec![
                eth(1),
                v6(0),
                udp(2152, None),
                HeaderSpec::GtpV1U {
                    teid: 7,
                    seq: Some(0xbeef),
                },
                v6(1),
                tcp(),
            ],
        ),
        (
            "ipv4-in-ipv4",
            vec![eth(1), v4(0), v4(1), inner_udp.clone()],
        ),
        (
            "ipv6-in-ipv4",
            vec![eth(1), v4(0), v6(1), inner_udp.clone()],
        ),
        (
            "ipv4-in-ipv6",
            vec![eth(1), v6(0), v4(1), HeaderSpec::IcmpEcho { id: 1, seq: 2 }],
        ),
        (
            "arp",
            vec![
                eth(1),
                HeaderSpec::Arp {
                    op: 1,
                    sender_mac: [0x02, 0, 0, 0, 0, 1],
                    sender_ip: Ipv4Addr::new(192, 0, 2, 1),
                    target_mac: [0; 6],
                    target_ip: Ipv4Addr::new(192, 0, 2, 2),
                },
            ],
        ),
        (
            "arp-reply-tagged",
            vec![
                eth(1),
                HeaderSpec::Vlan {
                    tpid: VlanTpid::Dot1Q,
                    id: 42,
                    pcp: 0,
                },
                HeaderSpec::Arp {
                    op: 2,
                    sender_mac: [0x02, 0, 0, 0, 0, 0x0a],
                    sender_ip: Ipv4Addr::new(198, 51, 100, 7),
                    target_mac: [0x02, 0, 0, 0, 0, 0x0b],
                    target_ip: Ipv4Addr::new(198, 51, 100, 9),
                },
            ],
        ),
    ]
}

/// Each stack at its smallest size, one byte more (odd lengths), 200 and 1518.
fn frames() -> Vec<(String, StackSpec, StackFrame)> {
    let mut out = vec![];
    for (name, headers) in stacks() {
        let spec = StackSpec {
            headers,
            payload: Payload::Increment,
        };
        let min = spec.min_frame_size();
        for size in [min, min + 1, 200, 1518] {
            let frame = spec
                .build(size)
                .unwrap_or_else(|e| panic!("{name} at {size}: {e}"));
            assert_eq!(frame.bytes.len(), size - 4, "{name}");
            out.push((format!("{name} at {size}"), spec.clone(), frame));
        }
    }
    out
}

fn python() -> Option<std::path::PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "no virtualenv at {}: scripts/setup.sh makes it",
        python.display()
    );
    eprintln!("SKIPPED: no {} (run scripts/setup.sh)", python.display());
    None
}

/// What scapy reads in each frame, in order.
fn decode(python: &Path, frames: &[Vec<u8>]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stacks.pcap");
    let mut w = pcap_file::pcap::PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for f in frames {
        let p = pcap_file::pcap::PcapPacket::new(Duration::ZERO, f.len() as u32, f);
        w.write_packet(&p).unwrap();
    }
    drop(w);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stack_decode.py");
    let out = Command::new(python)
        .arg(script)
        .arg(&path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout).expect("JSON from stack_decode.py") {
        Value::Array(frames) => frames,
        other => panic!("not a list: {other}"),
    }
}

fn scapy_name(spec: &HeaderSpec, kind: LayerKind) -> &'static str {
    match (spec, kind) {
        (
            HeaderSpec::Vlan {
                tpid: VlanTpid::Dot1Ad,
                ..
            },
            _,
        ) => "Dot1AD",
        (_, LayerKind::Vlan) => "Dot1Q",
        (_, LayerKind::Ethernet) => "Ether",
        (_, LayerKind::Mpls) => "MPLS",
        (_, LayerKind::Ipv4) => "IP",
        (_, LayerKind::Ipv6) => "IPv6",
        (_, LayerKind::Gre) => "GRE",
        (_, LayerKind::Udp) => "UDP",
        (_, LayerKind::Tcp) => "TCP",
        (_, LayerKind::Icmpv4) => "ICMP",
        (_, LayerKind::Icmpv6) => "ICMPv6EchoRequest",
        (_, LayerKind::Vxlan) => "VXLAN",
        (_, LayerKind::GtpV1U) => "GTP_U_Header",
        (_, LayerKind::Arp) => "ARP",
    }
}

fn field(layer: &Value, name: &str) -> u64 {
    layer["fields"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no number {name} in {layer}"))
}

/// The values scapy read that the builder computed or copied from the spec.
fn check_layer(what: &str, layer: &Value, spec: &HeaderSpec, frame: &StackFrame, i: usize) {
    let l = frame.layers[i];
    // An Ethernet frame inside a tunnel keeps 4 bytes for its FCS after what it carries.
    let inner_frames = frame.layers[1..=i]
        .iter()
        .filter(|l| l.kind == LayerKind::Ethernet)
        .count();
    let to_end = (frame.bytes.len() - 4 * inner_frames - l.offset) as u64;
    let next = frame.layers.get(i + 1).map(|n| n.kind);
    let at = |n: &str| format!("{what}: layer {i} field {n} in {layer}");
    match spec {
        HeaderSpec::Ip(IpSpec::V4 { .. }) => {
            assert_eq!(field(layer, "len"), to_end, "{}", at("len"))
        }
        HeaderSpec::Ip(IpSpec::V6 { .. }) => {
            assert_eq!(field(layer, "plen"), to_end - 40, "{}", at("plen"))
        }
        HeaderSpec::Udp { dst_port, .. } => {
            assert_eq!(field(layer, "len"), to_end, "{}", at("len"));
            let want = dst_port.unwrap_or(match next {
                Some(LayerKind::Vxlan) => 4789,
                _ => 2152,
            });
            assert_eq!(field(layer, "dport"), u64::from(want), "{}", at("dport"));
        }
        HeaderSpec::Vlan { id, pcp, .. } => {
            assert_eq!(field(layer, "vlan"), u64::from(*id), "{}", at("vlan"));
            assert_eq!(field(layer, "prio"), u64::from(*pcp), "{}", at("prio"));
        }
        HeaderSpec::Mpls { label, tc, ttl } => {
            assert_eq!(field(layer, "label"), u64::from(*label), "{}", at("label"));
            assert_eq!(field(layer, "cos"), u64::from(*tc), "{}", at("cos"));
            assert_eq!(field(layer, "ttl"), u64::from(*ttl), "{}", at("ttl"));
            let bottom = u64::from(next != Some(LayerKind::Mpls));
            assert_eq!(field(layer, "s"), bottom, "{}", at("s"));
        }
        HeaderSpec::Gre(g) => {
            assert_eq!(
                field(layer, "chksum_present"),
                u64::from(g.checksum),
                "{}",
                at("C")
            );
            assert_eq!(
                field(layer, "key_present"),
                u64::from(g.key.is_some()),
                "{}",
                at("K")
            );
            assert_eq!(
                field(layer, "seqnum_present"),
                u64::from(g.seq.is_some()),
                "{}",
                at("S")
            );
            if let Some(k) = g.key {
                assert_eq!(field(layer, "key"), u64::from(k), "{}", at("key"));
            }
            if let Some(s) = g.seq {
                assert_eq!(
                    field(layer, "sequence_number"),
                    u64::from(s),
                    "{}",
                    at("seq")
                );
            }
        }
        HeaderSpec::Vxlan { vni } => {
            assert_eq!(field(layer, "vni"), u64::from(*vni), "{}", at("vni"));
            assert_eq!(field(layer, "flags"), 0x08, "{}", at("flags"));
        }
        HeaderSpec::GtpV1U { teid, seq } => {
            assert_eq!(field(layer, "teid"), u64::from(*teid), "{}", at("teid"));
            assert_eq!(field(layer, "gtp_type"), 0xff, "{}", at("gtp_type"));
            assert_eq!(field(layer, "length"), to_end - 8, "{}", at("length"));
            assert_eq!(field(layer, "S"), u64::from(seq.is_some()), "{}", at("S"));
            if let Some(s) = seq {
                assert_eq!(field(layer, "seq"), u64::from(*s), "{}", at("seq"));
            }
        }
        HeaderSpec::Arp {
            op,
            sender_mac,
            sender_ip,
            target_mac,
            target_ip,
        } => {
            assert_eq!(field(layer, "op"), u64::from(*op), "{}", at("op"));
            for (name, want) in [("hwtype", 1), ("ptype", 0x0800), ("hwlen", 6), ("plen", 4)] {
                assert_eq!(field(layer, name), want, "{}", at(name));
            }
            for (name, mac) in [("hwsrc", sender_mac), ("hwdst", target_mac)] {
                assert_eq!(
                    layer["fields"][name],
                    linerate_wire::format_mac(mac),
                    "{}",
                    at(name)
                );
            }
            assert_eq!(
                layer["fields"]["psrc"],
                sender_ip.to_string(),
                "{}",
                at("psrc")
            );
            assert_eq!(
                layer["fields"]["pdst"],
                target_ip.to_string(),
                "{}",
                at("pdst")
            );
        }
        _ => {}
    }
}

/// Every checksum scapy finds equals the one it computes, but a UDP checksum sent as zero.
fn check_checksums(what: &str, layers: &[Value], spec: &StackSpec) {
    for (i, layer) in layers.iter().enumerate() {
        let Some(c) = layer.get("checksum") else {
            continue;
        };
        let zero = matches!(
            spec.headers.get(i),
            Some(HeaderSpec::Udp {
                zero_checksum: true,
                ..
            })
        );
        if zero {
            assert_eq!(c["frame"], 0, "{what}: layer {i} {layer}");
        } else {
            assert_eq!(
                c["frame"], c["scapy"],
                "{what}: layer {i} checksum in {layer}"
            );
        }
    }
}

fn check_frame(what: &str, decoded: &Value, spec: &StackSpec, frame: &StackFrame) {
    let layers = decoded.as_array().expect("a list of layers");
    let n = spec.headers.len();
    let names: Vec<&str> = layers
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = spec
        .headers
        .iter()
        .zip(&frame.layers)
        .map(|(h, l)| scapy_name(h, l.kind))
        .collect();
    assert_eq!(names[..n.min(names.len())], want[..], "{what}");
    // The payload is what scapy leaves after the headers: Raw, or Padding after ARP; its
    // ICMPv6 echo request keeps the payload in its data field.
    let echo_data = layers[n - 1]["fields"]["data"]
        .as_str()
        .map_or(0, |d| d.len() / 2);
    let rest: usize = echo_data
        + layers[n..]
            .iter()
            .map(|l| {
                assert!(matches!(names[n], "Raw" | "Padding"), "{what}: {l}");
                l["fields"]["load"].as_str().unwrap().len() / 2
            })
            .sum::<usize>();
    assert_eq!(
        rest,
        frame.bytes.len() - frame.payload_offset,
        "{what}: payload"
    );
    for (i, (layer, h)) in layers.iter().zip(&spec.headers).enumerate() {
        check_layer(what, layer, h, frame, i);
    }
    check_checksums(what, layers, spec);
}

#[test]
fn scapy_decodes_every_stack_as_built() {
    let Some(python) = python() else { return };
    let frames = frames();
    let mut bytes: Vec<Vec<u8>> = frames.iter().map(|(_, _, f)| f.bytes.clone()).collect();
    // A control that must fail: the VXLAN frame with its inner UDP checksum broken.
    let (_, _, vx) = &frames[0];
    let mut broken = vx.bytes.clone();
    let inner_udp = vx.offset_of(LayerKind::Udp, 1).unwrap();
    broken[inner_udp + udp::field::CHECKSUM.start] ^= 0x01;
    bytes.push(broken);
    // An inner source port that increments, patched in place as the field engine will.
    let mut patched = vx.clone();
    let port = vx.offset_of(LayerKind::Udp, 1).unwrap() + udp::field::SRC_PORT.start;
    for p in 1024..1030 {
        patched.set_word(port, p).unwrap();
        bytes.push(patched.bytes.clone());
    }

    let decoded = decode(&python, &bytes);
    assert_eq!(decoded.len(), bytes.len());
    for ((what, spec, frame), d) in frames.iter().zip(&decoded) {
        check_frame(what, d, spec, frame);
    }
    let incrementing = &decoded[decoded.len() - 6..];
    for (p, d) in (1024..).zip(incrementing) {
        check_frame(&format!("vxlan inner port {p}"), d, &frames[0].1, &patched);
        assert_eq!(d[6]["fields"]["sport"], p, "{}", d[6]);
    }
    let control = decoded[frames.len()].as_array().unwrap();
    let c = &control[6]["checksum"];
    assert_eq!(control[6]["layer"], "UDP");
    assert_ne!(
        c["frame"], c["scapy"],
        "scapy must see the broken checksum: {c}"
    );
    // The outer UDP checksum is summed over the bytes on the wire (stack_decode.py), where the
    // flipped inner checksum is a changed byte under it: it breaks too.
    let outer = &control[2]["checksum"];
    assert_ne!(outer["frame"], outer["scapy"], "{outer}");
}
