//! The TPACKET TX ring: how frames are laid out in blocks (the kernel's rules), and the status
//! word of each frame through which process and kernel hand a frame back and forth.
//!
//! Frame `i` sits at `(i / per_block) * block_size + (i % per_block) * frame_size`; its header
//! (`tpacket2_hdr` or `tpacket3_hdr`) comes first and the frame's bytes follow at
//! `TPACKET_ALIGN(sizeof header)`. The kernel walks the ring in order from its own head and sends
//! every frame marked `TP_STATUS_SEND_REQUEST`, sets it to `SENDING` and, once the skb is freed,
//! back to `AVAILABLE`: a frame whose status is available again has been sent.
//!
//! A ring may carry a `virtio_net_hdr` before each frame (`PACKET_VNET_HDR`, [`VNET_HDR_LEN`]):
//! its `hdr_len` is how many bytes of the frame the kernel copies into the skb's linear part.
//! Without it the kernel copies the Ethernet header and hangs the rest of the frame on the skb as
//! a fragment of the ring's page, marked zero-copy, and a device that forwards the skb (veth into
//! its peer's namespace) must then copy that fragment into a fresh page (`skb_copy_ubufs`) and
//! free it again. With `hdr_len` the whole frame, the one copy is the kernel's own 60-odd bytes.

use std::io;
use std::mem::offset_of;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::sys::{self, Mmap};

/// The TPACKET header version of the ring. Both transmit the same way (V3's blocks are a
/// receive feature); they differ in header size, so in where the frame's bytes start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TpacketVersion {
    /// `tpacket2_hdr`, 32 bytes before the frame (the measured default, see
    /// docs/performance.md).
    #[default]
    V2,
    /// `tpacket3_hdr`, 48 bytes before the frame (transmit since Linux 4.11).
    V3,
}

impl TpacketVersion {
    pub fn name(self) -> &'static str {
        match self {
            Self::V2 => "tpacket_v2",
            Self::V3 => "tpacket_v3",
        }
    }

    pub(crate) fn kernel_value(self) -> libc::c_int {
        match self {
            Self::V2 => libc::tpacket_versions::TPACKET_V2 as libc::c_int,
            Self::V3 => libc::tpacket_versions::TPACKET_V3 as libc::c_int,
        }
    }

    /// Where the frame's bytes start: the kernel's `tp_hdrlen - sizeof(struct sockaddr_ll)`.
    pub(crate) fn data_offset(self) -> u32 {
        let hdrlen = match self {
            Self::V2 => libc::TPACKET2_HDRLEN,
            Self::V3 => libc::TPACKET3_HDRLEN,
        };
        (hdrlen - size_of::<libc::sockaddr_ll>()) as u32
    }

    fn status_offset(self) -> usize {
        match self {
            Self::V2 => offset_of!(libc::tpacket2_hdr, tp_status),
            Self::V3 => offset_of!(libc::tpacket3_hdr, tp_status),
        }
    }

    fn len_offset(self) -> usize {
        match self {
            Self::V2 => offset_of!(libc::tpacket2_hdr, tp_len),
            Self::V3 => offset_of!(libc::tpacket3_hdr, tp_len),
        }
    }
}

/// Bytes of the `virtio_net_hdr` before each frame when the ring has one.
pub(crate) const VNET_HDR_LEN: u32 = 10;
/// Where `hdr_len` lies in it (after `flags` and `gso_type`, one byte each).
const VNET_HDR_LEN_AT: usize = 2;

/// Blocks of at most this many pages: the kernel allocates each block as one run of pages and
/// falls back to vmalloc past that, so larger blocks buy nothing for transmit.
const MAX_BLOCK_PAGES: u32 = 16;

/// Header and frame bytes of every ring frame start on this boundary (`TPACKET_ALIGNMENT`).
const ALIGN: u32 = libc::TPACKET_ALIGNMENT as u32;

/// A ring's geometry as `PACKET_TX_RING` wants it: `frames = blocks * per_block` exactly, each
/// block a whole number of pages holding exactly `per_block = block_size / frame_size` frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) frames: u32,
    pub(crate) frame_size: u32,
    pub(crate) per_block: u32,
    pub(crate) block_size: u32,
    pub(crate) blocks: u32,
}

impl Layout {
    /// A ring of exactly `frames` frames of at least `min_frame` bytes each (header included).
    /// The frame count is the caller's (a slot is a ring frame), so the frame size and the
    /// blocks bend around it: first cache-line frames packed into blocks whose frame count
    /// divides `frames`; else a divisor of `frames` per block, frames widened to fill it.
    pub(crate) fn for_frames(frames: u32, min_frame: u32, page: u32) -> Option<Layout> {
        if frames == 0 || min_frame == 0 {
            return None;
        }
        let min_frame = min_frame.checked_next_multiple_of(ALIGN)?;
        let make = |frame_size: u32, block_size: u32| {
            let per_block = block_size / frame_size;
            (per_block > 0 && frames.is_multiple_of(per_block)).then_some(Layout {
                frames,
                frame_size,
                per_block,
                block_size,
                blocks: frames / per_block,
            })
        };
        let line = min_frame.checked_next_multiple_of(64)?;
        for frame_size in [line, min_frame] {
            for pages in (1..=MAX_BLOCK_PAGES).rev() {
                if let Some(l) = make(frame_size, pages * page) {
                    return Some(l);
                }
            }
        }
        // A divisor d of `frames` per block: d = 1 always fits (one frame, one block).
        let most = (MAX_BLOCK_PAGES * page / min_frame).clamp(1, frames);
        for per_block in (1..=most).rev().filter(|d| frames.is_multiple_of(*d)) {
            let block_size = (per_block * min_frame).div_ceil(page) * page;
            let frame_size = block_size / per_block / ALIGN * ALIGN;
            if frame_size >= min_frame
                && let Some(l) = make(frame_size, block_size)
                && l.per_block == per_block
            {
                return Some(l);
            }
        }
        None
    }

    /// The ring as `PACKET_TX_RING` or `PACKET_RX_RING` asks for it with TPACKET_V2.
    pub(crate) fn request(&self) -> libc::tpacket_req {
        libc::tpacket_req {
            tp_block_size: self.block_size,
            tp_block_nr: self.blocks,
            tp_frame_size: self.frame_size,
            tp_frame_nr: self.frames,
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.block_size as usize * self.blocks as usize
    }

    /// Where frame `i`'s header starts in the mapping.
    pub(crate) fn offset(&self, i: u32) -> usize {
        (i / self.per_block) as usize * self.block_size as usize
            + (i % self.per_block) as usize * self.frame_size as usize
    }
}

/// What a frame's status word says about it, from the process's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Ours: sent (or never handed over). Timestamp flags the kernel may add do not matter.
    Available,
    /// Handed over and not yet taken by the kernel (`SEND_REQUEST`): a kick is owed.
    Requested,
    /// Taken by the kernel and not yet sent (`SENDING`): the device still holds it.
    Sending,
    /// The kernel refused the frame and stopped there.
    WrongFormat,
}

/// A mapped TX ring. Frame headers live in memory the kernel reads and writes concurrently
/// (completions arrive from the device's interrupt on another CPU): status words are read and
/// written atomically; the rest of a frame is touched only while its status says it is ours.
#[derive(Debug)]
pub(crate) struct TxRing {
    map: Mmap,
    /// Header offset of each frame, so the hot path does no division.
    offsets: Box<[usize]>,
    version: TpacketVersion,
    layout: Layout,
    /// Bytes before each frame's data: a `virtio_net_hdr`, or nothing.
    prefix: u32,
}

impl TxRing {
    /// Asks the kernel for the ring (`PACKET_TX_RING`, after `PACKET_VERSION` and, with `vnet`,
    /// `PACKET_VNET_HDR`) and maps it.
    pub(crate) fn new(
        fd: &OwnedFd,
        version: TpacketVersion,
        layout: Layout,
        vnet: bool,
    ) -> io::Result<Self> {
        match version {
            TpacketVersion::V2 => {
                sys::set_opt(
                    fd,
                    libc::SOL_PACKET,
                    libc::PACKET_TX_RING,
                    &layout.request(),
                )?;
            }
            TpacketVersion::V3 => {
                // Retire timeout, private area and feature word are receive-side; TX wants 0.
                let req = libc::tpacket_req3 {
                    tp_block_size: layout.block_size,
                    tp_block_nr: layout.blocks,
                    tp_frame_size: layout.frame_size,
                    tp_frame_nr: layout.frames,
                    tp_retire_blk_tov: 0,
                    tp_sizeof_priv: 0,
                    tp_feature_req_word: 0,
                };
                sys::set_opt(fd, libc::SOL_PACKET, libc::PACKET_TX_RING, &req)?;
            }
        }
        let map = Mmap::socket_ring(fd, layout.bytes(), 0)?;
        debug_assert!(map.len() >= layout.bytes());
        let offsets = (0..layout.frames).map(|i| layout.offset(i)).collect();
        Ok(Self {
            map,
            offsets,
            version,
            layout,
            prefix: if vnet { VNET_HDR_LEN } else { 0 },
        })
    }

    pub(crate) fn frames(&self) -> u32 {
        self.layout.frames
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Bytes of frame data each ring frame holds after its header (and `virtio_net_hdr`).
    pub(crate) fn data_size(&self) -> u32 {
        self.layout.frame_size - self.version.data_offset() - self.prefix
    }

    #[inline]
    fn status_word(&self, frame: u32) -> &AtomicU32 {
        let at = self.offsets[frame as usize] + self.version.status_offset();
        // SAFETY: `at` lies inside the mapping (the layout fits `map`, the header fits a frame)
        // and is 4-aligned (headers start on 16-byte boundaries, the field is at 0 or 20);
        // the kernel only ever accesses the word as a whole u32, and the mapping outlives &self.
        unsafe { AtomicU32::from_ptr(self.map.as_ptr().add(at).cast()) }
    }

    #[inline]
    pub(crate) fn status(&self, frame: u32) -> Status {
        let s = self.status_word(frame).load(Ordering::Acquire);
        if s & libc::TP_STATUS_WRONG_FORMAT != 0 {
            Status::WrongFormat
        } else if s & libc::TP_STATUS_SENDING != 0 {
            Status::Sending
        } else if s & libc::TP_STATUS_SEND_REQUEST != 0 {
            Status::Requested
        } else {
            Status::Available
        }
    }

    /// Hands frame `frame` (`len` bytes of it) to the kernel. The frame must be ours
    /// (`Status::Available`); the release store orders the length and the bytes before it.
    #[inline]
    pub(crate) fn hand_over(&mut self, frame: u32, len: u32) {
        debug_assert_eq!(self.status(frame), Status::Available);
        let header = self.offsets[frame as usize];
        if self.prefix > 0 {
            // The whole frame into the skb's linear part (a length past u16 would fall back to
            // the kernel's split). Legacy virtio (what packet sockets speak) is native-endian;
            // the header's other fields (no offloads) stay zero as the kernel mapped them, and
            // the worker writes only the data after it.
            let at = header + self.version.data_offset() as usize + VNET_HDR_LEN_AT;
            // SAFETY: inside this frame's prefix in the mapping, 2-aligned (data starts on a
            // 16-byte boundary); the frame is ours until the status store below.
            unsafe {
                self.map
                    .as_ptr()
                    .add(at)
                    .cast::<u16>()
                    .write_volatile(len.min(u32::from(u16::MAX)) as u16)
            };
        }
        let at = header + self.version.len_offset();
        // SAFETY: inside the mapping and 4-aligned (as for the status word); the frame is ours,
        // so the kernel does not read its header until the status store below.
        unsafe {
            self.map
                .as_ptr()
                .add(at)
                .cast::<u32>()
                .write_volatile(len + self.prefix)
        };
        self.status_word(frame)
            .store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
    }

    /// The data area of one frame. Write only while the frame is ours (not handed over, or
    /// reaped since).
    #[inline]
    pub(crate) fn data_mut(&mut self, frame: u32) -> &mut [u8] {
        let at = self.offsets[frame as usize] + (self.version.data_offset() + self.prefix) as usize;
        let len = self.data_size() as usize;
        // SAFETY: `at..at + len` is this frame's data area inside the mapping; &mut self keeps
        // every other borrow of the ring out for the slice's life, and the kernel reads the area
        // only between hand_over and the completion the caller waits for before writing.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_ptr().add(at), len) }
    }
}

/// Page size, for layouts.
pub(crate) fn page() -> u32 {
    sys::page_size() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u32 = 4096;

    fn check(l: &Layout, frames: u32, min_frame: u32) {
        assert_eq!(l.frames, frames);
        assert_eq!(l.blocks * l.per_block, frames, "{l:?}");
        assert_eq!(l.block_size % PAGE, 0, "{l:?}");
        assert_eq!(l.block_size / l.frame_size, l.per_block, "{l:?}");
        assert_eq!(l.frame_size % ALIGN, 0, "{l:?}");
        assert!(l.frame_size >= min_frame, "{l:?}");
        // Frames never cross a block and never overlap.
        let last = l.offset(frames - 1) + l.frame_size as usize;
        assert!(last <= l.bytes(), "{l:?}");
    }

    #[test]
    fn power_of_two_rings_pack_cache_line_frames() {
        let l = Layout::for_frames(512, 32 + 64, PAGE).unwrap();
        check(&l, 512, 96);
        assert_eq!(l.frame_size, 128);
        assert_eq!(l.offset(31), 31 * 128);
    }

    #[test]
    fn any_frame_count_gets_a_ring_of_exactly_that_many() {
        for frames in [1, 2, 3, 7, 97, 256, 258, 1000, 1021, 4096, 6000, 65_521] {
            for min_frame in [96, 112, 1568, 2048 + 48, 4096, 9040] {
                let l = Layout::for_frames(frames, min_frame, PAGE)
                    .unwrap_or_else(|| panic!("{frames} x {min_frame}"));
                check(&l, frames, min_frame);
            }
        }
    }

    #[test]
    fn odd_counts_widen_frames_rather_than_waste_pages() {
        // 1000 = 8 * 125: 25 frames of 160 bytes fill a page.
        let l = Layout::for_frames(1000, 96, PAGE).unwrap();
        check(&l, 1000, 96);
        assert!(l.per_block > 1, "{l:?}");
        assert!(l.bytes() <= 1000 * 256, "{l:?}");
    }

    #[test]
    fn nothing_is_no_ring() {
        assert_eq!(Layout::for_frames(0, 96, PAGE), None);
        assert_eq!(Layout::for_frames(4, 0, PAGE), None);
    }

    #[test]
    fn data_starts_after_the_aligned_header() {
        assert_eq!(TpacketVersion::V2.data_offset(), 32);
        assert_eq!(TpacketVersion::V3.data_offset(), 48);
        assert_eq!(TpacketVersion::V2.status_offset(), 0);
        assert_eq!(TpacketVersion::V3.status_offset(), 20);
        assert_eq!(TpacketVersion::V2.len_offset(), 4);
        assert_eq!(TpacketVersion::V3.len_offset(), 16);
    }
}
