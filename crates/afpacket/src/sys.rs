//! The syscall boundary: thin, typed wrappers over `socket`, `setsockopt`, `bind`, `sendto` and
//! `mmap`. Every `unsafe` of the crate outside the ring accessors is here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

/// A transmit-only packet socket: protocol 0 registers no receive hook, so the kernel never
/// queues the interface's traffic to it.
pub(crate) fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket() takes no pointers.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket(): open, and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt(fd, level, name, value)` for the plain C values the kernel only reads (an int,
/// `tpacket_req`, `tpacket_req3`).
pub(crate) fn set_opt<T: Copy>(
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

/// Binds a packet socket to one interface, for no protocol (transmit only).
pub(crate) fn bind_packet(fd: &OwnedFd, ifindex: u32) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain integers; all-zero is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = 0;
    addr.sll_ifindex = ifindex as i32;
    // SAFETY: `addr` is a live sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The TX kick: `sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0)` sends every frame of the ring
/// marked for sending, in ring order, and returns without waiting for completions. Returns the
/// raw errno on failure so the hot path can classify it without building an `io::Error`.
#[inline]
pub(crate) fn kick(fd: &OwnedFd) -> Result<(), i32> {
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
    if rc < 0 {
        Err(io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(())
    }
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf takes no pointers.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

/// A packet socket's ring, mapped shared with the kernel, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mmap is an owned address range; nothing ties it to the thread that created it.
unsafe impl Send for Mmap {}

impl Mmap {
    /// Maps the ring that `PACKET_TX_RING` set up on `fd` (offset 0, `len` bytes).
    pub(crate) fn ring(fd: &OwnedFd, len: usize) -> io::Result<Self> {
        // SAFETY: a fresh mapping chosen by the kernel (addr NULL) overlaps nothing we own.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned NULL"))?;
        Ok(Self { ptr, len })
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
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
