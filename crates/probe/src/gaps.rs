//! Gap statistics over arrival stamps, in plain arithmetic a reader can check by hand.

use serde_json::{Value, json};

/// The windows around the target gap that MoonGen's table counts (ns either side).
pub const WINDOWS_NS: [u64; 4] = [64, 128, 256, 512];

/// How the gaps between consecutive arrivals lie against a target gap.
#[derive(Debug, Clone, PartialEq)]
pub struct GapTable {
    pub frames: u64,
    pub target_ns: f64,
    /// Share of gaps (0–1) within each of [`WINDOWS_NS`] of the target.
    pub within: [f64; 4],
    /// Share of gaps under a quarter of the target.
    pub back_to_back: f64,
    pub median_ns: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    /// Frames over the time from the first arrival to the last.
    pub rate_pps: f64,
}

impl GapTable {
    /// The table of `stamps` (ns, in arrival order) against a gap of `target_ns`. None with
    /// fewer than two stamps.
    pub fn of(stamps: &[u64], target_ns: f64) -> Option<GapTable> {
        let mut gaps = gaps(stamps);
        if gaps.is_empty() {
            return None;
        }
        let n = gaps.len() as f64;
        let share =
            |pred: &dyn Fn(u64) -> bool| gaps.iter().filter(|&&g| pred(g)).count() as f64 / n;
        let within = WINDOWS_NS.map(|w| share(&|g| (g as f64 - target_ns).abs() <= w as f64));
        let back_to_back = share(&|g| (g as f64) < target_ns / 4.0);
        let span = stamps[stamps.len() - 1] - stamps[0];
        gaps.sort_unstable();
        Some(GapTable {
            frames: stamps.len() as u64,
            target_ns,
            within,
            back_to_back,
            median_ns: gaps[gaps.len() / 2],
            mean_ns: span as f64 / n,
            max_ns: gaps[gaps.len() - 1],
            rate_pps: if span == 0 {
                0.0
            } else {
                n * 1e9 / span as f64
            },
        })
    }

    pub fn to_json(&self) -> Value {
        json!({
            "frames": self.frames,
            "target_ns": self.target_ns,
            "within_64ns": self.within[0],
            "within_128ns": self.within[1],
            "within_256ns": self.within[2],
            "within_512ns": self.within[3],
            "back_to_back": self.back_to_back,
            "median_ns": self.median_ns,
            "mean_ns": self.mean_ns,
            "max_ns": self.max_ns,
            "rate_pps": self.rate_pps,
        })
    }
}

/// The frames of an even schedule (one each `target_ns`) that arrived on time, and how the
/// gaps between them lie. A sender the host held for milliseconds (a VM's vCPU taken away)
/// catches up after it with gaps a little shorter than its own (the engine's
/// `PRECISE_CATCH_UP`): those show how it recovers, not how precisely it spaces frames, and on
/// a noisy VM they can be half of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct OnTime {
    /// Share of the frames (0–1) that arrived within the slack of their time.
    pub share: f64,
    /// Gaps between two consecutive frames both on time.
    pub gaps: usize,
    /// Share of those gaps within each of [`WINDOWS_NS`] of the target.
    pub within: [f64; 4],
}

impl OnTime {
    /// Frame i's time is the schedule's start plus i gaps, the start anchored at the earliest
    /// frame against it (the minimum of stamp i − i·`target_ns`: the frame that met the least
    /// delay); a frame arrived on time within `slack_ns` of its time. None with fewer than
    /// two stamps or no two consecutive frames on time.
    pub fn of(stamps: &[u64], target_ns: f64, slack_ns: f64) -> Option<OnTime> {
        let late: Vec<f64> = stamps
            .iter()
            .enumerate()
            .map(|(i, &t)| t as f64 - i as f64 * target_ns)
            .collect();
        let start = late.iter().copied().fold(f64::INFINITY, f64::min);
        let on: Vec<bool> = late.iter().map(|l| l - start <= slack_ns).collect();
        let kept: Vec<u64> = gaps(stamps)
            .into_iter()
            .zip(on.windows(2))
            .filter(|(_, w)| w[0] && w[1])
            .map(|(g, _)| g)
            .collect();
        if kept.is_empty() {
            return None;
        }
        let n = kept.len() as f64;
        let within = WINDOWS_NS.map(|w| {
            kept.iter()
                .filter(|&&g| (g as f64 - target_ns).abs() <= w as f64)
                .count() as f64
                / n
        });
        Some(OnTime {
            share: on.iter().filter(|&&o| o).count() as f64 / on.len() as f64,
            gaps: kept.len(),
            within,
        })
    }

    pub fn to_json(&self) -> Value {
        json!({
            "on_time": self.share,
            "on_time_gaps": self.gaps,
            "on_time_within_64ns": self.within[0],
            "on_time_within_128ns": self.within[1],
            "on_time_within_256ns": self.within[2],
            "on_time_within_512ns": self.within[3],
        })
    }
}

/// The gaps between consecutive stamps (a stamp earlier than the one before, which one CPU's
/// clock never gives, counts as a zero gap).
pub fn gaps(stamps: &[u64]) -> Vec<u64> {
    stamps
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect()
}

/// A one-sample Kolmogorov–Smirnov test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KsTest {
    /// The largest distance between the sample's CDF and the model's.
    pub d: f64,
    pub samples: usize,
    /// The chance of a distance this large if the sample came from the model (Kolmogorov's
    /// asymptotic distribution, with Stephens' small-sample correction).
    pub p_value: f64,
}

/// The gaps of `stamps` against an exponential distribution of mean `1/rate_pps` s.
pub fn ks_exponential(stamps: &[u64], rate_pps: f64) -> Option<KsTest> {
    ks_of(gaps(stamps), rate_pps)
}

/// The gaps of `stamps` longer than `floor_ns`, less `floor_ns`, against the same exponential:
/// what an exponential's gaps still are above any floor (it has no memory). For a sender whose
/// frames cannot leave closer than a send costs: gaps due shorter than that leave as one batch,
/// which the whole sample's test would count against the schedule.
pub fn ks_exponential_above(stamps: &[u64], rate_pps: f64, floor_ns: u64) -> Option<KsTest> {
    let above = gaps(stamps)
        .into_iter()
        .filter(|&g| g > floor_ns)
        .map(|g| g - floor_ns)
        .collect();
    ks_of(above, rate_pps)
}

fn ks_of(mut gaps: Vec<u64>, rate_pps: f64) -> Option<KsTest> {
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_unstable();
    let n = gaps.len() as f64;
    let lambda = rate_pps / 1e9;
    let d = gaps
        .iter()
        .enumerate()
        .map(|(i, &g)| {
            let model = 1.0 - (-lambda * g as f64).exp();
            let below = i as f64 / n;
            let upto = (i + 1) as f64 / n;
            (model - below).abs().max((upto - model).abs())
        })
        .fold(0.0, f64::max);
    let sqrt_n = n.sqrt();
    let t = (sqrt_n + 0.12 + 0.11 / sqrt_n) * d;
    let p_value = (1..=100)
        .map(|k| {
            let k = k as f64;
            let sign = if k as u64 % 2 == 1 { 1.0 } else { -1.0 };
            sign * 2.0 * (-2.0 * k * k * t * t).exp()
        })
        .sum::<f64>()
        .clamp(0.0, 1.0);
    Some(KsTest {
        d,
        samples: gaps.len(),
        p_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exponential_above_a_floor_is_the_same_exponential() {
        // Gaps at the exponential's quantiles (mean 500 µs), the shortest 3 % sent as one
        // batch (0 ns): the whole sample fails, the gaps above 20 µs pass; even gaps fail both.
        let n = 6000;
        let gaps: Vec<u64> = (0..n)
            .map(|i| {
                let q = (i as f64 + 0.5) / n as f64;
                let g = -500_000.0 * (1.0 - q).ln();
                if q < 0.03 { 0 } else { g as u64 }
            })
            .collect();
        let mut stamps = vec![0u64];
        for g in &gaps {
            stamps.push(stamps.last().unwrap() + g);
        }
        assert!(ks_exponential(&stamps, 2000.0).unwrap().p_value < 0.01);
        let above = ks_exponential_above(&stamps, 2000.0, 20_000).unwrap();
        assert!(above.p_value > 0.5, "{above:?}");
        let even: Vec<u64> = (0..n).map(|i| i * 500_000).collect();
        assert!(ks_exponential_above(&even, 2000.0, 20_000).unwrap().p_value < 1e-6);
    }

    #[test]
    fn even_gaps_are_all_within_and_none_back_to_back() {
        let stamps: Vec<u64> = (0..1001).map(|i| i * 2000).collect();
        let t = GapTable::of(&stamps, 2000.0).unwrap();
        assert_eq!(t.within, [1.0; 4]);
        assert_eq!((t.back_to_back, t.median_ns, t.max_ns), (0.0, 2000, 2000));
        assert_eq!(t.rate_pps, 500_000.0);
    }

    #[test]
    fn pairs_sent_together_are_half_back_to_back() {
        // Frames in pairs 200 ns apart, pairs 4 µs apart: a mean gap of 2 µs.
        let stamps: Vec<u64> = (0..1000).map(|i| (i / 2) * 4000 + (i % 2) * 200).collect();
        let t = GapTable::of(&stamps, 2000.0).unwrap();
        assert_eq!(t.within, [0.0; 4]);
        assert!((t.back_to_back - 500.0 / 999.0).abs() < 1e-12);
        assert_eq!(t.max_ns, 3800);
    }

    #[test]
    fn a_stall_and_its_catching_up_are_not_on_time() {
        // 10 µs gaps; frame 500 held 48 µs, the next 80 catching up 600 ns a gap (9.4 µs).
        let stamps: Vec<u64> = (0..1000u64)
            .map(|i| {
                let behind = if i >= 500 {
                    48_000u64.saturating_sub(600 * (i - 500))
                } else {
                    0
                };
                i * 10_000 + behind
            })
            .collect();
        let t = OnTime::of(&stamps, 10_000.0, 2_000.0).unwrap();
        // Late past 2 µs: frames 500 to 576 (48,000 down to 2,400 behind).
        assert_eq!(t.share, 923.0 / 1000.0);
        // 499 gaps before the stall, 422 from frame 577 on: three of them still catching up.
        assert_eq!(t.gaps, 499 + 422);
        assert_eq!(t.within, [918.0 / 921.0; 4]);
        // The whole run counts the stall and all 80 catching-up gaps.
        let all = GapTable::of(&stamps, 10_000.0).unwrap();
        assert_eq!(all.within, [918.0 / 999.0; 4]);
        // No two consecutive frames on time: nothing to tell.
        assert_eq!(OnTime::of(&[0, 50_000], 10_000.0, 2_000.0), None);
    }

    #[test]
    fn the_ks_test_tells_exponential_gaps_from_even_ones() {
        // Exponential gaps by inversion of an even grid of probabilities: as close to the model
        // as n samples get.
        let n = 10_000;
        let mut at = 0.0;
        let mut stamps = vec![0u64];
        for i in 0..n {
            let u = (i as f64 + 0.5) / n as f64;
            at += -(1.0 - u).ln() * 10_000.0;
            stamps.push(at as u64);
        }
        // Shuffled order does not matter to the test; the sorted gaps are what it compares.
        let ks = ks_exponential(&stamps, 100_000.0).unwrap();
        assert!(ks.d < 0.01 && ks.p_value > 0.5, "{ks:?}");
        let even: Vec<u64> = (0..10_001).map(|i| i * 10_000).collect();
        let ks = ks_exponential(&even, 100_000.0).unwrap();
        assert!(ks.d > 0.3 && ks.p_value < 1e-6, "{ks:?}");
    }
}
