//! The latency histogram's buckets, as `bpf/rx.bpf.c` computes them: log-linear, exact below
//! 128 ns, then 64 buckets per power of two (a bucket's midpoint is within 0.8 % of every value
//! in it) up to 2^35 ns (34 s); longer latencies share the last bucket.

use hdrhistogram::Histogram;

/// log2 of the buckets per power of two.
pub const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Latencies from 2^MAX_EXP ns on share the last bucket.
pub const MAX_EXP: u32 = 35;
/// Buckets in one flow's histogram.
pub const BUCKETS: usize = (2 * SUB + (MAX_EXP - SUB_BITS - 1) as u64 * SUB) as usize;

/// The bucket of a latency of `ns` nanoseconds.
pub fn bucket(ns: u64) -> usize {
    if ns < 2 * SUB {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros();
    if e >= MAX_EXP {
        return BUCKETS - 1;
    }
    let i = 2 * SUB + u64::from(e - SUB_BITS - 1) * SUB + ((ns >> (e - SUB_BITS)) - SUB);
    (i as usize).min(BUCKETS - 1)
}

/// The lowest and highest latency (ns, inclusive) that fall into bucket `i`.
pub fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < 2 * SUB {
        return (i, i);
    }
    let group = (i - 2 * SUB) / SUB;
    let e = group as u32 + SUB_BITS + 1;
    let shift = e - SUB_BITS;
    let low = (SUB + (i - 2 * SUB) % SUB) << shift;
    (low, low + (1 << shift) - 1)
}

/// The value a bucket stands for: its midpoint.
pub fn value(i: usize) -> u64 {
    let (low, high) = bounds(i);
    low + (high - low) / 2
}

/// An hdrhistogram of bucket counts (each recorded at its bucket's midpoint), for percentiles.
/// `buckets` may be longer than [`BUCKETS`] (the sum of several CPUs is not); extra entries are
/// ignored.
pub fn to_hdr(buckets: &[u64]) -> Histogram<u64> {
    // 3 significant digits: finer than the buckets, so recording adds no error of its own.
    let mut h = Histogram::new(3).expect("3 significant digits is valid");
    for (i, &n) in buckets.iter().take(BUCKETS).enumerate() {
        if n > 0 {
            h.record_n(value(i), n).expect("auto-resizing histogram");
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_range_without_gaps_or_overlaps() {
        let mut next = 0;
        for i in 0..BUCKETS {
            let (low, high) = bounds(i);
            assert_eq!(low, next, "bucket {i}");
            assert!(high >= low);
            assert_eq!(bucket(low), i);
            assert_eq!(bucket(high), i);
            next = high + 1;
        }
        assert_eq!(next, 1 << MAX_EXP);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn a_midpoint_is_within_one_percent_from_100_ns_to_10_s() {
        let mut ns = 100u64;
        while ns <= 10_000_000_000 {
            let v = value(bucket(ns));
            let err = (v as f64 - ns as f64).abs() / ns as f64;
            assert!(err <= 0.008, "{ns} ns -> {v} ({err})");
            ns = ns * 1013 / 1000 + 1;
        }
    }

    #[test]
    fn percentiles_come_back_through_hdrhistogram() {
        let mut b = vec![0u64; BUCKETS];
        for ns in 1_000..2_000u64 {
            b[bucket(ns)] += 1;
        }
        let h = to_hdr(&b);
        assert_eq!(h.len(), 1000);
        let p50 = h.value_at_quantile(0.5) as f64;
        assert!((p50 - 1500.0).abs() / 1500.0 < 0.02, "{p50}");
    }
}
