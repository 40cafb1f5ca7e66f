use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use linerate_port::{PortError, TxDesc, TxQueue};
use linerate_stream::WorkerPlan;
use linerate_wire::Rng;

use crate::counters::Counters;

/// Publishing costs two relaxed stores; doing it every batch keeps the live line fresh at no
/// measurable cost.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// What one worker's loop achieved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerTotals {
    pub submitted: u64,
    pub completed: u64,
    pub bytes: u64,
    pub elapsed: Duration,
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
    let start = Instant::now();

    while submitted < count && !stop.load(Ordering::Relaxed) {
        let done = queue.reap()?;
        in_flight -= done;
        completed += done as u64;
        let want = (batch as u64)
            .min((slots - in_flight) as u64)
            .min(count - submitted) as u32;
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
    })
}

/// Where a worker publishes its counters; opaque outside the engine.
#[derive(Debug)]
pub struct CountersHandle<'a>(pub(crate) &'a Counters);
