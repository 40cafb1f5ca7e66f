//! The four tables, in the RFC's reporting terms.

use linerate_bench::GoalStatus;

use super::{Rfc2544Result, Search};
use crate::{line_rate_pps, wire_mbps};

/// Wire Mbps (20 bytes of preamble, SFD and gap per frame, as RFC 2544 reports).
pub fn mbps(size: u32, fps: f64) -> f64 {
    wire_mbps(size as usize, fps / 1000.0)
}

pub(super) fn pct_line(size: u32, fps: f64, link: Option<u64>) -> String {
    link.map_or("n/a".into(), |m| {
        format!("{:.2}", fps * 100.0 / line_rate_pps(size as usize, m))
    })
}

pub fn goal_name(loss: f64) -> String {
    if loss == 0.0 {
        "NDR".into()
    } else {
        format!("PDR {}%", loss * 100.0)
    }
}

pub(super) fn status_word(s: GoalStatus) -> &'static str {
    match s {
        GoalStatus::Regular => "found",
        GoalStatus::MaxLoadIsLowerBound => "max load met it",
        GoalStatus::NoRateMeetsGoal => "no rate meets it",
    }
}

/// The four tables, in the RFC's reporting terms.
pub fn tables(r: &Rfc2544Result) -> String {
    use std::fmt::Write as _;
    let link = r.context.link_speed_mbps;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "rfc2544 {} on {} → {} ({}, {}), link {}; trials {} s, drain {} s",
        serde_json::to_value(r.context.test)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        r.context.interface,
        r.context.rx,
        r.context.backend,
        r.context.mode,
        link.map_or("unknown".into(), |m| format!("{m} Mbit/s")),
        r.context.trial_s,
        r.context.drain_s
    );
    if !r.context.directions.is_empty() {
        let n = r.context.directions.len();
        let _ = writeln!(
            o,
            "{n} directions at once ({}): every rate below is offered on each direction (RFC 2544 \
             §14), the aggregate is {n} × it; a trial passes only if every direction passes",
            r.context.directions.join(", ")
        );
    }
    throughput_table(&mut o, r);
    latency_table(&mut o, r);
    loss_table(&mut o, r);
    b2b_table(&mut o, r);
    super::directions::tables(&mut o, r);
    let _ = writeln!(
        o,
        "\n{} trial(s), {:.1} s of trials, {:.1} s in all{}",
        r.trials.len(),
        r.trial_time_s,
        r.total_time_s,
        if r.interrupted {
            " (interrupted: the results so far)"
        } else {
            ""
        }
    );
    o
}

/// Throughput per goal, by the search asked.
fn throughput_table(o: &mut String, r: &Rfc2544Result) {
    use std::fmt::Write as _;
    let link = r.context.link_speed_mbps;
    if r.sizes.iter().any(|s| s.throughput.is_some()) {
        let _ = writeln!(
            o,
            "\nThroughput ({})\n{:>6}  {:<10} {:<16} {:>14} {:>10} {:>8} {:>14} {:>7} {:>9}",
            match r.context.search {
                Search::Mlr => "RFC 9971 MLRsearch",
                Search::Binary => "RFC 2544 binary search",
            },
            "size",
            "goal",
            "status",
            "fps",
            "Mbps",
            "% line",
            "conditional",
            "trials",
            "time s"
        );
        for s in &r.sizes {
            let Some(t) = &s.throughput else { continue };
            for g in t.lines() {
                let (f, m, p) = match g.throughput_fps {
                    Some(f) => (
                        format!("{f:.0}"),
                        format!("{:.2}", mbps(s.size, f)),
                        pct_line(s.size, f, link),
                    ),
                    None => ("-".into(), "-".into(), "-".into()),
                };
                let _ = writeln!(
                    o,
                    "{:>6}  {:<10} {:<16} {:>14} {:>10} {:>8} {:>14} {:>7} {:>9.1}",
                    s.size,
                    goal_name(g.loss_ratio),
                    status_word(g.status),
                    f,
                    m,
                    p,
                    g.conditional_fps.map_or("-".into(), |c| format!("{c:.0}")),
                    t.trials(),
                    t.trial_time_s()
                );
            }
        }
    }
}

/// Latency at the throughput.
fn latency_table(o: &mut String, r: &Rfc2544Result) {
    use std::fmt::Write as _;
    if r.sizes
        .iter()
        .any(|s| s.latency.is_some() || s.latency_skipped.is_some())
    {
        let _ = writeln!(
            o,
            "\nLatency at the throughput (µs, software timestamps)\n{:>6} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
            "size", "fps", "min", "mean", "p50", "p99", "p99.9", "max", "trials"
        );
        for s in &r.sizes {
            if let Some(l) = &s.latency {
                let us = |ns: f64| format!("{:.1}", ns / 1000.0);
                let _ = writeln!(
                    o,
                    "{:>6} {:>12.0} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
                    s.size,
                    l.rate_fps,
                    us(l.min_ns as f64),
                    us(l.mean_ns),
                    us(l.p50_ns),
                    us(l.p99_ns),
                    us(l.p999_ns),
                    us(l.max_ns as f64),
                    l.trials.len()
                );
            } else if let Some(why) = &s.latency_skipped {
                let _ = writeln!(o, "{:>6} not measured: {why}", s.size);
            }
        }
    }
}

/// Frame loss rate per load step.
fn loss_table(o: &mut String, r: &Rfc2544Result) {
    use std::fmt::Write as _;
    if r.sizes.iter().any(|s| s.loss.is_some()) {
        let _ = writeln!(
            o,
            "\nFrame loss rate\n{:>6} {:>7} {:>12} {:>12} {:>12} {:>9}",
            "size", "load %", "fps", "tx", "rx", "loss %"
        );
        for s in &r.sizes {
            let Some(l) = &s.loss else { continue };
            for row in &l.rows {
                let _ = writeln!(
                    o,
                    "{:>6} {:>7.0} {:>12.0} {:>12} {:>12} {:>9.4}",
                    s.size, row.load_percent, row.rate_fps, row.tx, row.rx, row.loss_percent
                );
            }
            if !l.settled {
                let _ = writeln!(
                    o,
                    "{:>6} (did not settle: no two successive trials without loss)",
                    s.size
                );
            }
        }
    }
}

/// The longest burst without loss.
fn b2b_table(o: &mut String, r: &Rfc2544Result) {
    use std::fmt::Write as _;
    if r.sizes.iter().any(|s| s.back_to_back.is_some()) {
        let _ = writeln!(
            o,
            "\nBack-to-back (longest burst without loss, frames)\n{:>6} {:>12} {:>10} {:>8} {:>8} {:>9} {:>7}",
            "size", "fps", "mean", "min", "max", "max tried", "searches"
        );
        for s in &r.sizes {
            let Some(b) = &s.back_to_back else { continue };
            let _ = writeln!(
                o,
                "{:>6} {:>12.0} {:>10.1} {:>8} {:>8} {:>9} {:>7}{}",
                s.size,
                b.rate_fps,
                b.mean,
                b.min,
                b.max,
                b.max_burst,
                b.bursts.len(),
                if b.capped {
                    "  (capped: the max burst lost nothing)"
                } else {
                    ""
                }
            );
        }
    }
}
