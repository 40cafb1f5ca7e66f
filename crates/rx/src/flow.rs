//! Per-flow state and its analysis: the Rust mirror and model of `bpf/rx.bpf.c`, the merge of
//! the per-CPU entries, and the report against what was sent.
//!
//! Definitions (docs/receive.md):
//! - **received**: frames with our signature and this flow id, duplicates included.
//! - **lost**: sent − (received − duplicates); known only when the sender's count is.
//!   Without it (a lone receiver), **gaps** − **late** estimates it, blind to a lost tail.
//! - **late** (out of order): arrived after a higher sequence number of its flow, first seen.
//! - **duplicate**: a sequence number seen before, within the 64 below the highest seen.
//! - **old**: more than 64 below the highest seen: late or duplicate, the window cannot tell;
//!   counted apart and treated as unique in the loss.
//! - **latency**: arrival − transmit stamp, timed once per departure stamp: on a flow's first
//!   frame and on each frame whose stamp differs from the last one timed on its CPU (frames a
//!   sender stamped with one clock read share the stamp; the first of them carries its own
//!   departure time). `every_frame` times them all. **jitter**: RFC 3550 interarrival jitter
//!   over the timed frames.
//!
//! Sequence state is per CPU: a flow whose frames RSS spreads over several receive queues has its
//! order judged on each CPU alone (its loss, from the counts, is still exact).

use serde::{Deserialize, Serialize};

use crate::hist;
use linerate_wire::signature::{self, Signature};

/// Frames a flow's window remembers below its highest sequence number.
pub const WINDOW: u32 = 64;

/// One flow's state on one CPU: `struct rx_flow` of `bpf/rx.bpf.c`, byte for byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RxFlow {
    pub frames: u64,
    pub bytes: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub lat_min: u64,
    pub lat_max: u64,
    pub lat_sum: u64,
    pub lat_count: u64,
    pub late: u64,
    pub dups: u64,
    pub old: u64,
    pub gaps: u64,
    pub window: u64,
    pub jitter16: u64,
    pub prev_transit: i64,
    pub next_seq: u32,
    /// The low 32 bits of the last timed frame's departure stamp.
    pub timed_tx: u32,
}

/// What is not a flow, on one CPU: `struct rx_global` of `bpf/rx.bpf.c`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[repr(C)]
pub struct RxGlobal {
    /// Frames without the signature.
    pub other_frames: u64,
    pub other_bytes: u64,
    /// Frames of a flow id beyond the flow table.
    pub untracked_frames: u64,
    pub untracked_bytes: u64,
    /// Frames stamped later than they arrived (the two ends' clocks are apart).
    pub future: u64,
}

impl RxGlobal {
    /// Sums another CPU's entry into this one.
    pub fn add(&mut self, o: &RxGlobal) {
        self.other_frames += o.other_frames;
        self.other_bytes += o.other_bytes;
        self.untracked_frames += o.untracked_frames;
        self.untracked_bytes += o.untracked_bytes;
        self.future += o.future;
    }
}

/// The program's work for one frame, in Rust: the model the kernel program is tested against,
/// and the analysis for receivers that capture in user space (macOS).
#[derive(Debug)]
pub struct FlowState<'a> {
    pub flow: &'a mut RxFlow,
    /// The flow's histogram, if it has one.
    pub hist: Option<&'a mut [u64]>,
}

impl FlowState<'_> {
    /// Accounts one frame of `len` bytes (no FCS) carrying `sig`, arriving at `now()` ns: the
    /// clock is read only for a frame that is timed (the first of its flow, one whose stamp
    /// differs from the last timed, or every frame with `every_frame`). Returns false when the
    /// stamp lies in the future (counted by the caller as `future`).
    pub fn observe(
        &mut self,
        sig: Signature,
        len: u64,
        every_frame: bool,
        now: impl FnOnce() -> u64,
    ) -> bool {
        let f = &mut *self.flow;
        let first = f.frames == 0;
        f.frames += 1;
        f.bytes += len;
        sequence(f, sig.seq, first);
        if !first && !every_frame && sig.tx_ns as u32 == f.timed_tx {
            return true;
        }
        f.timed_tx = sig.tx_ns as u32;
        let now = now();
        if first {
            f.first_ns = now;
        }
        f.last_ns = now;
        let Some(lat) = signature::latency(sig.tx_ns, now) else {
            return false;
        };
        if f.lat_count == 0 || lat < f.lat_min {
            f.lat_min = lat;
        }
        f.lat_max = f.lat_max.max(lat);
        f.lat_sum += lat;
        if f.lat_count > 0 {
            let d = (lat as i64 - f.prev_transit).unsigned_abs();
            f.jitter16 = f
                .jitter16
                .wrapping_add(d.wrapping_sub((f.jitter16 + 8) >> 4));
        }
        f.prev_transit = lat as i64;
        f.lat_count += 1;
        if let Some(h) = self.hist.as_deref_mut() {
            h[hist::bucket(lat)] += 1;
        }
        true
    }
}

fn sequence(f: &mut RxFlow, seq: u32, first: bool) {
    if first {
        f.next_seq = seq.wrapping_add(1);
        f.window = 1;
        return;
    }
    let ahead = seq.wrapping_sub(f.next_seq) as i32;
    if ahead >= 0 {
        f.gaps += ahead as u64;
        f.window = if ahead >= 63 {
            1
        } else {
            (f.window << (ahead + 1)) | 1
        };
        f.next_seq = seq.wrapping_add(1);
        return;
    }
    let back = f.next_seq.wrapping_sub(1).wrapping_sub(seq);
    if back >= WINDOW {
        f.old += 1;
        return;
    }
    let bit = 1u64 << back;
    if f.window & bit != 0 {
        f.dups += 1;
    } else {
        f.window |= bit;
        f.late += 1;
    }
}

/// Latency of a flow, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub min: u64,
    pub mean: f64,
    pub max: u64,
    /// Percentiles from the histogram (within 0.8 %), when the flow has one; never outside
    /// [min, max].
    pub p50: Option<u64>,
    pub p99: Option<u64>,
    pub p999: Option<u64>,
    /// A percentile fell in the histogram's last bucket (latencies of 2^35 ns, 34.4 s, and
    /// more share it): it is only known to lie between 34.4 s and `max`, and reads as `max`.
    pub saturated: bool,
    /// RFC 3550 interarrival jitter of the CPU that received most of the flow.
    pub jitter: f64,
    /// Frames timed: one a departure stamp (every frame with `every_frame`).
    #[serde(default)]
    pub timed: u64,
}

/// One flow as received, summed over CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowStats {
    pub flow: u16,
    pub frames: u64,
    pub bytes: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub late: u64,
    pub duplicates: u64,
    pub old: u64,
    pub gaps: u64,
    pub latency: Option<Latency>,
    /// CPUs the flow arrived on (more than one: order is judged per CPU).
    pub cpus: u32,
    /// One past the highest sequence number any CPU saw (wrapping): with `unique`, the
    /// flow's loss however its frames were spread over CPUs (`reached_loss`).
    #[serde(default)]
    pub next_seq: u32,
    /// The gaps between its arrivals on the CPU that received most of it (`RxConfig::gaps`):
    /// buckets as `hist` numbers them, and that CPU's mean gap (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_buckets: Option<(Vec<u64>, f64)>,
}

impl FlowStats {
    /// Merges one flow's per-CPU entries and, if it has one, its per-CPU histograms.
    pub fn merge(flow: u16, cpus: &[RxFlow], hists: Option<&[Vec<u64>]>) -> FlowStats {
        let seen: Vec<&RxFlow> = cpus.iter().filter(|c| c.frames > 0).collect();
        let sum = |f: fn(&RxFlow) -> u64| seen.iter().map(|c| f(c)).sum::<u64>();
        let lat_count = sum(|c| c.lat_count);
        let latency = (lat_count > 0).then(|| {
            let timed = seen.iter().filter(|c| c.lat_count > 0);
            let hdr = hists.map(|hs| {
                let mut total = vec![0u64; hist::BUCKETS];
                for h in hs {
                    for (t, v) in total.iter_mut().zip(h) {
                        *t += v;
                    }
                }
                hist::to_hdr(&total)
            });
            let min = timed.clone().map(|c| c.lat_min).min().unwrap_or(0);
            let max = timed.clone().map(|c| c.lat_max).max().unwrap_or(0);
            let mut saturated = false;
            let mut q = |p: f64| {
                hdr.as_ref().map(|h| {
                    let v = h.value_at_quantile(p);
                    // The last bucket is open-ended: its midpoint says nothing of the values
                    // in it, so a percentile there is the largest latency seen.
                    if hist::bucket(v) == hist::BUCKETS - 1 {
                        saturated = true;
                        return max;
                    }
                    v.clamp(min, max)
                })
            };
            let (p50, p99, p999) = (q(0.5), q(0.99), q(0.999));
            Latency {
                min,
                max,
                mean: sum(|c| c.lat_sum) as f64 / lat_count as f64,
                p50,
                p99,
                p999,
                saturated,
                jitter: timed
                    .max_by_key(|c| c.lat_count)
                    .map_or(0.0, |c| c.jitter16 as f64 / 16.0),
                timed: lat_count,
            }
        });
        FlowStats {
            flow,
            frames: sum(|c| c.frames),
            bytes: sum(|c| c.bytes),
            first_ns: seen.iter().map(|c| c.first_ns).min().unwrap_or(0),
            last_ns: seen.iter().map(|c| c.last_ns).max().unwrap_or(0),
            late: sum(|c| c.late),
            duplicates: sum(|c| c.dups),
            old: sum(|c| c.old),
            gaps: sum(|c| c.gaps),
            latency,
            cpus: seen.len() as u32,
            next_seq: seen
                .iter()
                .map(|c| c.next_seq)
                .reduce(|a, b| if (b.wrapping_sub(a) as i32) > 0 { b } else { a })
                .unwrap_or(0),
            gap_buckets: None,
        }
    }

    /// The gaps between its arrivals against its mean gap as received (its asked gap, when
    /// the rate held), on the CPU that received most of it: None without a gap histogram.
    pub fn gap_report(&self) -> Option<crate::GapReport> {
        let (buckets, mean) = self.gap_buckets.as_ref()?;
        crate::GapReport::of(buckets, *mean)
    }

    /// Frames received once (duplicates taken out).
    pub fn unique(&self) -> u64 {
        self.frames - self.duplicates
    }

    /// A lone receiver's estimate of the loss: sequence numbers skipped and never filled late.
    /// Blind to frames lost after the last one received.
    pub fn estimated_loss(&self) -> u64 {
        self.gaps.saturating_sub(self.late + self.old)
    }

    /// The sequence numbers the flow reached from `first` (its first frame's), less the
    /// frames received once. Unlike `estimated_loss`, a flow whose frames moved between CPUs
    /// (each CPU's entry then counts the other's frames as its gaps) reads no loss; a frame
    /// still in flight on another CPU reads lost until it is counted. Blind to a lost tail.
    pub fn reached_loss(&self, first: u32) -> u64 {
        if self.frames == 0 {
            return 0;
        }
        u64::from(self.next_seq.wrapping_sub(first)).saturating_sub(self.unique())
    }
}

/// One flow: what was sent against what arrived.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowReport {
    pub flow: u16,
    /// The stream's name, when it has one.
    pub name: Option<String>,
    pub tx_frames: u64,
    pub rx_frames: u64,
    pub rx_bytes: u64,
    /// sent − received once; never negative: see `excess`.
    pub lost: u64,
    pub loss_pct: f64,
    /// Received once beyond what was sent: another sender stamps this flow id too.
    pub excess: u64,
    pub late: u64,
    pub duplicates: u64,
    pub old: u64,
    pub latency: Option<Latency>,
    /// The gaps between its arrivals, when the receiver kept them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gaps: Option<crate::GapReport>,
}

impl FlowReport {
    /// Sets a flow's received counts against `tx_frames` sent; `rx` None = nothing arrived.
    pub fn new(flow: u16, name: Option<String>, tx_frames: u64, rx: Option<&FlowStats>) -> Self {
        let unique = rx.map_or(0, FlowStats::unique);
        let lost = tx_frames.saturating_sub(unique);
        FlowReport {
            flow,
            name,
            tx_frames,
            rx_frames: rx.map_or(0, |r| r.frames),
            rx_bytes: rx.map_or(0, |r| r.bytes),
            lost,
            loss_pct: if tx_frames == 0 {
                0.0
            } else {
                lost as f64 * 100.0 / tx_frames as f64
            },
            excess: unique.saturating_sub(tx_frames),
            late: rx.map_or(0, |r| r.late),
            duplicates: rx.map_or(0, |r| r.duplicates),
            old: rx.map_or(0, |r| r.old),
            latency: rx.and_then(|r| r.latency),
            gaps: rx.and_then(FlowStats::gap_report),
        }
    }
}

/// What a receiver counted so far, all flows together: enough for a status line, read without
/// the histograms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxProgress {
    /// Frames of every flow, duplicates included.
    pub frames: u64,
    pub duplicates: u64,
    /// Frames without the signature, or beyond the flow table.
    pub other: u64,
}

impl RxProgress {
    /// Frames received once.
    pub fn unique(&self) -> u64 {
        self.frames.saturating_sub(self.duplicates)
    }
}

/// Everything a receiver read: its flows and what was not a flow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RxTotals {
    pub flows: Vec<FlowStats>,
    pub global: RxGlobal,
}

impl RxTotals {
    /// Frames the receiver counted in all: every flow's, and what was no flow.
    pub fn all_frames(&self) -> u64 {
        let g = &self.global;
        let flows: u64 = self.flows.iter().map(|f| f.frames).sum();
        g.other_frames + g.untracked_frames + flows
    }

    /// A flow's stats, if it arrived.
    pub fn flow(&self, flow: u16) -> Option<&FlowStats> {
        self.flows.iter().find(|f| f.flow == flow)
    }

    /// The flows summed, for a status line.
    pub fn progress(&self) -> RxProgress {
        RxProgress {
            frames: self.flows.iter().map(|f| f.frames).sum(),
            duplicates: self.flows.iter().map(|f| f.duplicates).sum(),
            other: self.global.other_frames + self.global.untracked_frames,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seqs: &[u32]) -> RxFlow {
        let mut f = RxFlow::default();
        let mut h = vec![0u64; hist::BUCKETS];
        for (i, &seq) in seqs.iter().enumerate() {
            let sig = Signature {
                flow: 0,
                seq,
                tx_ns: 1_000 * i as u64,
            };
            FlowState {
                flow: &mut f,
                hist: Some(&mut h),
            }
            .observe(sig, 60, false, || 1_000 * i as u64 + 5_000);
        }
        f
    }

    #[test]
    fn in_order_frames_have_no_gaps_lates_or_duplicates() {
        let f = run(&(0..1000).collect::<Vec<_>>());
        assert_eq!(
            (f.frames, f.gaps, f.late, f.dups, f.old),
            (1000, 0, 0, 0, 0)
        );
        assert_eq!((f.lat_min, f.lat_max, f.lat_sum), (5_000, 5_000, 5_000_000));
        assert_eq!(f.jitter16, 0);
    }

    #[test]
    fn a_gap_a_late_frame_a_duplicate_and_an_old_one() {
        // 0 1 3 4 (2 late) 4 (dup) … then 100 and 5 (95 below: beyond the window).
        let f = run(&[0, 1, 3, 4, 2, 4, 100, 5]);
        assert_eq!(f.frames, 8);
        assert_eq!(f.gaps, 1 + 95);
        assert_eq!(f.late, 1);
        assert_eq!(f.dups, 1);
        assert_eq!(f.old, 1);
        let s = FlowStats::merge(0, &[f], None);
        let r = FlowReport::new(0, None, 101, Some(&s));
        // 101 sent (0..=100), 7 unique arrived.
        assert_eq!((r.lost, r.excess), (94, 0));
    }

    #[test]
    fn sequence_numbers_wrap_at_32_bits() {
        let f = run(&[u32::MAX - 1, u32::MAX, 0, 1]);
        assert_eq!((f.gaps, f.late, f.dups), (0, 0, 0));
    }

    #[test]
    fn more_received_than_sent_is_excess_never_negative_loss() {
        let f = run(&[0, 1, 2, 3]);
        let s = FlowStats::merge(0, &[f], None);
        let r = FlowReport::new(0, None, 2, Some(&s));
        assert_eq!((r.lost, r.excess), (0, 2));
    }

    #[test]
    fn jitter_follows_rfc_3550() {
        // Transit alternates 1000 / 3000 ns: |D| = 2000 each time; J converges to 2000.
        let mut f = RxFlow::default();
        for i in 0..2000u64 {
            let transit = if i % 2 == 0 { 1_000 } else { 3_000 };
            let sig = Signature {
                flow: 0,
                seq: i as u32,
                tx_ns: i * 10_000,
            };
            FlowState {
                flow: &mut f,
                hist: None,
            }
            .observe(sig, 60, false, || i * 10_000 + transit);
        }
        let j = f.jitter16 as f64 / 16.0;
        assert!((j - 2000.0).abs() < 20.0, "{j}");
    }

    /// A sender's bulk shares one stamp: its first frame is timed, the rest counted and
    /// sequenced; a stamp already timed is timed again once another came between.
    #[test]
    fn one_frame_of_each_departure_stamp_is_timed() {
        let mut f = RxFlow::default();
        let mut reads = 0;
        for (seq, tx, arrival) in [
            (0, 100, 600),
            (1, 100, 700),
            (2, 100, 800),
            (3, 900, 1_000),
            (4, 100, 5_000),
        ] {
            let sig = Signature {
                flow: 0,
                seq,
                tx_ns: tx,
            };
            let not_future = FlowState {
                flow: &mut f,
                hist: None,
            }
            .observe(sig, 60, false, || {
                reads += 1;
                arrival
            });
            assert!(not_future);
        }
        assert_eq!((f.frames, reads, f.lat_count), (5, 3, 3));
        assert_eq!(
            (f.lat_min, f.lat_max, f.lat_sum),
            (100, 4_900, 500 + 100 + 4_900)
        );
        assert_eq!((f.first_ns, f.last_ns), (600, 5_000));
    }

    /// Issue 27 #11: latencies beyond the histogram's range read 34.2 s at p50, below a
    /// minimum of 40 s. A percentile is never outside [min, max], and one in the open-ended
    /// last bucket is marked.
    #[test]
    fn percentiles_beyond_the_histogram_stay_within_min_and_max() {
        let forty_s = 40_000_000_000;
        let mut f = run(&[0, 1, 2]);
        (f.lat_min, f.lat_max, f.lat_sum, f.lat_count) = (forty_s, forty_s + 5, 3 * forty_s, 3);
        let mut h = vec![0u64; hist::BUCKETS];
        h[hist::bucket(forty_s)] = 3;
        let l = FlowStats::merge(0, &[f], Some(&[h])).latency.unwrap();
        assert!(l.saturated);
        for p in [l.p50, l.p99, l.p999] {
            assert_eq!(p, Some(forty_s + 5));
        }
        // Within range, percentiles are the histogram's, clamped: a lone 1000 ns frame.
        let mut f = run(&[0]);
        (f.lat_min, f.lat_max, f.lat_sum, f.lat_count) = (1000, 1000, 1000, 1);
        let mut h = vec![0u64; hist::BUCKETS];
        h[hist::bucket(1000)] = 1;
        let l = FlowStats::merge(0, &[f], Some(&[h])).latency.unwrap();
        assert!(!l.saturated);
        assert_eq!(
            l.p50,
            Some(1000),
            "the bucket's midpoint is clamped to the exact value"
        );
    }

    #[test]
    fn cpus_merge_by_sums_and_extremes() {
        let a = run(&[0, 1, 2]);
        let mut b = run(&[3, 4]);
        b.lat_min = 10;
        b.first_ns = 1;
        let s = FlowStats::merge(3, &[a, RxFlow::default(), b], None);
        assert_eq!((s.frames, s.cpus, s.first_ns), (5, 2, 1));
        let l = s.latency.unwrap();
        assert_eq!(l.min, 10);
        assert_eq!(l.p50, None);
    }

    #[test]
    fn a_flow_moving_between_cpus_reads_gaps_per_cpu_but_no_reached_loss() {
        // Frames 0..=2 and 6..=7 on one CPU, 3..=5 on the other: no frame lost.
        let a = run(&[0, 1, 2, 6, 7]);
        let b = run(&[3, 4, 5]);
        let s = FlowStats::merge(1, &[a, b], None);
        assert_eq!(s.estimated_loss(), 3, "CPU a's gap is no loss");
        assert_eq!((s.next_seq, s.reached_loss(0)), (8, 0));
        // Frame 4 lost, the sequence wrapping past u32::MAX on the way.
        let a = run(&[u32::MAX - 1, u32::MAX, 0, 1]);
        let b = run(&[2, 3, 5]);
        let s = FlowStats::merge(1, &[a, b], None);
        assert_eq!((s.next_seq, s.reached_loss(u32::MAX - 1)), (6, 1));
        assert_eq!(
            FlowStats::merge(1, &[RxFlow::default()], None).reached_loss(7),
            0
        );
    }
}
