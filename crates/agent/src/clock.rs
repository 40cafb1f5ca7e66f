//! The clock an agent schedules its start on, and the offset of an agent's clock from the
//! controller's, measured over the control connection as NTP does (RFC 5905 §8): four
//! timestamps per exchange, the exchange with the shortest round trip kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// CLOCK_REALTIME, or CLOCK_TAI (Linux): the clock PTP keeps hosts together on. Both ends of a
/// measurement read the same one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartClock {
    #[default]
    Realtime,
    Tai,
}

impl StartClock {
    /// Nanoseconds on this clock now.
    pub fn now_ns(self) -> u64 {
        use nix::time::{ClockId, clock_gettime};
        let id = match self {
            StartClock::Realtime => ClockId::CLOCK_REALTIME,
            #[cfg(target_os = "linux")]
            StartClock::Tai => ClockId::CLOCK_TAI,
            #[cfg(not(target_os = "linux"))]
            StartClock::Tai => ClockId::CLOCK_REALTIME,
        };
        // Both clocks exist on every kernel linerate runs on; a failure would be a kernel
        // without them, where 0 makes every start "now" rather than never.
        clock_gettime(id).map_or(0, |t| {
            (t.tv_sec() as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(t.tv_nsec() as u64)
        })
    }

    /// Waits until `at_ns` on this clock, or until `stop` is set (then false). Sleeps in short
    /// steps (a step of the clock, or a stop, is noticed within one) and spins the last 2 ms:
    /// a sleep's wake-up is late by the scheduler's latency, a spin by a clock read.
    pub fn wait_until(self, at_ns: u64, stop: &AtomicBool) -> bool {
        const SPIN: u64 = 2_000_000;
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = self.now_ns();
            if now >= at_ns {
                return true;
            }
            let left = at_ns - now;
            if left > SPIN {
                std::thread::sleep(Duration::from_nanos((left - SPIN).min(50_000_000)));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// One exchange: the controller sent at `t1` and heard back at `t4` (its clock); the agent
/// received at `t2` and answered at `t3` (its clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub t1: u64,
    pub t2: u64,
    pub t3: u64,
    pub t4: u64,
}

/// The agent's clock minus the controller's, and how far off that may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offset {
    pub offset_ns: i64,
    /// Half the round trip of the exchange it came from: the offset is exact only if the
    /// request and the answer took equally long, and is off by at most this much otherwise.
    pub uncertainty_ns: u64,
    pub round_trip_ns: u64,
}

impl Sample {
    pub fn offset(&self) -> Offset {
        let (t1, t2, t3, t4) = (
            i128::from(self.t1),
            i128::from(self.t2),
            i128::from(self.t3),
            i128::from(self.t4),
        );
        let offset = ((t2 - t1) + (t3 - t4)) / 2;
        let round_trip = ((t4 - t1) - (t3 - t2)).max(0);
        Offset {
            offset_ns: offset.clamp(i64::MIN.into(), i64::MAX.into()) as i64,
            uncertainty_ns: (round_trip / 2) as u64,
            round_trip_ns: round_trip as u64,
        }
    }
}

/// The offset of the exchange with the shortest round trip (the one queueing delayed least).
pub fn best(samples: &[Sample]) -> Option<Offset> {
    samples
        .iter()
        .map(Sample::offset)
        .min_by_key(|o| o.round_trip_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symmetric_exchange_gives_the_exact_offset() {
        // Agent 5 ms ahead, 100 µs each way, 20 µs in the agent.
        let s = Sample {
            t1: 1_000_000,
            t2: 1_000_000 + 100_000 + 5_000_000,
            t3: 1_000_000 + 120_000 + 5_000_000,
            t4: 1_000_000 + 220_000,
        };
        let o = s.offset();
        assert_eq!(o.offset_ns, 5_000_000);
        assert_eq!(o.round_trip_ns, 200_000);
        assert_eq!(o.uncertainty_ns, 100_000);
    }

    #[test]
    fn an_asymmetric_exchange_errs_by_at_most_half_the_round_trip() {
        // Agent 3 ms behind; the request took 300 µs, the answer 10 µs.
        let s = Sample {
            t1: 10_000_000,
            t2: 10_000_000 + 300_000 - 3_000_000,
            t3: 10_000_000 + 300_000 - 3_000_000,
            t4: 10_000_000 + 310_000,
        };
        let o = s.offset();
        let error = (o.offset_ns - (-3_000_000)).unsigned_abs();
        assert!(error <= o.uncertainty_ns, "{o:?}");
        assert_eq!(o.uncertainty_ns, 155_000);
    }

    #[test]
    fn the_shortest_round_trip_wins() {
        let slow = Sample {
            t1: 0,
            t2: 900,
            t3: 900,
            t4: 1_000,
        };
        let fast = Sample {
            t1: 0,
            t2: 50,
            t3: 50,
            t4: 100,
        };
        assert_eq!(best(&[slow, fast]), Some(fast.offset()));
        assert_eq!(best(&[]), None);
    }

    #[test]
    fn waiting_ends_at_the_instant_or_at_a_stop() {
        let clock = StartClock::Realtime;
        let at = clock.now_ns() + 20_000_000;
        assert!(clock.wait_until(at, &AtomicBool::new(false)));
        assert!(clock.now_ns() >= at);
        assert!(!clock.wait_until(at + 10_000_000_000, &AtomicBool::new(true)));
    }
}
