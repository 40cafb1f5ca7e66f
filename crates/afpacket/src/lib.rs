//! Linux AF_PACKET transmit queues on raw `libc`: one socket per worker with a TPACKET TX ring
//! mapped into the process, `PACKET_QDISC_BYPASS`, one `sendto` kick per batch, completions read
//! from the ring frames' status words. It reaches every interface (VLANs, bonds, dummies) with
//! CAP_NET_RAW alone; it holds no pacing (that is the engine). On other systems the crate is empty.
#![cfg(target_os = "linux")]

mod error;
mod port;
mod queue;
mod ring;
mod sys;

pub use error::AfPacketError;
pub use port::{AfPacketOptions, AfPacketPort, TpacketVersion};
pub use queue::AfPacketQueue;
