//! What the BPF program reads, compiled from a [`Plan`]: the variable fields as span
//! instructions, the signature's stamping, and per worker its template, its window of differing
//! bytes and its frames. The layouts mirror `bpf/live_tx.bpf.c` (struct live_field, live_stamp,
//! live_worker, live_frame).
//!
//! Pages of the live-frame page pool are recycled without being re-initialised from the template,
//! so a page holds what the program wrote last time. The program therefore writes every byte that
//! can differ from the template in full: the window (the bytes where the worker's frames differ
//! from the template, widened over every field and checksum it patches) and the fields.

use std::borrow::Cow;

use linerate_stream::{Cycle, Pacing, Plan, Shape};
use linerate_wire::{Patch, VaryMode, signature};

use crate::LiveError;

/// Fields the program patches per frame (`MAX_FIELDS` in the C source).
pub const MAX_FIELDS: usize = 8;
/// Workers one program serves (`MAX_WORKERS`).
pub const MAX_WORKERS: usize = 64;
/// Longest window the program copies per frame (`MAX_WINDOW`).
pub const MAX_WINDOW: usize = 2048;
/// Highest field or checksum offset (`MAX_OFFSET`).
pub const MAX_OFFSET: usize = 4032;
/// Metadata in front of each frame: the worker id (u32) and padding.
pub const META_LEN: usize = 8;
/// "No checksum to update" (`NO_CSUM`).
pub const NO_CSUM: u16 = 0xffff;
/// Bytes before the window in a `struct live_frame`: length, the mapped signature's sequence
/// start and step, padding.
pub const FRAME_HEADER: usize = 16;
/// Bytes of the program's read-only data (`struct live_ro`): the field count, the fields, the
/// signature.
pub const RO_LEN: usize = 8 + MAX_FIELDS * FIELD_LEN + STAMP_LEN;
/// Bytes of one `struct live_stamp`.
pub const STAMP_LEN: usize = 16;
/// Frames that share one clock read (`STAMP_EVERY`): the kernel's bulk of redirected frames,
/// which leave together.
pub const STAMP_EVERY: u64 = 16;

/// `struct live_stamp`: how the program stamps the signature (`linerate_wire::signature`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveStamp {
    /// CLOCK_TAI (`bpf_ktime_get_tai_ns`) instead of CLOCK_MONOTONIC (`bpf_ktime_get_ns`).
    pub tai: bool,
    /// Several flows in the cycle: each frame's sequence is its entry's `seq_base + lap ·
    /// seq_step` ([`FrameStamp`]). Otherwise one flow, whose sequence a worker counts from its
    /// first frame in steps of `stride`.
    pub mapped: bool,
    /// Workers: the counter's step.
    pub stride: u32,
}

impl LiveStamp {
    fn to_bytes(self) -> [u8; STAMP_LEN] {
        let mut b = [0u8; STAMP_LEN];
        b[0..4].copy_from_slice(&1u32.to_ne_bytes());
        b[4..8].copy_from_slice(&u32::from(self.tai).to_ne_bytes());
        b[8..12].copy_from_slice(&u32::from(self.mapped).to_ne_bytes());
        b[12..16].copy_from_slice(&self.stride.to_ne_bytes());
        b
    }
}

/// Where one frame of a worker's cycle carries the signature, and its sequence numbers: at lap
/// `l` of the worker's cycle the frame's flow sequence is `seq_base + l · seq_step` (mod 2^32),
/// the same number `linerate_stream::Stamp::seq` gives the engine for that frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameStamp {
    /// Offset of the 18-byte trailer: the frame's length less `signature::LEN`.
    pub trailer: u32,
    pub seq_base: u32,
    pub seq_step: u32,
}

/// `struct live_field`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveField {
    pub mask: u64,
    pub start: u64,
    pub step: u64,
    pub count: u64,
    /// 0xffff over each 16-bit word of the span that holds field bits.
    pub words: u64,
    /// Inc/dec: how far the field's index moves per frame of one worker (workers mod count).
    pub kstep: u64,
    pub span: u16,
    pub shift: u8,
    pub mode: u8,
    pub udp: u8,
    pub pad0: u8,
    pub ip_csum: u16,
    pub l4_csum: u16,
    pub pad1: u16,
    pub pad2: u32,
}

/// Bytes of one `struct live_field`.
pub const FIELD_LEN: usize = 64;
const _: () = assert!(size_of::<LiveField>() == FIELD_LEN);

impl LiveField {
    /// The field's bytes as the program sees them.
    pub fn to_bytes(self) -> [u8; FIELD_LEN] {
        let mut b = [0u8; FIELD_LEN];
        // The program reads the span in the frame's byte order, so the masks over it are stored
        // big-endian; the numbers are native.
        b[0..8].copy_from_slice(&self.mask.to_be_bytes());
        b[8..16].copy_from_slice(&self.start.to_ne_bytes());
        b[16..24].copy_from_slice(&self.step.to_ne_bytes());
        b[24..32].copy_from_slice(&self.count.to_ne_bytes());
        b[32..40].copy_from_slice(&self.words.to_be_bytes());
        b[40..48].copy_from_slice(&self.kstep.to_ne_bytes());
        b[48..50].copy_from_slice(&self.span.to_ne_bytes());
        b[50] = self.shift;
        b[51] = self.mode;
        b[52] = self.udp;
        b[54..56].copy_from_slice(&self.ip_csum.to_ne_bytes());
        b[56..58].copy_from_slice(&self.l4_csum.to_ne_bytes());
        b
    }
}

const MODE_INC: u8 = 0;
const MODE_DEC: u8 = 1;
const MODE_RANDOM: u8 = 2;

/// Turns a patch into a span instruction: the 8 bytes from the even offset at or below the
/// field, the field's bits inside them, and which 16-bit words a checksum update must cover.
/// `workers` share the frames, so each one's index of an inc/dec field moves `workers` a frame.
pub fn field(patch: &Patch, min_len: usize, workers: usize) -> Result<LiveField, LiveError> {
    let loc = &patch.loc;
    let unsupported = |why: String| LiveError::Unsupported { why };
    let o = usize::from(loc.offset);
    let w = usize::from(loc.width);
    let a = o & !1;
    let rel = o - a;
    if w == 0 || rel + w > 8 {
        return Err(unsupported(format!(
            "a {w}-byte field at offset {o} does not fit an aligned 8-byte span"
        )));
    }
    if a + 8 > min_len || a > MAX_OFFSET {
        return Err(unsupported(format!(
            "the field at offset {o} ends too close to the end of a {min_len}-byte frame"
        )));
    }
    for c in [loc.ip_csum, loc.l4_csum].into_iter().flatten() {
        if usize::from(c) + 2 > min_len || usize::from(c) > MAX_OFFSET {
            return Err(unsupported(format!(
                "the checksum at offset {c} lies outside a {min_len}-byte frame"
            )));
        }
    }
    let field_shift = 8 * (8 - rel - w) as u32;
    let bits_shift = loc.bits.trailing_zeros().min(63);
    let shift = field_shift + bits_shift;
    let span_bits = loc.bits.checked_shl(field_shift).unwrap_or(0);
    let value_bits = patch.modifier.mask.checked_shl(shift).unwrap_or(0);
    let mut words = 0u64;
    for j in rel / 2..=(rel + w - 1) / 2 {
        words |= 0xffff << (48 - 16 * j);
    }
    let count = patch.modifier.count.max(1);
    Ok(LiveField {
        mask: span_bits & value_bits,
        start: patch.modifier.start,
        step: patch.modifier.step,
        count,
        words,
        kstep: workers as u64 % count,
        span: a as u16,
        shift: shift as u8,
        mode: match patch.modifier.mode {
            VaryMode::Inc => MODE_INC,
            VaryMode::Dec => MODE_DEC,
            VaryMode::Random => MODE_RANDOM,
        },
        udp: u8::from(loc.l4_udp),
        pad0: 0,
        ip_csum: loc.ip_csum.unwrap_or(NO_CSUM),
        l4_csum: loc.l4_csum.unwrap_or(NO_CSUM),
        pad1: 0,
        pad2: 0,
    })
}

/// One worker's share, ready for the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerLayout {
    /// The page template: the worker's first longest frame.
    pub template: Vec<u8>,
    /// Frames this worker sends (None: until stopped).
    pub limit: Option<u64>,
    pub period: u32,
    pub win_off: u32,
    /// 0: every frame is the template plus the fields; no frames entries.
    pub win_len: u32,
    /// Per frame of the cycle (empty when `win_len` is 0): its length and its window bytes.
    pub frames: Vec<(u32, Vec<u8>)>,
    pub first_seq: u64,
    pub stride: u64,
    /// Signed plans: per frame of the worker's cycle, where its trailer lies and its sequence.
    pub stamps: Vec<FrameStamp>,
    /// Initial xorshift64* state, as `linerate_wire::Rng::new(seed)` holds it.
    pub rng: u64,
    /// Each field's index at the worker's first frame (`first_seq` mod count; unused for random).
    pub indices: Vec<u64>,
}

/// The whole plan compiled for the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub fields: Vec<LiveField>,
    /// The plan's frames carry the signature: the program stamps each.
    pub stamp: Option<LiveStamp>,
    pub workers: Vec<WorkerLayout>,
}

impl Layout {
    /// The program's read-only data (`struct live_ro`): the field count, every field slot, the
    /// signature (all zero without one: the verifier then drops the stamping).
    pub fn ro_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; RO_LEN];
        b[..4].copy_from_slice(&(self.fields.len() as u32).to_ne_bytes());
        for (i, f) in self.fields.iter().enumerate() {
            b[8 + i * FIELD_LEN..8 + (i + 1) * FIELD_LEN].copy_from_slice(&f.to_bytes());
        }
        if let Some(s) = self.stamp {
            b[RO_LEN - STAMP_LEN..].copy_from_slice(&s.to_bytes());
        }
        b
    }

    /// Splits `plan` between `workers` (global frame n goes to worker n mod W, as
    /// [`Cycle::for_worker`] does) with `limit` capping the total. The program sends one cycle
    /// (see `cycle_of` for lanes).
    pub fn compile(plan: &Plan, workers: usize, limit: Option<u64>) -> Result<Layout, LiveError> {
        Self::compile_cycle(&cycle_of(plan)?.0, workers, limit)
    }

    /// As `compile`, for the cycle `cycle_of` gave.
    pub fn compile_cycle(
        plan: &Cycle,
        workers: usize,
        limit: Option<u64>,
    ) -> Result<Layout, LiveError> {
        if workers == 0 || workers > MAX_WORKERS {
            return Err(LiveError::Unsupported {
                why: format!("{workers} workers; the live backend runs 1 to {MAX_WORKERS}"),
            });
        }
        if plan.patches.len() > MAX_FIELDS {
            return Err(LiveError::Unsupported {
                why: format!(
                    "{} fields vary per frame; the live backend patches at most {MAX_FIELDS}",
                    plan.patches.len()
                ),
            });
        }
        let min_len = plan.frames.iter().map(Vec::len).min().unwrap_or(0);
        let fields = plan
            .patches
            .iter()
            .map(|p| field(p, min_len, workers))
            .collect::<Result<Vec<_>, _>>()?;
        let stamp = plan.stamp.as_ref().map(|s| LiveStamp {
            tai: s.tai,
            mapped: !s.seq_map.is_empty(),
            stride: workers as u32,
        });
        if stamp.is_some()
            && plan
                .frames
                .iter()
                .any(|f| signature::offset(f.len()).is_none())
        {
            return Err(LiveError::Unsupported {
                why: format!("a frame shorter than the {}-byte signature", signature::LEN),
            });
        }
        let workers = (0..workers)
            .map(|w| worker(plan, &fields, stamp, w, workers, limit))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Layout {
            fields,
            stamp,
            workers,
        })
    }
}

/// The one cycle the program sends, and its schedule. Lanes (interleaved streams) are sent as
/// one cycle when their schedules merge ahead of time (`linerate_stream::merge`: endless lanes
/// without per-frame fields, rates with a short common period); other lanes are refused with
/// the reason.
pub fn cycle_of(plan: &Plan) -> Result<(Cow<'_, Cycle>, Option<Cow<'_, Pacing>>), LiveError> {
    match &plan.shape {
        Shape::Cycle { cycle, pacing } => {
            Ok((Cow::Borrowed(cycle), pacing.as_ref().map(Cow::Borrowed)))
        }
        Shape::Lanes(lanes) => match linerate_stream::merge(lanes) {
            Some(m) => Ok((Cow::Owned(m.cycle), Some(Cow::Owned(m.pacing)))),
            None => Err(LiveError::Unsupported {
                why: format!(
                    "{} interleaved streams whose schedules do not merge into one (a count, a field that varies per frame, or rates without a short common period): use --backend afxdp",
                    lanes.len()
                ),
            }),
        },
        // The runner sends it through rings of entries refilled as it goes (crate::ring).
        Shape::Streamed { .. } => Err(LiveError::Unsupported {
            why: "a capture streamed from its file is not one cycle of frames".into(),
        }),
    }
}

fn worker(
    plan: &Cycle,
    fields: &[LiveField],
    stamp: Option<LiveStamp>,
    w: usize,
    workers: usize,
    limit: Option<u64>,
) -> Result<WorkerLayout, LiveError> {
    let wp = plan.for_worker(w, workers, limit);
    let longest = wp.frames.iter().map(|f| f.len()).max().unwrap_or(0);
    let template = wp
        .frames
        .iter()
        .find(|f| f.len() == longest)
        .map(|f| f.to_vec())
        .unwrap_or_default();
    // Bytes where a frame differs from the template; a frame of another length needs an entry
    // even when its bytes agree (the program trims it).
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    let mut lengths_differ = false;
    for f in &wp.frames {
        lengths_differ |= f.len() != template.len();
        for (i, (a, b)) in f.iter().zip(&template).enumerate() {
            if a != b {
                lo = lo.min(i);
                hi = hi.max(i + 1);
            }
        }
    }
    // The mapped signature reads each frame's sequence from its entry, so the frames need
    // entries even when their bytes agree.
    let mapped = stamp.is_some_and(|s| s.mapped);
    if lo == usize::MAX && (lengths_differ || mapped) {
        (lo, hi) = (0, 1);
    }
    // The program stamps each frame's trailer, at its own end: a page that held a longer or
    // shorter frame keeps an old stamp where this frame has other bytes, so with lengths that
    // differ the window restores every frame's trailer. (Frames of one length are stamped over
    // the same 12 bytes every time.)
    if stamp.is_some() && lengths_differ {
        for f in &wp.frames {
            lo = lo.min(f.len() - signature::LEN);
            hi = hi.max(f.len());
        }
    }
    let mut win = (lo < hi).then_some((lo, hi));
    // The window restores the frame under the fields too, so each field's span and checksums
    // are rewritten from the base frame every time (never left from an earlier frame's patch).
    if let Some((lo, hi)) = win.as_mut() {
        for f in fields {
            let span = usize::from(f.span);
            *lo = (*lo).min(span);
            *hi = (*hi).max(span + 8);
            for c in [f.ip_csum, f.l4_csum] {
                if c != NO_CSUM {
                    *lo = (*lo).min(usize::from(c));
                    *hi = (*hi).max(usize::from(c) + 2);
                }
            }
        }
    }
    let win = win.map(|(lo, hi)| whole_words(lo, hi, template.len()));
    let (win_off, win_len, frames) = match win {
        None => (0, 0, Vec::new()),
        Some((lo, hi)) => {
            if hi - lo > MAX_WINDOW {
                return Err(LiveError::Unsupported {
                    why: format!(
                        "the frames of the plan differ over {} bytes; the live backend rewrites at most {MAX_WINDOW} per frame",
                        hi - lo
                    ),
                });
            }
            let frames = wp
                .frames
                .iter()
                .map(|f| {
                    // Past a short frame's end the page keeps the template's bytes.
                    let bytes = (lo..hi)
                        .map(|i| f.get(i).copied().unwrap_or(template[i]))
                        .collect();
                    (f.len() as u32, bytes)
                })
                .collect();
            (lo as u32, (hi - lo) as u32, frames)
        }
    };
    let stamps = match wp.stamp {
        Some(s) if stamp.is_some() => {
            // Frame k of this worker is the cycle's frame first_seq + k · stride; a lap of the
            // worker's cycle moves it on by own · stride frames, a whole number of the cycle's
            // laps, so each frame's sequence moves by the same step every lap.
            let lap = wp.frames.len() as u64 * wp.stride;
            wp.frames
                .iter()
                .enumerate()
                .map(|(k, f)| {
                    let n = wp.first_seq + k as u64 * wp.stride;
                    let base = s.seq(n, wp.period);
                    FrameStamp {
                        trailer: (f.len() - signature::LEN) as u32,
                        seq_base: base,
                        seq_step: s.seq(n + lap, wp.period).wrapping_sub(base),
                    }
                })
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(WorkerLayout {
        template,
        limit: wp.count,
        period: wp.frames.len() as u32,
        win_off,
        win_len,
        frames,
        first_seq: wp.first_seq,
        stride: wp.stride,
        stamps,
        rng: rng_state(wp.seed),
        indices: fields.iter().map(|f| wp.first_seq % f.count).collect(),
    })
}

/// The window `lo..hi` widened to whole 8-byte words, still inside a template of `len`: the
/// program copies short windows with 8-byte stores. The extra bytes are the frames' own, so
/// rewriting them changes nothing.
pub(crate) fn whole_words(lo: usize, hi: usize, len: usize) -> (usize, usize) {
    let words = (hi - lo).next_multiple_of(8);
    if words > len {
        return (lo, hi);
    }
    let hi = (lo + words).min(len);
    (hi - words, hi)
}

/// The state `linerate_wire::Rng::new(seed)` starts from (splitmix64 of the seed, never 0).
pub fn rng_state(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    if z == 0 { 0x9E37_79B9_7F4A_7C15 } else { z }
}

/// A model of the program in Rust, for tests: runs it `n` times over a pool of `pages` pages
/// recycled in turn, as the kernel's page pool does, and returns the frames it sent, as one
/// call of the program. A signed plan's frames are stamped with `clock()`, read at the first of
/// every [`STAMP_EVERY`] frames as the program reads its own.
pub fn simulate(
    layout: &Layout,
    worker: usize,
    n: u64,
    pages: usize,
    mut clock: impl FnMut() -> u64,
) -> Vec<Vec<u8>> {
    let w = &layout.workers[worker];
    let mut pool: Vec<Vec<u8>> = vec![w.template.clone(); pages.max(1)];
    let (mut rng, mut index, mut indices) = (w.rng, 0usize, w.indices.clone());
    let (mut lap, mut seq, mut stamp_ns) = (0u32, w.first_seq, 0);
    let mut out = Vec::new();
    for k in 0..n {
        if w.limit.is_some_and(|l| k >= l) {
            break;
        }
        let page = &mut pool[k as usize % pages.max(1)];
        let mut len = w.template.len();
        if w.win_len > 0 {
            let (flen, bytes) = &w.frames[index];
            let off = w.win_off as usize;
            page[off..off + bytes.len()].copy_from_slice(bytes);
            len = *flen as usize;
        }
        for (f, i) in layout.fields.iter().zip(&mut indices) {
            let k = if f.mode == MODE_RANDOM {
                rng ^= rng >> 12;
                rng ^= rng << 25;
                rng ^= rng >> 27;
                pick(rng.wrapping_mul(0x2545_F491_4F6C_DD1D), f.count)
            } else {
                let k = *i;
                *i = if k >= f.count - f.kstep {
                    k - (f.count - f.kstep)
                } else {
                    k + f.kstep
                };
                k
            };
            let v = if f.mode == MODE_DEC {
                f.start.wrapping_sub(k.wrapping_mul(f.step))
            } else {
                f.start.wrapping_add(k.wrapping_mul(f.step))
            };
            let s = usize::from(f.span);
            let old = u64::from_be_bytes(page[s..s + 8].try_into().expect("8 bytes"));
            let new = (old & !f.mask) | (v.wrapping_shl(u32::from(f.shift)) & f.mask);
            page[s..s + 8].copy_from_slice(&new.to_be_bytes());
            let (a, b) = (!old & f.words, new & f.words);
            let sum = (a >> 32) + (a & 0xffff_ffff) + (b >> 32) + (b & 0xffff_ffff);
            let mut delta = sum;
            for _ in 0..3 {
                delta = (delta & 0xffff) + (delta >> 16);
            }
            for (at, udp) in [(f.ip_csum, false), (f.l4_csum, f.udp == 1)] {
                if at == NO_CSUM {
                    continue;
                }
                let at = usize::from(at);
                let hc = u16::from_be_bytes([page[at], page[at + 1]]);
                let s = u32::from(!hc) + delta as u32;
                let mut c = !(((s & 0xffff) + (s >> 16)) as u16);
                if udp && c == 0 {
                    c = 0xffff;
                }
                page[at..at + 2].copy_from_slice(&c.to_be_bytes());
            }
        }
        if let Some(st) = layout.stamp {
            let at = w.stamps[index];
            debug_assert_eq!(at.trailer as usize, len - signature::LEN);
            let seq = if st.mapped {
                at.seq_base.wrapping_add(lap.wrapping_mul(at.seq_step))
            } else {
                let s = seq as u32;
                seq += u64::from(st.stride);
                s
            };
            if k % STAMP_EVERY == 0 {
                stamp_ns = clock();
            }
            signature::stamp(&mut page[..len], seq, stamp_ns);
        }
        out.push(page[..len].to_vec());
        index += 1;
        if index == w.period.max(1) as usize {
            index = 0;
            lap = lap.wrapping_add(1);
        }
    }
    out
}

/// [`linerate_wire::pick`] as the program computes it: the 128-bit product's high half from
/// 32-bit pieces (BPF has no 128-bit multiply).
fn pick(r: u64, count: u64) -> u64 {
    if count <= 1 << 32 {
        return ((r >> 32) * count) >> 32;
    }
    let (a_lo, a_hi, b_lo, b_hi) = (r & 0xffff_ffff, r >> 32, count & 0xffff_ffff, count >> 32);
    let (lo_lo, hi_lo, lo_hi, hi_hi) = (a_lo * b_lo, a_hi * b_lo, a_lo * b_hi, a_hi * b_hi);
    let cross = (lo_lo >> 32) + (hi_lo & 0xffff_ffff) + lo_hi;
    hi_hi + (hi_lo >> 32) + (cross >> 32)
}

/// The frames worker `worker` of `workers` must send, built the AF_XDP way: the cycle's frame
/// with every patch applied for its sequence number, and a signed plan's trailer stamped as the
/// engine's worker stamps it (`Stamp::seq`, `signature::stamp`) at `clock()`. The reference the
/// program is checked against.
pub fn expected(
    plan: &Cycle,
    worker: usize,
    workers: usize,
    n: u64,
    mut clock: impl FnMut() -> u64,
) -> Vec<Vec<u8>> {
    let wp = plan.for_worker(worker, workers, Some(n * workers as u64));
    let mut rng = linerate_wire::Rng::new(wp.seed);
    let count = wp.count.unwrap_or(n).min(n);
    (0..count)
        .map(|k| {
            let mut frame = wp.frames[(k % wp.frames.len() as u64) as usize].to_vec();
            let seq = wp.first_seq + k * wp.stride;
            for p in wp.patches {
                p.apply(&mut frame, seq, &mut rng);
            }
            if let Some(stamp) = wp.stamp {
                signature::stamp(&mut frame, stamp.seq(seq, wp.period), clock());
            }
            frame
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_stream::{Limits, StreamSpec};

    fn plan(vary: &[&str], size_mode: &str) -> Plan {
        let spec = StreamSpec {
            vary: vary.iter().map(|s| s.parse().unwrap()).collect(),
            size_mode: size_mode.parse().unwrap(),
            ..StreamSpec::default()
        };
        Plan::compile(&[spec], &Limits::default()).expect("plan")
    }

    #[test]
    fn rng_state_matches_the_wire_rng() {
        for seed in [0, 1, 42, u64::MAX] {
            let mut a = linerate_wire::Rng::new(seed);
            let mut s = rng_state(seed);
            for _ in 0..5 {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                assert_eq!(a.next_u64(), s.wrapping_mul(0x2545_F491_4F6C_DD1D));
            }
        }
    }

    /// The model of the program, on a recycled pool, sends exactly the AF_XDP frames.
    #[test]
    fn the_model_sends_the_plans_frames_on_recycled_pages() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "fixed"),
            (&["src-port:inc:1000-1099"], "fixed"),
            (
                &["src-port:random:5000-5999", "dst-port:dec:8000-9000"],
                "fixed",
            ),
            (
                &["src-ip:inc:10.0.0.1-10.0.19.255", "ttl:inc:1-200"],
                "fixed",
            ),
            (
                &["src-port:inc:1-7", "dst-port:random:1-65535"],
                "inc:64-128:4",
            ),
            (&["ip-id:inc:0-65535,mask=0x0ff0"], "fixed"),
            (&["dst-port:inc:1-4095"], "imix"),
            // Patched inc fields whose count is below the worker count, and a random field past
            // 32 bits (the program's 64-bit pick).
            (&["src-port:inc:1-65535", "dst-port:inc:7-8"], "fixed"),
            (
                &["dst-mac:random:02:00:00:00:00:01-02:00:ff:ff:ff:ff"],
                "fixed",
            ),
            (
                &["src-mac:inc:00:00:00:00:00:01-00:00:00:01:00:00"],
                "random:64-200",
            ),
        ];
        for (vary, size) in cases {
            let plan = plan(vary, size);
            for workers in [1, 2, 3] {
                let layout = Layout::compile(&plan, workers, None).expect("layout");
                for w in 0..workers {
                    let Shape::Cycle { cycle, .. } = &plan.shape else {
                        panic!("one stream is one cycle")
                    };
                    let want = expected(cycle, w, workers, 5000, || 0);
                    for pages in [1, 3, 64] {
                        let got = simulate(&layout, w, 5000, pages, || 0);
                        assert_eq!(got.len(), want.len());
                        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                            assert_eq!(
                                g, e,
                                "{vary:?} {size}: worker {w}/{workers} frame {i}, {pages} pages"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Every frame the model stamps is the frame the engine's worker stamps for the same
    /// sequence number and clock reading, on recycled pages: one flow (the counter), several
    /// flows in one cycle (streams in sequence, merged lanes: each frame's start and step),
    /// sizes that move the trailer, and fields beside it.
    #[test]
    fn the_model_stamps_the_engines_signature() {
        let signed = |vary: &[&str], size_mode: &str, count: Option<u64>, port: u16| StreamSpec {
            vary: vary.iter().map(|s| s.parse().unwrap()).collect(),
            size_mode: size_mode.parse().unwrap(),
            signature: true,
            count,
            src_port: port,
            ..StreamSpec::default()
        };
        let lane = |port, rate: &str| StreamSpec {
            rate: rate.parse().unwrap(),
            mode: linerate_stream::Mode::Interleaved,
            ..signed(&[], "fixed", None, port)
        };
        let plans = [
            ("one flow", vec![signed(&[], "fixed", None, 1)]),
            (
                "one flow, fields and sizes",
                vec![signed(
                    &["src-port:inc:1000-1099", "dst-port:random:1-65535"],
                    "inc:64-100:4",
                    None,
                    1,
                )],
            ),
            (
                "a sequence of three",
                vec![
                    StreamSpec {
                        next: linerate_stream::Next::Next,
                        ..signed(&[], "fixed", Some(5), 1)
                    },
                    StreamSpec {
                        next: linerate_stream::Next::Next,
                        ..signed(&[], "inc:64-80:2", Some(3), 2)
                    },
                    StreamSpec {
                        next: linerate_stream::Next::GotoFirst,
                        ..signed(&["dst-port:inc:1-4"], "fixed", Some(7), 3)
                    },
                ],
            ),
            (
                "three merged lanes",
                vec![lane(1, "20k"), lane(2, "10k"), lane(3, "5k")],
            ),
        ];
        for (name, specs) in plans {
            let plan = Plan::compile(&specs, &Limits::default()).expect(name);
            let (cycle, _) = cycle_of(&plan).expect(name);
            let mapped = !cycle.stamp.as_ref().expect("signed").seq_map.is_empty();
            assert_eq!(mapped, specs.len() > 1, "{name}");
            for workers in [1, 2, 3] {
                let layout = Layout::compile_cycle(&cycle, workers, None).expect(name);
                assert_eq!(layout.stamp.map(|s| s.mapped), Some(mapped));
                for w in 0..workers {
                    // The engine reads a time per frame here; the model one per bulk.
                    let mut k = 0u64;
                    let want = expected(&cycle, w, workers, 3000, || {
                        k += 1;
                        (1 << 47) + (k - 1) / STAMP_EVERY * 997
                    });
                    for pages in [1, 3, 64] {
                        let mut bulk = 0u64;
                        let got = simulate(&layout, w, 3000, pages, || {
                            bulk += 1;
                            (1 << 47) + (bulk - 1) * 997
                        });
                        assert_eq!(got.len(), want.len());
                        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                            assert_eq!(
                                g, e,
                                "{name}: worker {w}/{workers} frame {i}, {pages} pages"
                            );
                            assert!(signature::parse(g).is_some());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_programs_pick_is_the_wire_crates() {
        let mut rng = linerate_wire::Rng::new(5);
        for count in [1, 1000, 1 << 32, (1 << 32) + 1, 1 << 40, 1 << 48, u64::MAX] {
            for r in [0, u64::MAX, 1 << 63, 12345]
                .into_iter()
                .chain((0..1000).map(|_| rng.next_u64()))
            {
                assert_eq!(
                    pick(r, count),
                    linerate_wire::pick(r, count),
                    "{r} of {count}"
                );
            }
        }
    }

    #[test]
    fn limits_split_exactly() {
        let plan = plan(&[], "fixed");
        let layout = Layout::compile(&plan, 2, Some(11)).unwrap();
        assert_eq!(layout.workers[0].limit, Some(6));
        assert_eq!(layout.workers[1].limit, Some(5));
        assert_eq!(layout.workers[0].win_len, 0);
        assert!(Layout::compile(&plan, 0, None).is_err());
    }

    #[test]
    fn lanes_are_sent_merged_or_refused_where_the_layout_is_built() {
        let lane = |port, count| StreamSpec {
            src_port: port,
            rate: "1k".parse().unwrap(),
            count,
            mode: linerate_stream::Mode::Interleaved,
            ..StreamSpec::default()
        };
        let plan = Plan::compile(&[lane(1, None), lane(2, None)], &Limits::default()).unwrap();
        let layout = Layout::compile(&plan, 1, None).unwrap();
        // Both lanes' frames, due together every millisecond.
        let (cycle, pacing) = cycle_of(&plan).unwrap();
        assert_eq!(cycle.frames.len(), 2);
        assert_eq!(pacing.unwrap().pps(), 2000.0);
        assert_eq!(layout.workers[0].frames.len(), 2);
        let counted =
            Plan::compile(&[lane(1, Some(5)), lane(2, None)], &Limits::default()).unwrap();
        let err = Layout::compile(&counted, 1, None).unwrap_err();
        assert!(err.is_usage());
        let text = err.to_string();
        assert!(
            text.contains("2 interleaved streams") && text.contains("afxdp"),
            "{text}"
        );
    }
}
