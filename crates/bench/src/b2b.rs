//! RFC 2544 §26.4 back-to-back: the longest burst at the max rate that loses nothing, found by a
//! binary search on the burst length, the search repeated n times and averaged.

use serde::Serialize;

use crate::Error;
use crate::trial::{FrameSize, Recorder, Trial, TrialReport, check_rate};

/// RFC 2544 §26.4: "The trial SHOULD be repeated at least 50 times".
pub const DEFAULT_BACK_TO_BACK_TRIALS: u32 = 50;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackToBack {
    rate: f64,
    max_burst: u64,
    trials: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackToBackResult {
    pub size: u32,
    pub rate_fps: f64,
    pub max_burst: u64,
    /// The longest clean burst found by each repetition of the search.
    pub bursts: Vec<u64>,
    pub mean: f64,
    pub min: u64,
    pub max: u64,
    /// True when a burst of `max_burst` itself lost nothing: the device's limit lies beyond.
    pub capped: bool,
    pub trial_time_s: f64,
    pub trials: Vec<TrialReport>,
}

impl BackToBack {
    /// Bursts at `rate` (the max rate), of 1..=`max_burst` frames, the search run `trials` times.
    pub fn new(rate: f64, max_burst: u64, trials: u32) -> Result<Self, Error> {
        let rate = check_rate(rate)?;
        if max_burst == 0 {
            return Err(Error::Zero("the max burst"));
        }
        if trials == 0 {
            return Err(Error::Zero("the number of back-to-back trials"));
        }
        Ok(Self {
            rate,
            max_burst,
            trials,
        })
    }

    pub fn run<T: Trial>(&self, size: FrameSize, dev: &mut T) -> Result<BackToBackResult, Error> {
        let mut rec = Recorder::new(dev, size);
        let mut bursts = Vec::with_capacity(self.trials as usize);
        let mut capped = false;
        for _ in 0..self.trials {
            let clean = |rec: &mut Recorder<T>, n| -> Result<bool, Error> {
                let t = rec.burst(self.rate, n)?;
                Ok(t.rx >= t.tx)
            };
            if clean(&mut rec, self.max_burst)? {
                capped = true;
                bursts.push(self.max_burst);
                continue;
            }
            // Invariant: lo is clean (0 trivially), hi lost frames.
            let (mut lo, mut hi) = (0, self.max_burst);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if clean(&mut rec, mid)? {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            bursts.push(lo);
        }
        Ok(BackToBackResult {
            size: size.get(),
            rate_fps: self.rate,
            max_burst: self.max_burst,
            mean: bursts.iter().sum::<u64>() as f64 / bursts.len() as f64,
            min: bursts.iter().copied().min().unwrap_or(0),
            max: bursts.iter().copied().max().unwrap_or(0),
            bursts,
            capped,
            trial_time_s: rec.trial_time_s(),
            trials: rec.trials,
        })
    }
}
