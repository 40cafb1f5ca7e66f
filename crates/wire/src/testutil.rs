//! Specs and an independent checker (etherparse's own parser and checksums) shared by the tests.

use std::net::{Ipv4Addr, Ipv6Addr};

use etherparse::{NetHeaders, PacketHeaders, TransportHeader};

use crate::*;

pub fn v4() -> IpSpec {
    IpSpec::V4 {
        src: Ipv4Addr::new(10, 0, 0, 1),
        dst: Ipv4Addr::new(10, 0, 0, 2),
        ttl: 64,
        id: 0x1234,
        dscp: 0,
    }
}

pub fn v6() -> IpSpec {
    IpSpec::V6 {
        src: "2001:db8::1".parse::<Ipv6Addr>().unwrap(),
        dst: "2001:db8::2".parse::<Ipv6Addr>().unwrap(),
        hop_limit: 64,
        flow_label: 0x12345,
    }
}

pub fn udp() -> L4Spec {
    L4Spec::Udp {
        src_port: 1024,
        dst_port: 5001,
    }
}

pub fn tcp() -> L4Spec {
    L4Spec::Tcp {
        src_port: 1024,
        dst_port: 80,
        seq: 0x0102_0304,
        ack: 0,
        flags: TcpFlags {
            syn: true,
            ..TcpFlags::default()
        },
        window: 8192,
    }
}

pub fn icmp() -> L4Spec {
    L4Spec::IcmpEcho { id: 0x4242, seq: 7 }
}

pub fn spec(vlan: Option<VlanTag>, ip: IpSpec, l4: L4Spec, payload: Payload) -> FrameSpec {
    FrameSpec {
        src_mac: [0x02, 0, 0, 0, 0, 0x01],
        dst_mac: [0x02, 0, 0, 0, 0, 0x02],
        vlan,
        ip,
        l4,
        payload,
    }
}

/// Every combination of VLAN, IP version and L4 protocol.
pub fn all_specs(payload: Payload) -> Vec<FrameSpec> {
    let mut out = Vec::new();
    for vlan in [None, Some(VlanTag { id: 100, pcp: 5 })] {
        for ip in [v4(), v6()] {
            for l4 in [udp(), tcp(), icmp()] {
                out.push(spec(vlan.clone(), ip.clone(), l4, payload.clone()));
            }
        }
    }
    out
}

/// A frame built from a `FrameSpec` through its stack, and the layout of its flow's headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    pub bytes: Vec<u8>,
    pub layout: Layout,
}

/// `s` built at `size` (FCS included) by the one builder.
pub fn build(s: &FrameSpec, size: usize) -> Result<Built, WireError> {
    let frame = s.stack().build(size)?;
    let layout = frame
        .flow_layout()
        .expect("a plain frame's stack ends in IP and L4");
    Ok(Built {
        bytes: frame.bytes,
        layout,
    })
}

/// Parses `frame` with etherparse and checks lengths and every checksum with etherparse's code.
pub fn etherparse_check(frame: &Built) {
    let b = &frame.bytes;
    let l = &frame.layout;
    let h = PacketHeaders::from_ethernet_slice(b).expect("etherparse parses the frame");
    assert_eq!(h.link_exts.len(), usize::from(l.vlan_offset.is_some()));
    let payload = h.payload.slice();
    assert_eq!(payload.len(), l.len - l.payload_offset);
    assert_eq!(payload, &b[l.payload_offset..]);
    match (h.net.expect("IP header"), h.transport.expect("L4 header")) {
        (NetHeaders::Ipv4(ip, _), t) => {
            assert!(!l.ipv6);
            assert_eq!(usize::from(ip.total_len), l.len - l.ip_offset);
            assert!(ip.dont_fragment);
            assert_eq!(ip.calc_header_checksum(), ip.header_checksum);
            match t {
                TransportHeader::Udp(u) => {
                    assert_eq!(usize::from(u.length), l.len - l.l4_offset);
                    assert_eq!(u.calc_checksum_ipv4(&ip, payload).unwrap(), u.checksum);
                }
                TransportHeader::Tcp(t) => {
                    assert_eq!(t.calc_checksum_ipv4(&ip, payload).unwrap(), t.checksum)
                }
                TransportHeader::Icmpv4(i) => {
                    assert_eq!(i.icmp_type.calc_checksum(payload), i.checksum)
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        (NetHeaders::Ipv6(ip, _), t) => {
            assert!(l.ipv6);
            assert_eq!(usize::from(ip.payload_length), l.len - l.l4_offset);
            match t {
                TransportHeader::Udp(u) => {
                    assert_eq!(usize::from(u.length), l.len - l.l4_offset);
                    assert_eq!(u.calc_checksum_ipv6(&ip, payload).unwrap(), u.checksum);
                }
                TransportHeader::Tcp(t) => {
                    assert_eq!(t.calc_checksum_ipv6(&ip, payload).unwrap(), t.checksum)
                }
                TransportHeader::Icmpv6(i) => assert_eq!(
                    i.icmp_type
                        .calc_checksum(ip.source, ip.destination, payload)
                        .unwrap(),
                    i.checksum
                ),
                other => panic!("unexpected {other:?}"),
            }
        }
        other => panic!("unexpected {other:?}"),
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}
