//! get_metrics' answers from what a test bed counted: each flow's and port's frames, bytes,
//! rates, loss, timestamps and latency. Pure: the server reads the counts, this words them.

use std::collections::BTreeMap;

use linerate_rx::RxTotals;

use crate::{FlowMetric, Mapped, MetricLatency, MetricTimestamp, PortMetric};

/// Bytes (FCS included) of `frames` frames of a stream: its size schedule's sum for each whole
/// lap, its first sizes for the rest (a lap's order is what the plan sends).
pub fn bytes_of(spec: &linerate_stream::StreamSpec, frames: u64) -> u64 {
    let schedule = spec.size_mode.with_size(spec.size).schedule(spec.seed);
    let lap: u64 = schedule.iter().map(|&s| s as u64).sum();
    let len = schedule.len().max(1) as u64;
    let rest: u64 = schedule[..(frames % len) as usize]
        .iter()
        .map(|&s| s as u64)
        .sum();
    frames / len * lap + rest
}

/// Where a flow is sent and counted: the id its signature carries, the place that sends it,
/// the place whose receiver counts it (places by their index in the test bed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowCounted {
    pub id: u16,
    pub tx: usize,
    pub rx: Option<usize>,
}

/// The places an OTG port sends as and receives at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounted {
    pub tx: Option<usize>,
    pub rx: Option<usize>,
}

impl PortCounted {
    /// Which places count each OTG port of `mapped`, the bed's `places` named as its
    /// locations. One transmit port (no devices, `tx_port`): place 0 sends every flow and, when
    /// a flow names a receive port, `rx` (the first flow's receiver) counts them there. Devices
    /// or port flows on several ports: each OTG port is the place of its location, which sends
    /// and receives.
    pub fn of_ports(
        mapped: &crate::Mapped,
        places: &[String],
        rx: Option<usize>,
    ) -> std::collections::BTreeMap<String, PortCounted> {
        let mut ports = std::collections::BTreeMap::new();
        if mapped.hosts.is_empty() && mapped.flow_ports.is_empty() {
            if let Some(tx) = &mapped.tx_port {
                ports.insert(
                    tx.clone(),
                    PortCounted {
                        tx: Some(0),
                        rx: None,
                    },
                );
            }
            if let Some(name) = &mapped.rx_port {
                ports.insert(name.clone(), PortCounted { tx: None, rx });
            }
            return ports;
        }
        for p in &mapped.ports {
            let at = p.location.to_string();
            if let Some(i) = places.iter().position(|q| *q == at) {
                let i = Some(i);
                ports.insert(p.name.clone(), PortCounted { tx: i, rx: i });
            }
        }
        ports
    }
}

/// What a run sent, once it ended: frames per flow id, (place, frames, bytes without FCS) per
/// sending place, and the totals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    pub per_flow: Vec<(u16, u64)>,
    pub per_port: Vec<(usize, u64, u64)>,
    pub frames: u64,
    pub bytes: u64,
}

/// The run as it is when the metrics are asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunNow {
    pub running: bool,
    /// Seconds it has lasted (to now while it runs); None before any.
    pub elapsed_s: Option<f64>,
    /// Frames and bytes (without FCS) sent so far, all places.
    pub frames: u64,
    pub bytes: u64,
    /// What it sent, once it ended.
    pub ended: Option<Sent>,
}

/// What the metrics are read from at one moment.
#[derive(Debug, Clone)]
pub struct Counted {
    pub mapped: std::sync::Arc<Mapped>,
    /// Per flow, in the config's order.
    pub flows: Vec<FlowCounted>,
    /// Per OTG port that sends or receives.
    pub ports: BTreeMap<String, PortCounted>,
    /// The places of the test bed.
    pub places: usize,
    /// Each receiver's counts, by place.
    pub totals: Vec<Option<RxTotals>>,
    pub run: RunNow,
    /// Per OTG port with a capture: it runs.
    pub captures: BTreeMap<String, bool>,
    /// Each port's link, up or not, read when the metrics were asked for.
    pub links: BTreeMap<String, bool>,
    /// Per flow, in the config's order, what it does while the run goes on, where the test bed
    /// steers its flows (empty where it does not: every flow does what the run does).
    pub steered: Vec<FlowNow>,
}

/// What a steered flow does now (OTG's `transmit` word of a flow metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowNow {
    Started,
    Paused,
    Stopped,
}

impl FlowNow {
    pub fn word(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Paused => "paused",
            Self::Stopped => "stopped",
        }
    }
}

impl Counted {
    fn running(&self) -> bool {
        self.run.running
    }

    fn elapsed(&self) -> Option<f64> {
        self.run.elapsed_s
    }

    /// `n` a second of the run so far, while it runs (0 once it has ended: OTG's rates are
    /// live rates).
    fn rate(&self, n: u64) -> f64 {
        match self.elapsed() {
            Some(elapsed) if self.running() && elapsed > 0.0 => n as f64 / elapsed,
            _ => 0.0,
        }
    }

    fn result(&self) -> Option<&Sent> {
        self.run.ended.as_ref()
    }

    /// What the receiver of flow `index` (config order) counted of it.
    fn flow_rx(&self, index: usize) -> Option<&linerate_rx::FlowStats> {
        let at = self.flows.get(index)?;
        self.totals.get(at.rx?)?.as_ref()?.flow(at.id)
    }

    /// Frames flow `index` sent: the report's count after the run; while it runs, the
    /// receiver's estimate from the sequence numbers (highest seen + 1: a frame the flow has
    /// certainly sent), or for a lone flow the whole port's count when that is higher. The
    /// port's count is published now and then, so it can lag what has already arrived: a
    /// flow never reads as having sent fewer frames than its receiver saw.
    fn flow_tx(&self, index: usize) -> u64 {
        let Some(at) = self.flows.get(index) else {
            return 0;
        };
        if let Some(r) = self.result() {
            return r
                .per_flow
                .iter()
                .find(|(f, _)| *f == at.id)
                .map_or(0, |(_, n)| *n);
        }
        let seen = self
            .flow_rx(index)
            .map_or(0, |f| f.unique() + f.estimated_loss());
        if self.mapped.flows.len() == 1 {
            return self.run.frames.max(seen);
        }
        seen
    }

    /// The metrics of the flows named (all, with none).
    /// `one_clock(tx, rx)`: whether two places read one clock. One-way latency between two
    /// places means something only then; across clocks it is left out.
    pub fn flows(
        &self,
        names: &[String],
        one_clock: impl Fn(usize, usize) -> bool,
    ) -> Vec<FlowMetric> {
        let running = self.running();
        let rate = |n: u64| self.rate(n);
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
                FlowMetric {
                    name: f.name.clone(),
                    port_tx: f.tx_port.clone(),
                    port_rx: f.rx_port.clone().unwrap_or_default(),
                    transmit: match self.steered.get(index) {
                        Some(now) if running => now.word(),
                        _ if running => "started",
                        _ => "stopped",
                    }
                    .into(),
                    frames_tx,
                    frames_rx,
                    bytes_tx,
                    bytes_rx: stats.map_or(0, |s| s.bytes + 4 * s.frames),
                    frames_tx_rate: rate(frames_tx),
                    frames_rx_rate: rate(frames_rx),
                    loss,
                    timestamps: stats.filter(|_| f.timestamps).map(|s| MetricTimestamp {
                        first_timestamp_ns: s.first_ns as f64,
                        last_timestamp_ns: s.last_ns as f64,
                    }),
                    latency: stats
                        .filter(|_| f.latency && self.one_clock(index, &one_clock))
                        .and_then(|s| s.latency.as_ref())
                        .map(|l| MetricLatency {
                            minimum_ns: l.min as f64,
                            maximum_ns: l.max as f64,
                            average_ns: l.mean,
                        }),
                }
            })
            .collect()
    }

    /// Whether flow `index`'s sending and receiving places read one clock.
    fn one_clock(&self, index: usize, one_clock: impl Fn(usize, usize) -> bool) -> bool {
        let at = self.flows.get(index);
        at.is_none_or(|at| at.rx.is_none_or(|rx| one_clock(at.tx, rx)))
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
        let flows = self
            .flows
            .iter()
            .enumerate()
            .filter(|(_, at)| at.tx == port)
            .map(|(i, _)| {
                let f = self.flow_tx(i);
                (f, bytes_of(&self.mapped.streams[i], f))
            })
            .fold((0, 0), |(f, b), (g, c)| (f + g, b + c));
        // A lone sender's own count, unless it lags what its flows' receivers have seen.
        match (self.run.frames, self.run.bytes) {
            (f, b) if self.places <= 1 && f >= flows.0 => (f, b + 4 * f),
            _ => flows,
        }
    }

    /// The metrics of the ports named (all, with none).
    pub fn ports(&self, names: &[String]) -> Vec<PortMetric> {
        let running = self.running();
        let rate = |n: u64| self.rate(n);
        self.mapped
            .ports
            .iter()
            .filter(|p| names.is_empty() || names.contains(&p.name))
            .map(|p| {
                let at = self.ports.get(&p.name).copied().unwrap_or_default();
                let is_tx = at.tx.is_some();
                let (ft, bt) = at.tx.map_or((0, 0), |i| self.port_tx(i));
                let (fr, br) = at
                    .rx
                    .and_then(|i| self.totals.get(i)?.as_ref())
                    .map_or((0, 0), port_rx);
                PortMetric {
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

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_rx::FlowStats;
    use linerate_stream::StreamSpec;

    #[test]
    fn frames_tx_never_reads_below_what_has_arrived() {
        // The first poll of a run: the port's count (published now and then) still 0 while
        // the receiver has 28 frames of the flow, sequence numbers 0..=27.
        let config = serde_json::json!({
            "ports": [{"name": "tx", "location": "lr0"}, {"name": "rx", "location": "lr1"}],
            "flows": [{"name": "f", "tx_rx": {"choice": "port", "port": {"tx_name": "tx", "rx_names": ["rx"]}},
                "metrics": {"enable": true}, "size": {"choice": "fixed", "fixed": 100},
                "packet": [{"choice": "ethernet"}, {"choice": "ipv4"}, {"choice": "udp"}]}]
        });
        let mapped = crate::map::map_config(
            &crate::map::parse_config(config.to_string().as_bytes()).unwrap(),
        )
        .unwrap();
        let totals = [
            None,
            Some(RxTotals {
                flows: vec![FlowStats {
                    flow: 0,
                    frames: 28,
                    bytes: 28 * 96,
                    first_ns: 1,
                    last_ns: 2,
                    late: 0,
                    duplicates: 0,
                    old: 0,
                    gaps: 0,
                    latency: None,
                    cpus: 1,
                    next_seq: 28,
                    gap_buckets: None,
                }],
                ..RxTotals::default()
            }),
        ];
        let run = RunNow {
            running: true,
            elapsed_s: Some(0.01),
            ..RunNow::default()
        };
        let ports = BTreeMap::from([
            (
                "tx".to_string(),
                PortCounted {
                    tx: Some(0),
                    rx: None,
                },
            ),
            (
                "rx".to_string(),
                PortCounted {
                    tx: None,
                    rx: Some(1),
                },
            ),
        ]);
        let counted = Counted {
            mapped: std::sync::Arc::new(mapped),
            flows: vec![FlowCounted {
                id: 0,
                tx: 0,
                rx: Some(1),
            }],
            ports,
            places: 1,
            totals: totals.to_vec(),
            run: run.clone(),
            captures: BTreeMap::new(),
            links: BTreeMap::new(),
            steered: Vec::new(),
        };
        let f = &counted.flows(&[], |_, _| true)[0];
        assert_eq!((f.frames_tx, f.frames_rx, f.bytes_tx), (28, 28, 2800));
        let p = counted.ports(&["tx".into()]);
        assert_eq!((p[0].frames_tx, p[0].bytes_tx), (28, 2800));
        // Once the port's own count is ahead, it is the one shown.
        let ahead = RunNow {
            frames: 40,
            bytes: 40 * 96,
            ..run.clone()
        };
        let counted = Counted {
            run: ahead,
            ..counted
        };
        assert_eq!(counted.flows(&[], |_, _| true)[0].frames_tx, 40);
        assert_eq!(counted.ports(&["tx".into()])[0].frames_tx, 40);
    }

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
