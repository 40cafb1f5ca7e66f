//! set_control_state (traffic started, stopped, paused and resumed, by flow; captures; the
//! devices' protocols) and update_config (flows' rates, while they run).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use linerate_otg as otg;
use linerate_testbed::{BedControl, FlowState, RateAsk};
use otg::requests::{Control, Transmit};

use super::capture::capture_state;
use super::state::{App, Fail, RunState, STOP_WAIT, blocking, json, warnings};

pub(super) async fn get_version() -> Response {
    json(&otg::Version::of(env!("CARGO_PKG_VERSION")))
}

pub(super) async fn set_control_state(
    State(app): State<Arc<App>>,
    body: Bytes,
) -> Result<Response, Fail> {
    let state: otg::ControlState = otg::parse_json(&body)?;
    let mapped = app.mapped()?;
    match otg::requests::control(&state, &mapped).map_err(Fail::bad)? {
        Control::Transmit { action, flows, all } => {
            transmit(&app, mapped, action, &flows, all).await
        }
        Control::Capture { ports, start } => capture_state(&app, &mapped, ports, start).await,
        Control::Protocols { start } => {
            let (lags, daemons) = {
                let inner = app.lock();
                (inner.lags.clone(), inner.routers.is_some())
            };
            if let Some(lags) = lags {
                // It waits for the LAGs' threads to take it: off the runtime.
                blocking(move || lags.set_running(start)).await?;
            }
            if daemons {
                super::routing::set_running(&app, start).await
            } else {
                Ok(warnings())
            }
        }
        Control::Link { locations, up } => {
            blocking(move || {
                locations.iter().try_for_each(|at| {
                    let (iface, netns) = match at.split_once('@') {
                        Some((i, n)) => (i, Some(n)),
                        None => (at.as_str(), None),
                    };
                    linerate_lab::device::set_link_up(iface, netns, up)
                })
            })
            .await?
            .map_err(|e| Fail::internal(&e))?;
            // The LAGs see it at their next turn: the next metrics say it.
            let lags = app.lock().lags.clone();
            if let Some(lags) = lags {
                blocking(move || lags.settle()).await?;
            }
            Ok(warnings())
        }
        Control::LacpAdmin { ports, up } => {
            let lags = app.lock().lags.clone();
            if let Some(lags) = lags {
                blocking(move || lags.set_admin(&ports, up)).await?;
            }
            Ok(warnings())
        }
        Control::Routes { names, advertise } => {
            super::routing::announce(&app, names, advertise).await
        }
    }
}

/// `traffic.flow_transmit` on the flows at `flows` (every flow when `all`). Stopping them all
/// ends the run; otherwise the flows are steered while the run goes on (docs/otg.md): started
/// alone when nothing runs (the others stopped), started, stopped, paused or resumed while it
/// runs, the others going on as they were.
async fn transmit(
    app: &Arc<App>,
    mapped: Arc<otg::Mapped>,
    action: Transmit,
    flows: &[usize],
    all: bool,
) -> Result<Response, Fail> {
    let running = app.lock().run.progress.running();
    match action {
        Transmit::Start if !running => {
            let mapped = over_lags(app, mapped).await?;
            starting(app, flows.to_vec(), all).await?;
            let started: Vec<usize> = if all {
                (0..mapped.flows.len()).collect()
            } else {
                flows.to_vec()
            };
            let lags = app.lock().lags.clone();
            let views = lags.map(|l| l.views()).unwrap_or_default();
            let said = otg::lag::answers::off_lag(&mapped, &views, &started);
            start_transmit(app, said)
        }
        Transmit::Stop if all || !running => {
            stop_transmit(app).await?;
            Ok(warnings())
        }
        Transmit::Pause | Transmit::Resume if !running => Err(Fail::conflict(
            "traffic is not being transmitted: start it, then pause or resume its flows",
        )),
        _ => {
            let state = match action {
                Transmit::Start | Transmit::Resume => FlowState::Running,
                Transmit::Pause => FlowState::Paused,
                Transmit::Stop => FlowState::Stopped,
            };
            let (said, ended) = steer(app, &mapped, action, flows, state).await?;
            if ended {
                stop_transmit(app).await?;
            }
            Ok(json(&otg::Warning { warnings: said }))
        }
    }
}

/// Before a run: the LAGs' flows placed over the members in their LAGs now (docs/routing.md,
/// "LAGs and LACP"). When a member has left its LAG since the flows were placed (its link went
/// down, or LACP took it out), or come back, the config is mapped again with the members out
/// now and its test bed opened again; the LAGs' threads and the captures go on as they were.
/// With the same members out as when the flows were placed, nothing is mapped again.
async fn over_lags(app: &Arc<App>, mapped: Arc<otg::Mapped>) -> Result<Arc<otg::Mapped>, Fail> {
    let (lags, raw) = {
        let inner = app.lock();
        (inner.lags.clone(), inner.config.clone())
    };
    let (Some(lags), Some(raw)) = (lags, raw) else {
        return Ok(mapped);
    };
    let out: Vec<String> = lags
        .views()
        .iter()
        .flat_map(|l| &l.members)
        .filter(|m| !m.up)
        .map(|m| m.port.clone())
        .collect();
    if out == mapped.lag_out {
        return Ok(mapped);
    }
    let config = otg::parse_config(&raw).map_err(|e| Fail::internal(&e))?;
    let placed = otg::map_config_over_lags(&config, &out).map_err(|e| Fail::internal(&e))?;
    if placed.lag_flows == mapped.lag_flows {
        return Ok(mapped);
    }
    // Not beside a set_config, which replaces the bed itself.
    let Ok(_building) = app.configuring.try_lock() else {
        return Err(Fail::conflict(
            "a set_config is being applied: start the flows once it has answered",
        ));
    };
    let placed = Arc::new(placed);
    // The old bed's programs, sockets and receivers (its counts hold them) go before the new
    // one takes the same ports.
    let old = {
        let mut inner = app.lock();
        (inner.bed.take(), std::mem::take(&mut inner.counting))
    };
    blocking(move || drop(old)).await?;
    let (at, new) = (Arc::clone(app), Arc::clone(&placed));
    let (bed, counting) = blocking(move || super::config::open_bed(&at, &new))
        .await?
        .map_err(|e| {
            Fail::internal(&format!(
                "{e:#}: the flows' ports could not be opened again over the LAGs' members up \
                 now; set_config again"
            ))
        })?;
    let mut inner = app.lock();
    inner.bed = bed;
    inner.counting = Arc::new(counting);
    inner.mapped = Some(Arc::clone(&placed));
    Ok(placed)
}

/// The control of the config's flows, taken out of the state (its calls to agents wait on
/// them, off the lock).
fn control_of(app: &App) -> Result<BedControl, Fail> {
    let inner = app.lock();
    let bed = inner
        .bed
        .as_ref()
        .ok_or_else(|| Fail::internal(&"the transmit port is gone: set_config again"))?;
    Ok(bed.control().clone())
}

/// Sets the flows at `flows` to `state` in the running test bed (pause only those that run,
/// resume only those paused, each other named in a warning); whether every flow is stopped now,
/// which ends the run.
async fn steer(
    app: &App,
    mapped: &otg::Mapped,
    action: Transmit,
    flows: &[usize],
    state: FlowState,
) -> Result<(Vec<String>, bool), Fail> {
    let control = control_of(app)?;
    control.check().map_err(|e| {
        if action == Transmit::Start {
            Fail::conflict(format!("traffic is already being transmitted, and {e}"))
        } else {
            Fail::bad(e.to_string())
        }
    })?;
    let (mut take, mut said) = (Vec::new(), Vec::new());
    for &f in flows {
        let now = control.state(f);
        let name = &mapped.flows[f].name;
        match (action, now) {
            (Transmit::Pause, Some(s)) if s != FlowState::Running => {
                said.push(format!("flow '{name}' is not running: it was not paused"));
            }
            (Transmit::Resume, Some(s)) if s != FlowState::Paused => {
                said.push(format!("flow '{name}' is not paused: it was not resumed"));
            }
            _ => take.push(f),
        }
    }
    blocking(move || {
        control
            .set(&take, state)
            .map_err(|e| Fail::bad(e.to_string()))?;
        Ok((said, !control.any_live()))
    })
    .await?
}

/// Before a run: the flows at `flows` running, the others stopped (unless `all`); rates given
/// by update_config stay, they are the config's now. A bed whose flows are not steered starts
/// every flow or none.
async fn starting(app: &App, flows: Vec<usize>, all: bool) -> Result<(), Fail> {
    let control = control_of(app)?;
    match control.check() {
        Ok(()) => {
            blocking(move || {
                let others: Vec<usize> =
                    (0..control.len()).filter(|f| !flows.contains(f)).collect();
                control
                    .set(&flows, FlowState::Running)
                    .and_then(|()| control.set(&others, FlowState::Stopped))
                    .map_err(|e| Fail::internal(&e))
            })
            .await?
        }
        Err(_) if all => Ok(()),
        Err(e) => Err(Fail::bad(format!(
            "traffic.flow_transmit.flow_names: {e}: start every flow (name them all, or none)"
        ))),
    }
}

/// Starts the run: the test bed clears the receivers' counts as it begins, so they are this
/// run's. Answers with each agent's clock offset, as last measured, after what `said`.
fn start_transmit(app: &App, mut said: Vec<String>) -> Result<Response, Fail> {
    let mut inner = app.lock();
    if inner.run.progress.running() {
        return Err(Fail::conflict("traffic is already being transmitted"));
    }
    inner.run = RunState::default();
    let progress = Arc::clone(&inner.run.progress);
    let stop = Arc::clone(&inner.run.stop);
    let Some(bed) = &inner.bed else {
        return Err(Fail::internal(
            &"the transmit port is gone: set_config again",
        ));
    };
    bed.start(stop, progress, None, false)
        .map_err(|e| Fail::internal(&e))?;
    said.extend(inner.counting.counts.offsets_said());
    Ok(json(&otg::Warning { warnings: said }))
}

/// Stops the transmit and answers once the workers have drained, so the next metrics are
/// final.
pub(super) async fn stop_transmit(app: &App) -> Result<(), Fail> {
    let progress = {
        let inner = app.lock();
        inner.run.stop.store(true, Ordering::Relaxed);
        Arc::clone(&inner.run.progress)
    };
    // A run still draining past the wait goes on ending; the next metrics say it runs.
    blocking(move || {
        progress.wait_ended(STOP_WAIT);
    })
    .await
}

/// The highest rate update_config gives a flow: a frame a picosecond is the schedule's limit,
/// and no port comes near a billion frames a second.
const MAX_PPS: f64 = 1e9;

/// update_config (`PATCH /config`): new rates for flows, taken at once by flows that run and
/// kept for the next start; the config get_config answers with says them. All or none.
pub(super) async fn update_config(
    State(app): State<Arc<App>>,
    body: Bytes,
) -> Result<Response, Fail> {
    // Not beside a set_config: the config it changes would be torn down under it.
    let Ok(_building) = app.configuring.try_lock() else {
        return Err(Fail::conflict(
            "a set_config is being applied: send update_config once it has answered",
        ));
    };
    let update: otg::ConfigUpdate = otg::parse_json(&body)?;
    let mapped = app.mapped()?;
    let updates = otg::requests::update(&update, &mapped).map_err(Fail::bad)?;
    let control =
        control_of(app.as_ref()).map_err(|_| Fail::bad("the config has no flows to update"))?;
    control
        .check()
        .map_err(|e| Fail::bad(format!("update_config: {e}")))?;
    let mut rates = Vec::with_capacity(updates.len());
    for (u, given) in updates
        .iter()
        .zip(update.flows.iter().flat_map(|f| &f.flows))
    {
        let name = &mapped.flows[u.flow].name;
        let old = mapped.streams[u.flow].rate;
        let ask = match control.planned(u.flow) {
            Some(planned) => otg::requests::frame_rate(old, u.rate, planned).map(RateAsk::Pps),
            // An agent plans the flow: a frame rate, or one in the flow's own unit, is what it
            // can take without knowing more here.
            None if control.is_remote(u.flow) => {
                match (u.rate, otg::requests::same_unit_scale(old, u.rate)) {
                    (linerate_stream::Rate::Pps(p), _) => Ok(RateAsk::Pps(p)),
                    (_, Some(x)) => Ok(RateAsk::TimesPlanned(x)),
                    _ => Err(
                        "the flow is sent by an agent: give its new rate in pps or in the unit \
                          it was configured with"
                            .to_owned(),
                    ),
                }
            }
            None => Err(
                "the flow is sent unpaced, at the port's max rate: it has no schedule \
                         to change (set_config with a rate)"
                    .to_owned(),
            ),
        }
        .and_then(|ask| match ask {
            // The schedule is kept in picoseconds a frame; the link is the DUT's to judge.
            RateAsk::Pps(p) if p > MAX_PPS => Err(format!(
                "{p:.0} frames per second is above the {MAX_PPS:.0} a flow's schedule keeps"
            )),
            ask => Ok(ask),
        })
        .map_err(|why| Fail::bad(format!("flow '{name}': {why}")))?;
        rates.push((u.flow, ask, given.rate.clone()));
    }
    let asks: Vec<(usize, RateAsk)> = rates.iter().map(|(f, ask, _)| (*f, *ask)).collect();
    blocking(move || {
        asks.iter().try_for_each(|(flow, ask)| {
            control
                .set_rate(*flow, *ask)
                .map_err(|e| Fail::bad(e.to_string()))
        })
    })
    .await??;
    let mut inner = app.lock();
    if let Some(raw) = &inner.config {
        let given = rates
            .iter()
            .map(|(f, _, r)| (mapped.flows[*f].name.as_str(), r));
        let body = otg::with_rates(raw, given).map_err(|e| Fail::internal(&e))?;
        inner.config = Some(body.into());
    }
    Ok(warnings())
}
