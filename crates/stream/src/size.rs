use crate::StreamError;

/// How frame sizes follow one another. Sizes count the 4-byte FCS, as every line-rate table does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeMode {
    Fixed(usize),
    /// min, min+step, …, up to max, then again.
    Inc {
        min: usize,
        max: usize,
        step: usize,
    },
    /// Uniform in min..=max; the plan draws a fixed pseudo-random schedule so runs repeat.
    Random {
        min: usize,
        max: usize,
    },
    /// Weighted mix, spread evenly (7:4:1 of 64/594/1518 by default).
    Imix(Vec<(usize, usize)>),
}

/// Length of the pseudo-random size schedule: long enough to look random on the wire, short
/// enough to stay resident in the slots.
pub(crate) const RANDOM_SCHEDULE: usize = 1024;

impl SizeMode {
    /// Reads `fixed`, `inc:MIN-MAX[:STEP]`, `random:MIN-MAX`, `imix` or `imix:SIZExWEIGHT,…`;
    /// `fixed` takes `size` (the `--size` value).
    pub fn parse(input: &str, size: usize) -> Result<Self, StreamError> {
        let fail = |why: &str| StreamError::SizeMode {
            input: input.to_owned(),
            why: why.to_owned(),
        };
        let (mode, rest) = input.split_once(':').unwrap_or((input, ""));
        let number = |s: &str| s.trim().parse::<usize>().map_err(|_| fail("not a number"));
        let range = |s: &str| -> Result<(usize, usize), StreamError> {
            let (a, b) = s.split_once('-').ok_or_else(|| fail("expected MIN-MAX"))?;
            let (a, b) = (number(a)?, number(b)?);
            if a > b {
                return Err(fail("MIN is above MAX"));
            }
            Ok((a, b))
        };
        match mode {
            "fixed" if rest.is_empty() => Ok(Self::Fixed(size)),
            "inc" => {
                let (range_part, step) = match rest.rsplit_once(':') {
                    Some((r, s)) => (r, number(s)?),
                    None => (rest, 1),
                };
                if step == 0 {
                    return Err(fail("STEP must be at least 1"));
                }
                let (min, max) = range(range_part)?;
                // Every size of the cycle becomes a pre-built frame: refuse by arithmetic what
                // would be built and then refused (inc:64-65553 was 2 GB of frames).
                let sizes = (max - min) / step + 1;
                if sizes as u64 > crate::CACHE_LIMIT {
                    let least = (max - min).div_ceil(crate::CACHE_LIMIT as usize - 1);
                    return Err(fail(&format!(
                        "{sizes} sizes, but a cycle holds at most {} pre-built frames: use a STEP of at least {least} (inc:{min}-{max}:{least})",
                        crate::CACHE_LIMIT
                    )));
                }
                Ok(Self::Inc { min, max, step })
            }
            "random" => {
                let (min, max) = range(rest)?;
                Ok(Self::Random { min, max })
            }
            "imix" if rest.is_empty() => Ok(Self::Imix(vec![(64, 7), (594, 4), (1518, 1)])),
            "imix" => {
                let mut mix = Vec::new();
                for part in rest.split(',') {
                    let (s, w) = part
                        .split_once('x')
                        .ok_or_else(|| fail("expected SIZExWEIGHT"))?;
                    let (s, w) = (number(s)?, number(w)?);
                    if w == 0 {
                        return Err(fail("a weight of 0 adds nothing"));
                    }
                    mix.push((s, w));
                }
                // Every entry of the mix becomes a pre-built frame of the cycle.
                let total = mix.iter().try_fold(0usize, |t, m| t.checked_add(m.1));
                if total.is_none_or(|t| t as u64 > crate::CACHE_LIMIT) {
                    return Err(fail(&format!(
                        "the weights add up to more than {}",
                        crate::CACHE_LIMIT
                    )));
                }
                Ok(Self::Imix(mix))
            }
            _ => Err(fail("unknown mode")),
        }
    }

    pub fn min(&self) -> usize {
        match self {
            Self::Fixed(s) => *s,
            Self::Inc { min, .. } | Self::Random { min, .. } => *min,
            Self::Imix(mix) => mix.iter().map(|m| m.0).min().unwrap_or(0),
        }
    }

    pub fn max(&self) -> usize {
        match self {
            Self::Fixed(s) => *s,
            Self::Inc { max, .. } | Self::Random { max, .. } => *max,
            Self::Imix(mix) => mix.iter().map(|m| m.0).max().unwrap_or(0),
        }
    }

    /// The repeating schedule of sizes, one entry per frame.
    pub fn schedule(&self, seed: u64) -> Vec<usize> {
        match self {
            Self::Fixed(s) => vec![*s],
            Self::Inc { min, max, step } => (*min..=*max).step_by(*step).collect(),
            Self::Random { min, max } => {
                let mut rng = linerate_wire::Rng::new(seed ^ 0x5153_495a_4553);
                let span = (*max - *min + 1) as u64;
                (0..RANDOM_SCHEDULE)
                    .map(|_| *min + (rng.next_u64() % span) as usize)
                    .collect()
            }
            Self::Imix(mix) => smooth_weighted(mix),
        }
    }
}

/// Spreads a weighted mix so that sizes interleave (64,594,64,64,1518,…) rather than arrive in
/// clumps: smooth weighted round-robin, as nginx balances upstreams.
fn smooth_weighted(mix: &[(usize, usize)]) -> Vec<usize> {
    let total: i64 = mix.iter().map(|m| m.1 as i64).sum();
    let mut current = vec![0i64; mix.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, m) in current.iter_mut().zip(mix) {
            *c += m.1 as i64;
        }
        let (best, _) = current
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
            .expect("mix is not empty");
        current[best] -= total;
        out.push(mix[best].0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(SizeMode::parse("fixed", 128).unwrap(), SizeMode::Fixed(128));
        assert_eq!(
            SizeMode::parse("inc:64-80:8", 64).unwrap().schedule(0),
            vec![64, 72, 80]
        );
        assert_eq!(
            SizeMode::parse("imix:64x2,1518x1", 64).unwrap(),
            SizeMode::Imix(vec![(64, 2), (1518, 1)])
        );
        assert!(SizeMode::parse("inc:80-64", 64).is_err());
        assert!(SizeMode::parse("zigzag", 64).is_err());
        assert!(SizeMode::parse("imix:64x0", 64).is_err());
        // 65490 sizes would be 65490 pre-built frames: refused before any is built, with a STEP
        // that fits.
        let err = SizeMode::parse("inc:64-65553", 64).unwrap_err().to_string();
        assert!(
            err.contains("65490 sizes") && err.contains("STEP of at least 16"),
            "{err}"
        );
        let fits = SizeMode::parse("inc:64-65553:16", 64).unwrap();
        assert!(fits.schedule(0).len() as u64 <= crate::CACHE_LIMIT);
        let over = SizeMode::parse("inc:64-65553:15", 64);
        assert!(over.is_err());
    }

    #[test]
    fn imix_keeps_its_weights_and_interleaves() {
        let schedule = SizeMode::parse("imix", 64).unwrap().schedule(0);
        assert_eq!(schedule.len(), 12);
        assert_eq!(schedule.iter().filter(|&&s| s == 64).count(), 7);
        assert_eq!(schedule.iter().filter(|&&s| s == 594).count(), 4);
        assert_eq!(schedule.iter().filter(|&&s| s == 1518).count(), 1);
        assert!(
            schedule
                .windows(3)
                .all(|w| !(w[0] == w[1] && w[1] == w[2] && w[0] == 594))
        );
    }

    #[test]
    fn random_schedule_stays_in_range_and_repeats_per_seed() {
        let mode = SizeMode::parse("random:64-1518", 64).unwrap();
        let a = mode.schedule(7);
        assert_eq!(a.len(), RANDOM_SCHEDULE);
        assert!(a.iter().all(|s| (64..=1518).contains(s)));
        assert_eq!(a, mode.schedule(7));
        assert_ne!(a, mode.schedule(8));
    }
}
