use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;
use crate::testutil::*;
use crate::{FrameSpec, IpSpec, L4Spec, Payload, TcpFlags, VlanTag};

fn arb_spec() -> impl Strategy<Value = FrameSpec> {
    let vlan = prop_oneof![
        Just(None),
        (0u16..=4095, 0u8..=7).prop_map(|(id, pcp)| Some(VlanTag { id, pcp }))
    ];
    let ip = prop_oneof![
        (
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
            any::<u8>(),
            any::<u16>(),
            0u8..=63
        )
            .prop_map(|(s, d, ttl, id, dscp)| {
                IpSpec::V4 {
                    src: Ipv4Addr::from(s),
                    dst: Ipv4Addr::from(d),
                    ttl,
                    id,
                    dscp,
                }
            }),
        (
            any::<[u8; 16]>(),
            any::<[u8; 16]>(),
            any::<u8>(),
            0u32..=0xF_FFFF
        )
            .prop_map(|(s, d, hop_limit, flow_label)| {
                IpSpec::V6 {
                    src: Ipv6Addr::from(s),
                    dst: Ipv6Addr::from(d),
                    hop_limit,
                    flow_label,
                }
            }),
    ];
    let l4 = prop_oneof![
        (any::<u16>(), any::<u16>())
            .prop_map(|(src_port, dst_port)| L4Spec::Udp { src_port, dst_port }),
        (
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            any::<u32>(),
            any::<u8>(),
            any::<u16>()
        )
            .prop_map(|(src_port, dst_port, seq, ack, f, window)| L4Spec::Tcp {
                src_port,
                dst_port,
                seq,
                ack,
                flags: TcpFlags::from_bits(f),
                window
            }),
        (any::<u16>(), any::<u16>()).prop_map(|(id, seq)| L4Spec::IcmpEcho { id, seq }),
    ];
    let payload = prop_oneof![
        any::<u64>().prop_map(|seed| Payload::Random { seed }),
        any::<u8>().prop_map(Payload::Fixed),
        Just(Payload::Increment),
    ];
    (any::<[u8; 6]>(), any::<[u8; 6]>(), vlan, ip, l4, payload).prop_map(
        |(src_mac, dst_mac, vlan, ip, l4, payload)| FrameSpec {
            src_mac,
            dst_mac,
            vlan,
            ip,
            l4,
            payload,
        },
    )
}

fn arb_field() -> impl Strategy<Value = Field> {
    prop_oneof![
        3 => proptest::sample::select(NAMED.iter().map(|(_, f)| *f).collect::<Vec<_>>()),
        1 => (0u16..120, proptest::sample::select(vec![1u8, 2, 4, 8]))
            .prop_map(|(offset, width)| Field::Byte { offset, width }),
    ]
}

/// The same change made through the spec, for fields the spec names.
fn respec(s: &FrameSpec, f: Field, v: u64) -> Option<FrameSpec> {
    let mut s = s.clone();
    let mac = |v: u64| -> [u8; 6] { v.to_be_bytes()[2..].try_into().unwrap() };
    match (f, &mut s.ip, &mut s.l4) {
        (Field::SrcMac, ..) => s.src_mac = mac(v),
        (Field::DstMac, ..) => s.dst_mac = mac(v),
        (Field::VlanId, ..) => s.vlan.as_mut()?.id = v as u16,
        (Field::SrcIp, IpSpec::V4 { src, .. }, _) => *src = Ipv4Addr::from(v as u32),
        (Field::DstIp, IpSpec::V4 { dst, .. }, _) => *dst = Ipv4Addr::from(v as u32),
        (Field::SrcIp, IpSpec::V6 { src, .. }, _) => *src = with_low64(*src, v),
        (Field::DstIp, IpSpec::V6 { dst, .. }, _) => *dst = with_low64(*dst, v),
        (Field::IpId, IpSpec::V4 { id, .. }, _) => *id = v as u16,
        (Field::Ttl, IpSpec::V4 { ttl, .. }, _) => *ttl = v as u8,
        (Field::Ttl, IpSpec::V6 { hop_limit, .. }, _) => *hop_limit = v as u8,
        (Field::SrcPort, _, L4Spec::Udp { src_port, .. } | L4Spec::Tcp { src_port, .. }) => {
            *src_port = v as u16
        }
        (Field::DstPort, _, L4Spec::Udp { dst_port, .. } | L4Spec::Tcp { dst_port, .. }) => {
            *dst_port = v as u16
        }
        _ => return None,
    }
    Some(s)
}

fn with_low64(a: Ipv6Addr, v: u64) -> Ipv6Addr {
    let mut o = a.octets();
    o[8..].copy_from_slice(&v.to_be_bytes());
    Ipv6Addr::from(o)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Incremental checksum = full checksum, for every field kind, offset parity and frame parity.
    #[test]
    fn write_equals_full_recompute(s in arb_spec(), f in arb_field(), extra in 0usize..200, value in any::<u64>()) {
        let min = s.stack().min_frame_size();
        let size = min + extra;
        let frame = build(&s, size).unwrap();
        let smallest = build(&s, min).unwrap().layout;
        let Ok(loc) = f.locate(&smallest) else { return Ok(()) };
        let mut patched = frame.bytes.clone();
        loc.write(&mut patched, value);
        let max = f.max_value(&frame.layout);
        prop_assert_eq!(loc.read(&patched), value & max);

        let mut recomputed = patched.clone();
        prop_assert!(checksum::fill_frame(&mut recomputed, &frame.layout));
        prop_assert_eq!(hex(&patched), hex(&recomputed));
        prop_assert!(checksum::verify_frame(&patched, &frame.layout));

        if let Some(s2) = respec(&s, f, value & max) {
            prop_assert_eq!(hex(&patched), hex(&build(&s2, size).unwrap().bytes));
        }
    }

    /// Patching only touches the field and the checksums that cover it.
    #[test]
    fn write_touches_nothing_else(s in arb_spec(), f in arb_field(), value in any::<u64>()) {
        let frame = build(&s, s.stack().min_frame_size()).unwrap();
        let Ok(loc) = f.locate(&frame.layout) else { return Ok(()) };
        let mut patched = frame.bytes.clone();
        loc.write(&mut patched, value);
        let mut allowed = vec![false; patched.len()];
        let o = usize::from(loc.offset);
        allowed[o..o + usize::from(loc.width)].iter_mut().for_each(|a| *a = true);
        for c in [loc.ip_csum, loc.l4_csum].into_iter().flatten() {
            allowed[usize::from(c)] = true;
            allowed[usize::from(c) + 1] = true;
        }
        for (i, (a, b)) in frame.bytes.iter().zip(&patched).enumerate() {
            prop_assert!(allowed[i] || a == b, "byte {} changed", i);
        }
    }
}

#[test]
fn names_round_trip() {
    for (name, f) in NAMED {
        assert_eq!(Field::parse(name).unwrap(), f);
        assert_eq!(f.name(), name);
    }
    assert_eq!(
        Field::parse("byte@42").unwrap(),
        Field::Byte {
            offset: 42,
            width: 1
        }
    );
    assert_eq!(
        Field::parse("byte@0x2a/4").unwrap(),
        Field::Byte {
            offset: 42,
            width: 4
        }
    );
    assert_eq!(
        Field::Byte {
            offset: 42,
            width: 4
        }
        .name(),
        "byte@42/4"
    );
    assert_eq!(
        Field::Byte {
            offset: 42,
            width: 1
        }
        .name(),
        "byte@42"
    );
}

#[test]
fn field_parse_errors_name_the_input() {
    let msg = Field::parse("src-mack").unwrap_err().to_string();
    assert!(
        msg.contains("\"src-mack\"") && msg.contains("dst-port") && msg.contains("byte@OFFSET"),
        "{msg}"
    );
    for bad in ["byte@", "byte@x", "byte@70000", "byte@4/3", "byte@4/"] {
        let msg = Field::parse(bad).unwrap_err().to_string();
        assert!(msg.contains(&format!("{bad:?}")), "{msg}");
    }
}

#[test]
fn locate_named_fields() {
    let s = spec(
        Some(VlanTag { id: 5, pcp: 1 }),
        v4(),
        udp(),
        Payload::Increment,
    );
    let l = build(&s, 64).unwrap().layout;
    let vid = Field::VlanId.locate(&l).unwrap();
    assert_eq!(
        (vid.offset, vid.width, vid.bits, vid.ip_csum, vid.l4_csum),
        (14, 2, 0x0FFF, None, None)
    );
    let src = Field::SrcIp.locate(&l).unwrap();
    assert_eq!((src.offset, src.width), (18 + 12, 4));
    assert_eq!(
        (src.ip_csum, src.l4_csum, src.l4_udp),
        (Some(18 + 10), Some(38 + 6), true)
    );
    let ttl = Field::Ttl.locate(&l).unwrap();
    assert_eq!((ttl.offset, ttl.ip_csum, ttl.l4_csum), (26, Some(28), None));
    let port = Field::DstPort.locate(&l).unwrap();
    assert_eq!(
        (port.offset, port.ip_csum, port.l4_csum),
        (40, None, Some(44))
    );

    let l6 = build(&spec(None, v6(), icmp(), Payload::Increment), 70)
        .unwrap()
        .layout;
    let dst = Field::DstIp.locate(&l6).unwrap();
    assert_eq!((dst.offset, dst.width, dst.bits), (14 + 32, 8, u64::MAX));
    assert_eq!(
        (dst.ip_csum, dst.l4_csum, dst.l4_udp),
        (None, Some(54 + 2), false)
    );
    assert_eq!(Field::SrcIp.max_value(&l6), u64::MAX);

    // ICMPv4 has no pseudo-header: addresses are under the IP checksum only.
    let l4 = build(&spec(None, v4(), icmp(), Payload::Increment), 64)
        .unwrap()
        .layout;
    let src = Field::SrcIp.locate(&l4).unwrap();
    assert_eq!((src.ip_csum, src.l4_csum), (Some(24), None));
}

#[test]
fn locate_refuses_what_is_not_there() {
    let l6 = build(&spec(None, v6(), icmp(), Payload::Increment), 66)
        .unwrap()
        .layout;
    let msg = |f: Field| f.locate(&l6).unwrap_err().to_string();
    assert!(msg(Field::VlanId).contains("no VLAN"));
    assert!(msg(Field::IpId).contains("IPv6"));
    assert!(msg(Field::SrcPort).contains("not ports"));
    assert!(
        msg(Field::Byte {
            offset: 61,
            width: 2
        })
        .contains("smallest frame holds 62")
    );
    // The ICMPv6 checksum at 56..58.
    assert!(
        msg(Field::Byte {
            offset: 57,
            width: 1
        })
        .contains("checksum")
    );
    // Ethertype (uncovered) next to the IPv6 version word (uncovered) is fine; into the
    // source address (pseudo-header) is not.
    assert!(
        Field::Byte {
            offset: 12,
            width: 4
        }
        .locate(&l6)
        .is_ok()
    );
    assert!(
        msg(Field::Byte {
            offset: 20,
            width: 4
        })
        .contains("straddles")
    );
}

#[test]
fn parse_value_in_natural_notation() {
    assert_eq!(
        parse_value(&Field::SrcMac, "02:00:00:00:00:ff", false).unwrap(),
        0x0200_0000_00ff
    );
    assert_eq!(
        parse_value(&Field::DstIp, "10.0.0.1", false).unwrap(),
        0x0a00_0001
    );
    assert_eq!(
        parse_value(&Field::DstIp, "2001:db8::1:2", true).unwrap(),
        0x0000_0000_0001_0002
    );
    assert_eq!(parse_value(&Field::SrcPort, "0x1F90", false).unwrap(), 8080);
    assert_eq!(parse_value(&Field::VlanId, "4095", false).unwrap(), 4095);
    assert_eq!(
        parse_value(
            &Field::Byte {
                offset: 0,
                width: 8
            },
            "18446744073709551615",
            false
        )
        .unwrap(),
        u64::MAX
    );
    let err = |f: Field, s: &str, v6: bool| parse_value(&f, s, v6).unwrap_err().to_string();
    assert!(err(Field::VlanId, "4096", false).contains("vlan-id"));
    assert!(err(Field::SrcPort, "65536", false).contains("0xffff"));
    assert!(err(Field::SrcIp, "2001:db8::1", false).contains("\"2001:db8::1\""));
    assert!(err(Field::SrcIp, "10.0.0.1", true).contains("IPv6"));
    assert!(err(Field::Ttl, "lots", false).contains("\"lots\""));
    assert!(err(Field::DstMac, "02:00", false).contains("\"02:00\""));
}

#[test]
fn ipv4_ttl_patch_matches_rfc1624_by_hand() {
    let s = spec(None, v4(), udp(), Payload::Increment);
    let mut f = build(&s, 64).unwrap();
    let loc = Field::Ttl.locate(&f.layout).unwrap();
    let c = usize::from(loc.ip_csum.unwrap());
    let hc = u16::from_be_bytes([f.bytes[c], f.bytes[c + 1]]);
    let word = |b: &[u8]| u16::from_be_bytes([b[loc.offset as usize], b[loc.offset as usize + 1]]);
    let m = word(&f.bytes);
    loc.write(&mut f.bytes, 63);
    let m2 = word(&f.bytes);
    assert_eq!(
        u16::from_be_bytes([f.bytes[c], f.bytes[c + 1]]),
        checksum::update(hc, m, m2)
    );
}
