//! What the console shows, from one metrics answer to the next: each flow's and port's counters,
//! rates from the difference between two readings (OTG's own rates are averages since the
//! start), and the last minute of received rates for the sparklines. No terminal here: the TUI
//! draws it and `--no-tui` prints it as text.

use std::collections::VecDeque;

use serde::Deserialize;

/// Readings kept for a sparkline: a minute at one a second.
pub const HISTORY: usize = 60;

/// A flow's metric as any OTG server words it (missing fields read as zero).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FlowReading {
    pub name: String,
    pub transmit: String,
    pub frames_tx: u64,
    pub frames_rx: u64,
    pub loss: f64,
    pub latency: Option<Latency>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Latency {
    pub minimum_ns: f64,
    pub maximum_ns: f64,
    pub average_ns: f64,
}

/// A port's metric as any OTG server words it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PortReading {
    pub name: String,
    pub link: String,
    pub frames_tx: u64,
    pub frames_rx: u64,
}

/// One row: what was read last, the rates since the reading before, and the history.
#[derive(Debug, Clone, Default)]
pub struct Row<R> {
    pub now: R,
    pub tx_fps: f64,
    pub rx_fps: f64,
    /// Received frames a second, oldest first.
    pub history: VecDeque<u64>,
}

/// Every flow and port, as of the last reading.
#[derive(Debug, Default)]
pub struct View {
    pub flows: Vec<Row<FlowReading>>,
    pub ports: Vec<Row<PortReading>>,
    /// Seconds of the last reading (the caller's clock).
    at: Option<f64>,
}

/// Counters a reading has, for the rates.
trait Counters {
    fn name(&self) -> &str;
    fn frames(&self) -> (u64, u64);
}

impl Counters for FlowReading {
    fn name(&self) -> &str {
        &self.name
    }
    fn frames(&self) -> (u64, u64) {
        (self.frames_tx, self.frames_rx)
    }
}

impl Counters for PortReading {
    fn name(&self) -> &str {
        &self.name
    }
    fn frames(&self) -> (u64, u64) {
        (self.frames_tx, self.frames_rx)
    }
}

/// The rows of `readings`, each with its rates against the same name's row in `old`, `span`
/// seconds before (none: a first reading, or counters that went back: a new run).
fn rows<R: Counters + Clone>(old: &[Row<R>], readings: Vec<R>, span: Option<f64>) -> Vec<Row<R>> {
    readings
        .into_iter()
        .map(|now| {
            let before = old.iter().find(|r| r.now.name() == now.name());
            let (tx, rx) = now.frames();
            let (tx_fps, rx_fps) = match (before, span) {
                (Some(b), Some(span)) if span > 0.0 => {
                    let (btx, brx) = b.now.frames();
                    let per = |a: u64, b: u64| a.checked_sub(b).map_or(0.0, |d| d as f64 / span);
                    (per(tx, btx), per(rx, brx))
                }
                _ => (0.0, 0.0),
            };
            let mut history = before.map(|b| b.history.clone()).unwrap_or_default();
            if span.is_some() {
                history.push_back(rx_fps.round() as u64);
                if history.len() > HISTORY {
                    history.pop_front();
                }
            }
            Row {
                now,
                tx_fps,
                rx_fps,
                history,
            }
        })
        .collect()
}

impl View {
    /// Takes a reading made at `at` seconds.
    pub fn update(&mut self, at: f64, flows: Vec<FlowReading>, ports: Vec<PortReading>) {
        let span = self.at.map(|t| at - t);
        self.flows = rows(&self.flows, flows, span);
        self.ports = rows(&self.ports, ports, span);
        self.at = Some(at);
    }

    /// The table as text, as `--no-tui` prints it each second: one line a flow, one a port.
    pub fn plain(&self) -> String {
        let mut out = format!(
            "{:<16} {:<8} {:>12} {:>12} {:>10} {:>10} {:>7} {:>9}\n",
            "flow", "state", "frames tx", "frames rx", "tx fps", "rx fps", "loss %", "lat µs"
        );
        for f in &self.flows {
            let n = &f.now;
            out.push_str(&format!(
                "{:<16} {:<8} {:>12} {:>12} {:>10.0} {:>10.0} {:>7.3} {:>9}\n",
                n.name,
                n.transmit,
                n.frames_tx,
                n.frames_rx,
                f.tx_fps,
                f.rx_fps,
                n.loss,
                latency_us(n)
            ));
        }
        out.push_str(&format!(
            "{:<16} {:<8} {:>12} {:>12} {:>10} {:>10}\n",
            "port", "link", "frames tx", "frames rx", "tx fps", "rx fps"
        ));
        for p in &self.ports {
            let n = &p.now;
            out.push_str(&format!(
                "{:<16} {:<8} {:>12} {:>12} {:>10.0} {:>10.0}\n",
                n.name, n.link, n.frames_tx, n.frames_rx, p.tx_fps, p.rx_fps
            ));
        }
        out
    }
}

/// The last `width` values of `history` as a line of block characters, scaled to its largest
/// (a sparkline that fits a table cell).
pub fn spark(history: &VecDeque<u64>, width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let shown: Vec<u64> = history.iter().rev().take(width).rev().copied().collect();
    let max = shown.iter().copied().max().unwrap_or(0);
    shown
        .iter()
        .map(|&v| match max {
            0 => ' ',
            _ if v == 0 => ' ',
            _ => BARS[((v * 7).div_ceil(max) as usize).min(7)],
        })
        .collect()
}

/// A flow's average latency in µs, or blank where it is not measured.
pub fn latency_us(f: &FlowReading) -> String {
    f.latency
        .as_ref()
        .map_or(String::new(), |l| format!("{:.1}", l.average_ns / 1000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(name: &str, tx: u64, rx: u64) -> FlowReading {
        FlowReading {
            name: name.into(),
            transmit: "started".into(),
            frames_tx: tx,
            frames_rx: rx,
            ..FlowReading::default()
        }
    }

    #[test]
    fn rates_come_from_two_readings_and_the_history_keeps_a_minute() {
        let mut v = View::default();
        v.update(10.0, vec![flow("a", 100, 90)], Vec::new());
        assert_eq!((v.flows[0].tx_fps, v.flows[0].history.len()), (0.0, 0));
        v.update(10.5, vec![flow("a", 600, 590), flow("b", 5, 5)], Vec::new());
        assert_eq!((v.flows[0].tx_fps, v.flows[0].rx_fps), (1000.0, 1000.0));
        assert_eq!(v.flows[1].history, [0], "a new flow starts its history");
        // Counters that went back (a new run) read as no rate, not a huge one.
        v.update(11.5, vec![flow("a", 10, 10)], Vec::new());
        assert_eq!(v.flows[0].rx_fps, 0.0);
        for k in 0..100 {
            v.update(12.0 + f64::from(k), vec![flow("a", 10, 10)], Vec::new());
        }
        assert_eq!(v.flows[0].history.len(), HISTORY);
        let text = v.plain();
        assert!(text.starts_with("flow "), "{text}");
        assert!(text.lines().nth(1).unwrap().starts_with("a "), "{text}");
    }

    #[test]
    fn a_sparkline_scales_to_its_largest_and_keeps_the_newest() {
        let h: VecDeque<u64> = [0, 10, 40, 80, 80].into_iter().collect();
        assert_eq!(spark(&h, 10), " ▂▅██");
        assert_eq!(spark(&h, 2), "██");
        assert_eq!(spark(&VecDeque::new(), 5), "");
    }

    #[test]
    fn a_reading_with_fields_missing_is_read_as_zeros() {
        let f: FlowReading = serde_json::from_str(r#"{"name": "x", "frames_rx": 3}"#).unwrap();
        assert_eq!((f.frames_rx, f.frames_tx, &f.latency), (3, 0, &None));
        assert_eq!(latency_us(&f), "");
    }
}
