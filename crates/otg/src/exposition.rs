//! The metrics of one instant in the OpenMetrics text format (what Prometheus scrapes): the
//! same flow and port metrics get_metrics answers, so a Grafana dashboard reads the numbers an
//! OTG client reads. Encoded by `prometheus-client`, the Prometheus project's own crate.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::{FlowMetric, PortMetric};

type Labels = Vec<(&'static str, String)>;
type Counters = Family<Labels, Counter>;
type Gauges = Family<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>;

/// A label value as OpenMetrics writes it: `prometheus-client` 0.24 writes values as given, and
/// a flow's name may hold a quote or a backslash.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

type Count<T> = (&'static str, &'static str, fn(&T) -> u64);
type Level<T> = (&'static str, &'static str, fn(&T) -> Option<f64>);

/// A flow's counters: name (after `linerate_`), help, value.
const FLOW_COUNTERS: &[Count<FlowMetric>] = &[
    ("flow_frames_tx", "Frames the flow sent", |f| f.frames_tx),
    ("flow_frames_rx", "Frames of the flow received", |f| {
        f.frames_rx
    }),
    ("flow_bytes_tx", "Bytes the flow sent, FCS included", |f| {
        f.bytes_tx
    }),
    (
        "flow_bytes_rx",
        "Bytes of the flow received, FCS included",
        |f| f.bytes_rx,
    ),
];

/// A flow's gauges; None leaves the flow out (latency where none is measured).
const FLOW_GAUGES: &[Level<FlowMetric>] = &[
    ("flow_frames_tx_rate", "Frames per second sent", |f| {
        Some(f.frames_tx_rate)
    }),
    ("flow_frames_rx_rate", "Frames per second received", |f| {
        Some(f.frames_rx_rate)
    }),
    (
        "flow_loss_percent",
        "Frames sent and not received, once the flow stopped",
        |f| Some(f.loss),
    ),
    ("flow_transmitting", "1 while the flow transmits", |f| {
        Some(one_if(f.transmit == "started"))
    }),
    ("flow_latency_min_ns", "Least one-way latency", |f| {
        Some(f.latency.as_ref()?.minimum_ns)
    }),
    ("flow_latency_max_ns", "Greatest one-way latency", |f| {
        Some(f.latency.as_ref()?.maximum_ns)
    }),
    ("flow_latency_avg_ns", "Mean one-way latency", |f| {
        Some(f.latency.as_ref()?.average_ns)
    }),
];

const PORT_COUNTERS: &[Count<PortMetric>] = &[
    ("port_frames_tx", "Frames the port sent", |p| p.frames_tx),
    ("port_frames_rx", "Frames the port received", |p| {
        p.frames_rx
    }),
    ("port_bytes_tx", "Bytes the port sent, FCS included", |p| {
        p.bytes_tx
    }),
    (
        "port_bytes_rx",
        "Bytes the port received, FCS included",
        |p| p.bytes_rx,
    ),
];

const PORT_GAUGES: &[Level<PortMetric>] = &[
    ("port_frames_tx_rate", "Frames per second sent", |p| {
        Some(p.frames_tx_rate)
    }),
    ("port_frames_rx_rate", "Frames per second received", |p| {
        Some(p.frames_rx_rate)
    }),
    ("port_link_up", "1 while the port's link is up", |p| {
        Some(one_if(p.link == "up"))
    }),
    ("port_transmitting", "1 while the port transmits", |p| {
        Some(one_if(p.transmit == "started"))
    }),
];

fn one_if(b: bool) -> f64 {
    f64::from(u8::from(b))
}

/// Every counter and gauge of the tables over `items`, each item labelled by `labels`.
fn register<T>(
    registry: &mut Registry,
    items: &[T],
    labels: impl Fn(&T) -> Labels,
    counters: &[Count<T>],
    gauges: &[Level<T>],
) {
    for (name, help, value) in counters {
        let family = Counters::default();
        for item in items {
            family.get_or_create(&labels(item)).inc_by(value(item));
        }
        registry.register(*name, *help, family);
    }
    for (name, help, value) in gauges {
        let family = Gauges::default();
        for item in items {
            if let Some(v) = value(item) {
                family.get_or_create(&labels(item)).set(v);
            }
        }
        registry.register(*name, *help, family);
    }
}

/// `flows` and `ports` (as get_metrics answers them, read at one instant) as an OpenMetrics
/// page. Counters: frames and bytes (FCS included, as OTG counts them) each way; gauges: the
/// rates, loss, whether each transmits, each link, and a flow's latency where it is measured.
pub fn openmetrics(flows: &[FlowMetric], ports: &[PortMetric]) -> String {
    let mut registry = Registry::with_prefix("linerate");
    let flow = |f: &FlowMetric| -> Labels {
        vec![
            ("flow", label(&f.name)),
            ("port_tx", label(&f.port_tx)),
            ("port_rx", label(&f.port_rx)),
        ]
    };
    register(&mut registry, flows, flow, FLOW_COUNTERS, FLOW_GAUGES);
    let port = |p: &PortMetric| -> Labels {
        vec![("port", label(&p.name)), ("location", label(&p.location))]
    };
    register(&mut registry, ports, port, PORT_COUNTERS, PORT_GAUGES);
    let mut page = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut page, &registry);
    page
}

/// One port of an agent, as its page says it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentPort {
    /// The interface, as the agent names it.
    pub name: String,
    pub frames_rx: u64,
    /// FCS included.
    pub bytes_rx: u64,
    /// Frames it sent, where known (the run's total of an agent of one port while it runs,
    /// each port's once it has ended).
    pub frames_tx: Option<u64>,
    pub link_up: bool,
}

/// One flow received at an agent's port (by its test-bed-wide id: the agent holds no names).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentFlow {
    pub id: u16,
    pub port: String,
    pub frames_rx: u64,
    /// FCS included.
    pub bytes_rx: u64,
    /// Found missing from its sequence so far.
    pub lost: u64,
}

const AGENT_PORT_COUNTERS: &[Count<AgentPort>] = &[
    ("agent_port_frames_rx", "Frames the port received", |p| {
        p.frames_rx
    }),
    (
        "agent_port_bytes_rx",
        "Bytes the port received, FCS included",
        |p| p.bytes_rx,
    ),
];
const AGENT_PORT_GAUGES: &[Level<AgentPort>] = &[
    (
        "agent_port_frames_tx",
        "Frames the port sent in the run so far, where known",
        |p| p.frames_tx.map(|n| n as f64),
    ),
    ("agent_port_link_up", "1 while the port's link is up", |p| {
        Some(one_if(p.link_up))
    }),
];
const AGENT_FLOW_COUNTERS: &[Count<AgentFlow>] = &[
    (
        "agent_flow_frames_rx",
        "Frames of the flow received here",
        |f| f.frames_rx,
    ),
    (
        "agent_flow_bytes_rx",
        "Bytes of the flow received here, FCS included",
        |f| f.bytes_rx,
    ),
    (
        "agent_flow_lost",
        "Frames of the flow found missing from its sequence",
        |f| f.lost,
    ),
];

/// An agent's page: its ports' counters and the flows its receivers count, by flow id (the
/// names are the controller's: scrape its `serve` for OTG's metrics).
pub fn agent_openmetrics(ports: &[AgentPort], flows: &[AgentFlow]) -> String {
    let mut registry = Registry::with_prefix("linerate");
    let port = |p: &AgentPort| -> Labels { vec![("port", label(&p.name))] };
    register(
        &mut registry,
        ports,
        port,
        AGENT_PORT_COUNTERS,
        AGENT_PORT_GAUGES,
    );
    let flow =
        |f: &AgentFlow| -> Labels { vec![("flow_id", f.id.to_string()), ("port", label(&f.port))] };
    register(&mut registry, flows, flow, AGENT_FLOW_COUNTERS, &[]);
    let mut page = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut page, &registry);
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_page_has_its_ports_and_the_flows_it_received_by_id() {
        let ports = [AgentPort {
            name: "d21".into(),
            frames_rx: 10,
            bytes_rx: 1280,
            frames_tx: Some(7),
            link_up: true,
        }];
        let flows = [AgentFlow {
            id: 3,
            port: "d21".into(),
            frames_rx: 9,
            bytes_rx: 1152,
            lost: 1,
        }];
        let page = agent_openmetrics(&ports, &flows);
        for line in [
            r#"linerate_agent_port_frames_rx_total{port="d21"} 10"#,
            r#"linerate_agent_port_frames_tx{port="d21"} 7.0"#,
            r#"linerate_agent_port_link_up{port="d21"} 1.0"#,
            r#"linerate_agent_flow_frames_rx_total{flow_id="3",port="d21"} 9"#,
            r#"linerate_agent_flow_lost_total{flow_id="3",port="d21"} 1"#,
        ] {
            assert!(page.contains(line), "{line} not in\n{page}");
        }
        assert!(page.ends_with("# EOF\n"), "{page}");
    }

    #[test]
    fn counters_carry_the_otg_totals_and_latency_only_where_measured() {
        let flows = vec![
            FlowMetric {
                name: "f1".into(),
                port_tx: "p1".into(),
                port_rx: "p2".into(),
                transmit: "stopped".into(),
                frames_tx: 1000,
                frames_rx: 998,
                bytes_tx: 128_000,
                bytes_rx: 127_744,
                latency: Some(crate::MetricLatency {
                    minimum_ns: 1.0,
                    maximum_ns: 9.0,
                    average_ns: 4.5,
                }),
                ..FlowMetric::default()
            },
            FlowMetric {
                name: "f\"2".into(),
                port_tx: "p1".into(),
                transmit: "started".into(),
                frames_tx: 7,
                ..FlowMetric::default()
            },
        ];
        let page = openmetrics(&flows, &[]);
        assert!(
            page.contains("# TYPE linerate_flow_frames_tx counter"),
            "{page}"
        );
        assert!(
            page.contains(
                r#"linerate_flow_frames_tx_total{flow="f1",port_tx="p1",port_rx="p2"} 1000"#
            ),
            "{page}"
        );
        assert!(
            page.contains(
                r#"linerate_flow_frames_rx_total{flow="f1",port_tx="p1",port_rx="p2"} 998"#
            )
        );
        // A label value is escaped, not cut.
        assert!(page.contains(r#"flow="f\"2""#), "{page}");
        assert!(
            page.contains(r#"linerate_flow_transmitting{flow="f\"2",port_tx="p1",port_rx=""} 1.0"#),
            "{page}"
        );
        assert_eq!(
            page.matches("linerate_flow_latency_avg_ns{").count(),
            1,
            "{page}"
        );
        assert!(page.trim_end().ends_with("# EOF"), "{page}");
    }
}
