//! When a client opens its connections: at a steady rate, or rising linearly from nothing to
//! the rate (ramp-up), holding it (steady), and falling back to nothing (ramp-down) — the
//! phases of a firewall or load balancer test, where a device that holds at a rate may still
//! fail on the way there. The schedule is the number of connections due by a time (the
//! integral of the rate), so a run that falls behind catches up and never opens more than the
//! phases add up to.

use std::time::Duration;

use serde::Serialize;

use crate::StatefulError;

/// A rate of new connections over time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Schedule {
    /// Connections a second at the top.
    pub rate: f64,
    #[serde(with = "seconds")]
    pub ramp_up: Duration,
    #[serde(with = "seconds")]
    pub steady: Duration,
    #[serde(with = "seconds")]
    pub ramp_down: Duration,
}

mod seconds {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

impl Schedule {
    pub fn validate(&self) -> Result<(), StatefulError> {
        if !(self.rate > 0.0 && self.rate.is_finite()) {
            return Err(StatefulError::Usage(format!(
                "connection rate {}: give a positive number a second",
                self.rate
            )));
        }
        if (self.ramp_up + self.steady + self.ramp_down).is_zero() {
            return Err(StatefulError::Usage(
                "a schedule of no time opens no connection: give --duration, --ramp-up or --ramp-down"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Every connection the schedule opens: the rate's integral over its phases.
    pub fn connections(&self) -> u64 {
        self.due(self.length().as_secs_f64()).floor() as u64
    }

    pub fn length(&self) -> Duration {
        self.ramp_up + self.steady + self.ramp_down
    }

    /// The rate the schedule asks for at `t` seconds.
    pub fn rate_at(&self, t: f64) -> f64 {
        let (u, s, d) = self.phases();
        let r = self.rate;
        if t < 0.0 {
            0.0
        } else if t < u {
            r * t / u
        } else if t <= u + s {
            r
        } else if t < u + s + d {
            r * (1.0 - (t - u - s) / d)
        } else {
            0.0
        }
    }

    /// Connections due by `t` seconds: the rate's integral from 0 to `t`.
    pub fn due(&self, t: f64) -> f64 {
        let (u, s, d) = self.phases();
        let r = self.rate;
        let t = t.clamp(0.0, u + s + d);
        if t <= u {
            return if u > 0.0 { r * t * t / (2.0 * u) } else { 0.0 };
        }
        let up = r * u / 2.0;
        if t <= u + s {
            return up + r * (t - u);
        }
        let tau = t - u - s;
        up + r * s + r * (tau - tau * tau / (2.0 * d))
    }

    /// When `k` connections are due (the inverse of [`Schedule::due`]); None: never.
    pub fn when(&self, k: f64) -> Option<f64> {
        let (u, s, d) = self.phases();
        let r = self.rate;
        let k = k.max(0.0);
        let up = r * u / 2.0;
        if k <= up {
            return Some(if u > 0.0 {
                (2.0 * u * k / r).sqrt()
            } else {
                0.0
            });
        }
        if k <= up + r * s {
            return Some(u + (k - up) / r);
        }
        let left = k - up - r * s;
        // r(τ − τ²/2d) = left, on the falling side: τ = d(1 − √(1 − 2·left/(r·d))).
        let under = 1.0 - 2.0 * left / (r * d);
        (d > 0.0 && under >= 0.0).then(|| u + s + d * (1.0 - under.sqrt()))
    }

    fn phases(&self) -> (f64, f64, f64) {
        (
            self.ramp_up.as_secs_f64(),
            self.steady.as_secs_f64(),
            self.ramp_down.as_secs_f64(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(up: u64, steady: u64, down: u64) -> Schedule {
        Schedule {
            rate: 1000.0,
            ramp_up: Duration::from_secs(up),
            steady: Duration::from_secs(steady),
            ramp_down: Duration::from_secs(down),
        }
    }

    #[test]
    fn the_phases_add_their_areas() {
        // 10 s up to 1000/s (5,000), 20 s at it (20,000), 4 s down (2,000).
        let s = schedule(10, 20, 4);
        assert_eq!(s.connections(), 27_000);
        assert_eq!(schedule(0, 3, 0).connections(), 3_000);
        assert_eq!(s.due(5.0), 1_250.0);
        assert_eq!(s.due(10.0), 5_000.0);
        assert_eq!(s.due(30.0), 25_000.0);
        assert_eq!(s.due(32.0), 26_500.0);
        assert_eq!(s.due(99.0), 27_000.0);
        assert_eq!(s.rate_at(5.0), 500.0);
        assert_eq!(s.rate_at(15.0), 1000.0);
        assert_eq!(s.rate_at(33.0), 250.0);
        assert_eq!(s.rate_at(34.5), 0.0);
    }

    #[test]
    fn when_inverts_due_in_every_phase() {
        for s in [schedule(10, 20, 4), schedule(0, 5, 0), schedule(3, 0, 7)] {
            let total = s.connections() as f64;
            for k in [0.0, 1.0, 17.0, total / 3.0, total / 2.0, total - 1.0, total] {
                let t = s.when(k).expect("due within the schedule");
                assert!((s.due(t) - k).abs() < 1e-6, "{s:?} k {k} t {t}");
            }
        }
        assert_eq!(schedule(0, 5, 0).when(6_000.0), None);
    }

    #[test]
    fn a_schedule_of_no_time_is_refused() {
        assert!(schedule(0, 0, 0).validate().is_err());
        let mut s = schedule(1, 0, 0);
        s.rate = 0.0;
        assert!(s.validate().is_err());
    }
}
