//! Devices' control planes. A device that speaks BGP, IS-IS or OSPF gets a network namespace
//! of its own with a macvlan of each of its ports (the device's MAC and addresses) and FRR's
//! daemons inside: `bgpd` without zebra for BGP; `zebra`, `staticd` and `isisd` for IS-IS,
//! `ospfd` and `ospf6d` beside them for OSPFv2 and OSPFv3; an LLDP agent is such a device with
//! lldpd ([`lldp`]). Their sessions and updates go out through the port as the device's frames,
//! and the port's XDP programs pass it the frames addressed to its MAC and to its protocols'
//! groups (`bpf/hosts.h`, `stack_macs`) while test frames stay on the fast path. linerate
//! writes the daemons' configurations from the [`Device`] and reads their state back from the
//! daemons' own answers (`vtysh … json`, `lldpcli … -f json`): sessions, counters and what they
//! learned; what OSPF sent and received, LSA by LSA, is counted on the wire ([`wire`]).
//!
//! Why FRR and not a home-made speaker: BGP's corner cases (capabilities, MP-BGP, MD5, timers,
//! route refresh) are what a device under test exercises, and a real daemon has them right.
//! docs/routing.md says what is mapped and why FRR rather than BIRD or GoBGP.
#![forbid(unsafe_code)]

mod error;
pub mod frr;
#[cfg(target_os = "linux")]
mod linux;
pub mod lldp;
mod spec;
pub mod wire;

pub use error::RoutingError;
#[cfg(target_os = "linux")]
pub use linux::{Routers, bgpd_path};
pub use spec::*;

/// The group MACs OSPFv2 sends to: AllSPFRouters (224.0.0.5) and AllDRouters (224.0.0.6),
/// RFC 2328 A.1, mapped to Ethernet as RFC 1112 §6.4 says.
pub const OSPF_GROUPS: [[u8; 6]; 2] = [
    [0x01, 0x00, 0x5e, 0x00, 0x00, 0x05],
    [0x01, 0x00, 0x5e, 0x00, 0x00, 0x06],
];

/// The group MACs OSPFv3 sends to: AllSPFRouters (ff02::5) and AllDRouters (ff02::6), RFC
/// 5340 A.1, mapped to Ethernet as RFC 2464 §7 says.
pub const OSPF6_GROUPS: [[u8; 6]; 2] = [
    [0x33, 0x33, 0x00, 0x00, 0x00, 0x05],
    [0x33, 0x33, 0x00, 0x00, 0x00, 0x06],
];

/// The group MACs IS-IS sends its PDUs to: AllISs (point-to-point hellos, ISO 10589 as FRR
/// sends them), AllL1ISs and AllL2ISs (ISO 10589 §8.4.8).
pub const ISIS_GROUPS: [[u8; 6]; 3] = [
    [0x09, 0x00, 0x2b, 0x00, 0x00, 0x05],
    [0x01, 0x80, 0xc2, 0x00, 0x00, 0x14],
    [0x01, 0x80, 0xc2, 0x00, 0x00, 0x15],
];
