//! The `vlan` header: one 802.1Q tag, its id and priority; CFI and TPID as linerate writes them.

use linerate_stream::StreamSpec;
use linerate_wire::Field;

use super::Cx;
use super::pattern::{FixedRow, Kind, Pat, Target};
use crate::model::*;

const ID: Target = Target {
    kind: Kind::Int(4095),
    field: Field::VlanId,
    set: |s, v| s.vlan = Some(v as u16),
};

const FIXED: [FixedRow<FlowVlan>; 2] = [
    ("cfi", |v| &v.cfi, Kind::Int(1), 0, "CFI 0"),
    (
        "tpid",
        |v| &v.tpid,
        Kind::Int(0xffff),
        0x8100,
        "TPID 0x8100",
    ),
];

impl Cx {
    pub(super) fn vlan(
        &mut self,
        at: &str,
        v: Option<&FlowVlan>,
        spec: &mut StreamSpec,
    ) -> Option<()> {
        let v = v.cloned().unwrap_or_default();
        self.rest(at, &v.rest);
        let id = format!("{at}.id");
        if let Some(pat) = self.pattern(&id, &v.id, ID.kind) {
            // A tag's id defaults to 0 in the schema.
            let pat = if pat == Pat::Unset {
                Pat::Value(0)
            } else {
                pat
            };
            self.apply(&id, pat, &ID, spec);
        }
        let priority = format!("{at}.priority");
        match self.pattern(&priority, &v.priority, Kind::Int(7)) {
            Some(Pat::Value(pcp)) => spec.vlan_pcp = pcp as u8,
            Some(p) if p.moves() => self.refuse(
                priority,
                "the VLAN priority takes one value (patterns are not supported)",
            ),
            _ => {}
        }
        self.fixed_rows(at, &v, &FIXED);
        Some(())
    }
}
