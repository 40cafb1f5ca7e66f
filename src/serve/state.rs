//! What every handler shares: the server's state (the one config and everything made for it),
//! the answer of a refusal, and the few helpers each handler uses. Nothing here imports another
//! module of serve: the handlers sit above it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use linerate_otg as otg;
use linerate_testbed::{BedThread, LiveCounts, PortCapture, Progress};

use linerate_cli::ServeArgs;

/// How long a client has to send a request's whole body once its head has arrived.
pub(super) const BODY_WAIT: Duration = Duration::from_secs(10);
/// How long `stop` waits for the workers to drain before it answers.
pub(super) const STOP_WAIT: Duration = Duration::from_secs(10);
/// How long a run waits after its last frame for the frames still on their way to the
/// receiver (it ends sooner once every flow has what was sent).
pub(super) const DRAIN: Duration = Duration::from_millis(500);

#[derive(Debug)]
pub(super) struct App {
    pub(super) inner: Mutex<Inner>,
    /// Held by the set_config that is building a config: a second one at the same time is
    /// refused (409), not interleaved with the first's teardown and setup.
    pub(super) configuring: tokio::sync::Mutex<()>,
    /// The uid (besides root) a loopback connection must come from; None: any.
    pub(super) owner: Option<u32>,
    pub(super) args: ServeArgs,
    /// `linerate agent`: its lease and clock, and what it last heard from its controller.
    pub(super) agent: Option<linerate_agent::Lease>,
    /// Ports on agents may be configured (`--agent-token-file`).
    pub(super) controller: Option<linerate_testbed::Controller>,
}

impl App {
    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        // A handler that panicked mid-update leaves the state as it was written: still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops traffic and detaches everything (dropping the bed and the captures does both).
    pub(super) fn teardown(&self) {
        let old = std::mem::take(&mut *self.lock());
        old.run.stop.store(true, Ordering::Relaxed);
        drop(old);
    }

    /// The config set last: refused (400) before any.
    pub(super) fn mapped(&self) -> Result<Arc<otg::Mapped>, Fail> {
        Ok(self.current()?.0)
    }

    /// The config set last and where it counts, taken together (a set_config between two
    /// reads would pair one config with another's counts).
    pub(super) fn current(&self) -> Result<(Arc<otg::Mapped>, Arc<Counting>), Fail> {
        let inner = self.lock();
        let mapped = inner.mapped.clone();
        let mapped = mapped.ok_or_else(|| Fail::bad("no config: set_config first"))?;
        Ok((mapped, Arc::clone(&inner.counting)))
    }
}

/// The one config and everything made for it. Dropping it stops and detaches all of it.
#[derive(Debug, Default)]
pub(super) struct Inner {
    /// The body it was set with, as given: get_config answers with it.
    pub(super) config: Option<axum::body::Bytes>,
    pub(super) mapped: Option<Arc<otg::Mapped>>,
    pub(super) bed: Option<BedThread>,
    pub(super) counting: Arc<Counting>,
    pub(super) run: RunState,
    /// Per OTG port with a capture in the config (a local name on an agent).
    pub(super) captures: BTreeMap<String, PortCapture>,
    /// The devices' control planes (their daemons), when the config has any.
    pub(super) routers: Option<Daemons>,
    /// The LAGs' threads (LACP), when the config has any.
    pub(super) lags: Option<Arc<linerate_lacp::Lags>>,
}

/// The devices' daemons, shared by the handlers (each call waits on a daemon, off the runtime).
pub(super) type Daemons = Arc<super::routing::Planes>;

#[derive(Debug, Default)]
pub(super) struct RunState {
    pub(super) stop: Arc<AtomicBool>,
    pub(super) progress: Arc<Progress>,
}

/// Where a config's flows and ports are counted: which flow id, sending place and receiving
/// place each flow has, which places each OTG port sends and receives as, and the bed's live
/// counts.
#[derive(Debug, Default)]
pub(super) struct Counting {
    /// Per flow, in the config's order.
    pub(super) flows: Vec<otg::metrics::FlowCounted>,
    /// Per OTG port that sends or receives.
    pub(super) ports: BTreeMap<String, otg::metrics::PortCounted>,
    /// The bed's places, by the names its indices count.
    pub(super) places: Vec<String>,
    pub(super) counts: LiveCounts,
}

impl Counting {
    /// Where the bed counts: its flows (in the order compiled), places and live counts.
    pub(super) fn of(bed: &BedThread) -> Counting {
        Counting {
            flows: bed
                .flows()
                .iter()
                .map(|f| otg::metrics::FlowCounted {
                    id: f.id,
                    tx: f.tx,
                    rx: f.rx,
                })
                .collect(),
            ports: BTreeMap::new(),
            places: bed.places().to_vec(),
            counts: bed.counts().clone(),
        }
    }
}

/// An answer that is not a success: a 4xx for what the client asked, a 5xx for the system.
#[derive(Debug)]
pub(super) struct Fail(pub(super) StatusCode, pub(super) Vec<String>);

impl Fail {
    pub(super) fn bad(why: impl Into<String>) -> Self {
        Fail(StatusCode::BAD_REQUEST, vec![why.into()])
    }
    pub(super) fn conflict(why: impl Into<String>) -> Self {
        Fail(StatusCode::CONFLICT, vec![why.into()])
    }
    /// The system failed (500), as `e` says on one line.
    pub(super) fn internal(e: &dyn std::fmt::Display) -> Self {
        Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![e.to_string()])
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
        let body = otg::ErrorBody {
            code: i32::from(self.0.as_u16()),
            kind: kind.into(),
            errors: self.1,
        };
        (self.0, axum::Json(body)).into_response()
    }
}

pub(super) fn warnings() -> Response {
    axum::Json(otg::Warning::default()).into_response()
}

pub(super) fn json<T: serde::Serialize>(value: &T) -> Response {
    axum::Json(value).into_response()
}

/// Runs `f` off the runtime's threads (it waits on the kernel or on a port's thread).
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Fail> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Fail::internal(&e))
}
