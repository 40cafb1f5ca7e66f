//! `linerate agent`: the routes a controller drives an agent's ports with (the protocol is
//! `linerate-agent`'s), and the lease — an agent whose controller goes silent stops
//! transmitting and detaches everything on its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use linerate_agent::{self as proto, StartClock};

use super::api::Fail;
use super::control::stop_transmit;
use super::metrics::link_up;
use super::{App, Cmd, Inner, RunState, blocking, one_line};
use crate::cli::{AgentArgs, AgentClock};

/// How often the lease is checked.
const LEASE_TICK: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(super) struct AgentState {
    lease: Duration,
    clock: StartClock,
    /// When the controller was last heard from.
    heard: std::sync::Mutex<Instant>,
    /// Why the last setup was dropped by the lease.
    expired: std::sync::Mutex<Option<String>>,
    /// The setup's ports, in session order.
    ports: std::sync::Mutex<Vec<String>>,
    /// The flows that arrive here (what a status reads of the receivers).
    arriving: std::sync::Mutex<Vec<u16>>,
    runs: AtomicU64,
    /// When the current run's first frame was due (0: none).
    started_ns: AtomicU64,
}

impl AgentState {
    pub(super) fn new(args: &AgentArgs) -> Self {
        AgentState {
            lease: args.lease,
            clock: match args.clock {
                AgentClock::Realtime => StartClock::Realtime,
                AgentClock::Tai => StartClock::Tai,
            },
            heard: std::sync::Mutex::new(Instant::now()),
            expired: std::sync::Mutex::new(None),
            ports: std::sync::Mutex::new(Vec::new()),
            arriving: std::sync::Mutex::new(Vec::new()),
            runs: AtomicU64::new(0),
            started_ns: AtomicU64::new(0),
        }
    }

    fn heard_now(&self) {
        *self.heard.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }
}

/// Refuses what only a controller takes, and a lease too short to be renewed.
pub(super) fn check(args: &AgentArgs) -> Result<()> {
    let c = &args.api.controller;
    if c.agent_token_file.is_some() || c.agent_ca.is_some() || c.agent_http || c.strict_sync {
        return Err(crate::usage(
            "--agent-token-file, --agent-ca, --agent-http and --strict-sync are the controller's: \
             give them to linerate serve",
        ));
    }
    if args.lease < Duration::from_millis(500) {
        return Err(crate::usage(format!(
            "--lease {:?}: under 500ms a busy controller would lose its agents; give 1s or more",
            args.lease
        )));
    }
    Ok(())
}

/// The agent's routes, beside the OTG API's.
pub(super) fn routes(router: Router<Arc<App>>) -> Router<Arc<App>> {
    router
        .route(proto::SETUP, post(setup).delete(teardown))
        .route(proto::START, post(start))
        .route(proto::STOP, post(stop))
        .route(proto::STATUS, get(status))
        .route(proto::CLOCK, get(clock))
        .route(proto::NEIGHBOURS, get(neighbours))
        .route(proto::CAPTURE, post(capture))
        .route(proto::CAPTURE_FILE, post(capture_file))
}

/// What each port's hosts learned (OTG get_states at the controller).
async fn neighbours(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    state(&app).heard_now();
    let receivers = app.lock().counting.receivers.clone();
    let ports = blocking(move || {
        receivers
            .iter()
            .map(|r| {
                let Some(r) = r else { return Ok(Vec::new()) };
                Ok(r.hosts()?
                    .neighbours()?
                    .into_iter()
                    .map(|n| proto::Neighbour {
                        addr: n.addr,
                        vlan: n.vlan,
                        mac: n.mac,
                    })
                    .collect())
            })
            .collect::<anyhow::Result<Vec<_>>>()
    })
    .await?
    .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![one_line(&e)]))?;
    Ok(json(&proto::Neighbours { ports }))
}

/// Starts or stops a capture on one of the setup's ports.
async fn capture(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    state(&app).heard_now();
    let c: proto::Capture = serde_json::from_slice(&body).map_err(|e| Fail::bad(e.to_string()))?;
    let location = own_port(&app, &c.port)?;
    if c.start {
        super::capture::start_port(&app, c.port, location).await?;
    } else {
        super::capture::stop_ports(&app, vec![c.port]).await?;
    }
    Ok(json(&serde_json::json!({})))
}

async fn capture_file(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    state(&app).heard_now();
    let c: proto::CaptureFile =
        serde_json::from_slice(&body).map_err(|e| Fail::bad(e.to_string()))?;
    own_port(&app, &c.port)?;
    let format = if c.pcapng {
        linerate_otg::CaptureFormat::Pcapng
    } else {
        linerate_otg::CaptureFormat::Pcap
    };
    super::capture::capture_file(&app, &c.port, format, &c.port).await
}

/// `port` when it is one of the setup's ports (nothing else is the controller's to capture).
fn own_port(app: &App, port: &str) -> Result<linerate_otg::Location, Fail> {
    let ports = state(app)
        .ports
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if !ports.iter().any(|p| p == port) {
        return Err(Fail::bad(format!(
            "port {port:?} is not one of this agent's set-up ports ({})",
            ports.join(", ")
        )));
    }
    linerate_otg::Location::parse(port).ok_or_else(|| Fail::bad(format!("port {port:?}")))
}

fn state(app: &App) -> &AgentState {
    app.agent
        .as_ref()
        .expect("agent routes are only routed on an agent")
}

fn json<T: serde::Serialize>(value: &T) -> Response {
    axum::Json(value).into_response()
}

async fn setup(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    let agent = state(&app);
    agent.heard_now();
    let Ok(_building) = app.configuring.try_lock() else {
        return Err(Fail::conflict("another setup is being applied"));
    };
    let setup: proto::Setup =
        serde_json::from_slice(&body).map_err(|e| Fail::bad(e.to_string()))?;
    let old = take(&app)?;
    *agent.arriving.lock().unwrap_or_else(|p| p.into_inner()) = setup.arriving.clone();
    let args = Arc::clone(&app);
    let clock = match agent.clock {
        StartClock::Realtime => linerate_session::Clock::Monotonic,
        StartClock::Tai => linerate_session::Clock::Tai,
    };
    let made = blocking(move || {
        drop(old);
        super::hosts::start_agent(&args.args, setup, clock)
    })
    .await?
    .map_err(|e| Fail::bad(one_line(&e)))?;
    let (port, counting, ports) = made;
    *agent.ports.lock().unwrap_or_else(|p| p.into_inner()) = ports.clone();
    *agent.expired.lock().unwrap_or_else(|p| p.into_inner()) = None;
    {
        let mut inner = app.lock();
        inner.port = Some(port);
        inner.counting = Arc::new(counting);
    }
    agent.heard_now();
    Ok(json(&proto::SetupReply {
        ports,
        clock: agent.clock,
    }))
}

/// Takes the setup out of the state (refused while it transmits).
fn take(app: &App) -> Result<Inner, Fail> {
    let mut inner = app.lock();
    if inner.run.progress.running.load(Ordering::Acquire) {
        return Err(Fail::conflict(
            "traffic is being transmitted: stop it first",
        ));
    }
    Ok(std::mem::take(&mut *inner))
}

async fn teardown(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    state(&app).heard_now();
    stop_transmit(&app).await?;
    let old = take(&app)?;
    blocking(move || drop(old)).await?;
    state(&app)
        .ports
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
    Ok(json(&serde_json::json!({})))
}

async fn start(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    let agent = state(&app);
    agent.heard_now();
    let start: proto::Start =
        serde_json::from_slice(&body).map_err(|e| Fail::bad(e.to_string()))?;
    let receivers = {
        let inner = app.lock();
        if inner.port.is_none() {
            return Err(Fail::bad("nothing is set up: POST a setup first"));
        }
        if inner.run.progress.running.load(Ordering::Acquire) {
            return Err(Fail::conflict("traffic is already being transmitted"));
        }
        inner.counting.receivers.clone()
    };
    // Cleared now, before the instant every agent shares: frames an agent whose clock runs a
    // little ahead sends here are this run's, not wiped by this agent's own start.
    blocking(move || receivers.iter().flatten().try_for_each(|rx| rx.reset()))
        .await?
        .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![e.to_string()]))?;
    let mut inner = app.lock();
    inner.run = RunState::default();
    let progress = Arc::clone(&inner.run.progress);
    progress.running.store(true, Ordering::Release);
    *progress.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    let runs = agent.runs.fetch_add(1, Ordering::AcqRel) + 1;
    agent.started_ns.store(
        start.at_ns.unwrap_or_else(|| agent.clock.now_ns()),
        Ordering::Release,
    );
    let cmd = Cmd::Start {
        stop: Arc::clone(&inner.run.stop),
        progress: Arc::clone(&progress),
        at: start.at_ns.map(|at| (agent.clock, at)),
    };
    let sent = inner
        .port
        .as_ref()
        .and_then(|p| p.cmd.as_ref())
        .map(|c| c.send(cmd));
    if !matches!(sent, Some(Ok(()))) {
        progress.running.store(false, Ordering::Release);
        return Err(Fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            vec!["the ports' thread is gone: set up again".into()],
        ));
    }
    Ok(json(&proto::Started { runs }))
}

async fn stop(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    state(&app).heard_now();
    stop_transmit(&app).await?;
    Ok(json(&serde_json::json!({})))
}

async fn status(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    let agent = state(&app);
    agent.heard_now();
    let (configured, progress, receivers) = {
        let inner = app.lock();
        (
            inner.port.is_some(),
            Arc::clone(&inner.run.progress),
            inner.counting.receivers.clone(),
        )
    };
    let ports = agent
        .ports
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let arriving = agent
        .arriving
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let (rx, links) = blocking(move || {
        let rx = receivers
            .iter()
            .map(|r| r.as_ref().map(|r| r.read_flows(&arriving)).transpose())
            .collect::<Result<Vec<_>, _>>();
        let links: Vec<bool> = ports
            .iter()
            .map(|p| linerate_otg::Location::parse(p).is_some_and(|l| link_up(&l)))
            .collect();
        (rx, links)
    })
    .await?;
    let rx = rx.map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![e.to_string()]))?;
    let result = progress
        .result
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .map(|r| proto::RunResult {
            per_flow: r.per_flow,
            per_port: r.per_port,
            frames: r.frames,
            bytes: r.bytes,
            elapsed_s: r.elapsed_s,
            error: r.error,
        });
    let started = agent.started_ns.load(Ordering::Acquire);
    Ok(json(&proto::Status {
        configured,
        runs: agent.runs.load(Ordering::Acquire),
        running: progress.running.load(Ordering::Acquire),
        frames: progress.frames.load(Ordering::Relaxed),
        bytes: progress.bytes.load(Ordering::Relaxed),
        started_ns: (started != 0).then_some(started),
        result,
        rx,
        links,
        lease_expired: agent
            .expired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone(),
    }))
}

async fn clock(State(app): State<Arc<App>>) -> Response {
    let agent = state(&app);
    let received_ns = agent.clock.now_ns();
    agent.heard_now();
    json(&proto::ClockReading {
        clock: agent.clock,
        received_ns,
        sent_ns: agent.clock.now_ns(),
    })
}

/// Drops the setup once the controller has been silent longer than the lease: its traffic
/// stops, its programs detach, and the agent says so.
pub(super) async fn watch(app: Arc<App>) {
    let agent = state(&app);
    let mut tick = tokio::time::interval(LEASE_TICK);
    loop {
        tick.tick().await;
        let silent = agent
            .heard
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed();
        if silent <= agent.lease {
            continue;
        }
        let old = {
            let mut inner = app.lock();
            if inner.port.is_none() {
                continue;
            }
            inner.run.stop.store(true, Ordering::Relaxed);
            std::mem::take(&mut *inner)
        };
        let why = format!(
            "the controller was silent for {:.1} s (lease {:?}): stopped transmitting and \
             released every port",
            silent.as_secs_f64(),
            agent.lease
        );
        eprintln!("linerate agent: {why}");
        // The port thread finishes its run (the stop flag) and detaches as it is dropped.
        let _ = blocking(move || drop(old)).await;
        agent
            .ports
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *agent.expired.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }
}
