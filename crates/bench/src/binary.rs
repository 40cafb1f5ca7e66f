//! The classic RFC 2544 §26.1 throughput search: one loss goal, every trial full length, the
//! range halved after each trial. Kept for comparison with MLRsearch and for users who must
//! quote the classic method.

use std::time::Duration;

use serde::Serialize;

use crate::trial::{FrameSize, Recorder, Trial, TrialReport, check_duration};
use crate::{Error, GoalStatus};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinarySearch {
    loss_ratio: f64,
    duration_s: f64,
    width: f64,
    min_load: f64,
    max_load: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinaryResult {
    pub size: u32,
    pub loss_ratio: f64,
    pub status: GoalStatus,
    /// The highest load that met the goal, fps; `None` when not even the min load did.
    pub throughput_fps: Option<f64>,
    /// The lowest load that failed it, fps; `None` when the max load met the goal.
    pub failed_fps: Option<f64>,
    pub trial_time_s: f64,
    pub trials: Vec<TrialReport>,
}

impl BinarySearch {
    /// Trials of `duration` over `[min_load, max_load]`; stops when (failed − passed) / failed
    /// ≤ `width`, the same relative width as an MLRsearch goal's.
    pub fn new(
        loss_ratio: f64,
        duration: Duration,
        width: f64,
        min_load: f64,
        max_load: f64,
    ) -> Result<Self, Error> {
        if !(0.0..1.0).contains(&loss_ratio) {
            return Err(Error::LossRatio(loss_ratio));
        }
        if !(width > 0.0 && width < 1.0) {
            return Err(Error::Width(width));
        }
        let duration_s = check_duration(duration, "trial duration")?;
        if !(min_load.is_finite() && max_load.is_finite() && min_load > 0.0 && min_load < max_load)
        {
            return Err(Error::LoadRange {
                min_fps: min_load,
                max_fps: max_load,
            });
        }
        Ok(Self {
            loss_ratio,
            duration_s,
            width,
            min_load,
            max_load,
        })
    }

    pub fn search<T: Trial>(&self, size: FrameSize, dev: &mut T) -> Result<BinaryResult, Error> {
        let mut rec = Recorder::new(dev, size);
        let passes = |rec: &mut Recorder<T>, rate| -> Result<bool, Error> {
            Ok(rec.rate(rate, self.duration_s)?.loss_ratio <= self.loss_ratio)
        };
        let (mut passed, mut failed) = (None, None);
        if passes(&mut rec, self.max_load)? {
            passed = Some(self.max_load);
        } else {
            failed = Some(self.max_load);
            let (mut lo, mut hi) = (self.min_load, self.max_load);
            while (hi - lo) / hi > self.width {
                let mid = (lo + hi) / 2.0;
                if passes(&mut rec, mid)? {
                    lo = mid;
                    passed = Some(mid);
                } else {
                    hi = mid;
                    failed = Some(mid);
                }
            }
            // The range closed without a passing trial: the bottom is still unproven.
            if passed.is_none() {
                if passes(&mut rec, self.min_load)? {
                    passed = Some(self.min_load);
                } else {
                    failed = Some(self.min_load);
                }
            }
        }
        let status = match (passed, failed) {
            (Some(_), None) => GoalStatus::MaxLoadIsLowerBound,
            (None, _) => GoalStatus::NoRateMeetsGoal,
            (Some(_), Some(_)) => GoalStatus::Regular,
        };
        Ok(BinaryResult {
            size: size.get(),
            loss_ratio: self.loss_ratio,
            status,
            throughput_fps: passed,
            failed_fps: failed,
            trial_time_s: rec.trial_time_s(),
            trials: rec.trials,
        })
    }
}
