//! Frame layouts, the one frame builder (`StackSpec::build`, a `FrameSpec` being a plain frame's
//! stack), checksums (full and incremental, RFC 1624) and field patches. Templates are built
//! once; the hot path only applies `Patch`es in place. No I/O here.
#![forbid(unsafe_code)]

pub mod checksum;
mod error;
mod field;
pub mod header;
mod mac;
mod modifier;
pub mod quantity;
pub mod signature;
mod spec;
pub mod stack;
mod stack_emit;
mod text;
pub mod tunnel;
pub mod units;

pub use error::WireError;
pub use etherparse;
pub use field::{Field, FieldLoc, FieldValue, parse_value};
pub use mac::{Mac, MacAddr, format_mac, parse_mac};
pub use modifier::{Modifier, Patch, Rng, VaryMode, pick};
pub use spec::{FrameSpec, IpSpec, L4Proto, L4Spec, Layout, Payload, TcpFlags, VlanTag};
pub use stack::{
    ChecksumSpan, GreSpec, HeaderSpec, Layer, LayerKind, StackFrame, StackSpec, VlanTpid,
};
pub use units::{LinkSpeed, MAX_FRAME_SIZE};

#[cfg(test)]
mod testutil;
