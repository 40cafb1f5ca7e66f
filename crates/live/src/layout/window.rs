//! One worker's share of the program's data: its template, the window of bytes where its
//! frames differ from the template (widened over every field and checksum the program patches),
//! each frame's entry, and a signed plan's stamps.

use linerate_stream::WorkerPlan;
use linerate_wire::signature;

use super::{
    FrameStamp, LiveField, LiveStamp, MAX_WINDOW, NO_CSUM, WorkerLayout, model::rng_state,
};
use crate::LiveError;

/// Worker `w`'s share of `plan` (of `workers`, `limit` capping the total).
pub(super) fn worker(
    plan: &linerate_stream::Cycle,
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
    let (win_off, win_len, frames) = match window(&wp, &template, fields, stamp) {
        None => (0, 0, Vec::new()),
        Some((lo, hi)) => (
            lo as u32,
            (hi - lo) as u32,
            entries(&wp, &template, lo, hi)?,
        ),
    };
    Ok(WorkerLayout {
        limit: wp.count,
        period: wp.frames.len() as u32,
        win_off,
        win_len,
        frames,
        first_seq: wp.first_seq,
        stride: wp.stride,
        stamps: frame_stamps(&wp, stamp),
        rng: rng_state(wp.seed),
        indices: fields.iter().map(|f| wp.first_seq % f.count).collect(),
        template,
    })
}

/// The bytes `lo..hi` the program rewrites in every frame (whole 8-byte words), None when every
/// frame is the template plus the fields.
fn window(
    wp: &WorkerPlan<'_>,
    template: &[u8],
    fields: &[LiveField],
    stamp: Option<LiveStamp>,
) -> Option<(usize, usize)> {
    // Bytes where a frame differs from the template; a frame of another length needs an entry
    // even when its bytes agree (the program trims it).
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    let mut lengths_differ = false;
    for f in &wp.frames {
        lengths_differ |= f.len() != template.len();
        for (i, (a, b)) in f.iter().zip(template).enumerate() {
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
    win.map(|(lo, hi)| whole_words(lo, hi, template.len()))
}

/// Per frame, its length and its bytes over the window `lo..hi`.
fn entries(
    wp: &WorkerPlan<'_>,
    template: &[u8],
    lo: usize,
    hi: usize,
) -> Result<Vec<(u32, Vec<u8>)>, LiveError> {
    if hi - lo > MAX_WINDOW {
        return Err(LiveError::Unsupported {
            why: format!(
                "the frames of the plan differ over {} bytes; the live backend rewrites at most {MAX_WINDOW} per frame",
                hi - lo
            ),
        });
    }
    Ok(wp
        .frames
        .iter()
        .map(|f| {
            // Past a short frame's end the page keeps the template's bytes.
            let bytes = (lo..hi)
                .map(|i| f.get(i).copied().unwrap_or(template[i]))
                .collect();
            (f.len() as u32, bytes)
        })
        .collect())
}

/// A signed plan's stamps: per frame of the worker's cycle, where its trailer lies and its
/// sequence numbers (empty unsigned).
fn frame_stamps(wp: &WorkerPlan<'_>, stamp: Option<LiveStamp>) -> Vec<FrameStamp> {
    match wp.stamp {
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
    }
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
