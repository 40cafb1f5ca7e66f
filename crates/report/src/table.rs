//! The max-rate table on stdout and the CSV files for spreadsheets.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use crate::ReportError;
use crate::rate::LinkSpeed;
use crate::result::SweepResult;

const HEADER: [&str; 7] = [
    "Size",
    "Max Rate (Kpps)",
    "Max Rate (Mbps)",
    "% of line",
    "min..max Kpps",
    "cores",
    "mode",
];

/// The classic max-rate table as a Markdown table (it pastes into issues and docs as is), with
/// one line of context below it saying where the numbers come from.
pub fn render_table(result: &SweepResult) -> String {
    let link = result.context.link_speed_mbps;
    let cores = format_cores(&result.context.cores);
    let rows: Vec<Vec<String>> = result
        .points
        .iter()
        .map(|point| {
            vec![
                point.size.to_string(),
                format!("{:.2}", point.kpps_median()),
                format!("{:.2}", point.mbps_median()),
                format_pct(point.pct_of_line(link)),
                format!("{:.2}..{:.2}", point.kpps_min(), point.kpps_max()),
                cores.clone(),
                result.context.mode.clone(),
            ]
        })
        .collect();
    // The three numeric columns right-align so digits line up; the rest read left to right.
    let right = [true, true, true, true, false, false, false];
    let header = HEADER.map(String::from);
    let mut out = markdown_table(&header, &rows, &right);
    out.push_str(&context_line(result));
    out.push('\n');
    if result.interrupted {
        out.push_str(
            "INTERRUPTED: stopped before the end; only repetitions that ran their full duration are shown\n",
        );
    }
    out
}

/// One line that says how the table was made: backend, bound mode, where frames were counted.
pub fn context_line(result: &SweepResult) -> String {
    let c = &result.context;
    let link = c
        .link_speed_mbps
        .map(|m| LinkSpeed::from_mbps(m).to_string())
        .unwrap_or_else(|| "unknown".into());
    format!(
        "{} {} on {} (driver {}, link {}), {}; {} × {} s after {} s warm-up; {}, kernel {}, {}; {}",
        c.backend,
        c.mode,
        c.interface,
        c.driver.as_deref().unwrap_or("n/a"),
        link,
        result.measured_at.describe(),
        c.repeat,
        trim_float(c.duration_s),
        trim_float(c.warmup_s),
        c.os,
        c.kernel,
        c.cpu_model,
        c.date,
    )
}

pub(crate) fn format_pct(pct: Option<f64>) -> String {
    pct.map(|p| format!("{p:.1} %"))
        .unwrap_or_else(|| "n/a".into())
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `0-3,8` for cores 0,1,2,3,8: the list stays short on big machines.
pub fn format_cores(cores: &[usize]) -> String {
    if cores.is_empty() {
        return "-".into();
    }
    let mut sorted = cores.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut start = sorted[0];
    let mut end = start;
    for &core in &sorted[1..] {
        if core == end + 1 {
            end = core;
            continue;
        }
        parts.push(range_text(start, end));
        start = core;
        end = core;
    }
    parts.push(range_text(start, end));
    parts.join(",")
}

fn range_text(start: usize, end: usize) -> String {
    match end - start {
        0 => start.to_string(),
        1 => format!("{start},{end}"),
        _ => format!("{start}-{end}"),
    }
}

pub(crate) fn markdown_table(header: &[String], rows: &[Vec<String>], right: &[bool]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::from("|");
        for ((cell, width), right) in cells.iter().zip(&widths).zip(right) {
            let pad = " ".repeat(width - cell.chars().count());
            if *right {
                let _ = write!(s, " {pad}{cell} |");
            } else {
                let _ = write!(s, " {cell}{pad} |");
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(header);
    out.push('|');
    for (width, right) in widths.iter().zip(right) {
        // Markdown wants at least three characters in the rule, colon included.
        let dashes = "-".repeat(width.max(&3) - 1);
        if *right {
            let _ = write!(out, " {dashes}: |");
        } else {
            let _ = write!(out, " :{dashes} |");
        }
    }
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

const SUMMARY_COLUMNS: &str = "size,kpps_median,kpps_min,kpps_max,mbps,pct_of_line,line_rate_kpps,repetitions,measured_at,backend,mode,interface,cores";
const REPETITION_COLUMNS: &str =
    "size,repetition,tx_frames,tx_bytes,rx_frames,rx_bytes,elapsed_s,kpps";

/// One row per frame size with the summary numbers; unknown values are empty cells.
pub fn csv_summary(result: &SweepResult) -> String {
    let c = &result.context;
    let link = c.link_speed_mbps;
    let measured_at = match result.measured_at {
        crate::MeasuredAt::Sink => "sink",
        crate::MeasuredAt::TxCompletions => "tx_completions",
    };
    let mut out = String::from(SUMMARY_COLUMNS);
    out.push('\n');
    for p in &result.points {
        let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "{},{:.3},{:.3},{:.3},{:.3},{},{},{},{},{},{},{},{}",
            p.size,
            p.kpps_median(),
            p.kpps_min(),
            p.kpps_max(),
            p.mbps_median(),
            opt(p.pct_of_line(link)),
            opt(p.line_rate_kpps(link)),
            p.repetitions.len(),
            measured_at,
            csv_field(&c.backend),
            csv_field(&c.mode),
            csv_field(&c.interface),
            csv_field(&format_cores(&c.cores)),
        );
    }
    out
}

/// One row per measured run with the raw counts, for anyone who wants to redo the arithmetic.
pub fn csv_repetitions(result: &SweepResult) -> String {
    let mut out = String::from(REPETITION_COLUMNS);
    out.push('\n');
    for p in &result.points {
        for (i, r) in p.repetitions.iter().enumerate() {
            let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{:.3}",
                p.size,
                i + 1,
                r.tx_frames,
                r.tx_bytes,
                opt(r.rx_frames),
                opt(r.rx_bytes),
                r.elapsed_s,
                r.kpps()
            );
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Where [`write_csv`] puts the raw repetitions: `F.csv` → `F.repetitions.csv`.
pub fn repetitions_csv_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "sweep".into());
    path.with_file_name(format!("{stem}.repetitions.csv"))
}

/// Writes the summary to `path` and the raw repetitions beside it (see [`repetitions_csv_path`]):
/// two files, because a spreadsheet wants one table per sheet. Returns both paths.
pub fn write_csv(result: &SweepResult, path: &Path) -> Result<[PathBuf; 2], ReportError> {
    let raw = repetitions_csv_path(path);
    for (file, text) in [(path, csv_summary(result)), (&raw, csv_repetitions(result))] {
        fs::write(file, text).map_err(|source| ReportError::Io {
            path: file.to_path_buf(),
            source,
        })?;
    }
    Ok([path.to_path_buf(), raw])
}
