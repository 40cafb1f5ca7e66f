use std::time::Duration;

use serde::Serialize;

use crate::Error;

/// An Ethernet frame size (FCS included, as RFC 2544 counts it), checked against the smallest
/// frame that still carries what the receiver needs (the signature; see docs/receive.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct FrameSize(u32);

impl FrameSize {
    pub fn new(size: u32, min: u32) -> Result<Self, Error> {
        if size < min {
            return Err(Error::SizeTooSmall { size, min });
        }
        Ok(Self(size))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// What one trial offers: `rate` frames per second of `size`-byte frames for `duration`, or,
/// with `burst`, that many frames back to back at `rate` (then `duration` is the burst's own
/// length, `burst / rate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub size: u32,
    pub rate: f64,
    pub duration: Duration,
    pub burst: Option<u64>,
}

/// Latency of one trial, as the receive side summarises it (docs/receive.md): min, mean and max
/// exact, percentiles from its histogram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Frames the summary was taken over.
    pub frames: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// What a trial sent and what came back. `rx` counts unique frames of the trial's flow
/// (the receive side's received − duplicates), so `tx - rx` is the loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialOutput {
    pub tx: u64,
    pub rx: u64,
    pub latency: Option<LatencySummary>,
}

/// Runs one trial. The engine with the receiver implements it for real ports; `sim` has
/// devices with known answers. A trial includes whatever the implementation needs around it
/// (learning frames, the drain wait); the searches count only `duration` as trial time.
pub trait Trial {
    type Error: std::error::Error + Send + Sync + 'static;

    fn run(&mut self, load: &Load) -> Result<TrialOutput, Self::Error>;
}

/// One trial as done, for the audit trail in the JSON report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TrialReport {
    pub size: u32,
    /// Offered (intended) rate in frames per second: the RFC 9971 trial load.
    pub rate_fps: f64,
    pub duration_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<u64>,
    pub tx: u64,
    pub rx: u64,
    /// (tx − rx) / tx; more frames back than sent counts as no loss.
    pub loss_ratio: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
}

impl TrialReport {
    /// Frames per second that came through: the RFC 9971 trial forwarding rate.
    pub fn forwarding_rate(&self) -> f64 {
        self.rate_fps * (1.0 - self.loss_ratio)
    }
}

pub(crate) fn check_rate(rate: f64) -> Result<f64, Error> {
    if rate.is_finite() && rate > 0.0 {
        Ok(rate)
    } else {
        Err(Error::Rate(rate))
    }
}

pub(crate) fn check_duration(d: Duration, what: &'static str) -> Result<f64, Error> {
    if d.is_zero() {
        return Err(Error::ZeroDuration(what));
    }
    Ok(d.as_secs_f64())
}

/// Runs trials on a device and keeps every report, so each test returns its audit trail.
pub(crate) struct Recorder<'a, T> {
    dev: &'a mut T,
    size: u32,
    pub trials: Vec<TrialReport>,
}

impl<'a, T: Trial> Recorder<'a, T> {
    pub fn new(dev: &'a mut T, size: FrameSize) -> Self {
        Self {
            dev,
            size: size.get(),
            trials: Vec::new(),
        }
    }

    pub fn rate(&mut self, rate: f64, duration_s: f64) -> Result<TrialReport, Error> {
        let load = Load {
            size: self.size,
            rate,
            duration: Duration::from_secs_f64(duration_s),
            burst: None,
        };
        self.run(load, duration_s)
    }

    pub fn burst(&mut self, rate: f64, frames: u64) -> Result<TrialReport, Error> {
        let duration_s = frames as f64 / rate;
        let load = Load {
            size: self.size,
            rate,
            duration: Duration::from_secs_f64(duration_s),
            burst: Some(frames),
        };
        self.run(load, duration_s)
    }

    fn run(&mut self, load: Load, duration_s: f64) -> Result<TrialReport, Error> {
        let out = self.dev.run(&load).map_err(|e| Error::Trial {
            rate_fps: load.rate,
            source: Box::new(e),
        })?;
        if out.tx == 0 {
            return Err(Error::NothingSent {
                rate_fps: load.rate,
            });
        }
        let report = TrialReport {
            size: load.size,
            rate_fps: load.rate,
            duration_s,
            burst: load.burst,
            tx: out.tx,
            rx: out.rx,
            loss_ratio: out.tx.saturating_sub(out.rx) as f64 / out.tx as f64,
            latency: out.latency,
        };
        self.trials.push(report);
        Ok(report)
    }

    /// Sum of the trials' durations: the search time the RFCs compare, without the waits a
    /// real trial adds around it.
    pub fn trial_time_s(&self) -> f64 {
        self.trials.iter().map(|t| t.duration_s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_size_below_minimum_is_refused() {
        assert!(matches!(
            FrameSize::new(63, 64),
            Err(Error::SizeTooSmall { size: 63, min: 64 })
        ));
        assert_eq!(FrameSize::new(64, 64).unwrap().get(), 64);
    }

    #[test]
    fn zero_and_bad_inputs_are_refused() {
        assert!(matches!(
            check_duration(Duration::ZERO, "x"),
            Err(Error::ZeroDuration("x"))
        ));
        assert!(check_rate(0.0).is_err());
        assert!(check_rate(f64::NAN).is_err());
        assert!(check_rate(f64::INFINITY).is_err());
        assert_eq!(check_rate(5.0).unwrap(), 5.0);
    }

    struct Silent;
    impl Trial for Silent {
        type Error = std::convert::Infallible;
        fn run(&mut self, _: &Load) -> Result<TrialOutput, Self::Error> {
            Ok(TrialOutput {
                tx: 0,
                rx: 0,
                latency: None,
            })
        }
    }

    #[test]
    fn a_trial_that_sent_nothing_is_an_error_not_zero_loss() {
        let mut dev = Silent;
        let mut rec = Recorder::new(&mut dev, FrameSize::new(64, 64).unwrap());
        assert!(matches!(
            rec.rate(1000.0, 1.0),
            Err(Error::NothingSent { .. })
        ));
        assert!(rec.trials.is_empty());
    }
}
