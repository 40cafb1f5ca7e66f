use std::net::{Ipv4Addr, Ipv6Addr};

use etherparse::{LinkExtHeader, NetHeaders, PacketHeaders, TransportHeader};

use super::*;
use crate::checksum::{fold, sum};
use crate::header::{at, get_be, udp as udp_h};
use crate::testutil::hex;

fn eth() -> HeaderSpec {
    HeaderSpec::Ethernet {
        src: [0x02, 0, 0, 0, 0, 1],
        dst: [0x02, 0, 0, 0, 0, 2],
    }
}

fn v4(a: u8) -> HeaderSpec {
    HeaderSpec::Ip(IpSpec::V4 {
        src: Ipv4Addr::new(10, a, 0, 1),
        dst: Ipv4Addr::new(10, a, 0, 2),
        ttl: 64,
        id: 1,
        dscp: 0,
    })
}

fn v6(a: u16) -> HeaderSpec {
    HeaderSpec::Ip(IpSpec::V6 {
        src: Ipv6Addr::new(0x2001, 0xdb8, a, 0, 0, 0, 0, 1),
        dst: Ipv6Addr::new(0x2001, 0xdb8, a, 0, 0, 0, 0, 2),
        hop_limit: 64,
        flow_label: 0,
    })
}

fn udp(dst: Option<u16>) -> HeaderSpec {
    HeaderSpec::Udp {
        src_port: 1024,
        dst_port: dst,
        zero_checksum: false,
    }
}

fn mpls(label: u32) -> HeaderSpec {
    HeaderSpec::Mpls {
        label,
        tc: 5,
        ttl: 64,
    }
}

fn vlan(tpid: VlanTpid, id: u16, pcp: u8) -> HeaderSpec {
    HeaderSpec::Vlan { tpid, id, pcp }
}

fn stack(headers: Vec<HeaderSpec>) -> StackSpec {
    StackSpec {
        headers,
        payload: Payload::Increment,
    }
}

fn vxlan_stack(inner_ip: HeaderSpec) -> StackSpec {
    stack(vec![
        eth(),
        v4(0),
        udp(None),
        HeaderSpec::Vxlan { vni: 0x12_3456 },
        eth(),
        inner_ip,
        udp(Some(5001)),
    ])
}

fn arp() -> HeaderSpec {
    HeaderSpec::Arp {
        op: arp::OP_REQUEST,
        sender_mac: [0x02, 0, 0, 0, 0, 1],
        sender_ip: Ipv4Addr::new(192, 0, 2, 1),
        target_mac: [0; 6],
        target_ip: Ipv4Addr::new(192, 0, 2, 2),
    }
}

/// The bytes of the `nth` header of `kind`, as hex.
fn header_hex(f: &StackFrame, kind: LayerKind, nth: usize) -> String {
    hex(&f.bytes[f.layer(kind, nth).expect("layer").range()])
}

#[test]
fn each_header_is_written_as_its_rfc_lays_it_out() {
    let f = vxlan_stack(v4(1)).build(128).unwrap();
    assert_eq!(header_hex(&f, LayerKind::Vxlan, 0), "0800000012345600");
    // UDP to 4789, length from the UDP header to the end of the frame.
    let u = &f.bytes[f.layer(LayerKind::Udp, 0).unwrap().range()];
    assert_eq!(hex(&u[..6]), format!("040012b5{:04x}", 124 - 34));
    assert_eq!(hex(&f.bytes[12..14]), "0800");

    let f = stack(vec![
        eth(),
        mpls(16),
        mpls(17),
        mpls(0xf_ffff),
        v4(1),
        udp(Some(9)),
    ])
    .build(128)
    .unwrap();
    assert_eq!(hex(&f.bytes[12..14]), "8847");
    assert_eq!(
        hex(&f.bytes[14..26]),
        "00010a40 00011a40 fffffb40".replace(' ', "")
    );

    let g = GreSpec {
        checksum: true,
        key: Some(0xdead_beef),
        seq: Some(42),
    };
    let f = stack(vec![eth(), v4(0), HeaderSpec::Gre(g), v6(1), udp(Some(9))])
        .build(128)
        .unwrap();
    let gre_hex = header_hex(&f, LayerKind::Gre, 0);
    assert_eq!(gre_hex[..8], *"b00086dd");
    assert_eq!(gre_hex[12..], *"0000deadbeef0000002a");
    assert_eq!(f.bytes[14 + 9], crate::tunnel::next::PROTO_GRE);
    let f = stack(vec![
        eth(),
        v4(0),
        HeaderSpec::Gre(GreSpec::default()),
        v4(1),
        udp(Some(9)),
    ])
    .build(128)
    .unwrap();
    assert_eq!(header_hex(&f, LayerKind::Gre, 0), "00000800");
    let nvgre = HeaderSpec::Gre(GreSpec::nvgre(0xab_cdef, 0x12).unwrap());
    let f = stack(vec![eth(), v4(0), nvgre, eth(), v4(1), udp(Some(9))])
        .build(128)
        .unwrap();
    assert_eq!(header_hex(&f, LayerKind::Gre, 0), "20006558abcdef12");

    let gtp = |seq| HeaderSpec::GtpV1U {
        teid: 0x0102_0304,
        seq,
    };
    let f = stack(vec![
        eth(),
        v4(0),
        udp(None),
        gtp(None),
        v4(1),
        udp(Some(9)),
    ])
    .build(128)
    .unwrap();
    assert_eq!(
        header_hex(&f, LayerKind::GtpV1U, 0),
        format!("30ff{:04x}01020304", 124 - 42 - 8)
    );
    assert_eq!(hex(&f.bytes[34 + 2..34 + 4]), "0868");
    let f = stack(vec![
        eth(),
        v4(0),
        udp(None),
        gtp(Some(0xbeef)),
        v4(1),
        udp(Some(9)),
    ])
    .build(128)
    .unwrap();
    assert_eq!(
        header_hex(&f, LayerKind::GtpV1U, 0),
        format!("32ff{:04x}01020304beef0000", 124 - 42 - 8)
    );

    let f = stack(vec![
        eth(),
        vlan(VlanTpid::Dot1Ad, 100, 3),
        vlan(VlanTpid::Dot1Q, 4094, 7),
        v4(1),
        udp(Some(9)),
    ])
    .build(64)
    .unwrap();
    assert_eq!(
        hex(&f.bytes[12..22]),
        "88a8606481 00effe0800".replace(' ', "")
    );

    let f = stack(vec![eth(), arp()]).build(64).unwrap();
    assert_eq!(hex(&f.bytes[12..14]), "0806");
    assert_eq!(
        header_hex(&f, LayerKind::Arp, 0),
        "0001 0800 06 04 0001 020000000001 c0000201 000000000000 c0000202".replace(' ', "")
    );

    for (inner, proto) in [(v4(1), 4), (v6(1), 41)] {
        let f = stack(vec![eth(), v4(0), inner, udp(Some(9))])
            .build(128)
            .unwrap();
        assert_eq!(f.bytes[14 + 9], proto);
    }
}

/// Checks an IP packet (lengths to the end, IPv4 header and L4 checksums) with etherparse's code.
fn etherparse_ip(bytes: &[u8]) -> PacketHeaders<'_> {
    let h = PacketHeaders::from_ip_slice(bytes).expect("etherparse parses the IP packet");
    let payload = h.payload.slice();
    match (&h.net, &h.transport) {
        (Some(NetHeaders::Ipv4(ip, _)), t) => {
            assert_eq!(usize::from(ip.total_len), bytes.len());
            assert_eq!(ip.calc_header_checksum(), ip.header_checksum);
            if let Some(TransportHeader::Udp(u)) = t {
                assert_eq!(u.calc_checksum_ipv4(ip, payload).unwrap(), u.checksum);
            }
            if let Some(TransportHeader::Tcp(t)) = t {
                assert_eq!(t.calc_checksum_ipv4(ip, payload).unwrap(), t.checksum);
            }
        }
        (Some(NetHeaders::Ipv6(ip, _)), t) => {
            assert_eq!(usize::from(ip.payload_length) + 40, bytes.len());
            if let Some(TransportHeader::Udp(u)) = t {
                assert_eq!(u.calc_checksum_ipv6(ip, payload).unwrap(), u.checksum);
            }
        }
        other => panic!("not IP: {other:?}"),
    }
    h
}

#[test]
fn etherparse_reads_qinq_ip_in_ip_vxlan_inner_frames_and_arp() {
    for size in [64, 65, 200, 1518] {
        let f = stack(vec![
            eth(),
            vlan(VlanTpid::Dot1Ad, 100, 3),
            vlan(VlanTpid::Dot1Q, 200, 0),
            v4(1),
            udp(Some(9)),
        ])
        .build(size)
        .unwrap();
        let h = PacketHeaders::from_ethernet_slice(&f.bytes).unwrap();
        let ids: Vec<(u16, u16)> = h
            .link_exts
            .iter()
            .map(|e| match e {
                LinkExtHeader::Vlan(v) => (v.vlan_id.value(), v.ether_type.0),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, [(100, 0x8100), (200, 0x0800)]);
        etherparse_ip(&f.bytes[f.offset_of(LayerKind::Ipv4, 0).unwrap()..]);

        for inner in [v4(1), v6(1)] {
            let s = stack(vec![eth(), v4(0), inner, udp(Some(9))]);
            let f = s.build(size.max(s.min_frame_size())).unwrap();
            let outer = etherparse_ip(&f.bytes[14..]);
            assert!(outer.transport.is_none());
            let inner = etherparse_ip(outer.payload.slice());
            assert!(matches!(inner.transport, Some(TransportHeader::Udp(_))));

            let f = vxlan_stack(inner_ip_of(&f)).build(size.max(200)).unwrap();
            etherparse_ip(&f.bytes[14..]);
            // The inner frame keeps 4 bytes for its FCS: its IP packet ends before them.
            let inner_eth = &f.bytes[f.offset_of(LayerKind::Ethernet, 1).unwrap()..];
            let inner_eth = &inner_eth[..inner_eth.len() - 4];
            let h = PacketHeaders::from_ethernet_slice(inner_eth).unwrap();
            assert!(matches!(h.transport, Some(TransportHeader::Udp(_))));
            etherparse_ip(&inner_eth[14..]);
        }

        let f = stack(vec![eth(), arp()]).build(size).unwrap();
        let h = PacketHeaders::from_ethernet_slice(&f.bytes).unwrap();
        let Some(NetHeaders::Arp(a)) = h.net else {
            panic!("not ARP: {:?}", h.net)
        };
        assert_eq!(a.sender_protocol_addr(), [192, 0, 2, 1]);
        assert_eq!(a.target_protocol_addr(), [192, 0, 2, 2]);
        assert_eq!(f.payload_offset, 14 + 28);
    }
}

fn inner_ip_of(f: &StackFrame) -> HeaderSpec {
    match f.layers[2].kind {
        LayerKind::Ipv6 => v6(1),
        _ => v4(1),
    }
}

/// Sums a checksum's bytes and pseudo-header with the stored value: a valid one folds to ones.
fn valid(f: &StackFrame, c: &ChecksumSpan) -> bool {
    let covered = &f.bytes[c.covers.clone()];
    let initial = c.pseudo_header.map_or(0, |ip| {
        let ip = f.layers[ip];
        let (addrs, proto) = match ip.kind {
            LayerKind::Ipv6 => (at(ip.offset, 8..40), f.bytes[ip.offset + 6]),
            _ => (at(ip.offset, 12..20), f.bytes[ip.offset + 9]),
        };
        sum(&f.bytes[addrs], u32::from(proto) + covered.len() as u32)
    });
    fold(sum(covered, initial)) == 0xFFFF
}

fn tunnel_stacks() -> Vec<StackSpec> {
    let gre_all = GreSpec {
        checksum: true,
        key: Some(1),
        seq: Some(2),
    };
    vec![
        vxlan_stack(v4(1)),
        vxlan_stack(v6(1)),
        stack(vec![
            eth(),
            v4(0),
            HeaderSpec::Gre(gre_all),
            eth(),
            v6(1),
            udp(Some(9)),
        ]),
        stack(vec![
            eth(),
            v6(0),
            HeaderSpec::Gre(gre_all),
            mpls(3),
            v4(1),
            udp(Some(9)),
        ]),
        stack(vec![
            eth(),
            v6(0),
            udp(None),
            HeaderSpec::GtpV1U { teid: 1, seq: None },
            v4(1),
            HeaderSpec::IcmpEcho { id: 1, seq: 1 },
        ]),
        stack(vec![
            eth(),
            v4(0),
            v6(1),
            HeaderSpec::IcmpEcho { id: 1, seq: 1 },
        ]),
    ]
}

#[test]
fn every_checksum_is_valid_and_a_flip_breaks_only_checksums_over_it() {
    for s in tunnel_stacks() {
        let f = s.build(150).unwrap();
        assert!(!f.checksums.is_empty());
        for c in &f.checksums {
            assert!(valid(&f, c), "{s:?}: {c:?}");
        }
        // Innermost first: every checksum is computed after the ones it covers.
        for w in f.checksums.windows(2) {
            assert!(w[0].layer > w[1].layer, "{:?}", f.checksums);
        }
        for i in 0..f.bytes.len() {
            let mut broken = f.clone();
            broken.bytes[i] ^= 0x04;
            let listed: Vec<_> = f.checksums_over(i..i + 1).collect();
            for c in &broken.checksums {
                if !valid(&broken, c) {
                    assert!(listed.contains(&c), "byte {i} breaks {c:?}, not listed");
                }
            }
            // A payload byte is under every checksum but IPv4 headers' and, in an inner
            // Ethernet frame's FCS slot, those of the headers inside that frame.
            if i >= f.payload_offset {
                let inner_end = f.bytes.len() - s.inner_fcs_len();
                assert!(listed.iter().all(|c| c.covers.end >= inner_end));
                assert!(listed.iter().all(|c| !valid(&broken, c)), "byte {i}");
                let l4 = f.checksums.first().expect("the innermost");
                assert_eq!(listed.contains(&l4), i < inner_end, "byte {i}");
            }
        }
    }
}

#[test]
fn a_zero_udp_checksum_is_sent_as_zero_over_ipv4_only() {
    let zero = HeaderSpec::Udp {
        src_port: 1,
        dst_port: None,
        zero_checksum: true,
    };
    let mut s = vxlan_stack(v4(1));
    s.headers[2] = zero.clone();
    let f = s.build(128).unwrap();
    let u = f.offset_of(LayerKind::Udp, 0).unwrap();
    assert_eq!(get_be(&f.bytes, at(u, udp_h::field::CHECKSUM)), 0);
    assert!(f.checksums.iter().all(|c| c.layer != 2));
    // The inner UDP checksum is still there.
    let inner = f.offset_of(LayerKind::Udp, 1).unwrap();
    assert_ne!(get_be(&f.bytes, at(inner, udp_h::field::CHECKSUM)), 0);

    s.headers[1] = v6(0);
    let e = s.build(128).unwrap_err();
    assert_eq!(e, WireError::UdpZeroChecksumOverIpv6 { position: 3 });
    assert!(e.to_string().contains("RFC 8200"), "{e}");
}

#[test]
fn the_locator_finds_every_layer_and_the_payload() {
    let f = vxlan_stack(v4(1)).build(128).unwrap();
    let got: Vec<(LayerKind, usize, usize)> =
        f.layers.iter().map(|l| (l.kind, l.offset, l.len)).collect();
    use LayerKind::*;
    assert_eq!(
        got,
        [
            (Ethernet, 0, 14),
            (Ipv4, 14, 20),
            (Udp, 34, 8),
            (Vxlan, 42, 8),
            (Ethernet, 50, 14),
            (Ipv4, 64, 20),
            (Udp, 84, 8),
        ]
    );
    assert_eq!(f.payload_offset, 92);
    assert_eq!(f.offset_of(Udp, 1), Some(84));
    assert_eq!(f.innermost(Udp).map(|l| l.offset), Some(84));
    assert_eq!(f.offset_of(Udp, 2), None);
    // The inner source port is under the inner and the outer UDP checksums, not the IPv4 ones.
    let port = at(84, udp_h::field::SRC_PORT);
    let over: Vec<usize> = f.checksums_over(port).map(|c| c.layer).collect();
    assert_eq!(over, [6, 2]);
    // The inner addresses are in the inner UDP pseudo-header and inner IPv4 header checksum.
    let over: Vec<usize> = f
        .checksums_over(64 + 12..64 + 16)
        .map(|c| c.layer)
        .collect();
    assert_eq!(over, [6, 5, 2]);

    // VLAN tags start at their TPID, as `header::vlan` counts them.
    let f = stack(vec![
        eth(),
        vlan(VlanTpid::Dot1Ad, 1, 0),
        vlan(VlanTpid::Dot1Q, 2, 0),
        v6(1),
        udp(Some(9)),
    ])
    .build(128)
    .unwrap();
    assert_eq!(f.offset_of(Vlan, 0), Some(12));
    assert_eq!(f.offset_of(Vlan, 1), Some(16));
    assert_eq!(f.offset_of(Ipv6, 0), Some(22));
    let v = f.offset_of(Vlan, 1).unwrap();
    assert_eq!(get_be(&f.bytes, at(v, crate::header::vlan::field::TCI)), 2);
}

#[test]
fn sizes_count_the_outer_fcs_and_the_minimum_is_named() {
    let s = vxlan_stack(v6(1));
    // 14 + 20 + 8 + 8 + 14 + 40 + 8 headers, plus the inner frame's FCS and the outer one.
    assert_eq!(s.headers_len(), 112);
    assert_eq!(s.inner_fcs_len(), 4);
    assert_eq!(s.min_frame_size(), 120);
    let f = s.build(120).unwrap();
    assert_eq!(f.bytes.len(), 116);
    assert_eq!(f.payload_offset, 112);
    let e = s.build(119).unwrap_err();
    assert_eq!(
        e,
        WireError::FrameTooSmall {
            size: 119,
            min: 120
        }
    );
    assert!(e.to_string().contains("120"), "{e}");
    assert_eq!(stack(vec![eth(), arp()]).min_frame_size(), 64);
    assert!(matches!(
        s.build(MAX_FRAME_SIZE + 1),
        Err(WireError::FrameTooLarge { .. })
    ));
    let mut raw = s.clone();
    raw.payload = Payload::Raw(vec![1; 20]);
    assert!(matches!(
        raw.build(134),
        Err(WireError::PayloadTooLong { room: 14, .. })
    ));
    let f = raw.build(200).unwrap();
    assert_eq!(&f.bytes[112..132], &[1; 20]);
    assert_eq!(&f.bytes[f.bytes.len() - 4..], &[0; 4], "the inner FCS slot");
}

#[test]
fn a_stack_out_of_order_is_refused_with_what_may_come_instead() {
    let icmp = HeaderSpec::IcmpEcho { id: 1, seq: 1 };
    let vx = HeaderSpec::Vxlan { vni: 1 };
    let gtp = HeaderSpec::GtpV1U { teid: 1, seq: None };
    let gre = HeaderSpec::Gre(GreSpec::default());
    let cases: Vec<(Vec<HeaderSpec>, WireError)> = vec![
        (vec![], WireError::StackStart { first: "nothing" }),
        (
            vec![v4(0), udp(Some(1))],
            WireError::StackStart { first: "ipv4" },
        ),
        (
            vec![eth(), v4(0), udp(None), vx.clone(), v4(1), udp(Some(1))],
            WireError::StackOrder {
                position: 5,
                header: "ipv4",
                after: "vxlan",
                allowed: "ethernet",
            },
        ),
        (
            vec![
                eth(),
                v4(0),
                udp(None),
                gtp.clone(),
                eth(),
                v4(1),
                udp(Some(1)),
            ],
            WireError::StackOrder {
                position: 5,
                header: "ethernet",
                after: "gtpv1u",
                allowed: "ipv4 or ipv6",
            },
        ),
        (
            vec![eth(), v4(0), gre.clone(), udp(Some(1))],
            WireError::StackOrder {
                position: 4,
                header: "udp",
                after: "gre",
                allowed: "ethernet, ipv4, ipv6 or mpls",
            },
        ),
        (
            vec![eth(), mpls(1), udp(Some(1))],
            WireError::StackOrder {
                position: 3,
                header: "udp",
                after: "mpls",
                allowed: "mpls, ipv4, ipv6 or ethernet",
            },
        ),
        (
            vec![eth(), icmp.clone()],
            WireError::StackOrder {
                position: 2,
                header: "icmp",
                after: "ethernet",
                allowed: "vlan, mpls, ipv4, ipv6 or arp",
            },
        ),
        (
            vec![eth(), v4(0), udp(Some(1)), v4(1), udp(Some(1))],
            WireError::StackOrder {
                position: 4,
                header: "ipv4",
                after: "udp",
                allowed: "vxlan, gtpv1u or the payload",
            },
        ),
        (
            vec![eth(), v4(0), vlan(VlanTpid::Dot1Q, 1, 0), udp(Some(1))],
            WireError::StackOrder {
                position: 3,
                header: "vlan",
                after: "ipv4",
                allowed: "ipv4, ipv6, gre, udp, tcp or icmp",
            },
        ),
        (
            vec![eth(), arp(), v4(0)],
            WireError::StackOrder {
                position: 3,
                header: "ipv4",
                after: "arp",
                allowed: "only the payload",
            },
        ),
        (
            vec![eth(), v4(0), HeaderSpec::Gre(GreSpec::default())],
            WireError::StackEnd { last: "gre" },
        ),
        (
            vec![eth(), v4(0), udp(None), vx],
            WireError::StackEnd { last: "vxlan" },
        ),
        (
            vec![eth(), v4(0), udp(None)],
            WireError::UdpPortMissing { position: 3 },
        ),
        (
            vec![eth(), mpls(0x10_0000), v4(0), udp(Some(1))],
            WireError::MplsLabelOutOfRange {
                position: 2,
                label: 0x10_0000,
            },
        ),
        (
            vec![
                eth(),
                HeaderSpec::Mpls {
                    label: 1,
                    tc: 8,
                    ttl: 1,
                },
                v4(0),
                udp(Some(1)),
            ],
            WireError::MplsTcOutOfRange { position: 2, tc: 8 },
        ),
        (
            vec![
                eth(),
                v4(0),
                udp(None),
                HeaderSpec::Vxlan { vni: 1 << 24 },
                eth(),
                v4(1),
                icmp,
            ],
            WireError::VniOutOfRange {
                position: 4,
                vni: 1 << 24,
            },
        ),
        (
            vec![eth(), vlan(VlanTpid::Dot1Ad, 4096, 0), v4(0), udp(Some(1))],
            WireError::VlanIdOutOfRange { id: 4096 },
        ),
    ];
    for (headers, want) in cases {
        let s = stack(headers);
        assert_eq!(s.validate().unwrap_err(), want, "{s:?}");
        assert_eq!(s.build(1500).unwrap_err(), want);
        let msg = want.to_string();
        assert!(!msg.is_empty());
    }
    let e = GreSpec::nvgre(1 << 24, 0).unwrap_err();
    assert_eq!(e, WireError::VsidOutOfRange { vsid: 1 << 24 });
    let msg = WireError::StackOrder {
        position: 5,
        header: "ipv4",
        after: "vxlan",
        allowed: "ethernet",
    }
    .to_string();
    assert_eq!(
        msg,
        "header 5 (ipv4) cannot follow vxlan: after vxlan comes ethernet"
    );
}

#[test]
fn icmp_follows_the_ip_version_before_it() {
    let icmp = HeaderSpec::IcmpEcho { id: 7, seq: 9 };
    let f = stack(vec![eth(), v4(0), v6(1), icmp.clone()])
        .build(100)
        .unwrap();
    assert_eq!(f.layers[3].kind, LayerKind::Icmpv6);
    assert_eq!(
        f.bytes[f.layers[3].offset],
        crate::header::icmp::V6_ECHO_REQUEST
    );
    let f = stack(vec![eth(), v6(0), v4(1), icmp]).build(100).unwrap();
    assert_eq!(f.layers[3].kind, LayerKind::Icmpv4);
    assert_eq!(
        f.bytes[f.layers[3].offset],
        crate::header::icmp::V4_ECHO_REQUEST
    );
}

#[test]
fn an_inner_word_patched_in_place_matches_a_fresh_build() {
    let with_port = |inner_ip: HeaderSpec, port: u16| {
        let mut s = vxlan_stack(inner_ip);
        s.headers[6] = HeaderSpec::Udp {
            src_port: port,
            dst_port: Some(5001),
            zero_checksum: false,
        };
        s
    };
    for inner_ip in [v4(1), v6(1)] {
        let mut f = with_port(inner_ip.clone(), 0).build(131).unwrap();
        let port = f.offset_of(LayerKind::Udp, 1).unwrap() + udp_h::field::SRC_PORT.start;
        for p in (0..=u16::MAX).step_by(13).chain([0xFFFF, 1]) {
            f.set_word(port, p).unwrap();
            let fresh = with_port(inner_ip.clone(), p).build(131).unwrap();
            for c in &f.checksums {
                assert!(valid(&f, c), "port {p}: {c:?}");
            }
            assert_eq!(f.bytes, fresh.bytes, "port {p}");
        }
    }
    // An inner address word: under the inner UDP pseudo-header and IPv4 header checksums.
    let mut f = vxlan_stack(v4(1)).build(128).unwrap();
    let addr =
        f.offset_of(LayerKind::Ipv4, 1).unwrap() + crate::header::ipv4::field::SRC_ADDR.start;
    f.set_word(addr + 2, 0x0203).unwrap();
    assert!(f.checksums.iter().all(|c| valid(&f, c)));
    assert_eq!(&f.bytes[addr..addr + 4], &[10, 1, 2, 3]);
    // The TTL and protocol word: the protocol byte is in the UDP pseudo-header on its own.
    let ttl = f.offset_of(LayerKind::Ipv4, 1).unwrap() + crate::header::ipv4::field::TTL;
    f.set_word(ttl, 0x0511).unwrap();
    assert!(f.checksums.iter().all(|c| valid(&f, c)));
    let mut f6 = vxlan_stack(v6(1)).build(128).unwrap();
    let nh = f6.offset_of(LayerKind::Ipv6, 0).unwrap() + crate::header::ipv6::field::NXT_HDR;
    f6.set_word(nh, 0x1105).unwrap();
    assert!(f6.checksums.iter().all(|c| valid(&f6, c)));

    let csum = f.offset_of(LayerKind::Udp, 1).unwrap() + udp_h::field::CHECKSUM.start;
    assert!(matches!(
        f.set_word(csum, 0),
        Err(WireError::WordNotPatchable { .. })
    ));
    assert!(matches!(
        f.set_word(csum + 1, 0),
        Err(WireError::WordNotPatchable { .. })
    ));
    assert!(f.set_word(f.bytes.len(), 0).is_err());
}

#[test]
fn checksums_refilled_after_a_change_match_a_fresh_build() {
    for s in tunnel_stacks() {
        let f = s.build(160).unwrap();
        let ip = f
            .layers
            .iter()
            .rposition(|l| matches!(l.kind, LayerKind::Ipv4 | LayerKind::Ipv6));
        let ip = f.layers[ip.unwrap()];
        // The inner source address's last byte, and the inner source port or ICMP id.
        let src_last = ip.offset + if ip.kind == LayerKind::Ipv6 { 23 } else { 15 };
        let mut bytes = f.bytes.clone();
        bytes[src_last] ^= 0x5a;
        let l4 = f.layers.last().unwrap().offset;
        bytes[l4 + 5] ^= 0x33;
        assert!(f.refill_checksums(&mut bytes));
        let changed = StackFrame { bytes, ..f.clone() };
        for c in &changed.checksums {
            assert!(valid(&changed, c), "{:?}: {c:?}", s.headers);
        }
        assert!(!f.refill_checksums(&mut vec![0; f.bytes.len() - 1]));
    }
}

#[test]
fn the_flow_layout_is_the_innermost_ethernet_ip_and_l4() {
    let f = vxlan_stack(v6(1)).build(160).unwrap();
    let l = f.flow_layout().unwrap();
    assert_eq!(l.eth_offset, f.offset_of(LayerKind::Ethernet, 1).unwrap());
    assert_eq!(l.ip_offset, f.offset_of(LayerKind::Ipv6, 0).unwrap());
    assert_eq!(l.l4_offset, f.offset_of(LayerKind::Udp, 1).unwrap());
    assert_eq!((l.ipv6, l.l4, l.vlan_offset), (true, L4Proto::Udp, None));
    assert_eq!((l.payload_offset, l.len), (f.payload_offset, 156));
    // A flow without an Ethernet header of its own has the outer one's, and its tag.
    let f = stack(vec![
        eth(),
        vlan(VlanTpid::Dot1Ad, 7, 0),
        v4(0),
        udp(None),
        HeaderSpec::GtpV1U { teid: 1, seq: None },
        v4(1),
        udp(Some(9)),
    ])
    .build(128)
    .unwrap();
    let l = f.flow_layout().unwrap();
    assert_eq!((l.eth_offset, l.vlan_offset), (0, Some(12)));
    assert_eq!(l.ip_offset, f.offset_of(LayerKind::Ipv4, 1).unwrap());
    let arp = stack(vec![eth(), vlan(VlanTpid::Dot1Q, 7, 0), arp()])
        .build(64)
        .unwrap();
    let l = arp.flow_layout().unwrap();
    assert_eq!((l.eth_offset, l.vlan_offset), (0, Some(12)));
    assert_eq!(l.arp_offset, Some(18));
    assert_eq!(l.payload_offset, 18 + 28);
}

#[test]
fn arp_fields_are_located_in_the_arp_header_without_checksums() {
    use crate::{Field, FieldValue};
    let mut f = stack(vec![eth(), arp()]).build(64).unwrap();
    let l = f.flow_layout().unwrap();
    let spa = Field::ArpSenderIp.locate(&l).unwrap();
    assert_eq!((spa.offset, spa.width), (14 + 14, 4));
    assert_eq!((spa.ip_csum, spa.l4_csum), (None, None));
    let tha = Field::ArpTargetMac.locate(&l).unwrap();
    assert_eq!((tha.offset, tha.width), (14 + 18, 6));
    let ip = FieldValue::parse(&Field::ArpTargetIp, "10.0.0.9").unwrap();
    let tpa = Field::ArpTargetIp.locate(&l).unwrap();
    tpa.write(&mut f.bytes, ip.bits(&Field::ArpTargetIp, false).unwrap());
    assert_eq!(&f.bytes[14 + 24..14 + 28], &[10, 0, 0, 9]);
    for refused in [Field::SrcIp, Field::Ttl, Field::DstPort] {
        let err = refused.locate(&l).unwrap_err().to_string();
        assert!(err.contains("ARP"), "{err}");
    }
    let ip_frame = stack(vec![eth(), v4(0), udp(Some(9))]).build(64).unwrap();
    let err = Field::ArpSenderIp
        .locate(&ip_frame.flow_layout().unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not ARP"), "{err}");
}

#[test]
fn a_frame_may_end_at_its_ethernet_or_ip_header_with_the_payload_after() {
    use crate::{Field, L4Proto};
    use etherparse::{EtherType, LinkSlice, NetSlice, SlicedPacket};
    // Ethernet and a VLAN tag, then the payload: ethertype 0xFFFF, nothing else to parse.
    let f = stack(vec![eth(), vlan(VlanTpid::Dot1Q, 7, 0)])
        .build(64)
        .unwrap();
    assert_eq!(f.bytes.len(), 60);
    let p = SlicedPacket::from_ethernet(&f.bytes).unwrap();
    let Some(LinkSlice::Ethernet2(e)) = &p.link else {
        panic!("ethernet");
    };
    assert_eq!(e.ether_type(), EtherType::VLAN_TAGGED_FRAME);
    assert_eq!(p.vlan_ids()[0].value(), 7);
    assert_eq!(&f.bytes[16..18], &[0xff, 0xff]);
    assert!(p.net.is_none() && p.transport.is_none());
    let l = f.flow_layout().unwrap();
    assert!(l.ethernet_only && l.l4 == L4Proto::None && l.payload_offset == 18);
    assert_eq!(Field::VlanId.locate(&l).unwrap().offset, 14);
    for refused in [Field::SrcIp, Field::IpId, Field::SrcPort] {
        let err = refused.locate(&l).unwrap_err().to_string();
        assert!(
            err.contains("no IP header") || err.contains("no L4"),
            "{err}"
        );
    }
    let byte = Field::Byte {
        offset: 18,
        width: 2,
    }
    .locate(&l)
    .unwrap();
    assert_eq!((byte.ip_csum, byte.l4_csum), (None, None));
    assert!(crate::checksum::verify_frame(&f.bytes, &l));
    // IPv4 and IPv6 with a raw payload: protocol 61 and next header 59, lengths to the end.
    for (ip, proto) in [(v4(1), 61u8), (v6(1), 59)] {
        let f = stack(vec![eth(), ip]).build(128).unwrap();
        let p = SlicedPacket::from_ethernet(&f.bytes).unwrap();
        match p.net {
            Some(NetSlice::Ipv4(v4)) => {
                let h = v4.header().to_header();
                assert_eq!((h.protocol.0, usize::from(h.total_len)), (proto, 124 - 14));
                assert_eq!(h.header_checksum, h.calc_header_checksum());
                assert_eq!(v4.payload().payload.len(), 124 - 34);
            }
            Some(NetSlice::Ipv6(v6)) => {
                let h = v6.header().to_header();
                assert_eq!(
                    (h.next_header.0, usize::from(h.payload_length)),
                    (proto, 124 - 54)
                );
            }
            _ => panic!("ip"),
        }
        let l = f.flow_layout().unwrap();
        assert_eq!((l.l4, l.l4_offset), (L4Proto::None, l.payload_offset));
        let dst = Field::DstIp.locate(&l).unwrap();
        assert_eq!(dst.l4_csum, None);
        let err = Field::DstPort.locate(&l).unwrap_err().to_string();
        assert!(err.contains("no L4 header"), "{err}");
        // A byte of the payload is covered by no checksum.
        let at = Field::Byte {
            offset: l.payload_offset as u16,
            width: 2,
        }
        .locate(&l)
        .unwrap();
        assert_eq!((at.ip_csum, at.l4_csum), (None, None));
        assert!(crate::checksum::verify_frame(&f.bytes, &l));
    }
}
