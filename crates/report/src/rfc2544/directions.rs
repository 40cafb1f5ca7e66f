//! The per-direction tables of a run over several directions at once: the aggregate (every
//! direction at the load, the sum of their loads) and each direction's own throughput, latency
//! and frame loss.

use std::fmt::Write as _;

use super::Rfc2544Result;
use super::table::{goal_name, mbps, pct_line, status_word};

/// The per-direction tables; nothing for one direction.
pub(super) fn tables(o: &mut String, r: &Rfc2544Result) {
    let n = r.context.directions.len();
    if n < 2 {
        return;
    }
    throughput(o, r, n);
    latency(o, r);
    loss(o, r);
}

fn throughput(o: &mut String, r: &Rfc2544Result, n: usize) {
    let link = r.context.link_speed_mbps;
    if !r.sizes.iter().any(|s| s.throughput.is_some()) {
        return;
    }
    let _ = writeln!(
        o,
        "\nThroughput per direction (aggregate: every direction passes, the sum of their loads; \
         a direction: its own search, the load still offered on every direction)\n{:>6}  {:<20} {:<10} {:<16} {:>14} {:>10} {:>8}",
        "size", "direction", "goal", "status", "fps", "Mbps", "% line"
    );
    for s in &r.sizes {
        let Some(t) = &s.throughput else { continue };
        let mut rows: Vec<(String, _)> = t
            .lines()
            .into_iter()
            .map(|g| ("aggregate".to_owned(), (g, n as f64)))
            .collect();
        for d in &s.directions {
            for g in d.throughput.iter().flat_map(|t| t.lines()) {
                rows.push((d.direction.clone(), (g, 1.0)));
            }
        }
        for (name, (g, times)) in rows {
            let (f, m, p) = match g.throughput_fps {
                Some(f) => (
                    format!("{:.0}", f * times),
                    format!("{:.2}", mbps(s.size, f) * times),
                    // % of each direction's line: the aggregate's is its per-direction load's.
                    pct_line(s.size, f, link),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            let _ = writeln!(
                o,
                "{:>6}  {:<20} {:<10} {:<16} {:>14} {:>10} {:>8}",
                s.size,
                name,
                goal_name(g.loss_ratio),
                status_word(g.status),
                f,
                m,
                p
            );
        }
    }
}

fn latency(o: &mut String, r: &Rfc2544Result) {
    if !r
        .sizes
        .iter()
        .any(|s| s.directions.iter().any(|d| d.latency.is_some()))
    {
        return;
    }
    let _ = writeln!(
        o,
        "\nLatency per direction at the aggregate throughput (µs)\n{:>6}  {:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "size", "direction", "min", "mean", "p50", "p99", "p99.9", "max"
    );
    let us = |ns: f64| format!("{:.1}", ns / 1000.0);
    for s in &r.sizes {
        for d in &s.directions {
            let Some(l) = &d.latency else { continue };
            let _ = writeln!(
                o,
                "{:>6}  {:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                s.size,
                d.direction,
                us(l.min_ns as f64),
                us(l.mean_ns),
                us(l.p50_ns as f64),
                us(l.p99_ns as f64),
                us(l.p999_ns as f64),
                us(l.max_ns as f64)
            );
        }
    }
}

fn loss(o: &mut String, r: &Rfc2544Result) {
    if !r
        .sizes
        .iter()
        .any(|s| s.directions.iter().any(|d| !d.loss.is_empty()))
    {
        return;
    }
    let _ = writeln!(
        o,
        "\nFrame loss rate per direction\n{:>6}  {:<20} {:>12} {:>12} {:>12} {:>9}",
        "size", "direction", "fps", "tx", "rx", "loss %"
    );
    for s in &r.sizes {
        for d in &s.directions {
            for l in &d.loss {
                let _ = writeln!(
                    o,
                    "{:>6}  {:<20} {:>12.0} {:>12} {:>12} {:>9.4}",
                    s.size, d.direction, l.rate_fps, l.tx, l.rx, l.loss_percent
                );
            }
        }
    }
}
