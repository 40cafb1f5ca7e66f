//! The `arp` header (RFC 826 for IPv4 over Ethernet): the operation, request (1) or reply (2),
//! and the four addresses as patterns; hardware and protocol types and lengths as Ethernet and
//! IPv4 have them. The flow's frame ends with it (padding to the flow's size follows).
//! Addresses left out take the stream's defaults, as `ipv4.src` does (the sender's are the
//! frame's source MAC and the port's address), not the schema's zeros.

use std::net::Ipv4Addr;

use linerate_stream::{ArpOp, Proto, StreamSpec};
use linerate_wire::Field;

use super::Cx;
use super::pattern::{FixedRow, Kind, Pat, Row, Target, mac};
use crate::model::*;

const FIELDS: [Row<FlowArp>; 4] = [
    (
        "sender_hardware_addr",
        |a| &a.sender_hardware_addr,
        Target {
            kind: Kind::Mac,
            field: Field::ArpSenderMac,
            set: |s, v| s.arp_sender_mac = Some(mac(v)),
        },
    ),
    (
        "sender_protocol_addr",
        |a| &a.sender_protocol_addr,
        Target {
            kind: Kind::Ipv4,
            field: Field::ArpSenderIp,
            set: |s, v| s.arp_sender_ip = Some(Ipv4Addr::from(v as u32)),
        },
    ),
    (
        "target_hardware_addr",
        |a| &a.target_hardware_addr,
        Target {
            kind: Kind::Mac,
            field: Field::ArpTargetMac,
            set: |s, v| s.arp_target_mac = Some(mac(v)),
        },
    ),
    (
        "target_protocol_addr",
        |a| &a.target_protocol_addr,
        Target {
            kind: Kind::Ipv4,
            field: Field::ArpTargetIp,
            set: |s, v| s.arp_target_ip = Some(Ipv4Addr::from(v as u32)),
        },
    ),
];

const FIXED: [FixedRow<FlowArp>; 4] = [
    (
        "hardware_type",
        |a| &a.hardware_type,
        Kind::Int(0xffff),
        1,
        "hardware type 1 (Ethernet)",
    ),
    (
        "protocol_type",
        |a| &a.protocol_type,
        Kind::Int(0xffff),
        0x0800,
        "protocol type 0x0800 (IPv4)",
    ),
    (
        "hardware_length",
        |a| &a.hardware_length,
        Kind::Int(0xff),
        6,
        "hardware length 6",
    ),
    (
        "protocol_length",
        |a| &a.protocol_length,
        Kind::Int(0xff),
        4,
        "protocol length 4",
    ),
];

impl Cx {
    pub(super) fn arp(
        &mut self,
        at: &str,
        a: Option<&FlowArp>,
        spec: &mut StreamSpec,
    ) -> Option<()> {
        let a = a.cloned().unwrap_or_default();
        self.rest(at, &a.rest);
        spec.proto = Proto::Arp;
        self.fixed_rows(at, &a, &FIXED);
        let op = format!("{at}.operation");
        match self.pattern(&op, &a.operation, Kind::Int(0xffff)) {
            Some(Pat::Unset | Pat::Value(1)) | None => {}
            Some(Pat::Value(2)) => spec.arp_op = ArpOp::Reply,
            Some(_) => self.refuse(
                op,
                "one operation, request (1) or reply (2); other values and patterns are not supported",
            ),
        }
        self.rows(at, &a, &FIELDS, spec);
        Some(())
    }
}

#[cfg(test)]
#[path = "arp_tests.rs"]
mod tests;
