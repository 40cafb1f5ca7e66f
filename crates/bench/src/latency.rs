//! RFC 2544 §26.2 latency: n trials at one rate (the throughput found), each summarised by the
//! receive side; the result is the RFC's average of the trials' values beside the extremes.

use std::time::Duration;

use serde::Serialize;

use crate::Error;
use crate::trial::{FrameSize, Recorder, Trial, TrialReport, check_duration, check_rate};

/// RFC 2544 §26.2: "The test MUST be repeated at least 20 times".
pub const DEFAULT_LATENCY_TRIALS: u32 = 20;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyTest {
    rate: f64,
    duration_s: f64,
    trials: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyResult {
    pub size: u32,
    pub rate_fps: f64,
    /// Lowest and highest latency seen in any trial.
    pub min_ns: u64,
    pub max_ns: u64,
    /// Mean over every frame of every trial (trials weighted by their frames).
    pub mean_ns: f64,
    /// Averages of the trials' percentiles, as RFC 2544 averages the trials' values. A
    /// percentile of the whole run cannot be rebuilt from per-trial summaries.
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub trial_time_s: f64,
    pub trials: Vec<TrialReport>,
}

impl LatencyTest {
    pub fn new(rate: f64, duration: Duration, trials: u32) -> Result<Self, Error> {
        let rate = check_rate(rate)?;
        let duration_s = check_duration(duration, "trial duration")?;
        if trials == 0 {
            return Err(Error::Zero("the number of latency trials"));
        }
        Ok(Self {
            rate,
            duration_s,
            trials,
        })
    }

    pub fn run<T: Trial>(&self, size: FrameSize, dev: &mut T) -> Result<LatencyResult, Error> {
        let mut rec = Recorder::new(dev, size);
        let mut summaries = Vec::with_capacity(self.trials as usize);
        for _ in 0..self.trials {
            let t = rec.rate(self.rate, self.duration_s)?;
            summaries.push(t.latency.ok_or(Error::NoLatency {
                rate_fps: self.rate,
            })?);
        }
        let n = summaries.len() as f64;
        let frames: u64 = summaries.iter().map(|s| s.frames).sum();
        let weighted: f64 = summaries.iter().map(|s| s.mean_ns * s.frames as f64).sum();
        let avg = |f: fn(&crate::LatencySummary) -> u64| {
            summaries.iter().map(|s| f(s) as f64).sum::<f64>() / n
        };
        Ok(LatencyResult {
            size: size.get(),
            rate_fps: self.rate,
            min_ns: summaries.iter().map(|s| s.min_ns).min().unwrap_or(0),
            max_ns: summaries.iter().map(|s| s.max_ns).max().unwrap_or(0),
            mean_ns: if frames == 0 {
                0.0
            } else {
                weighted / frames as f64
            },
            p50_ns: avg(|s| s.p50_ns),
            p99_ns: avg(|s| s.p99_ns),
            p999_ns: avg(|s| s.p999_ns),
            trial_time_s: rec.trial_time_s(),
            trials: rec.trials,
        })
    }
}
