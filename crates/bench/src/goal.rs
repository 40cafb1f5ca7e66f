use std::time::Duration;

use serde::Serialize;

use crate::Error;

/// An RFC 9971 search goal (§4.5): what a load must show to count as "meets the loss goal".
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SearchGoal {
    /// Goal Loss Ratio: a trial losing more than this is a high-loss trial (0 = NDR).
    pub loss_ratio: f64,
    /// Goal Exceed Ratio: the share of trial time allowed to be high-loss at a lower bound
    /// (0 = RFC 2544: one lossy trial rules a load out; 0.5 = TST009's median).
    pub exceed_ratio: f64,
    /// Goal Final Trial Duration: only trials at least this long can make a lower bound.
    pub final_duration_s: f64,
    /// Goal Duration Sum: how much full-length trial time decides a load.
    pub duration_sum_s: f64,
    /// Goal Width, relative: the search stops when (upper − lower) / upper ≤ width.
    pub width: f64,
    /// Goal Initial Trial Duration: the shortest trials the search starts with.
    pub initial_duration_s: f64,
}

impl SearchGoal {
    /// A goal in the RFC 2544 manner: exceed ratio 0, one full-length trial decides a load,
    /// width 0.5 %, trials from 1 s (or `final_duration` if shorter) up to `final_duration`.
    pub fn new(loss_ratio: f64, final_duration: Duration) -> Result<Self, Error> {
        let final_s = final_duration.as_secs_f64();
        let goal = Self {
            loss_ratio,
            exceed_ratio: 0.0,
            final_duration_s: final_s,
            duration_sum_s: final_s,
            width: 0.005,
            initial_duration_s: final_s.min(1.0),
        };
        goal.validate()?;
        Ok(goal)
    }

    pub fn with_exceed_ratio(self, exceed_ratio: f64) -> Result<Self, Error> {
        Self {
            exceed_ratio,
            ..self
        }
        .checked()
    }

    pub fn with_duration_sum(self, sum: Duration) -> Result<Self, Error> {
        Self {
            duration_sum_s: sum.as_secs_f64(),
            ..self
        }
        .checked()
    }

    pub fn with_width(self, width: f64) -> Result<Self, Error> {
        Self { width, ..self }.checked()
    }

    pub fn with_initial_duration(self, initial: Duration) -> Result<Self, Error> {
        Self {
            initial_duration_s: initial.as_secs_f64(),
            ..self
        }
        .checked()
    }

    fn checked(self) -> Result<Self, Error> {
        self.validate()?;
        Ok(self)
    }

    /// The RFC's ranges: ratios in [0, 1), durations and width above 0, the initial trial
    /// duration not above the final one. The width is also below 1: it is relative.
    pub fn validate(&self) -> Result<(), Error> {
        let ratio_ok = |r: f64| (0.0..1.0).contains(&r);
        if !ratio_ok(self.loss_ratio) {
            return Err(Error::LossRatio(self.loss_ratio));
        }
        if !ratio_ok(self.exceed_ratio) {
            return Err(Error::ExceedRatio(self.exceed_ratio));
        }
        if !(self.width > 0.0 && self.width < 1.0) {
            return Err(Error::Width(self.width));
        }
        for (v, what) in [
            (self.final_duration_s, "final trial duration"),
            (self.duration_sum_s, "duration sum"),
            (self.initial_duration_s, "initial trial duration"),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(Error::ZeroDuration(what));
            }
        }
        if self.initial_duration_s > self.final_duration_s {
            return Err(Error::InitialAfterFinal {
                initial_s: self.initial_duration_s,
                final_s: self.final_duration_s,
            });
        }
        Ok(())
    }
}

/// How a goal's search ended (RFC 9971 §4.7: regular and irregular goal results).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    /// Both relevant bounds exist and lie within the goal width.
    Regular,
    /// The max load itself met the goal: there is no upper bound, the reported throughput is
    /// the max load (an irregular result: the device may do more than was offered).
    MaxLoadIsLowerBound,
    /// Even the min load failed the goal: no rate meets it. Reported as such, never as 0.
    NoRateMeetsGoal,
}

#[cfg(test)]
mod tests {
    use super::*;

    const S60: Duration = Duration::from_secs(60);

    #[test]
    fn goals_out_of_range_are_refused_with_the_reason() {
        assert!(matches!(
            SearchGoal::new(-0.1, S60),
            Err(Error::LossRatio(_))
        ));
        assert!(matches!(
            SearchGoal::new(1.0, S60),
            Err(Error::LossRatio(_))
        ));
        assert!(matches!(
            SearchGoal::new(f64::NAN, S60),
            Err(Error::LossRatio(_))
        ));
        assert!(matches!(
            SearchGoal::new(0.0, Duration::ZERO),
            Err(Error::ZeroDuration(_))
        ));
        let g = SearchGoal::new(0.005, S60).unwrap();
        assert!(matches!(
            g.with_exceed_ratio(1.0),
            Err(Error::ExceedRatio(_))
        ));
        assert!(matches!(g.with_width(0.0), Err(Error::Width(_))));
        assert!(matches!(g.with_width(-1.0), Err(Error::Width(_))));
        assert!(matches!(
            g.with_duration_sum(Duration::ZERO),
            Err(Error::ZeroDuration(_))
        ));
        assert!(matches!(
            g.with_initial_duration(Duration::from_secs(61)),
            Err(Error::InitialAfterFinal { .. })
        ));
        assert_eq!(g.with_exceed_ratio(0.5).unwrap().exceed_ratio, 0.5);
    }

    #[test]
    fn a_short_final_duration_starts_at_itself() {
        let g = SearchGoal::new(0.0, Duration::from_millis(200)).unwrap();
        assert_eq!(g.initial_duration_s, 0.2);
    }
}
