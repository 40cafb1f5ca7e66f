//! Writes the headers of a validated `StackSpec` into a frame and fills its checksums. Every
//! offset comes from the header tables; what a header says about its successor comes from the
//! layer after it, so the spec never states it twice.

use crate::IpSpec;
use crate::checksum::{self, udp_fixup};
use crate::header::{at, ethernet, get_be, icmp, ipv4, ipv6, set_be, tcp, udp, vlan};
use crate::stack::{ChecksumSpan, GreSpec, HeaderSpec, Layer, LayerKind};
use crate::tunnel::{arp, gre, gtpu, mpls, next, vxlan};

/// The ethertype (or GRE protocol type) that announces `kind`; a VLAN tag's is its TPID.
fn ethertype(next_header: Option<&HeaderSpec>, kind: Option<LayerKind>) -> u16 {
    match (next_header, kind) {
        (Some(HeaderSpec::Vlan { tpid, .. }), _) => tpid.ethertype(),
        (_, Some(LayerKind::Mpls)) => next::ETHERTYPE_MPLS,
        (_, Some(LayerKind::Ipv4)) => ethernet::ETHERTYPE_IPV4,
        (_, Some(LayerKind::Ipv6)) => ethernet::ETHERTYPE_IPV6,
        (_, Some(LayerKind::Arp)) => next::ETHERTYPE_ARP,
        (_, Some(LayerKind::Ethernet)) => next::ETHERTYPE_TEB,
        (None, None) => next::ETHERTYPE_RESERVED,
        // Validation lets nothing else follow a header that carries an ethertype.
        _ => 0,
    }
}

/// The IPv4 protocol / IPv6 next header that announces `kind`.
fn ip_proto(kind: Option<LayerKind>) -> u8 {
    match kind {
        Some(LayerKind::Ipv4) => next::PROTO_IPV4,
        Some(LayerKind::Ipv6) => next::PROTO_IPV6,
        Some(LayerKind::Gre) => next::PROTO_GRE,
        Some(LayerKind::Udp) => ipv4::PROTO_UDP,
        Some(LayerKind::Tcp) => ipv4::PROTO_TCP,
        Some(LayerKind::Icmpv4) => ipv4::PROTO_ICMP,
        Some(LayerKind::Icmpv6) => ipv4::PROTO_ICMPV6,
        _ => 0,
    }
}

/// Writes header `h` at `layer`; `after` is the header that follows it, if any.
pub(crate) fn emit(
    b: &mut [u8],
    h: &HeaderSpec,
    layer: &Layer,
    after: Option<(&HeaderSpec, LayerKind)>,
) {
    let o = layer.offset;
    let end = layer.frame_end(b.len());
    let next_kind = after.map(|(_, k)| k);
    let next_type = ethertype(after.map(|(h, _)| h), next_kind);
    match h {
        HeaderSpec::Ethernet { src, dst } => {
            b[at(o, ethernet::field::DST)].copy_from_slice(dst);
            b[at(o, ethernet::field::SRC)].copy_from_slice(src);
            set_be(b, at(o, ethernet::field::ETHERTYPE), next_type.into());
        }
        HeaderSpec::Vlan { tpid, id, pcp } => {
            set_be(b, at(o, vlan::field::TPID), tpid.ethertype().into());
            let tci = (u16::from(*pcp) << vlan::PCP_SHIFT) | id;
            set_be(b, at(o, vlan::field::TCI), tci.into());
            set_be(b, at(o, vlan::field::ETHERTYPE), next_type.into());
        }
        HeaderSpec::Mpls { label, tc, ttl } => {
            let bos = if next_kind == Some(LayerKind::Mpls) {
                0
            } else {
                mpls::BOTTOM_OF_STACK
            };
            let entry = (label << mpls::LABEL_SHIFT)
                | (u32::from(*tc) << mpls::TC_SHIFT)
                | bos
                | u32::from(*ttl);
            set_be(b, at(o, mpls::field::ENTRY), entry.into());
        }
        HeaderSpec::Ip(ip) => {
            let proto = match (next_kind, ip) {
                (None, IpSpec::V4 { .. }) => next::PROTO_HOST_INTERNAL,
                (None, IpSpec::V6 { .. }) => next::PROTO_NO_NEXT_HEADER,
                (kind, _) => ip_proto(kind),
            };
            emit_ip(b, ip, o, end, proto)
        }
        HeaderSpec::Gre(g) => emit_gre(b, g, o, next_type),
        HeaderSpec::Udp {
            src_port, dst_port, ..
        } => {
            let well_known = match next_kind {
                Some(LayerKind::Vxlan) => next::UDP_PORT_VXLAN,
                Some(LayerKind::GtpV1U) => next::UDP_PORT_GTPU,
                _ => 0,
            };
            set_be(b, at(o, udp::field::SRC_PORT), (*src_port).into());
            set_be(
                b,
                at(o, udp::field::DST_PORT),
                dst_port.unwrap_or(well_known).into(),
            );
            set_be(b, at(o, udp::field::LENGTH), (end - o) as u64);
        }
        HeaderSpec::Tcp { .. } => emit_tcp(b, h, o),
        HeaderSpec::IcmpEcho { id, seq } => {
            b[o + icmp::field::TYPE] = if layer.kind == LayerKind::Icmpv6 {
                icmp::V6_ECHO_REQUEST
            } else {
                icmp::V4_ECHO_REQUEST
            };
            set_be(b, at(o, icmp::field::ECHO_IDENT), (*id).into());
            set_be(b, at(o, icmp::field::ECHO_SEQNO), (*seq).into());
        }
        HeaderSpec::Vxlan { vni } => {
            b[o + vxlan::field::FLAGS] = vxlan::FLAG_VNI;
            set_be(b, at(o, vxlan::field::VNI), (*vni).into());
        }
        HeaderSpec::GtpV1U { teid, seq } => emit_gtpu(b, o, end, *teid, *seq),
        HeaderSpec::Arp { .. } => emit_arp(b, h, o),
    }
}

/// An IPv4 or IPv6 header; its length runs to `len`, the end of the frame it is in.
fn emit_ip(b: &mut [u8], ip: &IpSpec, o: usize, len: usize, proto: u8) {
    match ip {
        IpSpec::V4 {
            src,
            dst,
            ttl,
            id,
            dscp,
        } => {
            use ipv4::field as f;
            b[o + f::VER_IHL] = ipv4::VER_IHL;
            b[o + f::DSCP_ECN] = dscp << ipv4::DSCP_SHIFT;
            set_be(b, at(o, f::LENGTH), (len - o) as u64);
            set_be(b, at(o, f::IDENT), (*id).into());
            set_be(b, at(o, f::FLG_OFF), ipv4::FLAG_DF.into());
            b[o + f::TTL] = *ttl;
            b[o + f::PROTOCOL] = proto;
            b[at(o, f::SRC_ADDR)].copy_from_slice(&src.octets());
            b[at(o, f::DST_ADDR)].copy_from_slice(&dst.octets());
        }
        IpSpec::V6 {
            src,
            dst,
            hop_limit,
            flow_label,
        } => {
            use ipv6::field as f;
            let vtf = (6u32 << ipv6::VERSION_SHIFT) | flow_label;
            set_be(b, at(o, f::VER_TC_FLOW), vtf.into());
            set_be(b, at(o, f::LENGTH), (len - o - ipv6::HEADER_LEN) as u64);
            b[o + f::NXT_HDR] = proto;
            b[o + f::HOP_LIMIT] = *hop_limit;
            b[at(o, f::SRC_ADDR)].copy_from_slice(&src.octets());
            b[at(o, f::DST_ADDR)].copy_from_slice(&dst.octets());
        }
    }
}

fn emit_tcp(b: &mut [u8], h: &HeaderSpec, o: usize) {
    let HeaderSpec::Tcp {
        src_port,
        dst_port,
        seq,
        ack,
        flags,
        window,
    } = h
    else {
        return;
    };
    use tcp::field as f;
    set_be(b, at(o, f::SRC_PORT), (*src_port).into());
    set_be(b, at(o, f::DST_PORT), (*dst_port).into());
    set_be(b, at(o, f::SEQ_NUM), (*seq).into());
    set_be(b, at(o, f::ACK_NUM), (*ack).into());
    b[o + f::DATA_OFF] = tcp::DATA_OFF_5;
    b[o + f::FLAGS] = flags.bits();
    set_be(b, at(o, f::WIN_SIZE), (*window).into());
}

fn emit_arp(b: &mut [u8], h: &HeaderSpec, o: usize) {
    let HeaderSpec::Arp {
        op,
        sender_mac,
        sender_ip,
        target_mac,
        target_ip,
    } = h
    else {
        return;
    };
    use arp::field as f;
    set_be(b, at(o, f::HTYPE), arp::HTYPE_ETHERNET.into());
    set_be(b, at(o, f::PTYPE), ethernet::ETHERTYPE_IPV4.into());
    b[o + f::HLEN] = f::SHA.len() as u8;
    b[o + f::PLEN] = f::SPA.len() as u8;
    set_be(b, at(o, f::OPER), (*op).into());
    b[at(o, f::SHA)].copy_from_slice(sender_mac);
    b[at(o, f::SPA)].copy_from_slice(&sender_ip.octets());
    b[at(o, f::THA)].copy_from_slice(target_mac);
    b[at(o, f::TPA)].copy_from_slice(&target_ip.octets());
}

fn emit_gre(b: &mut [u8], g: &GreSpec, o: usize, protocol: u16) {
    let flag = |on: bool, bit: u16| if on { bit } else { 0 };
    let flags = flag(g.checksum, gre::FLAG_CHECKSUM)
        | flag(g.key.is_some(), gre::FLAG_KEY)
        | flag(g.seq.is_some(), gre::FLAG_SEQ);
    set_be(b, at(o, gre::field::FLAGS_VER), flags.into());
    set_be(b, at(o, gre::field::PROTOCOL), protocol.into());
    let word = |off: usize| o + off..o + off + gre::OPTION_LEN;
    if let Some(key) = g.key {
        set_be(b, word(gre::key_offset(g.checksum)), key.into());
    }
    if let Some(seq) = g.seq {
        set_be(
            b,
            word(gre::seq_offset(g.checksum, g.key.is_some())),
            seq.into(),
        );
    }
}

fn emit_gtpu(b: &mut [u8], o: usize, end: usize, teid: u32, seq: Option<u16>) {
    use gtpu::field as f;
    let s = if seq.is_some() { gtpu::FLAG_SEQ } else { 0 };
    b[o + f::FLAGS] = gtpu::FLAGS_V1_PT | s;
    b[o + f::MSG_TYPE] = gtpu::MSG_G_PDU;
    set_be(b, at(o, f::LENGTH), (end - o - gtpu::HEADER_LEN) as u64);
    set_be(b, at(o, f::TEID), teid.into());
    if let Some(seq) = seq {
        set_be(b, at(o, f::SEQ), seq.into());
    }
}

/// The IPv4 or IPv6 pseudo-header sum input of the IP layer at `ip`, for an L4 of `proto`.
fn l4_checksum(b: &[u8], ip: &Layer, proto: u8, l4: &[u8]) -> u16 {
    let addr = |r: core::ops::Range<usize>| &b[at(ip.offset, r)];
    match ip.kind {
        LayerKind::Ipv6 => checksum::l4_ipv6(
            addr(ipv6::field::SRC_ADDR).try_into().expect("16 bytes"),
            addr(ipv6::field::DST_ADDR).try_into().expect("16 bytes"),
            proto,
            l4,
        ),
        _ => checksum::l4_ipv4(
            addr(ipv4::field::SRC_ADDR).try_into().expect("4 bytes"),
            addr(ipv4::field::DST_ADDR).try_into().expect("4 bytes"),
            proto,
            l4,
        ),
    }
}

/// Fills every checksum, innermost first, so an outer checksum sums the inner ones as sent.
/// Returns where each is and what it covers, in that order.
pub(crate) fn fill_checksums(
    b: &mut [u8],
    headers: &[HeaderSpec],
    layers: &[Layer],
) -> Vec<ChecksumSpan> {
    let mut spans = Vec::new();
    for (i, (h, layer)) in headers.iter().zip(layers).enumerate().rev() {
        let o = layer.offset;
        let end = layer.frame_end(b.len());
        let ip = i.checked_sub(1);
        let (field, covers, pseudo) = match (h, layer.kind) {
            (HeaderSpec::Udp { zero_checksum, .. }, _) => {
                if *zero_checksum {
                    continue;
                }
                (at(o, udp::field::CHECKSUM), o..end, ip)
            }
            (HeaderSpec::Tcp { .. }, _) => (at(o, tcp::field::CHECKSUM), o..end, ip),
            (_, LayerKind::Icmpv4) => (at(o, icmp::field::CHECKSUM), o..end, None),
            (_, LayerKind::Icmpv6) => (at(o, icmp::field::CHECKSUM), o..end, ip),
            (_, LayerKind::Ipv4) => (at(o, ipv4::field::CHECKSUM), layer.range(), None),
            (HeaderSpec::Gre(g), _) if g.checksum => (at(o, gre::field::CHECKSUM), o..end, None),
            _ => continue,
        };
        let span = ChecksumSpan {
            layer: i,
            field,
            covers,
            pseudo_header: pseudo,
            udp: layer.kind == LayerKind::Udp,
        };
        let c = checksum_value(b, &span, layers);
        b[span.field.clone()].copy_from_slice(&c.to_be_bytes());
        spans.push(span);
    }
    spans
}

/// The value of checksum `c` over the frame `b`, whose checksum field holds 0.
pub(crate) fn checksum_value(b: &[u8], c: &ChecksumSpan, layers: &[Layer]) -> u16 {
    match c.pseudo_header.and_then(|ip| layers.get(ip)) {
        Some(ip) => {
            let proto = get_be(b, at(ip.offset, ip_proto_field(ip))) as u8;
            let sum = l4_checksum(b, ip, proto, &b[c.covers.clone()]);
            if c.udp { udp_fixup(sum) } else { sum }
        }
        None => !checksum::fold(checksum::sum(&b[c.covers.clone()], 0)),
    }
}

/// The IPv4 protocol or IPv6 next-header byte, as a one-byte range.
fn ip_proto_field(ip: &Layer) -> core::ops::Range<usize> {
    let f = if ip.kind == LayerKind::Ipv6 {
        ipv6::field::NXT_HDR
    } else {
        ipv4::field::PROTOCOL
    };
    f..f + 1
}
