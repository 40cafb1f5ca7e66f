//! AF_PACKET's own calls at the syscall boundary; the wrappers themselves (and every `unsafe`
//! of that kind) are linerate-sys's, shared with AF_XDP.

use std::io;
use std::os::fd::OwnedFd;

pub(crate) use linerate_sys::{Kick, KickFailed, Mmap, kick, page_size, set_opt};

/// A transmit-only packet socket: protocol 0 registers no receive hook, so the kernel never
/// queues the interface's traffic to it.
pub(crate) fn packet_socket() -> io::Result<OwnedFd> {
    linerate_sys::raw_socket(libc::AF_PACKET, 0)
}

/// Binds a packet socket to one interface, for no protocol (transmit only).
pub(crate) fn bind_packet(fd: &OwnedFd, ifindex: u32) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain integers; all-zero is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = 0;
    addr.sll_ifindex = ifindex as i32;
    linerate_sys::bind(fd, &addr)
}
