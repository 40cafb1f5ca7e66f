//! Specs into cycles: one stream on its own, streams in sequence, streams interleaved.

use std::collections::HashMap;
use std::sync::Arc;

use linerate_wire::{Layout, Modifier, Patch, Rng, StackFrame, VaryMode, signature, units};

use super::{CACHE_LIMIT, Cycle, Lane, Plan, SEQUENCE_LIMIT, Shape, Stamp, StreamInfo, lcm};
use crate::spec::Resolved;
use crate::template::outer_checksum_over;
use crate::{Limits, Next, Pacing, Rate, StreamError, StreamSpec};

/// Builds one frame of `size` bytes (FCS included), with the signature's template for `flow`
/// written before the checksums are computed, so stamping later keeps them valid (every
/// checksum of the stack, the outer ones too).
fn build_frame(r: &Resolved, size: usize, flow: Option<u16>) -> Result<StackFrame, StreamError> {
    let mut f = r.frame.build(size)?.frame;
    if let Some(flow) = flow {
        // The length check of refill_checksums compares with the frame's own bytes: copy them.
        let mut bytes = f.bytes.clone();
        signature::write_template(&mut bytes, flow);
        f.refill_checksums(&mut bytes);
        f.bytes = bytes;
    }
    Ok(f)
}

/// Refuses a signature that does not fit the stream's smallest frame, or that a variable field
/// would overwrite.
fn check_signature(
    spec: &StreamSpec,
    r: &Resolved,
    patches: &[FieldPatch],
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
    for (FieldPatch { patch, .. }, name) in patches.iter().zip(names) {
        if usize::from(patch.loc.offset) + usize::from(patch.loc.width) > start {
            return Err(invalid(format!(
                "{name} overlaps the signature, the last {} bytes of a {min} B frame: move the field or drop signature",
                signature::LEN
            )));
        }
    }
    Ok(())
}

/// One stream on its own: its cycle, its schedule (None: max rate) and what it became.
pub(super) fn compile_one(
    spec: &StreamSpec,
    resolved: &Resolved,
    limits: &Limits,
    flow: u16,
) -> Result<(Cycle, Option<Pacing>, StreamInfo), StreamError> {
    let schedule = resolved.sizes.schedule(spec.seed);
    let smallest = resolved.frame.build(resolved.sizes.min())?;
    let patches = patches_of(resolved, &smallest.layout)?;
    let flow = spec.signature.then_some(flow);
    if flow.is_some() {
        let names: Vec<String> = resolved.vary.iter().map(|v| v.field.name()).collect();
        check_signature(spec, resolved, &patches, &names)?;
    }
    let outer: Vec<_> = patches
        .iter()
        .map(|p| outer_checksum_over(&smallest.frame, &p.patch.loc))
        .collect();
    let (period, cached, patched) =
        fold_patches(spec, resolved, &patches, &outer, schedule.len() as u64)?;
    if let Some((p, name, _)) = patched.iter().find(|p| p.0.table.is_some()) {
        return Err(StreamError::Invalid {
            stream: spec.name.clone(),
            why: format!(
                "{name} takes a list of {} values, which every frame's cycle must hold, but with the stream's other fields and sizes the cycle would be over {CACHE_LIMIT} frames: shorten a list or a counter so their lengths share factors (4 and 8, not 5 and 7)",
                p.modifier_count()
            ),
        });
    }
    if let Some((_, name, Some(header))) = patched.iter().find(|p| p.2.is_some()) {
        return Err(StreamError::Invalid {
            stream: spec.name.clone(),
            why: format!(
                "{name} changes in every frame but the {header} checksum of the tunnel covers it as well: vary it over fewer values (inc or dec, at most {CACHE_LIMIT}) so that its frames are pre-built, or send that checksum as 0 (udp:checksum=off, gre without checksum)"
            ),
        });
    }
    let refill = cached.iter().any(|p| p.2.is_some());
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
        let mut frame: Vec<u8> = template.bytes.clone();
        for (patch, ..) in &cached {
            patch.apply(&mut frame, k, &mut rng);
        }
        if refill {
            template.refill_checksums(&mut frame);
        }
        frames.push(frame);
    }
    let cycle = Cycle {
        frames,
        patches: patched.iter().map(|p| p.0.patch).collect(),
        count: stream_count(spec)?,
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

/// A variable field as the plan folds it: its patch, and for a list its values, which the
/// patch's modifier indexes (lists are only folded into pre-built frames, never sent to the
/// hot path, which sees plain patches).
#[derive(Debug, Clone)]
struct FieldPatch {
    patch: Patch,
    table: Option<Arc<[u64]>>,
}

impl FieldPatch {
    /// Writes the field's value for frame `k` into `frame`.
    fn apply(&self, frame: &mut [u8], k: u64, rng: &mut Rng) {
        let Some(table) = &self.table else {
            return self.patch.apply(frame, k, rng);
        };
        let index = self.patch.modifier.value(k, rng) as usize;
        let one = Patch {
            loc: self.patch.loc,
            modifier: Modifier {
                mode: VaryMode::Inc,
                start: table[index % table.len()],
                step: 0,
                count: 1,
                mask: self.patch.modifier.mask,
            },
        };
        one.apply(frame, 0, rng);
    }

    fn modifier_count(&self) -> u64 {
        self.patch.modifier.count
    }
}

/// The patch of every variable field, located in a frame of `layout`.
fn patches_of(resolved: &Resolved, layout: &Layout) -> Result<Vec<FieldPatch>, StreamError> {
    resolved
        .vary
        .iter()
        .map(|v| {
            Ok(FieldPatch {
                patch: Patch {
                    loc: v.field.locate(layout)?,
                    modifier: v.modifier,
                },
                table: v.table.clone(),
            })
        })
        .collect()
}

/// A patch, the name of its field, and the header of a checksum its patch does not update.
type Named = (FieldPatch, String, Option<&'static str>);

/// The cycle's length, and which patches are folded into its pre-built frames (cached) or
/// applied per frame (patched). goto-first restarts every field after `count` frames: the
/// cycle is exactly `count` long and every counting field is folded into it.
fn fold_patches(
    spec: &StreamSpec,
    resolved: &Resolved,
    patches: &[FieldPatch],
    outer: &[Option<&'static str>],
    sizes: u64,
) -> Result<(u64, Vec<Named>, Vec<Named>), StreamError> {
    let mut period = sizes;
    let mut cached = Vec::new();
    let mut patched = Vec::new();
    let named = patches
        .iter()
        .zip(&resolved.vary)
        .zip(outer)
        .map(|((p, v), o)| (p.clone(), v.field.name(), *o));
    if let (Next::GotoFirst, Some(count)) = (spec.next, spec.count) {
        if count > CACHE_LIMIT {
            return Err(StreamError::Invalid {
                stream: spec.name.clone(),
                why: format!(
                    "goto-first after {count} frames: at most {CACHE_LIMIT} frames can loop; use a smaller count or next = \"stop\""
                ),
            });
        }
        period = count;
        for named in named {
            match named.0.patch.modifier.period() {
                Some(_) => cached.push(named),
                None => patched.push(named),
            }
        }
        return Ok((period, cached, patched));
    }
    // Lists first: they can only be pre-built, while a counter left out is patched per frame.
    let (lists, counters): (Vec<Named>, Vec<Named>) = named.partition(|n| n.0.table.is_some());
    for named in lists.into_iter().chain(counters) {
        match named.0.patch.modifier.period().and_then(|q| lcm(period, q)) {
            Some(l) if l <= CACHE_LIMIT => {
                period = l;
                cached.push(named);
            }
            _ => patched.push(named),
        }
    }
    Ok((period, cached, patched))
}

/// Frames a stream sends in all: its count, times its loops when it goes back to the first.
fn stream_count(spec: &StreamSpec) -> Result<Option<u64>, StreamError> {
    Ok(match (spec.next, spec.count, spec.loops) {
        (Next::GotoFirst, Some(c), Some(loops)) => {
            Some(c.checked_mul(loops).ok_or_else(|| StreamError::Invalid {
                stream: spec.name.clone(),
                why: format!("{c} frames × {loops} loops is more than 2^64 - 1 frames"),
            })?)
        }
        (Next::GotoFirst, _, _) => None,
        (_, c, _) => c,
    })
}

/// The streams a sequence reaches, in order, each with its count, and whether it loops: it
/// ends at the first stream that stops or goes back to the first.
fn reached(streams: &[StreamSpec]) -> Result<(Vec<(usize, u64)>, bool), StreamError> {
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
    Ok((reached, looped))
}

/// Frames in one pass of the sequence, at most [`SEQUENCE_LIMIT`].
fn sequence_total(streams: &[StreamSpec], reached: &[(usize, u64)]) -> Result<u64, StreamError> {
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
    Ok(total)
}

/// A stream's `count` frames of a sequence, each field evaluated for its own frame index.
fn stream_frames(
    spec: &StreamSpec,
    r: &Resolved,
    schedule: &[usize],
    count: u64,
    flow: Option<u16>,
) -> Result<Vec<Vec<u8>>, StreamError> {
    let smallest = r.frame.build(r.sizes.min())?;
    let patches = patches_of(r, &smallest.layout)?;
    if flow.is_some() {
        let names: Vec<String> = r.vary.iter().map(|v| v.field.name()).collect();
        check_signature(spec, r, &patches, &names)?;
    }
    let refill = patches
        .iter()
        .any(|p| outer_checksum_over(&smallest.frame, &p.patch.loc).is_some());
    let mut rng = Rng::new(spec.seed);
    let mut frames = Vec::with_capacity(count as usize);
    for k in 0..count {
        let size = schedule[(k % schedule.len() as u64) as usize];
        let built = build_frame(r, size, flow)?;
        let mut frame = built.bytes.clone();
        for p in &patches {
            p.apply(&mut frame, k, &mut rng);
        }
        if refill {
            built.refill_checksums(&mut frame);
        }
        frames.push(frame);
    }
    Ok(frames)
}

/// Streams in sequence are flattened: each stream's frames, evaluated for its own frame index,
/// one after another. Random fields are drawn here, so they repeat from one loop to the next.
pub(super) fn compile_sequence(
    streams: &[StreamSpec],
    resolved: &[Resolved],
    limits: &Limits,
) -> Result<Plan, StreamError> {
    let (reached, looped) = reached(streams)?;
    let total = sequence_total(streams, &reached)?;
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
        let flow = signed.then_some(limits.first_flow + i as u16);
        for (k, frame) in stream_frames(spec, r, &schedule, count, flow)?
            .into_iter()
            .enumerate()
        {
            frames.push(frame);
            if signed {
                stamp.flows.push(limits.first_flow + i as u16);
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
        first_flow: limits.first_flow,
    })
}

/// Interleaved streams: each compiled on its own into a lane with its own frames, patches, count
/// and schedule. Every lane needs a real rate (a `max` lane would crowd out the others), and
/// `next`/`loops` belong to sequences.
pub(super) fn compile_interleaved(
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
        let (cycle, pacing, mut info) = compile_one(spec, r, limits, limits.first_flow + i as u16)?;
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
        first_flow: limits.first_flow,
    })
}
