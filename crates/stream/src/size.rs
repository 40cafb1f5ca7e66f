use std::fmt;
use std::str::FromStr;

use crate::StreamError;

/// How frame sizes follow one another. Sizes count the 4-byte FCS, as every line-rate table does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SizeMode {
    /// Every frame the stream's `size`.
    #[default]
    Fixed,
    /// min, min+step, …, up to max, then again.
    Inc { min: usize, max: usize, step: usize },
    /// Uniform in min..=max; the plan draws a fixed pseudo-random schedule so runs repeat.
    Random { min: usize, max: usize },
    /// Weighted mix of (size, weight), spread evenly (7:4:1 of 64/594/1518 by default).
    Imix(Vec<(usize, usize)>),
}

/// Length of the pseudo-random size schedule: long enough to look random on the wire, short
/// enough to stay resident in the slots.
pub(crate) const RANDOM_SCHEDULE: usize = 1024;

/// The mix `imix` alone stands for.
const DEFAULT_IMIX: [(usize, usize); 3] = [(64, 7), (594, 4), (1518, 1)];

/// Reads `fixed`, `inc:MIN-MAX[:STEP]`, `random:MIN-MAX`, `imix` or `imix:SIZExWEIGHT,…`.
impl FromStr for SizeMode {
    type Err = StreamError;

    fn from_str(input: &str) -> Result<Self, StreamError> {
        let fail = |why: &str| StreamError::SizeMode {
            input: input.to_owned(),
            why: why.to_owned(),
        };
        let (mode, rest) = input.split_once(':').unwrap_or((input, ""));
        let number = |s: &str| s.trim().parse::<usize>().map_err(|_| fail("not a number"));
        let range = |s: &str| -> Result<(usize, usize), StreamError> {
            let (a, b) = s.split_once('-').ok_or_else(|| fail("expected MIN-MAX"))?;
            Ok((number(a)?, number(b)?))
        };
        let mode = match mode {
            "fixed" if rest.is_empty() => Self::Fixed,
            "inc" => {
                let (range_part, step) = match rest.rsplit_once(':') {
                    Some((r, s)) => (r, number(s)?),
                    None => (rest, 1),
                };
                let (min, max) = range(range_part)?;
                Self::Inc { min, max, step }
            }
            "random" => {
                let (min, max) = range(rest)?;
                Self::Random { min, max }
            }
            "imix" if rest.is_empty() => Self::Imix(DEFAULT_IMIX.to_vec()),
            "imix" => Self::Imix(
                rest.split(',')
                    .map(|part| {
                        let (s, w) = part
                            .split_once('x')
                            .ok_or_else(|| fail("expected SIZExWEIGHT"))?;
                        Ok((number(s)?, number(w)?))
                    })
                    .collect::<Result<_, StreamError>>()?,
            ),
            _ => return Err(fail("unknown mode")),
        };
        mode.check().map_err(|why| fail(&why))?;
        Ok(mode)
    }
}

/// The form `from_str` reads back.
impl fmt::Display for SizeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed => f.write_str("fixed"),
            Self::Inc { min, max, step: 1 } => write!(f, "inc:{min}-{max}"),
            Self::Inc { min, max, step } => write!(f, "inc:{min}-{max}:{step}"),
            Self::Random { min, max } => write!(f, "random:{min}-{max}"),
            Self::Imix(mix) if mix[..] == DEFAULT_IMIX => f.write_str("imix"),
            Self::Imix(mix) => {
                let parts: Vec<String> = mix.iter().map(|(s, w)| format!("{s}x{w}")).collect();
                write!(f, "imix:{}", parts.join(","))
            }
        }
    }
}

linerate_wire::serde_as_text!(SizeMode);

impl SizeMode {
    /// What every mode must hold, however it was made (text, or an OTG document).
    pub fn check(&self) -> Result<(), String> {
        match self {
            Self::Fixed => {}
            Self::Inc { min, max, step } => {
                if *step == 0 {
                    return Err("STEP must be at least 1".into());
                }
                if min > max {
                    return Err("MIN is above MAX".into());
                }
                // Every size of the cycle becomes a pre-built frame: refuse by arithmetic what
                // would be built and then refused (inc:64-65553 was 2 GB of frames).
                let sizes = ((max - min) / step).saturating_add(1);
                if sizes as u64 > crate::CACHE_LIMIT {
                    let least = (max - min).div_ceil(crate::CACHE_LIMIT as usize - 1);
                    return Err(format!(
                        "{sizes} sizes, but a cycle holds at most {} pre-built frames: use a STEP of at least {least} (inc:{min}-{max}:{least})",
                        crate::CACHE_LIMIT
                    ));
                }
            }
            Self::Random { min, max } if min > max => return Err("MIN is above MAX".into()),
            Self::Random { .. } => {}
            Self::Imix(mix) => {
                if mix.is_empty() {
                    return Err("expected SIZExWEIGHT".into());
                }
                if mix.iter().any(|m| m.1 == 0) {
                    return Err("a weight of 0 adds nothing".into());
                }
                // Every entry of the mix becomes a pre-built frame of the cycle.
                let total = mix.iter().try_fold(0usize, |t, m| t.checked_add(m.1));
                if total.is_none_or(|t| t as u64 > crate::CACHE_LIMIT) {
                    return Err(format!(
                        "the weights add up to more than {}",
                        crate::CACHE_LIMIT
                    ));
                }
            }
        }
        Ok(())
    }

    /// The sizes of a stream whose `size` (the `--size` value) a fixed mode sends.
    pub fn with_size(&self, size: usize) -> Sizes {
        Sizes {
            mode: self.clone(),
            size,
        }
    }
}

/// A stream's frame sizes: its mode and the size a fixed mode sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes {
    mode: SizeMode,
    size: usize,
}

impl Sizes {
    pub fn min(&self) -> usize {
        match &self.mode {
            SizeMode::Fixed => self.size,
            SizeMode::Inc { min, .. } | SizeMode::Random { min, .. } => *min,
            SizeMode::Imix(mix) => mix.iter().map(|m| m.0).min().unwrap_or(0),
        }
    }

    pub fn max(&self) -> usize {
        match &self.mode {
            SizeMode::Fixed => self.size,
            SizeMode::Inc { max, .. } | SizeMode::Random { max, .. } => *max,
            SizeMode::Imix(mix) => mix.iter().map(|m| m.0).max().unwrap_or(0),
        }
    }

    /// The repeating schedule of sizes, one entry per frame.
    pub fn schedule(&self, seed: u64) -> Vec<usize> {
        match &self.mode {
            SizeMode::Fixed => vec![self.size],
            SizeMode::Inc { min, max, step } => (*min..=*max).step_by(*step).collect(),
            SizeMode::Random { min, max } => {
                let mut rng = linerate_wire::Rng::new(seed ^ 0x5153_495a_4553);
                let span = (*max - *min + 1) as u64;
                (0..RANDOM_SCHEDULE)
                    .map(|_| *min + (rng.next_u64() % span) as usize)
                    .collect()
            }
            SizeMode::Imix(mix) => smooth_weighted(mix),
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
        assert_eq!("fixed".parse::<SizeMode>().unwrap(), SizeMode::Fixed);
        assert_eq!(
            "inc:64-80:8"
                .parse::<SizeMode>()
                .unwrap()
                .with_size(64)
                .schedule(0),
            vec![64, 72, 80]
        );
        assert_eq!(
            "imix:64x2,1518x1".parse::<SizeMode>().unwrap(),
            SizeMode::Imix(vec![(64, 2), (1518, 1)])
        );
        assert!("inc:80-64".parse::<SizeMode>().is_err());
        assert!("zigzag".parse::<SizeMode>().is_err());
        assert!("imix:64x0".parse::<SizeMode>().is_err());
        // 65490 sizes would be 65490 pre-built frames: refused before any is built, with a STEP
        // that fits.
        let err = "inc:64-65553".parse::<SizeMode>().unwrap_err().to_string();
        assert!(
            err.contains("65490 sizes") && err.contains("STEP of at least 16"),
            "{err}"
        );
        let fits = "inc:64-65553:16".parse::<SizeMode>().unwrap();
        assert!(fits.with_size(64).schedule(0).len() as u64 <= crate::CACHE_LIMIT);
        let over = "inc:64-65553:15".parse::<SizeMode>();
        assert!(over.is_err());
        // The whole of usize is one size more than usize holds (the fuzzer's find).
        assert!(format!("inc:0-{}", usize::MAX).parse::<SizeMode>().is_err());
    }

    #[test]
    fn imix_keeps_its_weights_and_interleaves() {
        let schedule = "imix"
            .parse::<SizeMode>()
            .unwrap()
            .with_size(64)
            .schedule(0);
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
        let mode = "random:64-1518".parse::<SizeMode>().unwrap();
        let a = mode.with_size(64).schedule(7);
        assert_eq!(a.len(), RANDOM_SCHEDULE);
        assert!(a.iter().all(|s| (64..=1518).contains(s)));
        assert_eq!(a, mode.with_size(64).schedule(7));
        assert_ne!(a, mode.with_size(64).schedule(8));
    }
}
