//! Link aggregation (IEEE 802.1AX) as linerate's own: the LACPDU codec ([`pdu`]), the LACP state
//! machines of a LAG's member ports as pure functions of time and received PDUs ([`machine`]),
//! and on Linux a thread per LAG that sends and receives its members' PDUs through AF_PACKET
//! sockets bound to the Slow Protocols EtherType ([`Lags`]). No bonding or team driver: the
//! kernels linerate runs on may have neither, and a test port's frames are linerate's anyway.
#![deny(unsafe_code)]

mod error;
pub mod machine;
pub mod pdu;
mod spec;

#[cfg(target_os = "linux")]
mod linux;

pub use error::LacpError;
#[cfg(target_os = "linux")]
pub use linux::Lags;
pub use machine::{MemberView, Mux, RxState};
pub use spec::*;
