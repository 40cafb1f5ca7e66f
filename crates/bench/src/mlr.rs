//! The RFC 9971 controller: several goals searched over one shared set of trials, short trials
//! first and full-length trials only in the last phase.
//!
//! Each goal runs through phases 0..=P. Phase k asks for width `w · 2^(P−k)` and uses trials of
//! `d_k = initial · (final / initial)^(k/P)`; its loads are classified against the goal with the
//! final trial duration `d_k` and the duration sum scaled by `d_k / final` (the scheme of FD.io
//! CSIT's implementation). The last phase is the goal itself. So the bracket is narrowed with
//! cheap trials and only confirmed with full-length ones: a lower bound from a shorter phase is
//! undecided in the next one and gets measured again, an upper bound stays one (its high-loss
//! short trials still count).
//!
//! Within a phase a goal asks for one load at a time: the max load until an upper bound exists;
//! then an undecided load inside the bracket if there is one (more trials decide it), or the
//! midpoint above it when it passed every trial so far and the bracket is still too wide (a
//! pass there closes the width in one trial, where re-measuring it first would take two); then the
//! midpoint of the relevant bounds, or below the upper bound when no lower bound exists yet (the
//! lower of the forwarding rate seen there and `(1 − w_k)` times it). A goal is done in a phase when its
//! bounds are within `w_k`, when the max load is a lower bound, or when the min load is an upper
//! bound. Every trial is classified for every goal, so NDR's trials also place PDR's bounds.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::classify::{Bound, Criteria, Sample, classify, conditional_throughput};
use crate::trial::{FrameSize, Recorder, Trial, TrialReport, check_rate};
use crate::{Error, GoalStatus, SearchGoal};

/// MLRsearch over `[min_load, max_load]` frames per second.
#[derive(Debug, Clone, PartialEq)]
pub struct Mlr {
    goals: Vec<SearchGoal>,
    min_load: f64,
    max_load: f64,
    initial_width: f64,
    max_trials: usize,
}

/// One goal's answer (RFC 9971 goal result).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GoalResult {
    pub goal: SearchGoal,
    pub status: GoalStatus,
    /// Relevant Upper Bound, fps: the smallest load that fails the goal.
    pub relevant_upper_fps: Option<f64>,
    /// Relevant Lower Bound, fps: the largest load below it that meets the goal — the throughput.
    pub relevant_lower_fps: Option<f64>,
    /// Conditional Throughput at the relevant lower bound, fps (forwarded, not offered).
    pub conditional_throughput_fps: Option<f64>,
}

impl GoalResult {
    /// The throughput for this goal: the relevant lower bound (the max load when that met the
    /// goal), `None` when no rate meets the goal.
    pub fn throughput_fps(&self) -> Option<f64> {
        self.relevant_lower_fps
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MlrResult {
    pub size: u32,
    pub min_load_fps: f64,
    pub max_load_fps: f64,
    pub goals: Vec<GoalResult>,
    /// Sum of all trial durations.
    pub trial_time_s: f64,
    pub trials: Vec<TrialReport>,
}

impl Mlr {
    /// `max_load` is the line rate or a measured max rate; `min_load` the lowest rate worth
    /// offering (a goal that fails there has "no rate meets the goal").
    pub fn new(goals: Vec<SearchGoal>, min_load: f64, max_load: f64) -> Result<Self, Error> {
        if goals.is_empty() {
            return Err(Error::NoGoals);
        }
        for g in &goals {
            g.validate()?;
        }
        if !(min_load.is_finite() && max_load.is_finite() && min_load > 0.0 && min_load < max_load)
        {
            return Err(Error::LoadRange {
                min_fps: min_load,
                max_fps: max_load,
            });
        }
        Ok(Self {
            goals,
            min_load,
            max_load,
            initial_width: 0.25,
            max_trials: 10_000,
        })
    }

    /// The relative width the first phase stops at (default 0.25); the number of phases is
    /// `ceil(log2(initial_width / goal width))`.
    pub fn with_initial_width(mut self, width: f64) -> Result<Self, Error> {
        if !(width > 0.0 && width < 1.0) {
            return Err(Error::Width(width));
        }
        self.initial_width = width;
        Ok(self)
    }

    pub fn search<T: Trial>(&self, size: FrameSize, dev: &mut T) -> Result<MlrResult, Error> {
        let mut rec = Recorder::new(dev, size);
        let mut db = Db::default();
        let mut phases: Vec<Phases> = self
            .goals
            .iter()
            .map(|g| Phases::new(g, self.initial_width))
            .collect();
        loop {
            let mut next: Option<(f64, f64, f64)> = None; // (progress, load, duration)
            for (g, ph) in self.goals.iter().zip(&mut phases) {
                while !ph.finished {
                    let c = ph.criteria(g);
                    match self.step(&c, ph.width(g), &db) {
                        Step::Done if ph.k < ph.last => ph.k += 1,
                        Step::Done => ph.finished = true,
                        Step::Measure(load) => {
                            let progress = ph.progress();
                            if next.is_none_or(|(p, _, _)| progress < p) {
                                next = Some((progress, load, c.final_s));
                            }
                            break;
                        }
                    }
                }
            }
            let Some((_, load, duration_s)) = next else {
                break;
            };
            if rec.trials.len() >= self.max_trials {
                return Err(Error::TooManyTrials(self.max_trials));
            }
            let t = rec.rate(check_rate(load)?, duration_s)?;
            db.add(
                load,
                Sample {
                    duration_s,
                    loss_ratio: t.loss_ratio,
                },
                t.forwarding_rate(),
            );
        }
        let goals = self.goals.iter().map(|g| self.result(g, &db)).collect();
        Ok(MlrResult {
            size: size.get(),
            min_load_fps: self.min_load,
            max_load_fps: self.max_load,
            goals,
            trial_time_s: rec.trial_time_s(),
            trials: rec.trials,
        })
    }

    fn step(&self, c: &Criteria, width: f64, db: &Db) -> Step {
        let (upper, lower, classes) = db.bounds(c);
        let Some(u) = upper else {
            return if lower == Some(self.max_load) {
                Step::Done
            } else {
                Step::Measure(self.max_load)
            };
        };
        if let Some(l) = lower {
            if (u - l) / u <= width * (1.0 + 1e-9) {
                return Step::Done;
            }
        } else if u <= self.min_load {
            return Step::Done;
        }
        let floor = lower.unwrap_or(0.0);
        let undecided = classes
            .iter()
            .filter(|(load, b)| *b == Bound::Undecided && *load > floor && *load < u)
            .map(|(load, _)| *load)
            .next_back();
        if let Some(x) = undecided {
            // A load that passed every trial so far (typically the lower bound of the previous,
            // shorter phase) is a likely lower bound: try halfway above it first, since a pass
            // there closes the width in one trial.
            if (u - x) / u > width * (1.0 + 1e-9) && db.all_low_loss(x, c) {
                return Step::Measure((x + u) / 2.0);
            }
            return Step::Measure(x);
        }
        match lower {
            Some(l) => Step::Measure((l + u) / 2.0),
            None => {
                let below = (u * (1.0 - width)).min(db.min_forwarding(u));
                Step::Measure(below.max(self.min_load))
            }
        }
    }

    fn result(&self, g: &SearchGoal, db: &Db) -> GoalResult {
        let c = Criteria::of(g);
        let (upper, lower, _) = db.bounds(&c);
        let status = match (upper, lower) {
            (None, _) => GoalStatus::MaxLoadIsLowerBound,
            (Some(_), None) => GoalStatus::NoRateMeetsGoal,
            (Some(_), Some(_)) => GoalStatus::Regular,
        };
        GoalResult {
            goal: *g,
            status,
            relevant_upper_fps: upper,
            relevant_lower_fps: lower,
            conditional_throughput_fps: lower
                .and_then(|l| conditional_throughput(&c, l, &db.samples(l))),
        }
    }
}

enum Step {
    Done,
    Measure(f64),
}

impl Criteria {
    fn of(g: &SearchGoal) -> Self {
        Self {
            final_s: g.final_duration_s,
            sum_s: g.duration_sum_s,
            loss_ratio: g.loss_ratio,
            exceed_ratio: g.exceed_ratio,
        }
    }
}

/// Where one goal is in its phases.
struct Phases {
    k: u32,
    last: u32,
    finished: bool,
}

impl Phases {
    fn new(g: &SearchGoal, initial_width: f64) -> Self {
        let last = (initial_width / g.width).log2().ceil().max(0.0) as u32;
        Self {
            k: 0,
            last,
            finished: false,
        }
    }

    fn width(&self, g: &SearchGoal) -> f64 {
        g.width * f64::powi(2.0, (self.last - self.k) as i32)
    }

    fn criteria(&self, g: &SearchGoal) -> Criteria {
        let full = Criteria::of(g);
        if self.k == self.last {
            return full;
        }
        let ratio = (g.final_duration_s / g.initial_duration_s)
            .powf(f64::from(self.k) / f64::from(self.last));
        let d = g.initial_duration_s * ratio;
        Criteria {
            final_s: d,
            sum_s: g.duration_sum_s * d / g.final_duration_s,
            ..full
        }
    }

    /// How far along this goal is; the least advanced goal gets the next trial, so every goal's
    /// cheap phases run before anyone's expensive ones.
    fn progress(&self) -> f64 {
        if self.last == 0 {
            1.0
        } else {
            f64::from(self.k) / f64::from(self.last)
        }
    }
}

/// The trials so far by load. Loads are positive finite floats, whose bit patterns order like
/// the values, and a load the search asks for again is the same float computed the same way.
#[derive(Default)]
struct Db {
    loads: BTreeMap<u64, Vec<(Sample, f64)>>,
}

impl Db {
    fn add(&mut self, load: f64, s: Sample, forwarding_rate: f64) {
        self.loads
            .entry(load.to_bits())
            .or_default()
            .push((s, forwarding_rate));
    }

    fn samples(&self, load: f64) -> Vec<Sample> {
        self.loads
            .get(&load.to_bits())
            .map(|v| v.iter().map(|(s, _)| *s).collect())
            .unwrap_or_default()
    }

    fn all_low_loss(&self, load: f64, c: &Criteria) -> bool {
        self.loads
            .get(&load.to_bits())
            .is_some_and(|v| v.iter().all(|(s, _)| s.loss_ratio <= c.loss_ratio))
    }

    fn min_forwarding(&self, load: f64) -> f64 {
        self.loads
            .get(&load.to_bits())
            .map(|v| v.iter().map(|(_, fr)| *fr).fold(f64::INFINITY, f64::min))
            .unwrap_or(f64::INFINITY)
    }

    /// Relevant upper bound, relevant lower bound, and every load's class in ascending order.
    fn bounds(&self, c: &Criteria) -> (Option<f64>, Option<f64>, Vec<(f64, Bound)>) {
        let classes: Vec<(f64, Bound)> = self
            .loads
            .iter()
            .map(|(bits, v)| {
                let samples: Vec<Sample> = v.iter().map(|(s, _)| *s).collect();
                (f64::from_bits(*bits), classify(c, &samples))
            })
            .collect();
        let upper = classes
            .iter()
            .find(|(_, b)| *b == Bound::Upper)
            .map(|(l, _)| *l);
        let lower = classes
            .iter()
            .filter(|(l, b)| *b == Bound::Lower && upper.is_none_or(|u| *l < u))
            .map(|(l, _)| *l)
            .next_back();
        (upper, lower, classes)
    }
}
