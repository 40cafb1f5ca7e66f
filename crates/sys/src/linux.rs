use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

/// Values the kernel reads or fills byte by byte: plain C structs of integers, for which every
/// bit pattern is a valid value and whose size is the length the kernel is told.
///
/// # Safety
/// Implement only for `repr(C)` types made of integers (no references, bools, enums, padding
/// the kernel would leave uninitialised that Rust could not hold).
pub unsafe trait Plain: Copy {}
// SAFETY: integers accept every bit pattern.
unsafe impl Plain for u32 {}
// SAFETY: integers accept every bit pattern.
unsafe impl Plain for libc::c_int {}
// SAFETY: four structs of four u64 each; every bit pattern is valid.
unsafe impl Plain for libc::xdp_mmap_offsets {}
// SAFETY: six u64; every bit pattern is valid.
unsafe impl Plain for libc::xdp_statistics {}
// SAFETY: one u32.
unsafe impl Plain for libc::xdp_options {}
// SAFETY: two u64, four u32, no padding.
unsafe impl Plain for libc::xdp_umem_reg {}
// SAFETY: u16, u16, u32, u32, u32: integers, no padding.
unsafe impl Plain for libc::sockaddr_xdp {}
// SAFETY: integers and a byte array, no padding.
unsafe impl Plain for libc::sockaddr_ll {}
// SAFETY: four u32.
unsafe impl Plain for libc::tpacket_req {}
// SAFETY: an int, two u16 and eight bytes: integers, no padding.
unsafe impl Plain for libc::packet_mreq {}
// SAFETY: seven u32.
unsafe impl Plain for libc::tpacket_req3 {}
// SAFETY: two integers (time_t, suseconds_t), no padding on 64-bit targets or 32-bit ones.
unsafe impl Plain for libc::timeval {}
// SAFETY: two u32 counters, no padding.
unsafe impl Plain for libc::tpacket_stats {}

/// Opens a raw socket of `domain` (`AF_XDP`, `AF_PACKET`) with `protocol`, close-on-exec.
pub fn raw_socket(domain: libc::c_int, protocol: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket() takes no pointers.
    let fd = unsafe { libc::socket(domain, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket(): open, and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An AF_PACKET socket bound to interface `ifindex`, receiving the frames of `protocol_be` (an
/// EtherType in network order, `ETH_P_ALL` for all; 0 for none: a socket that only sends).
pub fn packet_socket(ifindex: u32, protocol_be: u16) -> io::Result<OwnedFd> {
    let fd = raw_socket(libc::AF_PACKET, libc::c_int::from(protocol_be))?;
    let addr = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: protocol_be,
        sll_ifindex: ifindex as i32,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    bind(&fd, &addr)?;
    Ok(fd)
}

/// `setsockopt(fd, level, name, value)`; the kernel only reads `value`.
pub fn set_opt<T: Plain>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` points to a live T of exactly the size passed; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `getsockopt(fd, level, name)` into `value`; returns the length the kernel wrote.
pub fn get_opt<T: Plain>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &mut T,
) -> io::Result<usize> {
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a live, writable T of `len` bytes and T accepts any bit pattern (Plain);
    // the kernel writes at most `len` bytes and reports how many in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *mut T).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(len as usize)
    }
}

/// `bind(fd, addr)` for a socket address of the socket's family (`sockaddr_xdp`,
/// `sockaddr_ll`).
pub fn bind<A: Plain>(fd: &OwnedFd, addr: &A) -> io::Result<()> {
    // SAFETY: `addr` is a live A and the length passed is its size; the kernel only reads it.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (addr as *const A).cast(),
            size_of::<A>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A kick that did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kick {
    Sent,
    /// EAGAIN, EBUSY, ENOBUFS or EINTR: the socket's send buffer or the device queue is full (or
    /// a signal came): the frames stay in the ring and the next kick sends them, so the caller
    /// counts it and goes on rather than failing the run.
    Busy,
}

/// A kick that failed: a link that went down is the user's to fix and the backends name it
/// apart from any other OS error.
#[derive(Debug)]
pub enum KickFailed {
    /// ENETDOWN.
    Down,
    Os(io::Error),
}

/// The TX kick: `sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0)` asks the kernel to send what the
/// socket's TX ring holds and returns without waiting for completions. The errno is sorted here,
/// once, for both socket backends.
#[inline]
pub fn kick(fd: &OwnedFd) -> Result<Kick, KickFailed> {
    // SAFETY: a zero-length send with null buffer and address: the kernel dereferences nothing.
    let rc = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    if rc >= 0 {
        return Ok(Kick::Sent);
    }
    // An OS error is a code and no allocation: building it costs the hot path nothing.
    kick_failed(io::Error::last_os_error())
}

/// What a kick's errno means to a socket backend.
fn kick_failed(e: io::Error) -> Result<Kick, KickFailed> {
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => Ok(Kick::Busy),
        Some(libc::ENETDOWN) => Err(KickFailed::Down),
        _ => Err(KickFailed::Os(e)),
    }
}

/// The index of interface `name` in the caller's network namespace.
pub fn if_index(name: &str) -> io::Result<u32> {
    let name = std::ffi::CString::new(name).map_err(io::Error::other)?;
    // SAFETY: name is a NUL-terminated string that lives through the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(index)
    }
}

/// One frame a packet socket received, as [`recv_packet`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Bytes written into the buffer (the frame is cut to the buffer's length).
    pub len: usize,
    /// `sll_pkttype`: `PACKET_OUTGOING` for what the host sent.
    pub pkttype: u8,
    /// The VLAN tag (TPID, TCI) the stack took out of the frame, when the socket asked for
    /// `PACKET_AUXDATA` and the kernel reports one.
    pub vlan: Option<(u16, u16)>,
}

/// `recvmsg` on a packet socket into `buf`, with its address and `PACKET_AUXDATA` control
/// message read back. Errors are the raw ones (`EAGAIN` on a receive timeout, `EINTR`).
pub fn recv_packet(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<Received> {
    // SAFETY: sockaddr_ll is plain integers (Plain); all-zero is valid for recvmsg to fill.
    let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    // Room for one tpacket_auxdata control message, aligned as cmsg needs.
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is pointers and integers; all-zero (nulls, zero lengths) is a valid start.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&raw mut from).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: msg points at buf, from and control, all alive through the call and of the
    // lengths given; the kernel writes within them.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &raw mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut vlan = None;
    // SAFETY: msg was filled by recvmsg; the CMSG macros walk its control buffer within
    // msg_controllen, and tpacket_auxdata is read unaligned from inside it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&raw const msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA {
                let aux: libc::tpacket_auxdata =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0 {
                    let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                        aux.tp_vlan_tpid
                    } else {
                        0x8100
                    };
                    vlan = Some((tpid, aux.tp_vlan_tci));
                }
            }
            c = libc::CMSG_NXTHDR(&raw const msg, c);
        }
    }
    Ok(Received {
        len: (n as usize).min(buf.len()),
        pkttype: from.sll_pkttype,
        vlan,
    })
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf takes no pointers.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

/// One read-write mapping, unmapped on drop.
#[derive(Debug)]
pub struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mmap is an owned address range; nothing ties it to the thread that created it.
unsafe impl Send for Mmap {}

impl Mmap {
    /// Anonymous private memory of `len` bytes, backed by huge pages when `huge`.
    pub fn anonymous(len: usize, huge: bool) -> io::Result<Self> {
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | libc::MAP_POPULATE
            | if huge { libc::MAP_HUGETLB } else { 0 };
        Self::map(len, flags, -1, 0)
    }

    /// A ring a socket set up (AF_XDP's rings at their `XDP_PGOFF_*` offsets, AF_PACKET's TX
    /// ring at 0), shared with the kernel.
    pub fn socket_ring(fd: &OwnedFd, len: usize, offset: u64) -> io::Result<Self> {
        Self::map(
            len,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd.as_raw_fd(),
            offset as libc::off_t,
        )
    }

    fn map(
        len: usize,
        flags: libc::c_int,
        fd: libc::c_int,
        offset: libc::off_t,
    ) -> io::Result<Self> {
        // SAFETY: a fresh mapping chosen by the kernel (addr NULL) overlaps nothing we own.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned NULL"))?;
        Ok(Self { ptr, len })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned, and every pointer derived from them
        // lives in a struct that owns this Mmap and is dropped with it.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Gives freed memory back to the system: freed blocks stay in the allocator's arenas
/// otherwise, and a server that builds and drops large things on request would keep their
/// high-water mark for good.
pub fn release_freed() {
    // SAFETY: malloc_trim takes no pointer; it only walks the allocator's own free lists.
    unsafe { libc::malloc_trim(0) };
}

/// `send(fd, frame, MSG_DONTWAIT)` on a bound packet socket: one whole frame, or an error
/// (`EAGAIN`/`ENOBUFS` when the device queue is full: the frame is not sent).
pub fn send_frame(fd: &OwnedFd, frame: &[u8]) -> io::Result<usize> {
    // SAFETY: frame is a live slice of the length passed; the kernel only reads it.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            frame.as_ptr().cast(),
            frame.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// The most frames [`send_frames`] takes in one call.
pub const SEND_BATCH: usize = 64;

/// `sendmmsg(fd, …, MSG_DONTWAIT)` on a bound packet socket, each of `frames` (at most
/// [`SEND_BATCH`]) one message: how many the kernel took, in order (it stops at the first it
/// cannot queue), or the error of the first.
pub fn send_frames(fd: &OwnedFd, frames: &[&[u8]]) -> io::Result<usize> {
    let n = frames.len().min(SEND_BATCH);
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; SEND_BATCH];
    // SAFETY: mmsghdr is plain integers and pointers; all-zero (no name, no control) is valid.
    let mut msgs: [libc::mmsghdr; SEND_BATCH] = unsafe { std::mem::zeroed() };
    for (i, f) in frames[..n].iter().enumerate() {
        iov[i] = libc::iovec {
            iov_base: f.as_ptr().cast_mut().cast(),
            iov_len: f.len(),
        };
        msgs[i].msg_hdr.msg_iov = &raw mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: msgs[..n] each point at one live iovec over a live frame slice; the kernel only
    // reads them (and writes msg_len) during the call.
    let sent = unsafe {
        libc::sendmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if sent < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(sent as usize)
    }
}

/// `recv(fd, buf, MSG_DONTWAIT | MSG_TRUNC)`: the frame's whole length (which may exceed the
/// buffer: the frame was cut), or `EAGAIN` when nothing waits.
pub fn recv_frame(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is a live, writable slice of the length passed; the kernel writes within it.
    let n = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_TRUNC,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Waits up to `timeout` for `fd` to be readable; false when the time ran out (or a signal
/// came: the caller's loop looks again).
pub fn wait_readable(fd: &OwnedFd, timeout: std::time::Duration) -> io::Result<bool> {
    wait_for(fd, libc::POLLIN, timeout)
}

/// `poll` for room to send on `fd` (`POLLOUT`: a socket's send buffer has drained below half)
/// up to `timeout`: true when there is, false on timeout or a signal.
pub fn wait_writable(fd: &OwnedFd, timeout: std::time::Duration) -> io::Result<bool> {
    wait_for(fd, libc::POLLOUT, timeout)
}

fn wait_for(fd: &OwnedFd, events: libc::c_short, timeout: std::time::Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: pfd is one live pollfd, and one is the count passed.
    let n = unsafe { libc::poll(&raw mut pfd, 1, ms) };
    match n {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EINTR) => Ok(false),
            e => Err(e),
        },
    }
}

/// Moves the calling thread into the network namespace `ns` (an open `/run/netns/NAME`):
/// setns(2) moves only this thread, so callers run it on a thread of its own.
pub fn enter_netns(ns: &std::fs::File) -> io::Result<()> {
    // SAFETY: setns takes an fd (live for the call) and a flag, no pointers.
    let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_memory_is_page_sized_and_writable() {
        let page = page_size();
        assert!(page.is_power_of_two() && page >= 4096, "{page}");
        let map = Mmap::anonymous(page, false).unwrap();
        assert_eq!(map.len(), page);
        // SAFETY: the mapping is `page` bytes long, read-write and owned by `map`.
        let bytes = unsafe { std::slice::from_raw_parts_mut(map.as_ptr(), map.len()) };
        bytes[page - 1] = 7;
        assert_eq!(bytes[page - 1], 7);
    }

    #[test]
    fn a_busy_kick_is_no_failure_and_a_down_link_is_named() {
        let errno = |n| kick_failed(io::Error::from_raw_os_error(n));
        for busy in [libc::EAGAIN, libc::EBUSY, libc::ENOBUFS, libc::EINTR] {
            assert_eq!(errno(busy).ok(), Some(Kick::Busy), "{busy}");
        }
        assert!(matches!(errno(libc::ENETDOWN), Err(KickFailed::Down)));
        // AF_XDP tells a deleted interface by ENXIO: it stays the OS error, for it to read.
        assert!(matches!(
            errno(libc::ENXIO),
            Err(KickFailed::Os(e)) if e.raw_os_error() == Some(libc::ENXIO)
        ));
    }

    #[test]
    fn a_kick_on_a_socket_with_nowhere_to_send_is_the_os_error() {
        // An unconnected UDP socket has no ring and no peer: the kernel asks for an address.
        let fd = OwnedFd::from(std::net::UdpSocket::bind("127.0.0.1:0").unwrap());
        assert!(matches!(
            kick(&fd),
            Err(KickFailed::Os(e)) if e.raw_os_error() == Some(libc::EDESTADDRREQ)
        ));
    }

    #[test]
    fn options_round_trip_through_the_kernel() {
        // A loopback UDP socket stands in for a packet socket: the option calls are the same.
        let fd = OwnedFd::from(std::net::UdpSocket::bind("127.0.0.1:0").unwrap());
        set_opt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &65536i32).unwrap();
        let mut got: libc::c_int = 0;
        let len = get_opt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &mut got).unwrap();
        assert_eq!(len, size_of::<libc::c_int>());
        // Linux doubles the value asked for (socket(7)), never less than asked.
        assert!(got >= 65536, "{got}");
        let bad = set_opt(&fd, libc::SOL_SOCKET, -1, &0i32).unwrap_err();
        assert_eq!(bad.raw_os_error(), Some(libc::ENOPROTOOPT));
    }

    #[test]
    fn an_unknown_family_is_an_error() {
        let e = raw_socket(-1, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EAFNOSUPPORT));
    }
}
