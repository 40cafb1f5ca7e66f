//! The arguments of `linerate convergence` (the command itself is `src/convergence.rs`), a part
//! of `cli` in a file of its own.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{OUTPUT, parse_duration};

/// The heading of the benchmark's own settings.
const BENCHMARK: &str = "Benchmark";

/// What takes the preferred path away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Event {
    /// The preferred device withdraws its routes (its session stays up).
    Withdraw,
    /// The preferred device's BGP speaker is stopped: its session goes down (a Cease).
    Down,
}

#[derive(Debug, Args)]
pub struct ConvergenceArgs {
    /// The lab to run on: one brought up with `linerate lab up --dut bgp`.
    #[arg(long, value_name = "NAME")]
    pub lab: String,
    /// Prefixes (/24s) both receiving devices advertise.
    #[arg(long, default_value_t = 1000, help_heading = BENCHMARK)]
    pub prefixes: u32,
    /// What takes the preferred path away.
    #[arg(long, value_enum, default_value = "withdraw", help_heading = BENCHMARK)]
    pub event: Event,
    /// The offered load, all flows together: frames per second (100k) or a bit rate
    /// (50Mbps); each flow gets an equal share.
    #[arg(long, default_value = "100k", help_heading = BENCHMARK)]
    pub rate: String,
    /// Frame size, FCS included (at least 64: the signature must fit).
    #[arg(long, default_value_t = 128, help_heading = BENCHMARK)]
    pub size: u32,
    /// Events measured: each after the one before was undone (routes advertised again, or
    /// the speaker started again) and traffic was back on the preferred path.
    #[arg(long, default_value_t = 1, help_heading = BENCHMARK)]
    pub repeat: u32,
    /// How long every flow must arrive without new loss to count as converged (and as
    /// steady before an event).
    #[arg(long, value_parser = parse_duration, default_value = "1s", help_heading = BENCHMARK)]
    pub settle: Duration,
    /// The longest wait for the DUT to install the routes, and for the flows to converge
    /// after an event.
    #[arg(long, value_parser = parse_duration, default_value = "120s", help_heading = BENCHMARK)]
    pub timeout: Duration,
    /// Write the report as JSON to FILE ("-" for stdout, instead of the table).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    /// Write one CSV row per flow and event to FILE.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub csv: Option<PathBuf>,
    /// Draw each flow's loss-derived convergence time to FILE (.svg or .png).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub plot: Option<PathBuf>,
}
