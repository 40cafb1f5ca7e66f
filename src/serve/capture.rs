//! Port captures: start, stop and the pcap answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use linerate_otg as otg;

use super::api::{Fail, warnings};
use super::{App, Captured, blocking, one_line};

/// One port's capture: a packet socket read by its own thread while it runs, and what it kept.
#[derive(Debug, Default)]
pub(super) struct CaptureState {
    pub(super) running: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    pub(super) frames: Captured,
    pub(super) failed: socket::Failed,
}

impl Drop for CaptureState {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
    }
}

pub(super) async fn capture_state(
    app: &Arc<App>,
    c: &otg::StatePortCapture,
) -> Result<Response, Fail> {
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
    let start = match c.state.as_deref() {
        Some("start") => true,
        Some("stop") => false,
        other => {
            return Err(Fail::bad(format!(
                "port.capture.state: '{}' is not start or stop",
                other.unwrap_or("")
            )));
        }
    };
    // Ports on agents: each agent captures its own.
    let (remote, local): (Vec<_>, Vec<_>) = names
        .into_iter()
        .filter_map(|n| Some((mapped.port(&n)?.location.clone(), n)))
        .partition(|(l, _)| l.agent.is_some());
    if !remote.is_empty() {
        let agents = app.lock().counting.remote.clone();
        let agents = agents.ok_or_else(|| Fail::bad("the agents are gone: set_config again"))?;
        blocking(move || {
            remote
                .iter()
                .try_for_each(|(l, _)| agents.capture(l, start))
        })
        .await?
        .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![one_line(&e)]))?;
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
    let frames = Arc::new(Mutex::new(Vec::new()));
    let failed = socket::Failed::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (f, e, s) = (Arc::clone(&frames), Arc::clone(&failed), Arc::clone(&stop));
    let thread = blocking(move || socket::start(&location, f, e, s))
        .await?
        .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![one_line(&e)]))?;
    // The previous capture of the port (its thread and frames) goes when replaced.
    let old = app.lock().captures.insert(
        key,
        CaptureState {
            running: Some((stop, thread)),
            frames,
            failed,
        },
    );
    drop(old);
    Ok(())
}

/// Stops the captures kept as `keys`; their frames stay.
pub(super) async fn stop_ports(app: &App, keys: Vec<String>) -> Result<(), Fail> {
    let threads: Vec<_> = {
        let mut inner = app.lock();
        keys.iter()
            .filter_map(|n| inner.captures.get_mut(n).and_then(|c| c.running.take()))
            .collect()
    };
    blocking(move || {
        for (stop, thread) in threads {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
    })
    .await
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
            inner.counting.remote.clone(),
        )
    };
    let pcapng = format == otg::CaptureFormat::Pcapng;
    let file = match (&location.agent, agents) {
        // The agent that owns the port writes the file.
        (Some(_), Some(agents)) => blocking(move || agents.capture_file(&location, pcapng))
            .await?
            .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![one_line(&e)]))?,
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
    let frames = {
        let inner = app.lock();
        let capture = inner
            .captures
            .get(key)
            .ok_or_else(|| Fail::bad(format!("port '{key}' has no capture: start one first")))?;
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
    let name = interface.to_owned();
    let pcap = blocking(move || {
        socket::pcap(
            &frames.lock().unwrap_or_else(|p| p.into_inner()),
            format,
            &name,
        )
    })
    .await?
    .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![one_line(&e)]))?;
    Ok(octets(pcap))
}

fn octets(bytes: Vec<u8>) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/octet-stream"),
    );
    (headers, bytes).into_response()
}

/// Captures with an AF_PACKET socket made inside the port's network namespace (a socket keeps
/// the namespace it was made in, so its thread reads it from ours).
mod socket {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::SystemTime;

    use anyhow::{Context, Result};
    use linerate_afpacket::CaptureSocket;

    use super::super::{CAPTURE_BYTES, CAPTURE_FRAMES, Captured as Frames};

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

    /// The capture file of `frames` (read without their FCS): each frame with its FCS as the
    /// wire carried it, so a frame of an OTG flow of `size` 128 is 128 bytes, as ixia-c's
    /// captures show them; in the host's byte order, as libpcap writes (docs/otg.md).
    pub fn pcap(
        frames: &[(SystemTime, Vec<u8>)],
        format: linerate_otg::CaptureFormat,
        interface: &str,
    ) -> Result<Vec<u8>> {
        use linerate_port::savefile::{SaveFormat, SaveOptions, write_capture};
        let options = SaveOptions {
            format: match format {
                linerate_otg::CaptureFormat::Pcap => SaveFormat::Pcap,
                linerate_otg::CaptureFormat::Pcapng => SaveFormat::Pcapng,
            },
            fcs: true,
            interface: Some(interface.to_owned()),
        };
        let mut out = Vec::new();
        write_capture(
            &mut out,
            frames.iter().map(|(at, f)| (*at, f.as_slice())),
            &options,
        )
        .context("writing the capture")?;
        Ok(out)
    }
}
