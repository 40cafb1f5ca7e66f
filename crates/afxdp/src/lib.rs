//! Linux AF_XDP transmit queues on raw `libc`: UMEM, FILL/COMPLETION/TX rings, the bind ladder
//! (zero-copy → copy, EBUSY retried) and the need_wakeup kick, behind `linerate_port`'s traits.
//! It holds no XDP programs (that is `linerate-xdp`) and no pacing (that is the engine).
//! On systems other than Linux the crate is empty.
#![cfg(target_os = "linux")]

mod error;
mod iface;
mod port;
mod queue;
mod ring;
mod socket;
mod sys;
mod umem;

pub use error::AfXdpError;
pub use port::{AttachMode, XdpMode, XskOptions, XskPort};
pub use queue::XskQueue;

/// The kernel has AF_XDP sockets: one opens (and is closed at once), or is refused for want of
/// privilege rather than for want of the address family.
pub fn available() -> bool {
    match sys::xdp_socket() {
        Ok(_) => true,
        Err(e) => e.raw_os_error() != Some(libc::EAFNOSUPPORT),
    }
}
