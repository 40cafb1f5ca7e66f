//! The `vxlan` header (RFC 7348): its VNI; flags and reserved bits as the RFC writes them.

use linerate_stream::OuterHeader;

use super::Cx;
use super::pattern::{FixedRow, Kind};
use crate::model::*;

const FIXED: [FixedRow<FlowVxlan>; 3] = [
    (
        "flags",
        |v| &v.flags,
        Kind::Int(0xff),
        0x08,
        "flags 0x08 (I: the VNI is valid)",
    ),
    ("reserved0", |v| &v.reserved0, Kind::Int(0xff_ffff), 0, "0"),
    ("reserved1", |v| &v.reserved1, Kind::Int(0xff), 0, "0"),
];

impl Cx {
    pub(super) fn vxlan(&mut self, at: &str, v: Option<&FlowVxlan>) -> Option<OuterHeader> {
        let v = v.cloned().unwrap_or_default();
        self.rest(at, &v.rest);
        self.fixed_rows(at, &v, &FIXED);
        let vni = self.one(&format!("{at}.vni"), &v.vni, Kind::Int(0xff_ffff));
        Some(OuterHeader::Vxlan {
            vni: vni.unwrap_or(0) as u32,
        })
    }
}
