//! Linux AF_PACKET transmit queues on raw `libc`: one socket per worker with a TPACKET TX ring
//! mapped into the process, `PACKET_QDISC_BYPASS`, a `virtio_net_hdr` before each frame on
//! virtual Ethernet devices so the kernel copies the frame whole rather than lending it a ring
//! page (`ring`), one `sendto` kick per batch, completions read from the ring frames' status words.
//! It reaches every interface (VLANs, bonds, dummies) with CAP_NET_RAW alone; it holds no pacing
//! (that is the engine). Beside them, the receive socket of `linerate serve`'s port captures, and
//! a TPACKET_V2 receive ring (`RxRing`) the stateful ends read their frames from. On other
//! systems the crate is empty.
#![cfg(target_os = "linux")]

mod capture;
mod error;
mod port;
mod queue;
mod ring;
mod rx_ring;
mod sys;

pub use capture::{CAPTURE_WAKE, CaptureSocket};
pub use error::AfPacketError;
pub use port::{AfPacketOptions, AfPacketPort, TpacketVersion};
pub use queue::AfPacketQueue;
pub use rx_ring::{RxFrame, RxRing};
