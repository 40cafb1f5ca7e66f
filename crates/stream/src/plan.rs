use std::collections::HashMap;
use std::sync::Arc;

use linerate_wire::{Patch, Rng, checksum, signature, units};

use crate::mapped::MappedFrames;
use crate::spec::Resolved;
use crate::{Limits, Mode, Next, Pacing, Rate, StreamError, StreamSpec};

/// Most distinct frames a plan pre-builds. Variable fields whose period would push the cycle past
/// this are patched per frame instead. 4096 frames of 2 KiB fit any UMEM comfortably.
pub const CACHE_LIMIT: u64 = 4096;

/// Longest stream sequence (sum of the counts) that is flattened into pre-built frames.
const SEQUENCE_LIMIT: u64 = 4 * CACHE_LIMIT;

/// What one stream became, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    pub name: String,
    /// Fields folded into the pre-built frames.
    pub cached: Vec<String>,
    /// Fields patched in place for every frame.
    pub patched: Vec<String>,
}

/// Streams compiled for the hot path, in the shape a backend sends: one cycle of frames, or
/// lanes (interleaved streams) each with its own cycle and schedule. Nothing is left to decide
/// while sending.
#[derive(Debug, Clone)]
pub struct Plan {
    pub shape: Shape,
    /// What each stream became, in the order of the spec (lane `i` is stream `i`).
    pub streams: Vec<StreamInfo>,
}

/// How a plan's frames leave: the two shapes a backend may be asked to send. A backend that
/// cannot send one refuses it by matching here, where it compiles the plan for itself.
#[derive(Debug, Clone)]
pub enum Shape {
    /// One stream, or streams in sequence flattened into one cycle: sent as fast as the port
    /// takes them (`pacing` None) or on one schedule.
    Cycle {
        cycle: Cycle,
        pacing: Option<Pacing>,
    },
    /// Interleaved streams, all sent at once, each on its own schedule (two or more).
    Lanes(Vec<Lane>),
    /// A capture too large to load, sent from its mapped file in order, lap after lap: each
    /// frame is copied into a port buffer as it is sent, since no buffer keeps it for long.
    Streamed {
        frames: Arc<MappedFrames>,
        pacing: Option<Pacing>,
        /// Frames to send in all (None: until stopped).
        count: Option<u64>,
    },
}

/// Frames in one repeating order: frame `n` is `frames[n % frames.len()]` with every patch
/// applied for `n`.
#[derive(Debug, Clone)]
pub struct Cycle {
    /// Pre-built frames without FCS, in send order.
    pub frames: Vec<Vec<u8>>,
    pub patches: Vec<Patch>,
    /// Frames to send in all (None: until stopped).
    pub count: Option<u64>,
    pub seed: u64,
    /// The frames carry the receive side's signature: the worker stamps each as it sends.
    pub stamp: Option<Stamp>,
}

/// How a cycle's frames carry the signature (`linerate_wire::signature`): each pre-built frame
/// already holds its flow id and the magic; the worker writes the flow's sequence number and the
/// transmit time as it sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stamp {
    /// Per cycle frame, its flow id. Empty: every frame is flow `flow`.
    pub flows: Vec<u16>,
    pub flow: u16,
    /// Per cycle frame, (its index among its flow's frames in the cycle, its flow's frames per
    /// cycle). Empty: the cycle is one flow, and frame n's sequence number is n.
    pub seq_map: Vec<(u32, u32)>,
    /// Stamp CLOCK_TAI (two hosts synced by PTP) instead of CLOCK_MONOTONIC (one host).
    pub tai: bool,
}

impl Stamp {
    /// The flow sequence number of frame `n` of a cycle of `period` frames.
    #[inline]
    pub fn seq(&self, n: u64, period: u64) -> u32 {
        if self.seq_map.is_empty() {
            return n as u32;
        }
        let (k, c) = self.seq_map[(n % period) as usize];
        ((n / period) * u64::from(c) + u64::from(k)) as u32
    }

    /// The flow id of frame `n` of a cycle of `period` frames.
    pub fn flow_of(&self, n: u64, period: u64) -> u16 {
        if self.flows.is_empty() {
            self.flow
        } else {
            self.flows[(n % period) as usize]
        }
    }
}

/// One interleaved stream: its cycle and its schedule, which every lane has (a lane at max rate
/// would crowd out the others).
#[derive(Debug, Clone)]
pub struct Lane {
    pub cycle: Cycle,
    pub pacing: Pacing,
}

/// One worker's share of a cycle: worker `w` of `W` sends frames `w, w+W, w+2W, …`, so the
/// workers together send exactly the cycle's sequence, every value of every field included.
#[derive(Debug, Clone)]
pub struct WorkerPlan<'a> {
    /// The worker's own cycle: its k-th frame is `frames[k % frames.len()]`.
    pub frames: Vec<&'a [u8]>,
    pub patches: &'a [Patch],
    pub first_seq: u64,
    pub stride: u64,
    /// Frames this worker sends (None: until stopped).
    pub count: Option<u64>,
    pub seed: u64,
    /// Stamp the signature; `period` is the whole cycle's length, which its sequence map needs.
    pub stamp: Option<&'a Stamp>,
    pub period: u64,
}

impl Plan {
    /// Stamps with CLOCK_TAI instead of CLOCK_MONOTONIC (the receiver must read the same clock).
    pub fn set_stamp_clock(&mut self, tai: bool) {
        let cycles: Vec<&mut Cycle> = match &mut self.shape {
            Shape::Cycle { cycle, .. } => vec![cycle],
            Shape::Lanes(lanes) => lanes.iter_mut().map(|l| &mut l.cycle).collect(),
            Shape::Streamed { .. } => Vec::new(),
        };
        for c in cycles {
            if let Some(s) = &mut c.stamp {
                s.tai = tai;
            }
        }
    }

    /// Whether the frames carry the signature.
    pub fn stamped(&self) -> bool {
        self.cycles().any(|c| c.stamp.is_some())
    }

    /// Compiles streams that run one after another (a single stream is the common case), or
    /// interleaved streams into lanes.
    pub fn compile(streams: &[StreamSpec], limits: &Limits) -> Result<Self, StreamError> {
        let first = streams.first().ok_or_else(|| StreamError::Invalid {
            stream: "-".into(),
            why: "no stream to send".into(),
        })?;
        crate::spec::check_stream_count(streams)?;
        let resolved = streams
            .iter()
            .map(|s| s.resolve(limits))
            .collect::<Result<Vec<_>, _>>()?;
        crate::spec::check_plan_size(streams, &resolved)?;
        let interleaved = streams
            .iter()
            .filter(|s| s.mode == Mode::Interleaved)
            .count();
        if interleaved > 0 {
            if interleaved < streams.len() {
                return Err(StreamError::Invalid {
                    stream: first.name.clone(),
                    why: "some streams are interleaved and some in sequence: pick one mode".into(),
                });
            }
            compile_interleaved(streams, &resolved, limits)
        } else if streams.len() == 1 {
            let (cycle, pacing, info) = compile_one(first, &resolved[0], limits, 0)?;
            Ok(Plan {
                shape: Shape::Cycle { cycle, pacing },
                streams: vec![info],
            })
        } else {
            compile_sequence(streams, &resolved, limits)
        }
    }

    /// Every cycle of the plan: the one, or each lane's (none for a streamed capture).
    pub fn cycles(&self) -> impl Iterator<Item = &Cycle> {
        let (one, lanes) = match &self.shape {
            Shape::Cycle { cycle, .. } => (Some(cycle), &[][..]),
            Shape::Lanes(lanes) => (None, &lanes[..]),
            Shape::Streamed { .. } => (None, &[][..]),
        };
        one.into_iter().chain(lanes.iter().map(|l| &l.cycle))
    }

    /// Longest frame, without FCS.
    pub fn max_len(&self) -> usize {
        match &self.shape {
            Shape::Streamed { frames, .. } => frames.max_len(),
            _ => self.cycles().map(Cycle::max_len).max().unwrap_or(0),
        }
    }

    /// Pre-built frames, all lanes together.
    pub fn frame_count(&self) -> usize {
        self.cycles().map(|c| c.frames.len()).sum()
    }

    /// Frames the plan sends in all (None: until stopped, as when any lane is endless).
    pub fn count(&self) -> Option<u64> {
        match &self.shape {
            Shape::Streamed { count, .. } => *count,
            _ => self.cycles().map(|c| c.count).sum(),
        }
    }

    /// The average rate the plan asks for in frames per second, all lanes together (None: max).
    pub fn requested_pps(&self) -> Option<f64> {
        match &self.shape {
            Shape::Cycle { pacing, .. } | Shape::Streamed { pacing, .. } => {
                pacing.as_ref().map(Pacing::pps)
            }
            Shape::Lanes(lanes) => Some(lanes.iter().map(|l| l.pacing.pps()).sum()),
        }
    }
}

impl Cycle {
    /// Longest frame, without FCS.
    pub fn max_len(&self) -> usize {
        self.frames.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// Splits the cycle between `workers`; `limit` caps the total count (e.g. `--count`).
    pub fn for_worker(&self, worker: usize, workers: usize, limit: Option<u64>) -> WorkerPlan<'_> {
        let (w, n) = (worker as u64, workers.max(1) as u64);
        let p = self.frames.len() as u64;
        let own_period = p / gcd(p, n);
        let frames = (0..own_period)
            .map(|k| self.frames[((w + k * n) % p) as usize].as_slice())
            .collect();
        let total = match (self.count, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        WorkerPlan {
            frames,
            patches: &self.patches,
            first_seq: w,
            stride: n,
            count: total.map(|t| if t > w { (t - w).div_ceil(n) } else { 0 }),
            seed: self.seed ^ (w + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            stamp: self.stamp.as_ref(),
            period: p,
        }
    }

    /// Frames of each flow among the `sent` frames worker `worker` of `workers` sent (its
    /// frames `worker, worker + workers, …`), as (flow id, frames); empty without a signature.
    pub fn flow_counts(&self, worker: usize, workers: usize, sent: u64) -> Vec<(u16, u64)> {
        let Some(stamp) = &self.stamp else {
            return Vec::new();
        };
        if stamp.flows.is_empty() {
            return vec![(stamp.flow, sent)];
        }
        let (w, n) = (worker as u64, workers.max(1) as u64);
        let p = self.frames.len() as u64;
        // The worker's frames repeat their flows every p / gcd(p, n) frames.
        let own = p / gcd(p, n);
        let mut per_lap: HashMap<u16, u64> = HashMap::new();
        let mut tail: HashMap<u16, u64> = HashMap::new();
        for k in 0..own {
            let flow = stamp.flow_of(w + k * n, p);
            *per_lap.entry(flow).or_default() += sent / own;
            if k < sent % own {
                *tail.entry(flow).or_default() += 1;
            }
        }
        for (flow, extra) in tail {
            *per_lap.entry(flow).or_default() += extra;
        }
        let mut counts: Vec<(u16, u64)> = per_lap.into_iter().collect();
        counts.sort_unstable();
        counts
    }
}

/// Builds one frame of `size` bytes (FCS included), with the signature's template for `flow`
/// written before the checksums are computed, so stamping later keeps them valid.
fn build_frame(r: &Resolved, size: usize, flow: Option<u16>) -> Result<Vec<u8>, StreamError> {
    let mut f = r.frame.build(size)?;
    if let Some(flow) = flow {
        signature::write_template(&mut f.bytes, flow);
        checksum::fill_frame(&mut f.bytes, &f.layout);
    }
    Ok(f.bytes)
}

/// Refuses a signature that does not fit the stream's smallest frame, or that a variable field
/// would overwrite.
fn check_signature(
    spec: &StreamSpec,
    r: &Resolved,
    patches: &[Patch],
    names: &[String],
) -> Result<(), StreamError> {
    let min = r.sizes.min();
    let layout = r.frame.build(min)?.layout;
    let invalid = |why: String| StreamError::Invalid {
        stream: spec.name.clone(),
        why,
    };
    if !signature::fits(&layout) {
        return Err(invalid(format!(
            "the signature takes the last {} bytes of the payload: frames of this stream must be at least {} B (the smallest here is {min} B)",
            signature::LEN,
            layout.payload_offset + signature::LEN + units::FCS_LEN
        )));
    }
    let start = layout.len - signature::LEN;
    for (patch, name) in patches.iter().zip(names) {
        if usize::from(patch.loc.offset) + usize::from(patch.loc.width) > start {
            return Err(invalid(format!(
                "{name} overlaps the signature, the last {} bytes of a {min} B frame: move the field or drop signature",
                signature::LEN
            )));
        }
    }
    Ok(())
}

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
    if lanes
        .iter()
        .any(|l| l.cycle.count.is_some() || !l.cycle.patches.is_empty())
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
        },
        lane_of,
    })
}

/// One stream on its own: its cycle, its schedule (None: max rate) and what it became.
fn compile_one(
    spec: &StreamSpec,
    resolved: &Resolved,
    limits: &Limits,
    flow: u16,
) -> Result<(Cycle, Option<Pacing>, StreamInfo), StreamError> {
    let schedule = resolved.sizes.schedule(spec.seed);
    let layout = resolved.frame.build(resolved.sizes.min())?.layout;
    let mut patches = Vec::new();
    for vary in &resolved.vary {
        patches.push(Patch {
            loc: vary.field.locate(&layout)?,
            modifier: vary.modifier,
        });
    }
    let flow = spec.signature.then_some(flow);
    if flow.is_some() {
        let names: Vec<String> = resolved.vary.iter().map(|v| v.field.name()).collect();
        check_signature(spec, resolved, &patches, &names)?;
    }
    // goto-first restarts every field after `count` frames: the cycle is exactly `count` long
    // and every field must be folded into it.
    let looping = spec.next == Next::GotoFirst && spec.count.is_some();
    let mut period = schedule.len() as u64;
    let mut cached = Vec::new();
    let mut patched = Vec::new();
    if let (true, Some(count)) = (looping, spec.count) {
        if count > CACHE_LIMIT {
            return Err(StreamError::Invalid {
                stream: spec.name.clone(),
                why: format!(
                    "goto-first after {count} frames: at most {CACHE_LIMIT} frames can loop; use a smaller count or next = \"stop\""
                ),
            });
        }
        period = count;
        for (p, v) in patches.iter().zip(&resolved.vary) {
            let target = if p.modifier.period().is_some() {
                &mut cached
            } else {
                &mut patched
            };
            target.push((*p, v.field.name()));
        }
    } else {
        for (p, v) in patches.iter().zip(&resolved.vary) {
            match p.modifier.period().and_then(|q| lcm(period, q)) {
                Some(l) if l <= CACHE_LIMIT => {
                    period = l;
                    cached.push((*p, v.field.name()));
                }
                _ => patched.push((*p, v.field.name())),
            }
        }
    }
    let mut templates = HashMap::new();
    let mut rng = Rng::new(spec.seed);
    let mut frames = Vec::with_capacity(period as usize);
    for k in 0..period {
        let size = schedule[(k % schedule.len() as u64) as usize];
        let template = match templates.get(&size) {
            Some(t) => t,
            None => {
                let frame = build_frame(resolved, size, flow)?;
                templates.entry(size).or_insert(frame)
            }
        };
        let mut frame: Vec<u8> = template.clone();
        for (patch, _) in &cached {
            patch.apply(&mut frame, k, &mut rng);
        }
        frames.push(frame);
    }
    let count = match (spec.next, spec.count, spec.loops) {
        (Next::GotoFirst, Some(c), Some(loops)) => {
            Some(c.checked_mul(loops).ok_or_else(|| StreamError::Invalid {
                stream: spec.name.clone(),
                why: format!("{c} frames × {loops} loops is more than 2^64 - 1 frames"),
            })?)
        }
        (Next::GotoFirst, _, _) => None,
        (_, c, _) => c,
    };
    let cycle = Cycle {
        frames,
        patches: patched.iter().map(|p| p.0).collect(),
        count,
        seed: spec.seed,
        stamp: flow.map(|flow| Stamp {
            flow,
            ..Stamp::default()
        }),
    };
    let info = StreamInfo {
        name: spec.name.clone(),
        cached: cached.into_iter().map(|p| p.1).collect(),
        patched: patched.into_iter().map(|p| p.1).collect(),
    };
    let pacing = Pacing::for_stream(spec, resolved, &schedule, limits)?;
    Ok((cycle, pacing, info))
}

/// Streams in sequence are flattened: each stream's frames, evaluated for its own frame index,
/// one after another. Random fields are drawn here, so they repeat from one loop to the next.
fn compile_sequence(
    streams: &[StreamSpec],
    resolved: &[Resolved],
    limits: &Limits,
) -> Result<Plan, StreamError> {
    let mut reached = Vec::new();
    let mut looped = false;
    for (i, s) in streams.iter().enumerate() {
        let count = s.count.ok_or_else(|| StreamError::Invalid {
            stream: s.name.clone(),
            why: "every stream of a sequence needs a count".into(),
        })?;
        reached.push((i, count));
        match s.next {
            Next::Next => continue,
            Next::Stop => break,
            Next::GotoFirst => {
                looped = true;
                break;
            }
        }
    }
    if reached.len() < streams.len() {
        let lost = &streams[reached.len()];
        return Err(StreamError::Invalid {
            stream: lost.name.clone(),
            why: format!(
                "never reached: stream '{}' before it stops or loops",
                streams[reached.len() - 1].name
            ),
        });
    }
    let total = reached
        .iter()
        .try_fold(0u64, |sum, r| sum.checked_add(r.1))
        .ok_or_else(|| StreamError::Invalid {
            stream: streams[0].name.clone(),
            why: "the counts add up to more than 2^64 - 1 frames".into(),
        })?;
    if total > SEQUENCE_LIMIT {
        return Err(StreamError::Invalid {
            stream: streams[0].name.clone(),
            why: format!(
                "the sequence holds {total} frames; at most {SEQUENCE_LIMIT} can be pre-built"
            ),
        });
    }
    let mut frames = Vec::with_capacity(total as usize);
    let mut infos = Vec::new();
    let mut timing = Vec::new();
    let signed = streams.iter().any(|s| s.signature);
    if signed && !streams.iter().all(|s| s.signature) {
        return Err(StreamError::Invalid {
            stream: streams[0].name.clone(),
            why: "some streams of the sequence carry the signature and some not: a receiver would count the unsigned ones as other traffic; set signature on all or none".into(),
        });
    }
    let mut stamp = Stamp::default();
    for &(i, count) in &reached {
        let (spec, r) = (&streams[i], &resolved[i]);
        let schedule = r.sizes.schedule(spec.seed);
        let layout = r.frame.build(r.sizes.min())?.layout;
        let patches = r
            .vary
            .iter()
            .map(|v| {
                Ok(Patch {
                    loc: v.field.locate(&layout)?,
                    modifier: v.modifier,
                })
            })
            .collect::<Result<Vec<_>, StreamError>>()?;
        let flow = signed.then_some(i as u16);
        if signed {
            let names: Vec<String> = r.vary.iter().map(|v| v.field.name()).collect();
            check_signature(spec, r, &patches, &names)?;
        }
        let mut rng = Rng::new(spec.seed);
        for k in 0..count {
            let size = schedule[(k % schedule.len() as u64) as usize];
            let mut frame = build_frame(r, size, flow)?;
            for p in &patches {
                p.apply(&mut frame, k, &mut rng);
            }
            frames.push(frame);
            if signed {
                stamp.flows.push(i as u16);
                stamp.seq_map.push((k as u32, count as u32));
            }
        }
        infos.push(StreamInfo {
            name: spec.name.clone(),
            cached: r.vary.iter().map(|v| v.field.name()).collect(),
            patched: Vec::new(),
        });
        timing.push((spec, r, schedule, count));
    }
    let last = &streams[reached.last().map_or(0, |r| r.0)];
    let count = match (looped, last.loops) {
        (true, Some(loops)) => {
            Some(
                total
                    .checked_mul(loops)
                    .ok_or_else(|| StreamError::Invalid {
                        stream: last.name.clone(),
                        why: format!("{total} frames × {loops} loops is more than 2^64 - 1 frames"),
                    })?,
            )
        }
        (true, None) => None,
        (false, _) => Some(total),
    };
    Ok(Plan {
        shape: Shape::Cycle {
            cycle: Cycle {
                frames,
                patches: Vec::new(),
                count,
                seed: streams[0].seed,
                stamp: signed.then_some(stamp),
            },
            pacing: Pacing::for_sequence(&timing, limits)?,
        },
        streams: infos,
    })
}

/// Interleaved streams: each compiled on its own into a lane with its own frames, patches, count
/// and schedule. Every lane needs a real rate (a `max` lane would crowd out the others), and
/// `next`/`loops` belong to sequences.
fn compile_interleaved(
    streams: &[StreamSpec],
    resolved: &[Resolved],
    limits: &Limits,
) -> Result<Plan, StreamError> {
    if streams.iter().any(|s| s.signature) && !streams.iter().all(|s| s.signature) {
        return Err(StreamError::Invalid {
            stream: streams[0].name.clone(),
            why: "some streams carry the signature and some not: a receiver would count the unsigned ones as other traffic; set signature on all or none".into(),
        });
    }
    let mut lanes = Vec::with_capacity(streams.len());
    let mut infos = Vec::with_capacity(streams.len());
    let mut wire_bps = 0.0;
    for (i, (spec, r)) in streams.iter().zip(resolved).enumerate() {
        let invalid = |why: &str| StreamError::Invalid {
            stream: spec.name.clone(),
            why: why.into(),
        };
        if spec.next != Next::Stop || spec.loops.is_some() {
            return Err(invalid(
                "next and loops order streams in a sequence, but interleaved streams all run at once: remove them (or drop mode = \"interleaved\")",
            ));
        }
        if matches!(r.rate, Rate::Max) {
            return Err(invalid(
                "interleaved streams each need a rate (e.g. 20k, 100Mbps, 10%), not max: a max stream would crowd out the others",
            ));
        }
        let (cycle, pacing, mut info) = compile_one(spec, r, limits, i as u16)?;
        let pacing = pacing.ok_or_else(|| invalid("the rate is too high to schedule"))?;
        let bits: usize = cycle.frames.iter().map(|f| (f.len() + 24) * 8).sum();
        wire_bps += pacing.pps() * bits as f64 / cycle.frames.len() as f64;
        // Unnamed streams all default to "stream0": number them so the report tells them apart.
        if spec.name == StreamSpec::default().name {
            info.name = format!("stream{i}");
        }
        lanes.push(Lane { cycle, pacing });
        infos.push(info);
    }
    if let Some(mbps) = limits.link_mbps
        && wire_bps > mbps as f64 * 1e6 * 1.000_001
    {
        return Err(StreamError::Invalid {
            stream: streams[0].name.clone(),
            why: format!(
                "the interleaved streams together ask for {:.1} Mbit/s on the wire, above the link's {mbps} Mbit/s",
                wire_bps / 1e6
            ),
        });
    }
    let shape = if lanes.len() == 1 {
        let Lane { cycle, pacing } = lanes.remove(0);
        Shape::Cycle {
            cycle,
            pacing: Some(pacing),
        }
    } else {
        Shape::Lanes(lanes)
    };
    Ok(Plan {
        shape,
        streams: infos,
    })
}

fn due_saturating(p: &Pacing, n: u64) -> u64 {
    (n / p.cycle_frames)
        .saturating_mul(p.cycle_ps)
        .saturating_add(p.offsets_ps[(n % p.cycle_frames) as usize])
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

fn lcm(a: u64, b: u64) -> Option<u64> {
    (a / gcd(a, b)).checked_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::Field;

    /// The cycle of a plan that is not lanes.
    pub(crate) fn cycle(plan: &Plan) -> &Cycle {
        match &plan.shape {
            Shape::Cycle { cycle, .. } => cycle,
            _ => panic!("not one cycle"),
        }
    }

    fn field_values(plan: &Plan, field: Field, n: u64) -> Vec<u64> {
        let template = StreamSpec::default()
            .resolve(&Limits::default())
            .unwrap()
            .frame;
        let loc = field.locate(&template.build(64).unwrap().layout).unwrap();
        let mut rng = Rng::new(cycle(plan).seed);
        (0..n)
            .map(|i| {
                let mut frame =
                    cycle(plan).frames[(i % cycle(plan).frames.len() as u64) as usize].clone();
                for p in &cycle(plan).patches {
                    p.apply(&mut frame, i, &mut rng);
                }
                loc.read(&frame)
            })
            .collect()
    }

    fn spec(vary: &[&str]) -> StreamSpec {
        StreamSpec {
            vary: vary.iter().map(|s| s.parse().unwrap()).collect(),
            ..StreamSpec::default()
        }
    }

    pub(crate) fn signed(mut s: StreamSpec) -> StreamSpec {
        s.signature = true;
        s
    }

    #[test]
    fn signed_frames_carry_their_flow_and_valid_checksums() {
        let plan =
            Plan::compile(&[signed(spec(&["src-port:inc:1-4"]))], &Limits::default()).unwrap();
        let c = cycle(&plan);
        assert!(plan.stamped());
        for f in &c.frames {
            let sig = linerate_wire::signature::parse(f).expect("signature template");
            assert_eq!((sig.flow, sig.seq, sig.tx_ns), (0, 0, 0));
            let p = etherparse::SlicedPacket::from_ethernet(f).unwrap();
            let (Some(etherparse::NetSlice::Ipv4(ip)), Some(etherparse::TransportSlice::Udp(u))) =
                (p.net, p.transport)
            else {
                panic!("ipv4/udp");
            };
            let h = u.to_header();
            let want = h
                .calc_checksum_ipv4(&ip.header().to_header(), u.payload())
                .unwrap();
            assert_eq!(want, h.checksum);
        }
        // Single flow: the sequence number is the frame's index, whatever the worker.
        let stamp = c.stamp.as_ref().unwrap();
        assert_eq!(stamp.seq(12345, 4), 12345);
        assert_eq!(c.flow_counts(1, 2, 10), vec![(0, 10)]);
    }

    #[test]
    fn a_signed_sequence_numbers_each_flow_on_its_own() {
        let mut a = signed(spec(&[]));
        a.count = Some(3);
        a.next = Next::Next;
        let mut b = signed(spec(&[]));
        b.count = Some(2);
        b.next = Next::GotoFirst;
        let plan = Plan::compile(&[a.clone(), b.clone()], &Limits::default()).unwrap();
        let c = cycle(&plan);
        let stamp = c.stamp.as_ref().unwrap();
        let p = c.frames.len() as u64;
        // Frames n = 0..10: a0 a1 a2 b0 b1 a3 a4 a5 b2 b3.
        let got: Vec<(u16, u32)> = (0..10)
            .map(|n| (stamp.flow_of(n, p), stamp.seq(n, p)))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 0),
                (0, 1),
                (0, 2),
                (1, 0),
                (1, 1),
                (0, 3),
                (0, 4),
                (0, 5),
                (1, 2),
                (1, 3)
            ]
        );
        // Two workers, 7 frames each: worker 0 sends n = 0, 2, …, 12; worker 1 n = 1, …, 13.
        for w in 0..2u64 {
            let mut want = std::collections::BTreeMap::new();
            for j in 0..7 {
                *want.entry(stamp.flow_of(w + 2 * j, p)).or_insert(0u64) += 1;
            }
            let want: Vec<(u16, u64)> = want.into_iter().collect();
            assert_eq!(c.flow_counts(w as usize, 2, 7), want, "worker {w}");
        }
        b.signature = false;
        let err = Plan::compile(&[a, b], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("all or none"), "{err}");
    }

    #[test]
    fn a_signature_that_does_not_fit_or_is_overwritten_is_refused() {
        let mut v6 = signed(spec(&[]));
        v6.ipv6 = true;
        v6.size = 70;
        let err = Plan::compile(&[v6.clone()], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least 84 B"), "{err}");
        v6.size = 84;
        assert!(Plan::compile(&[v6], &Limits::default()).is_ok());
        let err = Plan::compile(&[signed(spec(&["byte@50:inc:0-9"]))], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("overlaps the signature"), "{err}");
    }

    #[test]
    fn seed_stream_is_ten_distinct_frames() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).frames.len(), 10);
        assert!(cycle(&plan).patches.is_empty());
        let mut distinct = cycle(&plan).frames.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 10);
        assert!(cycle(&plan).frames.iter().all(|f| f.len() == 60));
    }

    #[test]
    fn small_periods_are_cached_and_large_ones_patched() {
        let plan = Plan::compile(&[spec(&["src-port:inc:1000-1999"])], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).frames.len(), 1000);
        assert!(cycle(&plan).patches.is_empty());
        let plan = Plan::compile(
            &[spec(&["src-port:inc:1000-1999", "dst-port:inc:1-7"])],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(cycle(&plan).frames.len(), 1000);
        assert_eq!(cycle(&plan).patches.len(), 1);
        assert_eq!(plan.streams[0].patched, vec!["dst-port".to_string()]);
        let values = field_values(&plan, Field::DstPort, 14);
        assert_eq!(values, vec![1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn workers_share_the_sequence_without_overlap() {
        let plan = Plan::compile(&[spec(&["src-port:inc:0-9"])], &Limits::default()).unwrap();
        let a = cycle(&plan).for_worker(0, 2, Some(11));
        let b = cycle(&plan).for_worker(1, 2, Some(11));
        assert_eq!((a.count, b.count), (Some(6), Some(5)));
        assert_eq!((a.frames.len(), b.frames.len()), (5, 5));
        assert_eq!(a.frames[1], cycle(&plan).frames[2].as_slice());
        assert_eq!(b.frames[0], cycle(&plan).frames[1].as_slice());
        let c = cycle(&plan).for_worker(2, 3, Some(2));
        assert_eq!(c.count, Some(0));
    }

    #[test]
    fn sequences_flatten_in_order_and_count() {
        let mut a = spec(&["src-port:inc:1-3"]);
        a.count = Some(3);
        a.next = Next::Next;
        let mut b = spec(&[]);
        b.src_port = 7;
        b.count = Some(2);
        b.next = Next::GotoFirst;
        b.loops = Some(4);
        let plan = Plan::compile(&[a.clone(), b.clone()], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).frames.len(), 5);
        assert_eq!(plan.count(), Some(20));
        assert_eq!(
            field_values(&plan, Field::SrcPort, 6),
            vec![1, 2, 3, 7, 7, 1]
        );
        a.next = Next::Stop;
        let err = Plan::compile(&[a, b], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("never reached"), "{err}");
    }

    #[test]
    fn goto_first_loops_over_count_frames() {
        let mut s = spec(&["src-port:inc:100-199"]);
        s.count = Some(10);
        s.next = Next::GotoFirst;
        let plan = Plan::compile(&[s], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).frames.len(), 10);
        assert_eq!(plan.count(), None);
        assert_eq!(field_values(&plan, Field::SrcPort, 12)[10..], [100, 101]);
    }

    #[test]
    fn random_fields_are_patched_and_stay_in_range() {
        let plan =
            Plan::compile(&[spec(&["src-port:random:5000-5009"])], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).patches.len(), 1);
        let values = field_values(&plan, Field::SrcPort, 1000);
        assert!(values.iter().all(|v| (5000..=5009).contains(v)));
        let distinct: std::collections::BTreeSet<_> = values.into_iter().collect();
        assert_eq!(distinct.len(), 10);
    }
}

#[cfg(test)]
mod interleaved_tests {
    use super::tests::signed;
    use super::*;

    #[test]
    fn merged_interleaved_streams_keep_each_flows_sequence() {
        let a = signed(lane("a", 1, "2000", None));
        let b = signed(lane("b", 2, "1000", None));
        let plan = Plan::compile(&[a.clone(), b], &Limits::default()).unwrap();
        let merged = merge(lanes(&plan)).expect("two endless lanes merge");
        let c = &merged.cycle;
        let stamp = c
            .stamp
            .as_ref()
            .expect("a merged cycle of signed lanes is signed");
        let p = c.frames.len() as u64;
        let mut next = [0u32; 2];
        for n in 0..3 * p {
            let flow = stamp.flow_of(n, p) as usize;
            assert_eq!(stamp.seq(n, p), next[flow], "frame {n}");
            let sig = linerate_wire::signature::parse(&c.frames[(n % p) as usize]).unwrap();
            assert_eq!(sig.flow as usize, flow);
            next[flow] += 1;
        }
        assert_eq!(next[0], 2 * next[1]);
        let unsigned = lane("c", 3, "1000", None);
        let err = Plan::compile(&[a, unsigned], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("all or none"), "{err}");
    }

    fn lanes(plan: &Plan) -> &[Lane] {
        match &plan.shape {
            Shape::Lanes(lanes) => lanes,
            _ => panic!("not lanes"),
        }
    }

    fn lane(name: &str, src_port: u16, rate: &str, count: Option<u64>) -> StreamSpec {
        StreamSpec {
            name: name.into(),
            src_port,
            rate: rate.parse().unwrap(),
            count,
            mode: Mode::Interleaved,
            ..StreamSpec::seed()
        }
    }

    fn refusal(streams: &[StreamSpec], limits: &Limits) -> String {
        Plan::compile(streams, limits).unwrap_err().to_string()
    }

    #[test]
    fn each_stream_becomes_a_lane() {
        let plan = Plan::compile(
            &[
                lane("a", 1, "20k", Some(400)),
                lane("b", 2, "5k", Some(100)),
            ],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(lanes(&plan).len(), 2);
        assert_eq!(plan.count(), Some(500));
        assert_eq!(plan.frame_count(), 20);
        assert_eq!(lanes(&plan)[0].cycle.frames.len(), 10);
        assert_eq!(plan.streams.len(), 2);
        let pps = plan.requested_pps().unwrap();
        assert!((pps - 25_000.0).abs() < 1e-6, "{pps}");
        let endless = Plan::compile(
            &[lane("a", 1, "20k", None), lane("b", 2, "5k", Some(100))],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(endless.count(), None);
    }

    #[test]
    fn a_single_interleaved_stream_is_a_plain_plan() {
        let plan = Plan::compile(&[lane("a", 1, "1k", None)], &Limits::default()).unwrap();
        assert!(matches!(
            plan.shape,
            Shape::Cycle {
                pacing: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn unnamed_lanes_are_numbered() {
        let mut a = lane("", 1, "1k", None);
        let mut b = lane("", 2, "1k", None);
        a.name = StreamSpec::default().name;
        b.name = StreamSpec::default().name;
        let plan = Plan::compile(&[a, b], &Limits::default()).unwrap();
        let names: Vec<_> = plan.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["stream0", "stream1"]);
    }

    #[test]
    fn sequence_keys_max_and_mixed_modes_are_refused() {
        let limits = Limits::default();
        let mut next = lane("b", 2, "5k", Some(10));
        next.next = Next::GotoFirst;
        let err = refusal(&[lane("a", 1, "1k", None), next], &limits);
        assert!(
            err.contains("'b'") && err.contains("next and loops"),
            "{err}"
        );
        let mut loops = lane("b", 2, "5k", Some(10));
        loops.loops = Some(3);
        let err = refusal(&[lane("a", 1, "1k", None), loops], &limits);
        assert!(err.contains("next and loops"), "{err}");
        let err = refusal(
            &[lane("a", 1, "max", None), lane("b", 2, "1k", None)],
            &limits,
        );
        assert!(err.contains("'a'") && err.contains("not max"), "{err}");
        let mut seq = lane("b", 2, "5k", Some(10));
        seq.mode = Mode::Sequence;
        let err = refusal(&[lane("a", 1, "1k", Some(10)), seq], &limits);
        assert!(err.contains("pick one mode"), "{err}");
    }

    #[test]
    fn lanes_together_must_fit_the_link() {
        let limits = Limits {
            link_mbps: Some(1000),
            ..Limits::default()
        };
        // 1 Mpps of 64-byte frames is 672 Mbit/s on the wire: each fits, both do not.
        let both = [lane("a", 1, "1M", None), lane("b", 2, "1M", None)];
        let err = refusal(&both, &limits);
        assert!(
            err.contains("together") && err.contains("above the link"),
            "{err}"
        );
        let fits = [lane("a", 1, "700k", None), lane("b", 2, "50%", None)];
        assert!(Plan::compile(&fits, &limits).is_ok());
    }

    /// The first `limit` frames of the merged schedules, counted per lane by brute force.
    fn merged(plan: &Plan, limit: u64) -> Vec<u64> {
        let lanes = lanes(plan);
        let mut next = vec![0u64; lanes.len()];
        for _ in 0..limit {
            let pick = (0..lanes.len())
                .filter(|&i| lanes[i].cycle.count.is_none_or(|c| next[i] < c))
                .min_by_key(|&i| (lanes[i].pacing.due_ps(next[i]), i));
            match pick {
                Some(i) => next[i] += 1,
                None => break,
            }
        }
        next
    }

    #[test]
    fn a_total_limit_takes_the_first_frames_by_due_time() {
        let mut b = lane("b", 2, "5k", Some(7));
        b.bursts = Some(crate::Bursts {
            frames: 3,
            per_second: 1000.0,
        });
        let plan = Plan::compile(
            &[lane("a", 1, "20k", None), b, lane("c", 3, "3k", Some(1000))],
            &Limits::default(),
        )
        .unwrap();
        for limit in [0, 1, 2, 3, 5, 64, 100, 1001, 50_000] {
            let counts: Vec<u64> = lane_counts(lanes(&plan), Some(limit))
                .into_iter()
                .map(Option::unwrap)
                .collect();
            assert_eq!(counts, merged(&plan, limit), "limit {limit}");
            assert_eq!(counts.iter().sum::<u64>(), limit);
        }
        assert_eq!(
            lane_counts(lanes(&plan), None),
            vec![None, Some(7), Some(1000)]
        );
        let finite = Plan::compile(
            &[lane("a", 1, "20k", Some(4)), lane("b", 2, "5k", Some(1))],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            lane_counts(lanes(&finite), Some(64)),
            vec![Some(4), Some(1)]
        );
        let shares = lanes_for_worker(lanes(&finite), 1, 2, Some(3));
        assert_eq!(
            shares.iter().map(|w| w.count).collect::<Vec<_>>(),
            [Some(1), Some(0)]
        );
    }

    #[test]
    fn lanes_merge_ahead_of_time_when_their_rates_allow() {
        let merged = |streams: &[StreamSpec]| {
            merge(lanes(&Plan::compile(streams, &Limits::default()).unwrap()))
        };
        // 20 kpps and 5 kpps: every 200 µs, four frames of one and one of the other.
        let m = merged(&[lane("a", 1, "20k", None), lane("b", 2, "5k", None)]).unwrap();
        assert_eq!((m.pacing.cycle_frames, m.pacing.cycle_ps), (5, 200_000_000));
        assert_eq!(
            m.pacing.offsets_ps,
            [0, 0, 50_000_000, 100_000_000, 150_000_000]
        );
        assert_eq!(m.pacing.burst, 2);
        // The seed stream's ten frames: ten periods until both lanes' cycles line up again.
        assert_eq!(m.cycle.frames.len(), 50);
        assert_eq!(m.lane_of[..10], [0, 1, 0, 0, 0, 0, 1, 0, 0, 0]);
        let src = |f: &Vec<u8>| u16::from_be_bytes([f[34], f[35]]);
        assert!(
            m.cycle
                .frames
                .iter()
                .zip(&m.lane_of)
                .all(|(f, &l)| src(f) == l as u16 + 1)
        );
        // In due order, it is the merged schedule `lane_counts` counts.
        let counts: Vec<u32> = (0..2)
            .map(|l| m.lane_of[..37].iter().filter(|&&x| x == l).count() as u32)
            .collect();
        let plan = Plan::compile(
            &[lane("a", 1, "20k", None), lane("b", 2, "5k", None)],
            &Limits::default(),
        )
        .unwrap();
        let want: Vec<u32> = lane_counts(lanes(&plan), Some(37))
            .into_iter()
            .map(|c| c.unwrap() as u32)
            .collect();
        assert_eq!(counts, want);
        // Counts, patches, and rates without a short common period are left to the lanes loop.
        assert!(merged(&[lane("a", 1, "20k", Some(5)), lane("b", 2, "5k", None)]).is_none());
        let mut patched = lane("b", 2, "5k", None);
        patched.vary = vec!["dst-port:random:1-9".parse().unwrap()];
        assert!(merged(&[lane("a", 1, "20k", None), patched]).is_none());
        assert!(merged(&[lane("a", 1, "7001", None), lane("b", 2, "11003", None)]).is_none());
    }
}
