//! Header stacks: the headers of a frame outermost first, tunnels included (VXLAN, GRE and
//! NVGRE, MPLS, QinQ, GTP-U, IP-in-IP), and ARP as a payload header.
//!
//! A [`StackSpec`] is a plain value: the headers as the user wrote them and the payload. It says
//! nothing that follows from the order of its headers; [`StackSpec::build`] computes that:
//! - what comes next: every ethertype and VLAN TPID, IPv4 protocol and IPv6 next header, GRE
//!   protocol type (0x6558 for an Ethernet frame, as NVGRE), MPLS bottom-of-stack bit, and the
//!   UDP destination port of a VXLAN (4789) or GTP-U (2152) header when the spec leaves it out;
//! - every length, running to the end of the frame: each IPv4 total length, IPv6 payload length,
//!   UDP length and GTP-U length;
//! - every checksum, inner first so that each outer one covers the final inner bytes: L4 with its
//!   pseudo-header, IPv4 header, GRE when its C bit is set. An outer UDP checksum may be sent as 0
//!   over IPv4 when asked (RFC 7348 §5 allows it for VXLAN); over IPv6 it never is (RFC 8200 §8.1).
//!
//! **Sizes.** The frame size is the outer frame's, FCS included, as everywhere in linerate: the
//! bytes built are `frame_size - 4` long. An inner Ethernet frame (after VXLAN, GRE or MPLS)
//! carries no FCS, as on the wire and in the OTG models; its headers and the payload fill what the
//! outer headers leave. The payload runs from the end of the last header to the end of the frame,
//! so the receive side's signature trailer, at the end of the payload, is at the end of the frame
//! whatever the stack.
//!
//! **Locating fields.** The built [`StackFrame`] lists every layer (kind, offset, length) and every
//! checksum with the bytes it covers, so the field engine can find "the second UDP header's
//! source port" with `offset_of(LayerKind::Udp, 1)` plus `header::udp::field::SRC_PORT`, and
//! learn from `checksums_over` which checksums to update incrementally when it patches it;
//! `StackFrame::set_word` does that for one 16-bit word (RFC 1624, innermost checksum first, each
//! updated checksum a change to the outer ones).

use core::ops::Range;
use std::net::Ipv4Addr;

use crate::header::{at, ethernet, icmp, ipv4, ipv6, tcp, udp, vlan};
use crate::tunnel::{arp, gre, gtpu, mpls, next, vxlan};
use crate::units::{FCS_LEN, MAX_FRAME_SIZE, MIN_FRAME_SIZE, buffer_len};
use crate::{IpSpec, L4Proto, Layout, MacAddr, Payload, TcpFlags, WireError, checksum};

/// Which tag protocol a VLAN tag is announced with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VlanTpid {
    /// IEEE 802.1Q customer tag, 0x8100 (the inner tag of QinQ).
    Dot1Q,
    /// IEEE 802.1ad service tag, 0x88a8 (the outer tag of QinQ).
    Dot1Ad,
}

impl VlanTpid {
    pub fn ethertype(self) -> u16 {
        match self {
            VlanTpid::Dot1Q => ethernet::ETHERTYPE_VLAN,
            VlanTpid::Dot1Ad => next::ETHERTYPE_QINQ,
        }
    }
}

/// GRE's optional words (RFC 2890); the version is always 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GreSpec {
    /// Sets C and fills the checksum over the GRE header and everything after it.
    pub checksum: bool,
    pub key: Option<u32>,
    pub seq: Option<u32>,
}

impl GreSpec {
    /// NVGRE (RFC 7637): the key carries the 24-bit VSID and an 8-bit FlowID; no checksum, no
    /// sequence number. Follow it with an Ethernet header.
    pub fn nvgre(vsid: u32, flow_id: u8) -> Result<Self, WireError> {
        if vsid > gre::MAX_VSID {
            return Err(WireError::VsidOutOfRange { vsid });
        }
        Ok(Self {
            checksum: false,
            key: Some((vsid << gre::NVGRE_VSID_SHIFT) | u32::from(flow_id)),
            seq: None,
        })
    }

    fn len(&self) -> usize {
        let words = [self.checksum, self.key.is_some(), self.seq.is_some()];
        gre::BASE_LEN + gre::OPTION_LEN * words.iter().filter(|&&on| on).count()
    }
}

/// One header of a stack, as the user describes it; what follows from its neighbours is not here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderSpec {
    Ethernet {
        src: MacAddr,
        dst: MacAddr,
    },
    /// DEI is always 0.
    Vlan {
        tpid: VlanTpid,
        id: u16,
        pcp: u8,
    },
    /// One label stack entry; bottom-of-stack is set on the last of consecutive entries.
    Mpls {
        label: u32,
        tc: u8,
        ttl: u8,
    },
    Ip(IpSpec),
    Gre(GreSpec),
    Udp {
        src_port: u16,
        /// `None`: the well-known port of the VXLAN or GTP-U header that follows.
        dst_port: Option<u16>,
        /// Send 0 ("no checksum"); IPv4 only.
        zero_checksum: bool,
    },
    Tcp {
        src_port: u16,
        dst_port: u16,
        seq: u32,
        ack: u32,
        flags: TcpFlags,
        window: u16,
    },
    /// ICMPv4 echo request after IPv4, ICMPv6 echo request after IPv6.
    IcmpEcho {
        id: u16,
        seq: u16,
    },
    /// Flags 0x08 (I); followed by an Ethernet header.
    Vxlan {
        vni: u32,
    },
    /// A G-PDU; `seq` adds the optional word with S set.
    GtpV1U {
        teid: u32,
        seq: Option<u16>,
    },
    /// ARP for IPv4 over Ethernet; the payload pads the frame after it.
    Arp {
        op: u16,
        sender_mac: MacAddr,
        sender_ip: Ipv4Addr,
        target_mac: MacAddr,
        target_ip: Ipv4Addr,
    },
}

/// What a layer of a built frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayerKind {
    Ethernet,
    Vlan,
    Mpls,
    Ipv4,
    Ipv6,
    Gre,
    Udp,
    Tcp,
    Icmpv4,
    Icmpv6,
    Vxlan,
    GtpV1U,
    Arp,
}

impl LayerKind {
    /// The name used in errors and in the stream file.
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Ethernet => "ethernet",
            LayerKind::Vlan => "vlan",
            LayerKind::Mpls => "mpls",
            LayerKind::Ipv4 => "ipv4",
            LayerKind::Ipv6 => "ipv6",
            LayerKind::Gre => "gre",
            LayerKind::Udp => "udp",
            LayerKind::Tcp => "tcp",
            LayerKind::Icmpv4 | LayerKind::Icmpv6 => "icmp",
            LayerKind::Vxlan => "vxlan",
            LayerKind::GtpV1U => "gtpv1u",
            LayerKind::Arp => "arp",
        }
    }

    /// The headers that may come right after this one, for `may_follow` and its error text.
    fn followers(self) -> (&'static [LayerKind], &'static str) {
        use LayerKind::*;
        match self {
            Ethernet | Vlan => (
                &[Vlan, Mpls, Ipv4, Ipv6, Arp],
                "vlan, mpls, ipv4, ipv6 or arp",
            ),
            Mpls => (
                &[Mpls, Ipv4, Ipv6, Ethernet],
                "mpls, ipv4, ipv6 or ethernet",
            ),
            Ipv4 | Ipv6 => (
                &[Ipv4, Ipv6, Gre, Udp, Tcp, Icmpv4, Icmpv6],
                "ipv4, ipv6, gre, udp, tcp or icmp",
            ),
            Gre => (
                &[Ethernet, Ipv4, Ipv6, Mpls],
                "ethernet, ipv4, ipv6 or mpls",
            ),
            Udp => (&[Vxlan, GtpV1U], "vxlan, gtpv1u or the payload"),
            Vxlan => (&[Ethernet], "ethernet"),
            GtpV1U => (&[Ipv4, Ipv6], "ipv4 or ipv6"),
            Tcp | Icmpv4 | Icmpv6 | Arp => (&[], "only the payload"),
        }
    }

    /// Whether the payload may come right after this header: an L4 header or ARP, or an
    /// Ethernet frame or IP packet with nothing else inside (ethertype 0xFFFF, IPv4 protocol 61,
    /// IPv6 next header 59).
    fn carries_payload(self) -> bool {
        use LayerKind::*;
        matches!(
            self,
            Udp | Tcp | Icmpv4 | Icmpv6 | Arp | Ethernet | Vlan | Ipv4 | Ipv6
        )
    }
}

impl HeaderSpec {
    /// The kind this header is when it follows `prev` (only ICMP depends on it).
    fn kind(&self, prev: Option<LayerKind>) -> LayerKind {
        match self {
            HeaderSpec::Ethernet { .. } => LayerKind::Ethernet,
            HeaderSpec::Vlan { .. } => LayerKind::Vlan,
            HeaderSpec::Mpls { .. } => LayerKind::Mpls,
            HeaderSpec::Ip(IpSpec::V4 { .. }) => LayerKind::Ipv4,
            HeaderSpec::Ip(IpSpec::V6 { .. }) => LayerKind::Ipv6,
            HeaderSpec::Gre(_) => LayerKind::Gre,
            HeaderSpec::Udp { .. } => LayerKind::Udp,
            HeaderSpec::Tcp { .. } => LayerKind::Tcp,
            HeaderSpec::IcmpEcho { .. } if prev == Some(LayerKind::Ipv6) => LayerKind::Icmpv6,
            HeaderSpec::IcmpEcho { .. } => LayerKind::Icmpv4,
            HeaderSpec::Vxlan { .. } => LayerKind::Vxlan,
            HeaderSpec::GtpV1U { .. } => LayerKind::GtpV1U,
            HeaderSpec::Arp { .. } => LayerKind::Arp,
        }
    }

    /// Bytes this header adds to the frame. A VLAN tag adds four: its TPID sits in the type
    /// field of the header before it.
    fn len(&self) -> usize {
        match self {
            HeaderSpec::Ethernet { .. } => ethernet::HEADER_LEN,
            HeaderSpec::Vlan { .. } => vlan::TAG_LEN,
            HeaderSpec::Mpls { .. } => mpls::HEADER_LEN,
            HeaderSpec::Ip(IpSpec::V4 { .. }) => ipv4::HEADER_LEN,
            HeaderSpec::Ip(IpSpec::V6 { .. }) => ipv6::HEADER_LEN,
            HeaderSpec::Gre(g) => g.len(),
            HeaderSpec::Udp { .. } => udp::HEADER_LEN,
            HeaderSpec::Tcp { .. } => tcp::HEADER_LEN,
            HeaderSpec::IcmpEcho { .. } => icmp::HEADER_LEN,
            HeaderSpec::Vxlan { .. } => vxlan::HEADER_LEN,
            HeaderSpec::GtpV1U { seq, .. } => {
                gtpu::HEADER_LEN + seq.map_or(0, |_| gtpu::OPTION_LEN)
            }
            HeaderSpec::Arp { .. } => arp::HEADER_LEN,
        }
    }

    /// Range checks of this header's own values; `position` counts from 1 at the outermost.
    fn check_values(&self, position: usize) -> Result<(), WireError> {
        match *self {
            HeaderSpec::Vlan { id, .. } if id > vlan::MAX_VID => {
                Err(WireError::VlanIdOutOfRange { id })
            }
            HeaderSpec::Vlan { pcp, .. } if pcp > vlan::MAX_PCP => {
                Err(WireError::VlanPcpOutOfRange { pcp })
            }
            HeaderSpec::Mpls { label, .. } if label > mpls::MAX_LABEL => {
                Err(WireError::MplsLabelOutOfRange { position, label })
            }
            HeaderSpec::Mpls { tc, .. } if tc > mpls::MAX_TC => {
                Err(WireError::MplsTcOutOfRange { position, tc })
            }
            HeaderSpec::Ip(IpSpec::V4 { dscp, .. }) if dscp > ipv4::MAX_DSCP => {
                Err(WireError::DscpOutOfRange { dscp })
            }
            HeaderSpec::Ip(IpSpec::V6 { flow_label, .. }) if flow_label > ipv6::MAX_FLOW_LABEL => {
                Err(WireError::FlowLabelOutOfRange { flow_label })
            }
            HeaderSpec::Vxlan { vni } if vni > vxlan::MAX_VNI => {
                Err(WireError::VniOutOfRange { position, vni })
            }
            _ => Ok(()),
        }
    }
}

/// One header of a built frame. A VLAN layer starts at its TPID (as `header::vlan` counts it),
/// two bytes before the end of the header it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layer {
    pub kind: LayerKind,
    pub offset: usize,
    pub len: usize,
    /// Bytes at the end of the frame past the end of the frame this header is in: 4 for each
    /// inner Ethernet frame it sits in, that frame's FCS (see [`StackSpec::build`]).
    pub inner_fcs: usize,
}

impl Layer {
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + self.len
    }

    /// Where the frame this header is in ends, in a buffer of `buffer_len` bytes (no outer FCS):
    /// its lengths and checksums run to here.
    pub fn frame_end(&self, buffer_len: usize) -> usize {
        buffer_len - self.inner_fcs
    }
}

/// A checksum of a built frame: where it is stored and the bytes it sums (besides a
/// pseudo-header, which holds the addresses of the IP layer `pseudo_header`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumSpan {
    /// Index in `StackFrame::layers` of the header that holds it.
    pub layer: usize,
    pub field: Range<usize>,
    pub covers: Range<usize>,
    /// Index of the IP layer whose pseudo-header (addresses, protocol, length) it also sums.
    pub pseudo_header: Option<usize>,
    /// UDP's: a computed 0 is sent as 0xFFFF, since 0 means "no checksum".
    pub udp: bool,
}

/// A built frame: its bytes (no FCS), its layers outermost first, and where its payload starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackFrame {
    pub bytes: Vec<u8>,
    pub layers: Vec<Layer>,
    /// Every checksum the frame carries, innermost first (the order they were computed in).
    pub checksums: Vec<ChecksumSpan>,
    pub payload_offset: usize,
}

impl StackFrame {
    /// The `nth` layer of `kind`, counting from 0 at the outermost.
    pub fn layer(&self, kind: LayerKind, nth: usize) -> Option<&Layer> {
        self.layers.iter().filter(|l| l.kind == kind).nth(nth)
    }

    /// Where the `nth` header of `kind` starts (0 = outermost); add a field range from its table.
    pub fn offset_of(&self, kind: LayerKind, nth: usize) -> Option<usize> {
        self.layer(kind, nth).map(|l| l.offset)
    }

    /// The innermost header of `kind`, where a flow's varying fields usually are.
    pub fn innermost(&self, kind: LayerKind) -> Option<&Layer> {
        self.layers.iter().rev().find(|l| l.kind == kind)
    }

    /// The frame bytes a checksum's pseudo-header takes from its IP layer: the addresses and the
    /// protocol (next header) byte. Its length is fixed once the frame is built.
    fn pseudo_bytes(&self, c: &ChecksumSpan) -> [Range<usize>; 2] {
        let Some(&ip) = c.pseudo_header.and_then(|i| self.layers.get(i)) else {
            return [0..0, 0..0];
        };
        let (src, dst, proto) = match ip.kind {
            LayerKind::Ipv6 => (
                ipv6::field::SRC_ADDR,
                ipv6::field::DST_ADDR,
                ipv6::field::NXT_HDR,
            ),
            _ => (
                ipv4::field::SRC_ADDR,
                ipv4::field::DST_ADDR,
                ipv4::field::PROTOCOL,
            ),
        };
        [
            at(ip.offset, src.start..dst.end),
            at(ip.offset, proto..proto + 1),
        ]
    }

    /// The checksums a change to `bytes` must update: those whose covered bytes or pseudo-header
    /// include them. Innermost first, the order an incremental update must follow; each updated
    /// checksum is itself a change to the checksums further out.
    pub fn checksums_over(&self, bytes: Range<usize>) -> impl Iterator<Item = &ChecksumSpan> {
        self.checksums.iter().filter(move |c| {
            let overlaps = |r: &Range<usize>| r.start < bytes.end && bytes.start < r.end;
            overlaps(&c.covers) || self.pseudo_bytes(c).iter().any(overlaps)
        })
    }

    /// What the aligned word at `offset`, holding `word`, adds to checksum `c`: the word itself
    /// when `c` covers it or it holds pseudo-header addresses; the protocol byte alone when it
    /// holds that (the pseudo-header carries it in a word of its own); nothing otherwise.
    fn contribution(&self, c: &ChecksumSpan, offset: usize, word: u16) -> Option<u16> {
        let [addrs, proto] = self.pseudo_bytes(c);
        if c.covers.contains(&offset) || addrs.contains(&offset) {
            Some(word)
        } else if proto.start == offset {
            Some(word >> 8)
        } else if proto.start == offset + 1 {
            Some(word & 0xFF)
        } else {
            None
        }
    }

    /// The headers of the flow the frame carries, as the field engine locates named fields: the
    /// last layer (UDP, TCP or ICMP), the IP header before it, the innermost Ethernet header and
    /// the VLAN tag after it; for a stack ending in ARP, the ARP header in their place; for one
    /// ending in IP, no L4 header; for one ending in Ethernet or a VLAN tag, neither IP nor L4.
    /// None when the stack ends in none of these.
    pub fn flow_layout(&self) -> Option<Layout> {
        let (l4, rest) = self.layers.split_last()?;
        match l4.kind {
            LayerKind::Arp => return self.arp_layout(l4, rest),
            LayerKind::Ipv4 | LayerKind::Ipv6 => return self.raw_ip_layout(l4, rest),
            LayerKind::Ethernet | LayerKind::Vlan => return self.ethernet_layout(),
            _ => {}
        }
        let l4_proto = match l4.kind {
            LayerKind::Udp => L4Proto::Udp,
            LayerKind::Tcp => L4Proto::Tcp,
            LayerKind::Icmpv4 => L4Proto::Icmpv4,
            LayerKind::Icmpv6 => L4Proto::Icmpv6,
            _ => return None,
        };
        let ip = rest.last()?;
        let ipv6 = match ip.kind {
            LayerKind::Ipv4 => false,
            LayerKind::Ipv6 => true,
            _ => return None,
        };
        let eth = rest.iter().rposition(|l| l.kind == LayerKind::Ethernet)?;
        Some(Layout {
            eth_offset: rest[eth].offset,
            vlan_offset: rest[eth..]
                .iter()
                .rfind(|l| l.kind == LayerKind::Vlan)
                .map(|l| l.offset),
            ip_offset: ip.offset,
            ipv6,
            l4_offset: l4.offset,
            l4: l4_proto,
            payload_offset: self.payload_offset,
            len: self.bytes.len(),
            inner_fcs: l4.inner_fcs,
            arp_offset: None,
            ethernet_only: false,
        })
    }

    /// An IP packet with no L4 header: the payload follows the IP header at `ip`.
    fn raw_ip_layout(&self, ip: &Layer, rest: &[Layer]) -> Option<Layout> {
        let eth = rest.iter().rposition(|l| l.kind == LayerKind::Ethernet)?;
        Some(Layout {
            eth_offset: rest[eth].offset,
            vlan_offset: rest[eth..]
                .iter()
                .rfind(|l| l.kind == LayerKind::Vlan)
                .map(|l| l.offset),
            ip_offset: ip.offset,
            ipv6: ip.kind == LayerKind::Ipv6,
            l4_offset: self.payload_offset,
            l4: L4Proto::None,
            payload_offset: self.payload_offset,
            len: self.bytes.len(),
            inner_fcs: ip.inner_fcs,
            arp_offset: None,
            ethernet_only: false,
        })
    }

    /// An Ethernet frame (VLAN tags included) whose payload follows its header.
    fn ethernet_layout(&self) -> Option<Layout> {
        let eth = self
            .layers
            .iter()
            .rposition(|l| l.kind == LayerKind::Ethernet)?;
        Some(Layout {
            eth_offset: self.layers[eth].offset,
            vlan_offset: self.layers[eth..]
                .iter()
                .rfind(|l| l.kind == LayerKind::Vlan)
                .map(|l| l.offset),
            ip_offset: self.payload_offset,
            ipv6: false,
            l4_offset: self.payload_offset,
            l4: L4Proto::None,
            payload_offset: self.payload_offset,
            len: self.bytes.len(),
            inner_fcs: self.layers[eth].inner_fcs,
            arp_offset: None,
            ethernet_only: true,
        })
    }

    /// An ARP frame's layout: the Ethernet header and VLAN tag before the ARP header, which
    /// stands where the IP and L4 headers of a flow would (see `Layout::arp_offset`).
    fn arp_layout(&self, arp: &Layer, rest: &[Layer]) -> Option<Layout> {
        let eth = rest.iter().rposition(|l| l.kind == LayerKind::Ethernet)?;
        Some(Layout {
            eth_offset: rest[eth].offset,
            vlan_offset: rest[eth..]
                .iter()
                .rfind(|l| l.kind == LayerKind::Vlan)
                .map(|l| l.offset),
            ip_offset: arp.offset,
            ipv6: false,
            l4_offset: arp.offset + arp.len,
            l4: L4Proto::Udp,
            payload_offset: self.payload_offset,
            len: self.bytes.len(),
            inner_fcs: arp.inner_fcs,
            arp_offset: Some(arp.offset),
            ethernet_only: false,
        })
    }

    /// Computes every checksum of `bytes`, a frame laid out as this one (same stack, same size)
    /// whose fields were changed in place, afresh: innermost first, as `StackSpec::build` does.
    /// Returns false, changing nothing, when `bytes` is not of this frame's length.
    pub fn refill_checksums(&self, bytes: &mut [u8]) -> bool {
        if bytes.len() != self.bytes.len() {
            return false;
        }
        for c in &self.checksums {
            bytes[c.field.clone()].fill(0);
            let value = crate::stack_emit::checksum_value(bytes, c, &self.layers);
            bytes[c.field.clone()].copy_from_slice(&value.to_be_bytes());
        }
        true
    }

    /// Writes the 16-bit word at the even `offset` and updates every checksum over it
    /// incrementally (RFC 1624 eqn. 3), innermost first, each updated checksum feeding the
    /// outer ones: how a field of an inner header varies without rebuilding the frame.
    pub fn set_word(&mut self, offset: usize, value: u16) -> Result<(), WireError> {
        let word = offset..offset + 2;
        if !offset.is_multiple_of(2) || word.end > self.bytes.len() {
            return Err(WireError::WordNotPatchable {
                offset,
                reason: "it is not an aligned 16-bit word inside the frame",
            });
        }
        if self.checksums.iter().any(|c| c.field == word) {
            return Err(WireError::WordNotPatchable {
                offset,
                reason: "it is a checksum; it follows the fields it covers",
            });
        }
        let read = |b: &[u8], at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
        let mut changes = vec![(offset, read(&self.bytes, offset), value)];
        self.bytes[word].copy_from_slice(&value.to_be_bytes());
        for c in &self.checksums {
            let old = read(&self.bytes, c.field.start);
            let mut hc = old;
            for &(at, was, now) in &changes {
                if let (Some(was), Some(now)) =
                    (self.contribution(c, at, was), self.contribution(c, at, now))
                {
                    hc = checksum::update(hc, was, now);
                }
            }
            if c.udp && hc == 0 {
                hc = 0xFFFF;
            }
            if hc != old {
                self.bytes[c.field.clone()].copy_from_slice(&hc.to_be_bytes());
                changes.push((c.field.start, old, hc));
            }
        }
        Ok(())
    }
}

/// A frame described as its headers, outermost first, and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackSpec {
    pub headers: Vec<HeaderSpec>,
    pub payload: Payload,
}

impl StackSpec {
    /// Checks the order and the values of the headers; returns each header's kind.
    pub fn validate(&self) -> Result<Vec<LayerKind>, WireError> {
        let mut kinds: Vec<LayerKind> = Vec::with_capacity(self.headers.len());
        for (i, h) in self.headers.iter().enumerate() {
            let kind = h.kind(kinds.last().copied());
            match kinds.last() {
                None if kind != LayerKind::Ethernet => {
                    return Err(WireError::StackStart { first: kind.name() });
                }
                Some(&prev) if !prev.followers().0.contains(&kind) => {
                    return Err(WireError::StackOrder {
                        position: i + 1,
                        header: kind.name(),
                        after: prev.name(),
                        allowed: prev.followers().1,
                    });
                }
                _ => {}
            }
            h.check_values(i + 1)?;
            if let HeaderSpec::Udp {
                dst_port,
                zero_checksum,
                ..
            } = h
            {
                if *zero_checksum && kinds.last() == Some(&LayerKind::Ipv6) {
                    return Err(WireError::UdpZeroChecksumOverIpv6 { position: i + 1 });
                }
                if dst_port.is_none() && i + 1 == self.headers.len() {
                    return Err(WireError::UdpPortMissing { position: i + 1 });
                }
            }
            kinds.push(kind);
        }
        match kinds.last() {
            None => Err(WireError::StackStart { first: "nothing" }),
            Some(last) if !last.carries_payload() => Err(WireError::StackEnd { last: last.name() }),
            _ => Ok(kinds),
        }
    }

    /// Bytes of all headers together.
    pub fn headers_len(&self) -> usize {
        self.headers.iter().map(HeaderSpec::len).sum()
    }

    /// Bytes the inner Ethernet frames' FCS slots take at the end of the frame: 4 for every
    /// Ethernet header after the first.
    pub fn inner_fcs_len(&self) -> usize {
        let ethernets = self
            .headers
            .iter()
            .filter(|h| matches!(h, HeaderSpec::Ethernet { .. }))
            .count();
        ethernets.saturating_sub(1) * FCS_LEN
    }

    /// Smallest frame size (FCS included) that holds the headers and the inner frames' FCS
    /// slots, never below Ethernet's 64.
    pub fn min_frame_size(&self) -> usize {
        (self.headers_len() + self.inner_fcs_len() + FCS_LEN).max(MIN_FRAME_SIZE)
    }

    /// Builds the frame for `frame_size` bytes on the wire including the outer FCS, so the bytes
    /// are `frame_size - 4` long: headers outermost first, the payload to the end, and every
    /// next-header number, length and checksum computed (see the module docs).
    ///
    /// An Ethernet frame inside a tunnel (VXLAN, GRE's transparent bridging, an MPLS pseudowire)
    /// keeps 4 bytes for its own FCS at the end, as IxNetwork and ixia-c size it (ixia-c #112):
    /// the lengths and checksums of the headers inside it stop 4 bytes short of the outer
    /// ones'. The slot holds zeros (the signature's magic when the frame carries one), not a
    /// CRC: RFC 7348 carries no inner FCS, so a decapsulating device reads them as a
    /// trailer after the inner IP packet, and a CRC would be stale as soon as a field varied.
    pub fn build(&self, frame_size: usize) -> Result<StackFrame, WireError> {
        let kinds = self.validate()?;
        let min = self.min_frame_size();
        if frame_size < min {
            return Err(WireError::FrameTooSmall {
                size: frame_size,
                min,
            });
        }
        if frame_size > MAX_FRAME_SIZE {
            return Err(WireError::FrameTooLarge {
                size: frame_size,
                max: MAX_FRAME_SIZE,
            });
        }
        let layers = self.layout(&kinds);
        let mut bytes = vec![0u8; buffer_len(frame_size)];
        for (i, (h, layer)) in self.headers.iter().zip(&layers).enumerate() {
            let after = self.headers.get(i + 1).zip(kinds.get(i + 1).copied());
            crate::stack_emit::emit(&mut bytes, h, layer, after);
        }
        let payload_offset = self.headers_len();
        // The last layer's count holds every inner frame's FCS slot.
        let payload_end = bytes.len() - layers.last().map_or(0, |l| l.inner_fcs);
        self.payload
            .fill(&mut bytes[payload_offset..payload_end], frame_size)?;
        let checksums = crate::stack_emit::fill_checksums(&mut bytes, &self.headers, &layers);
        Ok(StackFrame {
            bytes,
            layers,
            checksums,
            payload_offset,
        })
    }

    fn layout(&self, kinds: &[LayerKind]) -> Vec<Layer> {
        let mut cursor = 0;
        let mut inner_fcs = 0;
        let mut layers = Vec::with_capacity(kinds.len());
        for (i, (h, &kind)) in self.headers.iter().zip(kinds).enumerate() {
            let len = h.len();
            if i > 0 && kind == LayerKind::Ethernet {
                inner_fcs += FCS_LEN;
            }
            layers.push(match kind {
                LayerKind::Vlan => Layer {
                    kind,
                    offset: cursor - vlan::field::TPID.end,
                    len: vlan::field::ETHERTYPE.end,
                    inner_fcs,
                },
                _ => Layer {
                    kind,
                    offset: cursor,
                    len,
                    inner_fcs,
                },
            });
            cursor += len;
        }
        layers
    }
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;
