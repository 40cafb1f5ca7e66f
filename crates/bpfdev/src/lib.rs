//! The macOS/FreeBSD `/dev/bpf` transmit backend: one bpf descriptor per worker, one frame per
//! `write()`, or many per `write()` with macOS 14.4+'s private `BIOCSBATCHWRITE`.
//! The write loop, record framing and retry policy are portable (and tested on Linux against a
//! socketpair); only opening and configuring the device is macOS/FreeBSD code (`open`).
//! The receive half (`capture`: the read filter, the `bpf_hdr` record parser and the counter
//! feeding `linerate_rx`'s analysis) is portable too, and so is `sink`, the thread that counts
//! while a sender runs; `BpfReader` opens the device on macOS.

pub mod abi;
pub mod capture;
mod error;
mod queue;
pub mod sink;
pub mod transmit;

#[cfg(any(target_os = "macos", target_os = "freebsd"))]
mod sys;

pub use error::BpfError;
pub use queue::BpfQueue;
pub use sink::{Capture, CaptureThread, monotonic_ns};
pub use transmit::{BpfDevice, RetryPolicy, WriteMode, WriteStats, Writer, push_record};

#[cfg(target_os = "macos")]
pub use sys::BpfReader;
#[cfg(any(target_os = "macos", target_os = "freebsd"))]
pub use sys::{BpfFd, BpfOptions, BpfPort, open, open_with};

/// What `linerate ports` should say about queues on this backend: `/dev/bpf` has none.
pub const QUEUES_NOTE: &str = "no queues: each worker writes through its own /dev/bpf descriptor";

#[cfg(test)]
mod tests;
