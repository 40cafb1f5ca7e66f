//! RFC 2544 §26.3 frame loss rate: the first trial at 100 % of the max rate, then 90 %, 80 %…
//! until two successive trials lose nothing.

use std::time::Duration;

use serde::Serialize;

use crate::Error;
use crate::trial::{FrameSize, Recorder, Trial, TrialReport, check_duration, check_rate};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameLoss {
    max_rate: f64,
    duration_s: f64,
    step: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FrameLossRow {
    /// Offered load as a share of the max rate, in percent.
    pub load_percent: f64,
    pub rate_fps: f64,
    pub tx: u64,
    pub rx: u64,
    /// RFC 2544's frame loss rate: (input − output) · 100 / input.
    pub loss_percent: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameLossResult {
    pub size: u32,
    pub max_rate_fps: f64,
    pub rows: Vec<FrameLossRow>,
    /// True when two successive trials lost nothing (else the steps reached the bottom first).
    pub settled: bool,
    pub trial_time_s: f64,
    pub trials: Vec<TrialReport>,
}

impl FrameLoss {
    /// `step` is the share of the max rate between trials: 0.1 is the RFC's "maximum
    /// granularity"; finer is allowed.
    pub fn new(max_rate: f64, duration: Duration, step: f64) -> Result<Self, Error> {
        let max_rate = check_rate(max_rate)?;
        let duration_s = check_duration(duration, "trial duration")?;
        if !(step > 0.0 && step <= 0.1) {
            return Err(Error::Step(step));
        }
        Ok(Self {
            max_rate,
            duration_s,
            step,
        })
    }

    pub fn run<T: Trial>(&self, size: FrameSize, dev: &mut T) -> Result<FrameLossResult, Error> {
        let mut rec = Recorder::new(dev, size);
        let mut rows = Vec::new();
        let mut clean_in_a_row = 0;
        // Integer steps, so 100 % − 10 × 10 % lands on 0 exactly and stops.
        let steps = (1.0 / self.step).round() as u32;
        for i in 0..steps {
            let share = 1.0 - f64::from(i) * self.step;
            let t = rec.rate(self.max_rate * share, self.duration_s)?;
            rows.push(FrameLossRow {
                load_percent: share * 100.0,
                rate_fps: t.rate_fps,
                tx: t.tx,
                rx: t.rx,
                loss_percent: t.loss_ratio * 100.0,
            });
            clean_in_a_row = if t.tx > t.rx { 0 } else { clean_in_a_row + 1 };
            if clean_in_a_row == 2 {
                break;
            }
        }
        Ok(FrameLossResult {
            size: size.get(),
            max_rate_fps: self.max_rate,
            rows,
            settled: clean_in_a_row == 2,
            trial_time_s: rec.trial_time_s(),
            trials: rec.trials,
        })
    }
}
