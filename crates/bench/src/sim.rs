//! Simulated devices with answers known in closed form, for testing the searches without a
//! network. Each states what it admits; the tests compute the expected result from that.
//! All are deterministic: the random ones take a seed.

use std::convert::Infallible;

use crate::{LatencySummary, Load, Trial, TrialOutput};

/// SplitMix64: small, seedable, good enough to draw loss events.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so its logarithm is finite.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Binomial(n, p), exactly: the gaps between successes are geometric, so the draw costs
    /// n·p steps rather than n.
    pub fn binomial(&mut self, n: u64, p: f64) -> u64 {
        if p <= 0.0 {
            return 0;
        }
        let ln_q = (-p).ln_1p();
        let (mut pos, mut count) = (0u64, 0u64);
        loop {
            let gap = (self.unit().ln() / ln_q).floor();
            if gap >= (n - pos) as f64 {
                return count;
            }
            pos += gap as u64 + 1;
            count += 1;
        }
    }
}

/// Frames offered by a load: the burst, or rate × duration rounded.
pub fn offered(load: &Load) -> u64 {
    load.burst
        .unwrap_or_else(|| (load.rate * load.duration.as_secs_f64()).round() as u64)
}

/// A token-bucket policer like tbf: `rate_fps` frames of the trial's size per second, and a
/// bucket of `bucket_bytes` that starts full. Over a trial of d seconds it passes at most
/// `rate_fps · d + bucket_bytes / size` frames (fluid model). So a load L passes clean when
/// `L ≤ rate_fps + bucket_bytes / (size · d)`, and above it loses about (L − rate_fps) / L.
#[derive(Debug, Clone)]
pub struct Shaper {
    pub rate_fps: f64,
    pub bucket_bytes: f64,
}

impl Shaper {
    /// The highest clean load for trials of `duration_s` seconds of `size`-byte frames.
    pub fn ndr(&self, size: u32, duration_s: f64) -> f64 {
        self.rate_fps + self.bucket_bytes / (f64::from(size) * duration_s)
    }

    /// The highest load losing at most `loss_ratio`.
    pub fn pdr(&self, size: u32, duration_s: f64, loss_ratio: f64) -> f64 {
        self.ndr(size, duration_s) / (1.0 - loss_ratio)
    }
}

impl Trial for Shaper {
    type Error = Infallible;
    fn run(&mut self, load: &Load) -> Result<TrialOutput, Infallible> {
        let tx = offered(load);
        let d = load.duration.as_secs_f64();
        let cap = (self.rate_fps * d + self.bucket_bytes / f64::from(load.size)).floor() as u64;
        Ok(TrialOutput {
            tx,
            rx: tx.min(cap),
            latency: None,
        })
    }
}

/// Loses each frame independently with probability `p`, at every rate.
#[derive(Debug, Clone)]
pub struct RandomLoss {
    pub p: f64,
    pub rng: Rng,
}

impl Trial for RandomLoss {
    type Error = Infallible;
    fn run(&mut self, load: &Load) -> Result<TrialOutput, Infallible> {
        let tx = offered(load);
        let lost = self.rng.binomial(tx, self.p);
        Ok(TrialOutput {
            tx,
            rx: tx - lost,
            latency: None,
        })
    }
}

/// A queue of `queue` frames in front of a link that drains `drain_fps`. A burst of N frames
/// at M > D fps loses nothing while every arrival finds a free place: frame i (from 0) finds
/// `i · (1 − D/M)` frames queued, so the burst is clean when `(N − 1)(M − D) ≤ (Q − 1) · M`.
/// The fluid answer Q·M / (M − D) differs from the discrete one by less than M / (M − D).
#[derive(Debug, Clone)]
pub struct Queue {
    pub queue: u64,
    pub drain_fps: f64,
}

impl Queue {
    /// The longest clean burst at `rate` fps, exact for this model.
    pub fn longest_clean_burst(&self, rate: f64) -> u64 {
        if rate <= self.drain_fps {
            return u64::MAX;
        }
        ((self.queue - 1) as f64 * rate / (rate - self.drain_fps)).floor() as u64 + 1
    }
}

impl Trial for Queue {
    type Error = Infallible;
    fn run(&mut self, load: &Load) -> Result<TrialOutput, Infallible> {
        let tx = offered(load);
        let clean = self.longest_clean_burst(load.rate);
        let rx = if tx <= clean {
            tx
        } else {
            // Once full, the queue takes frames only as fast as it drains.
            clean + ((tx - clean) as f64 * self.drain_fps / load.rate).floor() as u64
        };
        Ok(TrialOutput {
            tx,
            rx,
            latency: None,
        })
    }
}

/// A device that forwards `capacity_fps` (above it loses the excess), but between
/// `noisy_from_fps` and its capacity a trial loses a few frames (0.01 %, at least one) with
/// probability `flip`: a software forwarder whose rare hiccups near its limit come and go.
#[derive(Debug, Clone)]
pub struct Noisy {
    pub capacity_fps: f64,
    pub noisy_from_fps: f64,
    pub flip: f64,
    pub rng: Rng,
}

impl Trial for Noisy {
    type Error = Infallible;
    fn run(&mut self, load: &Load) -> Result<TrialOutput, Infallible> {
        let tx = offered(load);
        let d = load.duration.as_secs_f64();
        let mut rx = tx.min((self.capacity_fps * d).floor() as u64);
        if load.rate >= self.noisy_from_fps
            && load.rate <= self.capacity_fps
            && self.rng.unit() <= self.flip
        {
            rx = rx.saturating_sub((tx / 10_000).max(1));
        }
        Ok(TrialOutput {
            tx,
            rx,
            latency: None,
        })
    }
}

/// Forwards everything; trial i's latency spans `base + i·step` to that plus `spread`,
/// spread evenly, so its percentile q sits at `q · spread` above its minimum.
#[derive(Debug, Clone)]
pub struct DelayLine {
    pub base_ns: u64,
    pub step_ns: u64,
    pub spread_ns: u64,
    pub trials_done: u64,
}

impl Trial for DelayLine {
    type Error = Infallible;
    fn run(&mut self, load: &Load) -> Result<TrialOutput, Infallible> {
        let tx = offered(load);
        let min = self.base_ns + self.trials_done * self.step_ns;
        self.trials_done += 1;
        let at = |q: f64| min + (q * self.spread_ns as f64).round() as u64;
        let latency = LatencySummary {
            frames: tx,
            min_ns: min,
            mean_ns: min as f64 + self.spread_ns as f64 / 2.0,
            p50_ns: at(0.5),
            p99_ns: at(0.99),
            p999_ns: at(0.999),
            max_ns: min + self.spread_ns,
        };
        Ok(TrialOutput {
            tx,
            rx: tx,
            latency: Some(latency),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_draws_have_the_expected_mean_and_spread() {
        let mut rng = Rng::new(7);
        let (n, p) = (1_000_000u64, 0.001);
        let draws: Vec<f64> = (0..200).map(|_| rng.binomial(n, p) as f64).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (draws.len() - 1) as f64;
        let (want_mean, want_var) = (n as f64 * p, n as f64 * p * (1.0 - p));
        // The mean of 200 draws is within 4 standard errors; the variance within 30 %.
        assert!(
            (mean - want_mean).abs() < 4.0 * (want_var / 200.0).sqrt(),
            "mean {mean}"
        );
        assert!(
            (var / want_var - 1.0).abs() < 0.3,
            "variance {var} vs {want_var}"
        );
        assert_eq!(rng.binomial(n, 0.0), 0);
        assert_eq!(rng.binomial(0, 0.5), 0);
    }
}
