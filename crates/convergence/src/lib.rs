//! The RFC 7747 black-box BGP convergence benchmark on a `--dut bgp` lab: the topology as an
//! OTG config (`plan`), the per-flow analysis of receive counters sampled through each event
//! (`analysis`), the report (`report`) and, on Linux, the run over the test bed and the
//! devices' BGP speakers (`run`). It holds no CLI and prints nothing but progress on stderr.

pub mod analysis;
mod error;
pub mod plan;
pub mod report;
#[cfg(target_os = "linux")]
pub mod run;

pub use error::ConvergenceError;
