//! The `Port`/`TxQueue` traits that every linerate backend implements, the facts a port reports
//! about itself (`PortInfo`), and the two portable backends: a pcap file and a null sink.
//! Platform backends (AF_XDP, /dev/bpf) live in their own crates and plug in here; on Linux,
//! `iface` describes an interface from sysfs for all of them.

pub mod caps;
mod drain;
mod error;
/// Fault injection for tests of the runners (feature `fault`).
#[cfg(feature = "fault")]
pub mod fault;
#[cfg(target_os = "linux")]
pub mod iface;
mod info;
pub mod ladder;
mod null;
mod pcap;
pub mod savefile;

pub use drain::drain_polling;
pub use error::{PortError, Usage};
pub use info::{LinkSpeed, PortInfo};
pub use null::{NullPort, NullQueue};
pub use pcap::{PcapPort, PcapQueue};

use std::time::Duration;

/// One frame handed to a queue: which slot holds it and how many bytes of the slot to send
/// (the frame without its FCS: `--size 64` is a 60-byte descriptor).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxDesc {
    pub slot: u32,
    pub len: u32,
}

/// What a worker asks of a queue when it opens it.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// Hardware/kernel queue index on the port.
    pub queue_id: u32,
    /// How many frame slots the queue must own. The engine picks a multiple of the plan's period,
    /// so that every slot keeps the same frame lap after lap; backends must honour it exactly.
    pub slots: u32,
    /// Bytes per slot (at least the largest frame of the plan).
    pub slot_size: u32,
    /// Frames per submit: the engine never reserves more than this at once.
    pub batch: u32,
}

/// Counters a backend keeps beyond "frames in, frames completed" (AF_XDP's `XDP_STATISTICS`,
/// `ENOBUFS` retries on /dev/bpf, …). Reported verbatim in the run report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub extra: Vec<(&'static str, u64)>,
}

/// One transmit queue of a port, owned by exactly one worker thread.
///
/// The backend owns the frame buffers ("slots"). A slot keeps its bytes until someone rewrites
/// it, so a worker writes each frame once and afterwards only submits descriptors. The cycle is:
/// `reserve` room → write or patch slots (`slot_mut`) → `submit` exactly the reserved number →
/// `reap` completions; a slot may be rewritten only after the frame in it has been reaped.
pub trait TxQueue: Send {
    /// The slot count this queue was opened with.
    fn slots(&self) -> u32;
    /// Bytes available in each slot.
    fn slot_size(&self) -> u32;
    /// The bytes of one slot, for the initial fill and for in-place patches.
    fn slot_mut(&mut self, slot: u32) -> &mut [u8];
    /// How many descriptors (at most `want`) may be submitted now.
    fn reserve(&mut self, want: u32) -> u32;
    /// Hands frames to the backend. `descs.len()` must not exceed the last `reserve` answer.
    fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError>;
    /// Frames the backend finished with since the last call; their slots may be rewritten.
    fn reap(&mut self) -> Result<u32, PortError>;
    /// Pushes out whatever is pending and waits, at most `timeout`, until every submitted frame
    /// has completed. Returns the number reaped while waiting.
    fn drain(&mut self, timeout: Duration) -> Result<u32, PortError>;
    /// Backend-specific counters for the report.
    fn stats(&self) -> QueueStats {
        QueueStats::default()
    }
    /// How the queue is bound, for the report ("copy (skb)", "zerocopy (drv)", "file", …).
    fn mode(&self) -> String;
}

impl<Q: TxQueue + ?Sized> TxQueue for Box<Q> {
    fn slots(&self) -> u32 {
        (**self).slots()
    }
    fn slot_size(&self) -> u32 {
        (**self).slot_size()
    }
    fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        (**self).slot_mut(slot)
    }
    fn reserve(&mut self, want: u32) -> u32 {
        (**self).reserve(want)
    }
    fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError> {
        (**self).submit(descs)
    }
    fn reap(&mut self) -> Result<u32, PortError> {
        (**self).reap()
    }
    fn drain(&mut self, timeout: Duration) -> Result<u32, PortError> {
        (**self).drain(timeout)
    }
    fn stats(&self) -> QueueStats {
        (**self).stats()
    }
    fn mode(&self) -> String {
        (**self).mode()
    }
}

/// An opened interface (or file) that hands out transmit queues.
pub trait Port: Send + Sync {
    fn info(&self) -> &PortInfo;
    /// Slots a queue of this backend wants at least: enough frames in flight to keep its ring
    /// full. Backends that complete on submit need only a few batches, and fewer slots keep the
    /// frames the loop patches in cache.
    fn min_slots(&self) -> u32 {
        4096
    }
    /// Opens one transmit queue. Each queue id may be opened once.
    fn open_queue(&self, config: &QueueConfig) -> Result<Box<dyn TxQueue>, PortError>;
}

/// A slot store in plain memory, shared by the backends that copy frames out on submit.
#[derive(Debug)]
pub struct SlotMemory {
    bytes: Vec<u8>,
    slot_size: u32,
    slots: u32,
}

impl SlotMemory {
    pub fn new(slots: u32, slot_size: u32) -> Self {
        Self {
            bytes: vec![0; slots as usize * slot_size as usize],
            slot_size,
            slots,
        }
    }
    pub fn slots(&self) -> u32 {
        self.slots
    }
    pub fn slot_size(&self) -> u32 {
        self.slot_size
    }
    #[inline]
    pub fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        let start = slot as usize * self.slot_size as usize;
        &mut self.bytes[start..start + self.slot_size as usize]
    }
    /// The first `desc.len` bytes of the slot a descriptor names, or why the descriptor names
    /// no frame of this memory: every queue answers a bad descriptor with an error, not a panic.
    #[inline]
    pub fn try_frame(&self, desc: TxDesc) -> Result<&[u8], PortError> {
        if desc.len > self.slot_size {
            return Err(PortError::FrameTooLarge {
                len: desc.len,
                slot_size: self.slot_size,
            });
        }
        if desc.slot >= self.slots {
            return Err(PortError::BadDescriptor {
                slot: desc.slot,
                len: desc.len,
                slots: self.slots,
            });
        }
        Ok(self.frame(desc))
    }
    /// The first `desc.len` bytes of the slot a descriptor names; panics on a slot out of range
    /// (`try_frame` checks).
    #[inline]
    pub fn frame(&self, desc: TxDesc) -> &[u8] {
        let start = desc.slot as usize * self.slot_size as usize;
        &self.bytes[start..start + desc.len as usize]
    }
}
