use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::WorkerTotals;
use crate::counters::rate;
use crate::pace::PaceLog;

/// How closely a paced worker kept its schedule, in nanoseconds: how late batches went out
/// (actual minus scheduled submit time) and the gap between successive submits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PacingStats {
    /// `precise` (each frame sent alone at its own instant) or `sliced` (the frames due within
    /// a slice sent together).
    pub spacing: &'static str,
    /// What one send cost the port (ns), measured over the worker's first sends: `auto`
    /// spacing is precise only where the gap is 1.1 times that (0: too few sends to tell).
    pub send_ns: u64,
    pub batches: u64,
    pub late_p50_ns: u64,
    pub late_p99_ns: u64,
    pub late_p999_ns: u64,
    pub late_max_ns: u64,
    pub gap_p50_ns: u64,
    pub gap_p99_ns: u64,
    pub gap_max_ns: u64,
    #[serde(skip)]
    pub(crate) late: Histogram<u64>,
    #[serde(skip)]
    pub(crate) gap: Histogram<u64>,
}

impl PacingStats {
    pub(crate) fn of(totals: &WorkerTotals) -> Option<Self> {
        Some(Self::from_log(totals.pacing.clone()?))
    }

    /// Summarises a worker's log (ns): lateness per batch (or per call, for backends that
    /// pace by call) and gaps between them.
    pub fn from_log(log: PaceLog) -> Self {
        let PaceLog {
            late,
            gap,
            sliced,
            send_ns,
        } = log;
        Self {
            spacing: if sliced { "sliced" } else { "precise" },
            send_ns,
            batches: late.len(),
            late_p50_ns: late.value_at_quantile(0.5),
            late_p99_ns: late.value_at_quantile(0.99),
            late_p999_ns: late.value_at_quantile(0.999),
            late_max_ns: late.max(),
            gap_p50_ns: gap.value_at_quantile(0.5),
            gap_p99_ns: gap.value_at_quantile(0.99),
            gap_max_ns: gap.max(),
            late,
            gap,
        }
    }

    /// All workers' histograms merged.
    fn merged(workers: &[WorkerReport]) -> Option<Self> {
        let mut it = workers.iter().filter_map(|w| w.pacing.as_ref());
        let first = it.next()?;
        let mut log = PaceLog {
            late: first.late.clone(),
            gap: first.gap.clone(),
            sliced: first.spacing == "sliced",
            send_ns: first.send_ns,
        };
        for p in it {
            log.late.add(&p.late).ok()?;
            log.gap.add(&p.gap).ok()?;
            log.sliced |= p.spacing == "sliced";
            log.send_ns = log.send_ns.max(p.send_ns);
        }
        Some(Self::from_log(log))
    }
}

/// What one worker did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerReport {
    pub worker: usize,
    pub core: Option<usize>,
    pub queue: u32,
    pub mode: String,
    /// Frames handed to the backend.
    pub submitted: u64,
    /// Frames the backend reported done (after the final drain).
    pub completed: u64,
    /// Bytes of the submitted frames, FCS excluded (what a receiver's XDP program sees).
    pub bytes: u64,
    pub elapsed_s: f64,
    /// Backend counters, e.g. AF_XDP's tx_invalid_descs.
    pub stats: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing: Option<PacingStats>,
    /// The worker thread's CPU time and last core (Linux; filled by the runner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<crate::cpu::ThreadCpu>,
}

/// The outcome of a run: per worker and summed. Rates use the longest worker's time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub backend: String,
    pub port: String,
    pub workers: Vec<WorkerReport>,
    pub submitted: u64,
    pub completed: u64,
    pub bytes: u64,
    pub elapsed_s: f64,
    pub pps: f64,
    /// Bits per second on the wire (frame + FCS + 20 bytes of preamble, SFD and gap).
    pub wire_bps: f64,
    /// What the plan's schedule asked for (None: max rate).
    pub requested_pps: Option<f64>,
    /// Pacing of all workers together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing: Option<PacingStats>,
    /// Interleaved streams: what each stream asked for and sent, all workers together. (Not
    /// `streams`: the CLI's JSON already has that key for what each stream compiled to.)
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_stream: Vec<StreamCount>,
    /// Each core's busy and softirq share over the run (Linux, `/proc/stat`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<crate::cpu::CoreLoad>,
}

/// One interleaved stream's share of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamCount {
    pub name: String,
    /// Frames submitted, all workers together.
    pub frames: u64,
    /// Bytes of those frames, FCS excluded.
    pub bytes: u64,
    pub requested_pps: f64,
    /// Frames over the run's time (the longest worker's).
    pub pps: f64,
}

impl StreamCount {
    /// Achieved minus requested rate, in % of the request.
    pub fn rate_error_pct(&self) -> f64 {
        (self.pps - self.requested_pps) / self.requested_pps * 100.0
    }
}

impl Report {
    /// Sums the workers; rates use the longest worker's time.
    pub fn new(backend: &str, port: &str, workers: Vec<WorkerReport>) -> Self {
        let submitted = workers.iter().map(|w| w.submitted).sum();
        let completed = workers.iter().map(|w| w.completed).sum();
        let bytes = workers.iter().map(|w| w.bytes).sum();
        let elapsed_s = workers.iter().map(|w| w.elapsed_s).fold(0.0, f64::max);
        let elapsed = std::time::Duration::from_secs_f64(elapsed_s);
        Self {
            backend: backend.into(),
            port: port.into(),
            submitted,
            completed,
            bytes,
            elapsed_s,
            pps: rate(completed, elapsed),
            wire_bps: rate((bytes + completed * 24) * 8, elapsed),
            requested_pps: None,
            pacing: PacingStats::merged(&workers),
            workers,
            per_stream: Vec::new(),
            cores: Vec::new(),
        }
    }

    /// Frames submitted but never completed (a backend that lost them, or a drain that timed out).
    /// Achieved minus requested rate, in % of the request (paced runs).
    pub fn rate_error_pct(&self) -> Option<f64> {
        self.requested_pps.map(|r| (self.pps - r) / r * 100.0)
    }

    pub fn missing(&self) -> u64 {
        self.submitted - self.completed.min(self.submitted)
    }
}
