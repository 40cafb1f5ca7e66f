//! A capture's frames left in its file, mapped read-only: a replay too large to load into the
//! port's buffers sends them from there, each copied into a buffer as its batch is sent. What
//! stays in memory is 8 bytes a frame (where it lies in the file), not the frame. The map itself
//! is the caller's (`linerate-files`), seen here only as bytes: this crate does no I/O.

use std::fmt;

use linerate_wire::MacAddr;

/// Most frames a streamed capture may hold, whatever the file's size: 8 bytes of index each
/// (1 GiB at this cap), plus 8 of timestamps while it loads and plans and 8 of schedule when it
/// is paced — 2 GiB at the peak of loading, 3 GiB of planning a paced one.
pub const MAX_STREAMED_FRAMES: usize = 1 << 27;

/// Bits of a span that hold the frame's length (frames up to 1 MiB); the other 44 hold its
/// offset in the file (files up to 16 TiB).
const LEN_BITS: u32 = 20;
const LEN_MASK: u64 = (1 << LEN_BITS) - 1;

/// A frame's place in the file as one word; None when it does not fit.
pub(crate) fn pack(at: usize, len: usize) -> Option<u64> {
    let (at, len) = (at as u64, len as u64);
    (len <= LEN_MASK && at >> (64 - LEN_BITS) == 0).then_some((at << LEN_BITS) | len)
}

/// (offset, length) of a packed span.
#[inline]
pub(crate) fn unpack(span: u64) -> (usize, usize) {
    ((span >> LEN_BITS) as usize, (span & LEN_MASK) as usize)
}

/// The bytes of a capture file whose frames are streamed from it, held by whoever mapped it.
pub trait FileBytes: Send + Sync {
    /// The whole file, the same bytes at every call: the frames' places in it are checked
    /// against them once, when the frames are indexed.
    fn bytes(&self) -> &[u8];

    /// The file was cut short (truncated by another process) while mapped: bytes read from
    /// past its new end since are zeros, not the file's.
    fn cut_short(&self) -> bool {
        false
    }
}

/// A file already in memory, which nothing can cut short.
impl FileBytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// A capture file mapped read-only, with where each frame lies in it and the addresses a
/// replay writes over its own.
pub struct MappedFrames {
    map: Box<dyn FileBytes>,
    /// Per frame in file order, its offset and length (`pack`).
    spans: Vec<u64>,
    max_len: usize,
    bytes: u64,
    pub(crate) dst_mac: Option<MacAddr>,
    pub(crate) src_mac: Option<MacAddr>,
}

impl fmt::Debug for MappedFrames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedFrames")
            .field("file_bytes", &self.map.bytes().len())
            .field("frames", &self.spans.len())
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl MappedFrames {
    /// Frames at `spans` (`pack`ed) of `map`, `max_len` the longest and `bytes` their sum.
    pub(crate) fn new(
        map: Box<dyn FileBytes>,
        spans: Vec<u64>,
        max_len: usize,
        bytes: u64,
    ) -> Result<Self, String> {
        let file_len = map.bytes().len();
        if let Some(&s) = spans.iter().find(|&&s| {
            let (at, len) = unpack(s);
            at + len > file_len
        }) {
            let (at, len) = unpack(s);
            return Err(format!(
                "a frame of {len} bytes at byte {at} lies beyond the file's end"
            ));
        }
        Ok(Self {
            map,
            spans,
            max_len,
            bytes,
            dst_mac: None,
            src_mac: None,
        })
    }

    /// The file was cut short (truncated by another process) while mapped: bytes read from
    /// past its new end since are zeros, and what was copied since the last check must not be
    /// sent. Checked by the sender after each batch it copies (the map's holder knows: on
    /// Linux, `linerate-files`' SIGBUS guard; elsewhere never).
    #[inline]
    pub fn cut_short(&self) -> bool {
        self.map.cut_short()
    }

    /// Frames in the capture.
    pub fn len(&self) -> u64 {
        self.spans.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Longest frame (without FCS).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Bytes of frames, FCS excluded.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Frame `i` as the file holds it (before the replay's address rewrite).
    #[inline]
    pub fn raw(&self, i: usize) -> &[u8] {
        let (at, len) = unpack(self.spans[i]);
        &self.map.bytes()[at..at + len]
    }

    /// Length of frame `i`.
    #[inline]
    pub fn len_of(&self, i: usize) -> usize {
        unpack(self.spans[i]).1
    }

    /// Copies frame `i` into `buffer`, with the replay's addresses written over its own, and
    /// returns its length. `buffer` must hold `max_len` bytes.
    #[inline]
    pub fn copy_into(&self, i: usize, buffer: &mut [u8]) -> usize {
        let frame = self.raw(i);
        buffer[..frame.len()].copy_from_slice(frame);
        if let Some(mac) = self.dst_mac {
            buffer[..6].copy_from_slice(&mac);
        }
        if let Some(mac) = self.src_mac {
            buffer[6..12].copy_from_slice(&mac);
        }
        frame.len()
    }

    /// Bytes `at..at + out.len()` of frame `i` as sent (the replay's addresses written over the
    /// file's), as far as the frame reaches: the rest of `out` is left as it was. Returns the
    /// frame's length. What a port that keeps only the bytes where frames differ copies.
    #[inline]
    pub fn copy_part(&self, i: usize, at: usize, out: &mut [u8]) -> usize {
        let frame = self.raw(i);
        let end = (at + out.len()).min(frame.len());
        if at < end {
            out[..end - at].copy_from_slice(&frame[at..end]);
            for (mac, from) in [(self.dst_mac, 0), (self.src_mac, 6)] {
                let Some(mac) = mac else { continue };
                let (lo, hi) = (from.max(at), (from + 6).min(end));
                if lo < hi {
                    out[lo - at..hi - at].copy_from_slice(&mac[lo - from..hi - from]);
                }
            }
        }
        frame.len()
    }

    /// Where frame `i` as sent differs from `reference` over the length they share, `skip`
    /// aside (bytes the caller already rewrites): the lowest differing offset and one past the
    /// highest, None when they agree.
    pub fn differs(
        &self,
        i: usize,
        reference: &[u8],
        skip: std::ops::Range<usize>,
    ) -> Option<(usize, usize)> {
        let frame = self.raw(i);
        let n = frame.len().min(reference.len());
        // The first 12 bytes as sent: the addresses may be the replay's.
        let mut head = [0u8; 12];
        let h = n.min(12);
        self.copy_part(i, 0, &mut head[..h]);
        let mut found: Option<(usize, usize)> = None;
        let mut note = |lo: usize, hi: usize| {
            found = Some(found.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        };
        let segments = if skip.start < skip.end {
            [(0, skip.start.min(n)), (skip.end.min(n), n)]
        } else {
            [(0, n), (n, n)]
        };
        for (s, e) in segments {
            // The head byte by byte, the rest as slices (equal ones in one comparison).
            for j in s..e.min(h) {
                if head[j] != reference[j] {
                    note(j, j + 1);
                }
            }
            let s = s.max(h);
            if s < e && frame[s..e] != reference[s..e] {
                let (a, b) = (&frame[s..e], &reference[s..e]);
                let first = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(0);
                let last = a.iter().zip(b).rposition(|(x, y)| x != y).unwrap_or(0);
                note(s + first, s + last + 1);
            }
        }
        found
    }

    /// Worker `worker` of `workers`'s share: frames `worker, worker + workers, …` of the capture
    /// repeated, `count` in all at most (the plan's count, capped by `limit`).
    pub fn for_worker(
        &self,
        worker: usize,
        workers: usize,
        count: Option<u64>,
        limit: Option<u64>,
    ) -> StreamShare<'_> {
        let (w, n) = (worker as u64, workers.max(1) as u64);
        let total = match (count, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        StreamShare {
            frames: self,
            first_seq: w,
            stride: n,
            count: total.map(|t| if t > w { (t - w).div_ceil(n) } else { 0 }),
        }
    }
}

/// One worker's share of a streamed capture: frames `first_seq, first_seq + stride, …` of the
/// run, frame `k` being the capture's frame `k mod len`.
#[derive(Debug, Clone, Copy)]
pub struct StreamShare<'a> {
    pub frames: &'a MappedFrames,
    pub first_seq: u64,
    pub stride: u64,
    /// Frames this worker sends (None: until stopped).
    pub count: Option<u64>,
}
