use serde::{Deserialize, Serialize};

use crate::rate::PS_PER_S;
use crate::spec::{Bursts, Resolved};
use crate::{Limits, StreamError, StreamSpec};

/// When each frame is due, as a repeating schedule: frame `n` of the run is due
/// `(n / cycle_frames) · cycle_ps + offsets_ps[n % cycle_frames]` picoseconds after the start.
/// Rates, size-dependent bit rates, bursts and stream sequences all reduce to this one table,
/// so the engine's pacer never needs to know which of them it is honouring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pacing {
    pub cycle_frames: u64,
    pub cycle_ps: u64,
    pub offsets_ps: Vec<u64>,
    /// Most frames due at the same instant (a burst's size; 1 without bursts).
    pub burst: u64,
    /// Whether each frame leaves at its own instant or with the frames due within a slice of it.
    pub spacing: Spacing,
    /// The start delay (ps), already in `offsets_ps`: the schedule's first cycle begins this
    /// late, and so does every cycle after it.
    pub start_ps: u64,
}

/// A stream's start delay (`delay` in a stream file): a duration in the one duration grammar
/// (`500us`, `1ms`, `2s`), at most a day, written back in the largest unit that keeps it exact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct StartDelay(pub std::time::Duration);

impl StartDelay {
    /// The delay in picoseconds, the schedule's unit.
    pub fn ps(self) -> u64 {
        // u64 picoseconds hold 213 days; the day's ceiling is checked where a delay is read.
        u64::try_from(self.0.as_nanos() * 1000).unwrap_or(u64::MAX)
    }
}

/// The longest start delay: a day, far inside what a schedule's picoseconds hold, with room
/// for the run after it.
pub const MAX_START_DELAY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

impl std::str::FromStr for StartDelay {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let d = linerate_wire::quantity::parse_duration(s).map_err(|e| e.to_string())?;
        if d > MAX_START_DELAY {
            return Err(format!("delay '{}' is longer than a day", s.trim()));
        }
        Ok(StartDelay(d))
    }
}

impl std::fmt::Display for StartDelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = self.0.as_nanos();
        match ns {
            _ if ns.is_multiple_of(1_000_000_000) => write!(f, "{}s", ns / 1_000_000_000),
            _ if ns.is_multiple_of(1_000_000) => write!(f, "{}ms", ns / 1_000_000),
            _ if ns.is_multiple_of(1_000) => write!(f, "{}us", ns / 1_000),
            _ => write!(f, "{ns}ns"),
        }
    }
}

/// How a paced stream's frames leave (`pacing` in a stream file, `--pacing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Spacing {
    /// Precise where a send per frame costs the backend less than the worker's gap between
    /// frames, sliced where it does not.
    #[default]
    Auto,
    /// A send takes, with its first frame, the frames due within [`SLICE_PS`] of it: a kick
    /// shared by the frames of 20 µs, which leave together.
    Sliced,
    /// Each frame leaves at its own instant, alone; a worker that falls behind catches up
    /// frame by frame, so it never sends two back to back.
    Precise,
}

impl Spacing {
    pub fn name(self) -> &'static str {
        match self {
            Spacing::Auto => "auto",
            Spacing::Sliced => "sliced",
            Spacing::Precise => "precise",
        }
    }
}

impl std::str::FromStr for Spacing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Spacing::Auto),
            "sliced" => Ok(Spacing::Sliced),
            "precise" => Ok(Spacing::Precise),
            _ => Err(format!("pacing {s:?}: auto, precise or sliced")),
        }
    }
}

/// The gaps between a paced stream's frames (`gaps` in a stream file, `--gaps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gaps {
    /// Every gap the rate's (constant bit rate).
    #[default]
    Even,
    /// Exponential gaps of the rate's mean (Poisson arrivals), drawn from the stream's seed:
    /// a cycle of [`POISSON_CYCLE`] frames (at least), repeated.
    Poisson,
}

impl std::str::FromStr for Gaps {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "even" => Ok(Gaps::Even),
            "poisson" => Ok(Gaps::Poisson),
            _ => Err(format!("gaps {s:?}: even or poisson")),
        }
    }
}

/// Frames of a Poisson schedule's cycle: enough drawn gaps that its repetition shows in no
/// test a run's length allows (at 1 Mpps it repeats every 65 ms, and a repeated sample of
/// independent draws is as Poisson as the first).
pub const POISSON_CYCLE: u64 = 1 << 16;

/// A sliced schedule's reach: at high rates a kick or a BPF_PROG_RUN call is shared by the
/// frames of 20 µs instead of being paid per frame or two, which is what lets a paced worker
/// come close to its unpaced rate — at the cost of frames leaving up to this early, together.
pub const SLICE_PS: u64 = 20_000_000;

impl Pacing {
    #[inline]
    pub fn due_ps(&self, n: u64) -> u64 {
        // One frame a cycle is the common schedule: no division for it.
        if self.cycle_frames == 1 {
            return n * self.cycle_ps + self.offsets_ps[0];
        }
        (n / self.cycle_frames) * self.cycle_ps + self.offsets_ps[(n % self.cycle_frames) as usize]
    }

    /// The average rate the schedule asks for, in frames per second.
    pub fn pps(&self) -> f64 {
        self.cycle_frames as f64 * PS_PER_S / self.cycle_ps as f64
    }

    /// The same schedule at `pps` frames per second: every time in it scaled, so sizes, bursts
    /// and their spacing keep their shape (a flow's rate changed while it runs). None for a
    /// rate that is not positive or too high to schedule (under 1 ps a cycle).
    pub fn at_rate(&self, pps: f64) -> Option<Pacing> {
        if !(pps.is_finite() && pps > 0.0) {
            return None;
        }
        let scale = self.pps() / pps;
        let cycle_ps = (self.cycle_ps as f64 * scale).round();
        if !(1.0..=u64::MAX as f64 / 2.0).contains(&cycle_ps) {
            return None;
        }
        Some(Pacing {
            cycle_frames: self.cycle_frames,
            cycle_ps: cycle_ps as u64,
            // The delay is a time, not a share of the rate: it stays as it was.
            offsets_ps: self
                .offsets_ps
                .iter()
                .map(|&o| ((o - self.start_ps) as f64 * scale).round() as u64 + self.start_ps)
                .collect(),
            burst: self.burst,
            spacing: self.spacing,
            start_ps: self.start_ps,
        })
    }

    /// Builds the schedule of one stream that is not part of a sequence.
    pub(crate) fn for_stream(
        spec: &StreamSpec,
        r: &Resolved,
        sizes: &[usize],
        limits: &Limits,
    ) -> Result<Option<Self>, StreamError> {
        let (offsets, duration) = match spec.bursts {
            Some(b) => {
                let frames = b.frames;
                stream_offsets(spec, r, sizes, frames, Some(b), limits)?
            }
            None => {
                let mut frames = sizes.len() as u64;
                if spec.gaps == Gaps::Poisson {
                    frames *= POISSON_CYCLE.div_ceil(frames);
                }
                stream_offsets(spec, r, sizes, frames, None, limits)?
            }
        };
        if r.rate == crate::Rate::Max && spec.bursts.is_none() {
            let asked = match (spec.gaps, spec.pacing) {
                (Gaps::Poisson, _) => Some("gaps poisson"),
                (_, Spacing::Precise) => Some("pacing precise"),
                _ => None,
            };
            if let Some(asked) = asked {
                return Err(StreamError::Invalid {
                    stream: spec.name.clone(),
                    why: format!("{asked} spaces frames at a rate: give one (--rate 500k)"),
                });
            }
        }
        if duration < 1.0 && (r.rate != crate::Rate::Max || spec.bursts.is_some()) {
            return Err(StreamError::Invalid {
                stream: spec.name.clone(),
                why: format!(
                    "rate {} is too high to schedule (under 1 ps a frame)",
                    spec.rate
                ),
            });
        }
        Self::delayed(
            Self::from_offsets(offsets, duration).map(|p| p.spaced(spec.pacing)),
            spec,
        )
    }

    /// Builds the schedule of streams run one after another, each for its count.
    pub(crate) fn for_sequence(
        parts: &[(&StreamSpec, &Resolved, Vec<usize>, u64)],
        limits: &Limits,
    ) -> Result<Option<Self>, StreamError> {
        let mut offsets = Vec::new();
        let mut base = 0.0;
        for (spec, r, sizes, count) in parts {
            let (own, duration) = stream_offsets(spec, r, sizes, *count, spec.bursts, limits)?;
            offsets.extend(own.into_iter().map(|o| o + base));
            base += duration;
        }
        // A sequence is one schedule: precise if any of its streams asks for it.
        let spacing = parts.iter().map(|p| p.0.pacing).max().unwrap_or_default();
        let pacing = Self::from_offsets(offsets, base).map(|p| p.spaced(spacing));
        // Only the first stream's delay moves a sequence; the others start when it ends.
        if let Some((later, ..)) = parts
            .iter()
            .skip(1)
            .find(|p| p.0.delay.is_some_and(|d| !d.0.is_zero()))
        {
            return Err(StreamError::Invalid {
                stream: later.name.clone(),
                why: "a stream of a sequence starts when the one before it ends: only the first may have a delay (or make the streams interleaved)".into(),
            });
        }
        match parts.first() {
            Some(first) => Self::delayed(pacing, first.0),
            None => Ok(pacing),
        }
    }

    fn from_offsets(offsets: Vec<f64>, duration: f64) -> Option<Self> {
        if duration < 1.0 {
            return None;
        }
        let offsets_ps: Vec<u64> = offsets.into_iter().map(|o| o.round() as u64).collect();
        Some(Self::from_ps(offsets_ps, duration.round() as u64))
    }

    /// The schedule of due times already in whole picoseconds (a capture's own timestamps),
    /// repeating every `cycle_ps`.
    pub(crate) fn from_ps(offsets_ps: Vec<u64>, cycle_ps: u64) -> Self {
        let mut burst = 1;
        let mut run = 1;
        for w in offsets_ps.windows(2) {
            run = if w[0] == w[1] { run + 1 } else { 1 };
            burst = burst.max(run);
        }
        Self {
            cycle_frames: offsets_ps.len() as u64,
            cycle_ps,
            offsets_ps,
            burst,
            spacing: Spacing::Auto,
            start_ps: 0,
        }
    }

    /// The same schedule `delay` later (a stream's start delay); None for no delay. A
    /// schedule of `max` (None) has nothing to move: refused.
    pub(crate) fn delayed(
        pacing: Option<Self>,
        spec: &StreamSpec,
    ) -> Result<Option<Self>, StreamError> {
        let Some(delay) = spec.delay.filter(|d| !d.0.is_zero()) else {
            return Ok(pacing);
        };
        let Some(mut p) = pacing else {
            return Err(StreamError::Invalid {
                stream: spec.name.clone(),
                why: format!(
                    "delay {delay} moves a schedule, and a stream at rate max has none: give it a rate (--rate 1M)"
                ),
            });
        };
        let ps = delay.ps();
        for o in &mut p.offsets_ps {
            *o += ps;
        }
        p.start_ps += ps;
        Ok(Some(p))
    }

    /// The same schedule, its frames leaving as `spacing` says.
    pub fn spaced(mut self, spacing: Spacing) -> Pacing {
        self.spacing = spacing;
        self
    }
}

/// Due times of a stream's first `count` frames from its own start, and how long the stream
/// lasts (when its next frame would be due).
fn stream_offsets(
    spec: &StreamSpec,
    r: &Resolved,
    sizes: &[usize],
    count: u64,
    bursts: Option<Bursts>,
    limits: &Limits,
) -> Result<(Vec<f64>, f64), StreamError> {
    let invalid = |why: String| StreamError::Invalid {
        stream: spec.name.clone(),
        why,
    };
    let interval = |size: usize| {
        r.rate
            .interval_ps(size, limits.link_mbps)
            .map_err(|w| invalid(w.to_owned()))
    };
    let size_of = |k: u64| sizes[(k % sizes.len() as u64) as usize];
    // No rate may ask for more than the link carries: check the L1 cost of the size cycle.
    if let Some(mbps) = limits.link_mbps {
        let cycle: f64 = sizes.iter().map(|&s| interval(s)).sum::<Result<f64, _>>()?;
        let bits: f64 = sizes.iter().map(|&s| (s + 20) as f64 * 8.0).sum();
        if cycle > 0.0 && bits * PS_PER_S / cycle > mbps as f64 * 1e6 * 1.000_001 {
            return Err(invalid(format!(
                "rate {} asks for {:.1} Mbit/s on the wire, above the link's {mbps} Mbit/s",
                spec.rate,
                bits * PS_PER_S / cycle / 1e6
            )));
        }
    }
    let mut offsets = Vec::with_capacity(count as usize);
    if spec.gaps == Gaps::Poisson && bursts.is_some() {
        return Err(invalid(
            "gaps poisson spaces every frame apart: it has no bursts (drop --burst)".into(),
        ));
    }
    match bursts {
        None => {
            // Exponential gaps by inversion: -ln(1 - u) for u uniform in [0, 1), mean 1.
            let mut rng = (spec.gaps == Gaps::Poisson).then(|| linerate_wire::Rng::new(spec.seed));
            let (mut t, mut even) = (0.0, 0.0);
            for k in 0..count {
                offsets.push(t);
                let scale = rng.as_mut().map_or(1.0, |rng| {
                    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    -(1.0 - u).ln()
                });
                let gap = interval(size_of(k))?;
                t += gap * scale;
                even += gap;
            }
            if rng.is_some() && t > 0.0 {
                // The draws' own mean is the rate's within ~0.4 % (65,536 of them): scaled to
                // it, so a cycle's mean rate is the one asked, exactly.
                let fit = even / t;
                offsets.iter_mut().for_each(|o| *o *= fit);
                t = even;
            }
            Ok((offsets, t))
        }
        Some(b) => {
            let period = PS_PER_S / b.per_second;
            let mut inside = 0.0;
            let mut burst_len = 0.0;
            for k in 0..count {
                if k % b.frames == 0 {
                    inside = 0.0;
                }
                offsets.push((k / b.frames) as f64 * period + inside);
                inside += interval(size_of(k))?;
                burst_len = f64::max(burst_len, inside);
            }
            if burst_len > period {
                return Err(invalid(format!(
                    "a burst of {} frames at rate {} lasts {:.1} µs, longer than the {:.1} µs between bursts",
                    b.frames,
                    spec.rate,
                    burst_len / 1e6,
                    period / 1e6
                )));
            }
            Ok((offsets, count.div_ceil(b.frames) as f64 * period))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Plan;

    /// The schedule of a single stream (None: max rate).
    fn pacing_of(plan: &Plan) -> Option<Pacing> {
        match &plan.shape {
            crate::Shape::Cycle { pacing, .. } => pacing.clone(),
            _ => panic!("not one cycle"),
        }
    }

    fn plan(spec: StreamSpec) -> Plan {
        Plan::compile(&[spec], &Limits::default()).unwrap()
    }

    #[test]
    fn max_rate_has_no_schedule() {
        assert!(pacing_of(&plan(StreamSpec::seed())).is_none());
    }

    #[test]
    fn frames_per_second() {
        let p = pacing_of(&plan(StreamSpec {
            rate: "100k".parse().unwrap(),
            ..StreamSpec::seed()
        }))
        .unwrap();
        assert_eq!((p.cycle_frames, p.cycle_ps), (1, 10_000_000));
        assert_eq!(p.due_ps(3), 30_000_000);
        assert!((p.pps() - 1e5).abs() < 1e-6);
    }

    #[test]
    fn poisson_gaps_are_exponential_of_the_rates_mean_and_the_seeds_own() {
        let of = |seed| {
            pacing_of(&plan(StreamSpec {
                rate: "10k".parse().unwrap(),
                gaps: Gaps::Poisson,
                seed,
                ..StreamSpec::seed()
            }))
            .unwrap()
        };
        let p = of(7);
        assert!(p.cycle_frames >= POISSON_CYCLE, "{}", p.cycle_frames);
        assert!(
            (p.pps() / 1e4 - 1.0).abs() < 1e-9,
            "the cycle's mean is the rate: {}",
            p.pps()
        );
        // Kolmogorov–Smirnov against the exponential of mean 100 µs.
        let mut gaps: Vec<f64> = (1..p.cycle_frames)
            .map(|k| (p.due_ps(k) - p.due_ps(k - 1)) as f64 / 1e8)
            .collect();
        gaps.sort_by(f64::total_cmp);
        let n = gaps.len() as f64;
        let d = gaps
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let cdf = 1.0 - (-g).exp();
                f64::max(cdf - i as f64 / n, (i + 1) as f64 / n - cdf)
            })
            .fold(0.0, f64::max);
        // 1.63 / sqrt(n) is the 1 % critical value; even gaps would give D ≈ 0.37.
        assert!(d < 1.63 / n.sqrt(), "D {d}");
        assert_eq!(
            of(7).offsets_ps,
            p.offsets_ps,
            "a seed gives its schedule again"
        );
        assert_ne!(of(8).offsets_ps, p.offsets_ps);
    }

    #[test]
    fn a_new_rate_scales_every_time_of_the_schedule() {
        let p = Pacing {
            cycle_frames: 2,
            cycle_ps: 3_000,
            offsets_ps: vec![0, 1_000],
            burst: 1,
            spacing: Spacing::Auto,
            start_ps: 0,
        };
        // 2 frames per 3 ns is 666.7 Mpps; at a third of it every time is three times longer.
        let slower = p.at_rate(p.pps() / 3.0).unwrap();
        assert_eq!(
            (slower.cycle_ps, slower.offsets_ps),
            (9_000, vec![0, 3_000])
        );
        // A start delay is a time of its own: it stays.
        let late = Pacing {
            offsets_ps: vec![500, 1_500],
            start_ps: 500,
            ..p
        };
        let slower = late.at_rate(late.pps() / 3.0).unwrap();
        assert_eq!(slower.offsets_ps, vec![500, 3_500]);
        assert!(p.at_rate(0.0).is_none() && p.at_rate(f64::NAN).is_none());
        assert!(p.at_rate(1e15).is_none(), "under 1 ps a cycle");
    }

    #[test]
    fn bit_rates_follow_each_frame_size() {
        let spec = StreamSpec {
            rate: "1Gbps-l1".parse().unwrap(),
            size_mode: "imix:64x1,1518x1".parse().unwrap(),
            ..StreamSpec::seed()
        };
        let p = pacing_of(&plan(spec)).unwrap();
        assert_eq!(p.cycle_frames, 2);
        // 64 + 20 bytes then 1518 + 20 bytes at 1 bit per ns.
        let first = p.offsets_ps[1];
        assert!(first == 672_000 || first == 12_304_000, "{first}");
        assert_eq!(p.cycle_ps, 672_000 + 12_304_000);
    }

    #[test]
    fn a_start_delay_moves_the_first_cycle_and_every_one_after() {
        let spec = StreamSpec {
            rate: "1k".parse().unwrap(),
            delay: Some("2.5ms".parse().unwrap()),
            ..StreamSpec::seed()
        };
        let p = pacing_of(&plan(spec.clone())).unwrap();
        assert_eq!(p.start_ps, 2_500_000_000);
        // 1 kpps: frame n is due n ms after the delay.
        assert_eq!(p.due_ps(0), 2_500_000_000);
        assert_eq!(p.due_ps(11), 13_500_000_000);
        assert_eq!(spec.delay.unwrap().to_string(), "2500us");
        let max = StreamSpec {
            rate: crate::Rate::Max,
            ..spec.clone()
        };
        let err = Plan::compile(&[max], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("rate max has none"), "{err}");
        assert!("2days".parse::<StartDelay>().is_err());
        assert!(
            "25h"
                .parse::<StartDelay>()
                .unwrap_err()
                .contains("longer than a day")
        );
        // In a sequence only the first stream starts on its own.
        let first = StreamSpec {
            count: Some(10),
            next: crate::Next::Next,
            ..spec.clone()
        };
        let second = StreamSpec {
            name: "second".into(),
            count: Some(10),
            ..spec
        };
        let p = pacing_of(
            &Plan::compile(
                &[
                    first.clone(),
                    StreamSpec {
                        delay: None,
                        ..second.clone()
                    },
                ],
                &Limits::default(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!((p.due_ps(0), p.due_ps(10)), (2_500_000_000, 12_500_000_000));
        let err = Plan::compile(&[first, second], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("only the first may have a delay"), "{err}");
    }

    #[test]
    fn bursts_start_on_their_period() {
        let spec = StreamSpec {
            bursts: Some(Bursts {
                frames: 10,
                per_second: 20.0,
            }),
            ..StreamSpec::seed()
        };
        let p = pacing_of(&plan(spec)).unwrap();
        assert_eq!((p.cycle_frames, p.cycle_ps), (10, 50_000_000_000));
        assert!(p.offsets_ps.iter().all(|&o| o == 0));
        assert_eq!(p.due_ps(10), 50_000_000_000);
        let spec = StreamSpec {
            rate: "1k".parse().unwrap(),
            bursts: Some(Bursts {
                frames: 100,
                per_second: 20.0,
            }),
            ..StreamSpec::seed()
        };
        let err = Plan::compile(&[spec], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("longer than"), "{err}");
    }

    #[test]
    fn a_rate_over_the_link_is_refused_and_percent_needs_a_link() {
        let limits = Limits {
            link_mbps: Some(1000),
            ..Limits::default()
        };
        let fast = StreamSpec {
            rate: "2M".parse().unwrap(),
            ..StreamSpec::seed()
        };
        let err = Plan::compile(&[fast], &limits).unwrap_err().to_string();
        assert!(err.contains("above the link"), "{err}");
        let line = StreamSpec {
            rate: "100%".parse().unwrap(),
            ..StreamSpec::seed()
        };
        let p = pacing_of(&Plan::compile(std::slice::from_ref(&line), &limits).unwrap()).unwrap();
        assert!((p.pps() - 1_488_095.238).abs() < 1.0, "{}", p.pps());
        let err = Plan::compile(&[line], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("link speed"), "{err}");
    }
}
