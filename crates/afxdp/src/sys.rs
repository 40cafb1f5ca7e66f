//! The syscall boundary: thin, typed wrappers over `socket`, `setsockopt`, `getsockopt`, `bind`,
//! `sendto` and `mmap`. Every `unsafe` of the crate outside the ring and UMEM accessors is here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

/// `XDP_MAX_TX_SKB_BUDGET` from `linux/if_xdp.h` (kernel ≥ 6.17): how many frames one copy-mode
/// kick may send (default 32). libc 0.2.191 does not define it yet.
pub(crate) const XDP_MAX_TX_SKB_BUDGET: libc::c_int = 9;

/// Values the kernel may fill byte by byte: plain C structs of integers, for which every bit
/// pattern is a valid value.
///
/// # Safety
/// Implement only for `repr(C)` types made of integers (no references, bools, enums, padding
/// the kernel would leave uninitialised that Rust could not hold).
pub(crate) unsafe trait Plain: Copy {}
// SAFETY: u32 accepts every bit pattern.
unsafe impl Plain for u32 {}
// SAFETY: four structs of four u64 each; every bit pattern is valid.
unsafe impl Plain for libc::xdp_mmap_offsets {}
// SAFETY: six u64; every bit pattern is valid.
unsafe impl Plain for libc::xdp_statistics {}
// SAFETY: one u32.
unsafe impl Plain for libc::xdp_options {}
// SAFETY: two u64, four u32, no padding.
unsafe impl Plain for libc::xdp_umem_reg {}

/// Opens an AF_XDP socket.
pub(crate) fn xdp_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket() takes no pointers.
    let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket(): open, and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt(fd, SOL_XDP, name, value)`.
pub(crate) fn set_xdp_opt<T: Plain>(fd: &OwnedFd, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live T of exactly the size passed; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
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

/// `getsockopt(fd, SOL_XDP, name)` into `value`; returns the length the kernel wrote.
pub(crate) fn get_xdp_opt<T: Plain>(
    fd: &OwnedFd,
    name: libc::c_int,
    value: &mut T,
) -> io::Result<usize> {
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a live, writable T of `len` bytes and T accepts any bit pattern (Plain);
    // the kernel writes at most `len` bytes and reports how many in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
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

/// Binds an AF_XDP socket to one queue of one interface.
pub(crate) fn bind_xdp(fd: &OwnedFd, ifindex: u32, queue_id: u32, flags: u16) -> io::Result<()> {
    let addr = libc::sockaddr_xdp {
        sxdp_family: libc::AF_XDP as u16,
        sxdp_flags: flags,
        sxdp_ifindex: ifindex,
        sxdp_queue_id: queue_id,
        sxdp_shared_umem_fd: 0,
    };
    // SAFETY: `addr` is a live sockaddr_xdp and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_xdp).cast(),
            size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The TX kick: `sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0)`. Returns the raw errno on failure so
/// the hot path can classify it without building an `io::Error`.
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

/// One mapping, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mmap is an owned address range; nothing ties it to the thread that created it.
unsafe impl Send for Mmap {}

impl Mmap {
    /// Anonymous private read-write memory of `len` bytes, backed by huge pages when `huge`.
    pub(crate) fn anonymous(len: usize, huge: bool) -> io::Result<Self> {
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | libc::MAP_POPULATE
            | if huge { libc::MAP_HUGETLB } else { 0 };
        Self::map(len, flags, -1, 0)
    }

    /// A ring of an AF_XDP socket, at the page offset `XDP_PGOFF_*` / `XDP_UMEM_PGOFF_*` names.
    pub(crate) fn socket_ring(fd: &OwnedFd, len: usize, pgoff: u64) -> io::Result<Self> {
        Self::map(
            len,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd.as_raw_fd(),
            pgoff as libc::off_t,
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
