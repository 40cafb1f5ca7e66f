//! AF_XDP's own calls at the syscall boundary; the wrappers themselves (and every `unsafe` of
//! that kind) are linerate-sys's, shared with AF_PACKET.

use std::io;
use std::os::fd::OwnedFd;

pub(crate) use linerate_sys::{Kick, KickFailed, Mmap, Plain, kick, page_size};

/// `XDP_MAX_TX_SKB_BUDGET` from `linux/if_xdp.h` (kernel ≥ 6.17): how many frames one copy-mode
/// kick may send (default 32). libc 0.2.191 does not define it yet.
pub(crate) const XDP_MAX_TX_SKB_BUDGET: libc::c_int = 9;

/// Opens an AF_XDP socket.
pub(crate) fn xdp_socket() -> io::Result<OwnedFd> {
    linerate_sys::raw_socket(libc::AF_XDP, 0)
}

/// `setsockopt(fd, SOL_XDP, name, value)`.
pub(crate) fn set_xdp_opt<T: Plain>(fd: &OwnedFd, name: libc::c_int, value: &T) -> io::Result<()> {
    linerate_sys::set_opt(fd, libc::SOL_XDP, name, value)
}

/// `getsockopt(fd, SOL_XDP, name)` into `value`; returns the length the kernel wrote.
pub(crate) fn get_xdp_opt<T: Plain>(
    fd: &OwnedFd,
    name: libc::c_int,
    value: &mut T,
) -> io::Result<usize> {
    linerate_sys::get_opt(fd, libc::SOL_XDP, name, value)
}

/// Binds an AF_XDP socket to one queue of one interface.
pub(crate) fn bind_xdp(fd: &OwnedFd, ifindex: u32, queue_id: u32, flags: u16) -> io::Result<()> {
    let addr = libc::sockaddr_xdp {
        sxdp_family: libc::AF_XDP as u16,
        sxdp_flags: flags,
        sxdp_ifindex: ifindex,
        sxdp_queue_id: queue_id,
        sxdp_shared_umem_fd: 0,
    };
    linerate_sys::bind(fd, &addr)
}
