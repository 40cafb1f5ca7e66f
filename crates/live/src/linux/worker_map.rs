//! The `live_workers` map as this process sees it: mmapped, one 384-byte entry per worker that
//! user space configures before the run and the program updates as it sends.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

use libbpf_rs::{MapCore, Object};

use crate::LiveError;
use crate::layout::{MAX_FIELDS, MAX_WORKERS, WORDS};
use crate::ring::ENTRY_LEN;

/// `struct live_worker` of `bpf/live_tx.bpf.c`, as the mmap of the `live_workers` map shows it:
/// a config line user space writes before the run, a state line and a line of field indices the
/// program writes, two lines of window words (`struct live_words`) and a pad line (384 bytes: no
/// 128-byte block shared between workers).
#[repr(C)]
pub(super) struct WorkerSlot {
    pub(super) limit: AtomicU64,
    pub(super) ifindex: AtomicU32,
    pub(super) _pad_a: AtomicU32,
    pub(super) frame_base: AtomicU32,
    pub(super) period: AtomicU32,
    pub(super) win_off: AtomicU32,
    pub(super) win_len: AtomicU32,
    pub(super) tmpl_len: AtomicU32,
    pub(super) _pad_b: AtomicU32,
    pub(super) stop: AtomicU32,
    pub(super) _pad0: AtomicU32,
    pub(super) _pad1: [AtomicU64; 2],
    pub(super) rng: AtomicU64,
    pub(super) index: AtomicU32,
    pub(super) lap: AtomicU32,
    pub(super) sent: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) errors: AtomicU64,
    pub(super) seq: AtomicU64,
    pub(super) stamp_ns: AtomicU64,
    pub(super) stamp_left: AtomicU32,
    pub(super) _pad3: AtomicU32,
    pub(super) indices: [AtomicU64; MAX_FIELDS],
    pub(super) words: [AtomicU64; WORDS],
    pub(super) _pad4: [AtomicU64; 8],
}

const _: () = assert!(size_of::<WorkerSlot>() == 384);

/// The `live_workers` map mapped into this process; unmapped on drop.
pub(super) struct WorkerMap {
    ptr: NonNull<WorkerSlot>,
    len: usize,
}

impl WorkerMap {
    pub(super) fn map(object: &Object) -> Result<WorkerMap, LiveError> {
        let len = (MAX_WORKERS * size_of::<WorkerSlot>()).next_multiple_of(PAGE);
        let ptr = map_shared(object, "live_workers", len)?;
        Ok(WorkerMap {
            ptr: ptr.cast(),
            len,
        })
    }

    pub(super) fn slots(&self) -> &[WorkerSlot] {
        // SAFETY: the mapping holds MAX_WORKERS entries of 384 bytes laid out as WorkerSlot
        // (all atomics, any bit pattern valid) and lives as long as `self`; the kernel writes
        // it concurrently, which atomics permit.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), MAX_WORKERS) }
    }
}

/// The smallest unit of a mapping.
const PAGE: usize = 4096;

/// A shared read-write mapping of the object's BPF_F_MMAPABLE array map `name`, `len` bytes
/// (the map's values, rounded up to pages as the kernel allows).
fn map_shared(object: &Object, name: &str, len: usize) -> Result<NonNull<u8>, LiveError> {
    let map = object
        .maps()
        .find(|m| m.name() == name)
        .ok_or_else(|| LiveError::Load {
            message: format!("the object has no map {name}"),
        })?;
    // SAFETY: a shared mapping of a live BPF_F_MMAPABLE array map fd, `len` bytes (no more than
    // the map's values rounded up to pages, which the kernel checks); the result is checked
    // below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            map.as_fd().as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(LiveError::Load {
            message: format!("mapping {name}: {}", io::Error::last_os_error()),
        });
    }
    Ok(NonNull::new(ptr.cast()).expect("mmap succeeded"))
}

/// The `live_frames` map mapped into this process, for a streamed capture's rings: `entries`
/// entries of `ENTRY_LEN` bytes; unmapped on drop.
pub(super) struct FrameMap {
    ptr: NonNull<u8>,
    len: usize,
    entries: usize,
}

impl FrameMap {
    pub(super) fn map(object: &Object, entries: usize) -> Result<FrameMap, LiveError> {
        let len = (entries * ENTRY_LEN).next_multiple_of(PAGE);
        let ptr = map_shared(object, "live_frames", len)?;
        Ok(FrameMap { ptr, len, entries })
    }

    /// The map cut into rings of `per` entries, one a worker in order: each worker's thread
    /// writes its own, between its calls of the program.
    pub(super) fn rings(&mut self, per: u32) -> Vec<RingBytes<'_>> {
        let bytes = per as usize * ENTRY_LEN;
        let rings = self.entries / per.max(1) as usize;
        let base = self.ptr.as_ptr();
        (0..rings)
            .map(|r| RingBytes {
                // SAFETY: the mapping is `len` ≥ entries · ENTRY_LEN bytes and lives as long as
                // the borrow of `self` (mutable, so nothing else hands out these bytes); the
                // rings are disjoint. The program reads a worker's entries only during that
                // worker's own call of it, while its thread, the one writer, waits in the
                // syscall.
                bytes: unsafe { std::slice::from_raw_parts_mut(base.add(r * bytes), bytes) },
            })
            .collect()
    }
}

/// One worker's ring of `live_frames` entries, as bytes.
pub(super) struct RingBytes<'a> {
    pub(super) bytes: &'a mut [u8],
}

impl Drop for FrameMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the mapping made in `map`, unmapped once here; the rings borrowed
        // it and are gone.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

impl Drop for WorkerMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the mapping made in `map`, unmapped once here.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
