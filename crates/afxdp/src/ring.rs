//! The two rings a TX-only socket drives: TX (we produce descriptors) and COMPLETION (we consume
//! finished frames). Producer and consumer indices are free-running u32s in memory shared with the
//! kernel; we keep cached copies like libxdp's `xsk.h` and touch the shared ones only when needed:
//! producer stores are Release (the kernel must see the descriptors before the index), consumer
//! loads are Acquire (we must see the kernel's progress before reusing entries).
//!
//! Every index is masked before use, so no sequence of calls can reach outside the mapping:
//! a protocol mistake can only send wrong frames, never touch memory that is not the ring's.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, Ordering, fence};

use crate::sys::Mmap;

/// One mmapped ring: pointers into the mapping at the offsets `XDP_MMAP_OFFSETS` gave.
#[derive(Debug)]
struct RawRing<T> {
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    descs: *mut T,
    mask: u32,
    size: u32,
    // Declared last: the pointers above point into it.
    _map: Mmap,
}

// SAFETY: the pointers all point into `_map`, which the ring owns and moves with it; the kernel
// side is the only other party and is indifferent to which thread we run on.
unsafe impl<T> Send for RawRing<T> {}

impl<T> RawRing<T> {
    fn map(
        fd: &OwnedFd,
        offsets: &libc::xdp_ring_offset,
        entries: u32,
        pgoff: u64,
    ) -> io::Result<Self> {
        debug_assert!(entries.is_power_of_two());
        let len = offsets.desc as usize + entries as usize * size_of::<T>();
        let map = Mmap::socket_ring(fd, len, pgoff)?;
        let field = |off: u64, align: usize, size: usize| -> io::Result<*mut u8> {
            let off = off as usize;
            if !off.is_multiple_of(align) || off + size > map.len() {
                return Err(io::Error::other(format!(
                    "kernel ring offset {off} is misaligned or outside the {len}-byte ring"
                )));
            }
            // SAFETY: off + size ≤ map.len(), so the result stays inside the mapping.
            Ok(unsafe { map.as_ptr().add(off) })
        };
        let producer = field(offsets.producer, 4, 4)?.cast();
        let consumer = field(offsets.consumer, 4, 4)?.cast();
        let flags = field(offsets.flags, 4, 4)?.cast();
        let descs = field(
            offsets.desc,
            align_of::<T>(),
            entries as usize * size_of::<T>(),
        )?
        .cast();
        Ok(Self {
            producer,
            consumer,
            flags,
            descs,
            mask: entries - 1,
            size: entries,
            _map: map,
        })
    }

    #[inline]
    fn producer(&self) -> &AtomicU32 {
        // SAFETY: checked in-bounds and 4-aligned at map time; the mapping lives as long as self;
        // AtomicU32 has the layout of u32 and the kernel only ever accesses it atomically.
        unsafe { &*self.producer }
    }

    #[inline]
    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { &*self.consumer }
    }

    #[inline]
    fn flags(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { &*self.flags }
    }
}

/// The TX ring: we fill descriptors and publish them with the producer index.
#[derive(Debug)]
pub(crate) struct TxRing {
    ring: RawRing<libc::xdp_desc>,
    cached_prod: u32,
    /// Kernel's consumer + ring size, as last read: `cached_cons - cached_prod` entries are free.
    cached_cons: u32,
}

impl TxRing {
    pub(crate) fn map(
        fd: &OwnedFd,
        offsets: &libc::xdp_ring_offset,
        entries: u32,
    ) -> io::Result<Self> {
        let ring = RawRing::map(fd, offsets, entries, libc::XDP_PGOFF_TX_RING as u64)?;
        let cached_prod = ring.producer().load(Ordering::Relaxed);
        let cached_cons = ring
            .consumer()
            .load(Ordering::Acquire)
            .wrapping_add(ring.size);
        Ok(Self {
            ring,
            cached_prod,
            cached_cons,
        })
    }

    pub(crate) fn size(&self) -> u32 {
        self.ring.size
    }

    /// How many of `want` entries are free (libxdp's `xsk_prod_nb_free`).
    #[inline]
    pub(crate) fn free(&mut self, want: u32) -> u32 {
        let free = self.cached_cons.wrapping_sub(self.cached_prod);
        if free >= want {
            return want;
        }
        self.cached_cons = self
            .ring
            .consumer()
            .load(Ordering::Acquire)
            .wrapping_add(self.ring.size);
        want.min(self.cached_cons.wrapping_sub(self.cached_prod))
    }

    /// Writes the descriptor `offset` entries past the producer; visible to the kernel only after
    /// `publish`. The caller keeps `offset` below what `free` granted.
    #[inline]
    pub(crate) fn write(&mut self, offset: u32, desc: libc::xdp_desc) {
        let index = (self.cached_prod.wrapping_add(offset) & self.ring.mask) as usize;
        // SAFETY: index ≤ mask < size, and the mapping holds `size` descriptors at `descs`
        // (checked at map time). Volatile: the kernel reads this memory behind our back.
        unsafe { self.ring.descs.add(index).write_volatile(desc) }
    }

    /// Hands `n` written descriptors to the kernel.
    #[inline]
    pub(crate) fn publish(&mut self, n: u32) {
        self.cached_prod = self.cached_prod.wrapping_add(n);
        self.ring
            .producer()
            .store(self.cached_prod, Ordering::Release);
    }

    /// Descriptors published but not yet taken by the kernel.
    #[inline]
    pub(crate) fn pending(&self) -> u32 {
        self.cached_prod
            .wrapping_sub(self.ring.consumer().load(Ordering::Acquire))
    }

    /// True when the kernel asks to be woken up (`XDP_RING_NEED_WAKEUP`) to process this ring.
    #[inline]
    pub(crate) fn needs_wakeup(&self) -> bool {
        // The producer store must be visible before we read the flag, or we and a driver that
        // clears the flag, re-checks the ring and sets the flag could miss each other: a full
        // fence orders our store before our load (one per batch, not per frame).
        fence(Ordering::SeqCst);
        self.ring.flags().load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }
}

/// The COMPLETION ring: the kernel returns the addresses of sent frames. We only count them: the
/// queue hands out frames in order and the kernel completes one queue's frames in order.
#[derive(Debug)]
pub(crate) struct CompletionRing {
    ring: RawRing<u64>,
    /// Kernel's producer, as last read.
    cached_prod: u32,
    cached_cons: u32,
}

impl CompletionRing {
    pub(crate) fn map(
        fd: &OwnedFd,
        offsets: &libc::xdp_ring_offset,
        entries: u32,
    ) -> io::Result<Self> {
        let ring = RawRing::map(fd, offsets, entries, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?;
        let cached_prod = ring.producer().load(Ordering::Acquire);
        let cached_cons = ring.consumer().load(Ordering::Relaxed);
        Ok(Self {
            ring,
            cached_prod,
            cached_cons,
        })
    }

    pub(crate) fn size(&self) -> u32 {
        self.ring.size
    }

    /// Consumes up to `max` completions and returns how many (libxdp's peek + release).
    #[inline]
    pub(crate) fn take(&mut self, max: u32) -> u32 {
        let mut ready = self.cached_prod.wrapping_sub(self.cached_cons);
        if ready < max {
            self.cached_prod = self.ring.producer().load(Ordering::Acquire);
            ready = self.cached_prod.wrapping_sub(self.cached_cons);
        }
        let n = ready.min(max);
        if n > 0 {
            self.cached_cons = self.cached_cons.wrapping_add(n);
            self.ring
                .consumer()
                .store(self.cached_cons, Ordering::Release);
        }
        n
    }
}
