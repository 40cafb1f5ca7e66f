//! linerate's command-line grammar: every command's clap types, their `--help` (headings,
//! examples) and the template flags read as a stream. The binary parses with it (`Cli::parse`),
//! converts what was parsed into the library's options and runs the command; this crate decides
//! nothing else. Its tests parse every `linerate …` command the docs show with the real parser.

#![forbid(unsafe_code)]

mod backends;
pub mod convergence;
mod hosts;
pub mod rfc2544;
mod template;

pub use template::{FlagsError, TemplateFlags};

pub use backends::Backends;

use std::path::PathBuf;

use clap::builder::{NonEmptyStringValueParser, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};

pub use hosts::HostsArgs;

#[cfg(test)]
mod doc_commands;
mod examples;

// The `--help` headings: one vocabulary for every command, in the order a reader asks.
pub const SEND: &str = "What to send";
pub const WHERE: &str = "Where to send";
pub const PACE: &str = "How fast and how long";
pub const RECEIVE: &str = "Receive";
pub const HOSTS: &str = "Hosts: several ports, both directions";
pub const OUTPUT: &str = "Output";
pub const TUNING: &str = "Workers and backend tuning";
const API: &str = "The API";
const AGENTS: &str = "Agents: a test bed of several machines";

/// Kernel-bypass, line-rate packet transmitter.
#[derive(Debug, Parser)]
#[command(name = "linerate", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Transmit a stream on a port, a pcap file or the null port.
    #[command(after_help = examples::TX)]
    Tx(Box<TxArgs>),
    /// Replay a capture (pcap or pcapng, Ethernet) on a port, a pcap file or the null port.
    // A capture carries no signature to stamp: --clock stays accepted for the refusal that says
    // so (src/replay.rs), but is not offered.
    #[command(after_help = examples::REPLAY, mut_arg("clock", |a| a.hide(true)))]
    Replay(Box<ReplayArgs>),
    /// Create, inspect or remove the veth lab (Linux).
    #[command(after_help = examples::LAB)]
    Lab {
        #[command(subcommand)]
        action: LabAction,
    },
    /// Count what arrives on an interface with the XDP sink, once per second (Linux).
    #[command(after_help = examples::SINK)]
    Sink(SinkArgs),
    /// Receive on an interface: per flow loss, order and latency from the signature (Linux).
    #[command(after_help = examples::RX)]
    Rx(RxArgs),
    /// Max rate at each frame size: the classic max-rate table, JSON, CSV and a plot.
    #[command(after_help = examples::SWEEP)]
    Sweep(SweepArgs),
    /// Side-by-side table of two or more sweep files, with the ratio per size.
    #[command(after_help = examples::COMPARE)]
    Compare(CompareArgs),
    /// The interfaces here and which backends can send on each.
    #[command(after_help = examples::PORTS)]
    Ports(PortsArgs),
    /// Benchmark a device (RFC 2544): throughput (MLRsearch or binary), latency, frame loss
    /// rate, back-to-back, judged at the receive port.
    #[command(after_help = examples::RFC2544)]
    Rfc2544(Box<rfc2544::Rfc2544Args>),
    /// Benchmark a BGP DUT's data-plane convergence (RFC 7747) on a `--dut bgp` lab: traffic to
    /// N prefixes learned over a preferred path, the path withdrawn or failed, per-flow loss
    /// and convergence times (Linux).
    #[command(after_help = examples::CONVERGENCE)]
    Convergence(Box<convergence::ConvergenceArgs>),
    /// Serve the Open Traffic Generator API (snappi, OTG test suites) on HTTPS (Linux); with
    /// --agent-token-file, also drive ports on other machines' agents.
    #[command(after_help = examples::SERVE)]
    Serve(Box<ServeArgs>),
    /// Serve this machine's ports to a controller (`linerate serve`) that drives a test bed of
    /// several machines (Linux).
    #[command(after_help = examples::AGENT)]
    Agent(Box<AgentArgs>),
    /// A live table of an OTG server's flows and ports (`linerate serve`, or any other), with
    /// keys to start, stop, pause, resume and re-rate the selected flow (Linux).
    #[command(after_help = examples::CONSOLE)]
    Console(ConsoleArgs),
    /// Stateful TCP: a client opening HTTP connections from an address range through a
    /// device (a NAT, a firewall) to a server, or a server answering them (Linux).
    #[command(after_help = examples::TCP)]
    Tcp {
        #[command(subcommand)]
        action: TcpAction,
    },
    /// Print a shell completion script.
    #[command(after_help = examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per command into a directory.
    #[command(after_help = examples::MAN)]
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write linerate.1 and a page for every command (linerate-tx.1, …) into DIR instead.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8443", help_heading = API)]
    pub listen: std::net::SocketAddr,
    /// Plain HTTP instead of TLS.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"], help_heading = API)]
    pub http: bool,
    /// TLS certificate chain (PEM); default: a self-signed certificate made at start.
    #[arg(long, requires = "tls_key", value_name = "FILE", help_heading = API)]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert", value_name = "FILE", help_heading = API)]
    pub tls_key: Option<PathBuf>,
    /// Bearer token every request must carry; needed to listen beyond loopback.
    #[arg(long, value_name = "T", conflicts_with = "token_file", help_heading = API)]
    pub token: Option<String>,
    /// The bearer token, read from the first line of FILE (kept out of the process list).
    #[arg(long, value_name = "FILE", help_heading = API)]
    pub token_file: Option<PathBuf>,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 4 << 20, value_name = "BYTES", help_heading = API)]
    pub max_body: usize,
    /// Backend of the transmit port (default: AF_XDP).
    #[arg(long, value_parser = backend(&[SERVE_BACKENDS]), help_heading = TUNING)]
    pub backend: Option<Backend>,
    /// One transmit worker per core, e.g. 0,1; with several ports, port i's on the i-th
    /// (default: each port on a free core of its own, a warning when they must share).
    #[arg(long, value_delimiter = ',', help_heading = TUNING)]
    pub cores: Vec<usize>,
    /// Connections served at once once a request of theirs was taken (the token); one more
    /// waits until one ends. New ones wait apart: 5 s, 64 in all, 16 per source.
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub max_connections: u16,
    #[command(flatten)]
    pub afxdp: AfXdpArgs,
    #[command(flatten)]
    pub controller: ControllerArgs,
}

/// What a controller needs to drive agents: OTG port locations `ADDR:PORT/IFACE[@NETNS]`.
#[derive(Debug, Clone, Default, Args)]
pub struct ControllerArgs {
    /// The agents' bearer token, read from the first line of FILE; enables ports on agents.
    #[arg(long, value_name = "FILE", help_heading = AGENTS)]
    pub agent_token_file: Option<PathBuf>,
    /// CA certificate(s) (PEM) the agents' TLS certificates must chain to (default: any
    /// certificate is taken, with a warning: the token still guards the agents).
    #[arg(long, value_name = "FILE", requires = "agent_token_file", help_heading = AGENTS)]
    pub agent_ca: Option<PathBuf>,
    /// Agents serve plain HTTP (they were started with --http).
    #[arg(long, requires = "agent_token_file", help_heading = AGENTS)]
    pub agent_http: bool,
    /// Largest clock offset uncertainty between the controller and an agent before a start
    /// warns (or, with --strict-sync, is refused).
    #[arg(long, value_parser = parse_duration, default_value = "1ms", help_heading = AGENTS)]
    pub sync_tolerance: std::time::Duration,
    /// Refuse to start when an agent's clock is not known to within --sync-tolerance.
    #[arg(long, help_heading = AGENTS)]
    pub strict_sync: bool,
}

/// `linerate agent`: the API's options, the lease and the start clock.
#[derive(Debug, Args)]
#[command(
    mut_arg("agent_token_file", |a| a.hide(true)),
    mut_arg("agent_ca", |a| a.hide(true)),
    mut_arg("agent_http", |a| a.hide(true)),
    mut_arg("sync_tolerance", |a| a.hide(true)),
    mut_arg("strict_sync", |a| a.hide(true)),
)]
pub struct AgentArgs {
    #[command(flatten)]
    pub api: ServeArgs,
    /// Stop transmitting and detach everything when the controller has not been heard from
    /// for this long.
    #[arg(long, value_parser = parse_duration, default_value = "3s", help_heading = AGENTS)]
    pub lease: std::time::Duration,
    /// The clock starts are scheduled on, and the signature stamps with tai: realtime, or tai
    /// (hosts that PTP keeps together).
    #[arg(long, value_enum, default_value = "realtime", help_heading = AGENTS)]
    pub clock: AgentClock,
}

/// `linerate console`: where the OTG server is and how often to read it.
#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// The OTG server, as snappi's location.
    #[arg(long, default_value = "https://127.0.0.1:8443", value_name = "URL")]
    pub location: String,
    /// Open a test bed of this machine instead: an OTG config (JSON) set on a `linerate serve`
    /// the console starts on loopback for itself and stops when it quits.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["location", "token", "token_file", "ca", "insecure"])]
    pub config: Option<PathBuf>,
    /// The server's bearer token.
    #[arg(long, value_name = "T", conflicts_with = "token_file")]
    pub token: Option<String>,
    /// The bearer token, read from the first line of FILE (kept out of the process list).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// CA certificate(s) (PEM) the server's certificate must chain to; needed beyond loopback
    /// (on loopback any is taken, as snappi's verify=False takes serve's self-signed one).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub ca: Option<PathBuf>,
    /// Beyond loopback, take any certificate: whoever answers gets the token.
    #[arg(long)]
    pub insecure: bool,
    /// Between two readings of the metrics.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub interval: std::time::Duration,
    /// Print the table as text once an interval (for logs), with no keys.
    #[arg(long)]
    pub no_tui: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentClock {
    Realtime,
    Tai,
}

#[derive(Debug, Args)]
pub struct PortsArgs {
    /// Print the interfaces as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Frame sizes, FCS included.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "64,128,256,512,1024,1280,1518",
        help_heading = SEND
    )]
    pub sizes: Vec<usize>,
    /// Interface to sweep on.
    #[arg(
        short,
        long,
        value_name = "IFACE",
        required_unless_present = "lab",
        conflicts_with = "lab",
        help_heading = WHERE
    )]
    pub interface: Option<String>,
    /// Create a veth lab for the sweep and remove it afterwards.
    #[arg(long, help_heading = WHERE)]
    pub lab: bool,
    /// Name of the lab --lab creates (default: a fresh one, so two sweeps never share a lab).
    #[arg(long, requires = "lab", help_heading = WHERE)]
    pub lab_name: Option<String>,
    /// Backend; the platform's when left out (auto on Linux: the fastest this interface takes).
    #[arg(long, value_parser = backend(&[INTERFACE_BACKENDS]), help_heading = WHERE)]
    pub backend: Option<Backend>,
    /// Several backends in one run, interleaved, a column each: all (every one that sends
    /// here) or a list, e.g. live,afpacket.
    #[arg(long, value_name = "all|LIST", value_parser = backends::parse_backends, conflicts_with = "backend", help_heading = WHERE)]
    pub backends: Option<Backends>,
    /// Length of each measured run.
    #[arg(short = 'd', long, value_parser = parse_duration, default_value = "5s", help_heading = PACE)]
    pub duration: std::time::Duration,
    /// Measured runs per size.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..), help_heading = PACE)]
    pub repeat: u32,
    /// Unmeasured run before each size.
    #[arg(long, value_parser = parse_duration, default_value = "1s", help_heading = PACE)]
    pub warmup: std::time::Duration,
    /// Link speed for % of line rate when the port does not report it (veth has none).
    #[arg(long, value_parser = parse_link_speed, help_heading = PACE)]
    pub link_speed: Option<u64>,
    /// Count at a sink on this interface (with --sink-netns when it lives in a namespace).
    #[arg(long, conflicts_with = "lab", help_heading = RECEIVE)]
    pub sink_iface: Option<String>,
    /// Network namespace of --sink-iface.
    #[arg(long, requires = "sink_iface", help_heading = RECEIVE)]
    pub sink_netns: Option<String>,
    /// The result as JSON: on stdout instead of the table (`--json` alone, or `--json -`, as
    /// every command's `--json`), or written to FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", help_heading = OUTPUT)]
    pub json: Option<std::path::PathBuf>,
    /// Write the table as CSV (and FILE.repetitions.csv with the raw counts).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub csv: Option<std::path::PathBuf>,
    /// Plot Kpps and Mbps against frame size (.svg or .png).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub plot: Option<std::path::PathBuf>,
    /// One worker per core, e.g. 0,1 (default: one, on the first core this process may run
    /// on).
    #[arg(long, value_delimiter = ',', help_heading = TUNING)]
    pub cores: Vec<usize>,
    /// The queue each worker drives (default 0,1,…).
    #[arg(long, value_delimiter = ',', help_heading = TUNING)]
    pub queues: Option<Vec<u32>>,
    /// Frames per submit.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=2048), help_heading = TUNING)]
    pub batch: u32,
    #[command(flatten)]
    pub afxdp: AfXdpArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more `linerate sweep --json` files.
    #[arg(required = true, num_args = 2..)]
    pub files: Vec<std::path::PathBuf>,
    /// Plot them together (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum LabAction {
    /// Create netns <name>-sink, veth <name>0 <-> <name>1 and the sink on <name>1.
    #[command(after_help = examples::LAB_UP)]
    Up(LabUpArgs),
    /// Remove the lab; safe to run twice.
    #[command(after_help = examples::LAB_DOWN)]
    Down(LabNameArgs),
    /// Show the lab, its DUT and impairments, and what its sink has counted.
    #[command(after_help = examples::LAB_STATUS)]
    Status(LabStatusArgs),
    /// Impair the DUT's egress toward the sink (loss, duplicates, delay, jitter, reorder, rate,
    /// queue limit), replacing what was set before.
    #[command(after_help = examples::LAB_IMPAIR)]
    Impair(LabImpairArgs),
    /// Set what the NAT DUT (`lab up --dut nat`) holds to: its ports (to see them run out), a
    /// session limit, NAT66.
    #[command(after_help = examples::LAB_NAT)]
    Nat(LabNatArgs),
    /// The delay line's process, started by `lab impair` (not for direct use).
    #[command(hide = true)]
    DelayLine(LabNameArgs),
}

/// How the lab's device under test forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DutArg {
    /// Kernel IPv4 routing in netns <name>-dut.
    Router,
    /// A Linux bridge in netns <name>-dut.
    Bridge,
    /// An XDP redirect program (the fast DUT; takes no impairments).
    Xdp,
    /// The router learning its routes by eBGP (BIRD) from both test ports' devices.
    Bgp,
    /// The router with an nftables NAT and conntrack: stateful clients on 100.64.0.0/16
    /// behind it, kernel servers (nginx) in the sink's namespace (no sink there).
    Nat,
}

#[derive(Debug, Args)]
pub struct LabNatArgs {
    #[command(flatten)]
    pub name: LabNameArgs,
    /// The source ports the NAT may translate to, FIRST-LAST, or `any` (the kernel's choice,
    /// the default).
    #[arg(long, value_name = "FIRST-LAST|any", default_value = "any")]
    pub ports: String,
    /// Connections from the inside it lets through at once, as a firewall's session limit (a
    /// new one past it is dropped; IPv4's and IPv6's each), or `none` (the default).
    #[arg(long, value_name = "N|none", default_value = "none")]
    pub limit: String,
    /// Translate IPv6 too (NAT66: masqueraded behind the DUT's address toward the servers,
    /// --ports applied); without it IPv6 is routed through the stateful firewall.
    #[arg(long)]
    pub nat66: bool,
}

#[derive(Debug, Args)]
pub struct LabImpairArgs {
    #[command(flatten)]
    pub name: LabNameArgs,
    /// Share of frames dropped, e.g. 1% (0 to 100).
    #[arg(long, value_name = "P%")]
    pub loss: Option<String>,
    /// Share of frames sent twice, e.g. 0.5% (0 to 100).
    #[arg(long, value_name = "P%")]
    pub duplicate: Option<String>,
    /// Time every frame is held, e.g. 1ms (up to 10s).
    #[arg(long, value_name = "T")]
    pub delay: Option<String>,
    /// Each frame's delay is drawn from delay ± jitter, e.g. 100us (at most the delay).
    #[arg(long, value_name = "T")]
    pub jitter: Option<String>,
    /// Share of frames sent at once, past the delayed ones (needs --delay).
    #[arg(long, value_name = "P%")]
    pub reorder: Option<String>,
    /// Rate limit in bit/s of frame bytes (tbf), its unit named: 100Mbps, 1Gbit.
    #[arg(long, value_name = "R")]
    pub rate: Option<String>,
    /// Queue limit in frames (tbf's queue, or a pfifo alone).
    #[arg(long, value_name = "N")]
    pub limit: Option<String>,
    /// Rate limit of the reverse direction, the DUT's egress toward the sender (tbf), for
    /// bidirectional tests; the other impairments stay on the forward direction.
    #[arg(long, value_name = "R")]
    pub reverse_rate: Option<String>,
    /// Remove every impairment.
    #[arg(long, conflicts_with_all = ["loss", "duplicate", "delay", "jitter", "reorder", "rate", "limit", "reverse_rate"])]
    pub clear: bool,
}

#[derive(Debug, Args)]
pub struct LabNameArgs {
    /// Lab name: 1 to 8 characters of a-z and 0-9.
    #[arg(long, default_value = "lr")]
    pub name: String,
}

#[derive(Debug, Args)]
pub struct LabUpArgs {
    #[command(flatten)]
    pub name: LabNameArgs,
    /// Transmit and receive queues on each end (default: one per CPU).
    #[arg(long)]
    pub queues: Option<u32>,
    /// Put a device under test (netns <name>-dut) between sender and sink; default: none, the
    /// direct pair.
    #[arg(long)]
    pub dut: Option<DutArg>,
}

#[derive(Debug, Args)]
pub struct LabStatusArgs {
    #[command(flatten)]
    pub name: LabNameArgs,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RxArgs {
    /// Interface to receive on.
    #[arg(short, long, value_name = "IFACE")]
    pub interface: String,
    /// Network namespace the interface lives in.
    #[arg(long)]
    pub netns: Option<String>,
    /// Native (drv) or generic (skb) XDP for the receive program.
    #[arg(
        long = "rx-mode",
        alias = "mode",
        value_name = "RX_MODE",
        value_enum,
        default_value = "drv",
        help_heading = RECEIVE
    )]
    pub mode: XdpAttach,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    #[command(flatten)]
    pub receiver: ReceiverArgs,
    /// Print the flows as JSON on stdout at the end.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
}

/// How the receive program is set up; shared by `rx` and `tx --rx`.
#[derive(Debug, Clone, Args)]
pub struct ReceiverArgs {
    /// Flow ids tracked (a table entry each, 128 bytes per CPU); higher ids count as untracked.
    #[arg(long, default_value_t = 4096, value_name = "N", help_heading = RECEIVE)]
    pub rx_flows: u32,
    /// Flow ids (from 0) that also get a latency histogram for percentiles (15 KiB per CPU each).
    #[arg(long, default_value_t = 256, value_name = "N", help_heading = RECEIVE)]
    pub rx_hist_flows: u32,
    /// Clock both ends stamp with: monotonic (one host) or tai (two hosts synced by PTP).
    #[arg(long, value_enum, default_value = "monotonic", help_heading = RECEIVE)]
    pub clock: ClockArg,
    /// Pass the frames on to the stack (for a capture) instead of dropping them.
    #[arg(long, help_heading = RECEIVE)]
    pub rx_pass: bool,
    /// Time every frame's latency, not one frame of each departure stamp (costs a clock read a
    /// frame: docs/receive.md).
    #[arg(long, help_heading = RECEIVE)]
    pub rx_time_every_frame: bool,
    /// Keep the gaps between each flow's arrivals and report them against its mean gap (the
    /// share within ±64…±512 ns, back to back): a clock read a frame. On by itself in `tx`
    /// with a --rate.
    #[arg(long, help_heading = RECEIVE)]
    pub rx_gaps: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    Monotonic,
    Tai,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum XdpAttach {
    Drv,
    Skb,
}

#[derive(Debug, Subcommand)]
pub enum TcpAction {
    /// Open connections from an address range to one HTTP server: each a handshake, GETs
    /// whose every body byte is checked, and a close; counted by how they ended.
    #[command(after_help = examples::TCP_CLIENT)]
    Client(TcpClientArgs),
    /// Answer `GET /<bytes>` on one address and port with that many bytes of the pattern
    /// clients check, until Ctrl-C or --duration.
    #[command(after_help = examples::TCP_SERVER)]
    Server(TcpServerArgs),
    /// The client on one port and linerate's server on another, each on its own thread (and
    /// core with --cores), as a tester with both sides of a device wired runs them: one
    /// command, one report of both ends.
    #[command(after_help = examples::TCP_BOTH)]
    Both(Box<TcpBothArgs>),
}

/// `tcp both`: the client's options as `tcp client` takes them, the server's prefixed.
#[derive(Debug, Args)]
pub struct TcpBothArgs {
    #[command(flatten)]
    pub client: TcpClientArgs,
    /// Interface the server lives on.
    #[arg(long, value_name = "IFACE")]
    pub server_interface: String,
    /// Network namespace the server's interface lives in.
    #[arg(long, value_name = "NETNS")]
    pub server_netns: Option<String>,
    /// The server's own address and on-link prefix length (A.B.C.D/N or X:X::X/N): --server's
    /// address through a NAT or a router, the real server's behind a load balancer's virtual
    /// one. It listens on --server's port.
    #[arg(long, value_name = "ADDR/LEN")]
    pub server_address: String,
    /// The server's gateway, for clients off its network.
    #[arg(long, value_name = "ADDR")]
    pub server_gateway: Option<std::net::IpAddr>,
    /// The server's MAC.
    #[arg(long, default_value = "02:6c:72:00:00:02", value_parser = linerate_wire::parse_mac)]
    pub server_mac: [u8; 6],
    /// The server's 802.1Q VLAN id (1-4094).
    #[arg(long, value_name = "ID")]
    pub server_vlan: Option<u16>,
    /// Connections the server serves at once (one it closed holds its place through its
    /// TIME-WAIT): as `tcp server --concurrent`.
    #[arg(long, default_value_t = 1024)]
    pub server_concurrent: usize,
    /// The server's TIME-WAIT of a connection it closed first (an HTTP server closes first),
    /// as `tcp server --time-wait`.
    #[arg(long, default_value = "10s", value_parser = parse_duration_or_zero)]
    pub server_time_wait: std::time::Duration,
    /// Each of the server's connections' send buffer.
    #[arg(long, default_value = "65536", value_parser = linerate_wire::quantity::parse_count)]
    pub server_send_buffer: u64,
    /// Write the server's counters of every second as CSV (--csv writes the client's).
    #[arg(long, value_name = "FILE")]
    pub server_csv: Option<std::path::PathBuf>,
    /// Plot the server's run (.svg or .png; --plot draws the client's).
    #[arg(long, value_name = "FILE")]
    pub server_plot: Option<std::path::PathBuf>,
    /// The cores the client and the server run on, CLIENT,SERVER (default: where the kernel
    /// puts them).
    #[arg(long, value_name = "CLIENT,SERVER", value_parser = parse_core_pair)]
    pub cores: Option<(usize, usize)>,
}

/// `--cores CLIENT,SERVER`: two different cores.
fn parse_core_pair(s: &str) -> Result<(usize, usize), String> {
    let pair = s
        .split_once(',')
        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
    match pair {
        Some((a, b)) if a != b => Ok((a, b)),
        Some(_) => Err("the client and the server each need their own core".into()),
        None => Err("give the client's core and the server's, e.g. 0,1".into()),
    }
}

#[derive(Debug, Args)]
pub struct TcpClientArgs {
    /// Interface the clients live on.
    #[arg(short, long, value_name = "IFACE")]
    pub interface: String,
    /// Network namespace the interface lives in.
    #[arg(long)]
    pub netns: Option<String>,
    /// The clients' addresses: every host address of the prefix (A.B.C.D/N, or X:X::X/N of
    /// IPv6: all but its first, at most 2^32 - 1), or one address.
    #[arg(long, value_name = "PREFIX")]
    pub src: String,
    /// The clients' gateway and on-link prefix length (A.B.C.D/N or X:X::X/N); without it the
    /// server must be on the --src prefix itself.
    #[arg(long, value_name = "ADDR/LEN")]
    pub gateway: Option<String>,
    /// The HTTP server (A.B.C.D:PORT, or [X:X::X]:PORT with an IPv6 range).
    #[arg(long, value_name = "ADDR:PORT")]
    pub server: std::net::SocketAddr,
    /// The clients' MAC.
    #[arg(long, default_value = "02:6c:72:00:00:01", value_parser = linerate_wire::parse_mac)]
    pub mac: [u8; 6],
    /// The 802.1Q VLAN id of the clients' frames (1-4094): sent tagged, and only frames of that
    /// VLAN seen.
    #[arg(long, value_name = "ID")]
    pub vlan: Option<u16>,
    /// A second VLAN inside --vlan (QinQ): frames then carry --vlan as an 802.1ad service tag
    /// (TPID 0x88a8) and this as the 802.1Q customer tag inside it; only frames of both seen.
    #[arg(long, value_name = "ID", requires = "vlan")]
    pub inner_vlan: Option<u16>,
    /// The outer tag's TPID on stacked VLANs: 0x88a8 (802.1ad), or 0x8100 or 0x9100 as some
    /// older switches want.
    #[arg(long, value_name = "TPID", default_value = "0x88a8", requires = "inner_vlan", value_parser = parse_tpid)]
    pub outer_tpid: u16,
    /// Connections to open in all.
    #[arg(short = 'n', long, default_value = "1000", value_parser = linerate_wire::quantity::parse_count)]
    pub connections: u64,
    /// New connections a second (default: as fast as --concurrent lets); with --duration,
    /// --ramp-up or --ramp-down, the rate the schedule holds.
    #[arg(long, value_name = "CPS")]
    pub rate: Option<f64>,
    /// Open connections at --rate for this long (after any ramp-up): the run's connections are
    /// what the schedule adds up to, not -n.
    #[arg(long, value_parser = parse_duration, conflicts_with = "connections")]
    pub duration: Option<std::time::Duration>,
    /// Raise the connection rate linearly from none to --rate over this long first.
    #[arg(long, value_parser = parse_duration_or_zero, conflicts_with = "connections")]
    pub ramp_up: Option<std::time::Duration>,
    /// Lower it linearly from --rate to none over this long last.
    #[arg(long, value_parser = parse_duration_or_zero, conflicts_with = "connections")]
    pub ramp_down: Option<std::time::Duration>,
    /// Connections open at once, at most.
    #[arg(long, default_value_t = 256)]
    pub concurrent: usize,
    /// GET requests on each connection (keep-alive between them).
    #[arg(long, default_value_t = 1)]
    pub requests: u32,
    /// Body bytes of each response (the request is GET /<bytes>).
    #[arg(long, default_value = "1024", value_parser = linerate_wire::quantity::parse_count)]
    pub response_bytes: u64,
    /// A mix of kinds of connection instead of one, BYTES[xREQUESTS][:WEIGHT],… (e.g.
    /// `1k:8,64kx2:1,1M:1`): each kind a response size, its GETs a connection (1) and its
    /// share of the connections by weight (1), the kinds interleaved; each counted on its own
    /// too.
    #[arg(long, value_name = "KINDS", value_parser = parse_mix,
          conflicts_with_all = ["requests", "response_bytes", "profile"])]
    pub mix: Option<Mix>,
    /// Time between a response and the next request on a connection (it stays open, idle);
    /// with --profile, `recorded` waits before each of the client's turns the pause the
    /// capture shows.
    #[arg(long, value_name = "T|recorded", default_value = "0", value_parser = parse_think)]
    pub think: Think,
    /// Source ports, FIRST-LAST.
    #[arg(long, default_value = "1024-65535")]
    pub src_ports: String,
    /// A connection that makes no progress this long is ended (and counted by its phase).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Each connection's receive buffer, the window it offers (scaled past 64 KiB): memory a
    /// slot holds, and a bound on one connection's goodput (window / round trip).
    #[arg(long, default_value = "65536", value_parser = linerate_wire::quantity::parse_count)]
    pub window: u64,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Replay the first TCP session of this capture (pcap or pcapng) on each connection instead
    /// of the HTTP GET: the client's turns sent, the server's read and checked.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["requests", "response_bytes"])]
    pub profile: Option<std::path::PathBuf>,
    /// How a replay checks the server's turns: every byte as recorded, or only their lengths
    /// (a real server's answers carry dates).
    #[arg(long, value_enum, default_value = "bytes", requires = "profile")]
    pub profile_check: ProfileCheck,
    /// TIME-WAIT of a connection the client closed first (a replay whose client closes first),
    /// at most smoltcp's 10 s; shorter takes the slot back sooner, the connection forgotten
    /// without a segment (as a kernel forgets a TIME-WAIT it has no room for).
    #[arg(long, default_value = "10s", value_parser = parse_duration_or_zero)]
    pub time_wait: std::time::Duration,
    /// Offer no TCP timestamps (RFC 7323; offered by default, as Linux does: a server still
    /// holding a connection's addresses and ports in TIME-WAIT takes a newer one's SYN by them).
    #[arg(long)]
    pub no_timestamps: bool,
    /// Write the counters of every second as CSV (one row a second, and one at the end).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// Plot the run (.svg or .png): connections a second asked and made, connections open,
    /// retransmissions, over time.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// The link's speed (10G, 2.5G, 100M) when the interface does not report it (veth, an
    /// interface in another namespace): a --rate it cannot carry is refused.
    #[arg(long, value_parser = parse_link_speed)]
    pub link_speed: Option<u64>,
}

/// How a replay checks the other side's turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileCheck {
    /// Every byte as recorded (linerate at both ends).
    Bytes,
    /// The recorded number of bytes, whatever they are (a real peer).
    Lengths,
}

#[derive(Debug, Args)]
pub struct TcpServerArgs {
    /// Interface the server lives on.
    #[arg(short, long, value_name = "IFACE")]
    pub interface: String,
    /// Network namespace the interface lives in.
    #[arg(long)]
    pub netns: Option<String>,
    /// The server's address and on-link prefix length (A.B.C.D/N or X:X::X/N).
    #[arg(long, value_name = "ADDR/LEN")]
    pub address: String,
    /// The server's gateway, for clients off its network (of the address's family).
    #[arg(long, value_name = "ADDR")]
    pub gateway: Option<std::net::IpAddr>,
    #[arg(long, default_value_t = 80)]
    pub port: u16,
    /// The server's MAC.
    #[arg(long, default_value = "02:6c:72:00:00:02", value_parser = linerate_wire::parse_mac)]
    pub mac: [u8; 6],
    /// The 802.1Q VLAN id of the server's frames (1-4094): sent tagged, and only frames of that
    /// VLAN seen.
    #[arg(long, value_name = "ID")]
    pub vlan: Option<u16>,
    /// A second VLAN inside --vlan (QinQ), as `tcp client --inner-vlan`.
    #[arg(long, value_name = "ID", requires = "vlan")]
    pub inner_vlan: Option<u16>,
    /// The outer tag's TPID on stacked VLANs, as `tcp client --outer-tpid`.
    #[arg(long, value_name = "TPID", default_value = "0x88a8", requires = "inner_vlan", value_parser = parse_tpid)]
    pub outer_tpid: u16,
    /// With --profile, `recorded` waits before each of the server's turns the pause the
    /// capture shows (its work; from a capture on the client's host, a round trip too).
    #[arg(long, value_name = "recorded", default_value = "0", value_parser = parse_think)]
    pub think: Think,
    /// Body bytes for GET / (GET /<bytes> asks for its own).
    #[arg(long, default_value = "1024", value_parser = linerate_wire::quantity::parse_count)]
    pub response_bytes: u64,
    /// Connections served at once (one the server closed holds its place through TIME-WAIT).
    #[arg(long, default_value_t = 1024)]
    pub concurrent: usize,
    /// Each connection's send buffer (a response's bytes in flight, most of a slot's memory:
    /// --concurrent × this is made at start).
    #[arg(long, default_value = "65536", value_parser = linerate_wire::quantity::parse_count)]
    pub send_buffer: u64,
    /// TIME-WAIT of a connection the server closed first, at most smoltcp's 10 s; shorter
    /// takes the place back sooner, the connection forgotten without a segment (no RST).
    #[arg(long, default_value = "10s", value_parser = parse_duration_or_zero)]
    pub time_wait: std::time::Duration,
    /// Answer no TCP timestamps (RFC 7323; a client's are answered by default, as Linux does).
    #[arg(long)]
    pub no_timestamps: bool,
    /// A connection that makes no progress this long is ended: one stalled mid-transfer, and
    /// one idle between keep-alive requests (nginx's keepalive_timeout, 75 s there).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the counters of every second as CSV (one row a second, and one at the end).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// Plot the run (.svg or .png): connections accepted a second, connections open,
    /// retransmissions, over time.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// Replay the server's side of the first TCP session of this capture (pcap or pcapng)
    /// instead of serving GET /<bytes>: the client's turns read and checked, the server's sent.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<std::path::PathBuf>,
    /// How a replay checks the client's turns: every byte as recorded, or only their lengths
    /// (a real client's requests carry its own name).
    #[arg(long, value_enum, default_value = "bytes", requires = "profile")]
    pub profile_check: ProfileCheck,
}

#[derive(Debug, Args)]
pub struct SinkArgs {
    /// Interface to count on.
    #[arg(short, long, value_name = "IFACE")]
    pub interface: String,
    /// Network namespace the interface lives in.
    #[arg(long)]
    pub netns: Option<String>,
    /// Native (drv) or generic (skb) XDP for the sink program.
    #[arg(
        long = "rx-mode",
        alias = "mode",
        value_name = "RX_MODE",
        value_enum,
        default_value = "drv"
    )]
    pub mode: XdpAttach,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Print the totals as JSON on stdout at the end.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Linux: the fastest path this interface takes, chosen from its driver and kernel
    /// (AF_XDP zero-copy, else live, else AF_XDP copy, else AF_PACKET); the default with -i.
    Auto,
    /// Linux AF_XDP.
    Afxdp,
    /// Linux AF_PACKET TX ring with qdisc bypass: every interface (VLAN, bond, dummy, wireless),
    /// CAP_NET_RAW alone.
    Afpacket,
    /// macOS/BSD /dev/bpf (the default with -i there).
    Bpf,
    /// Linux in-kernel XDP transmit (BPF_PROG_RUN live frames, 5.18+): no skb, no copy.
    Live,
    /// Write frames to a pcap file (--pcap).
    Pcap,
    /// Count and discard: measures the generator alone.
    Null,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtoArg {
    Udp,
    Tcp,
    Icmp,
    /// An ARP request or reply in place of IP (the --arp-… flags).
    Arp,
    /// IP with no L4 header: the payload follows the IP header (protocol 61, IPv6's 59).
    Ip,
    /// Ethernet (and --vlan) with no IP: the payload follows it (ethertype 0xFFFF).
    Ethernet,
}

#[derive(Debug, Args)]
pub struct TxArgs {
    // Declared first so that the help starts with what is sent.
    #[command(flatten)]
    pub stream: StreamArgs,
    #[command(flatten)]
    pub send: SendArgs,
    /// max | 1.5M, 200k (frames/s) | 500Mbps (frame bytes) | 1Gbps-l1 (on the wire) | 50% (of
    /// line rate). Split evenly across workers; applies to every stream of a --stream file.
    #[arg(long, help_heading = PACE)]
    pub rate: Option<String>,
    /// How paced frames leave: precise (each at its own instant, a kick each), sliced (the
    /// frames due within 20 µs together, one kick) or auto (precise where a kick per frame,
    /// as the run measures it on the port, fits a worker's gap: up to 2 Mpps a worker, 50 kpps
    /// on live).
    #[arg(long, value_name = "auto|precise|sliced", help_heading = PACE)]
    pub pacing: Option<linerate_stream::Spacing>,
    /// The gaps between paced frames: even (constant bit rate) or poisson (exponential gaps of
    /// the rate's mean, drawn from the stream's seed).
    #[arg(long, value_name = "even|poisson", help_heading = PACE)]
    pub gaps: Option<linerate_stream::Gaps>,
    /// Frames per burst (with --bursts-per-sec).
    #[arg(long, requires = "bursts_per_sec", value_parser = linerate_wire::quantity::parse_count, help_heading = PACE)]
    pub burst: Option<u64>,
    /// Bursts each second (with --burst).
    #[arg(long, requires = "burst", help_heading = PACE)]
    pub bursts_per_sec: Option<f64>,
    /// Frames to send in all (across workers): 1000000, 1e6 or 1M; default: the stream's own
    /// count, else until stopped.
    #[arg(short = 'n', long, value_parser = linerate_wire::quantity::parse_count, help_heading = PACE)]
    pub count: Option<u64>,
    /// Receive on IFACE[@NETNS] and report per flow loss, order and latency (turns the signature
    /// on); without a value, the lab's receive end (with -i on a lab).
    #[arg(
        long,
        value_name = "IFACE[@NETNS]",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with_all = ["pcap", "null"],
        help_heading = RECEIVE,
        display_order = 0
    )]
    pub rx: Option<String>,
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// Write the run's time series to FILE: a line a second per flow (what its receiver
    /// counted, its rate, loss, latency p50/p99) and per sending port, then each flow's exact
    /// totals; JSON lines, or CSV when FILE ends in .csv.
    #[arg(long, value_name = "FILE", help_heading = RECEIVE)]
    pub stats: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The capture: pcap (µs or ns) or pcapng, Ethernet link type.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Times the capture is sent: a number, or inf (until --count, --duration or Ctrl-C);
    /// default once, or as many times as -n needs when -n is given.
    #[arg(long = "loop", value_name = "N|inf", help_heading = SEND)]
    pub loops: Option<String>,
    /// Rewrite every frame's destination MAC (e.g. a lab's receive end).
    #[arg(long, value_parser = NonEmptyStringValueParser::new(), help_heading = SEND)]
    pub dst_mac: Option<String>,
    /// Rewrite every frame's source MAC.
    #[arg(long, value_parser = NonEmptyStringValueParser::new(), help_heading = SEND)]
    pub src_mac: Option<String>,
    #[command(flatten)]
    pub send: SendArgs,
    /// The capture's own timing scaled (1x, 2.5x, 0.5x), or max: as fast as the port goes.
    #[arg(long, default_value = "1x", conflicts_with = "rate", help_heading = PACE)]
    pub speed: String,
    /// A fixed rate instead of the capture's timing: 1.5M, 200k (frames/s), 500Mbps, 1Gbps-l1,
    /// 50%, max.
    #[arg(long, help_heading = PACE)]
    pub rate: Option<String>,
    /// Frames to send in all (across workers): 1000000, 1e6 or 1M; stops inside a loop when it
    /// comes first.
    #[arg(short = 'n', long, value_parser = linerate_wire::quantity::parse_count, help_heading = PACE)]
    pub count: Option<u64>,
    /// Stream the frames from the mapped file, copying each into a port buffer as it is sent
    /// (live: into the program's ring of frame entries, before each call), even when the
    /// capture would fit the buffers (captures over 65,536 frames or 64 MiB of frames always
    /// stream).
    #[arg(long, help_heading = TUNING)]
    pub from_file: bool,
    /// Receive on IFACE[@NETNS] and count what arrives (a capture carries no signature: the
    /// port's totals); without a value, the lab's receive end (with -i on a lab).
    #[arg(
        long,
        value_name = "IFACE[@NETNS]",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with_all = ["pcap", "null"],
        help_heading = RECEIVE,
        display_order = 0
    )]
    pub rx: Option<String>,
    /// Write the replay's time series to FILE: a line a second for the port, what it sent and
    /// what its receiver counted (a capture carries no flow); JSON lines, or CSV when FILE
    /// ends in .csv.
    #[arg(long, value_name = "FILE", help_heading = RECEIVE)]
    pub stats: Option<PathBuf>,
}

/// The port `tx` and `replay` open beside its interface: the workers' cores, a file port's
/// MTU, the link speed a % rate is of.
#[derive(Debug, Args)]
pub struct PortArgs {
    /// Link speed for % rates and % of line, when the port does not report it: 1G, 10G, 25G,
    /// 40G, 100G, 2.5G, 100M.
    #[arg(long, value_parser = parse_link_speed, help_heading = PACE)]
    pub link_speed: Option<u64>,
    /// One worker per core, e.g. 0,1; worker w of W sends frames w, w+W, … of the plan (of the
    /// capture, for replay). Default: one worker, on the first core this process may run on;
    /// with hosts on several ports, each port's on a free core of its own (a warning when
    /// they must share).
    #[arg(long, value_delimiter = ',', help_heading = TUNING)]
    pub cores: Vec<usize>,
    /// MTU of the pcap and null ports: frames may be MTU + 14 bytes of Ethernet header, + 4 a
    /// VLAN tag.
    #[arg(long, default_value_t = 1500, conflicts_with = "interface", help_heading = WHERE)]
    pub mtu: u32,
}

/// The flags `tx` and `replay` share: the port, its workers, the output and the receive side.
#[derive(Debug, Args)]
pub struct SendArgs {
    /// Interface to transmit on.
    #[arg(short, long, value_name = "IFACE", conflicts_with_all = ["pcap", "null"], help_heading = WHERE)]
    pub interface: Option<String>,
    /// Write the frames to this pcap file instead of an interface.
    #[arg(long, value_name = "FILE", conflicts_with = "null", help_heading = WHERE)]
    pub pcap: Option<PathBuf>,
    /// Count and discard the frames (the generator's own speed).
    #[arg(long, help_heading = WHERE)]
    pub null: bool,
    /// Backend; chosen from -i/--pcap/--null when left out.
    #[arg(long, value_parser = backend(PORT_BACKENDS), help_heading = WHERE)]
    pub backend: Option<Backend>,
    /// Stop after this long, e.g. 10s, 500ms, 2min.
    #[arg(short = 'd', long, value_parser = parse_duration, help_heading = PACE)]
    pub duration: Option<std::time::Duration>,
    /// With --rx: how long to wait for frames still on their way after the last one left.
    #[arg(long, value_parser = parse_duration, default_value = "500ms", help_heading = RECEIVE)]
    pub drain: std::time::Duration,
    /// With --rx IFACE: native (drv) or generic (skb) XDP for the receive program.
    #[arg(long, value_enum, default_value = "drv", help_heading = RECEIVE)]
    pub rx_mode: XdpAttach,
    #[command(flatten)]
    pub receiver: ReceiverArgs,
    /// Print the report as JSON on stdout.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
    /// No live status line on stderr.
    #[arg(short, long, help_heading = OUTPUT)]
    pub quiet: bool,
    /// Add the ring and pacing counters to the report (JSON always has them).
    #[arg(short, long, help_heading = OUTPUT)]
    pub verbose: bool,
    /// The queue each worker drives, when it differs from its position (default 0,1,…).
    #[arg(long, value_delimiter = ',', help_heading = TUNING)]
    pub queues: Option<Vec<u32>>,
    /// Frames per submit.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=2048), help_heading = TUNING)]
    pub batch: u32,
    #[command(flatten)]
    pub afxdp: AfXdpArgs,
    #[command(flatten)]
    pub port: PortArgs,
}

/// How AF_XDP binds (Linux).
#[derive(Debug, Clone, Args)]
pub struct AfXdpArgs {
    /// AF_XDP bind: zero-copy when the driver offers it, else copy (auto); or force one.
    #[arg(long, value_enum, default_value = "auto", help_heading = TUNING)]
    pub xdp_mode: XdpModeArg,
    /// Pass-through XDP program for drivers that need one for zero-copy TX: only when needed
    /// (auto), or always in driver (drv) or generic (skb) mode.
    #[arg(long, value_enum, default_value = "auto", help_heading = TUNING)]
    pub attach: AttachArg,
    /// Kick the kernel after every batch instead of only when the ring asks.
    #[arg(long, help_heading = TUNING)]
    pub no_need_wakeup: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum XdpModeArg {
    Auto,
    Zerocopy,
    Copy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AttachArg {
    Auto,
    Drv,
    Skb,
}

#[derive(Debug, Args)]
pub struct StreamArgs {
    /// A TOML stream file; the template flags below are then refused (the file sets every key).
    #[arg(long, value_name = "FILE.toml", help_heading = SEND)]
    pub stream: Option<PathBuf>,
    // The heading is set here, not on each template flag: every arg after this one names its own.
    #[command(flatten, next_help_heading = SEND)]
    pub template: TemplateFlags,
}

/// The backends that send on an interface here: the only ones `sweep` offers.
#[cfg(target_os = "linux")]
pub const INTERFACE_BACKENDS: &[Backend] = &[
    Backend::Auto,
    Backend::Afxdp,
    Backend::Afpacket,
    Backend::Live,
];
#[cfg(not(target_os = "linux"))]
pub const INTERFACE_BACKENDS: &[Backend] = &[Backend::Bpf];

/// What `tx` and `replay` offer: this platform's interface backends, the pcap and null ports.
const PORT_BACKENDS: &[&[Backend]] = &[INTERFACE_BACKENDS, &[Backend::Pcap, Backend::Null]];

/// `serve` transmits on the config's interfaces, on Linux.
const SERVE_BACKENDS: &[Backend] = &[
    Backend::Auto,
    Backend::Afxdp,
    Backend::Afpacket,
    Backend::Live,
];

/// A `--backend` that offers (in help and completions) only `offered`. The others still parse,
/// hidden, so that the command refuses them with its own line saying what it takes.
pub(crate) fn backend(
    offered: &'static [&'static [Backend]],
) -> impl TypedValueParser<Value = Backend> {
    let values = Backend::value_variants().iter().filter_map(move |b| {
        let value = b.to_possible_value()?;
        Some(value.hide(!offered.iter().any(|o| o.contains(b))))
    });
    PossibleValuesParser::new(values)
        .map(|name| Backend::from_str(&name, false).expect("a possible value names a backend"))
}

/// Reads a link speed (`10G`, `2.5G`, `100M`) into Mbit/s.
pub fn parse_link_speed(text: &str) -> Result<u64, String> {
    text.parse::<linerate_report::LinkSpeed>()
        .map(|l| l.mbps())
        .map_err(|e| e.to_string())
}

/// Reads `10s`, `500ms`, `2min`, `1h` or a bare number of seconds (docs/usage.md, "Numbers and
/// units").
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    linerate_stream::parse_duration(text)
}

/// `tcp client --mix`: its kinds, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix(pub Vec<MixKind>);

/// One kind of `--mix`: a response size, GETs a connection, a weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MixKind {
    pub response_bytes: u64,
    pub requests: u32,
    pub weight: u32,
}

/// Reads `BYTES[xREQUESTS][:WEIGHT],…` (`1k:8,64kx2:1,1M`), sizes as `--response-bytes`
/// takes them; requests and weight 1 when not given.
pub fn parse_mix(text: &str) -> Result<Mix, String> {
    let kinds = text
        .split(',')
        .map(|kind| {
            let bad = |why: &str| {
                format!("{kind:?}: {why}; give BYTES[xREQUESTS][:WEIGHT], e.g. 64kx2:3")
            };
            let (what, weight) = match kind.split_once(':') {
                Some((what, w)) => (what, w.parse().map_err(|_| bad("the weight is a number"))?),
                None => (kind, 1),
            };
            let (bytes, requests) = match what.split_once('x') {
                Some((b, r)) => (b, r.parse().map_err(|_| bad("the requests are a number"))?),
                None => (what, 1),
            };
            let response_bytes = linerate_wire::quantity::parse_count(bytes)
                .map_err(|e| bad(&format!("the size: {e}")))?;
            Ok(MixKind {
                response_bytes,
                requests,
                weight,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Mix(kinds))
}

/// `tcp client --think` and `tcp server --think`: a time, or a replay's own pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Think {
    After(std::time::Duration),
    Recorded,
}

/// A stacked VLAN's outer TPID: 0x88a8, 0x8100 or 0x9100 (hex, the 0x optional).
pub fn parse_tpid(text: &str) -> Result<u16, String> {
    let digits = text.trim_start_matches("0x").trim_start_matches("0X");
    match u16::from_str_radix(digits, 16) {
        Ok(tpid) if [0x88a8, 0x8100, 0x9100].contains(&tpid) => Ok(tpid),
        _ => Err(format!(
            "{text}: an outer TPID is 0x88a8 (802.1ad), 0x8100 or 0x9100"
        )),
    }
}

pub fn parse_think(text: &str) -> Result<Think, String> {
    match text {
        "recorded" => Ok(Think::Recorded),
        _ => parse_duration_or_zero(text).map(Think::After),
    }
}

/// A duration as [`parse_duration`] reads it, or none at all (`0`, `0s`).
pub fn parse_duration_or_zero(text: &str) -> Result<std::time::Duration, String> {
    match text.trim().trim_end_matches('s') {
        "0" => Ok(std::time::Duration::ZERO),
        _ => parse_duration(text),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use linerate_stream::{ArpOp, Proto, StreamSpec};

    use super::*;

    fn template(args: &[&str]) -> TemplateFlags {
        let mut all = vec!["linerate", "tx", "--null"];
        all.extend_from_slice(args);
        match Cli::try_parse_from(all).expect("valid flags").command {
            Command::Tx(tx) => tx.stream.template,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn a_count_is_written_as_any_number_is() {
        for (text, want) in [("1000000", 1_000_000), ("1e6", 1_000_000), ("2.5k", 2_500)] {
            let tx = Cli::try_parse_from(["linerate", "tx", "--null", "-n", text]).unwrap();
            let Command::Tx(tx) = tx.command else {
                panic!("tx");
            };
            assert_eq!(tx.count, Some(want), "{text}");
        }
        let err = Cli::try_parse_from(["linerate", "tx", "--null", "-n", "1.5"]).unwrap_err();
        assert!(err.to_string().contains("whole number"), "{err}");
    }

    /// Every template flag is a key of the stream spec: a renamed spec key or a new flag without
    /// a key fails here, not silently at run time.
    #[test]
    fn every_template_flag_is_a_spec_key() {
        let keys = serde_json::to_value(StreamSpec::default()).unwrap();
        let keys = keys.as_object().unwrap();
        let command = TemplateFlags::augment_args(clap::Command::new("t"));
        let flags: Vec<_> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        assert!(flags.len() >= 14, "{flags:?}");
        for flag in flags {
            assert!(keys.contains_key(flag), "--{flag} is no stream-spec key");
        }
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_land_on_their_keys() {
        let spec = template(&[
            "--size",
            "128",
            "--size-mode",
            "imix",
            "--src-mac",
            "02:00:00:00:00:07",
            "--dst-mac",
            "02:00:00:00:00:08",
            "--src-ip",
            "10.0.0.1",
            "--dst-ip",
            "10.0.0.2",
            "--src-port",
            "7",
            "--dst-port",
            "8",
            "--vlan",
            "5",
            "--proto",
            "tcp",
            "--tcp-flags",
            "SA",
            "--payload",
            "fixed:0xab",
        ])
        .spec()
        .unwrap();
        let expected = StreamSpec {
            size: 128,
            size_mode: "imix".parse().unwrap(),
            src_mac: Some("02:00:00:00:00:07".parse().unwrap()),
            dst_mac: Some("02:00:00:00:00:08".parse().unwrap()),
            src_ip: Some("10.0.0.1".parse().unwrap()),
            dst_ip: Some("10.0.0.2".parse().unwrap()),
            src_port: 7,
            dst_port: 8,
            vlan: Some(5),
            proto: Proto::Tcp,
            tcp_flags: "SA".parse().unwrap(),
            payload: "fixed:0xab".parse().unwrap(),
            ..StreamSpec::seed()
        };
        assert_eq!(spec, expected);
        assert_eq!(template(&[]).spec().unwrap(), StreamSpec::seed());
        let v6 = template(&["--ipv6", "--vary", "src-port:inc:1-2"])
            .spec()
            .unwrap();
        assert!(v6.ipv6);
        assert_eq!(v6.vary, vec!["src-port:inc:1-2".parse().unwrap()]);
        let arp = template(&[
            "--proto",
            "arp",
            "--arp-op",
            "reply",
            "--arp-sender-mac",
            "02:00:00:00:00:0c",
            "--arp-sender-ip",
            "10.0.0.1",
            "--arp-target-mac",
            "02:00:00:00:00:0d",
            "--arp-target-ip",
            "10.0.0.2",
        ])
        .spec()
        .unwrap();
        let expected = StreamSpec {
            proto: Proto::Arp,
            arp_op: ArpOp::Reply,
            arp_sender_mac: Some("02:00:00:00:00:0c".parse().unwrap()),
            arp_sender_ip: Some("10.0.0.1".parse().unwrap()),
            arp_target_mac: Some("02:00:00:00:00:0d".parse().unwrap()),
            arp_target_ip: Some("10.0.0.2".parse().unwrap()),
            // The seed varies the IP identification, which an ARP frame does not have.
            ..StreamSpec::default()
        };
        assert_eq!(arp, expected);
        assert_eq!(
            template(&["--size", "99", "--ipv6"]).given(),
            vec!["ipv6".to_string(), "size".to_string()]
        );
    }

    #[test]
    fn a_mix_reads_sizes_requests_and_weights() {
        let kind = |response_bytes, requests, weight| MixKind {
            response_bytes,
            requests,
            weight,
        };
        assert_eq!(
            parse_mix("1k:8,64kx2:1,1M").unwrap(),
            Mix(vec![
                kind(1000, 1, 8),
                kind(64_000, 2, 1),
                kind(1_000_000, 1, 1)
            ])
        );
        assert_eq!(parse_mix("4096").unwrap(), Mix(vec![kind(4096, 1, 1)]));
        for (bad, why) in [
            ("1k:two", "weight"),
            ("1kxtwo", "requests"),
            ("lots", "size"),
            ("1k,", "size"),
        ] {
            let e = parse_mix(bad).unwrap_err();
            assert!(
                e.contains(why) && e.contains("BYTES[xREQUESTS][:WEIGHT]"),
                "{bad}: {e}"
            );
        }
        // Not beside one size or a recording.
        let client = |extra: &[&str]| {
            let mut all = vec![
                "linerate",
                "tcp",
                "client",
                "-i",
                "x",
                "--src",
                "10.0.1.0/24",
            ];
            all.extend_from_slice(&["--server", "10.0.0.1:80"]);
            all.extend_from_slice(extra);
            Cli::try_parse_from(all)
        };
        client(&["--mix", "1k:3,8k"]).unwrap();
        assert!(client(&["--mix", "1k", "--response-bytes", "2k"]).is_err());
        assert!(client(&["--mix", "1k", "--profile", "a.pcap"]).is_err());
    }
}
