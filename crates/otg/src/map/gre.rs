//! The `gre` header (RFC 2784, as the OTG model has it: no key or sequence number): its
//! checksum bit; the protocol type follows the next header.

use linerate_stream::OuterHeader;
use linerate_wire::GreSpec;

use super::Cx;
use super::pattern::{FixedRow, Kind};
use crate::model::*;

const FIXED: [FixedRow<FlowGre>; 3] = [
    ("reserved0", |g| &g.reserved0, Kind::Int(0xfff), 0, "0"),
    ("version", |g| &g.version, Kind::Int(7), 0, "version 0"),
    ("reserved1", |g| &g.reserved1, Kind::Int(0xffff), 0, "0"),
];

impl Cx {
    pub(super) fn gre(&mut self, at: &str, g: Option<&FlowGre>) -> Option<OuterHeader> {
        let g = g.cloned().unwrap_or_default();
        self.rest(at, &g.rest);
        self.fixed_rows(at, &g, &FIXED);
        let present = self.one(
            &format!("{at}.checksum_present"),
            &g.checksum_present,
            Kind::Int(1),
        );
        self.checksum(&format!("{at}.checksum"), &g.checksum);
        self.auto(
            &format!("{at}.protocol"),
            &g.protocol,
            Kind::Int(0xffff),
            "linerate writes the protocol type of the next header (auto)",
        );
        Some(OuterHeader::Gre(GreSpec {
            checksum: present == Some(1),
            ..GreSpec::default()
        }))
    }
}
