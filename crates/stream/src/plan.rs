use std::collections::HashMap;

use linerate_wire::{Patch, Rng};

use crate::spec::Resolved;
use crate::{Limits, Next, Pacing, StreamError, StreamSpec};

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

/// A stream compiled for the hot path: frame `n` of the run is `frames[n % frames.len()]` with
/// every patch applied for `n`. Nothing is left to decide while sending.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Pre-built frames without FCS, in send order.
    pub frames: Vec<Vec<u8>>,
    pub patches: Vec<Patch>,
    /// Frames the spec asks for in all (None: until stopped).
    pub count: Option<u64>,
    pub seed: u64,
    pub streams: Vec<StreamInfo>,
    /// When each frame is due; None sends as fast as the port takes them.
    pub pacing: Option<Pacing>,
}

/// One worker's share of a plan: worker `w` of `W` sends frames `w, w+W, w+2W, …`, so the
/// workers together send exactly the plan's sequence, every value of every field included.
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
}

impl Plan {
    /// Compiles streams that run one after another (a single stream is the common case).
    pub fn compile(streams: &[StreamSpec], limits: &Limits) -> Result<Self, StreamError> {
        let first = streams.first().ok_or_else(|| StreamError::Invalid {
            stream: "-".into(),
            why: "no stream to send".into(),
        })?;
        let resolved = streams
            .iter()
            .map(|s| s.resolve(limits))
            .collect::<Result<Vec<_>, _>>()?;
        if streams.len() == 1 {
            compile_one(first, &resolved[0], limits)
        } else {
            compile_sequence(streams, &resolved, limits)
        }
    }

    /// Longest frame, without FCS.
    pub fn max_len(&self) -> usize {
        self.frames.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// Splits the plan between `workers`; `limit` caps the run's total count (e.g. `--count`).
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
        }
    }
}

fn compile_one(
    spec: &StreamSpec,
    resolved: &Resolved,
    limits: &Limits,
) -> Result<Plan, StreamError> {
    let schedule = resolved.sizes.schedule(spec.seed);
    let layout = resolved.frame.build(resolved.sizes.min())?.layout;
    let mut patches = Vec::new();
    for vary in &resolved.vary {
        patches.push(Patch {
            loc: vary.field.locate(&layout)?,
            modifier: vary.modifier,
        });
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
                let frame = resolved.frame.build(size)?.bytes;
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
        (Next::GotoFirst, Some(c), Some(loops)) => Some(c * loops),
        (Next::GotoFirst, _, _) => None,
        (_, c, _) => c,
    };
    Ok(Plan {
        frames,
        patches: patched.iter().map(|p| p.0).collect(),
        count,
        pacing: Pacing::for_stream(spec, resolved, &schedule, limits)?,
        seed: spec.seed,
        streams: vec![StreamInfo {
            name: spec.name.clone(),
            cached: cached.into_iter().map(|p| p.1).collect(),
            patched: patched.into_iter().map(|p| p.1).collect(),
        }],
    })
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
    let total: u64 = reached.iter().map(|r| r.1).sum();
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
        let mut rng = Rng::new(spec.seed);
        for k in 0..count {
            let size = schedule[(k % schedule.len() as u64) as usize];
            let mut frame = r.frame.build(size)?.bytes;
            for p in &patches {
                p.apply(&mut frame, k, &mut rng);
            }
            frames.push(frame);
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
        (true, Some(loops)) => Some(total * loops),
        (true, None) => None,
        (false, _) => Some(total),
    };
    Ok(Plan {
        frames,
        patches: Vec::new(),
        count,
        pacing: Pacing::for_sequence(&timing, limits)?,
        seed: streams[0].seed,
        streams: infos,
    })
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

    fn field_values(plan: &Plan, field: Field, n: u64) -> Vec<u64> {
        let template = StreamSpec::default()
            .resolve(&Limits::default())
            .unwrap()
            .frame;
        let loc = field.locate(&template.build(64).unwrap().layout).unwrap();
        let mut rng = Rng::new(plan.seed);
        (0..n)
            .map(|i| {
                let mut frame = plan.frames[(i % plan.frames.len() as u64) as usize].clone();
                for p in &plan.patches {
                    p.apply(&mut frame, i, &mut rng);
                }
                loc.read(&frame)
            })
            .collect()
    }

    fn spec(vary: &[&str]) -> StreamSpec {
        StreamSpec {
            vary: vary.iter().map(|s| s.to_string()).collect(),
            ..StreamSpec::default()
        }
    }

    #[test]
    fn seed_stream_is_ten_distinct_frames() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        assert_eq!(plan.frames.len(), 10);
        assert!(plan.patches.is_empty());
        let mut distinct = plan.frames.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 10);
        assert!(plan.frames.iter().all(|f| f.len() == 60));
    }

    #[test]
    fn small_periods_are_cached_and_large_ones_patched() {
        let plan = Plan::compile(&[spec(&["src-port:inc:1000-1999"])], &Limits::default()).unwrap();
        assert_eq!(plan.frames.len(), 1000);
        assert!(plan.patches.is_empty());
        let plan = Plan::compile(
            &[spec(&["src-port:inc:1000-1999", "dst-port:inc:1-7"])],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(plan.frames.len(), 1000);
        assert_eq!(plan.patches.len(), 1);
        assert_eq!(plan.streams[0].patched, vec!["dst-port".to_string()]);
        let values = field_values(&plan, Field::DstPort, 14);
        assert_eq!(values, vec![1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn workers_share_the_sequence_without_overlap() {
        let plan = Plan::compile(&[spec(&["src-port:inc:0-9"])], &Limits::default()).unwrap();
        let a = plan.for_worker(0, 2, Some(11));
        let b = plan.for_worker(1, 2, Some(11));
        assert_eq!((a.count, b.count), (Some(6), Some(5)));
        assert_eq!((a.frames.len(), b.frames.len()), (5, 5));
        assert_eq!(a.frames[1], plan.frames[2].as_slice());
        assert_eq!(b.frames[0], plan.frames[1].as_slice());
        let c = plan.for_worker(2, 3, Some(2));
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
        assert_eq!(plan.frames.len(), 5);
        assert_eq!(plan.count, Some(20));
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
        assert_eq!(plan.frames.len(), 10);
        assert_eq!(plan.count, None);
        assert_eq!(field_values(&plan, Field::SrcPort, 12)[10..], [100, 101]);
    }

    #[test]
    fn random_fields_are_patched_and_stay_in_range() {
        let plan =
            Plan::compile(&[spec(&["src-port:random:5000-5009"])], &Limits::default()).unwrap();
        assert_eq!(plan.patches.len(), 1);
        let values = field_values(&plan, Field::SrcPort, 1000);
        assert!(values.iter().all(|v| (5000..=5009).contains(v)));
        let distinct: std::collections::BTreeSet<_> = values.into_iter().collect();
        assert_eq!(distinct.len(), 10);
    }
}
