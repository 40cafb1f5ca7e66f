//! The `tcp` header: ports as patterns, flags as one value each, and the fields linerate
//! writes itself.

use linerate_stream::{Proto, StreamSpec};
use linerate_wire::TcpFlags;

use super::Cx;
use super::pattern::{FixedRow, Get, Kind, Pat, Row};
use super::udp::{DST_PORT, SRC_PORT};
use crate::model::*;

const FIELDS: [Row<FlowTcp>; 2] = [
    ("src_port", |h| &h.src_port, SRC_PORT),
    ("dst_port", |h| &h.dst_port, DST_PORT),
];

const FIXED: [FixedRow<FlowTcp>; 4] = [
    (
        "seq_num",
        |h| &h.seq_num,
        Kind::Int(u32::MAX as u128),
        1,
        "sequence number 1",
    ),
    (
        "ack_num",
        |h| &h.ack_num,
        Kind::Int(u32::MAX as u128),
        0,
        "acknowledgement number 0",
    ),
    (
        "data_offset",
        |h| &h.data_offset,
        Kind::Int(15),
        5,
        "data offset 5",
    ),
    (
        "window",
        |h| &h.window,
        Kind::Int(0xffff),
        65535,
        "window 65535",
    ),
];

/// The flag fields in the bit order of the header's flags byte (FIN is bit 0).
const FLAGS: [(&str, Get<FlowTcp>); 8] = [
    ("ctl_fin", |h| &h.ctl_fin),
    ("ctl_syn", |h| &h.ctl_syn),
    ("ctl_rst", |h| &h.ctl_rst),
    ("ctl_psh", |h| &h.ctl_psh),
    ("ctl_ack", |h| &h.ctl_ack),
    ("ctl_urg", |h| &h.ctl_urg),
    ("ecn_echo", |h| &h.ecn_echo),
    ("ecn_cwr", |h| &h.ecn_cwr),
];

impl Cx {
    pub(super) fn tcp(
        &mut self,
        at: &str,
        t: Option<&FlowTcp>,
        spec: &mut StreamSpec,
    ) -> Option<()> {
        let t = t.cloned().unwrap_or_default();
        spec.proto = Proto::Tcp;
        self.fixed_rows(at, &t, &FIXED);
        self.checksum(&format!("{at}.checksum"), &t.checksum);
        let mut bits = 0u8;
        for (bit, (name, pattern)) in FLAGS.iter().enumerate() {
            match self.pattern(&format!("{at}.{name}"), pattern(&t), Kind::Int(1)) {
                Some(Pat::Value(1)) => bits |= 1 << bit,
                Some(p) if p.moves() => self.refuse(
                    format!("{at}.{name}"),
                    "TCP flags take one value (patterns are not supported)",
                ),
                _ => {}
            }
        }
        self.fixed(&format!("{at}.ecn_ns"), &t.ecn_ns, Kind::Int(1), 0, "0");
        // The schema's flags are all 0 by default; linerate's template SYN is for its own CLI.
        spec.tcp_flags = TcpFlags::from_bits(bits);
        self.rest(at, &t.rest);
        self.rows(at, &t, &FIELDS, spec);
        Some(())
    }
}
