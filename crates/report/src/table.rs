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

const SUMMARY_COLUMNS: [&str; 13] = [
    "size",
    "kpps_median",
    "kpps_min",
    "kpps_max",
    "mbps",
    "pct_of_line",
    "line_rate_kpps",
    "repetitions",
    "measured_at",
    "backend",
    "mode",
    "interface",
    "cores",
];
const REPETITION_COLUMNS: [&str; 8] = [
    "size",
    "repetition",
    "tx_frames",
    "tx_bytes",
    "rx_frames",
    "rx_bytes",
    "elapsed_s",
    "kpps",
];

/// Rows written by the csv crate (quoting is its business), header first.
fn csv_of<const N: usize>(header: [&str; N], rows: impl Iterator<Item = [String; N]>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let written = std::iter::once(header.map(str::to_owned))
        .chain(rows)
        .try_for_each(|row| w.write_record(&row));
    // Writing into memory cannot fail, nor can its bytes be anything but the UTF-8 given.
    written.expect("CSV into memory");
    let bytes = w.into_inner().expect("CSV into memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields")
}

/// One row per frame size with the summary numbers; unknown values are empty cells.
pub fn csv_summary(result: &SweepResult) -> String {
    let c = &result.context;
    let link = c.link_speed_mbps;
    let measured_at = match result.measured_at {
        crate::MeasuredAt::Sink => "sink",
        crate::MeasuredAt::TxCompletions => "tx_completions",
    };
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    let rows = result.points.iter().map(|p| {
        [
            p.size.to_string(),
            format!("{:.3}", p.kpps_median()),
            format!("{:.3}", p.kpps_min()),
            format!("{:.3}", p.kpps_max()),
            format!("{:.3}", p.mbps_median()),
            opt(p.pct_of_line(link)),
            opt(p.line_rate_kpps(link)),
            p.repetitions.len().to_string(),
            measured_at.to_owned(),
            c.backend.clone(),
            c.mode.clone(),
            c.interface.clone(),
            format_cores(&c.cores),
        ]
    });
    csv_of(SUMMARY_COLUMNS, rows)
}

/// One row per measured run with the raw counts, for anyone who wants to redo the arithmetic.
pub fn csv_repetitions(result: &SweepResult) -> String {
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let rows = result.points.iter().flat_map(|p| {
        p.repetitions.iter().enumerate().map(move |(i, r)| {
            [
                p.size.to_string(),
                (i + 1).to_string(),
                r.tx_frames.to_string(),
                r.tx_bytes.to_string(),
                opt(r.rx_frames),
                opt(r.rx_bytes),
                r.elapsed_s.to_string(),
                format!("{:.3}", r.kpps()),
            ]
        })
    });
    csv_of(REPETITION_COLUMNS, rows)
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
