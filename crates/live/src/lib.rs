//! The `live` backend: Linux's BPF_PROG_RUN in live-frame mode (BPF_F_TEST_XDP_LIVE_FRAMES,
//! 5.18+) runs `bpf/live_tx.bpf.c` once per frame on a page built from a template, and the program
//! patches the variable fields and redirects the frame straight into the driver's ndo_xdp_xmit —
//! no skb, no copy from user space. Holds the plan → program layout (everywhere) and the port,
//! a `linerate_engine::Transmitter` (Linux). Not the `TxQueue` slot model: the kernel owns the frames here.

mod error;
pub mod layout;
#[cfg(target_os = "linux")]
mod linux;
pub mod ring;

pub use error::LiveError;
#[cfg(target_os = "linux")]
pub use linux::{LivePort, ProgramClock, kernel_refuses_live_frames, live_frames_or_skip, run};

/// The backend's name in reports.
pub const BACKEND: &str = "live";
/// The mode a worker reports.
pub const MODE: &str = "live (redirect)";
