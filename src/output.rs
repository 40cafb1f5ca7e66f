//! Everything a command prints: the live status line, the reports, the files it names.

use std::io::Write;
use std::path::Path;

use anyhow::{Context as _, Result};
use linerate_engine::{Observer, Report, Snapshot};
use linerate_port::ladder::Choice;
use linerate_session::{RunFlows, SinkResult};
use linerate_stream::Plan;
use serde::Serialize;

/// The live line on stderr, once per tick; with `tx --rx`, also what the receiver counted.
pub struct LiveStatus {
    link_mbps: Option<u64>,
    quiet: bool,
    rx: Option<std::sync::Arc<linerate_session::RunReceiver>>,
    /// The previous tick's (elapsed, frames received), for the receive rate.
    rx_last: std::sync::Mutex<(std::time::Duration, u64)>,
}

impl std::fmt::Debug for LiveStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveStatus")
            .field("link_mbps", &self.link_mbps)
            .field("quiet", &self.quiet)
            .field("rx", &self.rx.is_some())
            .finish()
    }
}

/// The receive side of one status line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RxTick {
    /// Frames received per second since the last tick.
    pub pps: f64,
    /// Sent but not (yet) received once: frames still on their way count until they arrive.
    pub lost: u64,
    pub sent: u64,
}

impl LiveStatus {
    pub fn new(link_mbps: Option<u64>, quiet: bool) -> Self {
        Self {
            link_mbps,
            quiet,
            rx: None,
            rx_last: std::sync::Mutex::new((std::time::Duration::ZERO, 0)),
        }
    }

    /// Adds the receiver's rate and loss so far to each line: its maps are read once a tick, on
    /// the supervising thread (never a worker's).
    pub fn with_rx(mut self, rx: Option<std::sync::Arc<linerate_session::RunReceiver>>) -> Self {
        self.rx = rx;
        self
    }

    fn rx_tick(&self, s: &Snapshot) -> Option<RxTick> {
        let p = self.rx.as_ref()?.progress()?;
        let mut last = self.rx_last.lock().unwrap_or_else(|e| e.into_inner());
        let over = s.elapsed.saturating_sub(last.0);
        let pps = if over.is_zero() {
            0.0
        } else {
            p.frames.saturating_sub(last.1) as f64 / over.as_secs_f64()
        };
        *last = (s.elapsed, p.frames);
        Some(RxTick {
            pps,
            lost: s.frames.saturating_sub(p.unique()),
            sent: s.frames,
        })
    }
}

/// One status line: the sender's rate, and the receiver's when there is one.
pub fn status_line(s: &Snapshot, link_mbps: Option<u64>, rx: Option<RxTick>) -> String {
    let line = match link_mbps {
        Some(mbps) => format!("{:.1} % of line", s.wire_bps() / (mbps as f64 * 1e4)),
        None => "line rate n/a".into(),
    };
    let mut out = format!(
        "{:>6.1}s  {:>8.3} Mpps  {:>7.3} Gbit/s wire  {}  ({} frames)",
        s.elapsed.as_secs_f64(),
        s.pps() / 1e6,
        s.wire_bps() / 1e9,
        line,
        s.frames
    );
    if let Some(rx) = rx {
        let pct = if rx.sent == 0 {
            0.0
        } else {
            rx.lost as f64 * 100.0 / rx.sent as f64
        };
        out.push_str(&format!(
            "  rx {:>8.3} Mpps  lost so far {} ({:.3} %)",
            rx.pps / 1e6,
            rx.lost,
            pct
        ));
    }
    out
}

impl Observer for LiveStatus {
    fn tick(&self, s: &Snapshot) {
        if self.quiet {
            return;
        }
        eprintln!("{}", status_line(s, self.link_mbps, self.rx_tick(s)));
    }
}

#[derive(Debug, Serialize)]
pub struct StreamJson {
    pub name: String,
    pub frames_cached: usize,
    pub cached_fields: Vec<String>,
    pub patched_fields: Vec<String>,
}

pub fn streams(plan: &Plan) -> Vec<StreamJson> {
    plan.streams
        .iter()
        .map(|s| StreamJson {
            name: s.name.clone(),
            frames_cached: plan.frame_count(),
            cached_fields: s.cached.clone(),
            patched_fields: s.patched.clone(),
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub struct TxJson<'a> {
    #[serde(flatten)]
    pub report: &'a Report,
    pub streams: Vec<StreamJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sink: Option<SinkResult>,
    /// Per flow, what the receiver (`--rx`) saw against what was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx: Option<&'a RunFlows>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_choice: Option<ChoiceJson<'a>>,
}

/// What `--backend auto` chose and why.
#[derive(Debug, Serialize)]
pub struct ChoiceJson<'a> {
    pub backend: &'static str,
    pub why: &'a str,
}

impl<'a> ChoiceJson<'a> {
    pub fn of(choice: Option<&'a Choice>) -> Option<Self> {
        choice.map(|c| ChoiceJson {
            backend: c.rung.backend(),
            why: &c.why,
        })
    }
}

/// What the human report shows beyond its summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Detail<'a> {
    /// `--backend auto`'s choice, stated in one line.
    pub choice: Option<&'a Choice>,
    /// `-v`: the ring and pacing counters too.
    pub verbose: bool,
}

/// Everything a command prints on stdout goes through here: written and flushed at once, so a
/// reader that went away (`| head`, `| true`) is an `io::Error` that main ends quietly on, and a
/// full disk (`> /dev/full`) is an error line, never a panic inside `println!`.
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to stdout")
}

/// `print` with a line end.
pub fn println(text: &str) -> Result<()> {
    print(&format!("{text}\n"))
}

/// Serialized to text first: serde_json's own writer error hides the `io::Error` (and with it
/// the broken pipe) from the chain.
pub fn print_json(value: &impl Serialize) -> Result<()> {
    println(&serde_json::to_string_pretty(value)?)
}

/// How a finished `tx` or `replay` ends: the sink's warning, the report (`print`), the file
/// written (`pcap`), and an error for frames the backend never completed.
pub fn finish_send(
    pcap: Option<&Path>,
    report: &Report,
    sink: Option<SinkResult>,
    print: impl FnOnce(Option<SinkResult>) -> Result<()>,
) -> Result<()> {
    if let Some(warning) = sink.as_ref().and_then(SinkResult::shared_warning) {
        eprintln!("linerate: warning: {warning}");
    }
    if let Some(hint) = sink.as_ref().and_then(|s| s.hint.as_ref()) {
        eprintln!("linerate: warning: {hint}");
    }
    print(sink)?;
    if let Some(path) = pcap {
        eprintln!("wrote {}", path.display());
    }
    if report.missing() > 0 {
        anyhow::bail!(
            "{} frame(s) were submitted but never completed by the backend",
            report.missing()
        );
    }
    Ok(())
}

/// Names each file written on stderr, then prints the result's table (or its JSON) on stdout.
pub fn wrote(w: &linerate_report::Wrote) -> Result<()> {
    if w.nothing_to_plot {
        eprintln!("linerate: nothing to plot (throughput and frame loss were not measured)");
    }
    for path in &w.files {
        eprintln!("wrote {}", path.display());
    }
    if w.stdout.ends_with('\n') {
        print(&w.stdout)
    } else {
        println(&w.stdout)
    }
}

#[derive(Debug, Serialize)]
#[cfg(any(target_os = "linux", target_os = "macos"))]
struct RxJson<'a> {
    pub interface: &'a str,
    pub netns: Option<&'a str>,
    pub elapsed_s: f64,
    /// A lone receiver does not know what was sent: `lost` is estimated from the sequence gaps
    /// (blind to a lost tail).
    pub flows: Vec<linerate_rx::FlowReport>,
    pub totals: &'a linerate_rx::RxTotals,
}

/// A lone receiver's report: JSON, or its flow table after the line that says what its "tx"
/// column means.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub fn print_lone(
    json: bool,
    interface: &str,
    netns: Option<&str>,
    elapsed: std::time::Duration,
    totals: &linerate_rx::RxTotals,
) -> Result<()> {
    let flows = linerate_session::lone_reports(totals);
    if json {
        print_json(&RxJson {
            interface,
            netns,
            elapsed_s: elapsed.as_secs_f64(),
            flows,
            totals,
        })
    } else {
        print(&format!(
            "(a lone receiver: tx = received once + sequence gaps never filled; a lost tail is not seen)\n{}",
            linerate_rx::table::flow_table(&flows, &totals.global)
        ))
    }
}

/// The human report. Written, not printed: a closed stdout (`| head`) is an error the caller
/// ends quietly on, not a panic.
pub fn print_tx(
    report: &Report,
    plan: &Plan,
    sink: Option<&SinkResult>,
    detail: Detail<'_>,
) -> Result<()> {
    print(&tx_text(report, plan, sink, detail)?)
}

fn tx_text(
    report: &Report,
    plan: &Plan,
    sink: Option<&SinkResult>,
    detail: Detail<'_>,
) -> std::result::Result<String, std::fmt::Error> {
    use std::fmt::Write as _;
    let mut out = String::new();
    if let Some(c) = detail.choice {
        writeln!(out, "{c}")?;
    }
    let avg = if report.completed > 0 {
        report.bytes as f64 / report.completed as f64 + 4.0
    } else {
        0.0
    };
    let modes: Vec<&str> = report.workers.iter().map(|w| w.mode.as_str()).collect();
    writeln!(
        out,
        "port      {} ({}, {}), {} worker(s), {} pre-built frame(s)",
        report.port,
        report.backend,
        modes.first().copied().unwrap_or("-"),
        report.workers.len(),
        plan.frame_count()
    )?;
    writeln!(
        out,
        "sent      {} frames, {} bytes (FCS excluded); completed {}, missing {}",
        report.submitted,
        report.bytes,
        report.completed,
        report.missing()
    )?;
    writeln!(
        out,
        "rate      {:.3} Mpps, {:.3} Gbit/s on the wire, {:.1} B average frame, {:.3} s",
        report.pps / 1e6,
        report.wire_bps / 1e9,
        avg,
        report.elapsed_s
    )?;
    if let (Some(req), Some(err)) = (report.requested_pps, report.rate_error_pct()) {
        writeln!(
            out,
            "pacing    asked {:.3} kpps, sent {:.3} kpps ({:+.2} %)",
            req / 1e3,
            report.pps / 1e3,
            err
        )?;
    }
    for s in &report.per_stream {
        writeln!(
            out,
            "stream    {}: {} frames, {} bytes; asked {:.3} kpps, sent {:.3} kpps ({:+.2} %)",
            s.name,
            s.frames,
            s.bytes,
            s.requested_pps / 1e3,
            s.pps / 1e3,
            s.rate_error_pct()
        )?;
    }
    if let Some(p) = report.pacing.as_ref().filter(|_| detail.verbose) {
        writeln!(
            out,
            "lateness  p50 {} ns, p99 {} ns, p99.9 {} ns, max {} ns over {} batches ({})",
            p.late_p50_ns, p.late_p99_ns, p.late_p999_ns, p.late_max_ns, p.batches, p.spacing
        )?;
    }
    if let Some(s) = sink {
        let lost = match (s.lost, s.extra) {
            (Some(lost), _) => format!("lost {lost}"),
            (None, extra) => format!(
                "{} more than sent (another sender shares this sink): loss unknown",
                extra.unwrap_or(0)
            ),
        };
        writeln!(
            out,
            "received  {} frames, {} bytes at the sink of lab {}; {lost}",
            s.packets, s.bytes, s.lab
        )?;
    }
    workers_text(&mut out, report, detail.verbose)?;
    Ok(out)
}

/// The per-worker and per-core lines of the report: rates, CPU time, and with `verbose` the
/// backend's ring counters.
fn workers_text(out: &mut String, report: &Report, verbose: bool) -> std::fmt::Result {
    use std::fmt::Write as _;
    if report.workers.len() > 1 {
        for w in &report.workers {
            writeln!(
                out,
                "worker {}  core {:>2}  queue {:>2}  {} frames  {:.3} Mpps",
                w.worker,
                w.core.map_or("-".to_string(), |c| c.to_string()),
                w.queue,
                w.completed,
                w.completed as f64 / w.elapsed_s.max(1e-9) / 1e6
            )?;
        }
    }
    for w in report.workers.iter().filter(|_| verbose) {
        for (k, v) in &w.stats {
            writeln!(out, "worker {} {k}: {v}", w.worker)?;
        }
    }
    for w in &report.workers {
        if let Some(c) = w.cpu {
            let busy = c.user_s + c.system_s;
            writeln!(
                out,
                "worker {} cpu: user {:.3} s, system {:.3} s, last on core {}; {:.3} Mpps per busy second of its thread",
                w.worker,
                c.user_s,
                c.system_s,
                c.last_core.map_or("-".to_string(), |c| c.to_string()),
                if busy > 0.0 {
                    w.completed as f64 / busy / 1e6
                } else {
                    0.0
                }
            )?;
        }
    }
    if !report.cores.is_empty() {
        let cores: Vec<String> = report
            .cores
            .iter()
            .map(|c| {
                format!(
                    "{} {:.0} % (softirq {:.0} %)",
                    c.core, c.busy_pct, c.softirq_pct
                )
            })
            .collect();
        writeln!(out, "cores     busy over the run: {}", cores.join(", "))?;
    }
    Ok(())
}

/// The report's record of what `--backend auto` chose.
pub fn choice_json(c: &linerate_port::ladder::Choice) -> linerate_report::BackendChoice {
    linerate_report::BackendChoice {
        backend: c.rung.backend().into(),
        why: c.why.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn snapshot(frames: u64) -> Snapshot {
        Snapshot {
            elapsed: Duration::from_secs(2),
            frames,
            bytes: frames * 60,
            interval: Duration::from_secs(1),
            interval_frames: 1_000_000,
            interval_bytes: 60_000_000,
        }
    }

    #[test]
    fn the_status_line_adds_the_receivers_rate_and_loss_so_far() {
        let s = snapshot(2_000_000);
        let plain = status_line(&s, Some(10_000), None);
        // 1 Mpps of 64-byte frames: 84 bytes on the wire each, 0.672 Gbit/s, 6.7 % of 10 GbE.
        assert!(plain.contains("1.000 Mpps"), "{plain}");
        assert!(
            plain.contains("0.672 Gbit/s wire  6.7 % of line"),
            "{plain}"
        );
        assert!(!plain.contains("rx"), "{plain}");
        let with = status_line(
            &s,
            Some(10_000),
            Some(RxTick {
                pps: 990_000.0,
                lost: 20_000,
                sent: 2_000_000,
            }),
        );
        assert!(with.starts_with(&plain), "{with}");
        assert!(
            with.ends_with("rx    0.990 Mpps  lost so far 20000 (1.000 %)"),
            "{with}"
        );
        let none_sent = status_line(
            &snapshot(0),
            None,
            Some(RxTick {
                pps: 0.0,
                lost: 0,
                sent: 0,
            }),
        );
        assert!(
            none_sent.ends_with("lost so far 0 (0.000 %)"),
            "{none_sent}"
        );
    }
}
