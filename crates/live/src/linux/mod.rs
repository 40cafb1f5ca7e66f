//! The Linux side of the live backend, one concern a file: the port and its probe (`port`), the
//! program and its maps (`program`), the mmapped worker entries (`worker_map`), the dispatcher
//! anchor (`anchor`), the transmitter the engine runs (`run`), the worker's loop (`send`), and
//! the program's own timer for benchmarks (`clock`).

mod anchor;
mod clock;
mod port;
mod program;
mod run;
mod send;
mod worker_map;

pub use clock::ProgramClock;
pub use port::{LivePort, kernel_refuses_live_frames, live_frames_or_skip};
pub use run::run;
