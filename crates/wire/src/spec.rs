//! The plain values that describe a frame (a `FrameSpec` is written as its header stack), and the
//! layout of a flow's headers that the builder hands back.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::header::{icmp, ipv4, tcp, udp};
use crate::{HeaderSpec, MacAddr, Rng, StackSpec, VlanTpid, WireError};

/// An 802.1Q tag; DEI is always 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanTag {
    pub id: u16,
    pub pcp: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpSpec {
    V4 {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        ttl: u8,
        id: u16,
        dscp: u8,
    },
    V6 {
        src: Ipv6Addr,
        dst: Ipv6Addr,
        hop_limit: u8,
        flow_label: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpFlags {
    pub fin: bool,
    pub syn: bool,
    pub rst: bool,
    pub psh: bool,
    pub ack: bool,
    pub urg: bool,
    pub ece: bool,
    pub cwr: bool,
}

/// Names and letters in bit order (FIN is bit 0).
const TCP_FLAG_NAMES: [(&str, char); 8] = [
    ("fin", 'F'),
    ("syn", 'S'),
    ("rst", 'R'),
    ("psh", 'P'),
    ("ack", 'A'),
    ("urg", 'U'),
    ("ece", 'E'),
    ("cwr", 'C'),
];

impl TcpFlags {
    /// Reads `syn,ack` (names, separated by `,` `|` `+` or spaces) or `SA` (letters F S R P A U E C);
    /// both case-insensitive; the empty string means no flags.
    pub fn parse(s: &str) -> Result<Self, WireError> {
        let mut bits = 0u8;
        for token in s.split([',', '|', '+', ' ']).filter(|t| !t.is_empty()) {
            let lower = token.to_ascii_lowercase();
            if let Some(i) = TCP_FLAG_NAMES.iter().position(|(n, _)| *n == lower) {
                bits |= 1 << i;
                continue;
            }
            for ch in token.chars() {
                let up = ch.to_ascii_uppercase();
                let i = TCP_FLAG_NAMES
                    .iter()
                    .position(|(_, l)| *l == up)
                    .ok_or_else(|| WireError::BadTcpFlags {
                        input: s.to_string(),
                        reason: format!(
                            "{token:?} is neither a flag name nor flag letters ({ch:?})"
                        ),
                    })?;
                bits |= 1 << i;
            }
        }
        Ok(Self::from_bits(bits))
    }

    /// The flags byte of the TCP header.
    pub fn bits(&self) -> u8 {
        [
            self.fin, self.syn, self.rst, self.psh, self.ack, self.urg, self.ece, self.cwr,
        ]
        .iter()
        .enumerate()
        .fold(0, |acc, (i, &on)| acc | (u8::from(on) << i))
    }

    pub fn from_bits(b: u8) -> Self {
        let on = |i: u8| b & (1 << i) != 0;
        Self {
            fin: on(0),
            syn: on(1),
            rst: on(2),
            psh: on(3),
            ack: on(4),
            urg: on(5),
            ece: on(6),
            cwr: on(7),
        }
    }
}

impl std::str::FromStr for TcpFlags {
    type Err = WireError;

    fn from_str(s: &str) -> Result<Self, WireError> {
        Self::parse(s)
    }
}

/// The letters `parse` reads (`SA`), in bit order; no flags is the empty string.
impl std::fmt::Display for TcpFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bits = self.bits();
        TCP_FLAG_NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| bits & (1 << i) != 0)
            .try_for_each(|(_, (_, letter))| write!(f, "{letter}"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum L4Spec {
    Udp {
        src_port: u16,
        dst_port: u16,
    },
    Tcp {
        src_port: u16,
        dst_port: u16,
        seq: u32,
        ack: u32,
        flags: TcpFlags,
        window: u16,
    },
    /// ICMPv4 echo request over V4, ICMPv6 echo request over V6.
    IcmpEcho {
        id: u16,
        seq: u16,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Every byte this value.
    Fixed(u8),
    /// 0, 1, 2, ..., 255, 0, ... from the payload start.
    Increment,
    /// Deterministic pseudo-random bytes from the seed, so a plan is reproducible.
    Random { seed: u64 },
    /// Repeated to fill.
    Pattern(Vec<u8>),
    /// Exact bytes, zero-filled after.
    Raw(Vec<u8>),
}

fn parse_int(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

pub(crate) fn parse_uint(s: &str) -> Option<u64> {
    parse_int(s.trim())
}

fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if !s.len().is_multiple_of(2) {
        return Err(format!("hex {s:?} has an odd number of digits"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| format!("{s:?} is not hex"))
        })
        .collect()
}

impl Payload {
    /// Reads `fixed:0xAB` | `fixed:171` | `inc` | `random` | `random:SEED` | `pattern:HEX` | `raw:HEX`.
    pub fn parse(s: &str) -> Result<Self, WireError> {
        let bad = |reason: String| WireError::BadPayload {
            input: s.to_string(),
            reason,
        };
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        match (kind.to_ascii_lowercase().as_str(), arg) {
            ("fixed", Some(a)) => match parse_int(a) {
                Some(v) if v <= 0xFF => Ok(Payload::Fixed(v as u8)),
                _ => Err(bad(format!("fixed byte {a:?} is not a number in 0..=255"))),
            },
            ("inc", None) => Ok(Payload::Increment),
            ("random", None) => Ok(Payload::Random { seed: 0 }),
            ("random", Some(a)) => parse_int(a)
                .map(|seed| Payload::Random { seed })
                .ok_or_else(|| bad(format!("seed {a:?} is not a u64"))),
            ("pattern", Some(a)) => match parse_hex(a).map_err(bad)? {
                p if p.is_empty() => Err(bad("pattern is empty".into())),
                p => Ok(Payload::Pattern(p)),
            },
            ("raw", Some(a)) => Ok(Payload::Raw(parse_hex(a).map_err(bad)?)),
            ("fixed" | "pattern" | "raw", None) => {
                Err(bad(format!("{kind:?} needs a value after ':'")))
            }
            ("inc", Some(_)) => Err(bad("\"inc\" takes no value".into())),
            _ => Err(bad(format!("unknown kind {kind:?}"))),
        }
    }

    /// Fills `buf`, the payload of a frame of `frame_size`.
    pub(crate) fn fill(&self, buf: &mut [u8], frame_size: usize) -> Result<(), WireError> {
        match self {
            Payload::Fixed(b) => buf.fill(*b),
            Payload::Increment => buf.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8),
            Payload::Random { seed } => {
                let mut rng = Rng::new(*seed);
                for chunk in buf.chunks_mut(8) {
                    let r = rng.next_u64().to_le_bytes();
                    chunk.copy_from_slice(&r[..chunk.len()]);
                }
            }
            Payload::Pattern(p) if p.is_empty() => buf.fill(0),
            Payload::Pattern(p) => buf
                .iter_mut()
                .zip(p.iter().cycle())
                .for_each(|(b, v)| *b = *v),
            Payload::Raw(r) => {
                if r.len() > buf.len() {
                    return Err(WireError::PayloadTooLong {
                        len: r.len(),
                        room: buf.len(),
                        frame_size,
                    });
                }
                buf[..r.len()].copy_from_slice(r);
                buf[r.len()..].fill(0);
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for Payload {
    type Err = WireError;

    fn from_str(s: &str) -> Result<Self, WireError> {
        Self::parse(s)
    }
}

/// The form `parse` reads back.
impl std::fmt::Display for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        match self {
            Payload::Fixed(b) => write!(f, "fixed:{b:#04x}"),
            Payload::Increment => f.write_str("inc"),
            Payload::Random { seed } => write!(f, "random:{seed}"),
            Payload::Pattern(p) => write!(f, "pattern:{}", hex(p)),
            Payload::Raw(r) => write!(f, "raw:{}", hex(r)),
        }
    }
}

crate::serde_as_text!(TcpFlags, Payload);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4Proto {
    Udp,
    Tcp,
    Icmpv4,
    Icmpv6,
    /// No L4 header: the payload follows the IP header (or, `Layout::ethernet_only`, the
    /// Ethernet header), and no L4 checksum covers anything.
    None,
}

impl L4Proto {
    pub fn header_len(self) -> usize {
        match self {
            L4Proto::Udp => udp::HEADER_LEN,
            L4Proto::Tcp => tcp::HEADER_LEN,
            L4Proto::Icmpv4 | L4Proto::Icmpv6 => icmp::HEADER_LEN,
            L4Proto::None => 0,
        }
    }

    /// Where the checksum sits inside this header (empty: there is none).
    pub fn checksum_field(self) -> core::ops::Range<usize> {
        match self {
            L4Proto::Udp => udp::field::CHECKSUM,
            L4Proto::Tcp => tcp::field::CHECKSUM,
            L4Proto::Icmpv4 | L4Proto::Icmpv6 => icmp::field::CHECKSUM,
            L4Proto::None => 0..0,
        }
    }

    /// The IPv4 protocol / IPv6 next-header number (no L4: IPv4's 61; IPv6 writes 59).
    pub fn ip_proto(self) -> u8 {
        match self {
            L4Proto::Udp => ipv4::PROTO_UDP,
            L4Proto::Tcp => ipv4::PROTO_TCP,
            L4Proto::Icmpv4 => ipv4::PROTO_ICMP,
            L4Proto::Icmpv6 => ipv4::PROTO_ICMPV6,
            L4Proto::None => crate::tunnel::next::PROTO_HOST_INTERNAL,
        }
    }
}

/// Where each header starts in a built frame (buffer offsets; `len` excludes the FCS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Offset of the innermost Ethernet header (0 unless the frame is tunnelled).
    pub eth_offset: usize,
    /// Offset of the 802.1Q TPID.
    pub vlan_offset: Option<usize>,
    pub ip_offset: usize,
    pub ipv6: bool,
    pub l4_offset: usize,
    pub l4: L4Proto,
    pub payload_offset: usize,
    pub len: usize,
    /// Bytes at the end of the buffer past the flow's own frame: the FCS slots of the inner
    /// Ethernet frames it is in (0 unless tunnelled; `StackSpec::build`). Its IP and L4
    /// lengths and its L4 checksum stop that much before `len`.
    pub inner_fcs: usize,
    /// Offset of the ARP header when the frame is ARP (no IP, no L4): `ip_offset` and
    /// `l4_offset` then hold the ARP header's start and end, `l4` means nothing, and fields are
    /// located in the ARP header (`Field::locate`).
    pub arp_offset: Option<usize>,
    /// The frame is Ethernet (and VLAN tags) and a payload, no IP: `ip_offset` and `l4_offset`
    /// are the payload's start and `l4` is `None`.
    pub ethernet_only: bool,
}

/// A plain frame — Ethernet, an optional 802.1Q tag, IP, one L4 header and a payload — in the
/// fields people set. It is only a way to write a `StackSpec`: the stack is the one frame model
/// and `StackSpec::build` the one builder, so a plain frame and a tunnelled one cannot drift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameSpec {
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    pub vlan: Option<VlanTag>,
    pub ip: IpSpec,
    pub l4: L4Spec,
    pub payload: Payload,
}

impl FrameSpec {
    /// The frame as its header stack, outermost first.
    pub fn stack(&self) -> StackSpec {
        let mut headers = vec![HeaderSpec::Ethernet {
            src: self.src_mac,
            dst: self.dst_mac,
        }];
        if let Some(v) = &self.vlan {
            headers.push(HeaderSpec::Vlan {
                tpid: VlanTpid::Dot1Q,
                id: v.id,
                pcp: v.pcp,
            });
        }
        headers.push(HeaderSpec::Ip(self.ip.clone()));
        headers.push(match self.l4 {
            L4Spec::Udp { src_port, dst_port } => HeaderSpec::Udp {
                src_port,
                dst_port: Some(dst_port),
                zero_checksum: false,
            },
            L4Spec::Tcp {
                src_port,
                dst_port,
                seq,
                ack,
                flags,
                window,
            } => HeaderSpec::Tcp {
                src_port,
                dst_port,
                seq,
                ack,
                flags,
                window,
            },
            L4Spec::IcmpEcho { id, seq } => HeaderSpec::IcmpEcho { id, seq },
        });
        StackSpec {
            headers,
            payload: self.payload.clone(),
        }
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
