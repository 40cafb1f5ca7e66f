//! The CSV of an RFC 2544 run: one row per figure, every row with every column.

use super::Rfc2544Result;
use super::table::mbps;
use crate::line_rate_pps;

/// The columns, in order: each test fills its own and leaves the others empty.
const COLUMNS: [&str; 22] = [
    "test",
    "size",
    "goal_loss_ratio",
    "status",
    "rate_fps",
    "mbps_wire",
    "line_pct",
    "conditional_fps",
    "latency_min_ns",
    "latency_mean_ns",
    "latency_p50_ns",
    "latency_p99_ns",
    "latency_p999_ns",
    "latency_max_ns",
    "load_pct",
    "tx",
    "rx",
    "loss_pct",
    "burst_mean",
    "burst_min",
    "burst_max",
    // Empty: the one direction, or the aggregate of several; else the direction (FROM-TO).
    "direction",
];

/// One row, filled by column name.
struct Row([String; COLUMNS.len()]);

impl Row {
    /// A row of `test` at `size` with its rate, its wire Mbps and its % of the line rate.
    fn new(test: &str, size: u32, rate_fps: f64, link: Option<u64>) -> Self {
        let mut row = Row(Default::default());
        row.set("test", test.to_owned());
        row.set("size", size.to_string());
        row.set("rate_fps", format!("{rate_fps:.3}"));
        row.set("mbps_wire", format!("{:.3}", mbps(size, rate_fps)));
        row.set("line_pct", line_pct(size, rate_fps, link));
        row
    }

    fn set(&mut self, column: &str, value: String) -> &mut Self {
        let i = COLUMNS
            .iter()
            .position(|c| *c == column)
            .expect("a column of COLUMNS");
        self.0[i] = value;
        self
    }
}

fn line_pct(size: u32, fps: f64, link: Option<u64>) -> String {
    link.map_or(String::new(), |m| {
        format!("{:.3}", fps * 100.0 / line_rate_pps(size as usize, m))
    })
}

/// Every figure of the run as a row: `test,size,goal,status,rate_fps,mbps,line_pct,…`.
pub fn csv(r: &Rfc2544Result) -> String {
    let mut rows = Vec::new();
    for s in &r.sizes {
        rows.extend(throughput_rows(r, s.size, s.throughput.as_ref()));
        if let Some(l) = &s.latency {
            let mut row = Row::new("latency", s.size, l.rate_fps, r.context.link_speed_mbps);
            row.set("latency_min_ns", l.min_ns.to_string())
                .set("latency_mean_ns", format!("{:.1}", l.mean_ns))
                .set("latency_p50_ns", format!("{:.1}", l.p50_ns))
                .set("latency_p99_ns", format!("{:.1}", l.p99_ns))
                .set("latency_p999_ns", format!("{:.1}", l.p999_ns))
                .set("latency_max_ns", l.max_ns.to_string());
            rows.push(row);
        }
        for row in s.loss.iter().flat_map(|l| &l.rows) {
            let mut out = Row::new("loss", s.size, row.rate_fps, r.context.link_speed_mbps);
            out.set("load_pct", format!("{:.1}", row.load_percent))
                .set("tx", row.tx.to_string())
                .set("rx", row.rx.to_string())
                .set("loss_pct", format!("{:.6}", row.loss_percent));
            rows.push(out);
        }
        if let Some(b) = &s.back_to_back {
            let mut row = Row::new(
                "back-to-back",
                s.size,
                b.rate_fps,
                r.context.link_speed_mbps,
            );
            row.set("status", if b.capped { "capped" } else { "found" }.into())
                .set("burst_mean", format!("{:.3}", b.mean))
                .set("burst_min", b.min.to_string())
                .set("burst_max", b.max.to_string());
            rows.push(row);
        }
        rows.extend(direction_rows(r, s));
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing into memory: the only errors the writer has are its sink's, and a Vec has none.
    w.write_record(COLUMNS).expect("a CSV into memory");
    for row in &rows {
        w.write_record(&row.0).expect("a CSV into memory");
    }
    let bytes = w.into_inner().expect("a CSV into memory");
    String::from_utf8(bytes).expect("the CSV of UTF-8 fields is UTF-8")
}

/// Each direction's throughput, latency and loss rows, the direction named.
fn direction_rows(r: &Rfc2544Result, s: &super::SizeResult) -> Vec<Row> {
    let link = r.context.link_speed_mbps;
    let mut rows = Vec::new();
    for d in &s.directions {
        let mut mine = throughput_rows(r, s.size, d.throughput.as_ref());
        if let Some(l) = &d.latency {
            // Measured at the aggregate latency test's load.
            let rate = s.latency.as_ref().map_or(0.0, |a| a.rate_fps);
            let mut row = Row::new("latency", s.size, rate, link);
            row.set("latency_min_ns", l.min_ns.to_string())
                .set("latency_mean_ns", format!("{:.1}", l.mean_ns))
                .set("latency_p50_ns", l.p50_ns.to_string())
                .set("latency_p99_ns", l.p99_ns.to_string())
                .set("latency_p999_ns", l.p999_ns.to_string())
                .set("latency_max_ns", l.max_ns.to_string());
            mine.push(row);
        }
        for l in &d.loss {
            let mut row = Row::new("loss", s.size, l.rate_fps, link);
            row.set("tx", l.tx.to_string())
                .set("rx", l.rx.to_string())
                .set("loss_pct", format!("{:.6}", l.loss_percent));
            mine.push(row);
        }
        for row in &mut mine {
            row.set("direction", d.direction.clone());
        }
        rows.extend(mine);
    }
    rows
}

/// A row per goal; a goal without a throughput has its status and no rate.
fn throughput_rows(r: &Rfc2544Result, size: u32, t: Option<&super::Throughput>) -> Vec<Row> {
    let Some(t) = t else {
        return Vec::new();
    };
    t.lines()
        .into_iter()
        .map(|g| {
            let status = serde_json::to_value(g.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let mut row = match g.throughput_fps {
                Some(f) => Row::new("throughput", size, f, r.context.link_speed_mbps),
                None => {
                    let mut row = Row(Default::default());
                    row.set("test", "throughput".into())
                        .set("size", size.to_string());
                    row
                }
            };
            row.set("goal_loss_ratio", g.loss_ratio.to_string())
                .set("status", status)
                .set(
                    "conditional_fps",
                    g.conditional_fps
                        .map_or(String::new(), |c| format!("{c:.3}")),
                );
            row
        })
        .collect()
}
