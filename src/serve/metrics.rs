//! get_metrics: flow and port counts read from the receive program and the transmit's progress.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use linerate_otg as otg;
use linerate_rx::RxTotals;

use super::api::Fail;
use super::{App, Counting, Progress, RunResult, blocking};

/// What the metrics are read from, taken from the state at once: the config, where it counts,
/// the run's progress and which captures run.
type Current = (
    Arc<otg::Mapped>,
    Arc<Counting>,
    Arc<Progress>,
    BTreeMap<String, bool>,
);

fn current(app: &App) -> Result<Current, Fail> {
    let inner = app.lock();
    let captures: BTreeMap<String, bool> = inner
        .captures
        .iter()
        .map(|(k, c)| {
            let failed = c.failed.lock().unwrap_or_else(|p| p.into_inner()).is_some();
            (k.clone(), c.running.is_some() && !failed)
        })
        .collect();
    Ok((
        inner
            .mapped
            .clone()
            .ok_or_else(|| Fail::bad("no config: set_config first"))?,
        Arc::clone(&inner.counting),
        Arc::clone(&inner.run.progress),
        captures,
    ))
}

pub(super) async fn get_metrics(
    State(app): State<Arc<App>>,
    body: Bytes,
) -> Result<Response, Fail> {
    let req: otg::MetricsRequest = otg::parse_json(&body)?;
    let (mapped, counting, progress, captures) = current(&app)?;
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
    let (totals, links) = match &counting.remote {
        // Agents' ports: their counts and links as the agents last reported them.
        Some(remote) => {
            let links = mapped
                .ports
                .iter()
                .map(|p| {
                    let g = counting.ports.get(&p.name).and_then(|at| at.rx);
                    (p.name.clone(), g.is_some_and(|g| remote.link(g)))
                })
                .collect();
            (remote.totals(), links)
        }
        None => local_counts(&mapped, &counting).await?,
    };
    let view = View {
        mapped: &mapped,
        counting: &counting,
        totals: &totals,
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
            let mut flows = view.flows(&f.flow_names);
            if let Some(remote) = &counting.remote {
                // One-way latency between two hosts means something only on one clock.
                for m in &mut flows {
                    let at = mapped
                        .flows
                        .iter()
                        .position(|g| g.name == m.name)
                        .and_then(|i| counting.flows.get(i));
                    if !at.is_some_and(|at| at.rx.is_some_and(|rx| remote.one_clock(at.tx, rx))) {
                        m.latency = None;
                    }
                }
            }
            otg::MetricsResponse {
                choice: "flow_metrics".into(),
                flow_metrics: Some(flows),
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

/// This host's receivers' counts (their maps are read off the runtime's threads) and its
/// ports' links.
async fn local_counts(
    mapped: &otg::Mapped,
    counting: &Counting,
) -> Result<(Vec<Option<RxTotals>>, BTreeMap<String, bool>), Fail> {
    let receivers = counting.receivers.clone();
    let totals: Vec<Option<RxTotals>> = blocking(move || {
        receivers
            .iter()
            .map(|rx| rx.as_ref().map(|rx| rx.read()).transpose())
            .collect::<Result<_, _>>()
    })
    .await?
    .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![e.to_string()]))?;
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
    Ok((totals, links))
}

/// Bytes (FCS included) of `frames` frames of a stream: its size schedule's sum for each whole
/// lap, its first sizes for the rest (a lap's order is what the plan sends).
pub(super) fn bytes_of(spec: &linerate_stream::StreamSpec, frames: u64) -> u64 {
    let schedule = spec.size_mode.with_size(spec.size).schedule(spec.seed);
    let lap: u64 = schedule.iter().map(|&s| s as u64).sum();
    let len = schedule.len().max(1) as u64;
    let rest: u64 = schedule[..(frames % len) as usize]
        .iter()
        .map(|&s| s as u64)
        .sum();
    frames / len * lap + rest
}

/// What the metrics are read from at one moment.
pub(super) struct View<'a> {
    mapped: &'a otg::Mapped,
    counting: &'a Counting,
    /// Each receiver's counts, by session port.
    totals: &'a [Option<RxTotals>],
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

    /// What the receiver of flow `index` (config order) counted of it.
    fn flow_rx(&self, index: usize) -> Option<&linerate_rx::FlowStats> {
        let at = self.counting.flows.get(index)?;
        self.totals.get(at.rx?)?.as_ref()?.flow(at.id)
    }

    /// Frames flow `index` sent: the report's count after the run; while it runs, the whole
    /// port's count for a lone flow, else the receiver's estimate from the sequence numbers
    /// (highest seen + 1: a frame the flow has certainly sent).
    fn flow_tx(&self, index: usize) -> u64 {
        let Some(at) = self.counting.flows.get(index) else {
            return 0;
        };
        if let Some(r) = self.result() {
            return r
                .per_flow
                .iter()
                .find(|(f, _)| *f == at.id)
                .map_or(0, |(_, n)| *n);
        }
        if self.mapped.flows.len() == 1 {
            return self.progress.frames.load(Ordering::Relaxed);
        }
        self.flow_rx(index)
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
            .map(|(index, f)| {
                let spec = &self.mapped.streams[index];
                let stats = self.flow_rx(index).filter(|_| f.metrics);
                let frames_tx = self.flow_tx(index);
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

    /// Frames and bytes (FCS included) session port `port` sent: its report's after the run;
    /// while it runs, the progress of a lone sender, else the sum of its flows' estimates.
    fn port_tx(&self, port: usize) -> (u64, u64) {
        if let Some(r) = self.result() {
            return r
                .per_port
                .iter()
                .find(|(p, ..)| *p == port)
                .map_or((0, 0), |(_, f, b)| (*f, b + 4 * f));
        }
        if self.counting.receivers.len() <= 1 {
            let f = self.progress.frames.load(Ordering::Relaxed);
            return (f, self.progress.bytes.load(Ordering::Relaxed) + 4 * f);
        }
        self.counting
            .flows
            .iter()
            .enumerate()
            .filter(|(_, at)| at.tx == port)
            .map(|(i, _)| {
                let f = self.flow_tx(i);
                (f, bytes_of(&self.mapped.streams[i], f))
            })
            .fold((0, 0), |(f, b), (g, c)| (f + g, b + c))
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
        self.mapped
            .ports
            .iter()
            .filter(|p| names.is_empty() || names.contains(&p.name))
            .map(|p| {
                let at = self
                    .counting
                    .ports
                    .get(&p.name)
                    .copied()
                    .unwrap_or_default();
                let is_tx = at.tx.is_some();
                let (ft, bt) = at.tx.map_or((0, 0), |i| self.port_tx(i));
                let (fr, br) = at
                    .rx
                    .and_then(|i| self.totals.get(i)?.as_ref())
                    .map_or((0, 0), port_rx);
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

/// Frames and bytes (FCS included) a receiver counted: every flow's and what was no flow.
fn port_rx(t: &RxTotals) -> (u64, u64) {
    let g = &t.global;
    let (f, b) = t.flows.iter().fold(
        (
            g.other_frames + g.untracked_frames,
            g.other_bytes + g.untracked_bytes,
        ),
        |(f, b), s| (f + s.frames, b + s.bytes),
    );
    (f, b + 4 * f)
}

/// Whether the port's interface is up and running (operstate up: `IFF_RUNNING` with `IFF_UP`),
/// asked of the kernel inside the port's network namespace — sysfs shows the namespace it was
/// mounted in, not the port's. An interface that cannot be found is not up.
pub(super) fn link_up(location: &linerate_otg::Location) -> bool {
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
