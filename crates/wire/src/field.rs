//! Named fields, where they sit in a frame, and the in-place write that keeps checksums right.

use crate::header::{at, ethernet, get_be, ipv4, ipv6, set_be, tcp, udp, vlan};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::mac::{MacAddr, format_mac, mac_to_u64, parse_mac};
use crate::spec::parse_uint;
use crate::tunnel::arp;
use crate::{L4Proto, Layout, WireError, checksum};

/// A field a stream can vary from frame to frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    SrcMac,
    DstMac,
    VlanId,
    SrcIp,
    DstIp,
    IpId,
    /// IPv4 TTL or IPv6 hop limit.
    Ttl,
    SrcPort,
    DstPort,
    /// ARP sender hardware address (an ARP frame's, as `src-mac` is its Ethernet source).
    ArpSenderMac,
    /// ARP sender protocol (IPv4) address.
    ArpSenderIp,
    ArpTargetMac,
    ArpTargetIp,
    /// `width` bytes (1, 2, 4 or 8) big-endian at a buffer offset.
    Byte {
        offset: u16,
        width: u8,
    },
}

const NAMED: [(&str, Field); 13] = [
    ("src-mac", Field::SrcMac),
    ("dst-mac", Field::DstMac),
    ("vlan-id", Field::VlanId),
    ("src-ip", Field::SrcIp),
    ("dst-ip", Field::DstIp),
    ("ip-id", Field::IpId),
    ("ttl", Field::Ttl),
    ("src-port", Field::SrcPort),
    ("dst-port", Field::DstPort),
    ("arp-sender-mac", Field::ArpSenderMac),
    ("arp-sender-ip", Field::ArpSenderIp),
    ("arp-target-mac", Field::ArpTargetMac),
    ("arp-target-ip", Field::ArpTargetIp),
];

const KNOWN_FIELDS: &str = "src-mac, dst-mac, vlan-id, src-ip, dst-ip, ip-id, ttl, src-port, dst-port, arp-sender-mac, arp-sender-ip, arp-target-mac, arp-target-ip, byte@OFFSET, byte@OFFSET/WIDTH (width 1, 2, 4 or 8)";

/// An IPv6 address field is its low 64 bits: the upper half comes from the template.
const IPV6_LOW: core::ops::Range<usize> = ipv6::ADDR_LOW..16;

fn ones(width: u8) -> u64 {
    if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * u32::from(width))) - 1
    }
}

impl Field {
    /// Reads a name from the list in [`KNOWN_FIELDS`]; offsets and widths take decimal or 0x-hex.
    pub fn parse(s: &str) -> Result<Self, WireError> {
        let t = s.trim().to_ascii_lowercase();
        if let Some((_, f)) = NAMED.iter().find(|(n, _)| *n == t) {
            return Ok(*f);
        }
        let Some(spec) = t.strip_prefix("byte@") else {
            return Err(WireError::UnknownField {
                input: s.to_string(),
                known: KNOWN_FIELDS,
            });
        };
        let bad = |reason: String| WireError::BadField {
            input: s.to_string(),
            reason,
        };
        let (off, width) = match spec.split_once('/') {
            Some((o, w)) => (o, Some(w)),
            None => (spec, None),
        };
        let offset = parse_uint(off)
            .and_then(|o| u16::try_from(o).ok())
            .ok_or_else(|| bad(format!("offset {off:?} is not a number in 0..=65535")))?;
        let width = match width {
            None => 1,
            Some(w) => match parse_uint(w) {
                Some(w @ (1 | 2 | 4 | 8)) => w as u8,
                _ => return Err(bad(format!("width {w:?} is not 1, 2, 4 or 8"))),
            },
        };
        Ok(Field::Byte { offset, width })
    }

    /// The name `parse` reads back.
    pub fn name(&self) -> String {
        match self {
            Field::Byte { offset, width: 1 } => format!("byte@{offset}"),
            Field::Byte { offset, width } => format!("byte@{offset}/{width}"),
            named => NAMED
                .iter()
                .find(|(_, f)| f == named)
                .map(|(n, _)| n.to_string())
                .unwrap_or_default(),
        }
    }

    fn not_in_frame(&self, reason: impl Into<String>) -> WireError {
        WireError::FieldNotInFrame {
            field: self.name(),
            reason: reason.into(),
        }
    }

    /// Where the field sits in a frame of this layout and which checksums cover it. Pass the
    /// layout of the smallest frame a stream sends, so that a byte field fits in all of them.
    pub fn locate(&self, layout: &Layout) -> Result<FieldLoc, WireError> {
        if layout.arp_offset.is_some() || layout.ethernet_only {
            return self.locate_without_ip(layout);
        }
        let ip = layout.ip_offset;
        let l4 = layout.l4_offset;
        let (range, bits) = match (self, layout.ipv6) {
            (Field::SrcMac, _) => (at(layout.eth_offset, ethernet::field::SRC), ones(6)),
            (Field::DstMac, _) => (at(layout.eth_offset, ethernet::field::DST), ones(6)),
            (Field::VlanId, _) => {
                let t = layout
                    .vlan_offset
                    .ok_or_else(|| self.not_in_frame("the frame has no VLAN tag"))?;
                (at(t, vlan::field::TCI), u64::from(vlan::VID_MASK))
            }
            (Field::SrcIp, false) => (at(ip, ipv4::field::SRC_ADDR), ones(4)),
            (Field::DstIp, false) => (at(ip, ipv4::field::DST_ADDR), ones(4)),
            (Field::SrcIp, true) => (at(ip + ipv6::field::SRC_ADDR.start, IPV6_LOW), ones(8)),
            (Field::DstIp, true) => (at(ip + ipv6::field::DST_ADDR.start, IPV6_LOW), ones(8)),
            (Field::IpId, false) => (at(ip, ipv4::field::IDENT), ones(2)),
            (Field::IpId, true) => {
                return Err(self.not_in_frame("IPv6 has no identification field"));
            }
            (Field::Ttl, false) => (ip + ipv4::field::TTL..ip + ipv4::field::TTL + 1, ones(1)),
            (Field::Ttl, true) => (
                ip + ipv6::field::HOP_LIMIT..ip + ipv6::field::HOP_LIMIT + 1,
                ones(1),
            ),
            (Field::SrcPort | Field::DstPort, _) => {
                let r = match (self, layout.l4) {
                    (Field::SrcPort, L4Proto::Udp) => udp::field::SRC_PORT,
                    (Field::DstPort, L4Proto::Udp) => udp::field::DST_PORT,
                    (Field::SrcPort, L4Proto::Tcp) => tcp::field::SRC_PORT,
                    (Field::DstPort, L4Proto::Tcp) => tcp::field::DST_PORT,
                    (_, L4Proto::None) => {
                        return Err(self.not_in_frame("the frame has no L4 header"));
                    }
                    _ => {
                        return Err(self
                            .not_in_frame("ICMP echo has an id and a sequence number, not ports"));
                    }
                };
                (at(l4, r), ones(2))
            }
            (
                Field::ArpSenderMac | Field::ArpSenderIp | Field::ArpTargetMac | Field::ArpTargetIp,
                _,
            ) => {
                return Err(self.not_in_frame("the frame is not ARP (proto = \"arp\")"));
            }
            (Field::Byte { .. }, _) => (self.byte_range(layout)?, ones(self.width())),
        };
        let (ip_csum, l4_csum) = coverage(self, layout, &range)?;
        Ok(FieldLoc {
            offset: range.start as u16,
            width: range.len() as u8,
            bits,
            ip_csum,
            l4_csum,
            l4_udp: layout.l4 == L4Proto::Udp,
        })
    }

    /// The bytes of a `byte@` field, which must lie inside the smallest frame.
    fn byte_range(&self, layout: &Layout) -> Result<core::ops::Range<usize>, WireError> {
        let &Field::Byte { offset, width } = self else {
            return Err(self.not_in_frame("it is not a byte field"));
        };
        if !(1..=8).contains(&width) {
            return Err(self.not_in_frame(format!("width {width} is not in 1..=8")));
        }
        let r = usize::from(offset)..usize::from(offset) + usize::from(width);
        if r.end > layout.len {
            return Err(self.not_in_frame(format!(
                "it ends at byte {} but the smallest frame holds {} bytes (FCS excluded)",
                r.end, layout.len
            )));
        }
        Ok(r)
    }

    fn width(&self) -> u8 {
        match self {
            Field::Byte { width, .. } => *width,
            _ => 0,
        }
    }

    /// Where the field sits in a frame without IP: an ARP frame (its ARP header at
    /// `layout.arp_offset`) or an Ethernet frame and its payload. No checksum covers anything
    /// in it, so every field patches plainly.
    fn locate_without_ip(&self, layout: &Layout) -> Result<FieldLoc, WireError> {
        let arp = |f: core::ops::Range<usize>| {
            layout
                .arp_offset
                .map(|a| at(a, f))
                .ok_or_else(|| self.not_in_frame("the frame is not ARP (proto = \"arp\")"))
        };
        let why_no_ip = if layout.arp_offset.is_some() {
            "an ARP frame has no IP header: vary arp-sender-ip or arp-target-ip"
        } else {
            "the frame has no IP header"
        };
        let (range, bits) = match self {
            Field::SrcMac => (at(layout.eth_offset, ethernet::field::SRC), ones(6)),
            Field::DstMac => (at(layout.eth_offset, ethernet::field::DST), ones(6)),
            Field::VlanId => {
                let t = layout
                    .vlan_offset
                    .ok_or_else(|| self.not_in_frame("the frame has no VLAN tag"))?;
                (at(t, vlan::field::TCI), u64::from(vlan::VID_MASK))
            }
            Field::ArpSenderMac => (arp(arp::field::SHA)?, ones(6)),
            Field::ArpSenderIp => (arp(arp::field::SPA)?, ones(4)),
            Field::ArpTargetMac => (arp(arp::field::THA)?, ones(6)),
            Field::ArpTargetIp => (arp(arp::field::TPA)?, ones(4)),
            Field::Byte { .. } => (self.byte_range(layout)?, ones(self.width())),
            Field::SrcIp | Field::DstIp | Field::IpId | Field::Ttl => {
                return Err(self.not_in_frame(why_no_ip));
            }
            Field::SrcPort | Field::DstPort => {
                return Err(self.not_in_frame(if layout.arp_offset.is_some() {
                    "an ARP frame has no ports"
                } else {
                    "the frame has no L4 header (no ports)"
                }));
            }
        };
        Ok(FieldLoc {
            offset: range.start as u16,
            width: range.len() as u8,
            bits,
            ip_csum: None,
            l4_csum: None,
            l4_udp: false,
        })
    }

    /// Largest value the field can hold; an IPv6 address field is the low 64 bits.
    pub fn max_value(&self, layout: &Layout) -> u64 {
        self.max_for(layout.ipv6)
    }

    fn max_for(&self, ipv6: bool) -> u64 {
        match self {
            Field::SrcMac | Field::DstMac | Field::ArpSenderMac | Field::ArpTargetMac => ones(6),
            Field::ArpSenderIp | Field::ArpTargetIp => ones(4),
            Field::VlanId => u64::from(vlan::MAX_VID),
            Field::SrcIp | Field::DstIp if ipv6 => u64::MAX,
            Field::SrcIp | Field::DstIp => ones(4),
            Field::IpId | Field::SrcPort | Field::DstPort => ones(2),
            Field::Ttl => ones(1),
            Field::Byte { width, .. } => ones(*width),
        }
    }
}

/// Which checksums cover `range`, decided per aligned 16-bit word because that is the unit the
/// incremental update works in. A byte field must not straddle regions with different coverage,
/// nor touch a checksum itself: no incremental update could keep those consistent.
fn coverage(
    field: &Field,
    layout: &Layout,
    range: &core::ops::Range<usize>,
) -> Result<(Option<u16>, Option<u16>), WireError> {
    let ip = layout.ip_offset;
    let ip_csum_at = ip + ipv4::field::CHECKSUM.start;
    let has_l4 = layout.l4 != L4Proto::None;
    let l4_csum_at = layout.l4_offset + layout.l4.checksum_field().start;
    let pseudo = if layout.ipv6 {
        at(ip, ipv6::field::SRC_ADDR.start..ipv6::field::DST_ADDR.end)
    } else if layout.l4 == L4Proto::Icmpv4 {
        0..0
    } else {
        at(ip, ipv4::field::SRC_ADDR.start..ipv4::field::DST_ADDR.end)
    };
    let word_cover = |p: usize| {
        let in_ip = !layout.ipv6 && (ip..ip + ipv4::HEADER_LEN).contains(&p);
        let in_l4 = has_l4 && (p >= layout.l4_offset || pseudo.contains(&p));
        (in_ip, in_l4)
    };
    let first = range.start & !1;
    let cover = word_cover(first);
    for p in (first..range.end).step_by(2) {
        if p == ip_csum_at && !layout.ipv6 || has_l4 && p == l4_csum_at {
            return Err(field.not_in_frame(format!("it overlaps the checksum at byte {p}")));
        }
        if word_cover(p) != cover {
            return Err(field.not_in_frame(format!(
                "it straddles headers with different checksums at byte {p}; split it in two"
            )));
        }
    }
    Ok((
        cover.0.then_some(ip_csum_at as u16),
        cover.1.then_some(l4_csum_at as u16),
    ))
}

/// A located field: the few bytes to rewrite and the checksums to update with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldLoc {
    /// First byte of the big-endian value.
    pub offset: u16,
    /// 1..=8 bytes (MAC 6; IPv6 address: its low 8 bytes).
    pub width: u8,
    /// Which bits of the width belong to the field (VLAN id: 0x0FFF of the TCI).
    pub bits: u64,
    /// Offset of the IPv4 header checksum when the field is inside the IPv4 header.
    pub ip_csum: Option<u16>,
    /// Offset of the UDP/TCP/ICMP checksum when it covers the field (directly or through the
    /// pseudo-header).
    pub l4_csum: Option<u16>,
    /// UDP: a computed 0 checksum is written as 0xFFFF.
    pub l4_udp: bool,
}

/// The widest span of aligned words an 8-byte field at an odd offset can touch.
const SPAN: usize = 10;

impl FieldLoc {
    /// The field's value: its bytes under `bits`, shifted down. Reads 0 if the frame is too short.
    #[inline]
    pub fn read(&self, frame: &[u8]) -> u64 {
        let o = usize::from(self.offset);
        let r = o..o + usize::from(self.width);
        if r.end > frame.len() {
            return 0;
        }
        (get_be(frame, r) & self.bits) >> self.bits.trailing_zeros().min(63)
    }

    /// Writes `value` (masked by `bits`, the other bits of the bytes untouched) and updates the
    /// covering checksums per RFC 1624 eqn. 3 over the aligned 16-bit words that hold the field.
    /// Does nothing if the frame is too short for the field.
    #[inline]
    pub fn write(&self, frame: &mut [u8], value: u64) {
        let o = usize::from(self.offset);
        let w = usize::from(self.width);
        if o + w > frame.len() || w > 8 {
            return;
        }
        // Copy the covering words out: an odd-length frame's last word is padded with zero,
        // exactly as the checksum pads it.
        // Fast path for the common case (ports, IP id, 16-bit byte patches): one aligned word.
        if w == 2 && o & 1 == 0 && self.bits == 0xFFFF {
            let m = u16::from_be_bytes([frame[o], frame[o + 1]]);
            let m2 = value as u16;
            frame[o..o + 2].copy_from_slice(&m2.to_be_bytes());
            let delta = u32::from(!m) + u32::from(m2);
            if let Some(c) = self.ip_csum {
                update_at(frame, usize::from(c), delta, false);
            }
            if let Some(c) = self.l4_csum {
                update_at(frame, usize::from(c), delta, self.l4_udp);
            }
            return;
        }
        let a = o & !1;
        let n = (o + w + 1 - a) & !1;
        let have = n.min(frame.len() - a);
        let mut old = [0u8; SPAN];
        old[..have].copy_from_slice(&frame[a..a + have]);
        let mut new = old;
        let rel = o - a..o - a + w;
        let shift = self.bits.trailing_zeros();
        let raw =
            (get_be(&old, rel.clone()) & !self.bits) | (value.wrapping_shl(shift) & self.bits);
        set_be(&mut new, rel.clone(), raw);
        frame[o..o + w].copy_from_slice(&new[rel]);

        if self.ip_csum.is_none() && self.l4_csum.is_none() {
            return;
        }
        let mut delta = 0u32;
        for i in (0..n).step_by(2) {
            let m = u16::from_be_bytes([old[i], old[i + 1]]);
            let m2 = u16::from_be_bytes([new[i], new[i + 1]]);
            delta += u32::from(!m) + u32::from(m2);
        }
        if let Some(c) = self.ip_csum {
            update_at(frame, usize::from(c), delta, false);
        }
        if let Some(c) = self.l4_csum {
            update_at(frame, usize::from(c), delta, self.l4_udp);
        }
    }
}

#[inline]
fn update_at(frame: &mut [u8], c: usize, delta: u32, udp: bool) {
    let Some(bytes) = frame.get_mut(c..c + 2) else {
        return;
    };
    let hc = u16::from_be_bytes([bytes[0], bytes[1]]);
    let mut new = !checksum::fold(u32::from(!hc) + delta);
    if udp && new == 0 {
        new = 0xFFFF;
    }
    bytes.copy_from_slice(&new.to_be_bytes());
}

/// A value of a variable field in the field's own notation: a MAC, an IPv4 or IPv6 address,
/// or an integer. Read without knowing the stream's IP version; [`FieldValue::bits`] checks it
/// against the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue {
    Int(u64),
    Mac(MacAddr),
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
}

impl FieldValue {
    /// Reads `s` in `field`'s notation; an address field takes either IP version.
    pub fn parse(field: &Field, s: &str) -> Result<Self, WireError> {
        let t = s.trim();
        let value = match field {
            Field::SrcMac | Field::DstMac | Field::ArpSenderMac | Field::ArpTargetMac => {
                Self::Mac(parse_mac(t)?)
            }
            Field::SrcIp | Field::DstIp | Field::ArpSenderIp | Field::ArpTargetIp => {
                match t.parse::<IpAddr>() {
                    Ok(IpAddr::V4(a)) => Self::Ipv4(a),
                    Ok(IpAddr::V6(a)) => Self::Ipv6(a),
                    Err(_) => {
                        return Err(WireError::BadIp {
                            field: field.name(),
                            input: s.to_string(),
                            expected: "an address like 192.0.2.1 or 2001:db8::1",
                        });
                    }
                }
            }
            _ => Self::Int(parse_uint(t).ok_or_else(|| WireError::BadValue {
                field: field.name(),
                input: s.to_string(),
                reason: "expected a decimal or 0x-hex integer".into(),
            })?),
        };
        // Integers are checked now; addresses when the IP version is known.
        if let Self::Int(_) = value {
            value.bits(field, false)?;
        }
        Ok(value)
    }

    /// The bits the field holds in a frame of this IP version: an IPv6 address is its low 64
    /// bits (the upper half comes from the template).
    pub fn bits(&self, field: &Field, ipv6: bool) -> Result<u64, WireError> {
        let family = |input: String, expected| WireError::BadIp {
            field: field.name(),
            input,
            expected,
        };
        let value = match (*self, ipv6) {
            (Self::Int(v), _) => v,
            (Self::Mac(m), _) => mac_to_u64(&m),
            (Self::Ipv4(a), false) => u64::from(u32::from(a)),
            (Self::Ipv6(a), true) => get_be(&a.octets(), IPV6_LOW),
            (Self::Ipv4(a), true) => {
                return Err(family(a.to_string(), "an IPv6 address like 2001:db8::1"));
            }
            (Self::Ipv6(a), false) => {
                return Err(family(
                    a.to_string(),
                    "a dotted IPv4 address like 192.0.2.1",
                ));
            }
        };
        let max = field.max_for(ipv6);
        if value > max {
            return Err(WireError::ValueTooLarge {
                field: field.name(),
                value,
                max,
            });
        }
        Ok(value)
    }
}

/// The notation [`FieldValue::parse`] reads.
impl std::fmt::Display for FieldValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(v) => write!(f, "{v}"),
            Self::Mac(m) => f.write_str(&format_mac(m)),
            Self::Ipv4(a) => write!(f, "{a}"),
            Self::Ipv6(a) => write!(f, "{a}"),
        }
    }
}

/// Reads a value in the field's own notation (MAC, dotted IPv4, IPv6, decimal or 0x-hex) into
/// the bits it holds in a frame of this IP version.
pub fn parse_value(field: &Field, s: &str, ipv6: bool) -> Result<u64, WireError> {
    FieldValue::parse(field, s)?.bits(field, ipv6)
}

#[cfg(test)]
#[path = "field_tests.rs"]
mod tests;
