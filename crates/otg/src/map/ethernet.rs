//! The `ethernet` header: its addresses, and the EtherType linerate writes itself.

use linerate_stream::StreamSpec;
use linerate_wire::Field;

use super::Cx;
use super::pattern::{Kind, Row, Target, mac};
use crate::model::*;

const FIELDS: [Row<FlowEthernet>; 2] = [
    (
        "dst",
        |e| &e.dst,
        Target {
            kind: Kind::Mac,
            field: Field::DstMac,
            set: |s, v| s.dst_mac = Some(mac(v)),
        },
    ),
    (
        "src",
        |e| &e.src,
        Target {
            kind: Kind::Mac,
            field: Field::SrcMac,
            set: |s, v| s.src_mac = Some(mac(v)),
        },
    ),
];

impl Cx {
    /// `last`: no header follows (the payload does), so the EtherType is 0xFFFF, which the
    /// config may also give.
    pub(super) fn ethernet(
        &mut self,
        at: &str,
        e: Option<&FlowEthernet>,
        spec: &mut StreamSpec,
        last: bool,
    ) -> Option<()> {
        let e = e.cloned().unwrap_or_default();
        self.rest(at, &e.rest);
        self.rows(at, &e, &FIELDS, spec);
        // The EtherType follows the next header; it is not a choice of its own.
        let path = format!("{at}.ether_type");
        if last {
            self.fixed(
                &path,
                &e.ether_type,
                Kind::Int(0xffff),
                0xffff,
                "EtherType 0xFFFF before a payload",
            );
        } else {
            self.auto(
                &path,
                &e.ether_type,
                Kind::Int(0xffff),
                "linerate writes the EtherType of the next header (auto)",
            );
        }
        Some(())
    }
}
