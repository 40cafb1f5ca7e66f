//! The tests' own view of the gaps between frames: `bpf/stamp.bpf.c` times every UDP frame as it
//! reaches an interface (nothing else: it shares no code with linerate's receiver), and
//! [`GapTable`] turns the stamps into the figures MoonGen's paper judged rate control by: the
//! share of gaps within ±64/±128/±256/±512 ns of the target, the share back to back (under a
//! quarter of the target), and a Kolmogorov–Smirnov test against an exponential for Poisson
//! traffic. Tests and `scripts/bench-gaps.sh` hold linerate's pacing and its receiver's gap
//! report to it.

mod error;
mod gaps;
#[cfg(target_os = "linux")]
mod linux;

pub use error::ProbeError;
pub use gaps::{GapTable, KsTest, OnTime, WINDOWS_NS, gaps, ks_exponential, ks_exponential_above};
#[cfg(target_os = "linux")]
pub use linux::Probe;
