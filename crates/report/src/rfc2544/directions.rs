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

#[cfg(test)]
mod tests {
    use linerate_bench::{BinaryResult, GoalStatus, SearchGoal};

    use super::super::{
        Context, DirectionLoss, DirectionResult, Rfc2544Result, Search, SizeResult, Test,
        Throughput, csv, tables,
    };

    fn binary(fps: f64) -> Option<Throughput> {
        Some(Throughput::Binary {
            goals: vec![BinaryResult {
                size: 512,
                loss_ratio: 0.0,
                status: GoalStatus::Regular,
                throughput_fps: Some(fps),
                failed_fps: None,
                trial_time_s: 1.0,
                trials: Vec::new(),
            }],
        })
    }

    fn result() -> Rfc2544Result {
        let direction = |name: &str, fps: f64, rx: u64| DirectionResult {
            direction: name.into(),
            throughput: binary(fps),
            latency: None,
            loss: vec![DirectionLoss {
                rate_fps: 6000.0,
                tx: 6000,
                rx,
                loss_percent: (6000 - rx) as f64 / 60.0,
            }],
        };
        Rfc2544Result {
            context: Context {
                linerate_version: "0",
                test: Test::Throughput,
                search: Search::Binary,
                interface: "a0, b0".into(),
                rx: "each host's port".into(),
                backend: "afxdp".into(),
                backend_choice: None,
                mode: "copy".into(),
                link_speed_mbps: None,
                cores: vec![0],
                trial_s: 1.0,
                initial_trial_s: 1.0,
                drain_s: 0.2,
                learning_frames: 0,
                goals: vec![SearchGoal::new(0.0, std::time::Duration::from_secs(1)).unwrap()],
                directions: vec!["west-east".into(), "east-west".into()],
                os: String::new(),
                kernel: String::new(),
                cpu_model: String::new(),
                hostname: String::new(),
                date: String::new(),
            },
            sizes: vec![SizeResult {
                size: 512,
                max_load_fps: 12000.0,
                max_load_from: "given",
                min_load_fps: 2000.0,
                throughput: binary(5000.0),
                latency: None,
                latency_skipped: None,
                loss: None,
                back_to_back: None,
                directions: vec![
                    direction("west-east", 5000.0, 5100),
                    direction("east-west", 7500.0, 6000),
                ],
            }],
            interrupted: false,
            total_time_s: 1.0,
            trial_time_s: 1.0,
            trials: Vec::new(),
        }
    }

    #[test]
    fn the_aggregate_is_every_direction_at_the_load_and_each_direction_has_its_rows() {
        let r = result();
        let text = tables(&r);
        let row = |first: &str| {
            text.lines()
                .find(|l| l.split_whitespace().nth(1) == Some(first))
                .unwrap_or_else(|| panic!("no {first} row: {text}"))
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert!(
            text.contains("2 directions at once (west-east, east-west)"),
            "{text}"
        );
        // 512-byte frames: 5000 fps per direction, 10000 in all.
        assert_eq!(row("aggregate")[4], "10000", "{text}");
        assert_eq!(row("west-east")[4], "5000", "{text}");
        assert_eq!(row("east-west")[4], "7500", "{text}");
        assert!(text.contains("Frame loss rate per direction"), "{text}");
        let csv = csv(&r);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].ends_with(",direction"), "{csv}");
        let of = |d: &str| lines.iter().filter(|l| l.ends_with(d)).count();
        // Per direction: its throughput row and its loss row; the aggregate's row names none.
        assert_eq!((of(",west-east"), of(",east-west")), (2, 2), "{csv}");
        assert!(
            lines[1].starts_with("throughput,512,0,regular,5000.000") && lines[1].ends_with(',')
        );
    }
}
