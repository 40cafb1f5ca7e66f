//! set_control_state: start and stop the traffic, start and stop captures.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use linerate_otg as otg;

use super::api::{Fail, warnings};
use super::capture::capture_state;
use super::{App, Cmd, RunState, STOP_WAIT, blocking};

pub(super) async fn get_version() -> Response {
    axum::Json(otg::Version {
        api_spec_version: otg::API_SPEC_VERSION.into(),
        sdk_version: otg::API_SPEC_VERSION.into(),
        app_version: env!("CARGO_PKG_VERSION").into(),
    })
    .into_response()
}

pub(super) async fn set_control_state(
    State(app): State<Arc<App>>,
    body: Bytes,
) -> Result<Response, Fail> {
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

pub(super) async fn flow_transmit(
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
            let sent = inner.port.as_ref().and_then(|p| p.cmd.as_ref()).map(|c| {
                c.send(Cmd::Start {
                    stop,
                    progress: progress.clone(),
                    at: None,
                })
            });
            if !matches!(sent, Some(Ok(()))) {
                progress.running.store(false, Ordering::Release);
                return Err(Fail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    vec!["the transmit port is gone: set_config again".into()],
                ));
            }
            // Agents: each one's clock offset beside the start, as last measured.
            let said = inner.counting.remote.as_ref().map(|r| r.offsets_said());
            Ok(axum::Json(otg::Warning {
                warnings: said.unwrap_or_default(),
            })
            .into_response())
        }
        Some("stop") => {
            stop_transmit(app).await?;
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

/// Stops the transmit and answers once the workers have drained, so the next metrics are
/// final.
pub(super) async fn stop_transmit(app: &App) -> Result<(), Fail> {
    let progress = {
        let inner = app.lock();
        inner.run.stop.store(true, Ordering::Relaxed);
        Arc::clone(&inner.run.progress)
    };
    blocking(move || {
        let deadline = Instant::now() + STOP_WAIT;
        while progress.running.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    })
    .await
}
