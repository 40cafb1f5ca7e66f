//! ARP as a stream's frame (`proto = "arp"`): Ethernet, the stream's VLAN tag if any, and an
//! ARP request or reply for IPv4 (RFC 826), padded with the stream's payload to the size asked.
//!
//! The ARP addresses default to the stream's own: the sender's are the frame's source MAC and
//! `src-ip` (the port's on a lab), the target IP is `dst-ip`, and the target MAC is all zeros in
//! a request (RFC 826: the one being asked for) and the frame's destination in a reply. A
//! gratuitous ARP sets `arp-target-ip` to the sender's. `--vary` reaches every address by its
//! key's name (`arp-sender-ip`, `arp-target-ip`, `arp-sender-mac`, `arp-target-mac`); no
//! checksum covers them, so they patch plainly. A signature rides in the padding: the receive
//! side reads it from the frame's tail, whatever the headers before it.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use linerate_wire::{FrameSpec, HeaderSpec, IpSpec, Mac, StackSpec, VlanTpid, tunnel};

use crate::{StreamError, StreamSpec};

/// The ARP operation (RFC 826 `ar$op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ArpOp {
    #[default]
    Request,
    Reply,
}

impl ArpOp {
    pub fn code(self) -> u16 {
        match self {
            ArpOp::Request => tunnel::arp::OP_REQUEST,
            ArpOp::Reply => tunnel::arp::OP_REPLY,
        }
    }
}

impl FromStr for ArpOp {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "request" | "1" => Ok(ArpOp::Request),
            "reply" | "2" => Ok(ArpOp::Reply),
            _ => Err(format!(
                "ARP operation '{s}' is neither request (1) nor reply (2)"
            )),
        }
    }
}

impl fmt::Display for ArpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArpOp::Request => "request",
            ArpOp::Reply => "reply",
        })
    }
}

linerate_wire::serde_as_text!(ArpOp);

/// The ARP keys of a stream, as written.
pub(crate) struct ArpKeys {
    pub op: ArpOp,
    pub sender_mac: Option<Mac>,
    pub sender_ip: Option<Ipv4Addr>,
    pub target_mac: Option<Mac>,
    pub target_ip: Option<Ipv4Addr>,
}

impl ArpKeys {
    pub fn of(spec: &StreamSpec) -> Self {
        Self {
            op: spec.arp_op,
            sender_mac: spec.arp_sender_mac,
            sender_ip: spec.arp_sender_ip,
            target_mac: spec.arp_target_mac,
            target_ip: spec.arp_target_ip,
        }
    }

    /// Whether any key differs from its default: an `arp-…` key on a stream that is not ARP
    /// would be silently ignored.
    pub fn any_given(&self) -> bool {
        self.op != ArpOp::default()
            || self.sender_mac.is_some()
            || self.sender_ip.is_some()
            || self.target_mac.is_some()
            || self.target_ip.is_some()
    }

    /// The stack of an ARP stream whose Ethernet header, VLAN tag and IPv4 addresses `frame`
    /// holds (defaults filled in); its L4 is not used.
    pub fn stack(&self, stream: &str, frame: &FrameSpec) -> Result<StackSpec, StreamError> {
        let IpSpec::V4 { src, dst, .. } = frame.ip else {
            return Err(StreamError::Invalid {
                stream: stream.into(),
                why: "ARP resolves IPv4 addresses (IPv6 uses neighbour discovery): drop ipv6"
                    .into(),
            });
        };
        let target_mac = match self.op {
            ArpOp::Request => [0; 6],
            ArpOp::Reply => frame.dst_mac,
        };
        let mut headers = vec![HeaderSpec::Ethernet {
            src: frame.src_mac,
            dst: frame.dst_mac,
        }];
        if let Some(v) = &frame.vlan {
            headers.push(HeaderSpec::Vlan {
                tpid: VlanTpid::Dot1Q,
                id: v.id,
                pcp: v.pcp,
            });
        }
        headers.push(HeaderSpec::Arp {
            op: self.op.code(),
            sender_mac: self.sender_mac.map_or(frame.src_mac, Mac::octets),
            sender_ip: self.sender_ip.unwrap_or(src),
            target_mac: self.target_mac.map_or(target_mac, Mac::octets),
            target_ip: self.target_ip.unwrap_or(dst),
        });
        Ok(StackSpec {
            headers,
            payload: frame.payload.clone(),
        })
    }
}

#[cfg(test)]
#[path = "arp_tests.rs"]
mod tests;
