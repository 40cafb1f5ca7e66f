//! Side-by-side comparison of sweeps: per size, the rates, their ratio and a one-line verdict.

use std::path::{Path, PathBuf};

use crate::ReportError;
use crate::result::SweepResult;
use crate::table::{format_pct, markdown_table};

/// Rates this close count as the same: run-to-run noise on one machine is about this large.
pub const EQUAL_WITHIN: f64 = 0.02;
/// A median at or above this share of line rate counts as line rate (counters and clocks are not
/// exact enough to ask for 100 %).
pub const LINE_RATE_PCT: f64 = 99.0;

/// The comparison of two or more sweeps over the frame sizes they all measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub names: Vec<String>,
    pub rows: Vec<CompareRow>,
    /// Sizes measured by some sweeps but not all, left out of `rows`.
    pub skipped_sizes: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    pub size: usize,
    /// Median Kpps of each sweep, in the order of `Comparison::names`.
    pub kpps: Vec<f64>,
    pub mbps: Vec<f64>,
    pub pct_of_line: Vec<Option<f64>>,
    /// `kpps[i] / kpps[0]` for i ≥ 1: every sweep against the first, the baseline.
    pub ratios: Vec<f64>,
    pub verdict: String,
}

/// Names for the results of `paths`: their file stems, or A, B, C… when the stems collide.
pub fn names_from_paths(paths: &[PathBuf]) -> Vec<String> {
    let stems: Vec<String> = paths
        .iter()
        .map(|p| {
            Path::new(p)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let unique = stems
        .iter()
        .enumerate()
        .all(|(i, s)| !s.is_empty() && !stems[..i].contains(s));
    if unique {
        stems
    } else {
        (0..paths.len()).map(letter_name).collect()
    }
}

fn letter_name(i: usize) -> String {
    if i < 26 {
        char::from(b'A' + i as u8).to_string()
    } else {
        format!("#{}", i + 1)
    }
}

/// Compares `results` (named by `names`, or A, B, … when `names` is empty) at every frame size
/// they all measured. Refuses fewer than two results and results with no size in common.
pub fn compare(results: &[SweepResult], names: &[String]) -> Result<Comparison, ReportError> {
    if results.len() < 2 {
        return Err(ReportError::TooFewResults {
            count: results.len(),
        });
    }
    let names: Vec<String> = if names.is_empty() {
        (0..results.len()).map(letter_name).collect()
    } else if names.len() == results.len() {
        names.to_vec()
    } else {
        return Err(ReportError::NameCount {
            results: results.len(),
            names: names.len(),
        });
    };
    let mut all_sizes: Vec<usize> = results.iter().flat_map(SweepResult::sizes).collect();
    all_sizes.sort_unstable();
    all_sizes.dedup();
    let (common, skipped): (Vec<usize>, Vec<usize>) = all_sizes
        .into_iter()
        .partition(|&size| results.iter().all(|r| r.point(size).is_some()));
    if common.is_empty() {
        let detail = names
            .iter()
            .zip(results)
            .map(|(name, r)| format!("{name} has {}", join_sizes(&r.sizes())))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(ReportError::NoCommonSizes { detail });
    }

    let from_sizes: Vec<Option<usize>> = results.iter().map(line_rate_from).collect();
    let rows = common
        .iter()
        .map(|&size| {
            let points: Vec<_> = results
                .iter()
                .map(|r| r.point(size).expect("common sizes are in every result"))
                .collect();
            let kpps: Vec<f64> = points.iter().map(|p| p.kpps_median()).collect();
            let mbps = points.iter().map(|p| p.mbps_median()).collect();
            let pct_of_line = points
                .iter()
                .zip(results)
                .map(|(p, r)| p.pct_of_line(r.context.link_speed_mbps))
                .collect();
            let ratios = kpps[1..].iter().map(|k| ratio(*k, kpps[0])).collect();
            let verdict = verdict(size, &names, &kpps, &from_sizes);
            CompareRow {
                size,
                kpps,
                mbps,
                pct_of_line,
                ratios,
                verdict,
            }
        })
        .collect();
    Ok(Comparison {
        names,
        rows,
        skipped_sizes: skipped,
    })
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::INFINITY }
}

fn join_sizes(sizes: &[usize]) -> String {
    let list: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    format!("{} B", list.join(","))
}

/// The smallest size from which this sweep stays at line rate for every larger size it measured.
fn line_rate_from(result: &SweepResult) -> Option<usize> {
    let link = result.context.link_speed_mbps?;
    let mut points: Vec<_> = result.points.iter().collect();
    points.sort_by_key(|p| p.size);
    let mut from = None;
    for p in points.iter().rev() {
        match p.pct_of_line(Some(link)) {
            Some(pct) if pct >= LINE_RATE_PCT => from = Some(p.size),
            _ => break,
        }
    }
    from
}

fn verdict(size: usize, names: &[String], kpps: &[f64], from_sizes: &[Option<usize>]) -> String {
    let mut parts: Vec<String> = names
        .iter()
        .zip(from_sizes)
        .filter(|(_, from)| **from == Some(size))
        .map(|(name, _)| format!("{name} reaches line rate from {size} B"))
        .collect();
    let (fast, slow) = extremes(kpps);
    let r = ratio(kpps[fast], kpps[slow]);
    if r <= 1.0 + EQUAL_WITHIN {
        let all = if names.len() == 2 { "" } else { "all " };
        parts.push(format!("{all}equal within {:.0} %", EQUAL_WITHIN * 100.0));
    } else if kpps[slow] <= 0.0 {
        parts.push(format!("{} got nothing through at {size} B", names[slow]));
    } else {
        parts.push(format!(
            "{} is {}× {} at {size} B",
            names[fast],
            format_ratio(r),
            names[slow]
        ));
    }
    parts.join("; ")
}

fn extremes(values: &[f64]) -> (usize, usize) {
    let mut fast = 0;
    let mut slow = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[fast] {
            fast = i;
        }
        if *v < values[slow] {
            slow = i;
        }
    }
    (fast, slow)
}

/// Two decimals with trailing zeros trimmed: 1.7×, 1.05×, 2×.
pub(crate) fn format_ratio(r: f64) -> String {
    if !r.is_finite() {
        return "∞".into();
    }
    let s = format!("{r:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl Comparison {
    /// The side-by-side table: per sweep its Kpps and % of line, then each ratio to the first,
    /// then the verdict; a legend line per sweep comes from [`Comparison::render_with`].
    pub fn render(&self) -> String {
        let n = self.names.len();
        let mut header = vec!["Size".to_string()];
        for name in &self.names {
            header.push(format!("{name} Kpps"));
            header.push(format!("{name} % of line"));
        }
        for name in &self.names[1..] {
            header.push(format!("{name}/{}", self.names[0]));
        }
        header.push("verdict".into());
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| {
                let mut cells = vec![row.size.to_string()];
                for i in 0..n {
                    cells.push(format!("{:.2}", row.kpps[i]));
                    cells.push(format_pct(row.pct_of_line[i]));
                }
                cells.extend(row.ratios.iter().map(|r| format!("{}×", format_ratio(*r))));
                cells.push(row.verdict.clone());
                cells
            })
            .collect();
        let mut right = vec![true; header.len()];
        *right.last_mut().expect("the header has a verdict column") = false;
        let mut out = markdown_table(&header, &rows, &right);
        if !self.skipped_sizes.is_empty() {
            out.push_str(&format!(
                "not in every sweep, left out: {}\n",
                join_sizes(&self.skipped_sizes)
            ));
        }
        out
    }

    /// [`Comparison::render`] followed by one line per sweep saying what it is.
    pub fn render_with(&self, results: &[SweepResult]) -> String {
        let mut out = self.render();
        for (name, result) in self.names.iter().zip(results) {
            out.push_str(&format!("{name}: {}\n", crate::table::context_line(result)));
        }
        out
    }
}
