//! Interleaved streams as lanes: how many frames each sends under a total limit, a worker's
//! share, and lanes merged ahead of time into one cycle when their rates allow.

use super::{Cycle, Lane, SEQUENCE_LIMIT, Stamp, WorkerPlan, gcd, lcm};
use crate::Pacing;

/// How many frames each lane sends in the whole run when `limit` caps the total: the first
/// `limit` frames of the lanes' schedules merged by due time (ties go to the earlier lane),
/// which is the order the engine sends them in.
pub fn lane_counts(lanes: &[Lane], limit: Option<u64>) -> Vec<Option<u64>> {
    let own: Vec<Option<u64>> = lanes.iter().map(|l| l.cycle.count).collect();
    let Some(limit) = limit else {
        return own;
    };
    if own.iter().all(Option::is_some) && own.iter().flatten().sum::<u64>() <= limit {
        return own;
    }
    // Frames of lane `i` due at or before `t` (capped by its count); `t = None` is "before 0".
    let sent_by = |i: usize, t: Option<u64>| -> u64 {
        let cap = own[i].unwrap_or(u64::MAX).min(limit);
        let Some(t) = t else {
            return 0;
        };
        let p = &lanes[i].pacing;
        // The first frame index due after `t`, by bisection (due times never decrease).
        let (mut lo, mut hi) = (0u64, cap);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if due_saturating(p, mid) <= t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let total = |t: Option<u64>| -> u64 {
        (0..lanes.len())
            .map(|i| sent_by(i, t))
            .fold(0u64, u64::saturating_add)
    };
    // The earliest instant by which `limit` frames are due.
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if total(Some(mid)) >= limit {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let before = lo.checked_sub(1);
    let mut left = limit - total(before);
    (0..lanes.len())
        .map(|i| {
            let base = sent_by(i, before);
            let extra = (sent_by(i, Some(lo)) - base).min(left);
            left -= extra;
            Some(base + extra)
        })
        .collect()
}

/// One worker's share of every lane (see `Cycle::for_worker` and `lane_counts`).
pub fn lanes_for_worker(
    lanes: &[Lane],
    worker: usize,
    workers: usize,
    limit: Option<u64>,
) -> Vec<WorkerPlan<'_>> {
    lanes
        .iter()
        .zip(lane_counts(lanes, limit))
        .map(|(lane, count)| lane.cycle.for_worker(worker, workers, count))
        .collect()
}

/// Most frames a merged schedule of lanes may hold (see `merge`).
const MERGE_LIMIT: u64 = SEQUENCE_LIMIT;

/// Lanes merged into one cycle on one schedule, and which lane each of its frames belongs to.
#[derive(Debug, Clone)]
pub struct Merged {
    pub cycle: Cycle,
    pub pacing: Pacing,
    /// The lane of frame `n` is `lane_of[n % lane_of.len()]` (one entry per frame of the cycle).
    pub lane_of: Vec<u32>,
}

/// The lanes' schedules merged ahead of time into one cycle, when their rates allow it: every
/// lane endless and without per-frame patches, and the schedules repeating together within
/// `MERGE_LIMIT` frames. Frames are in due order, ties to the earlier lane — the order the
/// lanes loop sends them in — so a worker sends many streams at the cost of one. None: the
/// lanes loop (a heap of lanes) sends them.
pub fn merge(lanes: &[Lane]) -> Option<Merged> {
    // A lane that starts late would be out of place in a cycle repeated from the start.
    if lanes
        .iter()
        .any(|l| l.cycle.count.is_some() || !l.cycle.patches.is_empty() || l.pacing.start_ps != 0)
    {
        return None;
    }
    // The schedules' common period, and the frames each lane sends in it.
    let period = lanes
        .iter()
        .try_fold(1u64, |h, l| lcm(h, l.pacing.cycle_ps))?;
    let mut per_period = Vec::with_capacity(lanes.len());
    let mut total = 0u64;
    for l in lanes {
        let n = (period / l.pacing.cycle_ps).checked_mul(l.pacing.cycle_frames)?;
        total = total.checked_add(n).filter(|&t| t <= MERGE_LIMIT)?;
        per_period.push(n);
    }
    // Periods until every lane's frames line up with its own frame cycle again.
    let laps = lanes.iter().zip(&per_period).try_fold(1u64, |m, (l, &n)| {
        let p = l.cycle.frames.len() as u64;
        lcm(m, p / gcd(p, n))
    })?;
    if total.checked_mul(laps)? > MERGE_LIMIT {
        return None;
    }
    let mut order: Vec<(u64, u32, u64)> = Vec::with_capacity(total as usize);
    for (i, (l, &n)) in lanes.iter().zip(&per_period).enumerate() {
        order.extend((0..n).map(|k| (l.pacing.due_ps(k), i as u32, k)));
    }
    order.sort_unstable();
    let mut frames = Vec::with_capacity((total * laps) as usize);
    let mut lane_of = Vec::with_capacity(frames.capacity());
    // Signed lanes keep their own flow and sequence: lane i's frame k of lap l is its frame
    // l * per_period + k, and the merged cycle holds laps * per_period of its frames.
    let signed = lanes.iter().any(|l| l.cycle.stamp.is_some());
    let mut stamp = Stamp::default();
    for lap in 0..laps {
        for &(_, i, k) in &order {
            let cycle = &lanes[i as usize].cycle;
            let n = lap * per_period[i as usize] + k;
            frames.push(cycle.frames[(n % cycle.frames.len() as u64) as usize].clone());
            lane_of.push(i);
            if let Some(lane_stamp) = &cycle.stamp {
                stamp.flows.push(lane_stamp.flow);
                stamp
                    .seq_map
                    .push((n as u32, (laps * per_period[i as usize]) as u32));
            }
        }
    }
    let offsets_ps: Vec<u64> = order.iter().map(|o| o.0).collect();
    let mut burst = 1;
    let mut run = 1;
    for w in offsets_ps.windows(2) {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        burst = burst.max(run);
    }
    Some(Merged {
        cycle: Cycle {
            frames,
            patches: Vec::new(),
            count: None,
            seed: lanes[0].cycle.seed,
            stamp: signed.then_some(stamp),
        },
        pacing: Pacing {
            cycle_frames: total,
            cycle_ps: period,
            offsets_ps,
            burst,
            spacing: lanes.iter().map(|l| l.pacing.spacing).max()?,
            start_ps: 0,
        },
        lane_of,
    })
}

fn due_saturating(p: &Pacing, n: u64) -> u64 {
    (n / p.cycle_frames)
        .saturating_mul(p.cycle_ps)
        .saturating_add(p.offsets_ps[(n % p.cycle_frames) as usize])
}
