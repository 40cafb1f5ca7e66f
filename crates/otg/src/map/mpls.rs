//! The `mpls` header: one label stack entry, its label, traffic class and TTL; the bottom of
//! stack bit as the stack's order decides it.

use linerate_stream::OuterHeader;

use super::Cx;
use super::pattern::Kind;
use crate::model::*;

impl Cx {
    /// `more`: another label follows this one (its bottom-of-stack bit is then 0).
    pub(super) fn mpls(
        &mut self,
        at: &str,
        m: Option<&FlowMpls>,
        more: bool,
    ) -> Option<OuterHeader> {
        let m = m.cloned().unwrap_or_default();
        self.rest(at, &m.rest);
        let label = self.one(&format!("{at}.label"), &m.label, Kind::Int(0xf_ffff));
        let tc = self.one(
            &format!("{at}.traffic_class"),
            &m.traffic_class,
            Kind::Int(7),
        );
        let ttl = self.one(
            &format!("{at}.time_to_live"),
            &m.time_to_live,
            Kind::Int(255),
        );
        self.fixed(
            &format!("{at}.bottom_of_stack"),
            &m.bottom_of_stack,
            Kind::Int(1),
            u128::from(!more),
            "the bottom of stack bit on the last label only",
        );
        Some(OuterHeader::Mpls {
            label: label.unwrap_or(16) as u32,
            tc: tc.unwrap_or(0) as u8,
            ttl: ttl.unwrap_or(64) as u8,
        })
    }
}
