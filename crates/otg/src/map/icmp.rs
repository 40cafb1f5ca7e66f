//! The `icmp` and `icmpv6` headers: an echo request whose identifier is one value; the rest
//! as linerate writes it.

use linerate_stream::{Proto, StreamSpec};

use super::Cx;
use super::pattern::{FixedRow, Kind, Pat};
use crate::model::*;

const TYPE_V4: FixedRow<FlowIcmpEcho> = (
    "type",
    |e| &e.kind,
    Kind::Int(255),
    8,
    "type 8 (echo request)",
);

const TYPE_V6: FixedRow<FlowIcmpEcho> = (
    "type",
    |e| &e.kind,
    Kind::Int(255),
    128,
    "type 128 (echo request)",
);

const FIXED: [FixedRow<FlowIcmpEcho>; 2] = [
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
    /// `p` is the header's path (`….packet[i]`), `v6` whether it is `icmpv6`; None stops
    /// reading the packet.
    pub(super) fn icmp(
        &mut self,
        p: &str,
        ic: Option<&FlowIcmp>,
        spec: &mut StreamSpec,
        v6: bool,
    ) -> Option<()> {
        if spec.ipv6 != v6 {
            let why = if v6 {
                "icmpv6 follows ipv6: after ipv4 comes icmp"
            } else {
                "icmp follows ipv4: after ipv6 comes icmpv6"
            };
            self.refuse(format!("{p}.choice"), why);
            return None;
        }
        let at = format!("{p}.{}", if v6 { "icmpv6" } else { "icmp" });
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
        self.fixed_rows(&ep, &e, &[if v6 { TYPE_V6 } else { TYPE_V4 }]);
        self.checksum(&format!("{ep}.checksum"), &e.checksum);
        let id = format!("{ep}.identifier");
        match self.pattern(&id, &e.identifier, Kind::Int(0xffff)) {
            Some(Pat::Value(v)) => spec.src_port = v as u16,
            Some(p) if p.moves() => self.refuse(
                id,
                "the ICMP identifier takes one value (patterns are not supported)",
            ),
            _ => spec.src_port = 0,
        }
        Some(())
    }
}
