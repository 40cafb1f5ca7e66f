use super::*;
use crate::MAX_FRAME_SIZE;
use crate::checksum;
use crate::header::udp;
use crate::testutil::*;

/// Builds `s` at `size`, checks it against etherparse and against a literal dump.
fn assert_vector(s: &FrameSpec, size: usize, dump: &str) {
    let f = build(s, size).unwrap();
    etherparse_check(&f);
    assert!(checksum::verify_frame(&f.bytes, &f.layout));
    assert_eq!(
        hex(&f.bytes),
        hex(&unhex(dump)),
        "frame differs from the vector"
    );
}

/// Where a plain frame's headers are, counted from the header lengths alone.
fn plain_layout(s: &FrameSpec, size: usize) -> Layout {
    let ipv6 = matches!(s.ip, IpSpec::V6 { .. });
    let ip_offset = 14 + if s.vlan.is_some() { 4 } else { 0 };
    let l4_offset = ip_offset + if ipv6 { 40 } else { 20 };
    let l4 = match (&s.l4, ipv6) {
        (L4Spec::Udp { .. }, _) => L4Proto::Udp,
        (L4Spec::Tcp { .. }, _) => L4Proto::Tcp,
        (L4Spec::IcmpEcho { .. }, false) => L4Proto::Icmpv4,
        (L4Spec::IcmpEcho { .. }, true) => L4Proto::Icmpv6,
    };
    Layout {
        eth_offset: 0,
        vlan_offset: s.vlan.as_ref().map(|_| 12),
        ip_offset,
        ipv6,
        l4_offset,
        l4,
        payload_offset: l4_offset + l4.header_len(),
        len: size - crate::units::FCS_LEN,
        inner_fcs: 0,
        arp_offset: None,
        ethernet_only: false,
    }
}

#[test]
fn vector_ipv4_udp_64() {
    assert_vector(
        &spec(None, v4(), udp(), Payload::Increment),
        64,
        "020000000002 020000000001 0800
         4500 002e 1234 4000 4011 1489 0a000001 0a000002
         0400 1389 001a 8bdd
         000102030405060708090a0b0c0d0e0f1011",
    );
}

#[test]
fn vector_vlan_ipv6_tcp_90() {
    assert_vector(
        &spec(
            Some(VlanTag { id: 100, pcp: 5 }),
            v6(),
            tcp(),
            Payload::Fixed(0xab),
        ),
        90,
        "020000000002 020000000001 8100 a064 86dd
         60012345 001c 06 40 20010db8000000000000000000000001 20010db8000000000000000000000002
         0400 0050 01020304 00000000 50 02 2000 7d61 0000
         abababababababab",
    );
}

#[test]
fn vector_icmpv4_echo_64() {
    assert_vector(
        &spec(None, v4(), icmp(), Payload::Pattern(vec![0xde, 0xad])),
        64,
        "020000000002 020000000001 0800
         4500 002e 1234 4000 4001 1499 0a000001 0a000002
         08 00 e199 4242 0007
         deaddeaddeaddeaddeaddeaddeaddeaddead",
    );
}

#[test]
fn vector_icmpv6_echo_70() {
    assert_vector(
        &spec(None, v6(), icmp(), Payload::Increment),
        70,
        "020000000002 020000000001 86dd
         60012345 000c 3a 40 20010db8000000000000000000000001 20010db8000000000000000000000002
         80 00 dff6 4242 0007
         00010203",
    );
}

#[test]
fn every_size_and_protocol_verifies_and_parses() {
    for payload in [
        Payload::Increment,
        Payload::Random { seed: 9 },
        Payload::Fixed(0xff),
    ] {
        for s in all_specs(payload) {
            for size in s.stack().min_frame_size()..=1518 {
                let f = build(&s, size).unwrap();
                assert_eq!(f.bytes.len(), size - crate::units::FCS_LEN);
                assert_eq!(f.layout, plain_layout(&s, size), "{s:?} at {size}");
                assert!(
                    checksum::verify_frame(&f.bytes, &f.layout),
                    "{s:?} at {size}"
                );
                etherparse_check(&f);
            }
        }
    }
}

#[test]
fn jumbo_and_limit_sizes_build() {
    let s = spec(None, v4(), udp(), Payload::Increment);
    let f = build(&s, MAX_FRAME_SIZE).unwrap();
    etherparse_check(&f);
    assert!(checksum::verify_frame(&f.bytes, &f.layout));
    assert_eq!(
        build(&s, MAX_FRAME_SIZE + 1),
        Err(WireError::FrameTooLarge {
            size: MAX_FRAME_SIZE + 1,
            max: MAX_FRAME_SIZE
        })
    );
}

#[test]
fn min_frame_size_is_headers_plus_fcs_but_at_least_64() {
    assert_eq!(
        spec(None, v4(), udp(), Payload::Increment)
            .stack()
            .min_frame_size(),
        64
    );
    // 14 + 4 + 40 + 20 + 4
    let s = spec(
        Some(VlanTag { id: 1, pcp: 0 }),
        v6(),
        tcp(),
        Payload::Increment,
    );
    assert_eq!(s.stack().min_frame_size(), 82);
    assert_eq!(
        build(&s, 81),
        Err(WireError::FrameTooSmall { size: 81, min: 82 })
    );
}

#[test]
fn out_of_range_header_values_are_refused() {
    let mut s = spec(
        Some(VlanTag { id: 4096, pcp: 0 }),
        v4(),
        udp(),
        Payload::Increment,
    );
    assert_eq!(build(&s, 64), Err(WireError::VlanIdOutOfRange { id: 4096 }));
    s.vlan = Some(VlanTag { id: 1, pcp: 8 });
    assert_eq!(build(&s, 64), Err(WireError::VlanPcpOutOfRange { pcp: 8 }));
    s.vlan = None;
    if let IpSpec::V4 { dscp, .. } = &mut s.ip {
        *dscp = 64;
    }
    assert_eq!(build(&s, 64), Err(WireError::DscpOutOfRange { dscp: 64 }));
    let mut s6 = spec(None, v6(), udp(), Payload::Increment);
    if let IpSpec::V6 { flow_label, .. } = &mut s6.ip {
        *flow_label = 0x10_0000;
    }
    assert!(matches!(
        build(&s6, 90),
        Err(WireError::FlowLabelOutOfRange { .. })
    ));
}

#[test]
fn payloads_fill_as_described() {
    let payload = |p: Payload| {
        let f = build(&spec(None, v4(), udp(), p), 72).unwrap();
        f.bytes[f.layout.payload_offset..].to_vec()
    };
    assert_eq!(payload(Payload::Fixed(7)), vec![7; 26]);
    assert_eq!(payload(Payload::Increment), (0..26).collect::<Vec<u8>>());
    assert_eq!(
        payload(Payload::Pattern(vec![1, 2, 3]))[..7],
        [1, 2, 3, 1, 2, 3, 1]
    );
    let raw = payload(Payload::Raw(vec![9, 8]));
    assert_eq!(raw[..3], [9, 8, 0]);
    assert!(raw[2..].iter().all(|&b| b == 0));
    let r1 = payload(Payload::Random { seed: 1 });
    assert_eq!(
        r1,
        payload(Payload::Random { seed: 1 }),
        "random payload is reproducible"
    );
    assert_ne!(r1, payload(Payload::Random { seed: 2 }));
    let long = build(&spec(None, v4(), udp(), Payload::Raw(vec![0; 19])), 64);
    assert_eq!(
        long,
        Err(WireError::PayloadTooLong {
            len: 19,
            room: 18,
            frame_size: 64
        })
    );
}

#[test]
fn udp_zero_checksum_is_sent_as_ffff() {
    // Search a payload byte that makes the computed checksum 0; the builder must store 0xFFFF.
    let base = spec(None, v4(), udp(), Payload::Raw(vec![0, 0]));
    let f = build(&base, 64).unwrap();
    let c = f.layout.l4_offset + udp::field::CHECKSUM.start;
    let stored = u16::from_be_bytes([f.bytes[c], f.bytes[c + 1]]);
    // Adding `stored` as the first payload word brings the sum to 0xFFFF, the checksum to 0.
    let s = spec(
        None,
        v4(),
        udp(),
        Payload::Raw(stored.to_be_bytes().to_vec()),
    );
    let f = build(&s, 64).unwrap();
    assert_eq!(f.bytes[c..c + 2], [0xFF, 0xFF]);
    assert!(checksum::verify_frame(&f.bytes, &f.layout));
    etherparse_check(&f);
}

#[test]
fn payload_parse_forms() {
    assert_eq!(Payload::parse("fixed:0xAB").unwrap(), Payload::Fixed(0xab));
    assert_eq!(Payload::parse("fixed:171").unwrap(), Payload::Fixed(171));
    assert_eq!(Payload::parse("inc").unwrap(), Payload::Increment);
    assert_eq!(
        Payload::parse("random").unwrap(),
        Payload::Random { seed: 0 }
    );
    assert_eq!(
        Payload::parse("random:42").unwrap(),
        Payload::Random { seed: 42 }
    );
    assert_eq!(
        Payload::parse("pattern:DEADBEEF").unwrap(),
        Payload::Pattern(vec![0xde, 0xad, 0xbe, 0xef])
    );
    assert_eq!(
        Payload::parse("raw:0011aabb").unwrap(),
        Payload::Raw(vec![0, 0x11, 0xaa, 0xbb])
    );
}

#[test]
fn payload_parse_errors_name_the_input_and_list_forms() {
    for bad in [
        "fixed:256",
        "fixed",
        "fixed:x",
        "pattern:abc",
        "pattern:",
        "raw:zz",
        "random:-1",
        "zeros",
        "inc:3",
    ] {
        let msg = Payload::parse(bad).unwrap_err().to_string();
        assert!(msg.contains(&format!("{bad:?}")), "{msg}");
        assert!(msg.contains("pattern:HEX"), "{msg}");
    }
}

#[test]
fn tcp_flags_parse_names_and_letters() {
    let sa = TcpFlags {
        syn: true,
        ack: true,
        ..TcpFlags::default()
    };
    assert_eq!(TcpFlags::parse("syn,ack").unwrap(), sa);
    assert_eq!(TcpFlags::parse("SA").unwrap(), sa);
    assert_eq!(TcpFlags::parse("ACK|SYN").unwrap(), sa);
    assert_eq!(TcpFlags::parse("").unwrap(), TcpFlags::default());
    assert_eq!(TcpFlags::parse("FSRPAUEC").unwrap().bits(), 0xff);
    assert_eq!(sa.bits(), 0x12);
    assert_eq!(TcpFlags::parse("psh").unwrap().bits(), 0x08);
    for b in 0..=255u8 {
        assert_eq!(TcpFlags::from_bits(b).bits(), b);
    }
    let msg = TcpFlags::parse("syn,bogus").unwrap_err().to_string();
    assert!(
        msg.contains("\"syn,bogus\"") && msg.contains("\"bogus\""),
        "{msg}"
    );
}
