use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One worker's running totals. Written by that worker only, read by the status tick; padded so
/// the two never share a cache line with another worker's slot.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    submitted: AtomicU64,
    completed: AtomicU64,
    bytes: AtomicU64,
}

impl Counters {
    #[inline]
    pub fn publish(&self, submitted: u64, completed: u64, bytes: u64) {
        self.submitted.store(submitted, Ordering::Relaxed);
        self.completed.store(completed, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    /// (submitted, completed, bytes).
    pub fn read(&self) -> (u64, u64, u64) {
        (
            self.submitted.load(Ordering::Relaxed),
            self.completed.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }
}

/// What the workers have submitted so far, summed, and over the last tick.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Snapshot {
    pub elapsed: Duration,
    pub frames: u64,
    pub bytes: u64,
    pub interval: Duration,
    pub interval_frames: u64,
    pub interval_bytes: u64,
}

impl Snapshot {
    /// Frames per second over the last interval.
    pub fn pps(&self) -> f64 {
        rate(self.interval_frames, self.interval)
    }

    /// Bits per second on the wire over the last interval: each frame adds its FCS (4 bytes),
    /// preamble, SFD and inter-frame gap (20 bytes).
    pub fn wire_bps(&self) -> f64 {
        rate(
            (self.interval_bytes + self.interval_frames * 24) * 8,
            self.interval,
        )
    }
}

pub(crate) fn rate(amount: u64, over: Duration) -> f64 {
    if over.is_zero() {
        0.0
    } else {
        amount as f64 / over.as_secs_f64()
    }
}
