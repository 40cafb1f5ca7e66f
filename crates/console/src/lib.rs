//! `linerate console`: a live table of an OTG server's flows and ports — rates, loss, latency,
//! a sparkline of the last minute — and keys that start, stop, pause, resume and re-rate the
//! selected flow. It speaks only OTG over HTTP (`/monitor/metrics`, `/control/state`, `/config`),
//! so it drives `linerate serve` and any other OTG implementation alike; `--no-tui` prints the
//! same table once a second for logs.

pub mod keys;
pub mod view;

#[cfg(target_os = "linux")]
pub mod client;
#[cfg(target_os = "linux")]
pub mod tui;

/// Why the console cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The server answered with an OTG error.
    #[error("{status} from the server: {errors}")]
    Refused { status: u16, errors: String },
    /// The server could not be reached or answered what is not OTG.
    #[error("{0}")]
    Transport(String),
    /// The terminal could not be set up or drawn on.
    #[error("the terminal: {0}")]
    Terminal(#[from] std::io::Error),
}
