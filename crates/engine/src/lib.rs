//! Runs a plan on a port: the one worker runner (`run_workers`: pinned threads, one epoch, a
//! status tick, panic-safe supervision, the report), the one pacer (`pace::Pacer`) and the hot
//! loops that drive a `TxQueue` with reserve → fill/patch → submit → reap. Knows nothing of any
//! backend beyond that trait; the live backend runs its own loop on the same runner and pacer.

pub mod clock;
mod counters;
pub mod cpu;
pub mod pace;
mod report;
mod run;
mod runner;
mod worker;

pub use counters::Snapshot;
pub use report::{PacingStats, Report, StreamCount, WorkerReport};
pub use run::{RunConfig, WorkerSpec, merged_lanes, run, set_per_stream, slots_for};
pub use runner::{
    Interrupted, Observer, WorkerContext, WorkerFailure, check_workers, run_workers,
    unavailable_core,
};
pub use worker::{
    LaneShare, LaneTotals, WorkerTotals, transmit, transmit_lanes, transmit_streamed,
};

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
    #[error("no worker to run: give at least one core")]
    NoWorkers,
    /// A worker failed or panicked mid-run; holds the report so far.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

impl EngineError {
    /// True when the user can fix it by changing what they asked for (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Port(e) => e.is_usage(),
            Self::Pin { .. } | Self::NoWorkers | Self::SlotTooSmall { .. } => true,
            Self::Interrupted(_) => false,
        }
    }
}
