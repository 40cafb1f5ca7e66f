//! The sweep result file: raw counts per repetition plus the context they were measured in.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ReportError;
use crate::rate::{line_rate_pps, wire_mbps};

/// Written into every file so a reader can tell a sweep result from any other JSON.
pub const FORMAT: &str = "linerate-sweep/1";

/// One `linerate sweep`: where and how it ran, and what every repetition counted.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SweepResult {
    pub context: Context,
    pub measured_at: MeasuredAt,
    pub points: Vec<SizePoint>,
    /// Stopped (Ctrl-C, SIGTERM) before every size was measured as asked: the points hold only
    /// the repetitions that ran their full duration.
    #[serde(default)]
    pub interrupted: bool,
}

/// Where the frames were counted. At the sink, rates come from rx counts; otherwise from tx
/// completions, which prove only that the NIC took the frame, not that it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeasuredAt {
    Sink,
    TxCompletions,
}

impl MeasuredAt {
    pub fn describe(self) -> &'static str {
        match self {
            MeasuredAt::Sink => "measured at the sink (rx)",
            MeasuredAt::TxCompletions => "measured from tx completions (no sink)",
        }
    }
}

/// What a reader needs to trust, reproduce or compare a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub linerate_version: String,
    pub backend: String,
    /// The mode the port actually bound in (e.g. `zero-copy`, `copy`, `skb`), not the one asked for.
    pub mode: String,
    pub interface: String,
    pub driver: Option<String>,
    pub link_speed_mbps: Option<u64>,
    pub os: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cores: Vec<usize>,
    pub queues: Vec<u32>,
    /// RFC 3339, UTC.
    pub date: String,
    pub hostname: String,
    pub duration_s: f64,
    pub repeat: u32,
    pub warmup_s: f64,
    /// Why `--backend auto` chose `backend`; absent when it was asked for by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_choice: Option<BackendChoice>,
}

/// What `--backend auto` chose and why, as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendChoice {
    pub backend: String,
    pub why: String,
}

/// All repetitions at one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizePoint {
    /// Frame size including the FCS.
    pub size: usize,
    pub repetitions: Vec<Repetition>,
}

/// The raw counts of one measured run; every derived number is computed from these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repetition {
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Present exactly when the sweep was measured at the sink.
    pub rx_frames: Option<u64>,
    pub rx_bytes: Option<u64>,
    pub elapsed_s: f64,
}

/// The derived numbers of one size, as written beside the raw counts for people and jq.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub kpps_median: f64,
    pub kpps_min: f64,
    pub kpps_max: f64,
    /// Wire Mbps at the median rate, the 20-byte preamble/SFD/IFG overhead included.
    pub mbps: f64,
    /// Median rate as a percentage of line rate; null when the link speed is unknown (veth).
    pub pct_of_line: Option<f64>,
}

impl Repetition {
    /// Frames that count: received at the sink when there was one, else completed by the NIC.
    pub fn counted_frames(&self) -> u64 {
        self.rx_frames.unwrap_or(self.tx_frames)
    }

    pub fn kpps(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.counted_frames() as f64 / self.elapsed_s / 1000.0
        } else {
            0.0
        }
    }

    pub fn tx_kpps(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.tx_frames as f64 / self.elapsed_s / 1000.0
        } else {
            0.0
        }
    }
}

impl SizePoint {
    fn sorted_kpps(&self) -> Vec<f64> {
        let mut rates: Vec<f64> = self.repetitions.iter().map(Repetition::kpps).collect();
        rates.sort_by(f64::total_cmp);
        rates
    }

    /// The median over repetitions (mean of the middle two for an even count): one slow run from
    /// a stray interrupt should not move the headline number.
    pub fn kpps_median(&self) -> f64 {
        let rates = self.sorted_kpps();
        match rates.len() {
            0 => 0.0,
            n if n % 2 == 1 => rates[n / 2],
            n => (rates[n / 2 - 1] + rates[n / 2]) / 2.0,
        }
    }

    pub fn kpps_min(&self) -> f64 {
        self.sorted_kpps().first().copied().unwrap_or(0.0)
    }

    pub fn kpps_max(&self) -> f64 {
        self.sorted_kpps().last().copied().unwrap_or(0.0)
    }

    pub fn mbps_median(&self) -> f64 {
        wire_mbps(self.size, self.kpps_median())
    }

    pub fn line_rate_kpps(&self, link_mbps: Option<u64>) -> Option<f64> {
        link_mbps.map(|mbps| line_rate_pps(self.size, mbps) / 1000.0)
    }

    pub fn pct_of_line(&self, link_mbps: Option<u64>) -> Option<f64> {
        self.line_rate_kpps(link_mbps)
            .map(|line| 100.0 * self.kpps_median() / line)
    }

    pub fn summary(&self, link_mbps: Option<u64>) -> Summary {
        Summary {
            kpps_median: self.kpps_median(),
            kpps_min: self.kpps_min(),
            kpps_max: self.kpps_max(),
            mbps: self.mbps_median(),
            pct_of_line: self.pct_of_line(link_mbps),
        }
    }
}

impl SweepResult {
    pub fn point(&self, size: usize) -> Option<&SizePoint> {
        self.points.iter().find(|p| p.size == size)
    }

    pub fn sizes(&self) -> Vec<usize> {
        self.points.iter().map(|p| p.size).collect()
    }

    /// Checks what serde cannot: rates need repetitions with a positive duration, sizes must be
    /// unique, and rx counts must be there exactly when the sweep says it was measured at the sink.
    /// `origin` names the file (or run) in the error.
    pub fn validate(&self, origin: &str) -> Result<(), ReportError> {
        let invalid = |detail: String| ReportError::Invalid {
            origin: origin.to_string(),
            detail,
        };
        if self.points.is_empty() {
            return Err(invalid("the sweep has no frame sizes".into()));
        }
        let mut seen = Vec::with_capacity(self.points.len());
        for point in &self.points {
            if seen.contains(&point.size) {
                return Err(invalid(format!("frame size {} appears twice", point.size)));
            }
            seen.push(point.size);
            if point.repetitions.is_empty() {
                return Err(invalid(format!("{} B has no repetitions", point.size)));
            }
            for (i, rep) in point.repetitions.iter().enumerate() {
                let at = || format!("{} B, repetition {}", point.size, i + 1);
                if !(rep.elapsed_s.is_finite() && rep.elapsed_s > 0.0) {
                    return Err(invalid(format!("{}: elapsed_s must be positive", at())));
                }
                match (self.measured_at, rep.rx_frames) {
                    (MeasuredAt::Sink, None) => {
                        return Err(invalid(format!(
                            "{}: measured at the sink but rx_frames is missing",
                            at()
                        )));
                    }
                    (MeasuredAt::TxCompletions, Some(_)) => {
                        return Err(invalid(format!(
                            "{}: rx_frames present but measured_at is tx_completions",
                            at()
                        )));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    pub fn to_json(&self) -> String {
        // Serializing plain structs of strings and numbers cannot fail.
        serde_json::to_string_pretty(self).expect("a sweep result serializes") + "\n"
    }

    pub fn save(&self, path: &Path) -> Result<(), ReportError> {
        fs::write(path, self.to_json()).map_err(|source| ReportError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads a file written by `linerate sweep --json`, naming the file in every error.
    pub fn load(path: &Path) -> Result<Self, ReportError> {
        let text = fs::read_to_string(path).map_err(|source| ReportError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text, path)
    }

    /// Parses the text of a result file; `path` is only used to name it in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<Self, ReportError> {
        let path = path.to_path_buf();
        if text.trim().is_empty() {
            return Err(ReportError::Empty { path });
        }
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|source| ReportError::Corrupt {
                path: path.clone(),
                source,
            })?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) | None if value.is_object() => {}
            Some(other) => {
                return Err(ReportError::Shape {
                    path,
                    detail: format!("format is `{other}`, expected `{FORMAT}`"),
                });
            }
            None => {
                return Err(ReportError::Shape {
                    path,
                    detail: "the top level is not an object".into(),
                });
            }
        }
        let result: SweepResult =
            serde_json::from_value(value).map_err(|e| ReportError::Shape {
                path: path.clone(),
                detail: e.to_string(),
            })?;
        result.validate(&path.display().to_string())?;
        Ok(result)
    }
}

impl Serialize for SweepResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Point<'a> {
            size: usize,
            summary: Summary,
            repetitions: &'a [Repetition],
        }
        #[derive(Serialize)]
        struct File<'a> {
            format: &'static str,
            context: &'a Context,
            measured_at: MeasuredAt,
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            interrupted: bool,
            points: Vec<Point<'a>>,
        }
        let link = self.context.link_speed_mbps;
        File {
            format: FORMAT,
            context: &self.context,
            measured_at: self.measured_at,
            interrupted: self.interrupted,
            points: self
                .points
                .iter()
                .map(|p| Point {
                    size: p.size,
                    summary: p.summary(link),
                    repetitions: &p.repetitions,
                })
                .collect(),
        }
        .serialize(serializer)
    }
}
