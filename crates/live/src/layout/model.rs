//! A model of the program in Rust, and the frames it must send built the AF_XDP way: what the
//! tests and benchmarks check the program against.

use linerate_stream::Cycle;
use linerate_wire::signature;

use super::*;

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
pub(super) fn pick(r: u64, count: u64) -> u64 {
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
