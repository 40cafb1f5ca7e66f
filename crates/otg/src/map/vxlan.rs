//! The `vxlan` header (RFC 7348): its VNI, which may vary on the innermost tunnel; flags and
//! reserved bits as the RFC writes them.

use linerate_stream::{OuterHeader, StreamSpec, VNI_MASK, VNI_SHIFT, Vary};
use linerate_wire::{FieldValue, VaryMode};

use super::Cx;
use super::pattern::{FixedRow, Kind, Pat};
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
    /// The header, and its VNI's pattern when it moves (`may_move`: this is the tunnel the
    /// flow's own headers are inside; the plan varies its VNI, [`Cx::vary_vni`]).
    pub(super) fn vxlan(
        &mut self,
        at: &str,
        v: Option<&FlowVxlan>,
        may_move: bool,
    ) -> Option<(OuterHeader, Option<Pat>)> {
        let v = v.cloned().unwrap_or_default();
        self.rest(at, &v.rest);
        self.fixed_rows(at, &v, &FIXED);
        let path = format!("{at}.vni");
        let (vni, moving) = match self.pattern(&path, &v.vni, Kind::Int(0xff_ffff)) {
            Some(Pat::Value(v)) => (v, None),
            Some(Pat::Vary { mode, lo, hi, step }) if may_move => {
                let first = if mode == VaryMode::Dec { hi } else { lo };
                (first, Some(Pat::Vary { mode, lo, hi, step }))
            }
            Some(Pat::List(values)) if may_move => (values[0], Some(Pat::List(values))),
            Some(Pat::Unset) => (0, None),
            Some(_) => {
                self.refuse(
                    path,
                    "only the VNI of the innermost VXLAN header may vary: outer headers take one value",
                );
                (0, None)
            }
            None => (0, None),
        };
        Some((OuterHeader::Vxlan { vni: vni as u32 }, moving))
    }

    /// Adds the VNI's variation to the stream, once its encap is known: the VNI is the upper
    /// 24 bits of a 32-bit word of the frame (`Encap::vni_field`), so its values move up too.
    pub(super) fn vary_vni(&mut self, path: &str, pat: Pat, spec: &mut StreamSpec) {
        let Some(field) = spec.encap.as_ref().and_then(|e| e.vni_field()) else {
            self.refuse(path, "the VNI's place in the frame is unknown");
            return;
        };
        let up = |v: u128| FieldValue::Int((v as u64) << VNI_SHIFT);
        let vary = match pat {
            Pat::Vary { mode, lo, hi, step } => Vary {
                field,
                mode,
                start: up(lo),
                end: up(hi),
                step: (step as u64) << VNI_SHIFT,
                mask: Some(VNI_MASK),
                list: Vec::new(),
            },
            Pat::List(values) => {
                Vary::list(field, values.into_iter().map(up).collect(), Some(VNI_MASK))
            }
            Pat::Unset | Pat::Value(_) => return,
        };
        match vary.resolve(false) {
            Ok(_) => spec.vary.push(vary),
            Err(e) => self.refuse(path, e.to_string()),
        }
    }
}
