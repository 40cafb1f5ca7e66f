//! set_control_state: start and stop the traffic, the captures and the devices' protocols.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use linerate_otg as otg;
use otg::requests::Control;

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
        Control::Transmit { start: true } => start_transmit(&app),
        Control::Transmit { start: false } => {
            stop_transmit(&app).await?;
            Ok(warnings())
        }
        Control::Capture { ports, start } => capture_state(&app, &mapped, ports, start).await,
        Control::Protocols { start } => super::routing::set_running(&app, start).await,
        Control::Routes { names, advertise } => {
            super::routing::announce(&app, names, advertise).await
        }
    }
}

/// Starts every flow: the test bed clears the receivers' counts as the run begins, so they are
/// this run's. Answers with each agent's clock offset, as last measured.
fn start_transmit(app: &App) -> Result<Response, Fail> {
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
    Ok(json(&otg::Warning {
        warnings: inner.counting.counts.offsets_said(),
    }))
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
