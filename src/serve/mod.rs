//! `linerate serve`: the Open Traffic Generator HTTP API (models v1.60.0, what snappi 1.60.0
//! speaks; docs/otg.md). The OTG side (models, mapping, refusals) is `linerate-otg`; these modules
//! are the HTTP server (axum on hyper, TLS by rustls with a certificate made at start: `listen`,
//! `api`), the state of the one config (here, `config`), and the threads that send, receive and
//! capture (`control`, `metrics`, `capture`). The HTTP side never waits on
//! a worker: a transmit runs on the config's own port thread (a `Session`, opened once per
//! config), the receive program's counters are read from any thread, and a capture is a packet
//! socket read by its own thread.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use axum::http::StatusCode;
use linerate_engine::{Observer, Snapshot};
use linerate_otg as otg;

use crate::cli::{AgentArgs, Backend, ServeArgs};

mod agent;
mod api;
mod capture;
mod config;
mod control;
mod hosts;
mod listen;
mod metrics;
mod remote;

pub(crate) use remote::{Conductor, Controller, Placed, split_hosts};

use api::Fail;
use capture::CaptureState;
use config::PortThread;
use linerate_session::RunReceiver;
use listen::{serve, tls_config};

/// How long a client has to send a request's whole body once its head has arrived.
const BODY_WAIT: Duration = Duration::from_secs(10);
/// How long `stop` waits for the workers to drain before it answers.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// How long a run waits after its last frame for the frames still on their way to the
/// receiver (it ends sooner once every flow has what was sent).
const DRAIN: Duration = Duration::from_millis(500);
/// Frames one capture keeps (about 1.5 GB of 1518-byte frames would be too many for a
/// response; this is the most a pcap answer carries).
const CAPTURE_FRAMES: usize = 1_000_000;
const CAPTURE_BYTES: usize = 256 << 20;

/// The frames a capture kept, with their arrival times.
type Captured = Arc<Mutex<Vec<(SystemTime, Vec<u8>)>>>;

pub fn run(args: ServeArgs) -> Result<()> {
    let controller = remote::Controller::new(&args.controller)?;
    start(args, None, controller)
}

/// `linerate agent`: serve with the agent's routes, its lease and its start clock.
pub fn agent(args: AgentArgs) -> Result<()> {
    agent::check(&args)?;
    let state = agent::AgentState::new(&args);
    start(args.api, Some(state), None)
}

fn start(
    mut args: ServeArgs,
    agent: Option<agent::AgentState>,
    controller: Option<remote::Controller>,
) -> Result<()> {
    if let Some(file) = &args.token_file {
        args.token = Some(read_token(file, "--token-file")?);
    }
    check(&args)?;
    if args.http && args.token.is_some() && !args.listen.ip().is_loopback() {
        eprintln!(
            "linerate serve: warning: --http on {}: the bearer token travels in clear text \
             (drop --http for TLS)",
            args.listen
        );
    }
    let tls = if args.http {
        None
    } else {
        Some(tls_config(&args)?)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("start the HTTP runtime")?;
    let app = Arc::new(App {
        inner: Mutex::new(Inner::default()),
        configuring: tokio::sync::Mutex::new(()),
        owner: owner(&args),
        args,
        agent,
        controller,
    });
    if app.agent.is_some() {
        runtime.spawn(agent::watch(Arc::clone(&app)));
    }
    let result = runtime.block_on(serve(Arc::clone(&app), tls));
    // Ctrl-C or SIGTERM: stop traffic, detach programs (dropping the port thread, the receiver
    // and the captures does both), then exit.
    app.teardown();
    result
}

/// A token kept in a file (a Kubernetes Secret, a file only its owner reads): its first line,
/// trimmed.
pub(crate) fn read_token(file: &std::path::Path, flag: &str) -> Result<String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| crate::usage(format!("{flag} {}: {e}", file.display())))?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    if token.is_empty() {
        return Err(crate::usage(format!(
            "{flag} {}: the file is empty: put the token on its first line",
            file.display()
        )));
    }
    Ok(token)
}

/// Who may drive a loopback listen without a token: the user who started serve (and root), as
/// the kernel's socket table says of the client's end. None: the token (or nothing) decides.
fn owner(args: &ServeArgs) -> Option<u32> {
    let sudo = std::env::var("SUDO_UID").ok();
    (args.listen.ip().is_loopback() && args.token.is_none())
        .then(|| started_by(nix::unistd::geteuid().as_raw(), sudo.as_deref()))
}

/// `sudo linerate serve` was started by the user who ran sudo: their snappi script, run without
/// sudo, is served. Only root's SUDO_UID counts (anyone else's would only name who may use
/// their own unprivileged server).
fn started_by(euid: u32, sudo_uid: Option<&str>) -> u32 {
    match sudo_uid.and_then(|u| u.parse().ok()) {
        Some(uid) if euid == 0 => uid,
        _ => euid,
    }
}

/// Refuses at start what would only fail later (a 500 at the first metrics call, a 413 for every
/// POST, a port thread that cannot pin its worker).
fn check(args: &ServeArgs) -> Result<()> {
    if !args.listen.ip().is_loopback() && args.token.is_none() {
        return Err(crate::usage(format!(
            "--listen {} is reachable from other hosts: give --token T (clients send \
             'Authorization: Bearer T') or listen on 127.0.0.1",
            args.listen
        )));
    }
    // Bytes a header carries as they are: spaces would be trimmed by clients and proxies, and
    // a two-byte character is half the guessing it looks like.
    let printable = |t: &str| t.bytes().all(|b| b.is_ascii_graphic());
    if let Some(t) = args.token.as_deref()
        && (t.len() < 16 || !printable(t))
    {
        return Err(crate::usage(
            "--token needs at least 16 characters, each printable ASCII other than a space \
             (a guessable token guards nothing)",
        ));
    }
    // Checked here, not at the first set_config: a config's ports are interfaces, and the
    // other backends would fail there as a 500 naming flags serve does not have (pcap) or send
    // nowhere (null).
    if let Some(b @ (Backend::Pcap | Backend::Null | Backend::Bpf)) = args.backend {
        return Err(crate::usage(format!(
            "--backend {}: serve transmits on the config's interfaces; use auto, afxdp, afpacket or live",
            clap::ValueEnum::to_possible_value(&b)
                .map_or_else(String::new, |v| v.get_name().to_owned())
        )));
    }
    if args.max_body == 0 {
        return Err(crate::usage(
            "--max-body 0 would refuse every request with a body: give a size in bytes",
        ));
    }
    check_cores(&args.cores)
}

/// Each core once, and each one this process may run on.
fn check_cores(cores: &[usize]) -> Result<()> {
    linerate_session::workers(cores, None, None).map_err(|e| crate::usage(e.to_string()))?;
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .context("read this process's CPU set")?;
    match cores.iter().find(|&&c| !allowed.is_set(c).unwrap_or(false)) {
        Some(c) => Err(crate::usage(format!(
            "--cores {c}: this process may not run on core {c} (it may run on {})",
            (0..nix::sched::CpuSet::count())
                .filter(|&i| allowed.is_set(i).unwrap_or(false))
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ))),
        None => Ok(()),
    }
}

#[derive(Debug)]
struct App {
    inner: Mutex<Inner>,
    /// Held by the set_config that is building a config: a second one at the same time is
    /// refused (409), not interleaved with the first's teardown and setup.
    configuring: tokio::sync::Mutex<()>,
    /// The uid (besides root) a loopback connection must come from; None: any.
    owner: Option<u32>,
    args: ServeArgs,
    /// `linerate agent`: its lease and clock, and what it last heard from its controller.
    agent: Option<agent::AgentState>,
    /// Ports on agents may be configured (`--agent-token-file`).
    controller: Option<remote::Controller>,
}

impl App {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A handler that panicked mid-update leaves the state as it was written: still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn teardown(&self) {
        let old = std::mem::take(&mut *self.lock());
        old.run.stop.store(true, Ordering::Relaxed);
        drop(old);
    }
}

/// The one config and everything made for it. Dropping it stops and detaches all of it.
#[derive(Debug, Default)]
struct Inner {
    config: Option<serde_json::Value>,
    mapped: Option<Arc<otg::Mapped>>,
    port: Option<PortThread>,
    counting: Arc<Counting>,
    run: RunState,
    captures: BTreeMap<String, CaptureState>,
}

#[derive(Debug, Default)]
struct RunState {
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
}

/// What the running (or last) transmit has done, written by its thread.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    running: AtomicBool,
    frames: AtomicU64,
    bytes: AtomicU64,
    started: Mutex<Option<Instant>>,
    ended: Mutex<Option<Instant>>,
    /// Per flow id, frames sent (from the report at the end).
    result: Mutex<Option<RunResult>>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RunResult {
    pub(crate) per_flow: Vec<(u16, u64)>,
    frames: u64,
    bytes: u64,
    /// Per sending port of the session: (its index, frames, bytes).
    per_port: Vec<(usize, u64, u64)>,
    /// Seconds the longest-sending port sent.
    pub(crate) elapsed_s: f64,
    pub(crate) error: Option<String>,
}

impl RunResult {
    fn failed(e: anyhow::Error) -> Self {
        RunResult {
            error: Some(format!("{e:#}")),
            ..RunResult::default()
        }
    }
}

/// Where a config's flows and ports are counted: the session's receivers, and which flow id,
/// sending port and receiver each flow and OTG port has.
#[derive(Debug, Default)]
struct Counting {
    /// The session's receivers, by session port.
    receivers: Vec<Option<Arc<RunReceiver>>>,
    /// Per flow, in the config's order.
    flows: Vec<FlowAt>,
    /// Per OTG port that sends or receives.
    ports: BTreeMap<String, PortAt>,
    /// Ports on agents: their receivers' counts and links come from the agents' statuses
    /// (session ports are then the test bed's, numbered agent by agent).
    remote: Option<Arc<remote::Remote>>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct FlowAt {
    /// Its id in the signature.
    pub(crate) id: u16,
    /// The session port that sends it.
    tx: usize,
    /// The receiver that counts it.
    pub(crate) rx: Option<usize>,
}

#[derive(Debug, Clone, Copy, Default)]
struct PortAt {
    /// The session port it sends as.
    tx: Option<usize>,
    /// Its receiver.
    rx: Option<usize>,
}

impl Counting {
    /// A config without devices: session port 0 sends every flow (ids in config order), and
    /// its receiver, when a flow names a receive port, counts them at that port.
    fn one_port(mapped: &otg::Mapped, rx: Option<Arc<RunReceiver>>) -> Self {
        let counted = rx.is_some().then_some(0);
        let mut ports = BTreeMap::new();
        if let Some(tx) = &mapped.tx_port {
            ports.insert(
                tx.clone(),
                PortAt {
                    tx: Some(0),
                    rx: None,
                },
            );
        }
        if let Some(rx) = &mapped.rx_port {
            ports.insert(
                rx.clone(),
                PortAt {
                    tx: None,
                    rx: counted,
                },
            );
        }
        Counting {
            remote: None,
            receivers: vec![rx],
            flows: (0..mapped.flows.len())
                .map(|i| FlowAt {
                    id: i as u16,
                    tx: 0,
                    rx: counted,
                })
                .collect(),
            ports,
        }
    }
}

impl Observer for Progress {
    fn tick(&self, s: &Snapshot) {
        self.frames.store(s.frames, Ordering::Relaxed);
        self.bytes.store(s.bytes, Ordering::Relaxed);
    }
}

enum Cmd {
    /// Run once: until `stop`, writing `progress`; from the instant `at` on its clock, when
    /// given (an agent's share of a synchronized start).
    Start {
        stop: Arc<AtomicBool>,
        progress: Arc<Progress>,
        at: Option<(linerate_agent::StartClock, u64)>,
    },
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Fail> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![e.to_string()]))
}

fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
}

#[cfg(test)]
mod tests {
    use super::started_by;

    #[test]
    fn the_user_who_ran_sudo_is_the_one_who_started_it() {
        assert_eq!(started_by(0, Some("1000")), 1000);
        assert_eq!(started_by(0, None), 0);
        assert_eq!(started_by(0, Some("x")), 0);
        assert_eq!(started_by(1000, Some("1001")), 1000);
    }
}
