//! How a variable field moves from frame to frame (Ostinato's modifiers, TRex's field engine).

use crate::FieldLoc;

/// Small fast PRNG (xorshift64*), seeded; its state is never 0.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // splitmix64 spreads nearby seeds apart; xorshift alone keeps their low bits correlated.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x9E37_79B9_7F4A_7C15 } else { z })
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Maps 64 random bits `r` onto `0..count` with Lemire's multiply-shift, no division (a 64-bit
/// divide costs more than the rest of a patch): on the high 32 bits while `count` fits in 32 bits,
/// so that BPF (no 128-bit multiply) needs one multiply for every field up to an IPv4 address,
/// and on all 64 bits beyond. The live backend's program computes the same (bpf/live_tx.bpf.c).
#[inline]
pub fn pick(r: u64, count: u64) -> u64 {
    if count <= 1 << 32 {
        ((r >> 32) * count) >> 32
    } else {
        ((u128::from(r) * u128::from(count)) >> 64) as u64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VaryMode {
    Inc,
    Dec,
    Random,
}

/// `count` values from `start`, `step` apart; `mask` selects the field bits it owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modifier {
    pub mode: VaryMode,
    pub start: u64,
    pub step: u64,
    /// Number of distinct values; 0 is taken as 1 so the hot path never divides by zero.
    pub count: u64,
    pub mask: u64,
}

impl Modifier {
    /// Value for the n-th frame (n from 0), before masking: Inc `start + (n % count) * step`,
    /// Dec `start - (n % count) * step`, Random `start + uniform(0..count) * step`, all wrapping.
    #[inline]
    pub fn value(&self, n: u64, rng: &mut Rng) -> u64 {
        let count = self.count.max(1);
        match self.mode {
            VaryMode::Inc => self.start.wrapping_add((n % count).wrapping_mul(self.step)),
            VaryMode::Dec => self.start.wrapping_sub((n % count).wrapping_mul(self.step)),
            VaryMode::Random => self
                .start
                .wrapping_add(pick(rng.next_u64(), count).wrapping_mul(self.step)),
        }
    }

    /// Period of the sequence in frames: `Some(count)` for Inc/Dec, `None` for Random.
    pub fn period(&self) -> Option<u64> {
        match self.mode {
            VaryMode::Inc | VaryMode::Dec => Some(self.count.max(1)),
            VaryMode::Random => None,
        }
    }
}

/// A field and its modifier, ready for the hot path.
#[derive(Debug, Clone, Copy)]
pub struct Patch {
    pub loc: FieldLoc,
    pub modifier: Modifier,
}

impl Patch {
    /// Writes the n-th value into `frame`: the field becomes `(old & !mask) | (v & mask)`.
    #[inline]
    pub fn apply(&self, frame: &mut [u8], n: u64, rng: &mut Rng) {
        let v = self.modifier.value(n, rng);
        let mask = self.modifier.mask;
        let value = if mask == u64::MAX {
            v
        } else {
            (self.loc.read(frame) & !mask) | (v & mask)
        };
        self.loc.write(frame, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use crate::{Field, Payload, checksum};

    fn m(mode: VaryMode, start: u64, step: u64, count: u64) -> Modifier {
        Modifier {
            mode,
            start,
            step,
            count,
            mask: u64::MAX,
        }
    }

    #[test]
    fn inc_and_dec_wrap_at_count() {
        let mut rng = Rng::new(1);
        let inc = m(VaryMode::Inc, 10, 3, 4);
        let v: Vec<u64> = (0..9).map(|n| inc.value(n, &mut rng)).collect();
        assert_eq!(v, [10, 13, 16, 19, 10, 13, 16, 19, 10]);
        let dec = m(VaryMode::Dec, 10, 3, 4);
        let v: Vec<u64> = (0..5).map(|n| dec.value(n, &mut rng)).collect();
        assert_eq!(v, [10, 7, 4, 1, 10]);
        assert_eq!(m(VaryMode::Dec, 1, 2, 2).value(1, &mut rng), u64::MAX);
        assert_eq!(inc.period(), Some(4));
        assert_eq!(
            m(VaryMode::Inc, 0, 1, 0).value(5, &mut rng),
            0,
            "count 0 acts as 1"
        );
    }

    #[test]
    fn pick_stays_below_count_on_both_paths() {
        let mut rng = Rng::new(3);
        for count in [
            1,
            2,
            1000,
            65535,
            (1 << 32) - 2,
            1 << 32,
            (1 << 32) + 1,
            1 << 48,
        ] {
            for _ in 0..10_000 {
                assert!(pick(rng.next_u64(), count) < count, "count {count}");
            }
            assert_eq!(pick(u64::MAX, count), count - 1, "the top of 0..{count}");
            assert_eq!(pick(0, count), 0);
        }
        // 32-bit counts use the high word only; beyond, the 128-bit product.
        assert_eq!(pick(0xdead_beef_0000_0000, 1 << 32), 0xdead_beef);
        assert_eq!(pick(0x0000_0000_ffff_ffff, 1 << 32), 0);
        assert_eq!(pick(1 << 63, 1 << 48), 1 << 47);
    }

    #[test]
    fn random_stays_on_the_grid_and_is_reproducible() {
        let r = m(VaryMode::Random, 100, 5, 10);
        assert_eq!(r.period(), None);
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..1000).map(|n| r.value(n, &mut rng)).collect::<Vec<_>>()
        };
        let a = draw(7);
        assert_eq!(a, draw(7));
        assert_ne!(a, draw(8));
        assert!(
            a.iter()
                .all(|v| (100..150).contains(v) && (v - 100) % 5 == 0)
        );
        for k in 0..10 {
            assert!(a.contains(&(100 + 5 * k)), "value {k} never drawn");
        }
    }

    #[test]
    fn rng_state_is_never_zero() {
        for seed in [0, 1, u64::MAX, 0x9E37_79B9_7F4A_7C15u64.wrapping_neg()] {
            let mut r = Rng::new(seed);
            assert_ne!(r.0, 0);
            let first = r.next_u64();
            assert_ne!(first, r.next_u64());
        }
    }

    #[test]
    fn patch_applies_mask_and_keeps_checksums() {
        let s = spec(None, v4(), udp(), Payload::Increment);
        let mut f = build(&s, 64).unwrap();
        let loc = Field::SrcPort.locate(&f.layout).unwrap();
        // Vary only the low byte of the port: 1024 = 0x0400.
        let p = Patch {
            loc,
            modifier: Modifier {
                mask: 0x00FF,
                ..m(VaryMode::Inc, 0x1210, 1, 3)
            },
        };
        let mut rng = Rng::new(0);
        for (n, want) in [(0, 0x0410), (1, 0x0411), (2, 0x0412), (3, 0x0410)] {
            p.apply(&mut f.bytes, n, &mut rng);
            assert_eq!(loc.read(&f.bytes), want);
            assert!(checksum::verify_frame(&f.bytes, &f.layout));
        }
    }
}
