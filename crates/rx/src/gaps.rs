//! The gaps between a flow's arrivals, from the receive program's gap histogram (the latency
//! histogram's buckets, `hist`), judged against a target gap as MoonGen's paper judged rate
//! control: the share within ±64/±128/±256/±512 ns of it and the share back to back (under a
//! quarter of it). A gap counts by its bucket's midpoint, so a share is exact to within one
//! bucket's width at the window's edges: `error_ns`.

use serde::{Deserialize, Serialize};

use crate::hist;

/// The windows around the target gap (ns either side).
pub const WINDOWS_NS: [u64; 4] = [64, 128, 256, 512];

/// How a flow's gaps lay against its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapReport {
    /// The gap judged against (ns): the flow's mean gap as that CPU received it.
    pub target_ns: f64,
    /// Gaps measured: the frames but the first on the CPU that received most of the flow.
    pub gaps: u64,
    pub within_64ns: f64,
    pub within_128ns: f64,
    pub within_256ns: f64,
    pub within_512ns: f64,
    /// Share of gaps under a quarter of the target.
    pub back_to_back: f64,
    pub median_ns: u64,
    /// The longest gap, to its bucket's upper bound.
    pub max_ns: u64,
    /// A gap this close to a window's edge may count on either side of it.
    pub error_ns: u64,
}

impl GapReport {
    /// The report of `buckets` against `target_ns`; None when no gap was measured.
    pub fn of(buckets: &[u64], target_ns: f64) -> Option<GapReport> {
        let gaps: u64 = buckets.iter().sum();
        if gaps == 0 || target_ns.is_nan() || target_ns <= 0.0 {
            return None;
        }
        let mid = |i: usize| hist::value(i) as f64;
        let share = |pred: &dyn Fn(f64) -> bool| {
            let n: u64 = (0..buckets.len().min(hist::BUCKETS))
                .filter(|&i| pred(mid(i)))
                .map(|i| buckets[i])
                .sum();
            n as f64 / gaps as f64
        };
        let within = WINDOWS_NS.map(|w| share(&|g| (g - target_ns).abs() <= w as f64));
        let mut seen = 0;
        let median = (0..hist::BUCKETS)
            .find(|&i| {
                seen += buckets.get(i).copied().unwrap_or(0);
                seen * 2 >= gaps
            })
            .map_or(0, hist::value);
        let last = (0..hist::BUCKETS)
            .rev()
            .find(|&i| buckets.get(i).copied().unwrap_or(0) > 0)
            .unwrap_or(0);
        let edge = hist::bucket((target_ns + WINDOWS_NS[3] as f64) as u64);
        let (low, high) = hist::bounds(edge);
        Some(GapReport {
            target_ns,
            gaps,
            within_64ns: within[0],
            within_128ns: within[1],
            within_256ns: within[2],
            within_512ns: within[3],
            back_to_back: share(&|g| g < target_ns / 4.0),
            median_ns: median,
            max_ns: hist::bounds(last).1,
            error_ns: high - low + 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of_gaps(gaps: &[u64]) -> Vec<u64> {
        let mut b = vec![0u64; hist::BUCKETS];
        for &g in gaps {
            b[hist::bucket(g)] += 1;
        }
        b
    }

    #[test]
    fn gaps_on_target_are_all_within_and_pairs_are_half_back_to_back() {
        let r = GapReport::of(&of_gaps(&[2000; 100]), 2000.0).unwrap();
        assert_eq!(
            (r.within_64ns, r.within_512ns, r.back_to_back),
            (1.0, 1.0, 0.0)
        );
        assert_eq!((r.gaps, r.error_ns), (100, 32));
        assert!(
            r.median_ns.abs_diff(2000) <= 16 && r.max_ns.abs_diff(2000) <= 16,
            "{r:?}"
        );
        // Pairs 200 ns apart, 3.8 µs between pairs.
        let pairs: Vec<u64> = (0..100)
            .map(|i| if i % 2 == 0 { 200 } else { 3800 })
            .collect();
        let r = GapReport::of(&of_gaps(&pairs), 2000.0).unwrap();
        assert_eq!((r.within_512ns, r.back_to_back), (0.0, 0.5));
    }

    #[test]
    fn a_window_counts_within_a_bucket_of_its_edge() {
        // 2100 and 1900 are 100 ns off: outside ±64, inside ±128.
        let r = GapReport::of(&of_gaps(&[2100, 1900, 2000, 2000]), 2000.0).unwrap();
        assert_eq!((r.within_64ns, r.within_128ns), (0.5, 1.0));
        assert!(GapReport::of(&of_gaps(&[]), 2000.0).is_none());
    }
}
