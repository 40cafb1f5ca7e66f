//! ARP streams compiled into plans: every frame read field by field.

use std::net::Ipv4Addr;

use linerate_wire::{Rng, signature};

use crate::{ArpOp, Limits, Plan, Proto, Shape, SpecFile, StreamError, StreamSpec};

fn arp(vary: &[&str]) -> StreamSpec {
    StreamSpec {
        proto: Proto::Arp,
        dst_mac: Some("ff:ff:ff:ff:ff:ff".parse().unwrap()),
        src_mac: Some("02:00:00:00:00:0a".parse().unwrap()),
        src_ip: Some("10.0.0.1".parse().unwrap()),
        dst_ip: Some("10.0.0.254".parse().unwrap()),
        vary: vary.iter().map(|v| v.parse().unwrap()).collect(),
        ..StreamSpec::default()
    }
}

fn compile(s: StreamSpec) -> Result<Plan, StreamError> {
    Plan::compile(&[s], &Limits::default())
}

/// Frames `0..n` of a one-stream plan, every per-frame patch applied and stamped, as sent.
fn frames(plan: &Plan, n: u64) -> Vec<Vec<u8>> {
    let Shape::Cycle { cycle, .. } = &plan.shape else {
        panic!("one cycle");
    };
    let mut rng = Rng::new(cycle.seed);
    (0..n)
        .map(|k| {
            let mut f = cycle.frames[(k % cycle.frames.len() as u64) as usize].clone();
            for p in &cycle.patches {
                p.apply(&mut f, k, &mut rng);
            }
            signature::stamp(&mut f, k as u32, 0x1234_5678_9abc + k);
            f
        })
        .collect()
}

/// The ARP fields of an untagged frame: (op, sender MAC, sender IP, target MAC, target IP).
fn fields(f: &[u8]) -> (u16, [u8; 6], Ipv4Addr, [u8; 6], Ipv4Addr) {
    assert_eq!(&f[12..14], &[0x08, 0x06], "ethertype ARP");
    let a = &f[14..];
    assert_eq!(&a[..6], &[0, 1, 0x08, 0, 6, 4], "Ethernet/IPv4 ARP");
    let ip = |r: std::ops::Range<usize>| Ipv4Addr::from(<[u8; 4]>::try_from(&a[r]).unwrap());
    (
        u16::from_be_bytes([a[6], a[7]]),
        a[8..14].try_into().unwrap(),
        ip(14..18),
        a[18..24].try_into().unwrap(),
        ip(24..28),
    )
}

#[test]
fn a_gratuitous_arp_storm_increments_both_addresses_and_carries_a_signature() {
    let plan = compile(StreamSpec {
        signature: true,
        vary: vec![
            "arp-sender-ip:inc:10.0.0.1-10.0.0.200".parse().unwrap(),
            "arp-target-ip:inc:10.0.0.1-10.0.0.200".parse().unwrap(),
            "arp-sender-mac:inc:02:00:00:00:01:00-02:00:00:00:01:ff"
                .parse()
                .unwrap(),
        ],
        ..arp(&[])
    })
    .unwrap();
    for (k, f) in frames(&plan, 300).iter().enumerate() {
        // 64 bytes with the FCS: 42 of headers, 18 of padding that hold the signature.
        assert_eq!(f.len(), 60);
        let (op, sha, spa, tha, tpa) = fields(f);
        let ip = Ipv4Addr::new(10, 0, 0, 1 + (k % 200) as u8);
        assert_eq!((op, spa, tpa, tha), (1, ip, ip, [0; 6]));
        assert_eq!(sha, [2, 0, 0, 0, 1, (k % 256) as u8]);
        assert_eq!(
            &f[6..12],
            &[2, 0, 0, 0, 0, 0x0a],
            "the Ethernet source stays"
        );
        let sig = signature::parse(f).expect("signature in the padding");
        assert_eq!(sig.seq, k as u32);
    }
}

#[test]
fn a_reply_targets_the_frame_destination_and_pads_to_the_size_asked() {
    let plan = compile(StreamSpec {
        arp_op: ArpOp::Reply,
        dst_mac: Some("02:00:00:00:00:0b".parse().unwrap()),
        arp_sender_ip: Some(Ipv4Addr::new(192, 0, 2, 1)),
        size: 128,
        vlan: Some(7),
        ..arp(&[])
    })
    .unwrap();
    let f = &frames(&plan, 1)[0];
    assert_eq!(f.len(), 124);
    assert_eq!(&f[12..16], &[0x81, 0, 0, 7]);
    let untagged: Vec<u8> = [&f[..12], &f[16..]].concat();
    let (op, sha, spa, tha, tpa) = fields(&untagged);
    assert_eq!(op, 2);
    assert_eq!(sha, [2, 0, 0, 0, 0, 0x0a]);
    assert_eq!(spa, Ipv4Addr::new(192, 0, 2, 1));
    assert_eq!(tha, [2, 0, 0, 0, 0, 0x0b]);
    assert_eq!(tpa, Ipv4Addr::new(10, 0, 0, 254));
}

#[test]
fn arp_inside_vxlan_keeps_its_ethernet_header() {
    let plan = compile(StreamSpec {
        encap: Some("ethernet/ipv4/udp/vxlan:vni=5".parse().unwrap()),
        size: 128,
        ..arp(&["arp-target-ip:inc:10.0.1.1-10.0.1.9"])
    })
    .unwrap();
    for (k, f) in frames(&plan, 12).iter().enumerate() {
        let inner = &f[14 + 20 + 8 + 8..];
        let (_, _, _, _, tpa) = fields(inner);
        assert_eq!(tpa, Ipv4Addr::new(10, 0, 1, 1 + (k % 9) as u8));
    }
}

#[test]
fn arp_mistakes_are_refused_with_the_key_they_concern() {
    let err = |s: StreamSpec| compile(s).unwrap_err().to_string();
    let e = err(StreamSpec {
        arp_op: ArpOp::Reply,
        ..StreamSpec::default()
    });
    assert!(e.contains("proto = \"arp\""), "{e}");
    let e = err(StreamSpec {
        ipv6: true,
        src_ip: None,
        dst_ip: None,
        ..arp(&[])
    });
    assert!(e.contains("IPv4"), "{e}");
    let e = err(arp(&["src-ip:inc:10.0.0.1-10.0.0.9"]));
    assert!(e.contains("arp-sender-ip"), "{e}");
    let e = err(StreamSpec {
        encap: Some("ethernet/ipv4/gre".parse().unwrap()),
        ..arp(&[])
    });
    assert!(e.contains("Ethernet header"), "{e}");
    let e = err(StreamSpec {
        proto: Proto::Udp,
        ..arp(&["arp-target-ip:inc:10.0.1.1-10.0.1.9"])
    });
    assert!(e.contains("not ARP"), "{e}");
}

#[test]
fn the_stream_file_reads_and_writes_the_arp_keys() {
    let text = r#"
[[stream]]
proto = "arp"
arp-op = "reply"
arp-sender-mac = "02:00:00:00:00:0c"
arp-sender-ip = "10.1.0.1"
arp-target-mac = "02:00:00:00:00:0d"
arp-target-ip = "10.1.0.2"
vary = ["arp-sender-ip:inc:10.1.0.1-10.1.0.50"]
"#;
    let file: SpecFile = toml::from_str(text).unwrap();
    let s = &file.streams[0];
    assert_eq!((s.proto, s.arp_op), (Proto::Arp, ArpOp::Reply));
    assert_eq!(s.arp_target_ip, Some(Ipv4Addr::new(10, 1, 0, 2)));
    let back: SpecFile = toml::from_str(&toml::to_string(&file).unwrap()).unwrap();
    assert_eq!(back, file);
    let bad = toml::from_str::<SpecFile>("[[stream]]\narp-op = \"ask\"\n")
        .unwrap_err()
        .to_string();
    assert!(bad.contains("'ask'"), "{bad}");
}
