use std::collections::BTreeMap;

use serde::Serialize;

use crate::counters::rate;

/// What one worker did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerReport {
    pub worker: usize,
    pub core: Option<usize>,
    pub queue: u32,
    pub mode: String,
    /// Frames handed to the backend.
    pub submitted: u64,
    /// Frames the backend reported done (after the final drain).
    pub completed: u64,
    /// Bytes of the submitted frames, FCS excluded (what a receiver's XDP program sees).
    pub bytes: u64,
    pub elapsed_s: f64,
    /// Backend counters, e.g. AF_XDP's tx_invalid_descs.
    pub stats: BTreeMap<String, u64>,
}

/// The outcome of a run: per worker and summed. Rates use the longest worker's time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub backend: String,
    pub port: String,
    pub workers: Vec<WorkerReport>,
    pub submitted: u64,
    pub completed: u64,
    pub bytes: u64,
    pub elapsed_s: f64,
    pub pps: f64,
    /// Bits per second on the wire (frame + FCS + 20 bytes of preamble, SFD and gap).
    pub wire_bps: f64,
}

impl Report {
    /// Sums the workers; rates use the longest worker's time.
    pub fn new(backend: &str, port: &str, workers: Vec<WorkerReport>) -> Self {
        let submitted = workers.iter().map(|w| w.submitted).sum();
        let completed = workers.iter().map(|w| w.completed).sum();
        let bytes = workers.iter().map(|w| w.bytes).sum();
        let elapsed_s = workers.iter().map(|w| w.elapsed_s).fold(0.0, f64::max);
        let elapsed = std::time::Duration::from_secs_f64(elapsed_s);
        Self {
            backend: backend.into(),
            port: port.into(),
            submitted,
            completed,
            bytes,
            elapsed_s,
            pps: rate(completed, elapsed),
            wire_bps: rate((bytes + completed * 24) * 8, elapsed),
            workers,
        }
    }

    /// Frames submitted but never completed (a backend that lost them, or a drain that timed out).
    pub fn missing(&self) -> u64 {
        self.submitted - self.completed.min(self.submitted)
    }
}
