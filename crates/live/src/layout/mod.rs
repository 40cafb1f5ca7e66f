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
/// signature, the word cycles' switch and offset, how the program finds a worker's entry.
pub const RO_LEN: usize = 8 + MAX_FIELDS * FIELD_LEN + STAMP_LEN + 8 + 8;
/// Frames of a worker's cycle held as window words in its worker entry at most (`WORDS`).
pub const WORDS: usize = 16;
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
    /// Every worker's window is one 8-byte word at this offset (`struct live_words`): the
    /// program writes the frame's word from the worker entry (`WorkerLayout::words`) instead of
    /// copying its frame entry's window.
    pub words: Option<u32>,
    /// No field, no signature, and windows of one word (`words`) or none: the plan is sent by
    /// `live_tx_words`, the program with nothing else in it ([`Layout::program`]).
    pub lean: bool,
}

impl Layout {
    /// The program's read-only data (`struct live_ro`): the field count, every field slot, the
    /// signature (all zero without one: the verifier then drops the stamping), the word cycles,
    /// and `by_cpu`: each worker's entry is its core's, found by the CPU the program runs on.
    pub fn ro_bytes(&self, by_cpu: bool) -> Vec<u8> {
        let mut b = vec![0u8; RO_LEN];
        b[..4].copy_from_slice(&(self.fields.len() as u32).to_ne_bytes());
        for (i, f) in self.fields.iter().enumerate() {
            b[8 + i * FIELD_LEN..8 + (i + 1) * FIELD_LEN].copy_from_slice(&f.to_bytes());
        }
        let stamp_at = 8 + MAX_FIELDS * FIELD_LEN;
        if let Some(s) = self.stamp {
            b[stamp_at..stamp_at + STAMP_LEN].copy_from_slice(&s.to_bytes());
        }
        let words_at = stamp_at + STAMP_LEN;
        if let Some(off) = self.words {
            b[words_at..words_at + 4].copy_from_slice(&1u32.to_ne_bytes());
            b[words_at + 4..words_at + 8].copy_from_slice(&off.to_ne_bytes());
        }
        b[words_at + 8..words_at + 12].copy_from_slice(&u32::from(by_cpu).to_ne_bytes());
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
        let words = word_cycles(&workers, stamp);
        let lean = fields.is_empty()
            && stamp.is_none()
            && (words.is_some() || workers.iter().all(|w| w.win_len == 0));
        Ok(Layout {
            words,
            lean,
            fields,
            stamp,
            workers,
        })
    }

    /// The program of `bpf/live_tx.bpf.c` that sends this layout.
    pub fn program(&self) -> &'static str {
        if self.lean {
            "live_tx_words"
        } else {
            "live_tx"
        }
    }
}

/// The offset of the one window word every worker's frames differ in, when the program can
/// write it from the worker entry: windows of 8 bytes at one offset, cycles of `WORDS` frames at
/// most, every frame as long as its template (nothing to trim) and no mapped signature (whose
/// sequences live in the frame entries).
fn word_cycles(workers: &[WorkerLayout], stamp: Option<LiveStamp>) -> Option<u32> {
    let off = workers.first()?.win_off;
    let fits = |w: &WorkerLayout| {
        w.win_len == 8
            && w.win_off == off
            && w.frames.len() <= WORDS
            && w.frames
                .iter()
                .all(|(len, _)| *len as usize == w.template.len())
    };
    (!stamp.is_some_and(|s| s.mapped) && workers.iter().all(fits)).then_some(off)
}

impl WorkerLayout {
    /// The window word of each frame of the cycle as the program stores it (the frame's bytes,
    /// read in native order), for a layout whose `words` is set.
    pub fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.frames.iter().map(|(_, bytes)| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[..8]);
            u64::from_ne_bytes(w)
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
            None => Err(unmerged(lanes.len())),
        },
        // The runner sends it through rings of entries refilled as it goes (crate::ring).
        Shape::Streamed { .. } => Err(LiveError::Unsupported {
            why: "a capture streamed from its file is not one cycle of frames".into(),
        }),
    }
}

/// The refusal of `lanes` interleaved streams that do not merge into one cycle.
pub fn unmerged(lanes: usize) -> LiveError {
    LiveError::Unsupported {
        why: format!(
            "{lanes} interleaved streams whose schedules do not merge into one (a count, a field that varies per frame, or rates without a short common period): use the afxdp backend"
        ),
    }
}

mod model;
#[cfg(test)]
mod tests;
mod window;

pub use model::{expected, rng_state, simulate};
pub(crate) use window::whole_words;
use window::worker;
