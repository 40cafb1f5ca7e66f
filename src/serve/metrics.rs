//! get_metrics: flow and port counts read from the receive program and the transmit's progress.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use linerate_otg as otg;
use otg::requests::MetricsAsk;

use linerate_testbed::{BedControl, FlowState, Progress};

use super::state::{App, Counting, Fail, blocking, json};

pub(super) async fn get_metrics(
    State(app): State<Arc<App>>,
    body: Bytes,
) -> Result<Response, Fail> {
    let req: otg::MetricsRequest = otg::parse_json(&body)?;
    super::routing::check(&app).await?;
    let (flows, names) = match otg::requests::metrics(&req, app.mapped()?.as_ref()) {
        Ok(MetricsAsk::Bgp { v6, peers }) => return super::routing::metrics(&app, v6, peers).await,
        Ok(MetricsAsk::Isis(routers)) => return super::routing::isis(&app, routers, false).await,
        Ok(MetricsAsk::Ospfv2(routers)) => {
            return super::routing::ospfv2(&app, routers, false).await;
        }
        Ok(MetricsAsk::Ospfv3(routers)) => {
            return super::routing::ospfv3(&app, routers, false).await;
        }
        Ok(MetricsAsk::Lldp(agents)) => return super::routing::lldp(&app, agents, None).await,
        Ok(MetricsAsk::Lag(names)) => {
            let views = lag_views(&app);
            let ports = Read::now(&app).await?.counted.ports(&[]);
            return Ok(json(&otg::lag::answers::lag_response(
                &views, &ports, &names,
            )));
        }
        Ok(MetricsAsk::Lacp { lags, members }) => {
            let views = lag_views(&app);
            return Ok(json(&otg::lag::answers::lacp_response(
                &views, &lags, &members,
            )));
        }
        Ok(MetricsAsk::Flows(names)) => (true, names),
        Ok(MetricsAsk::Ports(names)) => (false, names),
        Err(why) => return Err(Fail::bad(why)),
    };
    let read = Read::now(&app).await?;
    let response = if flows {
        otg::MetricsResponse {
            choice: "flow_metrics".into(),
            flow_metrics: Some(read.flows(&names)),
            ..Default::default()
        }
    } else {
        otg::MetricsResponse {
            choice: "port_metrics".into(),
            port_metrics: Some(read.counted.ports(&names)),
            ..Default::default()
        }
    };
    Ok(json(&response))
}

/// Every LAG's state now (none before a config with LAGs).
fn lag_views(app: &App) -> Vec<linerate_lacp::LagView> {
    let lags = app.lock().lags.clone();
    lags.map(|l| l.views()).unwrap_or_default()
}

/// `GET /metrics`: every flow's and port's metrics of one instant in the OpenMetrics text
/// format, for Prometheus; an empty page before any config.
pub(super) async fn get_prometheus(State(app): State<Arc<App>>) -> Result<Response, Fail> {
    let page = if app.agent.is_some() {
        agent_page(&app).await?
    } else if app.lock().mapped.is_none() {
        otg::exposition::openmetrics(&[], &[])
    } else {
        let read = Read::now(&app).await?;
        otg::exposition::openmetrics(&read.flows(&[]), &read.counted.ports(&[]))
    };
    let kind = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    Ok(([(axum::http::header::CONTENT_TYPE, kind)], page).into_response())
}

/// An agent's page: its setup's ports and what their receivers counted, by flow id (empty before
/// a setup).
async fn agent_page(app: &App) -> Result<String, Fail> {
    use otg::exposition::{AgentFlow, AgentPort};
    let (counting, progress) = {
        let inner = app.lock();
        (Arc::clone(&inner.counting), Arc::clone(&inner.run.progress))
    };
    let of = Arc::clone(&counting);
    let (counts, links) = blocking(move || {
        let counts = of.counts.read();
        let links: Vec<bool> = of
            .places
            .iter()
            .map(|p| of.counts.link(p, &of.places))
            .collect();
        (counts, links)
    })
    .await?;
    let counts = counts.map_err(|e| Fail::internal(&e))?;
    let result = progress.result();
    let (mut ports, mut flows) = (Vec::new(), Vec::new());
    for (i, place) in counting.places.iter().enumerate() {
        let totals = counts.totals.get(i).and_then(Option::as_ref);
        let frames_tx = match &result {
            Some(r) if !progress.running() => r
                .per_port
                .iter()
                .find(|(port, _, _)| *port == i)
                .map(|(_, frames, _)| *frames),
            _ if counting.places.len() == 1 => Some(progress.sent().0),
            _ => None,
        };
        ports.push(AgentPort {
            name: place.clone(),
            frames_rx: totals.map_or(0, linerate_rx::RxTotals::all_frames),
            // Every frame's bytes, with its FCS, as OTG counts them.
            bytes_rx: totals.map_or(0, |t| {
                let g = &t.global;
                let flows: u64 = t.flows.iter().map(|f| f.bytes).sum();
                flows + g.other_bytes + g.untracked_bytes + 4 * t.all_frames()
            }),
            frames_tx,
            link_up: links.get(i).copied().unwrap_or(false),
        });
        for f in totals.map(|t| t.flows.as_slice()).unwrap_or_default() {
            flows.push(AgentFlow {
                id: f.flow,
                port: place.clone(),
                frames_rx: f.frames,
                bytes_rx: f.bytes + 4 * f.frames,
                lost: f.estimated_loss(),
            });
        }
    }
    Ok(otg::exposition::agent_openmetrics(&ports, &flows))
}

/// What the metrics are read from, taken at one instant, and where they are counted.
struct Read {
    counted: otg::metrics::Counted,
    counting: Arc<Counting>,
}

impl Read {
    async fn now(app: &App) -> Result<Read, Fail> {
        let (mapped, counting, progress, captures, control) = {
            let inner = app.lock();
            let mapped = inner.mapped.clone();
            let mapped = mapped.ok_or_else(|| Fail::bad("no config: set_config first"))?;
            let captures: BTreeMap<String, bool> = inner
                .captures
                .iter()
                .map(|(k, c)| (k.clone(), c.running()))
                .collect();
            let progress = Arc::clone(&inner.run.progress);
            let control = inner.bed.as_ref().map(|b| b.control().clone());
            (
                mapped,
                Arc::clone(&inner.counting),
                progress,
                captures,
                control,
            )
        };
        if let Some(e) = progress.result().and_then(|r| r.error) {
            return Err(Fail::internal(&format!("the last transmit failed: {e}")));
        }
        // Every receiver's counts (their maps are read off the runtime's threads; an agent's as
        // last polled) and every port's link.
        let at = mapped
            .ports
            .iter()
            .map(|p| (p.name.clone(), p.location.to_string()));
        let (at, of) = (at.collect(), Arc::clone(&counting));
        let (totals, links) = blocking(move || of.counts.read_with_links(at, &of.places))
            .await?
            .map_err(|e| Fail::internal(&e))?;
        let counted = otg::metrics::Counted {
            mapped,
            flows: counting.flows.clone(),
            ports: counting.ports.clone(),
            places: counting.places.len(),
            totals,
            run: run_now(&progress),
            captures,
            links,
            steered: control.map(|c| steered(&c)).unwrap_or_default(),
        };
        Ok(Read { counted, counting })
    }

    fn flows(&self, names: &[String]) -> Vec<otg::FlowMetric> {
        let one_clock = |tx, rx| self.counting.counts.one_clock(tx, rx);
        self.counted.flows(names, one_clock)
    }
}

/// What each flow of a steered bed does now (none where the bed does not steer its flows).
fn steered(control: &BedControl) -> Vec<otg::metrics::FlowNow> {
    use otg::metrics::FlowNow;
    if control.check().is_err() {
        return Vec::new();
    }
    (0..control.len())
        .map(|f| match control.state(f) {
            Some(FlowState::Running) | None => FlowNow::Started,
            Some(FlowState::Paused) => FlowNow::Paused,
            Some(FlowState::Stopped) => FlowNow::Stopped,
        })
        .collect()
}

/// The run as the metrics word it.
fn run_now(progress: &Progress) -> otg::metrics::RunNow {
    let (frames, bytes) = progress.sent();
    otg::metrics::RunNow {
        running: progress.running(),
        elapsed_s: progress.elapsed(),
        frames,
        bytes,
        ended: progress.result().map(|r| otg::metrics::Sent {
            per_flow: r.per_flow,
            per_port: r.per_port,
            frames: r.frames,
            bytes: r.bytes,
        }),
    }
}
