//! `linerate serve`: the Open Traffic Generator HTTP API (models v1.60.0, what snappi 1.60.0
//! speaks; docs/otg.md). The OTG side (models, mapping, refusals) is `linerate-otg`; this file is
//! the HTTP server (axum on hyper, TLS by rustls with a certificate made at start), the state of
//! the one config, and the threads that send, receive and capture. The HTTP side never waits on
//! a worker: a transmit runs on the config's own port thread (a `Session`, opened once per
//! config), the receive program's counters are read from any thread, and a capture is a packet
//! socket read by its own thread.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use linerate_engine::{Observer, Snapshot};
use linerate_otg as otg;
use linerate_rx::RxTotals;

use linerate_session::{
    End, PortOptions, ReceiverOptions, RunOptions, RunReceiver, RxAttach, RxTarget, Session,
};

use crate::cli::{Backend, ServeArgs};

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
    if !args.listen.ip().is_loopback() && args.token.is_none() {
        return Err(crate::usage(format!(
            "--listen {} is reachable from other hosts: give --token T (clients send \
             'Authorization: Bearer T') or listen on 127.0.0.1",
            args.listen
        )));
    }
    if args.token.as_deref().is_some_and(|t| t.len() < 16) {
        return Err(crate::usage(
            "--token needs at least 16 characters (a guessable token guards nothing)",
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
        args,
    });
    let result = runtime.block_on(serve(Arc::clone(&app), tls));
    // Ctrl-C or SIGTERM: stop traffic, detach programs (dropping the port thread, the receiver
    // and the captures does both), then exit.
    app.teardown();
    result
}

fn tls_config(args: &ServeArgs) -> Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let (certs, key) = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| crate::usage(format!("--tls-cert {}: {e}", cert.display())))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| crate::usage(format!("--tls-key {}: {e}", key.display())))?;
            (certs, key)
        }
        _ => {
            // ixia-c's habit: a self-signed certificate made at start (snappi: verify=False).
            let names = vec!["localhost".to_string(), args.listen.ip().to_string()];
            let made = rcgen::generate_simple_self_signed(names)
                .context("make a self-signed certificate")?;
            let key =
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
            (vec![made.cert.der().clone()], key)
        }
    };
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("TLS versions")?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .context("TLS certificate and key")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

async fn serve(app: Arc<App>, tls: Option<Arc<rustls::ServerConfig>>) -> Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;

    let listener = tokio::net::TcpListener::bind(app.args.listen)
        .await
        .with_context(|| format!("listen on {}", app.args.listen))?;
    let local = listener.local_addr()?;
    // One line a script can wait for (the port, when --listen asked for port 0).
    eprintln!(
        "linerate serve: OTG API {} on {}://{local}",
        otg::API_SPEC_VERSION,
        if tls.is_some() { "https" } else { "http" }
    );
    let router = router(Arc::clone(&app));
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("install the SIGTERM handler")?;
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("linerate serve: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            // A client that never finishes its headers holds a task, not the server.
            http.timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30));
            let served = match acceptor {
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await;
                    match handshake {
                        Ok(Ok(stream)) => {
                            http.serve_connection(TokioIo::new(stream), service).await
                        }
                        _ => return,
                    }
                }
                None => http.serve_connection(TokioIo::new(tcp), service).await,
            };
            drop(served);
        });
    }
    eprintln!("linerate serve: stopping");
    Ok(())
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/config", post(set_config).get(get_config))
        .route("/control/state", post(set_control_state))
        .route("/monitor/metrics", post(get_metrics))
        .route("/monitor/capture", post(get_capture))
        .route("/capabilities/version", get(get_version))
        .fallback(|| async {
            otg_error(
                StatusCode::NOT_FOUND,
                "validation",
                vec!["no such OTG endpoint here (docs/otg.md lists what linerate serves)".into()],
            )
        })
        .method_not_allowed_fallback(|| async {
            otg_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "validation",
                vec![
                    "not served here: update_config, append_config and delete_config are not \
                     supported (set the whole config again with POST /config)"
                        .into(),
                ],
            )
        })
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&app), auth))
        .layer(DefaultBodyLimit::max(app.args.max_body))
        .with_state(app)
}

/// Every request carries the bearer token when the server was given one; compared in constant
/// time so the answer's timing tells nothing about the token.
async fn auth(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    use subtle::ConstantTimeEq;
    if let Some(token) = &app.args.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            return otg_error(
                StatusCode::UNAUTHORIZED,
                "validation",
                vec!["missing or wrong bearer token (Authorization: Bearer …)".into()],
            );
        }
    }
    next.run(req).await
}

fn otg_error(status: StatusCode, kind: &str, errors: Vec<String>) -> Response {
    let body = otg::ErrorBody {
        code: i32::from(status.as_u16()),
        kind: kind.into(),
        errors,
    };
    (status, axum::Json(body)).into_response()
}

/// An answer that is not a success: a 4xx for what the client asked, a 5xx for the system.
#[derive(Debug)]
struct Fail(StatusCode, Vec<String>);

impl Fail {
    fn bad(why: impl Into<String>) -> Self {
        Fail(StatusCode::BAD_REQUEST, vec![why.into()])
    }
    fn conflict(why: impl Into<String>) -> Self {
        Fail(StatusCode::CONFLICT, vec![why.into()])
    }
}

impl From<otg::Refusals> for Fail {
    fn from(r: otg::Refusals) -> Self {
        Fail(
            StatusCode::BAD_REQUEST,
            r.0.iter().map(ToString::to_string).collect(),
        )
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        let kind = if self.0.is_server_error() {
            "internal"
        } else {
            "validation"
        };
        otg_error(self.0, kind, self.1)
    }
}

fn warnings() -> Response {
    axum::Json(otg::Warning::default()).into_response()
}

#[derive(Debug)]
struct App {
    inner: Mutex<Inner>,
    args: ServeArgs,
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
    rx: Option<Arc<RunReceiver>>,
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
struct Progress {
    running: AtomicBool,
    frames: AtomicU64,
    bytes: AtomicU64,
    started: Mutex<Option<Instant>>,
    ended: Mutex<Option<Instant>>,
    /// Per flow id, frames sent (from the report at the end).
    result: Mutex<Option<RunResult>>,
}

#[derive(Debug, Clone, Default)]
struct RunResult {
    per_flow: Vec<(u16, u64)>,
    frames: u64,
    bytes: u64,
    error: Option<String>,
}

impl Observer for Progress {
    fn tick(&self, s: &Snapshot) {
        self.frames.store(s.frames, Ordering::Relaxed);
        self.bytes.store(s.bytes, Ordering::Relaxed);
    }
}

enum Cmd {
    Start(Arc<AtomicBool>, Arc<Progress>),
}

/// The thread that owns the transmit port of a config: it opens the port and compiles the plan
/// once, then runs the plan each time it is told to start. Dropping the handle ends it (the
/// port and its programs go with it).
#[derive(Debug)]
struct PortThread {
    cmd: Option<mpsc::Sender<Cmd>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for PortThread {
    fn drop(&mut self) {
        self.cmd.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl PortThread {
    /// Opens the config's session (its transmit port and, when a flow names a receive port,
    /// the receive program there) and compiles its flows, on the thread that will run them;
    /// returns once that is done, with the receiver's handle for reading counts from any thread.
    fn start(
        app: &ServeArgs,
        mapped: Arc<otg::Mapped>,
    ) -> Result<(PortThread, Option<Arc<RunReceiver>>)> {
        let tx_name = mapped.tx_port.clone().context("no flows")?;
        let port = mapped.port(&tx_name).context("tx port")?.clone();
        let mut options = PortOptions::interface(&port.location.iface);
        // serve keeps AF_XDP unless told: its runs are the OTG client's, not auto's to reroute.
        options.backend = app
            .backend
            .map_or(linerate_session::Backend::Afxdp, Into::into);
        options.afxdp = (&app.afxdp).into();
        options.cores = app.cores.clone();
        options.link_speed = port.link_mbps;
        let (ready_tx, ready_rx) = mpsc::channel::<Result<Option<Arc<RunReceiver>>>>();
        let (cmd_tx, cmd_rx) = mpsc::channel::<Cmd>();
        let thread = std::thread::Builder::new()
            .name("otg-port".into())
            .spawn(move || {
                let setup = || -> Result<_> {
                    let mut session = Session::open(std::slice::from_ref(&options))
                        .with_context(|| format!("port '{}' ({})", port.name, port.location))?;
                    let tx = session.port_mut(0);
                    if let Some(target) = rx_target(&mapped, &port.location.iface)? {
                        tx.receive(&target).context("the receive port")?;
                    }
                    let plan = tx.compile(&mapped.streams).context("flows")?;
                    Ok((session, plan))
                };
                let (mut session, plan) = match setup() {
                    Ok((session, plan)) => {
                        let _ = ready_tx.send(Ok(session.port(0).rx_handle()));
                        (session, plan)
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Ok(Cmd::Start(stop, progress)) = cmd_rx.recv() {
                    let run = RunOptions {
                        end: End {
                            duration: mapped.duration,
                            count: None,
                        },
                        stop: &stop,
                        observer: progress.as_ref(),
                        drain: DRAIN,
                    };
                    let outcome = session.port_mut(0).run_plan(&plan, run);
                    let result = match outcome {
                        Ok(o) => RunResult {
                            per_flow: o.sent.iter().map(|(id, _, n)| (*id, *n)).collect(),
                            frames: o.report.completed,
                            bytes: o.report.bytes,
                            error: None,
                        },
                        Err(e) => RunResult {
                            error: Some(format!("{:#}", anyhow::Error::from(e))),
                            ..RunResult::default()
                        },
                    };
                    progress.frames.store(result.frames, Ordering::Relaxed);
                    progress.bytes.store(result.bytes, Ordering::Relaxed);
                    *progress.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                    *progress.ended.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(Instant::now());
                    progress.running.store(false, Ordering::Release);
                }
            })
            .context("start the port thread")?;
        let handle = PortThread {
            cmd: Some(cmd_tx),
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(Ok(rx)) => Ok((handle, rx)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(anyhow::anyhow!("the port thread ended before it was ready")),
        }
    }
}

/// Where the receive program goes: the lab's receive end (no `at`: the lab's sink is swapped out
/// while the config lasts and comes back when it is dropped) or `IFACE@NETNS`; None when no
/// flow names a receive port.
fn rx_target(mapped: &otg::Mapped, tx_iface: &str) -> Result<Option<RxTarget>> {
    let Some(rx) = mapped.rx_port.as_deref().and_then(|r| mapped.port(r)) else {
        return Ok(None);
    };
    let lab_end = linerate_session::lab_of(tx_iface)?.is_some_and(|lab| {
        lab.receiver == rx.location.iface && rx.location.netns.as_deref() == Some(&lab.netns)
    });
    Ok(Some(RxTarget {
        at: (!lab_end).then(|| rx.location.to_string()),
        attach: RxAttach::Drv,
        receiver: ReceiverOptions {
            // A capture on the receive port needs the frames to reach the stack.
            pass: rx.capture,
            ..ReceiverOptions::default()
        },
    }))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Fail> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![e.to_string()]))
}

fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
}

async fn set_config(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    let config = otg::parse_config(&body)?;
    let mapped = Arc::new(otg::map_config(&config)?);
    if let Some(tx) = mapped.tx_port.as_deref().and_then(|t| mapped.port(t))
        && tx.location.netns.is_some()
    {
        return Err(Fail::bad(format!(
            "the transmit port '{}' is in a network namespace ({}): linerate serve sends from \
             its own namespace; give the interface there",
            tx.name, tx.location
        )));
    }
    let raw: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| Fail::bad(e.to_string()))?;
    let old = {
        let mut inner = app.lock();
        if inner.run.progress.running.load(Ordering::Acquire) {
            return Err(Fail::conflict(
                "traffic is being transmitted: stop it (set_control_state flow_transmit stop) \
                 before set_config",
            ));
        }
        std::mem::take(&mut *inner)
    };
    let args = Arc::clone(&app);
    let made = blocking(
        move || -> Result<(Option<PortThread>, Option<Arc<RunReceiver>>)> {
            // The old config's port, receiver and captures go first: the new one may use them.
            drop(old);
            match mapped.tx_port {
                Some(_) => {
                    let (port, rx) = PortThread::start(&args.args, Arc::clone(&mapped))?;
                    Ok((Some(port), rx))
                }
                None => Ok((None, None)),
            }
        },
    )
    .await?;
    let (port, rx) = made.map_err(|e| Fail::bad(one_line(&e)))?;
    let mapped = otg::map_config(&config)?;
    let mut inner = app.lock();
    inner.captures = mapped
        .ports
        .iter()
        .filter(|p| p.capture)
        .map(|p| (p.name.clone(), CaptureState::default()))
        .collect();
    inner.mapped = Some(Arc::new(mapped));
    inner.config = Some(raw);
    inner.port = port;
    inner.rx = rx;
    Ok(warnings())
}

async fn get_config(State(app): State<Arc<App>>) -> Response {
    let config = app
        .lock()
        .config
        .clone()
        .unwrap_or_else(|| serde_json::json!({}));
    axum::Json(config).into_response()
}

async fn get_version() -> Response {
    axum::Json(otg::Version {
        api_spec_version: otg::API_SPEC_VERSION.into(),
        sdk_version: otg::API_SPEC_VERSION.into(),
        app_version: env!("CARGO_PKG_VERSION").into(),
    })
    .into_response()
}

async fn set_control_state(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    let state: otg::ControlState = otg::parse_json(&body)?;
    let rest_refusal = |path: &str, rest: &otg::Rest| -> Result<(), Fail> {
        match rest.iter().find(|(_, v)| !v.is_null()) {
            Some((k, _)) => Err(Fail::bad(format!("{path}.{k}: not supported by linerate"))),
            None => Ok(()),
        }
    };
    rest_refusal("body", &state.rest)?;
    match (state.choice.as_deref(), &state.traffic, &state.port) {
        (Some("traffic") | None, Some(t), _) => {
            rest_refusal("traffic", &t.rest)?;
            match (t.choice.as_deref(), &t.flow_transmit) {
                (Some("flow_transmit") | None, Some(ft)) => flow_transmit(&app, ft).await,
                (choice, _) => Err(Fail::bad(format!(
                    "traffic.choice: '{}' is not supported (flow_transmit is)",
                    choice.unwrap_or("")
                ))),
            }
        }
        (Some("port") | None, _, Some(p)) => {
            rest_refusal("port", &p.rest)?;
            match (p.choice.as_deref(), &p.capture) {
                (Some("capture") | None, Some(c)) => capture_state(&app, c).await,
                (choice, _) => Err(Fail::bad(format!(
                    "port.choice: '{}' is not supported (capture is; links are the interfaces' own)",
                    choice.unwrap_or("")
                ))),
            }
        }
        (choice, _, _) => Err(Fail::bad(format!(
            "choice: '{}' is not supported: linerate has traffic and port capture states (no protocols)",
            choice.unwrap_or("")
        ))),
    }
}

async fn flow_transmit(
    app: &Arc<App>,
    ft: &otg::StateTrafficFlowTransmit,
) -> Result<Response, Fail> {
    let mapped = app
        .lock()
        .mapped
        .clone()
        .ok_or_else(|| Fail::bad("no config: set_config first"))?;
    for (i, name) in ft.flow_names.iter().enumerate() {
        if !mapped.flows.iter().any(|f| &f.name == name) {
            return Err(Fail::bad(format!(
                "traffic.flow_transmit.flow_names[{i}]: no flow is named '{name}'"
            )));
        }
    }
    if !ft.flow_names.is_empty() && ft.flow_names.len() != mapped.flows.len() {
        return Err(Fail::bad(
            "traffic.flow_transmit.flow_names: linerate starts and stops every flow of the \
             config together (name them all, or none)",
        ));
    }
    match ft.state.as_deref() {
        Some("start") => {
            if mapped.flows.is_empty() {
                return Err(Fail::bad("the config has no flows to transmit"));
            }
            // The session clears the receiver's counts as the run begins: they are this run's.
            let mut inner = app.lock();
            if inner.run.progress.running.load(Ordering::Acquire) {
                return Err(Fail::conflict("traffic is already being transmitted"));
            }
            inner.run = RunState::default();
            let progress = Arc::clone(&inner.run.progress);
            progress.running.store(true, Ordering::Release);
            *progress.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            let stop = Arc::clone(&inner.run.stop);
            let sent = inner
                .port
                .as_ref()
                .and_then(|p| p.cmd.as_ref())
                .map(|c| c.send(Cmd::Start(stop, progress.clone())));
            if !matches!(sent, Some(Ok(()))) {
                progress.running.store(false, Ordering::Release);
                return Err(Fail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    vec!["the transmit port is gone: set_config again".into()],
                ));
            }
            Ok(warnings())
        }
        Some("stop") => {
            let progress = {
                let inner = app.lock();
                inner.run.stop.store(true, Ordering::Relaxed);
                Arc::clone(&inner.run.progress)
            };
            // Answer once the workers have drained, so the next metrics are final.
            blocking(move || {
                let deadline = Instant::now() + STOP_WAIT;
                while progress.running.load(Ordering::Acquire) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
            .await?;
            Ok(warnings())
        }
        Some("pause" | "resume") => Err(Fail::bad(
            "traffic.flow_transmit.state: pause and resume are not supported (linerate's engine \
             cannot hold a run mid-way): stop, then start again",
        )),
        other => Err(Fail::bad(format!(
            "traffic.flow_transmit.state: '{}' is not start, stop, pause or resume",
            other.unwrap_or("")
        ))),
    }
}

async fn get_metrics(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    let req: otg::MetricsRequest = otg::parse_json(&body)?;
    let (mapped, rx, progress, captures) = {
        let inner = app.lock();
        let captures: BTreeMap<String, bool> = inner
            .captures
            .iter()
            .map(|(k, c)| {
                let failed = c.failed.lock().unwrap_or_else(|p| p.into_inner()).is_some();
                (k.clone(), c.running.is_some() && !failed)
            })
            .collect();
        (
            inner
                .mapped
                .clone()
                .ok_or_else(|| Fail::bad("no config: set_config first"))?,
            inner.rx.clone(),
            Arc::clone(&inner.run.progress),
            captures,
        )
    };
    let failed = progress
        .result
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|r| r.error.clone());
    if let Some(e) = failed {
        return Err(Fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            vec![format!("the last transmit failed: {e}")],
        ));
    }
    // The receive program's maps are read off the runtime's threads.
    let totals = match rx {
        Some(rx) => Some(
            blocking(move || rx.read())
                .await?
                .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![e.to_string()]))?,
        ),
        None => None,
    };
    let locations: Vec<_> = mapped
        .ports
        .iter()
        .map(|p| (p.name.clone(), p.location.clone()))
        .collect();
    let links: BTreeMap<String, bool> = blocking(move || {
        locations
            .into_iter()
            .map(|(name, location)| (name, link_up(&location)))
            .collect()
    })
    .await?;
    let view = View {
        mapped: &mapped,
        totals: totals.as_ref(),
        progress: &progress,
        captures: &captures,
        links: &links,
    };
    let response = match (req.choice.as_deref(), &req.flow, &req.port) {
        (Some("flow") | None, Some(f), _) => {
            for (i, name) in f.flow_names.iter().enumerate() {
                if !mapped.flows.iter().any(|g| &g.name == name) {
                    return Err(Fail::bad(format!(
                        "flow.flow_names[{i}]: no flow is named '{name}'"
                    )));
                }
            }
            otg::MetricsResponse {
                choice: "flow_metrics".into(),
                flow_metrics: Some(view.flows(&f.flow_names)),
                port_metrics: None,
            }
        }
        (Some("port") | None, _, p) => {
            let names = p.as_ref().map(|p| p.port_names.clone()).unwrap_or_default();
            for (i, name) in names.iter().enumerate() {
                if mapped.port(name).is_none() {
                    return Err(Fail::bad(format!(
                        "port.port_names[{i}]: no port is named '{name}'"
                    )));
                }
            }
            otg::MetricsResponse {
                choice: "port_metrics".into(),
                port_metrics: Some(view.ports(&names)),
                flow_metrics: None,
            }
        }
        (Some(other), _, _) => {
            return Err(Fail::bad(format!(
                "choice: '{other}' metrics are not supported (port and flow are)"
            )));
        }
    };
    Ok(axum::Json(response).into_response())
}

/// Bytes (FCS included) of `frames` frames of a stream: its size schedule's sum for each whole
/// lap, its first sizes for the rest (a lap's order is what the plan sends).
fn bytes_of(spec: &linerate_stream::StreamSpec, frames: u64) -> u64 {
    let schedule = spec.size_mode.with_size(spec.size).schedule(spec.seed);
    let lap: u64 = schedule.iter().map(|&s| s as u64).sum();
    let len = schedule.len().max(1) as u64;
    let rest: u64 = schedule[..(frames % len) as usize]
        .iter()
        .map(|&s| s as u64)
        .sum();
    frames / len * lap + rest
}

#[cfg(test)]
mod tests {
    use super::bytes_of;
    use linerate_stream::StreamSpec;

    #[test]
    fn a_flows_bytes_follow_its_size_schedule_lap_by_lap() {
        let spec = |size_mode: &str| StreamSpec {
            size: 64,
            size_mode: size_mode.parse().unwrap(),
            ..StreamSpec::default()
        };
        assert_eq!(bytes_of(&spec("fixed"), 10), 640);
        // 64, 96, 128, 64, 96: two whole laps and two more.
        assert_eq!(bytes_of(&spec("inc:64-128:32"), 8), 2 * 288 + 64 + 96);
        // IMIX 7 × 64, 4 × 570, 1 × 1518 in a lap of 12, whatever its order.
        assert_eq!(
            bytes_of(&spec("imix:64x7,570x4,1518x1"), 24),
            2 * (7 * 64 + 4 * 570 + 1518)
        );
    }
}

/// What the metrics are read from at one moment.
struct View<'a> {
    mapped: &'a otg::Mapped,
    totals: Option<&'a RxTotals>,
    progress: &'a Progress,
    captures: &'a BTreeMap<String, bool>,
    /// Each port's link, up or not, read when the metrics were asked for.
    links: &'a BTreeMap<String, bool>,
}

impl View<'_> {
    fn running(&self) -> bool {
        self.progress.running.load(Ordering::Acquire)
    }

    /// Seconds the run has lasted (to now while it runs).
    fn elapsed(&self) -> Option<f64> {
        let started = (*self
            .progress
            .started
            .lock()
            .unwrap_or_else(|p| p.into_inner()))?;
        let ended = *self
            .progress
            .ended
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        Some(
            ended
                .unwrap_or_else(Instant::now)
                .duration_since(started)
                .as_secs_f64(),
        )
    }

    fn result(&self) -> Option<RunResult> {
        self.progress
            .result
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Frames flow `id` sent: the report's count after the run; while it runs, the whole
    /// port's count for a lone flow, else the receiver's estimate from the sequence numbers
    /// (highest seen + 1: a frame the flow has certainly sent).
    fn flow_tx(&self, id: u16) -> u64 {
        if let Some(r) = self.result() {
            return r
                .per_flow
                .iter()
                .find(|(f, _)| *f == id)
                .map_or(0, |(_, n)| *n);
        }
        if self.mapped.flows.len() == 1 {
            return self.progress.frames.load(Ordering::Relaxed);
        }
        self.totals
            .and_then(|t| t.flow(id))
            .map_or(0, |f| f.unique() + f.estimated_loss())
    }

    fn flows(&self, names: &[String]) -> Vec<otg::FlowMetric> {
        let running = self.running();
        let elapsed = self.elapsed().unwrap_or(0.0);
        let rate = |n: u64| {
            if running && elapsed > 0.0 {
                n as f64 / elapsed
            } else {
                0.0
            }
        };
        self.mapped
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| names.is_empty() || names.contains(&f.name))
            .map(|(id, f)| {
                let id = id as u16;
                let spec = &self.mapped.streams[usize::from(id)];
                let stats = self.totals.and_then(|t| t.flow(id)).filter(|_| f.metrics);
                let frames_tx = self.flow_tx(id);
                // Bytes with the FCS, as frame sizes are counted.
                let bytes_tx = match self.result() {
                    Some(r) if self.mapped.flows.len() == 1 => r.bytes + 4 * r.frames,
                    _ => bytes_of(spec, frames_tx),
                };
                let frames_rx = stats.map_or(0, |s| s.frames);
                let unique = stats.map_or(0, |s| s.unique());
                let loss = if frames_tx > 0 && !running && f.metrics {
                    frames_tx.saturating_sub(unique) as f64 * 100.0 / frames_tx as f64
                } else {
                    0.0
                };
                otg::FlowMetric {
                    name: f.name.clone(),
                    port_tx: f.tx_port.clone(),
                    port_rx: f.rx_port.clone().unwrap_or_default(),
                    transmit: if running { "started" } else { "stopped" }.into(),
                    frames_tx,
                    frames_rx,
                    bytes_tx,
                    bytes_rx: stats.map_or(0, |s| s.bytes + 4 * s.frames),
                    frames_tx_rate: rate(frames_tx),
                    frames_rx_rate: rate(frames_rx),
                    loss,
                    timestamps: stats
                        .filter(|_| f.timestamps)
                        .map(|s| otg::MetricTimestamp {
                            first_timestamp_ns: s.first_ns as f64,
                            last_timestamp_ns: s.last_ns as f64,
                        }),
                    latency: stats
                        .filter(|_| f.latency)
                        .and_then(|s| s.latency.as_ref())
                        .map(|l| otg::MetricLatency {
                            minimum_ns: l.min as f64,
                            maximum_ns: l.max as f64,
                            average_ns: l.mean,
                        }),
                }
            })
            .collect()
    }

    fn ports(&self, names: &[String]) -> Vec<otg::PortMetric> {
        let running = self.running();
        let elapsed = self.elapsed().unwrap_or(0.0);
        let rate = |n: u64| {
            if running && elapsed > 0.0 {
                n as f64 / elapsed
            } else {
                0.0
            }
        };
        let (tx_frames, tx_bytes) = match self.result() {
            Some(r) => (r.frames, r.bytes + 4 * r.frames),
            None => {
                let f = self.progress.frames.load(Ordering::Relaxed);
                (f, self.progress.bytes.load(Ordering::Relaxed) + 4 * f)
            }
        };
        let (rx_frames, rx_bytes) = self.totals.map_or((0, 0), |t| {
            let g = &t.global;
            t.flows.iter().fold(
                (
                    g.other_frames + g.untracked_frames,
                    g.other_bytes + g.untracked_bytes,
                ),
                |(f, b), s| (f + s.frames, b + s.bytes),
            )
        });
        let rx_bytes = rx_bytes + 4 * rx_frames;
        self.mapped
            .ports
            .iter()
            .filter(|p| names.is_empty() || names.contains(&p.name))
            .map(|p| {
                let is_tx = self.mapped.tx_port.as_deref() == Some(p.name.as_str());
                let is_rx = self.mapped.rx_port.as_deref() == Some(p.name.as_str());
                let (ft, bt) = if is_tx { (tx_frames, tx_bytes) } else { (0, 0) };
                let (fr, br) = if is_rx { (rx_frames, rx_bytes) } else { (0, 0) };
                otg::PortMetric {
                    name: p.name.clone(),
                    location: p.location.to_string(),
                    link: if self.links.get(&p.name).copied().unwrap_or(false) {
                        "up"
                    } else {
                        "down"
                    }
                    .into(),
                    capture: if self.captures.get(&p.name).copied().unwrap_or(false) {
                        "started"
                    } else {
                        "stopped"
                    }
                    .into(),
                    frames_tx: ft,
                    frames_rx: fr,
                    bytes_tx: bt,
                    bytes_rx: br,
                    frames_tx_rate: rate(ft),
                    frames_rx_rate: rate(fr),
                    bytes_tx_rate: rate(bt),
                    bytes_rx_rate: rate(br),
                    transmit: if is_tx && running {
                        "started"
                    } else {
                        "stopped"
                    }
                    .into(),
                }
            })
            .collect()
    }
}

/// Whether the port's interface is up and running (operstate up: `IFF_RUNNING` with `IFF_UP`),
/// asked of the kernel inside the port's network namespace — sysfs shows the namespace it was
/// mounted in, not the port's. An interface that cannot be found is not up.
fn link_up(location: &linerate_otg::Location) -> bool {
    use nix::net::if_::InterfaceFlags;
    let iface = location.iface.as_str();
    linerate_xdp::in_netns(location.netns.as_deref(), || {
        let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
            return Ok(false);
        };
        let up = InterfaceFlags::IFF_UP | InterfaceFlags::IFF_RUNNING;
        Ok(addrs
            .filter(|a| a.interface_name == iface)
            .any(|a| a.flags.contains(up)))
    })
    .unwrap_or(false)
}

/// One port's capture: a packet socket read by its own thread while it runs, and what it kept.
#[derive(Debug, Default)]
struct CaptureState {
    running: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    frames: Captured,
    failed: capture::Failed,
}

impl Drop for CaptureState {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
    }
}

async fn capture_state(app: &Arc<App>, c: &otg::StatePortCapture) -> Result<Response, Fail> {
    let mapped = app
        .lock()
        .mapped
        .clone()
        .ok_or_else(|| Fail::bad("no config: set_config first"))?;
    let names: Vec<String> = if c.port_names.is_empty() {
        mapped
            .ports
            .iter()
            .filter(|p| p.capture)
            .map(|p| p.name.clone())
            .collect()
    } else {
        c.port_names.clone()
    };
    for (i, name) in names.iter().enumerate() {
        match mapped.port(name) {
            None => {
                return Err(Fail::bad(format!(
                    "port.capture.port_names[{i}]: no port is named '{name}'"
                )));
            }
            Some(p) if !p.capture => {
                return Err(Fail::bad(format!(
                    "port.capture.port_names[{i}]: port '{name}' has no capture in the config \
                     (add one under captures)"
                )));
            }
            Some(_) => {}
        }
    }
    match c.state.as_deref() {
        Some("start") => {
            for name in &names {
                let location = mapped.port(name).map(|p| p.location.clone());
                let Some(location) = location else { continue };
                let frames = Arc::new(Mutex::new(Vec::new()));
                let failed = capture::Failed::default();
                let stop = Arc::new(AtomicBool::new(false));
                let (f, e, s) = (Arc::clone(&frames), Arc::clone(&failed), Arc::clone(&stop));
                let thread = blocking(move || capture::start(&location, f, e, s))
                    .await?
                    .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![one_line(&e)]))?;
                // The previous capture of the port (its thread and frames) goes when replaced.
                let old = app.lock().captures.insert(
                    name.clone(),
                    CaptureState {
                        running: Some((stop, thread)),
                        frames,
                        failed,
                    },
                );
                drop(old);
            }
            Ok(warnings())
        }
        Some("stop") => {
            let threads: Vec<_> = {
                let mut inner = app.lock();
                names
                    .iter()
                    .filter_map(|n| inner.captures.get_mut(n).and_then(|c| c.running.take()))
                    .collect()
            };
            blocking(move || {
                for (stop, thread) in threads {
                    stop.store(true, Ordering::Relaxed);
                    let _ = thread.join();
                }
            })
            .await?;
            Ok(warnings())
        }
        other => Err(Fail::bad(format!(
            "port.capture.state: '{}' is not start or stop",
            other.unwrap_or("")
        ))),
    }
}

async fn get_capture(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    let req: otg::CaptureRequest = otg::parse_json(&body)?;
    let frames = {
        let inner = app.lock();
        let mapped = inner
            .mapped
            .as_ref()
            .ok_or_else(|| Fail::bad("no config: set_config first"))?;
        if mapped.port(&req.port_name).is_none() {
            return Err(Fail::bad(format!(
                "port_name: no port is named '{}'",
                req.port_name
            )));
        }
        let capture = inner.captures.get(&req.port_name).ok_or_else(|| {
            Fail::bad(format!(
                "port_name: port '{}' has no capture in the config",
                req.port_name
            ))
        })?;
        // A capture that stopped on an error answers with it, not with the frames it kept.
        let failed = capture
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(why) = failed {
            return Err(Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![why]));
        }
        Arc::clone(&capture.frames)
    };
    let pcap = blocking(move || capture::pcap(&frames.lock().unwrap_or_else(|p| p.into_inner())))
        .await?
        .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![one_line(&e)]))?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/octet-stream"),
    );
    Ok((headers, pcap).into_response())
}

/// Captures with an AF_PACKET socket made inside the port's network namespace (a socket keeps
/// the namespace it was made in, so its thread reads it from ours).
mod capture {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::SystemTime;

    use anyhow::{Context, Result};
    use linerate_afpacket::CaptureSocket;

    use super::{CAPTURE_BYTES, CAPTURE_FRAMES, Captured as Frames};

    /// Why a capture stopped by itself, for the next get_capture to answer.
    pub type Failed = Arc<Mutex<Option<String>>>;

    pub fn start(
        location: &linerate_otg::Location,
        frames: Frames,
        failed: Failed,
        stop: Arc<AtomicBool>,
    ) -> Result<std::thread::JoinHandle<()>> {
        let iface = location.iface.clone();
        let socket = linerate_xdp::in_netns(location.netns.as_deref(), || {
            Ok(CaptureSocket::open(&iface))
        })
        .with_context(|| format!("capture on {location}"))?
        .with_context(|| format!("capture on {location}"))?;
        let location = location.to_string();
        std::thread::Builder::new()
            .name("otg-capture".into())
            .spawn(move || {
                if let Err(e) = read(&socket, &frames, &stop) {
                    let why = format!("the capture on {location} stopped: {e}");
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                }
            })
            .context("start the capture thread")
    }

    fn read(
        socket: &CaptureSocket,
        frames: &Frames,
        stop: &AtomicBool,
    ) -> Result<(), linerate_afpacket::AfPacketError> {
        let mut buf = vec![0u8; 65536];
        let mut kept_bytes = 0usize;
        while !stop.load(Ordering::Relaxed) {
            let Some(frame) = socket.next(&mut buf)? else {
                continue;
            };
            let mut kept = frames.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() < CAPTURE_FRAMES && kept_bytes + frame.len() <= CAPTURE_BYTES {
                kept_bytes += frame.len();
                kept.push((SystemTime::now(), frame));
            }
        }
        Ok(())
    }

    pub fn pcap(frames: &[(SystemTime, Vec<u8>)]) -> Result<Vec<u8>> {
        use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
        let mut out = Vec::new();
        let header = PcapHeader {
            snaplen: 65535,
            ..PcapHeader::default()
        };
        let mut w = PcapWriter::with_header(&mut out, header).context("pcap header")?;
        for (at, data) in frames {
            let ts = at
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            w.write_packet(&PcapPacket::new(ts, data.len() as u32, data))
                .context("pcap frame")?;
        }
        w.into_writer();
        Ok(out)
    }
}
