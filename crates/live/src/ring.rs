//! A capture streamed from its mapped file on the live backend. The program reads a worker's
//! frames from its entries of `live_frames`, one after another by the worker's `index`, round a
//! ring of `entries`; a worker's thread calls the program synchronously, so before each call of
//! `k < entries` frames it copies the next `k` frames into the entries from `index` on, and
//! after it moves on by as many entries as the index advanced. Nothing else writes them
//! meanwhile, and frames the program did not take (a stop, the limit) are written again before
//! the next call, so the ring and the program never disagree.
//!
//! The page the program writes a frame into starts as the template (the capture's first
//! longest frame, addresses rewritten) and is then recycled holding an earlier frame, so the
//! window the program copies must cover every byte where any frame sent so far differs from the
//! template: it starts empty and only widens, over the differences of each call's frames as they
//! are copied (a capture whose frames differ in a few bytes copies those bytes and no more, as a
//! loaded one does). Frames longer than the program's longest window are refused up front.

use linerate_stream::{MappedFrames, StreamShare};

use crate::LiveError;
use crate::layout::{FRAME_HEADER, Layout, MAX_WINDOW, MAX_WORKERS, WorkerLayout, whole_words};

/// Ring entries per worker: calls of up to 4095 frames (some 0.3 ms at 12 Mpps), which keeps
/// the call's fixed cost (~15 µs) small beside its frames, while the entries the call touches
/// (two cache lines each) still fit in the L2 cache the user-space copy just filled.
pub const RING_ENTRIES: u32 = 4096;
/// Most bytes of entries all workers' rings hold together (an entry is a whole
/// `struct live_frame`, 2064 bytes): 64 workers get 508 entries each.
const RING_BUDGET: usize = 64 << 20;
/// Bytes of one entry of `live_frames` (`struct live_frame`), as the array map lays them out.
pub const ENTRY_LEN: usize = FRAME_HEADER + MAX_WINDOW;

/// Entries of each worker's ring for `workers` workers.
pub fn ring_entries(workers: usize) -> u32 {
    let per = RING_BUDGET / (workers.max(1) * ENTRY_LEN);
    per.min(RING_ENTRIES as usize).max(2) as u32
}

/// The page template of a streamed capture: its first longest frame as sent. Refused when a
/// frame is longer than the program's window.
pub fn template(frames: &MappedFrames) -> Result<Vec<u8>, LiveError> {
    let longest = frames.max_len();
    if longest > MAX_WINDOW {
        return Err(LiveError::Unsupported {
            why: format!(
                "the capture holds frames of {longest} bytes; the live backend streams frames of up to {MAX_WINDOW}: use the afxdp or afpacket backend"
            ),
        });
    }
    let first = (0..frames.len() as usize)
        .find(|&i| frames.len_of(i) == longest)
        .ok_or_else(|| LiveError::Unsupported {
            why: "an empty capture".into(),
        })?;
    let mut t = vec![0u8; longest];
    frames.copy_into(first, &mut t);
    Ok(t)
}

/// The program's layout for a streamed capture: no fields, no signature (a capture's frames
/// carry none), and per worker the template, its share of the count and a ring of `entries`
/// as its cycle, written as the run goes (the window starts empty, `Ring::widen`).
pub fn layout(
    frames: &MappedFrames,
    template: &[u8],
    workers: usize,
    count: Option<u64>,
    limit: Option<u64>,
    entries: u32,
) -> Result<Layout, LiveError> {
    if workers == 0 || workers > MAX_WORKERS {
        return Err(LiveError::Unsupported {
            why: format!("{workers} workers; the live backend runs 1 to {MAX_WORKERS}"),
        });
    }
    let workers = (0..workers)
        .map(|w| {
            let share = frames.for_worker(w, workers, count, limit);
            WorkerLayout {
                template: template.to_vec(),
                limit: share.count,
                period: entries,
                win_off: 0,
                win_len: 0,
                frames: Vec::new(),
                first_seq: share.first_seq,
                stride: share.stride,
                stamps: Vec::new(),
                rng: 0,
                indices: Vec::new(),
            }
        })
        .collect();
    // Its windows change from call to call: no word cycles, and live_tx copies them.
    Ok(Layout {
        fields: Vec::new(),
        stamp: None,
        workers,
        words: None,
        lean: false,
    })
}

/// One worker's ring: which capture frame goes into the entry at the program's index, and the
/// window so far.
#[derive(Debug)]
pub struct Ring<'a> {
    frames: &'a MappedFrames,
    template: &'a [u8],
    entries: u32,
    /// The capture frame the program sends next, the step to the one after, the capture's length.
    next: u64,
    step: u64,
    len: u64,
    /// Frames in the worker's lap (its frames repeat after that many), frames the program has
    /// taken, and frames from the start that `widen` has checked.
    lap: u64,
    taken: u64,
    checked: u64,
    /// Bytes where a frame differed from the template (whole words, `whole_words`).
    window: Option<(usize, usize)>,
}

impl<'a> Ring<'a> {
    pub fn new(share: &StreamShare<'a>, template: &'a [u8], entries: u32) -> Self {
        let len = share.frames.len().max(1);
        Ring {
            frames: share.frames,
            template,
            entries: entries.max(2),
            next: share.first_seq % len,
            step: share.stride % len,
            len,
            lap: len / gcd(share.stride % len, len),
            taken: 0,
            checked: 0,
            window: None,
        }
    }

    /// Most frames one call may take: one entry less than the ring, so that how far the index
    /// moved says how many were taken.
    pub fn most(&self) -> u64 {
        u64::from(self.entries - 1)
    }

    /// The capture frame `j` frames after the next.
    fn frame(&self, j: u64) -> usize {
        ((self.next + j % self.len * self.step) % self.len) as usize
    }

    /// Widens the window over the next `k` frames and returns it as the program reads it
    /// (`win_off`, `win_len`; 0 while every frame is the template).
    ///
    /// A frame checked once fits every later window (it only widens), so each frame of the
    /// worker's lap is checked once: the next `k` frames from the first not yet checked, none
    /// once the whole lap has been.
    pub fn widen(&mut self, k: u64) -> (u32, u32) {
        let tlen = self.template.len();
        let from = self.checked.saturating_sub(self.taken);
        let to = k.min(self.lap.saturating_sub(self.taken));
        self.checked = self.checked.max((self.taken + to).min(self.lap));
        for j in from..to {
            let i = self.frame(j);
            let (skip_lo, skip_hi) = self.window.unwrap_or((0, 0));
            let mut found = self.frames.differs(i, self.template, skip_lo..skip_hi);
            // Another length needs an entry too, even with the bytes the template's.
            if found.is_none() && self.window.is_none() && self.frames.len_of(i) != tlen {
                found = Some((0, 1));
            }
            if let Some((lo, hi)) = found {
                let (lo, hi) = match self.window {
                    Some((a, b)) => (a.min(lo), b.max(hi)),
                    None => (lo, hi),
                };
                self.window = Some(whole_words(lo, hi, tlen));
            }
        }
        self.window
            .map_or((0, 0), |(lo, hi)| (lo as u32, (hi - lo) as u32))
    }

    /// Writes the next `k` frames (`k ≤ most()`) into the ring's entries (`ring`: this worker's
    /// `entries` entries of `live_frames`, `ENTRY_LEN` bytes each) from position `at` on: each
    /// entry's length and its window's bytes. Nothing is written while the window is empty: the
    /// program then reads no entry.
    pub fn write(&self, at: u32, k: u64, ring: &mut [u8]) {
        let Some((lo, hi)) = self.window else {
            return;
        };
        assert!(
            ring.len() >= self.entries as usize * ENTRY_LEN,
            "a ring of {} entries",
            self.entries
        );
        let mut n = (at % self.entries) as usize;
        for j in 0..k.min(self.most()) {
            let e = &mut ring[n * ENTRY_LEN..(n + 1) * ENTRY_LEN];
            let len = self.frames.copy_part(
                self.frame(j),
                lo,
                &mut e[FRAME_HEADER..FRAME_HEADER + hi - lo],
            );
            e[..4].copy_from_slice(&(len as u32).to_ne_bytes());
            n += 1;
            if n == self.entries as usize {
                n = 0;
            }
        }
    }

    /// The capture was cut short under its map since the ring was made: what was written
    /// since the last check may hold zeros for the file's vanished bytes.
    pub fn cut_short(&self) -> bool {
        self.frames.cut_short()
    }

    /// The program's index moved from `before` to `after`: as many frames were taken.
    pub fn advance(&mut self, before: u32, after: u32) -> u64 {
        let taken =
            u64::from((after % self.entries + self.entries - before % self.entries) % self.entries);
        self.next = self.frame(taken) as u64;
        self.taken += taken;
        taken
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use linerate_stream::{Capture, CaptureIndex, Replay, Shape};

    use super::*;
    use linerate_port::Usage;

    /// A capture streamed from `file`'s bytes, as from its map.
    fn stream(file: Vec<u8>, mtu: u32) -> Capture {
        CaptureIndex::read(&file, mtu)
            .unwrap()
            .stream(Box::new(file))
            .unwrap()
    }

    /// Writes `frames` as a classic pcap file and streams it back, addresses rewritten.
    fn streamed(frames: &[Vec<u8>], name: &str) -> Arc<MappedFrames> {
        let mut file = Vec::new();
        for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
            // magic, version 2.4 (two u16), thiszone, sigfigs, snaplen, Ethernet
            if v == 0x0004_0002 {
                file.extend_from_slice(&2u16.to_ne_bytes());
                file.extend_from_slice(&4u16.to_ne_bytes());
            } else {
                file.extend_from_slice(&v.to_ne_bytes());
            }
        }
        for (k, f) in frames.iter().enumerate() {
            for v in [0, k as u32, f.len() as u32, f.len() as u32] {
                file.extend_from_slice(&v.to_ne_bytes());
            }
            file.extend_from_slice(f);
        }
        let capture = stream(file, 1500);
        let replay = Replay {
            dst_mac: Some([2, 0, 0, 0, 0, 0xd]),
            src_mac: Some([2, 0, 0, 0, 0, 0x5]),
            ..Replay::default()
        };
        match capture.plan(name, &replay).unwrap().shape {
            Shape::Streamed { frames, .. } => frames,
            _ => panic!("not streamed"),
        }
    }

    /// The program as the ring sees it, in Rust: each run takes the entry at the index (its
    /// window over a page recycled from the pool, the frame trimmed to the entry's length) or,
    /// with an empty window, the template.
    struct Program {
        ring: Vec<u8>,
        entries: u32,
        index: u32,
        pages: Vec<Vec<u8>>,
        runs: usize,
    }

    impl Program {
        fn run(&mut self, window: (u32, u32), template: &[u8]) -> Vec<u8> {
            let pages = self.pages.len();
            let page = &mut self.pages[self.runs % pages];
            self.runs += 1;
            let mut len = template.len();
            let (off, wl) = (window.0 as usize, window.1 as usize);
            if wl > 0 {
                let e = &self.ring[self.index as usize * ENTRY_LEN..];
                page[off..off + wl].copy_from_slice(&e[FRAME_HEADER..FRAME_HEADER + wl]);
                len = u32::from_ne_bytes(e[..4].try_into().unwrap()) as usize;
            }
            self.index = (self.index + 1) % self.entries;
            page[..len].to_vec()
        }
    }

    /// Calls of every size, cut short at random (a stop, the limit) and left whole, on a pool
    /// of recycled pages: the frames the program builds are the capture's, as sent, in the
    /// worker's order (w, w + W, … round the capture), byte for byte, lap after lap; and the
    /// window only covers bytes that differ.
    #[test]
    fn the_ring_hands_the_program_the_workers_frames_in_order() {
        let base: Vec<u8> = (0..100u8).collect();
        let vary = |i: usize, len: usize| {
            let mut f = base[..len].to_vec();
            f[40] = i as u8;
            f
        };
        // Frames that differ in one byte, then (frame 9 on) a longer stretch and other lengths
        // too: the window widens mid-run and must still restore what earlier frames left.
        let mut frames: Vec<Vec<u8>> = (0..9).map(|i| vary(i, 80)).collect();
        for i in 9..23 {
            let mut f = vary(i, 60 + i);
            f[20 + i] ^= 0xff;
            frames.push(f);
        }
        let one_byte = streamed(&frames[..9], "one");
        let mixed = streamed(&frames, "mixed");
        let same = streamed(&vec![base.clone(); 3], "same");
        let mut rng = linerate_wire::Rng::new(7);
        for (name, capture) in [("one byte", &one_byte), ("mixed", &mixed), ("same", &same)] {
            let template = template(capture).unwrap();
            for workers in [1usize, 3] {
                for entries in [2u32, 5, 16] {
                    let w = workers - 1;
                    let share = capture.for_worker(w, workers, None, None);
                    let mut ring = Ring::new(&share, &template, entries);
                    let mut program = Program {
                        ring: vec![0u8; entries as usize * ENTRY_LEN],
                        entries,
                        index: 0,
                        pages: vec![template.clone(); 3],
                        runs: 0,
                    };
                    let mut sent = Vec::new();
                    let mut window = (0, 0);
                    while sent.len() < 200 {
                        let k = 1 + rng.next_u64() % ring.most();
                        window = ring.widen(k);
                        let before = program.index;
                        ring.write(before, k, &mut program.ring);
                        let taken = if rng.next_u64().is_multiple_of(3) {
                            rng.next_u64() % (k + 1)
                        } else {
                            k
                        };
                        for _ in 0..taken {
                            sent.push(program.run(window, &template));
                        }
                        assert_eq!(ring.advance(before, program.index), taken);
                    }
                    for (n, got) in sent.iter().enumerate() {
                        let i = ((w + n * workers) as u64 % capture.len()) as usize;
                        let mut want = vec![0u8; capture.max_len()];
                        let len = capture.copy_into(i, &mut want);
                        assert_eq!(
                            got[..],
                            want[..len],
                            "{name}: worker {w}/{workers}, {entries} entries, frame {n}"
                        );
                    }
                    // Each frame of the worker's lap was checked, once.
                    assert_eq!(ring.checked, ring.lap, "{name}: worker {w}/{workers}");
                    assert_eq!(ring.lap * gcd(workers as u64, capture.len()), capture.len());
                    let (off, wl) = (window.0 as usize, window.1 as usize);
                    match name {
                        "same" => assert_eq!(wl, 0, "{name}: nothing differs"),
                        "one byte" => {
                            assert!(off <= 40 && off + wl > 40 && wl == 8, "{name}: {off}+{wl}")
                        }
                        _ => assert!(
                            off <= 29 && off + wl >= 43 && wl % 8 == 0,
                            "{name}: {off}+{wl}"
                        ),
                    }
                }
            }
        }
    }

    #[test]
    fn rings_fit_the_budget_and_long_frames_are_refused() {
        assert_eq!(ring_entries(1), RING_ENTRIES);
        assert_eq!(ring_entries(2), RING_ENTRIES);
        let per64 = ring_entries(64);
        assert!((2..RING_ENTRIES).contains(&per64), "{per64}");
        assert!(64 * per64 as usize * ENTRY_LEN <= RING_BUDGET);
        let mut long = vec![0u8; MAX_WINDOW + 1];
        long[12] = 0x08;
        let mut file = Vec::new();
        file.extend_from_slice(&0xa1b2_c3d4u32.to_ne_bytes());
        file.extend_from_slice(&2u16.to_ne_bytes());
        file.extend_from_slice(&4u16.to_ne_bytes());
        for v in [
            0u32,
            0,
            65535,
            1,
            0,
            0,
            long.len() as u32,
            long.len() as u32,
        ] {
            file.extend_from_slice(&v.to_ne_bytes());
        }
        file.extend_from_slice(&long);
        let capture = stream(file, 9000);
        let Shape::Streamed { frames, .. } =
            capture.plan("long", &Replay::default()).unwrap().shape
        else {
            panic!("not streamed")
        };
        let err = template(&frames).unwrap_err();
        assert!(err.is_usage());
        assert!(err.to_string().contains("2049 bytes"), "{err}");
    }
}
