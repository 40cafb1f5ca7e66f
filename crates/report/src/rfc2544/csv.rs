//! The CSV of an RFC 2544 run: one row per figure.

use super::Rfc2544Result;
use super::table::mbps;
use crate::line_rate_pps;

/// One row per figure: `test,size,goal,status,rate_fps,mbps,line_pct,…`.
pub fn csv(r: &Rfc2544Result) -> String {
    use std::fmt::Write as _;
    let link = r.context.link_speed_mbps;
    let mut o = String::from(
        "test,size,goal_loss_ratio,status,rate_fps,mbps_wire,line_pct,conditional_fps,\
         latency_min_ns,latency_mean_ns,latency_p50_ns,latency_p99_ns,latency_p999_ns,latency_max_ns,\
         load_pct,tx,rx,loss_pct,burst_mean,burst_min,burst_max\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.3}"));
    let line = |size: u32, f: f64| {
        link.map_or(String::new(), |m| {
            format!("{:.3}", f * 100.0 / line_rate_pps(size as usize, m))
        })
    };
    for s in &r.sizes {
        if let Some(t) = &s.throughput {
            for g in t.lines() {
                let f = g.throughput_fps;
                let status = serde_json::to_value(g.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let _ = writeln!(
                    o,
                    "throughput,{},{},{},{},{},{},{},,,,,,,,,,,,,",
                    s.size,
                    g.loss_ratio,
                    status,
                    opt(f),
                    opt(f.map(|f| mbps(s.size, f))),
                    f.map_or(String::new(), |f| line(s.size, f)),
                    opt(g.conditional_fps)
                );
            }
        }
        if let Some(l) = &s.latency {
            let _ = writeln!(
                o,
                "latency,{},,,{:.3},{:.3},{},,{},{:.1},{:.1},{:.1},{:.1},{},,,,,,,",
                s.size,
                l.rate_fps,
                mbps(s.size, l.rate_fps),
                line(s.size, l.rate_fps),
                l.min_ns,
                l.mean_ns,
                l.p50_ns,
                l.p99_ns,
                l.p999_ns,
                l.max_ns
            );
        }
        if let Some(l) = &s.loss {
            for row in &l.rows {
                let _ = writeln!(
                    o,
                    "loss,{},,,{:.3},{:.3},{},,,,,,,,{:.1},{},{},{:.6},,,",
                    s.size,
                    row.rate_fps,
                    mbps(s.size, row.rate_fps),
                    line(s.size, row.rate_fps),
                    row.load_percent,
                    row.tx,
                    row.rx,
                    row.loss_percent
                );
            }
        }
        if let Some(b) = &s.back_to_back {
            let _ = writeln!(
                o,
                "back-to-back,{},,{},{:.3},{:.3},{},,,,,,,,,,,,{:.3},{},{}",
                s.size,
                if b.capped { "capped" } else { "found" },
                b.rate_fps,
                mbps(s.size, b.rate_fps),
                line(s.size, b.rate_fps),
                b.mean,
                b.min,
                b.max
            );
        }
    }
    o
}
