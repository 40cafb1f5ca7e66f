//! Port captures: start, stop and the pcap answer.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use linerate_otg as otg;
use linerate_testbed::PortCapture;

use super::state::{App, Fail, blocking, warnings};

/// Starts or stops the captures of `names` (each has one in the config).
pub(super) async fn capture_state(
    app: &Arc<App>,
    mapped: &otg::Mapped,
    names: Vec<String>,
    start: bool,
) -> Result<Response, Fail> {
    // Ports on agents: each agent captures its own.
    let (remote, local): (Vec<_>, Vec<_>) = names
        .into_iter()
        .filter_map(|n| Some((mapped.port(&n)?.location.clone(), n)))
        .partition(|(l, _)| l.agent.is_some());
    if !remote.is_empty() {
        let agents = app.lock().counting.counts.agents().cloned();
        let agents = agents.ok_or_else(|| Fail::bad("the agents are gone: set_config again"))?;
        blocking(move || {
            remote.iter().try_for_each(|(l, _)| {
                agents.capture(l.agent.as_deref().unwrap_or_default(), &l.local(), start)
            })
        })
        .await?
        .map_err(|e| Fail::internal(&e))?;
    }
    if start {
        for (location, name) in local {
            start_port(app, name, location).await?;
        }
    } else {
        stop_ports(app, local.into_iter().map(|(_, n)| n).collect()).await?;
    }
    Ok(warnings())
}

/// Starts capturing on `location`, kept as `key`; a capture already kept there goes.
pub(super) async fn start_port(
    app: &App,
    key: String,
    location: otg::Location,
) -> Result<(), Fail> {
    let at = location.local();
    let capture = blocking(move || PortCapture::start(&at))
        .await?
        .map_err(|e| Fail::internal(&e))?;
    // The previous capture of the port (its thread and frames) goes when replaced.
    let old = app.lock().captures.insert(key, capture);
    blocking(move || drop(old)).await
}

/// Stops the captures kept as `keys`; their frames stay.
pub(super) async fn stop_ports(app: &App, keys: Vec<String>) -> Result<(), Fail> {
    // Each capture's thread is joined off the runtime; the stopped capture goes back in place.
    let taken: Vec<(String, PortCapture)> = {
        let mut inner = app.lock();
        keys.into_iter()
            .filter_map(|k| inner.captures.remove(&k).map(|c| (k, c)))
            .collect()
    };
    let stopped = blocking(move || {
        taken
            .into_iter()
            .map(|(k, mut c)| {
                c.stop();
                (k, c)
            })
            .collect::<Vec<_>>()
    })
    .await?;
    app.lock().captures.extend(stopped);
    Ok(())
}

pub(super) async fn get_capture(
    State(app): State<Arc<App>>,
    body: Bytes,
) -> Result<Response, Fail> {
    let req: otg::CaptureRequest = otg::parse_json(&body)?;
    let (format, location, agents) = {
        let inner = app.lock();
        let mapped = inner
            .mapped
            .as_ref()
            .ok_or_else(|| Fail::bad("no config: set_config first"))?;
        let Some(port) = mapped.port(&req.port_name) else {
            return Err(Fail::bad(format!(
                "port_name: no port is named '{}'",
                req.port_name
            )));
        };
        if !inner.captures.contains_key(&req.port_name) {
            return Err(Fail::bad(format!(
                "port_name: port '{}' has no capture in the config",
                req.port_name
            )));
        }
        (
            port.capture_format,
            port.location.clone(),
            inner.counting.counts.agents().cloned(),
        )
    };
    let pcapng = format == otg::CaptureFormat::Pcapng;
    let file = match (&location.agent, agents) {
        // The agent that owns the port writes the file.
        (Some(agent), Some(agents)) => {
            let agent = agent.clone();
            blocking(move || agents.capture_file(&agent, &location.local(), pcapng))
                .await?
                .map_err(|e| Fail::internal(&e))?
        }
        _ => return capture_file(&app, &req.port_name, format, &req.port_name).await,
    };
    Ok(octets(file))
}

/// The capture kept as `key`, as a file whose interface is named `interface`.
pub(super) async fn capture_file(
    app: &App,
    key: &str,
    format: otg::CaptureFormat,
    interface: &str,
) -> Result<Response, Fail> {
    let kept = app
        .lock()
        .captures
        .get(key)
        .map(PortCapture::kept)
        .ok_or_else(|| Fail::bad(format!("port '{key}' has no capture: start one first")))?;
    let name = interface.to_owned();
    let pcapng = format == otg::CaptureFormat::Pcapng;
    let file = blocking(move || kept.file(pcapng, &name))
        .await?
        .map_err(|e| Fail::internal(&e))?;
    Ok(octets(file))
}

fn octets(bytes: Vec<u8>) -> Response {
    let kind = header::HeaderValue::from_static("application/octet-stream");
    ([(header::CONTENT_TYPE, kind)], bytes).into_response()
}
