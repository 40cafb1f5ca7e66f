//! The benchmark's report: its settings and context, each event's per-flow figures and
//! aggregates, the spread over repeated events; as a console table, JSON, CSV and a plot.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::analysis::{Aggregate, FlowTimes, Spread};

/// One flow of one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowRow {
    pub flow: String,
    /// Its first prefix (a /24) and how many it steps over.
    pub first_prefix: Ipv4Addr,
    pub prefixes: u32,
    /// Its offered rate, frames per second.
    pub rate_pps: f64,
    #[serde(flatten)]
    pub times: FlowTimes,
}

/// One event: what it did to every flow, and its RFC 7747 figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventReport {
    /// 1 to `repeat`.
    pub event: u32,
    /// From the event to the poll that first saw every prefix in the DUT's FIB through the
    /// next-best path (ms; polled about every 100 ms).
    pub fib_ms: Option<f64>,
    /// From the event to the end of the measurement (every flow settled), ms.
    pub measured_ms: f64,
    #[serde(flatten)]
    pub aggregate: Aggregate,
    pub flows: Vec<FlowRow>,
}

/// Over the events: the spread of each figure (min, median, max).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spreads {
    pub loss_ms: Option<Spread>,
    pub first_prefix_ms: Option<Spread>,
    pub last_prefix_ms: Option<Spread>,
    pub fib_ms: Option<Spread>,
}

impl Spreads {
    pub fn of(events: &[EventReport]) -> Spreads {
        let a = || events.iter().map(|e| &e.aggregate);
        Spreads {
            loss_ms: Spread::of(a().map(|a| a.loss_ms)),
            first_prefix_ms: Spread::of(a().filter_map(|a| a.first_prefix_ms)),
            last_prefix_ms: Spread::of(a().filter_map(|a| a.last_prefix_ms)),
            fib_ms: Spread::of(events.iter().filter_map(|e| e.fib_ms)),
        }
    }
}

/// The whole benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub benchmark: String,
    pub lab: String,
    /// The DUT's BGP implementation.
    pub dut: String,
    pub event: String,
    pub prefixes: u32,
    pub flows: u32,
    pub prefixes_per_flow: u32,
    /// The offered load of all flows (frames/s) and of each.
    pub rate_pps: f64,
    pub flow_rate_pps: f64,
    pub size: u32,
    pub settle_ms: f64,
    /// The preferred and the next-best device's addresses (the DUT's next hops).
    pub preferred_next_hop: Ipv4Addr,
    pub backup_next_hop: Ipv4Addr,
    pub kernel: String,
    pub cpu: String,
    pub date: String,
    pub events: Vec<EventReport>,
    pub spread: Spreads,
    pub accounting: Accounting,
}

/// The whole run, once traffic stopped: what was sent and received per flow, summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    pub sent: u64,
    /// Received once (duplicates taken out).
    pub received: u64,
    /// sent − received.
    pub lost: u64,
    /// The sequence numbers the receiver saw reached, less the frames it received (over every
    /// CPU): what every figure is computed from.
    pub gap_lost: u64,
    /// Lost during the measured events (the rest was lost outside them).
    pub lost_in_events: u64,
    /// Flows whose gaps differ from sent − received (none when the gaps counted exactly).
    pub inexact: Vec<String>,
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

impl Report {
    /// The console table: one line an event, the spread, and the flows of the worst event
    /// that lost most (all flows are in the JSON and CSV).
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "RFC 7747 convergence on lab {} ({}): {} prefixes in {} flows ({} a flow), {:.0} pps \
             in all ({:.1} a flow), {} B frames, event {}",
            self.lab,
            self.dut,
            self.prefixes,
            self.flows,
            self.prefixes_per_flow,
            self.rate_pps,
            self.flow_rate_pps,
            self.size,
            self.event
        );
        let _ = writeln!(
            s,
            "{:>5}  {:>10}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}",
            "event",
            "lost",
            "loss-der ms",
            "flow min ms",
            "flow max ms",
            "first-pfx ms",
            "last-pfx ms",
            "FIB ms"
        );
        for e in &self.events {
            let a = &e.aggregate;
            let _ = writeln!(
                s,
                "{:>5}  {:>10}  {:>12.1}  {:>12.1}  {:>12.1}  {:>12}  {:>12}  {:>9}",
                e.event,
                a.lost,
                a.loss_ms,
                a.min_flow_loss_ms,
                a.max_flow_loss_ms,
                ms(a.first_prefix_ms),
                ms(a.last_prefix_ms),
                ms(e.fib_ms)
            );
        }
        let a = &self.accounting;
        let _ = writeln!(
            s,
            "run: {} sent, {} received, {} lost ({} in the events); sequence gaps {} {}",
            a.sent,
            a.received,
            a.lost,
            a.lost_in_events,
            a.gap_lost,
            if a.inexact.is_empty() {
                "(exact for every flow)".to_owned()
            } else {
                format!("(differ for {} flows)", a.inexact.len())
            }
        );
        if self.events.len() > 1 {
            let line = |name: &str, sp: &Option<Spread>| match sp {
                Some(x) => format!(
                    "{name}: min {:.1}, median {:.1}, max {:.1} ms\n",
                    x.min, x.median, x.max
                ),
                None => format!("{name}: -\n"),
            };
            s.push_str(&line("loss-derived", &self.spread.loss_ms));
            s.push_str(&line("first prefix", &self.spread.first_prefix_ms));
            s.push_str(&line("last prefix", &self.spread.last_prefix_ms));
            s.push_str(&line("FIB", &self.spread.fib_ms));
        }
        s
    }

    /// One CSV row per event and flow.
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "event,flow,first_prefix,prefixes,rate_pps,lost,loss_ms,outage_ms,loss_from_ms,restored_ms,received\n",
        );
        for e in &self.events {
            for f in &e.flows {
                let t = &f.times;
                let opt = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.3}"));
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{:.3},{},{},{},{}",
                    e.event,
                    f.flow,
                    f.first_prefix,
                    f.prefixes,
                    f.rate_pps,
                    t.lost,
                    t.loss_ms,
                    opt(t.outage_ms),
                    opt(t.loss_from_ms),
                    opt(t.restored_ms),
                    t.received
                );
            }
        }
        s
    }

    /// Each event's per-flow loss-derived time against the flow's number, and when each flow
    /// was restored, to `path` (.svg or .png).
    pub fn plot(&self, path: &Path) -> Result<(), linerate_report::ReportError> {
        use linerate_report::{Curve, Panel};
        let curves = |pick: fn(&FlowTimes) -> Option<f64>| {
            self.events
                .iter()
                .map(|e| Curve {
                    name: format!("event {}", e.event),
                    points: e
                        .flows
                        .iter()
                        .enumerate()
                        .filter_map(|(i, f)| Some((i as f64, pick(&f.times)?)))
                        .collect(),
                    dashed: false,
                })
                .collect()
        };
        let panels = [
            Panel {
                x_desc: "flow".into(),
                y_desc: "loss-derived convergence (ms)".into(),
                curves: curves(|t| Some(t.loss_ms)),
            },
            Panel {
                x_desc: "flow".into(),
                y_desc: "restored after the event (ms)".into(),
                curves: curves(|t| t.restored_ms),
            },
        ];
        let title = format!(
            "RFC 7747 convergence, {} prefixes, event {} (lab {})",
            self.prefixes, self.event, self.lab
        );
        linerate_report::plot_panels(path, &title, &panels)
    }
}
