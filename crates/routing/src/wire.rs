//! Counting the OSPF packets on a device's links (OSPFv2, RFC 2328; OSPFv3, RFC 5340), per packet
//! type and per LSA type, each way: FRR's ospfd and ospf6d do not say how many LSAs of each type
//! they flooded or heard. [`count`] reads one Ethernet frame; [`WireCounter`] is a thread that
//! feeds it every OSPF frame a packet socket in the device's namespace sees (Linux).

use std::ops::Range;

/// Counts per OSPF packet type and per LSA type, each way.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, Default, PartialEq, Eq)]
pub struct OspfCounts {
    pub sent: Direction,
    pub received: Direction,
}

/// One way's counts.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, Default, PartialEq, Eq)]
pub struct Direction {
    pub hellos: u64,
    pub dbds: u64,
    pub ls_requests: u64,
    pub ls_updates: u64,
    pub ls_acks: u64,
    /// LSAs carried in LS updates, in all.
    pub lsas: u64,
    /// The same LSAs by type. OSPFv2: indexed by the LS type (1 router, 2 network, 3 summary
    /// (network), 4 ASBR summary, 5 AS external, 7 NSSA, 9/10/11 opaque link/area/AS; 6 and 8
    /// where anyone still sends them). OSPFv3: by the LSA function code (the LS type's low 13
    /// bits, RFC 5340 A.4.2.1; the U and scope bits are not looked at): 0x2001 router → 1,
    /// 0x2002 network → 2, 0x2003 inter-area-prefix → 3, 0x2004 inter-area-router → 4,
    /// 0x4005 AS-external → 5, 0x2007 NSSA → 7, 0x0008 link → 8, 0x2009 intra-area-prefix → 9.
    /// Other types count in [`lsas`](Self::lsas) only.
    pub lsa_by_type: [u64; 12],
    /// LSA headers acknowledged in LS acks.
    pub lsa_acks: u64,
}

/// Ethernet II, with at most one 802.1Q tag.
mod ethernet {
    use std::ops::Range;
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const HEADER_LEN: usize = 14;
    /// What an 802.1Q tag adds before the inner EtherType.
    pub const TAG_LEN: usize = 4;
    pub const IPV4: u16 = 0x0800;
    pub const IPV6: u16 = 0x86dd;
    pub const VLAN: u16 = 0x8100;
}

/// IPv4 (RFC 791).
mod ipv4 {
    use std::ops::Range;
    /// Version (high nibble) and header length in 32-bit words (low nibble).
    pub const VER_IHL: usize = 0;
    pub const TOTAL_LEN: Range<usize> = 2..4;
    /// Flags (3 bits) and fragment offset (13 bits).
    pub const FLAGS_FRAG: Range<usize> = 6..8;
    /// More-fragments and the offset: either set means a fragment.
    pub const FRAGMENT_MASK: u16 = 0x3fff;
    pub const PROTOCOL: usize = 9;
    pub const MIN_HEADER_LEN: usize = 20;
}

/// IPv6 (RFC 8200), the fixed header.
mod ipv6 {
    use std::ops::Range;
    /// Version in the high nibble.
    pub const VERSION: usize = 0;
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HEADER_LEN: usize = 40;
}

/// The OSPF packet header, both versions (RFC 2328 A.3.1, RFC 5340 A.3.1), and the bodies
/// counted here.
mod ospf {
    use std::ops::Range;
    /// IP protocol / IPv6 next header.
    pub const PROTOCOL: u8 = 89;
    pub const VERSION: usize = 0;
    pub const TYPE: usize = 1;
    /// The packet's length, header included.
    pub const LENGTH: Range<usize> = 2..4;
    pub const V2_HEADER_LEN: usize = 24;
    pub const V3_HEADER_LEN: usize = 16;
    pub const HELLO: u8 = 1;
    pub const DBD: u8 = 2;
    pub const LS_REQUEST: u8 = 3;
    pub const LS_UPDATE: u8 = 4;
    pub const LS_ACK: u8 = 5;
    /// In an LS update's body: the number of LSAs that follow.
    pub const LSU_COUNT: Range<usize> = 0..4;
}

/// The LSA header (RFC 2328 A.4.1, RFC 5340 A.4.2).
mod lsa {
    use std::ops::Range;
    /// OSPFv2: the LS type, after the age (2 bytes) and options (1).
    pub const V2_TYPE: usize = 3;
    /// OSPFv3: the LS type, after the age.
    pub const V3_TYPE: Range<usize> = 2..4;
    /// OSPFv3: the function code's bits of the LS type.
    pub const V3_FUNCTION_MASK: u16 = 0x1fff;
    /// The LSA's length, header included.
    pub const LENGTH: Range<usize> = 18..20;
    pub const HEADER_LEN: usize = 20;
}

fn be16(bytes: &[u8], at: Range<usize>) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at)?.try_into().ok()?))
}

fn be32(bytes: &[u8], at: Range<usize>) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at)?.try_into().ok()?))
}

/// Adds one frame (a whole Ethernet frame as received by an AF_PACKET socket, possibly with one
/// 802.1Q tag) to `into`, `sent` saying which way. Anything that is not a well-formed OSPF
/// packet over IPv4 (protocol 89, OSPFv2, not a fragment) or IPv6 (next header 89 right after
/// the fixed header, OSPFv3) is ignored; lengths are the IP and OSPF headers' own, not the
/// frame's (frames may be padded), and no input makes it panic.
pub fn count(frame: &[u8], sent: bool, into: &mut OspfCounts) {
    let Some((version, packet)) = ospf_packet(frame) else {
        return;
    };
    let way = if sent {
        &mut into.sent
    } else {
        &mut into.received
    };
    way.add(version, packet);
}

/// The OSPF version (2 or 3) of the packet a frame carries, if it carries a well-formed one.
pub fn version(frame: &[u8]) -> Option<u8> {
    ospf_packet(frame).map(|(v, _)| v)
}

/// The OSPF version and packet (cut to its own length) a frame carries.
fn ospf_packet(frame: &[u8]) -> Option<(u8, &[u8])> {
    let mut ethertype = be16(frame, ethernet::ETHERTYPE)?;
    let mut at = ethernet::HEADER_LEN;
    if ethertype == ethernet::VLAN {
        at += ethernet::TAG_LEN;
        ethertype = be16(frame, ethernet::ETHERTYPE.start + ethernet::TAG_LEN..at)?;
    }
    let ip = frame.get(at..)?;
    let (version, payload) = match ethertype {
        ethernet::IPV4 => (2, ipv4_payload(ip)?),
        ethernet::IPV6 => (3, ipv6_payload(ip)?),
        _ => return None,
    };
    if *payload.get(ospf::VERSION)? != version {
        return None;
    }
    let header_len = if version == 2 {
        ospf::V2_HEADER_LEN
    } else {
        ospf::V3_HEADER_LEN
    };
    let len = usize::from(be16(payload, ospf::LENGTH)?);
    if len < header_len {
        return None;
    }
    Some((version, payload.get(..len)?))
}

/// The payload of an unfragmented IPv4 packet of protocol 89.
fn ipv4_payload(ip: &[u8]) -> Option<&[u8]> {
    let ver_ihl = *ip.get(ipv4::VER_IHL)?;
    let header_len = usize::from(ver_ihl & 0x0f) * 4;
    let total = usize::from(be16(ip, ipv4::TOTAL_LEN)?);
    if ver_ihl >> 4 != 4 || header_len < ipv4::MIN_HEADER_LEN || total < header_len {
        return None;
    }
    if be16(ip, ipv4::FLAGS_FRAG)? & ipv4::FRAGMENT_MASK != 0
        || *ip.get(ipv4::PROTOCOL)? != ospf::PROTOCOL
    {
        return None;
    }
    ip.get(header_len..total)
}

/// The payload of an IPv6 packet whose next header is 89.
fn ipv6_payload(ip: &[u8]) -> Option<&[u8]> {
    if *ip.get(ipv6::VERSION)? >> 4 != 6 || *ip.get(ipv6::NEXT_HEADER)? != ospf::PROTOCOL {
        return None;
    }
    let len = usize::from(be16(ip, ipv6::PAYLOAD_LEN)?);
    ip.get(ipv6::HEADER_LEN..ipv6::HEADER_LEN + len)
}

impl Direction {
    /// Counts one OSPF packet of `version`, `packet` cut to its own length (at least a header).
    fn add(&mut self, version: u8, packet: &[u8]) {
        let header_len = if version == 2 {
            ospf::V2_HEADER_LEN
        } else {
            ospf::V3_HEADER_LEN
        };
        let Some(body) = packet.get(header_len..) else {
            return;
        };
        match packet.get(ospf::TYPE).copied() {
            Some(ospf::HELLO) => self.hellos += 1,
            Some(ospf::DBD) => self.dbds += 1,
            Some(ospf::LS_REQUEST) => self.ls_requests += 1,
            Some(ospf::LS_UPDATE) => {
                let Some(n) = be32(body, ospf::LSU_COUNT) else {
                    return;
                };
                self.ls_updates += 1;
                let mut rest = &body[ospf::LSU_COUNT.end..];
                // Each LSA takes at least a header's bytes, so a bogus count stops at the end.
                for _ in 0..n {
                    let Some(len) = be16(rest, lsa::LENGTH).map(usize::from) else {
                        break;
                    };
                    if len < lsa::HEADER_LEN || len > rest.len() {
                        break;
                    }
                    self.lsas += 1;
                    if let Some(slot) = lsa_slot(version, rest) {
                        self.lsa_by_type[slot] += 1;
                    }
                    rest = &rest[len..];
                }
            }
            Some(ospf::LS_ACK) => {
                self.ls_acks += 1;
                self.lsa_acks += (body.len() / lsa::HEADER_LEN) as u64;
            }
            _ => {}
        }
    }
}

/// Where an LSA counts in [`Direction::lsa_by_type`], from its header.
fn lsa_slot(version: u8, header: &[u8]) -> Option<usize> {
    if version == 2 {
        let ls_type = usize::from(*header.get(lsa::V2_TYPE)?);
        (1..12).contains(&ls_type).then_some(ls_type)
    } else {
        let function = be16(header, lsa::V3_TYPE)? & lsa::V3_FUNCTION_MASK;
        matches!(function, 1..=5 | 7..=9).then_some(usize::from(function))
    }
}

#[cfg(target_os = "linux")]
mod socket;
#[cfg(target_os = "linux")]
pub use socket::WireCounter;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const OWN: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
    pub(crate) const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

    pub(crate) fn ethernet(
        src: [u8; 6],
        vlan: Option<u16>,
        ethertype: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut f = vec![0x01, 0x00, 0x5e, 0x00, 0x00, 0x05];
        f.extend_from_slice(&src);
        if let Some(tci) = vlan {
            f.extend_from_slice(&ethernet::VLAN.to_be_bytes());
            f.extend_from_slice(&tci.to_be_bytes());
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// An IPv4 header of protocol `proto` before `payload`, 10.0.0.1 to 224.0.0.5, with its
    /// checksum.
    pub(crate) fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
        let total = (20 + payload.len()) as u16;
        let mut h = vec![0x45, 0xc0];
        h.extend_from_slice(&total.to_be_bytes());
        h.extend_from_slice(&[0, 0, 0, 0, 1, proto, 0, 0, 10, 0, 0, 1, 224, 0, 0, 5]);
        let sum: u32 = h
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        let sum = (sum & 0xffff) + (sum >> 16);
        let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        h.extend_from_slice(payload);
        h
    }

    /// An IPv6 header of next header `next` before `payload`, fe80::1 to ff02::5.
    pub(crate) fn ipv6(next: u8, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        h.extend_from_slice(&[next, 1]);
        h.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        h.extend_from_slice(&[0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5]);
        h.extend_from_slice(payload);
        h
    }

    /// An OSPF packet of `version` and `kind`: router ID 1.1.1.1, area 0, checksum left zero.
    pub(crate) fn ospf_packet(version: u8, kind: u8, body: &[u8]) -> Vec<u8> {
        let header_len = if version == 2 { 24 } else { 16 };
        let mut p = vec![version, kind];
        p.extend_from_slice(&((header_len + body.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
        // v2: autype and authentication; v3: instance ID and a reserved byte.
        p.resize(header_len, 0);
        p.extend_from_slice(body);
        p
    }

    /// An OSPFv2 hello body: 255.255.255.0, 10 s, options E, priority 1, 40 s, no DR, no BDR,
    /// no neighbour.
    pub(crate) fn hello_v2() -> Vec<u8> {
        let mut b = vec![255, 255, 255, 0, 0, 10, 0x02, 1, 0, 0, 0, 40];
        b.extend_from_slice(&[0; 8]);
        b
    }

    /// An LSA of `ls_type` (v2: one byte; v3: the whole u16) with `extra` body bytes.
    pub(crate) fn lsa(version: u8, ls_type: u16, extra: usize) -> Vec<u8> {
        let mut h = vec![0, 1];
        if version == 2 {
            h.extend_from_slice(&[0x02, ls_type as u8]);
        } else {
            h.extend_from_slice(&ls_type.to_be_bytes());
        }
        h.extend_from_slice(&[10, 0, 0, 1, 1, 1, 1, 1, 0x80, 0, 0, 1, 0, 0]);
        h.extend_from_slice(&((20 + extra) as u16).to_be_bytes());
        h.resize(20 + extra, 0xaa);
        h
    }

    pub(crate) fn lsu(version: u8, lsas: &[Vec<u8>], claimed: u32) -> Vec<u8> {
        let mut b = claimed.to_be_bytes().to_vec();
        for l in lsas {
            b.extend_from_slice(l);
        }
        ospf_packet(version, 4, &b)
    }

    pub(crate) fn ack(version: u8, headers: usize) -> Vec<u8> {
        let mut b = Vec::new();
        for i in 0..headers {
            b.extend_from_slice(&lsa(version, 1 + i as u16, 0));
        }
        ospf_packet(version, 5, &b)
    }

    pub(crate) fn v4_frame(ospf: &[u8]) -> Vec<u8> {
        ethernet(OWN, None, ethernet::IPV4, &ipv4(89, ospf))
    }

    pub(crate) fn v6_frame(ospf: &[u8]) -> Vec<u8> {
        ethernet(OWN, None, ethernet::IPV6, &ipv6(89, ospf))
    }

    pub(crate) fn counted(frame: &[u8], sent: bool) -> OspfCounts {
        let mut c = OspfCounts::default();
        count(frame, sent, &mut c);
        c
    }

    #[test]
    fn a_v2_hello_is_one_hello_in_the_way_it_went() {
        let frame = v4_frame(&ospf_packet(2, 1, &hello_v2()));
        assert_eq!(frame.len(), 14 + 20 + 24 + 20);
        let c = counted(&frame, true);
        let hello = Direction {
            hellos: 1,
            ..Direction::default()
        };
        assert_eq!(
            c,
            OspfCounts {
                sent: hello,
                received: Direction::default()
            }
        );
        assert_eq!(counted(&frame, false).received, hello);
        // Ethernet padding after the IP packet is not read.
        let mut padded = frame.clone();
        padded.extend_from_slice(&[0xff; 30]);
        assert_eq!(counted(&padded, true), c);
    }

    #[test]
    fn a_v2_update_counts_its_lsas_by_type_and_an_ack_its_headers() {
        let update = lsu(2, &[lsa(2, 1, 16), lsa(2, 3, 8)], 2);
        let mut c = counted(&v4_frame(&update), false);
        count(&v4_frame(&ack(2, 3)), false, &mut c);
        let mut by_type = [0; 12];
        by_type[1] = 1;
        by_type[3] = 1;
        assert_eq!(
            c.received,
            Direction {
                ls_updates: 1,
                ls_acks: 1,
                lsas: 2,
                lsa_by_type: by_type,
                lsa_acks: 3,
                ..Direction::default()
            }
        );
        assert_eq!(c.sent, Direction::default());
    }

    #[test]
    fn the_other_packet_types_count_as_themselves() {
        let mut c = OspfCounts::default();
        for kind in [2, 3, 3] {
            count(&v4_frame(&ospf_packet(2, kind, &[0; 12])), true, &mut c);
        }
        count(&v6_frame(&ospf_packet(3, 2, &[0; 12])), true, &mut c);
        count(&v4_frame(&ospf_packet(2, 6, &[])), true, &mut c);
        count(&v4_frame(&ospf_packet(2, 0, &[])), true, &mut c);
        assert_eq!(
            c.sent,
            Direction {
                dbds: 2,
                ls_requests: 2,
                ..Direction::default()
            }
        );
    }

    #[test]
    fn v3_over_ipv6_maps_function_codes() {
        let lsas = [
            lsa(3, 0x2001, 24),
            lsa(3, 0x2003, 12),
            lsa(3, 0x4005, 20),
            lsa(3, 0x0008, 24),
            lsa(3, 0x2009, 12),
            lsa(3, 0xa021, 4),
        ];
        let mut c = counted(&v6_frame(&lsu(3, &lsas, 6)), true);
        count(&v6_frame(&ospf_packet(3, 1, &[0; 20])), true, &mut c);
        count(&v6_frame(&ack(3, 3)), true, &mut c);
        let mut by_type = [0; 12];
        for slot in [1, 3, 5, 8, 9] {
            by_type[slot] = 1;
        }
        assert_eq!(
            c.sent,
            Direction {
                hellos: 1,
                ls_updates: 1,
                ls_acks: 1,
                lsas: 6,
                lsa_by_type: by_type,
                lsa_acks: 3,
                ..Direction::default()
            }
        );
    }

    #[test]
    fn a_tagged_frame_counts_and_versions_must_match_their_ip() {
        let hello = ospf_packet(2, 1, &hello_v2());
        let tagged = ethernet(OWN, Some(100), ethernet::IPV4, &ipv4(89, &hello));
        assert_eq!(counted(&tagged, true).sent.hellos, 1);
        let tagged6 = ethernet(
            OWN,
            Some(7),
            ethernet::IPV6,
            &ipv6(89, &ospf_packet(3, 1, &[0; 20])),
        );
        assert_eq!(counted(&tagged6, false).received.hellos, 1);
        // OSPFv2 over IPv6 and OSPFv3 over IPv4 are not what either protocol sends.
        assert_eq!(counted(&v6_frame(&hello), true), OspfCounts::default());
        let v3_over_v4 = v4_frame(&ospf_packet(3, 1, &[0; 20]));
        assert_eq!(counted(&v3_over_v4, true), OspfCounts::default());
    }

    #[test]
    fn what_is_not_ospf_is_ignored() {
        let udp = [0x02, 0x02, 0x02, 0x02, 0, 12, 0, 0, 1, 2, 3, 4];
        let none = OspfCounts::default();
        assert_eq!(
            counted(&ethernet(OWN, None, ethernet::IPV4, &ipv4(17, &udp)), true),
            none
        );
        assert_eq!(
            counted(&ethernet(OWN, None, ethernet::IPV6, &ipv6(17, &udp)), true),
            none
        );
        // An OSPF hello behind an unknown EtherType, and a fragment that looks like one.
        let hello = ipv4(89, &ospf_packet(2, 1, &hello_v2()));
        assert_eq!(counted(&ethernet(OWN, None, 0x88b5, &hello), true), none);
        let mut fragment = hello.clone();
        fragment[6] = 0x20;
        assert_eq!(counted(&ethernet(OWN, None, 0x0800, &fragment), true), none);
        let mut later = hello.clone();
        later[7] = 0x10;
        assert_eq!(counted(&ethernet(OWN, None, 0x0800, &later), true), none);
        // IPv4 options are skipped by the header length.
        let mut options = hello[..20].to_vec();
        options[0] = 0x46;
        let total = u16::from_be_bytes([options[2], options[3]]) + 4;
        options[2..4].copy_from_slice(&total.to_be_bytes());
        options.extend_from_slice(&[1, 1, 1, 0]);
        options.extend_from_slice(&hello[20..]);
        let c = counted(&ethernet(OWN, None, 0x0800, &options), true);
        assert_eq!(c.sent.hellos, 1);
    }

    #[test]
    fn bogus_lengths_and_counts_stop_at_the_bytes_there() {
        // A count far beyond the LSAs present.
        let c = counted(&v4_frame(&lsu(2, &[lsa(2, 5, 16)], u32::MAX)), true);
        assert_eq!((c.sent.ls_updates, c.sent.lsas), (1, 1));
        assert_eq!(c.sent.lsa_by_type[5], 1);
        // An LSA claiming less than its header, and one claiming more than is left.
        let mut short = lsa(2, 1, 0);
        short[18..20].copy_from_slice(&19u16.to_be_bytes());
        let c = counted(&v4_frame(&lsu(2, &[lsa(2, 2, 4), short], 2)), true);
        assert_eq!(c.sent.lsas, 1);
        let mut long = lsa(2, 1, 0);
        long[18..20].copy_from_slice(&400u16.to_be_bytes());
        let c = counted(&v4_frame(&lsu(2, &[long], 1)), true);
        assert_eq!((c.sent.ls_updates, c.sent.lsas), (1, 0));
        // An OSPF length past the IP payload, or shorter than the header.
        let mut packet = ospf_packet(2, 1, &hello_v2());
        packet[2..4].copy_from_slice(&200u16.to_be_bytes());
        assert_eq!(counted(&v4_frame(&packet), true), OspfCounts::default());
        packet[2..4].copy_from_slice(&23u16.to_be_bytes());
        assert_eq!(counted(&v4_frame(&packet), true), OspfCounts::default());
        // An LSU too short for its count.
        let c = counted(&v4_frame(&ospf_packet(2, 4, &[0, 0])), true);
        assert_eq!(c, OspfCounts::default());
        // An ack's partial header is not a header.
        let mut partial = ack(2, 2);
        partial.extend_from_slice(&[0; 10]);
        let len = partial.len() as u16;
        partial[2..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(counted(&v4_frame(&partial), true).sent.lsa_acks, 2);
    }

    #[test]
    fn every_truncation_of_every_frame_is_safe() {
        let frames = [
            v4_frame(&ospf_packet(2, 1, &hello_v2())),
            v4_frame(&lsu(2, &[lsa(2, 1, 16), lsa(2, 3, 8)], 2)),
            v4_frame(&ack(2, 3)),
            v6_frame(&lsu(3, &[lsa(3, 0x2001, 24), lsa(3, 0x2009, 4)], 2)),
            v6_frame(&ack(3, 3)),
            ethernet(
                OWN,
                Some(5),
                ethernet::IPV4,
                &ipv4(89, &ospf_packet(2, 1, &hello_v2())),
            ),
        ];
        for frame in &frames {
            let whole = counted(frame, true);
            assert_ne!(whole, OspfCounts::default());
            for len in 0..frame.len() {
                // Cut short, the IP or OSPF length no longer fits: nothing counts.
                assert_eq!(counted(&frame[..len], true), OspfCounts::default(), "{len}");
            }
            // Every byte set to every value in turn: no panic, whatever is counted.
            for at in 0..frame.len() {
                for value in [0x00, 0x01, 0x13, 0x14, 0x7f, 0xff] {
                    let mut bent = frame.clone();
                    bent[at] = value;
                    let _ = counted(&bent, true);
                }
            }
        }
    }
}
