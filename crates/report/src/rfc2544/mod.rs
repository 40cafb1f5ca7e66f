//! An RFC 2544 run's result: what each size measured, every trial, and where it ran; its
//! tables in the RFC's terms, its CSV and its plot panels. The procedure that measures it is
//! `linerate_session`'s.

mod csv;
mod directions;
mod plot;
mod table;

use linerate_bench::{
    BackToBackResult, BinaryResult, FrameLossResult, GoalStatus, LatencyResult, LatencySummary,
    MlrResult, SearchGoal, TrialReport,
};
use serde::Serialize;

pub use csv::csv;
pub use plot::panels;
pub use table::tables;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// The highest rate without loss (NDR) and within each loss goal (PDR), per size.
    Throughput,
    /// Latency at the throughput found (§26.2).
    Latency,
    /// Frame loss rate from 100 % of the max rate down in 10 % steps (§26.3).
    Loss,
    /// The longest burst at the max rate without loss (§26.4).
    BackToBack,
    /// All four, in that order.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    /// RFC 9971 MLRsearch: every goal at once, short trials first.
    Mlr,
    /// The classic RFC 2544 binary search, one search per goal, every trial full length.
    Binary,
}

/// One trial as run, with where it belongs: the audit trail, kept even when a search is cut.
#[derive(Debug, Clone, Serialize)]
pub struct Logged {
    pub test: &'static str,
    #[serde(flatten)]
    pub trial: TrialReport,
    /// The rate the sender really kept, frames/s.
    pub sent_fps: f64,
    /// The direction that judged the trial, in a search of one direction's throughput; absent
    /// when every direction did (or there is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// Each direction's counts, when the trial sent in several at once (`tx`, `rx` and
    /// `loss_ratio` above are then the judging direction's: the worst one, unless `direction`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub directions: Vec<DirectionTrial>,
}

/// One direction of a trial over several ports.
#[derive(Debug, Clone, Serialize)]
pub struct DirectionTrial {
    /// The direction's name: its stream's, `FROM-TO`.
    pub direction: String,
    pub tx: u64,
    pub rx: u64,
    pub loss_ratio: f64,
    /// The rate its sender kept, frames/s.
    pub sent_fps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
}

/// What one direction measured at a size, when several ran at once.
#[derive(Debug, Clone, Serialize)]
pub struct DirectionResult {
    pub direction: String,
    /// This direction's own throughput: the highest load, offered on every direction at once,
    /// at which this direction meets each goal (its own search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    /// Its latency over the latency trials (at the aggregate throughput): min and max over
    /// them, the mean weighted by frames, the percentiles the trials' mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
    /// Its frame loss at each step of the frame loss test.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loss: Vec<DirectionLoss>,
}

/// One direction at one load step of the frame loss test.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct DirectionLoss {
    pub rate_fps: f64,
    pub tx: u64,
    pub rx: u64,
    pub loss_percent: f64,
}

/// Throughput of one size by either search.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "search")]
pub enum Throughput {
    Mlr(MlrResult),
    Binary { goals: Vec<BinaryResult> },
}

/// One goal's answer, as both searches report it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GoalLine {
    pub loss_ratio: f64,
    pub status: GoalStatus,
    pub throughput_fps: Option<f64>,
    pub conditional_fps: Option<f64>,
}

impl Throughput {
    pub fn lines(&self) -> Vec<GoalLine> {
        match self {
            Throughput::Mlr(r) => r
                .goals
                .iter()
                .map(|g| GoalLine {
                    loss_ratio: g.goal.loss_ratio,
                    status: g.status,
                    throughput_fps: g.throughput_fps(),
                    conditional_fps: g.conditional_throughput_fps,
                })
                .collect(),
            Throughput::Binary { goals } => goals
                .iter()
                .map(|g| GoalLine {
                    loss_ratio: g.loss_ratio,
                    status: g.status,
                    throughput_fps: g.throughput_fps,
                    conditional_fps: None,
                })
                .collect(),
        }
    }

    pub fn trial_time_s(&self) -> f64 {
        match self {
            Throughput::Mlr(r) => r.trial_time_s,
            Throughput::Binary { goals } => goals.iter().map(|g| g.trial_time_s).sum(),
        }
    }

    pub fn trials(&self) -> usize {
        match self {
            Throughput::Mlr(r) => r.trials.len(),
            Throughput::Binary { goals } => goals.iter().map(|g| g.trials.len()).sum(),
        }
    }
}

/// Everything measured at one frame size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeResult {
    pub size: u32,
    pub max_load_fps: f64,
    /// Where the max load came from: the line rate, the rate given, or a max-rate trial.
    pub max_load_from: &'static str,
    pub min_load_fps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyResult>,
    /// Why latency was not measured (no rate met the first goal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_skipped: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<FrameLossResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub back_to_back: Option<BackToBackResult>,
    /// Per direction, when several directions ran at once (the figures above are then the
    /// aggregate: every direction at the load, each trial judged by its worst direction).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub directions: Vec<DirectionResult>,
}

#[derive(Debug, Serialize)]
pub struct Context {
    pub linerate_version: &'static str,
    pub test: Test,
    pub search: Search,
    pub interface: String,
    pub rx: String,
    pub backend: String,
    /// Why `--backend auto` chose `backend`; absent when it was asked for by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_choice: Option<crate::BackendChoice>,
    pub mode: String,
    pub link_speed_mbps: Option<u64>,
    pub cores: Vec<usize>,
    pub trial_s: f64,
    pub initial_trial_s: f64,
    pub drain_s: f64,
    pub learning_frames: u64,
    pub goals: Vec<SearchGoal>,
    /// The directions sent at once (`FROM-TO`), empty for one port: every load is offered on
    /// each of them, so the aggregate offered load is the load times their number.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub directions: Vec<String>,
    pub os: String,
    pub kernel: String,
    pub cpu_model: String,
    pub hostname: String,
    pub date: String,
}

#[derive(Debug, Serialize)]
pub struct Rfc2544Result {
    pub context: Context,
    pub sizes: Vec<SizeResult>,
    /// Stopped (Ctrl-C) or failed before the end: what was measured is here, and every trial.
    pub interrupted: bool,
    /// Wall-clock time of the whole run, waits included.
    pub total_time_s: f64,
    /// Sum of the trials' durations (what RFC 9971 compares; the waits come on top).
    pub trial_time_s: f64,
    /// Every trial in the order run, those of a search cut short included.
    pub trials: Vec<Logged>,
}
