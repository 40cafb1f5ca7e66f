//! The `ipv4` header: addresses, identification and TTL as patterns, the DSCP as one value,
//! and the fields linerate writes itself.

use std::net::Ipv4Addr;

use linerate_stream::StreamSpec;
use linerate_wire::Field;

use super::Cx;
use super::pattern::{FixedRow, Kind, Pat, Row, Target};
use crate::model::*;

const FIELDS: [Row<FlowIpv4>; 4] = [
    (
        "src",
        |h| &h.src,
        Target {
            kind: Kind::Ipv4,
            field: Field::SrcIp,
            set: |s, v| s.src_ip = Some(Ipv4Addr::from(v as u32).into()),
        },
    ),
    (
        "dst",
        |h| &h.dst,
        Target {
            kind: Kind::Ipv4,
            field: Field::DstIp,
            set: |s, v| s.dst_ip = Some(Ipv4Addr::from(v as u32).into()),
        },
    ),
    (
        "identification",
        |h| &h.identification,
        Target {
            kind: Kind::Int(0xffff),
            field: Field::IpId,
            set: |s, v| s.ip_id = v as u16,
        },
    ),
    (
        "time_to_live",
        |h| &h.time_to_live,
        Target {
            kind: Kind::Int(255),
            field: Field::Ttl,
            set: |s, v| s.ttl = v as u8,
        },
    ),
];

/// Fields linerate writes with one value: accepted only at that value.
const FIXED: [FixedRow<FlowIpv4>; 6] = [
    ("version", |h| &h.version, Kind::Int(15), 4, "version 4"),
    (
        "header_length",
        |h| &h.header_length,
        Kind::Int(15),
        5,
        "header length 5 (no options)",
    ),
    ("reserved", |h| &h.reserved, Kind::Int(1), 0, "0"),
    ("dont_fragment", |h| &h.dont_fragment, Kind::Int(1), 0, "0"),
    (
        "more_fragments",
        |h| &h.more_fragments,
        Kind::Int(1),
        0,
        "0",
    ),
    (
        "fragment_offset",
        |h| &h.fragment_offset,
        Kind::Int(8191),
        0,
        "0",
    ),
];

impl Cx {
    pub(super) fn ipv4(
        &mut self,
        at: &str,
        ip: Option<&FlowIpv4>,
        spec: &mut StreamSpec,
    ) -> Option<()> {
        let ip = ip.cloned().unwrap_or_default();
        self.rest(at, &ip.rest);
        spec.ipv6 = false;
        self.rows(at, &ip, &FIELDS, spec);
        self.fixed_rows(at, &ip, &FIXED);
        self.auto(
            &format!("{at}.total_length"),
            &ip.total_length,
            Kind::Int(0xffff),
            "linerate writes the length of the frame (auto)",
        );
        self.auto(
            &format!("{at}.protocol"),
            &ip.protocol,
            Kind::Int(255),
            "linerate writes the protocol of the next header (auto)",
        );
        self.checksum(&format!("{at}.header_checksum"), &ip.header_checksum);
        if let Some(pr) = &ip.priority {
            self.ipv4_priority(&format!("{at}.priority"), pr, spec);
        }
        Some(())
    }

    /// The DSCP, as `dscp.phb` or as the `raw` byte with ECN 0.
    fn ipv4_priority(&mut self, pp: &str, pr: &FlowIpv4Priority, spec: &mut StreamSpec) {
        self.rest(pp, &pr.rest);
        match pr.choice.as_deref() {
            None | Some("dscp") => {
                let Some(d) = &pr.dscp else {
                    return;
                };
                self.rest(&format!("{pp}.dscp"), &d.rest);
                let phb = format!("{pp}.dscp.phb");
                match self.pattern(&phb, &d.phb, Kind::Int(63)) {
                    Some(Pat::Value(v)) => spec.dscp = v as u8,
                    Some(p) if p.moves() => {
                        self.refuse(phb, "the DSCP takes one value (patterns are not supported)")
                    }
                    _ => {}
                }
                self.fixed(&format!("{pp}.dscp.ecn"), &d.ecn, Kind::Int(3), 0, "ECN 0");
            }
            Some("raw") => match self.pattern(&format!("{pp}.raw"), &pr.raw, Kind::Int(255)) {
                Some(Pat::Value(v)) if v & 3 == 0 => spec.dscp = (v >> 2) as u8,
                Some(Pat::Unset) | None => {}
                _ => self.refuse(
                    format!("{pp}.raw"),
                    "one value with ECN bits 0 (linerate writes the DSCP and ECN 0)",
                ),
            },
            Some(other) => self.refuse(
                format!("{pp}.choice"),
                format!("priority '{other}' is not supported: use dscp or raw"),
            ),
        }
    }
}
