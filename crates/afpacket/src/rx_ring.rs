//! A TPACKET_V2 receive ring: the kernel copies each frame the socket takes into the next frame
//! of a ring mapped into the process and marks it `TP_STATUS_USER`; the process reads it where
//! it lies and hands the frame back (`TP_STATUS_KERNEL`). No syscall a frame, and none to learn
//! that nothing waits — what a `recv` a frame (and one more that says `EAGAIN`) cost a stateful
//! end (docs/stateful.md).

use std::io;
use std::mem::offset_of;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::ring::{Layout, TpacketVersion, page};
use crate::sys::{self, Mmap};

/// One frame of the ring, as the kernel left it.
#[derive(Debug, Clone, Copy)]
pub struct RxFrame<'a> {
    /// The bytes the ring holds: the whole frame, or its first part when it did not fit.
    pub bytes: &'a [u8],
    /// Its length on the wire (more than `bytes` holds when it did not fit), without the
    /// 802.1Q tag the kernel took off.
    pub len: usize,
    /// The VLAN id of the 802.1Q tag it came with (the kernel takes the tag off the bytes and
    /// says it here); None: untagged, or a priority tag of VLAN 0.
    pub vlan: Option<u16>,
    /// That tag's TPID (0x8100 or 0x88a8), where the kernel says it.
    pub vlan_tpid: Option<u16>,
}

/// A mapped receive ring of a packet socket, read in order from the kernel's own start.
#[derive(Debug)]
pub struct RxRing {
    map: Mmap,
    /// Header offset of each frame.
    offsets: Box<[usize]>,
    /// The frame to read next.
    next: usize,
    /// Bytes taken off the front frame's start by [`RxRing::strip_tag`].
    stripped: usize,
}

impl RxRing {
    /// Asks the kernel for a ring of `frames` frames (`PACKET_VERSION` 2, then
    /// `PACKET_RX_RING`), each with room for `max_frame` bytes after the kernel's header and
    /// its alignment, and maps it. Frames the socket queued before are left in its queue.
    pub fn new(fd: &OwnedFd, frames: u32, max_frame: u32) -> io::Result<RxRing> {
        let version = TpacketVersion::V2;
        sys::set_opt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &version.kernel_value(),
        )?;
        // The kernel puts the MAC header at TPACKET_ALIGN(hdrlen + 16) - 14: 66 bytes in for
        // V2; 128 leaves room for that and a VLAN header's reserve.
        let layout = Layout::for_frames(frames, max_frame + 128, page())
            .ok_or_else(|| io::Error::other(format!("no ring geometry for {frames} frames")))?;
        sys::set_opt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_RX_RING,
            &layout.request(),
        )?;
        let map = Mmap::socket_ring(fd, layout.bytes(), 0)?;
        let offsets = (0..layout.frames).map(|i| layout.offset(i)).collect();
        Ok(RxRing {
            map,
            offsets,
            next: 0,
            stripped: 0,
        })
    }

    fn word<T>(&self, at: usize) -> *const T {
        debug_assert!(at + size_of::<T>() <= self.map.len());
        // SAFETY: `at` is a header field of a frame inside the mapping (callers add a field
        // offset of tpacket2_hdr to a frame's header offset); the mapping outlives &self.
        unsafe { self.map.as_ptr().add(at).cast::<T>().cast_const() }
    }

    fn status(&self, frame: usize) -> &AtomicU32 {
        let at = self.offsets[frame] + offset_of!(libc::tpacket2_hdr, tp_status);
        // SAFETY: inside the mapping and 4-aligned (headers start on 16-byte boundaries, the
        // field is at 0); the kernel only accesses the word as a whole u32.
        unsafe { AtomicU32::from_ptr(self.word::<u32>(at).cast_mut()) }
    }

    /// The next frame the kernel filled, if one waits; it stays in the ring (and this returns
    /// it again) until [`RxRing::release`].
    pub fn front(&self) -> Option<RxFrame<'_>> {
        let status = self.status(self.next).load(Ordering::Acquire);
        if status & libc::TP_STATUS_USER == 0 {
            return None;
        }
        let header = self.offsets[self.next];
        let field = |offset: usize| header + offset;
        // SAFETY: header fields of a frame the kernel handed over (the acquire load above
        // orders them after its writes); it does not touch the frame until `release`.
        let (len, snaplen, mac, tci, tpid) = unsafe {
            (
                self.word::<u32>(field(offset_of!(libc::tpacket2_hdr, tp_len)))
                    .read_volatile(),
                self.word::<u32>(field(offset_of!(libc::tpacket2_hdr, tp_snaplen)))
                    .read_volatile(),
                self.word::<u16>(field(offset_of!(libc::tpacket2_hdr, tp_mac)))
                    .read_volatile(),
                self.word::<u16>(field(offset_of!(libc::tpacket2_hdr, tp_vlan_tci)))
                    .read_volatile(),
                self.word::<u16>(field(offset_of!(libc::tpacket2_hdr, tp_vlan_tpid)))
                    .read_volatile(),
            )
        };
        let vlan = (status & libc::TP_STATUS_VLAN_VALID != 0)
            .then_some(tci & 0x0fff)
            .filter(|&id| id != 0);
        let start = header + usize::from(mac) + self.stripped;
        let end = (header + usize::from(mac) + snaplen as usize).min(self.map.len());
        // SAFETY: start..end lies inside the mapping (clamped to it) within the frame the
        // kernel wrote and handed over; it stays ours, unwritten, while &self lives (release
        // takes &mut self).
        let bytes =
            unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(start), end - start) };
        let vlan_tpid =
            (vlan.is_some() && status & libc::TP_STATUS_VLAN_TPID_VALID != 0).then_some(tpid);
        Some(RxFrame {
            bytes,
            len: len as usize - self.stripped,
            vlan,
            vlan_tpid,
        })
    }

    /// Takes the 4 bytes after the front frame's MAC addresses out of it — a stacked VLAN's
    /// inner tag, which the kernel leaves in the bytes when it takes the outer one off — by
    /// moving the addresses over them: [`RxRing::front`] then returns the frame 4 bytes
    /// shorter, as if it had come with the outer tag alone, until `release`. Does nothing when
    /// no frame waits or the front one holds no 16 bytes.
    pub fn strip_tag(&mut self) {
        let Some(frame) = self.front() else {
            return;
        };
        if frame.bytes.len() < 16 {
            return;
        }
        // Where the frame starts in the mapping; written through the mapping's own pointer.
        let at = frame.bytes.as_ptr() as usize - self.map.as_ptr() as usize;
        // SAFETY: the 16 bytes at `at` lie inside the mapping, in the front frame, which the
        // kernel has handed over and does not touch until `release`; no slice of them lives on
        // (`front` takes &self, and this holds &mut self). `copy` moves the 12 address bytes 4
        // on, overlapping allowed.
        unsafe {
            let start = self.map.as_ptr().add(at);
            std::ptr::copy(start, start.add(4), 12);
        }
        self.stripped += 4;
    }

    /// Hands the front frame back to the kernel and moves on to the next (only after `front`
    /// returned it).
    pub fn release(&mut self) {
        debug_assert!(
            self.front().is_some(),
            "released a frame the kernel has not filled"
        );
        self.status(self.next)
            .store(libc::TP_STATUS_KERNEL, Ordering::Release);
        self.next = (self.next + 1) % self.offsets.len();
        self.stripped = 0;
    }
}
