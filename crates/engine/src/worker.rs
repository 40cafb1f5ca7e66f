use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use linerate_port::{PortError, TxDesc, TxQueue};
use linerate_stream::{MappedFrames, Pacing, StreamShare, WorkerPlan};
use linerate_wire::{Rng, signature};

use crate::clock;
use crate::control::{FlowControl, FlowState, Watch};
use crate::pace::{Clock, Grant, MAX_LAG_PS, PaceLog, Pacer};
use crate::runner::WorkerContext;

/// How long the last completions may take once a worker stops; a backend that loses frames is
/// reported, not waited for forever.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a worker whose every flow is held waits before it looks at the control again.
const HELD_WAIT_PS: u64 = 1_000_000_000;

/// What steers a loop while it runs: the stop flag, and the flows' control when the run has
/// one (flows held, resumed or given a new rate mid-run).
#[derive(Debug, Clone, Copy)]
pub struct Steer<'a> {
    pub stop: &'a AtomicBool,
    pub control: Option<&'a FlowControl>,
}

impl<'a> Steer<'a> {
    /// Stopped only by `stop`.
    pub fn stop(stop: &'a AtomicBool) -> Self {
        Steer {
            stop,
            control: None,
        }
    }
}

/// What one worker's loop achieved.
#[derive(Debug, Clone, Default)]
pub struct WorkerTotals {
    pub submitted: u64,
    pub completed: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Paced runs: how late each send went out against its schedule, and the gaps between
    /// sends (of the same lane, for lanes).
    pub pacing: Option<PaceLog>,
    /// Multi-lane runs: what each lane sent, in lane order. Empty otherwise.
    pub lanes: Vec<LaneTotals>,
}

/// What one lane of a multi-lane worker sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneTotals {
    pub submitted: u64,
    pub bytes: u64,
}

/// A worker's share of one interleaved stream: its frames, its schedule, and the slots it owns,
/// `first_slot..first_slot + slots` (a multiple of its period).
#[derive(Debug, Clone)]
pub struct LaneShare<'a> {
    pub plan: WorkerPlan<'a>,
    pub pacing: &'a Pacing,
    pub first_slot: u32,
    pub slots: u32,
}

/// What writes the frames of each batch into the slots reserved for them: a cycle laid into
/// the slots beforehand (`Cursor`: descriptors, patches and stamps only) or a capture streamed
/// from its file (`Streamer`: a copy per frame). The loop is compiled for each, so the cycle's
/// stays as it was.
trait Fill {
    /// Writes the next `descs.len()` frames' descriptors (and whatever bytes they need); their
    /// bytes.
    fn fill<Q: TxQueue + ?Sized>(&mut self, queue: &mut Q, descs: &mut [TxDesc]) -> u64;

    /// Why the frames just filled must not be sent (their source failed under them); checked
    /// after each fill, before the submit.
    #[inline]
    fn broken(&self) -> Option<PortError> {
        None
    }
}

impl Fill for Cursor<'_> {
    #[inline]
    fn fill<Q: TxQueue + ?Sized>(&mut self, queue: &mut Q, descs: &mut [TxDesc]) -> u64 {
        Cursor::fill(self, queue, descs)
    }
}

/// Where a worker is in a streamed capture: the capture frame it sends next, the step to the
/// one after (the worker count, modulo the capture's length), and the next slot. Slots keep no
/// frame: each is copied in as its batch is filled, into a slot whose last frame was reaped.
struct Streamer<'a> {
    frames: &'a MappedFrames,
    next: u64,
    step: u64,
    len: u64,
    slots: u32,
    slot: u32,
}

impl<'a> Streamer<'a> {
    fn new(share: &StreamShare<'a>, slots: u32) -> Self {
        let len = share.frames.len().max(1);
        Streamer {
            frames: share.frames,
            next: share.first_seq % len,
            step: share.stride % len,
            len,
            slots,
            slot: 0,
        }
    }
}

impl Fill for Streamer<'_> {
    #[inline]
    fn fill<Q: TxQueue + ?Sized>(&mut self, queue: &mut Q, descs: &mut [TxDesc]) -> u64 {
        let mut bytes = 0u64;
        for desc in descs {
            let slot = self.slot;
            let len = self
                .frames
                .copy_into(self.next as usize, queue.slot_mut(slot)) as u32;
            *desc = TxDesc { slot, len };
            bytes += u64::from(len);
            self.next += self.step;
            if self.next >= self.len {
                self.next -= self.len;
            }
            self.slot += 1;
            if self.slot == self.slots {
                self.slot = 0;
            }
        }
        bytes
    }

    #[inline]
    fn broken(&self) -> Option<PortError> {
        self.frames.cut_short().then(|| {
            PortError::SourceCut(
                "the capture was cut short (truncated) while it was streamed: the report is up to then; do not rewrite a capture while it is replayed".into(),
            )
        })
    }
}

/// Where a worker (or a lane) is in its cycle: the next slot of its region and frame, and the
/// sequence number its patches see. Slot `s` of the region holds frame `s % P` for good, since
/// the region is a multiple of the period P: with no patches only descriptors are written.
struct Cursor<'a> {
    plan: &'a WorkerPlan<'a>,
    lens: Vec<u32>,
    rng: Rng,
    first_slot: u32,
    slots: u32,
    slot: u32,
    index: u32,
    seq: u64,
}

impl<'a> Cursor<'a> {
    fn new(plan: &'a WorkerPlan<'a>, first_slot: u32, slots: u32) -> Self {
        debug_assert_eq!(
            slots % plan.frames.len() as u32,
            0,
            "region not a multiple of the period"
        );
        Cursor {
            plan,
            lens: plan.frames.iter().map(|f| f.len() as u32).collect(),
            rng: Rng::new(plan.seed),
            first_slot,
            slots,
            slot: 0,
            index: 0,
            seq: plan.first_seq,
        }
    }

    /// Lays the frames into the region's slots, once, before the run.
    fn lay<Q: TxQueue + ?Sized>(&self, queue: &mut Q) {
        let period = self.plan.frames.len() as u32;
        for s in 0..self.slots {
            let frame = self.plan.frames[(s % period) as usize];
            queue.slot_mut(self.first_slot + s)[..frame.len()].copy_from_slice(frame);
        }
    }

    /// Writes the next `descs.len()` frames' descriptors, patching what varies; their bytes.
    #[inline]
    fn fill<Q: TxQueue + ?Sized>(&mut self, queue: &mut Q, descs: &mut [TxDesc]) -> u64 {
        let mut bytes = 0u64;
        // One clock read a batch: the frames of a batch leave together.
        let sent_at = self.plan.stamp.map(|s| clock::now_ns(s.tai));
        for desc in descs {
            let slot = self.first_slot + self.slot;
            if !self.plan.patches.is_empty() {
                let frame = queue.slot_mut(slot);
                for patch in self.plan.patches {
                    patch.apply(frame, self.seq, &mut self.rng);
                }
            }
            let len = self.lens[self.index as usize];
            if let (Some(stamp), Some(now)) = (self.plan.stamp, sent_at) {
                let frame = &mut queue.slot_mut(slot)[..len as usize];
                signature::stamp(frame, stamp.seq(self.seq, self.plan.period), now);
            }
            *desc = TxDesc { slot, len };
            bytes += u64::from(len);
            self.seq += self.plan.stride;
            self.slot += 1;
            if self.slot == self.slots {
                self.slot = 0;
            }
            self.index += 1;
            if self.index == self.lens.len() as u32 {
                self.index = 0;
            }
        }
        bytes
    }
}

/// A loop's running totals, published after each submit for the status line and for the
/// report of a run that fails.
struct Tally<'a> {
    submitted: u64,
    completed: u64,
    bytes: u64,
    start: Instant,
    ctx: Option<&'a WorkerContext<'a>>,
}

impl<'a> Tally<'a> {
    fn new(ctx: Option<&'a WorkerContext<'a>>) -> Self {
        Tally {
            submitted: 0,
            completed: 0,
            bytes: 0,
            start: Instant::now(),
            ctx,
        }
    }

    #[inline]
    fn submitted(&mut self, frames: u32, bytes: u64) {
        self.submitted += u64::from(frames);
        self.bytes += bytes;
        if let Some(c) = self.ctx {
            c.publish(self.submitted, self.completed, self.bytes);
        }
    }

    /// Waits for the last completions and sums up.
    fn finish<Q: TxQueue + ?Sized>(
        mut self,
        queue: &mut Q,
        pacing: Option<PaceLog>,
        lanes: Vec<LaneTotals>,
    ) -> Result<WorkerTotals, PortError> {
        self.completed += u64::from(queue.drain(DRAIN_TIMEOUT)?);
        self.submitted(0, 0);
        Ok(WorkerTotals {
            submitted: self.submitted,
            completed: self.completed,
            bytes: self.bytes,
            elapsed: self.start.elapsed(),
            pacing,
            lanes,
        })
    }
}

/// Lays the worker's frames into the queue's slots (the slot count is a multiple of its period).
pub(crate) fn fill_slots<Q: TxQueue + ?Sized>(queue: &mut Q, plan: &WorkerPlan<'_>) {
    Cursor::new(plan, 0, queue.slots()).lay(queue);
}

/// Lays each lane's frames into its own region of slots.
pub(crate) fn fill_lanes<Q: TxQueue + ?Sized>(queue: &mut Q, lanes: &[LaneShare<'_>]) {
    for lane in lanes {
        Cursor::new(&lane.plan, lane.first_slot, lane.slots).lay(queue);
    }
}

/// The hot loop for one cycle, as xdpsock's tx_only: reap, ask the pacer (if any), reserve,
/// fill/patch, submit; until the plan's count is sent or the stop flag is raised; then drain.
/// Slots are filled beforehand (`fill_slots`). The cycle is lane 0 of a control.
pub fn transmit<Q: TxQueue + ?Sized>(
    queue: &mut Q,
    plan: &WorkerPlan<'_>,
    batch: u32,
    steer: Steer<'_>,
    ctx: Option<&WorkerContext<'_>>,
    pacer: Option<Pacer<'_>>,
) -> Result<WorkerTotals, PortError> {
    let cursor = Cursor::new(plan, 0, queue.slots());
    let (stop, count) = (steer.stop, plan.count);
    // Compiled apart, so a run nobody controls pays nothing for the control.
    match steer.control {
        None => send_loop(queue, cursor, count, batch, stop, ctx, pacer, Free),
        Some(c) => {
            let lane = OneLane {
                watch: Watch::new(c),
                planned: pacer.as_ref().map(|p| p.pacing().clone()),
                held: false,
            };
            send_loop(queue, cursor, count, batch, stop, ctx, pacer, lane)
        }
    }
}

/// Whether a cycle's loop holds its frames now: never (`Free`), or as its control says
/// (`OneLane`).
trait Gate {
    /// Looks at the control (applying a change to the pacer) and answers whether to hold.
    fn held(&mut self, pacer: Option<&mut Pacer<'_>>) -> bool;
}

/// A cycle no one controls.
struct Free;

impl Gate for Free {
    #[inline(always)]
    fn held(&mut self, _: Option<&mut Pacer<'_>>) -> bool {
        false
    }
}

/// The one flow of a controlled cycle: its planned schedule (a new rate scales it) and whether
/// it is held.
struct OneLane<'a> {
    watch: Watch<'a>,
    planned: Option<linerate_stream::Pacing>,
    held: bool,
}

impl Gate for OneLane<'_> {
    #[inline]
    fn held(&mut self, pacer: Option<&mut Pacer<'_>>) -> bool {
        if self.watch.changed() {
            self.apply(pacer);
        }
        if self.held {
            std::thread::sleep(Duration::from_nanos(HELD_WAIT_PS / 1000));
        }
        self.held
    }
}

impl OneLane<'_> {
    /// Applies the control's change to the pacer (resumed or retimed from now).
    fn apply(&mut self, pacer: Option<&mut Pacer<'_>>) {
        let c = self.watch.control;
        let was = self.held;
        self.held = c.state(0).holds();
        let (Some(pacer), Some(planned)) = (pacer, &self.planned) else {
            return;
        };
        let now = pacer.now();
        steer_pacer(pacer, planned, c.rate(0), was && !self.held, now);
    }
}

/// A controlled flow's pacer after a change, at `now`: on the plan's schedule at the rate
/// asked (None: the plan's own), retimed when that differs from the one it keeps, else resumed
/// when the flow runs again.
fn steer_pacer(
    pacer: &mut Pacer<'_>,
    planned: &linerate_stream::Pacing,
    rate: Option<f64>,
    resumed: bool,
    now: u64,
) {
    // A rate the schedule cannot hold (the caller checks; `at_rate` is the last word) keeps
    // the schedule it has rather than falling back to the plan's.
    let wanted = match rate {
        None => Some(planned.clone()),
        Some(pps) => planned.at_rate(pps),
    };
    match wanted {
        Some(p) if p != *pacer.pacing() => pacer.retime(p, now),
        _ if resumed => pacer.resume(now),
        _ => {}
    }
}

/// The same loop for a streamed capture: each batch's frames are copied from the mapped file
/// into their slots (nothing is laid beforehand).
pub fn transmit_streamed<Q: TxQueue + ?Sized>(
    queue: &mut Q,
    share: &StreamShare<'_>,
    batch: u32,
    stop: &AtomicBool,
    ctx: Option<&WorkerContext<'_>>,
    pacer: Option<Pacer<'_>>,
) -> Result<WorkerTotals, PortError> {
    let streamer = Streamer::new(share, queue.slots());
    send_loop(queue, streamer, share.count, batch, stop, ctx, pacer, Free)
}

#[allow(clippy::too_many_arguments)] // one private loop, compiled for each fill and gate
fn send_loop<Q: TxQueue + ?Sized, F: Fill, G: Gate>(
    queue: &mut Q,
    mut cursor: F,
    count: Option<u64>,
    batch: u32,
    stop: &AtomicBool,
    ctx: Option<&WorkerContext<'_>>,
    mut pacer: Option<Pacer<'_>>,
    mut gate: G,
) -> Result<WorkerTotals, PortError> {
    let slots = queue.slots();
    let mut descs = vec![TxDesc::default(); batch as usize];
    let mut log = pacer
        .as_ref()
        .map(|_| ctx.map_or_else(PaceLog::new, WorkerContext::pace_log));
    let count = count.unwrap_or(u64::MAX);
    let mut in_flight = 0u32;
    let mut tally = Tally::new(ctx);

    while tally.submitted < count && !stop.load(Ordering::Relaxed) {
        let done = queue.reap()?;
        in_flight -= done;
        tally.completed += u64::from(done);
        if gate.held(pacer.as_mut()) {
            continue;
        }
        let room = u64::from(batch.min(slots - in_flight)).min(count - tally.submitted);
        let want = match (room, pacer.as_mut()) {
            (0, _) => 0,
            (_, None) => room,
            (_, Some(p)) => match p.grant(p.now(), room) {
                Grant::Send(k) => k,
                Grant::Wait(until) => {
                    p.wait(until, stop);
                    continue;
                }
            },
        };
        let n = if want == 0 {
            0
        } else {
            queue.reserve(want as u32)
        };
        if n == 0 {
            std::hint::spin_loop();
            continue;
        }
        if let (Some(p), Some(log)) = (pacer.as_mut(), log.as_mut()) {
            p.sent(u64::from(n), log);
        }
        let bytes = cursor.fill(queue, &mut descs[..n as usize]);
        if let Some(e) = cursor.broken() {
            return Err(e);
        }
        queue.submit(&descs[..n as usize])?;
        in_flight += n;
        tally.submitted(n, bytes);
    }
    tally.finish(queue, log, Vec::new())
}

/// A lane's running state in `transmit_lanes`.
struct LaneState<'a> {
    cursor: Cursor<'a>,
    pacer: Pacer<'a>,
    /// Frames left to send.
    left: u64,
    in_flight: u32,
    totals: LaneTotals,
    /// As the run's control has it: a paused or stopped lane is out of the heap.
    state: FlowState,
}

impl<'a> LaneState<'a> {
    /// Every lane at its start, and the heap of those with frames to send, keyed by their first
    /// frame's due time.
    fn start(
        lanes: &'a [LaneShare<'a>],
        batch: u32,
        epoch: Instant,
    ) -> (Vec<Self>, BinaryHeap<Reverse<(u64, usize)>>) {
        let state: Vec<Self> = lanes
            .iter()
            .map(|lane| LaneState {
                cursor: Cursor::new(&lane.plan, lane.first_slot, lane.slots),
                pacer: Pacer::new(
                    lane.pacing,
                    epoch,
                    lane.plan.first_seq,
                    lane.plan.stride,
                    u64::from(batch),
                ),
                left: lane.plan.count.unwrap_or(u64::MAX),
                in_flight: 0,
                totals: LaneTotals::default(),
                state: FlowState::Running,
            })
            .collect();
        let ready = Self::ready(&state);
        (state, ready)
    }

    /// The heap of the lanes that send: not held, with frames left.
    fn ready(state: &[Self]) -> BinaryHeap<Reverse<(u64, usize)>> {
        state
            .iter()
            .enumerate()
            .filter(|(_, l)| l.left > 0 && !l.state.holds())
            .map(|(i, l)| Reverse((l.pacer.next_due(), i)))
            .collect()
    }

    /// Each lane as the control has it at `now`: held, resumed, or retimed.
    fn steer(state: &mut [Self], lanes: &[LaneShare<'_>], control: &FlowControl, now: u64) {
        for (i, l) in state.iter_mut().enumerate() {
            let was = l.state.holds();
            l.state = control.state(i);
            let resumed = was && !l.state.holds();
            steer_pacer(&mut l.pacer, lanes[i].pacing, control.rate(i), resumed, now);
        }
    }
}

/// The loop for interleaved streams. Lanes wait in a heap keyed by their next frame's due time,
/// so a lane's turn costs O(log lanes), not O(lanes). Each batch takes, lane after lane in due
/// order, the frames due by its reach (its first frame's due time plus a slice, as one stream's
/// send reaches), a lane never past the next frame of the lane after it, so lanes stay merged
/// frame by frame even when catching up; one reserve and one submit serve the whole batch.
/// Completions come back in submit order, so a ring of (lane, frames) tells which lane's slots a
/// reap frees: a lane never has more frames in flight than it owns slots, and a slot is patched
/// only after its last frame was reaped. `clock` counts from `epoch`. Lane `i` is lane `i` of
/// the control: a held lane leaves the heap, and the run waits while every lane left is held.
pub fn transmit_lanes<Q: TxQueue + ?Sized>(
    queue: &mut Q,
    lanes: &[LaneShare<'_>],
    batch: u32,
    steer: Steer<'_>,
    ctx: Option<&WorkerContext<'_>>,
    clock: &impl Clock,
    epoch: Instant,
) -> Result<WorkerTotals, PortError> {
    let stop = steer.stop;
    let mut watch = steer.control.map(Watch::new);
    let (mut state, mut ready) = LaneState::start(lanes, batch, epoch);
    let mut descs = vec![TxDesc::default(); batch as usize];
    let mut flight: VecDeque<(usize, u32)> = VecDeque::with_capacity(queue.slots() as usize);
    let mut log = ctx.map_or_else(PaceLog::new, WorkerContext::pace_log);
    let mut tally = Tally::new(ctx);

    while !stop.load(Ordering::Relaxed) {
        let done = queue.reap()?;
        tally.completed += u64::from(done);
        retire(&mut flight, &mut state, done);
        if let Some(w) = watch.as_mut()
            && w.changed()
        {
            LaneState::steer(&mut state, lanes, w.control, clock.now());
            ready = LaneState::ready(&state);
        }
        let Some(&Reverse((first, first_lane))) = ready.peek() else {
            // A paused lane is waited for; once every lane that ran has sent its count, the
            // stopped ones end the run with it (a subset started alone ends when it is done).
            let paused = |l: &LaneState<'_>| l.state == FlowState::Paused && l.left > 0;
            if state.iter().any(paused) {
                clock.wait(clock.now() + HELD_WAIT_PS, stop);
                continue;
            }
            break;
        };
        let now = clock.now();
        if now < first {
            clock.wait(first, stop);
            continue;
        }
        if now - first > MAX_LAG_PS {
            // Too late to catch up: every lane writes off the same time, as one schedule would.
            let by = now - first - MAX_LAG_PS;
            state.iter_mut().for_each(|l| l.pacer.delay(by));
            ready = ready
                .drain()
                .map(|Reverse((due, i))| Reverse((due + by, i)))
                .collect();
        }
        let room = queue.reserve(batch);
        let reach = now.max(first + state[first_lane].pacer.slice_ps());
        let (mut n, mut bytes, mut refill) = (0u32, 0u64, None);
        while n < room
            && let Some(&Reverse((due, i))) = ready.peek()
            && due <= reach
        {
            let l = &mut state[i];
            let free = lanes[i].slots - l.in_flight;
            if free == 0 {
                // The lane due first waits for its completions, and the others with it, or
                // they would overtake it and the merged order would be lost.
                break;
            }
            ready.pop();
            let before = ready.peek().map_or(reach, |r| r.0.0.min(reach));
            let up_to = u64::from((room - n).min(free)).min(l.left);
            let k = match l.pacer.grant_within(now, reach, up_to, before) {
                Grant::Send(k) => k as u32,
                Grant::Wait(until) => {
                    // Catching up too fast: likewise, the others wait with it.
                    ready.push(Reverse((due, i)));
                    refill = Some(until);
                    break;
                }
            };
            l.pacer.sent(u64::from(k), &mut log);
            let sent = l
                .cursor
                .fill(queue, &mut descs[n as usize..(n + k) as usize]);
            l.totals.submitted += u64::from(k);
            l.totals.bytes += sent;
            l.left -= u64::from(k);
            l.in_flight += k;
            bytes += sent;
            flight.push_back((i, k));
            n += k;
            if l.left > 0 {
                ready.push(Reverse((l.pacer.next_due(), i)));
            }
        }
        if n == 0 {
            match refill {
                Some(until) => clock.wait(until, stop),
                None => std::hint::spin_loop(),
            }
            continue;
        }
        queue.submit(&descs[..n as usize])?;
        tally.submitted(n, bytes);
    }
    let lanes = state.iter().map(|l| l.totals).collect();
    tally.finish(queue, Some(log), lanes)
}

/// Hands `done` completions back to the lanes that submitted them, oldest submit first.
fn retire(flight: &mut VecDeque<(usize, u32)>, state: &mut [LaneState<'_>], mut done: u32) {
    while done > 0 {
        let Some(front) = flight.front_mut() else {
            return;
        };
        let take = front.1.min(done);
        state[front.0].in_flight -= take;
        front.1 -= take;
        done -= take;
        if front.1 == 0 {
            flight.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_port::SlotMemory;
    use linerate_stream::{Limits, Mode, Plan, Shape, StreamSpec, lanes_for_worker};

    /// Records the UDP source port of every frame it is handed, completes at most 3 frames per
    /// reap (oldest first), and fails the test if a slot is submitted again before it was reaped.
    struct Recorder {
        memory: SlotMemory,
        busy: Vec<bool>,
        flight: VecDeque<u32>,
        ports: Vec<u16>,
        dst_macs: Vec<[u8; 6]>,
    }

    impl Recorder {
        fn new(slots: u32) -> Self {
            Self {
                memory: SlotMemory::new(slots, 2048),
                busy: vec![false; slots as usize],
                flight: VecDeque::new(),
                ports: Vec::new(),
                dst_macs: Vec::new(),
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
                self.dst_macs.push(f[..6].try_into().unwrap());
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
                rate: rate.parse().unwrap(),
                count: Some(count),
                vary: vary.iter().map(|v| v.parse().unwrap()).collect(),
                mode: Mode::Interleaved,
                ..StreamSpec::default()
            })
            .collect();
        Plan::compile(&streams, &Limits::default()).unwrap()
    }

    fn lanes_of(plan: &Plan, region: u32) -> Vec<LaneShare<'_>> {
        let Shape::Lanes(lanes) = &plan.shape else {
            panic!("not lanes")
        };
        lanes_for_worker(lanes, 0, 1, None)
            .into_iter()
            .zip(lanes)
            .enumerate()
            .map(|(i, (wp, lane))| {
                let slots = region.div_ceil(wp.frames.len() as u32) * wp.frames.len() as u32;
                LaneShare {
                    plan: wp,
                    pacing: &lane.pacing,
                    first_slot: i as u32 * 64,
                    slots,
                }
            })
            .collect()
    }

    /// Virtual time: starts at `start` ps and moves only when the loop waits, so what the loop
    /// sends does not depend on how the machine schedules the test.
    struct Virtual(std::cell::Cell<u64>);

    impl Clock for Virtual {
        fn now(&self) -> u64 {
            self.0.get()
        }
        fn wait(&self, until: u64, _: &AtomicBool) {
            self.0.set(self.0.get().max(until));
        }
    }

    fn run_lanes(q: &mut Recorder, lanes: &[LaneShare<'_>], start: u64) -> WorkerTotals {
        fill_lanes(q, lanes);
        let stop = AtomicBool::new(false);
        let clock = Virtual(std::cell::Cell::new(start));
        transmit_lanes(
            q,
            lanes,
            64,
            Steer::stop(&stop),
            None,
            &clock,
            Instant::now(),
        )
        .unwrap()
    }

    #[test]
    fn lanes_merge_by_due_time() {
        // 2 kpps and 500 fps: frames of port 1 every 500 µs, of port 2 every 2 ms.
        let plan = interleaved(&[(1, "2k", 40, &[]), (2, "500", 10, &[])]);
        let lanes = lanes_of(&plan, 8);
        // Each port-2 frame is due with every 4th port-1 frame (ties go to the first lane).
        let expected: Vec<u16> = (0..10).flat_map(|_| [1, 2, 1, 1, 1]).collect();
        // On time, and starting 30 ms late: catching up (at twice the rate, every frame due at
        // once) keeps the merged order too.
        for start in [0, 30_000_000_000] {
            let mut q = Recorder::new(128);
            let totals = run_lanes(&mut q, &lanes, start);
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
            assert_eq!(q.ports, expected, "start {start} ps");
        }
    }

    /// A streamed capture of 10 frames (UDP source port = frame number), three loops capped at
    /// 25 frames, worker 1 of 2, through 8 slots in batches of 4 completing 3 a reap (so a batch
    /// is filled while earlier slots are still in flight): the worker sends frames 1, 3, …, 9
    /// lap after lap, 12 in all, each copied into a slot already reaped (the Recorder fails the
    /// test otherwise), with the replay's destination MAC.
    #[test]
    fn a_streamed_capture_is_copied_into_reaped_slots_in_order() {
        let mut w = pcap_file::pcap::PcapWriter::new(Vec::new()).unwrap();
        for i in 0..10u16 {
            let mut f = vec![0u8; 60 + usize::from(i)];
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            f[34..36].copy_from_slice(&i.to_be_bytes());
            w.write_packet(&pcap_file::pcap::PcapPacket::new(
                Duration::ZERO,
                f.len() as u32,
                &f,
            ))
            .unwrap();
        }
        let file = w.into_writer();
        // Streamed from the file's bytes as a replay streams them from its map.
        let capture = linerate_stream::CaptureIndex::read(&file, 1500)
            .unwrap()
            .stream(Box::new(file))
            .unwrap();
        let replay = linerate_stream::Replay {
            speed: linerate_stream::Speed::Max,
            loops: Some(3),
            dst_mac: Some([2, 0, 0, 0, 0, 7]),
            ..linerate_stream::Replay::default()
        };
        let plan = capture.plan("c", &replay).unwrap();
        let Shape::Streamed { frames, count, .. } = &plan.shape else {
            panic!("not streamed")
        };
        let share = frames.for_worker(1, 2, *count, Some(25));
        let mut q = Recorder::new(8);
        let stop = AtomicBool::new(false);
        let totals = transmit_streamed(&mut q, &share, 4, &stop, None, None).unwrap();
        let want: Vec<u16> = (0..12).map(|k| (1 + 2 * k) % 10).collect();
        assert_eq!(q.ports, want);
        assert_eq!((totals.submitted, totals.completed), (12, 12));
        assert_eq!(
            totals.bytes,
            want.iter().map(|&p| 60 + u64::from(p)).sum::<u64>()
        );
        assert!(q.dst_macs.iter().all(|m| *m == [2, 0, 0, 0, 0, 7]));
    }

    /// A change of a control, made at a virtual instant (ps).
    type Change<'a> = (u64, Box<dyn Fn(&FlowControl) + 'a>);

    /// A virtual clock that makes the control's changes when time reaches them, and raises the
    /// stop flag at `end`.
    struct Scripted<'a> {
        now: std::cell::Cell<u64>,
        changes: std::cell::RefCell<Vec<Change<'a>>>,
        control: &'a FlowControl,
        end: u64,
    }

    impl Clock for Scripted<'_> {
        fn now(&self) -> u64 {
            self.now.get()
        }
        fn wait(&self, until: u64, stop: &AtomicBool) {
            let until = until.min(self.end);
            self.now.set(self.now.get().max(until));
            let mut changes = self.changes.borrow_mut();
            while let Some((at, _)) = changes.first()
                && *at <= self.now.get()
            {
                // A change lands when time reaches it, not past it.
                self.now.set(*at);
                (changes.remove(0).1)(self.control);
            }
            if self.now.get() >= self.end {
                stop.store(true, Ordering::Relaxed);
            }
        }
    }

    const MS: u64 = 1_000_000_000;

    /// Runs `plan`'s lanes (one worker, 8-slot regions) steered by `control`, its `changes`
    /// made as virtual time reaches them, until `end`: what each lane sent, and when it ended.
    fn run_steered(
        plan: &Plan,
        control: &FlowControl,
        changes: Vec<Change<'_>>,
        end: u64,
    ) -> (Vec<u64>, u64, Vec<u16>) {
        let lanes = lanes_of(plan, 8);
        let clock = Scripted {
            now: std::cell::Cell::new(0),
            changes: std::cell::RefCell::new(changes),
            control,
            end,
        };
        let mut q = Recorder::new(256);
        fill_lanes(&mut q, &lanes);
        let stop = AtomicBool::new(false);
        let steer = Steer {
            stop: &stop,
            control: Some(control),
        };
        let totals =
            transmit_lanes(&mut q, &lanes, 64, steer, None, &clock, Instant::now()).unwrap();
        let sent = totals.lanes.iter().map(|l| l.submitted).collect();
        (sent, clock.now(), q.ports)
    }

    #[test]
    fn lanes_are_held_resumed_started_and_retimed_while_the_run_goes_on() {
        // Three lanes at 1 kpps; lane 1 starts stopped. At 10 ms lane 0 pauses, at 20 ms it
        // resumes and lane 1 starts, at 30 ms lane 2 doubles its rate; the run ends at 40 ms.
        let plan = interleaved(&[
            (1, "1k", 1_000_000, &[]),
            (2, "1k", 1_000_000, &[]),
            (3, "1k", 1_000_000, &[]),
        ]);
        let control = FlowControl::new(3);
        control.set_states([(1, FlowState::Stopped)]);
        let changes: Vec<Change<'_>> = vec![
            (
                10 * MS,
                Box::new(|c| c.set_states([(0, FlowState::Paused)])),
            ),
            (
                20 * MS,
                Box::new(|c| c.set_states([(0, FlowState::Running), (1, FlowState::Running)])),
            ),
            (30 * MS, Box::new(|c| c.set_rate(2, Some(2000.0)))),
        ];
        let (sent, _, ports) = run_steered(&plan, &control, changes, 40 * MS);
        // Lane 0: 0..9 ms and 20..39 ms; lane 1: 20..39 ms; lane 2: 0..29 ms at 1 kpps, then
        // every 0.5 ms from 30 ms.
        assert_eq!(sent, [30, 20, 50]);
        assert_eq!(ports.iter().filter(|&&p| p == 2).count(), 20);
        assert_eq!(ports.len(), 100);
    }

    #[test]
    fn a_controlled_run_waits_while_every_lane_is_held_and_a_lone_cycle_is_steered_too() {
        // Every lane paused from the start, resumed at 5 ms: nothing before, 1 kpps after.
        let plan = interleaved(&[(1, "1k", 1_000_000, &[]), (2, "1k", 1_000_000, &[])]);
        let control = FlowControl::new(2);
        control.set_states([(0, FlowState::Paused), (1, FlowState::Paused)]);
        let resume: Change<'_> = (
            5 * MS,
            Box::new(|c| c.set_states([(0, FlowState::Running), (1, FlowState::Running)])),
        );
        let (sent, _, _) = run_steered(&plan, &control, vec![resume], 15 * MS);
        assert_eq!(sent, [10, 10]);

        // A subset of counted lanes: once the one that runs has sent its count, the stopped
        // one ends the run with it (nothing waits for it to be started).
        let plan = interleaved(&[(1, "1k", 5, &[]), (2, "1k", 5, &[])]);
        let control = FlowControl::new(2);
        control.set_states([(1, FlowState::Stopped)]);
        let (sent, ended, _) = run_steered(&plan, &control, Vec::new(), 1_000 * MS);
        assert_eq!(sent, [5, 0]);
        assert!(ended < 10 * MS, "ended when lane 0 was done: {ended} ps");

        // A lone cycle, held: the loop sends nothing until it runs, then its count.
        let plan = Plan::compile(
            &[StreamSpec {
                count: Some(7),
                ..StreamSpec::seed()
            }],
            &Limits::default(),
        )
        .unwrap();
        let Shape::Cycle { cycle, .. } = &plan.shape else {
            panic!("not one cycle")
        };
        let wp = cycle.for_worker(0, 1, None);
        let control = std::sync::Arc::new(FlowControl::new(1));
        control.set_states([(0, FlowState::Paused)]);
        let mut q = Recorder::new(crate::slots_for(wp.frames.len(), 64));
        fill_slots(&mut q, &wp);
        let stop = AtomicBool::new(false);
        let totals = std::thread::scope(|s| {
            let c = std::sync::Arc::clone(&control);
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                c.set_states([(0, FlowState::Running)]);
            });
            let steer = Steer {
                stop: &stop,
                control: Some(&control),
            };
            transmit(&mut q, &wp, 4, steer, None, None).unwrap()
        });
        assert_eq!((totals.submitted, q.ports.len()), (7, 7));
        assert!(
            totals.elapsed >= Duration::from_millis(20),
            "held until resumed"
        );
    }

    #[test]
    fn a_lane_never_rewrites_a_slot_in_flight() {
        // Patched random field, 4-slot regions, completions trickling back 3 per reap.
        let plan = interleaved(&[
            (1, "200k", 300, &["dst-port:random:1-60000"]),
            (2, "100k", 150, &["dst-port:random:1-60000"]),
        ]);
        let lanes = lanes_of(&plan, 4);
        assert!(lanes.iter().all(|l| !l.plan.patches.is_empty()));
        let mut q = Recorder::new(128);
        let totals = run_lanes(&mut q, &lanes, 0);
        assert_eq!(totals.submitted, 450);
        assert_eq!(q.ports.iter().filter(|&&p| p == 1).count(), 300);
        assert_eq!(q.ports.iter().filter(|&&p| p == 2).count(), 150);
    }
}
