use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use linerate_port::{PortError, TxDesc, TxQueue};
use linerate_stream::{Pacing, WorkerPlan};
use linerate_wire::Rng;

use crate::counters::Counters;
use crate::pace::{CatchUp, MAX_LAG_PS, due_by, histogram, horizon, ps_since, wait_until};

/// How long the last completions may take once a worker stops; a backend that loses frames is
/// reported, not waited for forever.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// Paced runs: time between successive submits (ns); of the same lane for lanes.
    pub gaps: Option<Histogram<u64>>,
    /// Multi-lane runs: what each lane sent, in lane order. Empty otherwise.
    pub lanes: Vec<LaneTotals>,
}

/// What one lane of a multi-lane worker sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneTotals {
    pub submitted: u64,
    pub bytes: u64,
}

/// One lane of a multi-lane worker: the worker's share of one interleaved stream, its schedule,
/// and the slots it owns, `first_slot..first_slot + slots` (a multiple of its period).
#[derive(Debug, Clone)]
pub struct Lane<'a> {
    pub plan: WorkerPlan<'a>,
    pub pacing: &'a Pacing,
    pub first_slot: u32,
    pub slots: u32,
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
    let mut catch_up = pace.map(|p| CatchUp::for_worker(p.pacing, plan.stride, u64::from(batch)));
    let start = Instant::now();

    while submitted < count && !stop.load(Ordering::Relaxed) {
        let done = queue.reap()?;
        in_flight -= done;
        completed += done as u64;
        let mut want = (batch as u64)
            .min((slots - in_flight) as u64)
            .min(count - submitted) as u32;
        // This send's lateness and time, recorded once it submits.
        let mut paced = None;
        if let (Some(p), Some(c), true) = (pace, catch_up.as_mut(), want > 0) {
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
            let until = horizon(p.pacing, due, now);
            let due_now = due_by(p.pacing, seq, plan.stride, shift, until, u64::from(want));
            want = match c.grant(now, due_now) {
                Ok(n) => n as u32,
                Err(refill) => {
                    wait_until(p.epoch, refill, stop);
                    continue;
                }
            };
            paced = Some((late, now));
        }
        let n = if want == 0 { 0 } else { queue.reserve(want) };
        if n == 0 {
            std::hint::spin_loop();
            continue;
        }
        if let (Some(c), Some((late, now))) = (catch_up.as_mut(), paced) {
            c.spend(u64::from(n));
            if let (Some(l), Some(g)) = (lateness.as_mut(), gaps.as_mut()) {
                l.saturating_record(late / 1000);
                if last_submit > 0 {
                    g.saturating_record((now - last_submit) / 1000);
                }
            }
            last_submit = now;
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
        lanes: Vec::new(),
    })
}

/// Lays each lane's frames into its own region of slots, as `fill_slots` does for one plan.
pub(crate) fn fill_lanes<Q: TxQueue + ?Sized>(queue: &mut Q, lanes: &[Lane<'_>]) {
    for lane in lanes {
        let period = lane.plan.frames.len() as u32;
        for s in 0..lane.slots {
            let frame = lane.plan.frames[(s % period) as usize];
            queue.slot_mut(lane.first_slot + s)[..frame.len()].copy_from_slice(frame);
        }
    }
}

/// A lane's running state in `transmit_lanes`.
struct LaneState<'a> {
    lane: &'a Lane<'a>,
    lens: Vec<u32>,
    rng: Rng,
    count: u64,
    seq: u64,
    submitted: u64,
    bytes: u64,
    in_flight: u32,
    /// Next slot and frame, relative to the lane's region.
    slot: u32,
    index: u32,
    shift: u64,
    catch_up: CatchUp,
    last_submit: u64,
}

impl LaneState<'_> {
    fn due(&self) -> u64 {
        self.lane.pacing.due_ps(self.seq) + self.shift
    }
}

/// The loop for interleaved streams: each lane keeps its own schedule, count and slots; each
/// turn sends what is due (within a slice, `pace::horizon`) of the lane whose next frame is due
/// earliest, up to a batch and nothing due after another lane's next frame, with the same
/// catch-up bound as `transmit`. Completions come back in submit order, so a ring of
/// (lane, frames) per submit tells which lane's slots a reap frees: a lane never has more frames
/// in flight than it owns slots, and a slot is patched only after its last frame was reaped.
pub fn transmit_lanes<Q: TxQueue + ?Sized>(
    queue: &mut Q,
    lanes: &[Lane<'_>],
    batch: u32,
    stop: &AtomicBool,
    counters: Option<&CountersHandle<'_>>,
    epoch: Instant,
) -> Result<WorkerTotals, PortError> {
    let mut state: Vec<LaneState<'_>> = lanes
        .iter()
        .map(|lane| {
            let p = &lane.plan;
            debug_assert_eq!(lane.slots % p.frames.len() as u32, 0);
            LaneState {
                lane,
                lens: p.frames.iter().map(|f| f.len() as u32).collect(),
                rng: Rng::new(p.seed),
                count: p.count.unwrap_or(u64::MAX),
                seq: p.first_seq,
                submitted: 0,
                bytes: 0,
                in_flight: 0,
                slot: 0,
                index: 0,
                shift: 0,
                catch_up: CatchUp::for_worker(lane.pacing, p.stride, u64::from(batch)),
                last_submit: 0,
            }
        })
        .collect();
    let mut descs = vec![TxDesc::default(); batch as usize];
    let mut ring: VecDeque<(usize, u32)> = VecDeque::with_capacity(queue.slots() as usize);
    let (mut submitted, mut completed, mut bytes) = (0u64, 0u64, 0u64);
    let (mut lateness, mut gaps) = (histogram(), histogram());
    let start = Instant::now();

    while !stop.load(Ordering::Relaxed) {
        let done = queue.reap()?;
        completed += u64::from(done);
        retire(&mut ring, &mut state, done);
        // The lane due first among those with frames to send and a free slot, and when the
        // next frame of any other lane is due: this turn sends nothing due after that, so even a
        // worker catching up after a stall keeps the lanes merged frame by frame.
        let (mut pick, mut due, mut waiting) = (None, u64::MAX, false);
        let mut then = u64::MAX;
        for (i, l) in state.iter().enumerate() {
            if l.submitted == l.count {
                continue;
            }
            let d = l.due();
            if l.in_flight == l.lane.slots {
                waiting = true;
                then = then.min(d);
            } else if d < due {
                then = then.min(due);
                (pick, due) = (Some(i), d);
            } else {
                then = then.min(d);
            }
        }
        let Some(i) = pick else {
            if !waiting {
                break;
            }
            std::hint::spin_loop();
            continue;
        };
        let now = ps_since(epoch);
        if now < due {
            // A lane waiting for completions must not sleep through them.
            if waiting {
                std::hint::spin_loop();
            } else {
                wait_until(epoch, due, stop);
            }
            continue;
        }
        let l = &mut state[i];
        let lane = l.lane;
        let (plan, pacing) = (&lane.plan, lane.pacing);
        let want = u64::from(batch)
            .min(u64::from(lane.slots - l.in_flight))
            .min(l.count - l.submitted) as u32;
        let late = now - due;
        if late > MAX_LAG_PS {
            l.shift += late - MAX_LAG_PS;
        }
        let until = horizon(pacing, due, now).min(then);
        let due_now = due_by(pacing, l.seq, plan.stride, l.shift, until, u64::from(want));
        let want = match l.catch_up.grant(now, due_now) {
            Ok(n) => n as u32,
            Err(refill) => {
                if !waiting {
                    wait_until(epoch, refill, stop);
                }
                continue;
            }
        };
        let n = queue.reserve(want);
        if n == 0 {
            std::hint::spin_loop();
            continue;
        }
        l.catch_up.spend(u64::from(n));
        lateness.saturating_record(late / 1000);
        if l.last_submit > 0 {
            gaps.saturating_record((now - l.last_submit) / 1000);
        }
        l.last_submit = now;
        let period = plan.frames.len() as u32;
        let mut sent_bytes = 0u64;
        for desc in &mut descs[..n as usize] {
            let slot = lane.first_slot + l.slot;
            if !plan.patches.is_empty() {
                let frame = queue.slot_mut(slot);
                for patch in plan.patches {
                    patch.apply(frame, l.seq, &mut l.rng);
                }
            }
            let len = l.lens[l.index as usize];
            *desc = TxDesc { slot, len };
            sent_bytes += u64::from(len);
            l.seq += plan.stride;
            l.slot += 1;
            if l.slot == lane.slots {
                l.slot = 0;
            }
            l.index += 1;
            if l.index == period {
                l.index = 0;
            }
        }
        queue.submit(&descs[..n as usize])?;
        l.submitted += u64::from(n);
        l.bytes += sent_bytes;
        l.in_flight += n;
        ring.push_back((i, n));
        submitted += u64::from(n);
        bytes += sent_bytes;
        if let Some(c) = counters {
            c.0.publish(submitted, bytes);
        }
    }
    completed += u64::from(queue.drain(DRAIN_TIMEOUT)?);
    if let Some(c) = counters {
        c.0.publish(submitted, bytes);
    }
    Ok(WorkerTotals {
        submitted,
        completed,
        bytes,
        elapsed: start.elapsed(),
        lateness: Some(lateness),
        gaps: Some(gaps),
        lanes: state
            .iter()
            .map(|l| LaneTotals {
                submitted: l.submitted,
                bytes: l.bytes,
            })
            .collect(),
    })
}

/// Hands `done` completions back to the lanes that submitted them, oldest submit first.
fn retire(ring: &mut VecDeque<(usize, u32)>, state: &mut [LaneState<'_>], mut done: u32) {
    while done > 0 {
        let Some(front) = ring.front_mut() else {
            return;
        };
        let take = front.1.min(done);
        state[front.0].in_flight -= take;
        front.1 -= take;
        done -= take;
        if front.1 == 0 {
            ring.pop_front();
        }
    }
}

/// Where a worker publishes its counters; opaque outside the engine.
#[derive(Debug)]
pub struct CountersHandle<'a>(pub(crate) &'a Counters);

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_port::SlotMemory;
    use linerate_stream::{Limits, Mode, Plan, StreamSpec};

    /// Records the UDP source port of every frame it is handed, completes at most 3 frames per
    /// reap (oldest first), and fails the test if a slot is submitted again before it was reaped.
    struct Recorder {
        memory: SlotMemory,
        busy: Vec<bool>,
        flight: VecDeque<u32>,
        ports: Vec<u16>,
    }

    impl Recorder {
        fn new(slots: u32) -> Self {
            Self {
                memory: SlotMemory::new(slots, 2048),
                busy: vec![false; slots as usize],
                flight: VecDeque::new(),
                ports: Vec::new(),
            }
        }
    }

    impl TxQueue for Recorder {
        fn slots(&self) -> u32 {
            self.memory.slots()
        }
        fn slot_size(&self) -> u32 {
            self.memory.slot_size()
        }
        fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
            assert!(
                !self.busy[slot as usize],
                "slot {slot} written while in flight"
            );
            self.memory.slot_mut(slot)
        }
        fn reserve(&mut self, want: u32) -> u32 {
            want
        }
        fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError> {
            for d in descs {
                assert!(!self.busy[d.slot as usize], "slot {} sent twice", d.slot);
                self.busy[d.slot as usize] = true;
                self.flight.push_back(d.slot);
                let f = self.memory.frame(*d);
                self.ports.push(u16::from_be_bytes([f[34], f[35]]));
            }
            Ok(())
        }
        fn reap(&mut self) -> Result<u32, PortError> {
            let n = self.flight.len().min(3);
            for slot in self.flight.drain(..n) {
                self.busy[slot as usize] = false;
            }
            Ok(n as u32)
        }
        fn drain(&mut self, _: Duration) -> Result<u32, PortError> {
            let n = self.flight.len() as u32;
            while self.reap()? > 0 {}
            Ok(n)
        }
        fn mode(&self) -> String {
            "recorder".into()
        }
    }

    fn interleaved(specs: &[(u16, &str, u64, &[&str])]) -> Plan {
        let streams: Vec<StreamSpec> = specs
            .iter()
            .map(|&(port, rate, count, vary)| StreamSpec {
                name: format!("p{port}"),
                src_port: port,
                rate: rate.into(),
                count: Some(count),
                vary: vary.iter().map(|v| v.to_string()).collect(),
                mode: Mode::Interleaved,
                ..StreamSpec::default()
            })
            .collect();
        Plan::compile(&streams, &Limits::default()).unwrap()
    }

    fn lanes_of(plan: &Plan, region: u32) -> Vec<Lane<'_>> {
        plan.lanes_for_worker(0, 1, None)
            .into_iter()
            .zip(&plan.lanes)
            .enumerate()
            .map(|(i, (wp, lane))| {
                let slots = region.div_ceil(wp.frames.len() as u32) * wp.frames.len() as u32;
                Lane {
                    plan: wp,
                    pacing: lane.pacing.as_ref().unwrap(),
                    first_slot: i as u32 * 64,
                    slots,
                }
            })
            .collect()
    }

    /// Sends of a paced run and the frames they carried, on a queue that completes at once.
    fn paced_sends(rate: &str, count: u64) -> (u64, u64) {
        let spec = StreamSpec {
            rate: rate.into(),
            count: Some(count),
            ..StreamSpec::default()
        };
        let plan = Plan::compile(&[spec], &Limits::default()).unwrap();
        let wp = plan.for_worker(0, 1, None);
        let mut q = linerate_port::NullQueue::new(&linerate_port::QueueConfig {
            queue_id: 0,
            slots: 4096,
            slot_size: 2048,
            batch: 64,
        });
        fill_slots(&mut q, &wp);
        let pace = Pace {
            pacing: plan.pacing.as_ref().unwrap(),
            epoch: Instant::now(),
        };
        let stop = AtomicBool::new(false);
        let totals = transmit(&mut q, &wp, 64, &stop, None, Some(pace)).unwrap();
        (totals.lateness.unwrap().len(), totals.submitted)
    }

    #[test]
    fn a_send_takes_one_frame_at_low_rates_and_a_slice_at_high_ones() {
        // 1 kpps: frames 1 ms apart, each its own send (a stall may make a few share one).
        let (sends, frames) = paced_sends("1k", 200);
        assert_eq!(frames, 200);
        assert!(sends >= 180, "{sends} sends for 200 frames 1 ms apart");
        // 500 kpps: frames 2 µs apart, a 20 µs slice holds 10; one frame a send would be 5000.
        let (sends, frames) = paced_sends("500k", 5_000);
        assert_eq!(frames, 5_000);
        assert!(
            sends <= 5_000 / 5,
            "{sends} sends for 5000 frames 2 µs apart"
        );
    }

    #[test]
    fn lanes_merge_by_due_time() {
        // 2 kpps and 500 fps: frames of port 1 every 500 µs, of port 2 every 2 ms.
        let plan = interleaved(&[(1, "2k", 40, &[]), (2, "500", 10, &[])]);
        let lanes = lanes_of(&plan, 8);
        let mut q = Recorder::new(128);
        fill_lanes(&mut q, &lanes);
        let stop = AtomicBool::new(false);
        let totals = transmit_lanes(&mut q, &lanes, 64, &stop, None, Instant::now()).unwrap();
        assert_eq!((totals.submitted, totals.completed), (50, 50));
        assert_eq!(
            totals.lanes,
            [
                LaneTotals {
                    submitted: 40,
                    bytes: 40 * 60
                },
                LaneTotals {
                    submitted: 10,
                    bytes: 10 * 60
                }
            ]
        );
        let late = totals.lateness.as_ref().unwrap();
        // Each port-2 frame is due with every 4th port-1 frame (ties go to the first lane).
        let expected: Vec<u16> = (0..10).flat_map(|_| [1, 2, 1, 1, 1]).collect();
        // Catching up after a stall keeps the order too; only a worker so late that it moves
        // its schedule (MAX_LAG_PS) may not.
        if late.max() < MAX_LAG_PS / 1000 {
            assert_eq!(q.ports, expected);
        } else {
            eprintln!(
                "worker was {} µs late: order not checked",
                late.max() / 1000
            );
        }
    }

    #[test]
    fn a_lane_never_rewrites_a_slot_in_flight() {
        // Patched random field, 4-slot regions, completions trickling back 3 per reap.
        let plan = interleaved(&[
            (1, "200k", 300, &["dst-port:random:1-60000"]),
            (2, "100k", 150, &["dst-port:random:1-60000"]),
        ]);
        assert!(plan.lanes.iter().all(|l| !l.patches.is_empty()));
        let lanes = lanes_of(&plan, 4);
        let mut q = Recorder::new(128);
        fill_lanes(&mut q, &lanes);
        let stop = AtomicBool::new(false);
        let totals = transmit_lanes(&mut q, &lanes, 64, &stop, None, Instant::now()).unwrap();
        assert_eq!(totals.submitted, 450);
        assert_eq!(q.ports.iter().filter(|&&p| p == 1).count(), 300);
        assert_eq!(q.ports.iter().filter(|&&p| p == 2).count(), 150);
    }
}
