//! The `icmp` header: an echo request whose identifier is one value; the rest as linerate
//! writes it.

use linerate_stream::{Proto, StreamSpec};

use super::Cx;
use super::pattern::{FixedRow, Kind, Pat};
use crate::model::*;

const FIXED: [FixedRow<FlowIcmpEcho>; 3] = [
    (
        "type",
        |e| &e.kind,
        Kind::Int(255),
        8,
        "type 8 (echo request)",
    ),
    ("code", |e| &e.code, Kind::Int(255), 0, "code 0"),
    (
        "sequence_number",
        |e| &e.sequence_number,
        Kind::Int(0xffff),
        0,
        "sequence number 0",
    ),
];

impl Cx {
    /// `p` is the header's path (`….packet[i]`); None stops reading the packet.
    pub(super) fn icmp(
        &mut self,
        p: &str,
        ic: Option<&FlowIcmp>,
        spec: &mut StreamSpec,
    ) -> Option<()> {
        if spec.ipv6 {
            self.refuse(
                format!("{p}.choice"),
                "ICMP after IPv6 is not supported (icmpv6 neither)",
            );
            return None;
        }
        let at = format!("{p}.icmp");
        let ic = ic.cloned().unwrap_or_default();
        self.rest(&at, &ic.rest);
        spec.proto = Proto::Icmp;
        if let Some(c) = ic.choice.as_deref()
            && c != "echo"
        {
            self.refuse(
                format!("{at}.choice"),
                format!("ICMP '{c}' is not supported: echo only"),
            );
        }
        let e = ic.echo.clone().unwrap_or_default();
        let ep = format!("{at}.echo");
        self.rest(&ep, &e.rest);
        self.fixed_rows(&ep, &e, &FIXED);
        self.checksum(&format!("{ep}.checksum"), &e.checksum);
        let id = format!("{ep}.identifier");
        match self.pattern(&id, &e.identifier, Kind::Int(0xffff)) {
            Some(Pat::Value(v)) => spec.src_port = v as u16,
            Some(Pat::Vary { .. }) => self.refuse(
                id,
                "the ICMP identifier takes one value (patterns are not supported)",
            ),
            _ => spec.src_port = 0,
        }
        Some(())
    }
}
