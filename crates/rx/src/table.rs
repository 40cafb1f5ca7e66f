//! The per-flow table people read: one line per flow, in the units test engineers use.

use std::fmt::Write as _;

use crate::flow::{FlowReport, Latency, RxGlobal};

fn ns(v: u64) -> String {
    us(v as f64)
}

fn us(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}ms", v / 1e6)
    } else {
        format!("{:.1}us", v / 1e3)
    }
}

/// A percentile; one past the histogram's range (it reads as the max) is marked `≥`.
fn pct(l: &Latency, v: u64) -> String {
    if l.saturated && v == l.max {
        format!("≥{}", ns(crate::hist::bounds(crate::hist::BUCKETS - 1).0))
    } else {
        ns(v)
    }
}

fn latency_cells(l: Option<&Latency>) -> [String; 7] {
    let dash = || "-".to_string();
    match l {
        None => std::array::from_fn(|_| dash()),
        Some(l) => [
            ns(l.min),
            us(l.mean),
            l.p50.map_or_else(dash, |v| pct(l, v)),
            l.p99.map_or_else(dash, |v| pct(l, v)),
            l.p999.map_or_else(dash, |v| pct(l, v)),
            ns(l.max),
            us(l.jitter),
        ],
    }
}

/// The flow table: sent, received, lost (frames and %), late, duplicates, latency
/// min/mean/p50/p99/p99.9/max and jitter; then what was not a flow.
pub fn flow_table(flows: &[FlowReport], global: &RxGlobal) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<16} {:>10} {:>10} {:>9} {:>8} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "flow",
        "tx",
        "rx",
        "lost",
        "loss%",
        "late",
        "dup",
        "lat min",
        "mean",
        "p50",
        "p99",
        "p99.9",
        "max",
        "jitter"
    );
    for f in flows {
        // The id is what `rx` alone knows a flow by: shown with the sender's name as well, so
        // the same flow reads `#0` in `rx` and `stream0 #0` in `tx --rx`.
        let name = match &f.name {
            Some(n) => format!("{n} #{}", f.flow),
            None => format!("#{}", f.flow),
        };
        let [min, mean, p50, p99, p999, max, jitter] = latency_cells(f.latency.as_ref());
        let _ = writeln!(
            out,
            "{:<16} {:>10} {:>10} {:>9} {:>8.4} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            name,
            f.tx_frames,
            f.rx_frames,
            f.lost,
            f.loss_pct,
            f.late + f.old,
            f.duplicates,
            min,
            mean,
            p50,
            p99,
            p999,
            max,
            jitter
        );
        if f.excess > 0 {
            let _ = writeln!(
                out,
                "  {name}: {} more frames arrived than were sent: another sender stamps this flow id",
                f.excess
            );
        }
    }
    if global.other_frames > 0 || global.untracked_frames > 0 || global.future > 0 {
        let _ = writeln!(
            out,
            "other (no signature) {} frames, untracked (beyond the flow table) {}, stamped in the future (clocks apart) {}",
            global.other_frames, global.untracked_frames, global.future
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 41: one flow, one label: `#0` where only the id is known (`rx`), `stream0 #0`
    /// where the sender named it (`tx --rx`).
    #[test]
    fn a_flow_reads_by_its_id_with_or_without_a_name() {
        let global = RxGlobal::default();
        let named = flow_table(
            &[FlowReport::new(0, Some("stream0".into()), 5, None)],
            &global,
        );
        let bare = flow_table(&[FlowReport::new(0, None, 5, None)], &global);
        let row = |t: &str| t.lines().nth(1).unwrap().to_owned();
        assert!(row(&named).starts_with("stream0 #0 "), "{named}");
        assert!(row(&bare).starts_with("#0 "), "{bare}");
    }
}
