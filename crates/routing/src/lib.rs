//! Devices' control planes. A device that speaks BGP gets a network namespace of its own with a
//! macvlan of each of its ports (the device's MAC and addresses) and one FRR `bgpd` inside,
//! started without zebra: its sessions and updates go out through the port as the device's
//! frames, and the port's XDP programs pass it the frames addressed to its MAC
//! (`bpf/hosts.h`, `stack_macs`) while test frames stay on the fast path. linerate writes the
//! daemon's configuration from the [`Device`] and reads its state back from the daemon's own
//! JSON (`vtysh … json`): sessions, counters and the prefixes it learned.
//!
//! Why FRR and not a home-made speaker: BGP's corner cases (capabilities, MP-BGP, MD5, timers,
//! route refresh) are what a device under test exercises, and a real daemon has them right.
//! docs/routing.md says what is mapped and why FRR rather than BIRD or GoBGP.
#![forbid(unsafe_code)]

mod error;
pub mod frr;
#[cfg(target_os = "linux")]
mod linux;
mod spec;

pub use error::RoutingError;
#[cfg(target_os = "linux")]
pub use linux::{Routers, bgpd_path};
pub use spec::*;
