//! `linerate agent`: the routes a controller drives an agent's ports with (the protocol, the
//! lease and the clock are `linerate-agent`'s; the ports are a test bed's, the agent's share
//! of its controller's), and the watch that drops a setup whose controller went silent.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use linerate_agent::{self as proto, Lease};

use super::capture::{capture_file as file_of, start_port, stop_ports};
use super::control::stop_transmit;
use super::routing::Planes;
use super::state::{App, Counting, DRAIN, Fail, Inner, RunState, blocking, json};

/// How often the lease is checked.
const LEASE_TICK: Duration = Duration::from_millis(100);

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
        .route(proto::FLOWS, post(steer))
        .route(proto::ROUTING, post(routing))
}

/// One call of the setup's control planes, for the controller's get_metrics, get_states and
/// set_control_state on devices of this agent's ports.
async fn routing(State(app): State<Arc<App>>, body_: Bytes) -> Result<Response, Fail> {
    heard(&app);
    let ask: proto::RoutingAsk = body(&body_)?;
    let planes = app
        .lock()
        .routers
        .clone()
        .ok_or_else(|| Fail::conflict("no control plane is set up here"))?;
    let answer = blocking(move || planes.answer(&ask))
        .await?
        .map_err(|e| Fail::internal(&format!("{e:#}")))?;
    Ok(json(&answer))
}

/// Steers flows of the setup while they run, by id (the controller's flow_transmit subsets,
/// pause, resume and update_config).
async fn steer(State(app): State<Arc<App>>, body_: Bytes) -> Result<Response, Fail> {
    use linerate_testbed::{FlowChange, FlowState, RateAsk};
    heard(&app);
    let steer: proto::Steer = body(&body_)?;
    let mut changes = Vec::with_capacity(steer.changes.len());
    for c in steer.changes {
        let state = match c.state.as_deref() {
            None => None,
            Some("running") => Some(FlowState::Running),
            Some("paused") => Some(FlowState::Paused),
            Some("stopped") => Some(FlowState::Stopped),
            Some(other) => return Err(Fail::bad(format!("flow {}: state {other:?}", c.id))),
        };
        let rate = c.rate.map(|r| match r {
            proto::SteerRate::Pps(p) => RateAsk::Pps(p),
            proto::SteerRate::TimesPlanned(x) => RateAsk::TimesPlanned(x),
            proto::SteerRate::Planned => RateAsk::Planned,
        });
        changes.push(FlowChange {
            id: c.id,
            state,
            rate,
        });
    }
    let inner = app.lock();
    let bed = inner
        .bed
        .as_ref()
        .ok_or_else(|| Fail::conflict("nothing is set up here"))?;
    let ids: Vec<u16> = bed.flows().iter().map(|f| f.id).collect();
    bed.control()
        .apply_by_id(&ids, &changes)
        .map_err(|e| Fail::bad(e.to_string()))?;
    Ok(json(&serde_json::json!({})))
}

/// The lease, renewed: every call of the controller's counts as hearing from it.
fn heard(app: &App) -> &Lease {
    let lease = app
        .agent
        .as_ref()
        .expect("agent routes are only routed on an agent");
    lease.heard_now();
    lease
}

fn body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Fail> {
    serde_json::from_slice(body).map_err(|e| Fail::bad(e.to_string()))
}

/// What each port's hosts learned (OTG get_states at the controller).
async fn neighbours(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    heard(&app);
    let counting = Arc::clone(&app.lock().counting);
    let ports = blocking(move || counting.counts.neighbours())
        .await?
        .map_err(|e| Fail::internal(&e))?
        .into_iter()
        .map(Into::into)
        .collect();
    Ok(json(&proto::Neighbours { ports }))
}

/// Starts or stops a capture on one of the setup's ports.
async fn capture(State(app): State<Arc<App>>, body_: Bytes) -> Result<Response, Fail> {
    heard(&app);
    let c: proto::Capture = body(&body_)?;
    let location = own_port(&app, &c.port)?;
    if c.start {
        start_port(&app, c.port, location).await?;
    } else {
        stop_ports(&app, vec![c.port]).await?;
    }
    Ok(json(&serde_json::json!({})))
}

async fn capture_file(State(app): State<Arc<App>>, body_: Bytes) -> Result<Response, Fail> {
    heard(&app);
    let c: proto::CaptureFile = body(&body_)?;
    own_port(&app, &c.port)?;
    let format = if c.pcapng {
        linerate_otg::CaptureFormat::Pcapng
    } else {
        linerate_otg::CaptureFormat::Pcap
    };
    file_of(&app, &c.port, format, &c.port).await
}

/// `port` when it is one of the setup's ports.
fn own_port(app: &App, port: &str) -> Result<linerate_otg::Location, Fail> {
    heard(app).own_port(port).map_err(Fail::bad)?;
    linerate_otg::Location::parse(port).ok_or_else(|| Fail::bad(format!("port {port:?}")))
}

async fn setup(State(app): State<Arc<App>>, body_: Bytes) -> Result<Response, Fail> {
    let lease = heard(&app);
    let Ok(_building) = app.configuring.try_lock() else {
        return Err(Fail::conflict("another setup is being applied"));
    };
    let setup: proto::Setup = body(&body_)?;
    lease
        .may_set_up(&setup.controller)
        .map_err(Fail::conflict)?;
    let controller = setup.controller.clone();
    let old = take(&app)?;
    let arriving = setup.arriving.clone();
    let args = Arc::clone(&app);
    let clock = lease.clock();
    let routers = setup.routers.clone();
    let (bed, routers) = blocking(move || -> Result<_, String> {
        drop(old);
        let port = crate::options::serve_port(&args.args, "");
        let bed = linerate_testbed::share(setup, port, clock, DRAIN)
            .map_err(|e| format!("{:#}", anyhow::Error::from(e)))?;
        // The devices' daemons once their hosts pass them their frames, as serve starts its own.
        let routers = if routers.is_empty() {
            None
        } else {
            let r = linerate_routing::Routers::start(routers)
                .map_err(|e| format!("the devices' control planes: {e}"))?;
            Some(Arc::new(Planes::Here(std::sync::Mutex::new(r))))
        };
        Ok((bed, routers))
    })
    .await?
    .map_err(Fail::bad)?;
    let ports = bed.places().to_vec();
    lease.set_up(&controller, ports.clone(), arriving);
    {
        let mut inner = app.lock();
        inner.counting = Arc::new(Counting::of(&bed));
        inner.bed = Some(bed);
        inner.routers = routers;
    }
    heard(&app);
    Ok(json(&proto::SetupReply {
        ports,
        clock: lease.clock(),
    }))
}

/// Takes the setup out of the state (refused while it transmits).
fn take(app: &App) -> Result<Inner, Fail> {
    let mut inner = app.lock();
    if inner.run.progress.running() {
        return Err(Fail::conflict(
            "traffic is being transmitted: stop it first",
        ));
    }
    Ok(std::mem::take(&mut *inner))
}

async fn teardown(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    heard(&app);
    stop_transmit(&app).await?;
    let old = take(&app)?;
    blocking(move || drop(old)).await?;
    heard(&app).released(None);
    Ok(json(&serde_json::json!({})))
}

async fn start(State(app): State<Arc<App>>, body_: Bytes) -> Result<Response, Fail> {
    let lease = heard(&app);
    let start: proto::Start = body(&body_)?;
    if let Some(at) = start.at_ns {
        lease.check_instant(at).map_err(Fail::bad)?;
    }
    let counting = {
        let inner = app.lock();
        if inner.bed.is_none() {
            return Err(Fail::bad("nothing is set up: POST a setup first"));
        }
        if inner.run.progress.running() {
            return Err(Fail::conflict("traffic is already being transmitted"));
        }
        Arc::clone(&inner.counting)
    };
    // Cleared now, before the instant every agent shares: frames an agent whose clock runs a
    // little ahead sends here are this run's, not wiped by this agent's own start.
    blocking(move || counting.counts.clear())
        .await?
        .map_err(|e| Fail::internal(&e))?;
    let mut inner = app.lock();
    inner.run = RunState::default();
    let runs = lease.start(start.at_ns);
    let at = start.at_ns.map(|at| lease.instant(at));
    let (stop, progress) = (Arc::clone(&inner.run.stop), Arc::clone(&inner.run.progress));
    let started = inner
        .bed
        .as_ref()
        .map(|bed| bed.start(stop, progress, at, true));
    match started {
        Some(Ok(())) => Ok(json(&proto::Started { runs })),
        Some(Err(e)) => Err(Fail::internal(&e)),
        None => Err(Fail::bad("nothing is set up: POST a setup first")),
    }
}

async fn stop(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    heard(&app);
    stop_transmit(&app).await?;
    Ok(json(&serde_json::json!({})))
}

async fn status(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    heard(&app);
    let (configured, progress, counting) = {
        let inner = app.lock();
        (
            inner.bed.is_some(),
            Arc::clone(&inner.run.progress),
            Arc::clone(&inner.counting),
        )
    };
    // The receivers' maps are read off the runtime's threads.
    let app_ = Arc::clone(&app);
    let status = blocking(move || {
        let lease = heard(&app_);
        linerate_testbed::status(
            lease,
            configured,
            &counting.counts,
            &counting.places,
            &progress,
        )
    })
    .await?
    .map_err(|e| Fail::internal(&e))?;
    Ok(json(&status))
}

async fn clock(State(app): State<Arc<App>>) -> Response {
    let received_ns = heard(&app).clock().now_ns();
    let lease = heard(&app);
    json(&proto::ClockReading {
        clock: lease.clock(),
        received_ns,
        sent_ns: lease.clock().now_ns(),
    })
}

/// Drops the setup once the controller has been silent longer than the lease: its traffic
/// stops, its programs detach, and the agent says so.
pub(super) async fn watch(app: Arc<App>) {
    let lease = app.agent.as_ref().expect("watched only on an agent");
    let mut tick = tokio::time::interval(LEASE_TICK);
    loop {
        tick.tick().await;
        let Some(why) = lease.lapsed() else {
            continue;
        };
        let old = {
            let mut inner = app.lock();
            if inner.bed.is_none() {
                continue;
            }
            inner
                .run
                .stop
                .store(true, std::sync::atomic::Ordering::Relaxed);
            std::mem::take(&mut *inner)
        };
        eprintln!("linerate agent: {why}");
        // The bed's thread finishes its run (the stop flag) and detaches as it is dropped.
        let _ = blocking(move || drop(old)).await;
        lease.released(Some(why));
    }
}
