//! The `gtpv1` header (GTP-U, 3GPP TS 29.281): a G-PDU with its TEID and, when `s_flag` is 1,
//! a sequence number; version, flags, type and length as a G-PDU carries them.

use linerate_stream::OuterHeader;

use super::Cx;
use super::pattern::{FixedRow, Kind};
use crate::model::*;

const FIXED: [FixedRow<FlowGtpv1>; 7] = [
    ("version", |g| &g.version, Kind::Int(7), 1, "version 1"),
    (
        "protocol_type",
        |g| &g.protocol_type,
        Kind::Int(1),
        1,
        "protocol type 1 (GTP)",
    ),
    ("reserved", |g| &g.reserved, Kind::Int(1), 0, "0"),
    (
        "e_flag",
        |g| &g.e_flag,
        Kind::Int(1),
        0,
        "no extension headers",
    ),
    (
        "pn_flag",
        |g| &g.pn_flag,
        Kind::Int(1),
        0,
        "no N-PDU number",
    ),
    ("n_pdu_number", |g| &g.n_pdu_number, Kind::Int(0xff), 0, "0"),
    (
        "next_extension_header_type",
        |g| &g.next_extension_header_type,
        Kind::Int(0xff),
        0,
        "0",
    ),
];

impl Cx {
    pub(super) fn gtpv1(&mut self, at: &str, g: Option<&FlowGtpv1>) -> Option<OuterHeader> {
        let g = g.cloned().unwrap_or_default();
        self.rest(at, &g.rest);
        self.fixed_rows(at, &g, &FIXED);
        // The schema's default type is 0; a tunnel carries user packets, G-PDUs (255).
        self.fixed(
            &format!("{at}.message_type"),
            &g.message_type,
            Kind::Int(0xff),
            0xff,
            "a G-PDU",
        );
        self.auto(
            &format!("{at}.message_length"),
            &g.message_length,
            Kind::Int(0xffff),
            "linerate writes the length of the message (auto)",
        );
        if g.extension_headers.as_ref().is_some_and(|e| !e.is_empty()) {
            self.refuse(
                format!("{at}.extension_headers"),
                "extension headers are not supported",
            );
        }
        let teid = self.one(&format!("{at}.teid"), &g.teid, Kind::Int(0xffff_ffff));
        let s = self.one(&format!("{at}.s_flag"), &g.s_flag, Kind::Int(1));
        let seq = self.one(
            &format!("{at}.squence_number"),
            &g.squence_number,
            Kind::Int(0xffff),
        );
        if s != Some(1) && seq.is_some() {
            self.refuse(
                format!("{at}.squence_number"),
                "a sequence number is sent with s_flag 1",
            );
        }
        Some(OuterHeader::GtpV1U {
            teid: teid.unwrap_or(0) as u32,
            seq: (s == Some(1)).then(|| seq.unwrap_or(0) as u16),
        })
    }
}
