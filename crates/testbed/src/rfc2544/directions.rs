//! Per direction, when several directions run at once: each direction's own throughput search
//! (the load still offered on every direction, the trial judged by this one alone), its
//! latency and frame loss taken from the aggregate tests' trials, and the aggregate frame loss
//! rows summed over the directions.

use linerate_bench::{FrameSize, LatencySummary};
use linerate_report::rfc2544::{DirectionLoss, DirectionResult, Logged, SizeResult};

use super::trial::SessionTrial;
use super::{Rfc2544, Rfc2544Error, Test, phase};

impl Rfc2544 {
    /// Each direction's throughput at `size`, searched between the size's loads, into
    /// `r.directions` (already one entry per direction).
    pub(super) fn direction_throughputs(
        &self,
        size: FrameSize,
        trial: &mut SessionTrial<'_>,
        r: &mut SizeResult,
    ) -> Result<(), Rfc2544Error> {
        let wants = self.test == Test::Throughput || self.test == Test::All;
        if !wants || r.directions.len() < 2 {
            return Ok(());
        }
        let s = size.get();
        for d in 0..r.directions.len() {
            phase(
                trial,
                s,
                &format!("thr {}", r.directions[d].direction),
                "throughput",
            );
            trial.judge = Some(d);
            let t = self.throughput(size, r.min_load_fps, r.max_load_fps, trial);
            trial.judge = None;
            r.directions[d].throughput = Some(t?);
        }
        Ok(())
    }
}

/// Each of `names`' latency and loss over the aggregate trials of one size (`log`); empty for
/// one direction.
pub(super) fn results(names: &[String], log: &[Logged]) -> Vec<DirectionResult> {
    if names.len() < 2 {
        return Vec::new();
    }
    let aggregate = || log.iter().filter(|l| l.direction.is_none());
    names
        .iter()
        .map(|name| {
            let of = |l: &Logged| l.directions.iter().find(|d| d.direction == *name).cloned();
            let latency: Vec<LatencySummary> = aggregate()
                .filter(|l| l.test == "latency")
                .filter_map(|l| of(l)?.latency)
                .collect();
            let loss = aggregate()
                .filter(|l| l.test == "loss")
                .filter_map(|l| {
                    let d = of(l)?;
                    Some(DirectionLoss {
                        rate_fps: l.trial.rate_fps,
                        tx: d.tx,
                        rx: d.rx,
                        loss_percent: d.loss_ratio * 100.0,
                    })
                })
                .collect();
            DirectionResult {
                direction: name.clone(),
                throughput: None,
                latency: combine(&latency),
                loss,
            }
        })
        .collect()
}

/// The aggregate frame loss rows as RFC 2544 §26.3 counts them, input and output summed over the
/// directions (the test's own rows hold its judging, worst, direction's).
pub(super) fn sum_loss(r: &mut SizeResult, log: &[Logged]) {
    let Some(loss) = &mut r.loss else { return };
    let trials = log
        .iter()
        .filter(|l| l.test == "loss" && l.direction.is_none() && l.directions.len() > 1);
    for (row, l) in loss.rows.iter_mut().zip(trials) {
        row.tx = l.directions.iter().map(|d| d.tx).sum();
        row.rx = l.directions.iter().map(|d| d.rx).sum();
        row.loss_percent = super::loss_ratio(row.tx, row.rx) * 100.0;
    }
}

/// The latency of one trial over every direction: min and max over them, the mean weighted by
/// frames, each percentile the highest direction's (a bound on the pooled one: no more than
/// that share of every direction's frames, so of all, lies above it).
pub(super) fn pooled(directions: &[LatencySummary]) -> Option<LatencySummary> {
    let mut out = combine(directions)?;
    out.p50_ns = directions
        .iter()
        .map(|t| t.p50_ns)
        .max()
        .unwrap_or(out.p50_ns);
    out.p99_ns = directions
        .iter()
        .map(|t| t.p99_ns)
        .max()
        .unwrap_or(out.p99_ns);
    out.p999_ns = directions
        .iter()
        .map(|t| t.p999_ns)
        .max()
        .unwrap_or(out.p999_ns);
    Some(out)
}

/// Latency over several trials: min and max over them, the mean weighted by frames, the
/// percentiles the trials' mean (the latency test's own reading of its trials).
fn combine(trials: &[LatencySummary]) -> Option<LatencySummary> {
    let first = trials.first()?;
    let frames: u64 = trials.iter().map(|t| t.frames).sum();
    let n = trials.len() as f64;
    let mean = |f: fn(&LatencySummary) -> u64| {
        (trials.iter().map(|t| f(t) as f64).sum::<f64>() / n).round() as u64
    };
    Some(LatencySummary {
        frames,
        min_ns: trials
            .iter()
            .map(|t| t.min_ns)
            .min()
            .unwrap_or(first.min_ns),
        mean_ns: if frames == 0 {
            first.mean_ns
        } else {
            trials
                .iter()
                .map(|t| t.mean_ns * t.frames as f64)
                .sum::<f64>()
                / frames as f64
        },
        p50_ns: mean(|t| t.p50_ns),
        p99_ns: mean(|t| t.p99_ns),
        p999_ns: mean(|t| t.p999_ns),
        max_ns: trials
            .iter()
            .map(|t| t.max_ns)
            .max()
            .unwrap_or(first.max_ns),
    })
}
