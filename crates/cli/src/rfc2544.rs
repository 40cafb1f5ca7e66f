//! The arguments of `linerate rfc2544` (the command itself is `src/rfc2544.rs`), a part of
//! `cli` in a file of its own.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{
    AfXdpArgs, ClockArg, HostsArgs, INTERFACE_BACKENDS, OUTPUT, RECEIVE, SEND, TUNING, WHERE,
    XdpAttach, backend, parse_duration,
};

/// The heading of the trial and search settings, which only rfc2544 has.
const TRIALS: &str = "Trials and searches";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Test {
    /// The highest rate without loss (NDR) and within each loss goal (PDR), per size.
    Throughput,
    /// Latency at the throughput found (§26.2).
    Latency,
    /// Frame loss rate from 100 % of the max rate down in 10 % steps (§26.3).
    Loss,
    /// The longest burst at the max rate without loss (§26.4).
    BackToBack,
    /// All four, in that order.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Search {
    /// RFC 9971 MLRsearch: every goal at once, short trials first.
    Mlr,
    /// The classic RFC 2544 binary search, one search per goal, every trial full length.
    Binary,
}

#[derive(Debug, Args)]
pub struct Rfc2544Args {
    /// Which benchmark.
    #[arg(value_enum)]
    pub test: Test,
    /// Interface to transmit on (the DUT's input); with --host, the hosts' ports instead.
    #[arg(short, long, value_name = "IFACE", required_unless_present = "host", help_heading = WHERE)]
    pub interface: Option<String>,
    /// Receive on IFACE[@NETNS] (the DUT's output); without a value, the lab's receive end.
    #[arg(long, value_name = "IFACE[@NETNS]", num_args = 0..=1, default_missing_value = "", help_heading = RECEIVE)]
    pub rx: Option<String>,
    /// Frame sizes, FCS included (at least 64: the signature must fit).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "64,128,256,512,1024,1280,1518",
        help_heading = SEND
    )]
    pub sizes: Vec<u32>,
    /// Trial duration: the final (full-length) trial of the searches, and every trial of the
    /// latency and loss tests.
    #[arg(long, value_parser = parse_duration, default_value = "60s", help_heading = TRIALS)]
    pub trial: Duration,
    /// MLRsearch's first, shortest trials (default: 1 s, or --trial if shorter).
    #[arg(long, value_parser = parse_duration, help_heading = TRIALS)]
    pub initial_trial: Option<Duration>,
    #[arg(long, value_enum, default_value = "mlr", help_heading = TRIALS)]
    pub search: Search,
    /// Loss-ratio goals: 0 is NDR, 0.5% a PDR; a ratio (0.005) or a percentage (above 1 %, a
    /// percentage only: a bare 0.5 is refused as ambiguous).
    #[arg(long, value_delimiter = ',', default_value = "0,0.5%", help_heading = TRIALS)]
    pub goals: Vec<String>,
    /// Share of trial time allowed to exceed the goal's loss at a lower bound (RFC 9971 exceed
    /// ratio; 0 = RFC 2544's one lossy trial rules a load out).
    #[arg(long, default_value = "0", help_heading = TRIALS)]
    pub exceed: String,
    /// Relative width the searches stop at, e.g. 0.5% or 0.005.
    #[arg(long, default_value = "0.5%", help_heading = TRIALS)]
    pub precision: String,
    /// The highest load: the line rate (when the port reports it or --link-speed gives it, else
    /// a measured max-rate trial), or a rate: 1.5M, 200k (frames/s), 500Mbps, 50%.
    #[arg(long, default_value = "line", help_heading = TRIALS)]
    pub max_rate: String,
    /// The lowest load worth offering (default: 0.1 % of the max): a goal that fails there has no
    /// rate that meets it.
    #[arg(long, help_heading = TRIALS)]
    pub min_rate: Option<String>,
    /// Wait after each trial for frames still in the DUT (RFC 2544: 2 s).
    #[arg(long, value_parser = parse_duration, default_value = "2s", help_heading = RECEIVE)]
    pub drain: Duration,
    /// Frames sent before each trial so a bridge learns the addresses (RFC 2544 §23); 0: none.
    #[arg(long, default_value_t = 0, help_heading = SEND)]
    pub learning_frames: u64,
    /// Latency trials per size (RFC 2544: at least 20).
    #[arg(long, default_value_t = linerate_bench::DEFAULT_LATENCY_TRIALS, value_parser = clap::value_parser!(u32).range(1..), help_heading = TRIALS)]
    pub latency_trials: u32,
    /// Back-to-back searches per size (RFC 2544: at least 50).
    #[arg(long, default_value_t = linerate_bench::DEFAULT_BACK_TO_BACK_TRIALS, value_parser = clap::value_parser!(u32).range(1..), help_heading = TRIALS)]
    pub b2b_trials: u32,
    /// Longest burst the back-to-back search tries (default: 2 s at the max rate).
    #[arg(long, value_parser = linerate_wire::quantity::parse_count, help_heading = TRIALS)]
    pub max_burst: Option<u64>,
    /// Source MAC of the trials' frames (default: the port's).
    #[arg(long, help_heading = SEND)]
    pub src_mac: Option<linerate_wire::Mac>,
    /// Destination MAC: the DUT's port (default: the lab's DUT on a lab, else broadcast).
    #[arg(long, help_heading = SEND)]
    pub dst_mac: Option<linerate_wire::Mac>,
    /// Source IPv4 address (default 198.18.0.1, RFC 2544's benchmarking range; a lab's own).
    #[arg(long, help_heading = SEND)]
    pub src_ip: Option<std::net::Ipv4Addr>,
    /// Destination IPv4 address (default 198.18.0.2; a lab's own).
    #[arg(long, help_heading = SEND)]
    pub dst_ip: Option<std::net::Ipv4Addr>,
    #[arg(long, value_parser = backend(&[INTERFACE_BACKENDS]), help_heading = WHERE)]
    pub backend: Option<crate::Backend>,
    /// One worker per core, e.g. 0,1 (default: with hosts, each port on a free core of its own;
    /// else one worker on the first core this process may run on).
    #[arg(long, value_delimiter = ',', help_heading = TUNING)]
    pub cores: Vec<usize>,
    /// Link speed for the line rate and % of line when the port does not report it.
    #[arg(long, value_parser = crate::parse_link_speed, help_heading = WHERE)]
    pub link_speed: Option<u64>,
    /// With --rx IFACE: native (drv) or generic (skb) XDP for the receive program.
    #[arg(long, value_enum, default_value = "drv", help_heading = RECEIVE)]
    pub rx_mode: XdpAttach,
    /// Clock both ends stamp with: monotonic (one host) or tai (two hosts synced by PTP).
    #[arg(long, value_enum, default_value = "monotonic", help_heading = RECEIVE)]
    pub clock: ClockArg,
    /// The result with every trial as JSON: on stdout instead of the tables (`--json` alone,
    /// or `--json -`, as every command's `--json`), or written to FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    /// Write the results as CSV, one row per figure.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub csv: Option<PathBuf>,
    /// Plot throughput against size and loss against offered load (.svg or .png).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub plot: Option<PathBuf>,
    /// Write every trial's time series to FILE: a line a second per flow and per port, each
    /// with its phase (`64 B thr`); JSON lines, or CSV when FILE ends in .csv.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub stats: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(short, long, help_heading = OUTPUT)]
    pub quiet: bool,
    #[command(flatten)]
    pub afxdp: AfXdpArgs,
    /// Hosts and the directions between them (--bidir: both ways), all sent at once: each
    /// trial offers its load on every direction and passes only if every direction does.
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// Hosts whose port is `HOST:PORT/IFACE` live on that agent's machine.
    #[command(flatten)]
    pub agents: crate::ControllerArgs,
}
