//! Runs a plan on a transmitter: the one transmit path (`run` over a `Transmitter`: the plan's
//! shape turned into work once, the report built once), the one worker runner (pinned threads,
//! one epoch, a status tick, panic-safe supervision), the one pacer (`pace::Pacer`) and the hot
//! loops that drive a `TxQueue` with reserve → fill/patch → submit → reap. Knows nothing of any
//! backend beyond those traits; the live backend is a `Transmitter` with its own worker loop.

use linerate_port::Usage;

pub mod clock;
mod control;
mod counters;
pub mod cpu;
pub mod pace;
mod report;
mod run;
mod runner;
mod transmitter;
mod worker;

pub use control::{FlowControl, FlowState};
pub use counters::Snapshot;
pub use report::{PacingStats, Report, StreamCount, WorkerReport};
pub use run::{RunConfig, WorkerSpec, slots_for};
pub use runner::{
    Interrupted, Observer, WorkerContext, WorkerFailure, allowed_cores, check_workers,
    unavailable_core,
};
pub use transmitter::{Done, Job, Runner, Transmitter, Work, WorkerError, merged_lanes, run};
pub use worker::{
    LaneShare, LaneTotals, Steer, WorkerTotals, transmit, transmit_lanes, transmit_streamed,
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
    /// A transmitter's own refusal or failure before its workers ran (live: a plan its program
    /// cannot send, a link that is down), kept whole so it still says whose fix it is.
    #[error(transparent)]
    Transmitter(Box<dyn Usage>),
}

impl Usage for EngineError {
    fn is_usage(&self) -> bool {
        match self {
            Self::Port(e) => e.is_usage(),
            Self::Transmitter(e) => e.is_usage(),
            Self::Pin { .. } | Self::NoWorkers | Self::SlotTooSmall { .. } => true,
            Self::Interrupted(_) => false,
        }
    }
}
