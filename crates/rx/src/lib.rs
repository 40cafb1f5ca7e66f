//! The receive side: what arrived per flow (frames, bytes, loss, order, duplicates, latency and
//! jitter), read from the signature trailer (`linerate_wire::signature`). The analysis is plain
//! Rust shared by every platform (`flow`, `hist`); on Linux an XDP program does it in the kernel
//! and `Receiver` reads its maps. Capture (the program, a /dev/bpf reader) lives elsewhere.
#![forbid(unsafe_code)]

mod error;
pub mod flow;
pub mod gaps;
pub mod hist;
#[cfg(target_os = "linux")]
mod linux;
pub mod table;

pub use error::RxError;
pub use flow::{FlowReport, FlowState, FlowStats, Latency, RxFlow, RxGlobal, RxProgress, RxTotals};
pub use gaps::GapReport;
#[cfg(target_os = "linux")]
pub use linux::{Clock, MAX_FLOWS, MAX_HIST_FLOWS, Receiver, RxConfig};
