//! Runs a plan on a port: one worker thread per core, each pinned and driving its own queue with
//! the reserve → fill/patch → submit → reap loop, per-worker counters read by a status tick, and
//! the final report. Knows nothing of any backend beyond the `TxQueue` trait. Its pacing rules
//! (`pace`) are public: the live backend, which has its own loop, paces by them too.

mod counters;
pub mod pace;
mod report;
mod run;
mod worker;

pub use counters::Snapshot;
pub use report::{PacingStats, Report, StreamCount, WorkerReport};
pub use run::{Observer, RunConfig, WorkerSpec, run, slots_for, supervise, unavailable_core};
pub use worker::{Lane, LaneTotals, Pace, WorkerTotals, transmit, transmit_lanes};

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Port(#[from] linerate_port::PortError),
    #[error(
        "cannot pin a worker to core {core}: this process may run on {available} core(s), not that one (see `nproc` and `taskset -p $$`)"
    )]
    Pin { core: usize, available: usize },
    #[error("frames of {len} bytes do not fit the {slot_size}-byte slots of queue {queue}")]
    SlotTooSmall {
        len: usize,
        slot_size: u32,
        queue: u32,
    },
    #[error("worker {0} panicked")]
    WorkerPanicked(usize),
    #[error("no worker to run: give at least one core")]
    NoWorkers,
    #[error("interleaved stream '{stream}' has no schedule: every interleaved stream needs a rate")]
    UnpacedLane { stream: String },
}

impl EngineError {
    /// True when the user can fix it by changing what they asked for (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Port(e) => e.is_usage(),
            Self::Pin { .. }
            | Self::NoWorkers
            | Self::SlotTooSmall { .. }
            | Self::UnpacedLane { .. } => true,
            Self::WorkerPanicked(_) => false,
        }
    }
}
