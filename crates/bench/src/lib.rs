//! Benchmarks of a device: the RFC 2544 tests (throughput, latency, frame loss rate,
//! back-to-back) and the RFC 9971 Multiple Loss Ratio search (MLRsearch) for throughput.
//!
//! Everything here is plain logic over the [`Trial`] trait — "offer this load, tell me what was
//! sent and what came back" — so the searches are tested against simulated devices ([`sim`])
//! whose answers are known in closed form. The engine and the receiver implement the trait for
//! real runs; this crate does no I/O and never reads a clock.
//!
//! Words follow RFC 9971: a **trial** offers one load (rate, frame size, duration); a **search
//! goal** is a loss ratio with a final trial duration, a duration sum, an exceed ratio and a
//! width; a load is an **upper bound**, a **lower bound** or **undecided** for a goal; the
//! **relevant lower bound** is the throughput reported for that goal. See `docs/rfc2544.md`.
#![forbid(unsafe_code)]

mod b2b;
mod binary;
mod classify;
mod error;
mod goal;
mod latency;
mod loss;
mod mlr;
pub mod sim;
mod trial;

pub use b2b::{BackToBack, BackToBackResult, DEFAULT_BACK_TO_BACK_TRIALS};
pub use binary::{BinaryResult, BinarySearch};
pub use classify::Bound;
pub use error::Error;
pub use goal::{GoalStatus, SearchGoal};
pub use latency::{DEFAULT_LATENCY_TRIALS, LatencyResult, LatencyTest};
pub use loss::{FrameLoss, FrameLossResult, FrameLossRow};
pub use mlr::{GoalResult, Mlr, MlrResult};
pub use trial::{FrameSize, LatencySummary, Load, Trial, TrialOutput, TrialReport};
