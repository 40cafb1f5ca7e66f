use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use linerate_port::{PortError, TxDesc, TxQueue};
use linerate_stream::{Pacing, WorkerPlan};
use linerate_wire::Rng;

use crate::counters::Counters;

/// Publishing costs two relaxed stores; doing it every batch keeps the live line fresh at no
/// measurable cost.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Frames that fell behind (a preempted thread, a full ring) catch up at most this many times
/// faster than asked, so a stall does not become a line-rate burst yet the average holds.
const CATCH_UP: u64 = 2;

/// A worker this far behind stops catching up and moves its schedule: the lost time is lost,
/// which the report's achieved rate shows.
const MAX_LAG_PS: u64 = 50_000_000_000;

/// Waits longer than this are slept (minus a margin for the sleep's own lateness); shorter ones
/// are spun, since a sleep cannot hit a sub-100 µs deadline.
const SLEEP_ABOVE_PS: u64 = 200_000_000;
const SLEEP_MARGIN_PS: u64 = 100_000_000;

/// A worker's pacing: the plan's schedule and the instant all workers count from.
#[derive(Debug, Clone, Copy)]
pub struct Pace<'a> {
    pub pacing: &'a Pacing,
    pub epoch: Instant,
}

/// What one worker's loop achieved.
#[derive(Debug, Clone, Default)]
pub struct WorkerTotals {
    pub submitted: u64,
    pub completed: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Paced runs: how late each batch went out against its schedule (ns).
    pub lateness: Option<Histogram<u64>>,
    /// Paced runs: time between successive submits (ns).
    pub gaps: Option<Histogram<u64>>,
}

fn histogram() -> Histogram<u64> {
    // One hour in ns at 3 significant digits: a few hundred KiB, allocated before the loop.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

#[inline]
fn ps_since(epoch: Instant) -> u64 {
    epoch.elapsed().as_nanos() as u64 * 1000
}

/// Sleeps or spins until `due` (ps after `epoch`), but wakes for `stop` within 10 ms.
fn wait_until(epoch: Instant, due: u64, stop: &AtomicBool) {
    loop {
        let now = ps_since(epoch);
        if now >= due || stop.load(Ordering::Relaxed) {
            return;
        }
        let left = due - now;
        if left > SLEEP_ABOVE_PS {
            let nap = (left - SLEEP_MARGIN_PS).min(10_000_000_000_000);
            std::thread::sleep(Duration::from_nanos(nap / 1000));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Lays the worker's frames into the queue's slots: slot `s` holds frame `s % P` for good, since
/// the slot count is a multiple of the worker's period P.
pub(crate) fn fill_slots<Q: TxQueue + ?Sized>(queue: &mut Q, plan: &WorkerPlan<'_>) {
    let period = plan.frames.len() as u32;
    for slot in 0..queue.slots() {
        let frame = plan.frames[(slot % period) as usize];
        queue.slot_mut(slot)[..frame.len()].copy_from_slice(frame);
    }
}

/// The hot loop: reap, reserve, patch what varies, submit; until the plan's count is sent or
/// `stop` is raised; then drain. Slots are filled beforehand (see `fill_slots`), so with no
/// patches the loop writes descriptors only.
pub fn transmit<Q: TxQueue + ?Sized>(
    queue: &mut Q,
    plan: &WorkerPlan<'_>,
    batch: u32,
    stop: &AtomicBool,
    counters: Option<&CountersHandle<'_>>,
    pace: Option<Pace<'_>>,
) -> Result<WorkerTotals, PortError> {
    let slots = queue.slots();
    let period = plan.frames.len() as u32;
    debug_assert_eq!(
        slots % period,
        0,
        "slot count must be a multiple of the period"
    );
    let lens: Vec<u32> = plan.frames.iter().map(|f| f.len() as u32).collect();
    let mut descs = vec![TxDesc::default(); batch as usize];
    let mut rng = Rng::new(plan.seed);
    let count = plan.count.unwrap_or(u64::MAX);
    let (mut submitted, mut completed, mut bytes) = (0u64, 0u64, 0u64);
    let mut in_flight = 0u32;
    let (mut slot, mut index) = (0u32, 0u32);
    let mut seq = plan.first_seq;
    let (mut lateness, mut gaps) = match pace {
        Some(_) => (Some(histogram()), Some(histogram())),
        None => (None, None),
    };
    let mut shift = 0u64;
    let mut last_submit = 0u64;
    // The catch-up limit is a token bucket: tokens come at CATCH_UP times the worker's mean rate
    // and it holds a batch or a burst, whichever is larger, so on schedule it never binds.
    let (min_gap, depth) = match pace {
        Some(p) => {
            let mean = p.pacing.cycle_ps / p.pacing.cycle_frames.max(1) * plan.stride;
            let burst = p.pacing.burst.div_ceil(plan.stride) + 1;
            ((mean / CATCH_UP).max(1), u64::from(batch).max(burst))
        }
        None => (1, 0),
    };
    let mut bucket = 0u64;
    let start = Instant::now();

    while submitted < count && !stop.load(Ordering::Relaxed) {
        let done = queue.reap()?;
        in_flight -= done;
        completed += done as u64;
        let mut want = (batch as u64)
            .min((slots - in_flight) as u64)
            .min(count - submitted) as u32;
        if let (Some(p), true) = (pace, want > 0) {
            let due = p.pacing.due_ps(seq) + shift;
            let now = ps_since(p.epoch);
            if now < due {
                wait_until(p.epoch, due, stop);
                continue;
            }
            let late = now - due;
            if late > MAX_LAG_PS {
                shift += late - MAX_LAG_PS;
            }
            // Send what is due by now: one frame at low rates, up to a batch at high ones.
            let mut due_now = 1;
            while due_now < want
                && p.pacing.due_ps(seq + due_now as u64 * plan.stride) + shift <= now
            {
                due_now += 1;
            }
            bucket = bucket.max(now.saturating_sub(depth * min_gap));
            let tokens = (now - bucket) / min_gap;
            if tokens == 0 {
                wait_until(p.epoch, bucket + min_gap, stop);
                continue;
            }
            want = due_now.min(tokens.min(u64::from(u32::MAX)) as u32);
            bucket += u64::from(want) * min_gap;
            if let (Some(l), Some(g)) = (lateness.as_mut(), gaps.as_mut()) {
                l.saturating_record(late / 1000);
                if last_submit > 0 {
                    g.saturating_record((now - last_submit) / 1000);
                }
            }
            last_submit = now;
        }
        let n = if want == 0 { 0 } else { queue.reserve(want) };
        if n == 0 {
            std::hint::spin_loop();
            continue;
        }
        for desc in &mut descs[..n as usize] {
            if !plan.patches.is_empty() {
                let frame = queue.slot_mut(slot);
                for patch in plan.patches {
                    patch.apply(frame, seq, &mut rng);
                }
            }
            let len = lens[index as usize];
            *desc = TxDesc { slot, len };
            bytes += len as u64;
            seq += plan.stride;
            slot += 1;
            if slot == slots {
                slot = 0;
            }
            index += 1;
            if index == period {
                index = 0;
            }
        }
        queue.submit(&descs[..n as usize])?;
        submitted += n as u64;
        in_flight += n;
        if let Some(c) = counters {
            c.0.publish(submitted, bytes);
        }
    }
    completed += queue.drain(DRAIN_TIMEOUT)? as u64;
    if let Some(c) = counters {
        c.0.publish(submitted, bytes);
    }
    Ok(WorkerTotals {
        submitted,
        completed,
        bytes,
        elapsed: start.elapsed(),
        lateness,
        gaps,
    })
}

/// Where a worker publishes its counters; opaque outside the engine.
#[derive(Debug)]
pub struct CountersHandle<'a>(pub(crate) &'a Counters);
