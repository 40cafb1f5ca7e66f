//! The `udp` header: its ports as patterns (TCP's are the same two fields), its length and
//! checksum as linerate writes them.

use linerate_stream::{Proto, StreamSpec};
use linerate_wire::Field;

use super::Cx;
use super::pattern::{Kind, Row, Target};
use crate::model::*;

pub(super) const SRC_PORT: Target = Target {
    kind: Kind::Int(0xffff),
    field: Field::SrcPort,
    set: |s, v| s.src_port = v as u16,
};

pub(super) const DST_PORT: Target = Target {
    kind: Kind::Int(0xffff),
    field: Field::DstPort,
    set: |s, v| s.dst_port = v as u16,
};

const FIELDS: [Row<FlowUdp>; 2] = [
    ("src_port", |h| &h.src_port, SRC_PORT),
    ("dst_port", |h| &h.dst_port, DST_PORT),
];

impl Cx {
    pub(super) fn udp(
        &mut self,
        at: &str,
        u: Option<&FlowUdp>,
        spec: &mut StreamSpec,
    ) -> Option<()> {
        let u = u.cloned().unwrap_or_default();
        spec.proto = Proto::Udp;
        self.auto(
            &format!("{at}.length"),
            &u.length,
            Kind::Int(0xffff),
            "linerate writes the length of the datagram (auto)",
        );
        self.checksum(&format!("{at}.checksum"), &u.checksum);
        self.rest(at, &u.rest);
        self.rows(at, &u, &FIELDS, spec);
        Some(())
    }
}
