//! `linerate serve`: the Open Traffic Generator HTTP API (models v1.60.0, what snappi 1.60.0
//! speaks; docs/otg.md). The OTG side (models, mapping, refusals) is `linerate-otg`; this file is
//! the HTTP server (axum on hyper, TLS by rustls with a certificate made at start), the state of
//! the one config, and the threads that send, receive and capture. The HTTP side never waits on
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

use crate::cli::{Backend, ServeArgs};

mod api;
mod capture;
mod config;
mod control;
mod listen;
mod metrics;

use api::Fail;
use capture::CaptureState;
use config::PortThread;
use linerate_session::RunReceiver;
use listen::{serve, tls_config};

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
            "--backend {}: serve transmits on the config's interfaces; use afxdp, afpacket or live",
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

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Fail> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![e.to_string()]))
}

fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
}
