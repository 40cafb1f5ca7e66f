//! The `ipv6` header: addresses and hop limit as patterns, and the fields linerate writes
//! itself.

use std::net::Ipv6Addr;

use linerate_stream::StreamSpec;
use linerate_wire::Field;

use super::Cx;
use super::pattern::{FixedRow, Kind, Row, Target};
use crate::model::*;

const FIELDS: [Row<FlowIpv6>; 3] = [
    (
        "src",
        |h| &h.src,
        Target {
            kind: Kind::Ipv6,
            field: Field::SrcIp,
            set: |s, v| s.src_ip = Some(Ipv6Addr::from(v).into()),
        },
    ),
    (
        "dst",
        |h| &h.dst,
        Target {
            kind: Kind::Ipv6,
            field: Field::DstIp,
            set: |s, v| s.dst_ip = Some(Ipv6Addr::from(v).into()),
        },
    ),
    (
        "hop_limit",
        |h| &h.hop_limit,
        Target {
            kind: Kind::Int(255),
            field: Field::Ttl,
            set: |s, v| s.ttl = v as u8,
        },
    ),
];

const FIXED: [FixedRow<FlowIpv6>; 3] = [
    ("version", |h| &h.version, Kind::Int(15), 6, "version 6"),
    (
        "traffic_class",
        |h| &h.traffic_class,
        Kind::Int(255),
        0,
        "traffic class 0",
    ),
    (
        "flow_label",
        |h| &h.flow_label,
        Kind::Int(0xfffff),
        0,
        "flow label 0",
    ),
];

impl Cx {
    pub(super) fn ipv6(
        &mut self,
        at: &str,
        ip: Option<&FlowIpv6>,
        spec: &mut StreamSpec,
    ) -> Option<()> {
        let ip = ip.cloned().unwrap_or_default();
        self.rest(at, &ip.rest);
        spec.ipv6 = true;
        self.rows(at, &ip, &FIELDS, spec);
        self.fixed_rows(at, &ip, &FIXED);
        for (name, pattern) in [
            ("payload_length", &ip.payload_length),
            ("next_header", &ip.next_header),
        ] {
            self.auto(
                &format!("{at}.{name}"),
                pattern,
                Kind::Int(0xffff),
                "linerate writes it from the frame (auto)",
            );
        }
        Some(())
    }
}
