//! The UMEM: one anonymous mapping cut into `slots` chunks of `chunk` bytes; slot `i` is the chunk
//! at address `i * chunk`, which is also the descriptor address the kernel sees.

use std::io;

use crate::sys::{self, Mmap};

const HUGE_PAGE: usize = 2 << 20;

#[derive(Debug)]
pub(crate) struct Umem {
    map: Mmap,
    slots: u32,
    chunk: u32,
    huge: bool,
}

impl Umem {
    /// Maps `slots * chunk` bytes: on 2 MiB huge pages when the area is at least that large and
    /// the system has huge pages to give, otherwise on ordinary pages.
    pub(crate) fn new(slots: u32, chunk: u32) -> io::Result<Self> {
        let len = slots as usize * chunk as usize;
        if len >= HUGE_PAGE
            && let Ok(map) = Mmap::anonymous(len.next_multiple_of(HUGE_PAGE), true)
        {
            return Ok(Self {
                map,
                slots,
                chunk,
                huge: true,
            });
        }
        let map = Mmap::anonymous(len.next_multiple_of(sys::page_size()), false)?;
        Ok(Self {
            map,
            slots,
            chunk,
            huge: false,
        })
    }

    /// The registration the kernel needs (`XDP_UMEM_REG`): exactly `slots` chunks, no headroom.
    pub(crate) fn registration(&self) -> libc::xdp_umem_reg {
        libc::xdp_umem_reg {
            addr: self.map.as_ptr() as u64,
            len: self.slots as u64 * self.chunk as u64,
            chunk_size: self.chunk,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        }
    }

    pub(crate) fn huge(&self) -> bool {
        self.huge
    }

    /// The whole chunk of one slot.
    ///
    /// # Panics
    /// When `slot >= slots`, like slice indexing.
    #[inline]
    pub(crate) fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        assert!(
            slot < self.slots,
            "slot {slot} out of range ({} slots)",
            self.slots
        );
        let start = slot as usize * self.chunk as usize;
        // SAFETY: start + chunk ≤ slots * chunk ≤ the mapping's length, which is readable and
        // writable for as long as self lives; `&mut self` makes this the only Rust reference to
        // it. The kernel may read the chunk concurrently (a frame in flight), as a NIC would DMA.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_ptr().add(start), self.chunk as usize) }
    }
}
