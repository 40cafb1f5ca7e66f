//! What one event did to each flow, from its receive counters read poll by poll: frames lost
//! (the receiver's sequence gaps less the late arrivals that filled them), the loss-derived
//! convergence time (RFC 7747 §5: frames lost / the flow's offered rate) and, from the
//! receiver's arrival stamps, the outage: from the last frame before the flow's first loss to
//! the first frame after its last one. Plain arithmetic over readings: no I/O.

use serde::{Deserialize, Serialize};

/// One flow's counters at one poll.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    pub frames: u64,
    /// Frames the receiver knows are missing: sequence gaps less late arrivals.
    pub lost: u64,
    /// The receiver's stamp of the flow's latest (timed) arrival, ns on CLOCK_MONOTONIC.
    pub last_ns: u64,
}

/// A flow through one event, fed a reading at each poll.
#[derive(Debug, Clone)]
pub struct Track {
    /// The flow's offered rate, frames per second.
    rate: f64,
    base: Reading,
    prev: Reading,
    /// The arrival of the last frame before the first loss.
    from_ns: Option<u64>,
    /// The (estimated) arrival of the first frame after the latest loss.
    restored_ns: Option<u64>,
    /// When the poll that last revealed new loss was taken.
    last_loss_poll_ns: Option<u64>,
    /// Frames when the quiet window began (see [`Track::settled`]).
    quiet_frames: Option<(u64, u64)>,
    /// The loss the last poll revealed, until the next poll confirms it: the level before it
    /// and the marks it replaced.
    unconfirmed: Option<(u64, Marks)>,
}

/// What a loss sets on a track, kept to take it back.
#[derive(Debug, Clone, Copy)]
struct Marks {
    from_ns: Option<u64>,
    restored_ns: Option<u64>,
    last_loss_poll_ns: Option<u64>,
    quiet_frames: Option<(u64, u64)>,
}

impl Track {
    /// A flow at `rate` frames/s whose counters read `base` when the event was triggered.
    pub fn new(base: Reading, rate: f64) -> Track {
        Track {
            rate,
            base,
            prev: base,
            from_ns: None,
            restored_ns: None,
            last_loss_poll_ns: None,
            quiet_frames: None,
            unconfirmed: None,
        }
    }

    /// The counters read at `at_ns`. A loss shows when the first frame after it arrives (a
    /// sequence gap), so the poll that sees it brackets the frame that ended it: it arrived
    /// no later than `last_ns`, and `frames − 1` frame times before it at the earliest when
    /// every frame since the poll before came after the gap (the outage spanned that poll).
    ///
    /// A frame in flight on another CPU when the poll was read reads lost until a later poll
    /// counts it: loss that the next poll takes back (to the level before) was none, and its
    /// marks are undone.
    pub fn update(&mut self, r: Reading, at_ns: u64) {
        if let Some((level, marks)) = self.unconfirmed.take()
            && r.lost <= level
        {
            self.from_ns = marks.from_ns;
            self.restored_ns = marks.restored_ns;
            self.last_loss_poll_ns = marks.last_loss_poll_ns;
            self.quiet_frames = marks.quiet_frames;
        }
        if r.lost > self.prev.lost {
            self.unconfirmed = Some((
                self.prev.lost,
                Marks {
                    from_ns: self.from_ns,
                    restored_ns: self.restored_ns,
                    last_loss_poll_ns: self.last_loss_poll_ns,
                    quiet_frames: self.quiet_frames,
                },
            ));
            if self.from_ns.is_none() {
                self.from_ns = Some(self.prev.last_ns);
            }
            let since = r.frames.saturating_sub(self.prev.frames).max(1);
            let back = ((since - 1) as f64 * 1e9 / self.rate) as u64;
            self.restored_ns = Some(r.last_ns.saturating_sub(back).max(self.prev.last_ns));
            self.last_loss_poll_ns = Some(at_ns);
            self.quiet_frames = None;
        }
        self.prev = r;
    }

    /// Whether the flow has arrived without new loss for `settle_ns` since `since_ns` (the
    /// instant from which no more loss is expected, such as the DUT's FIB being complete)
    /// or its last loss, whichever is later, and frames came in that window.
    pub fn settled(&mut self, since_ns: u64, at_ns: u64, settle_ns: u64) -> bool {
        let start = since_ns.max(self.last_loss_poll_ns.unwrap_or(0));
        if at_ns < start {
            return false;
        }
        let (began, frames) = *self.quiet_frames.get_or_insert((at_ns, self.prev.frames));
        at_ns.saturating_sub(began) >= settle_ns && self.prev.frames > frames
    }

    /// The flow's offered rate, frames per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Frames lost since the event.
    pub fn lost(&self) -> u64 {
        self.prev.lost.saturating_sub(self.base.lost)
    }

    /// The flow's figures, times relative to the event triggered at `event_ns`.
    pub fn result(&self, event_ns: u64) -> FlowTimes {
        let lost = self.lost();
        let rel = |ns: u64| (ns as f64 - event_ns as f64) / 1e6;
        FlowTimes {
            lost,
            loss_ms: loss_ms(lost, self.rate),
            outage_ms: self
                .from_ns
                .zip(self.restored_ns)
                .map(|(from, to)| to.saturating_sub(from) as f64 / 1e6),
            loss_from_ms: self.from_ns.map(rel),
            restored_ms: self.restored_ns.map(rel),
            received: self.prev.frames.saturating_sub(self.base.frames),
        }
    }
}

/// RFC 7747's loss-derived convergence time: frames lost over the offered rate, in ms.
pub fn loss_ms(lost: u64, rate: f64) -> f64 {
    if rate > 0.0 {
        lost as f64 * 1000.0 / rate
    } else {
        0.0
    }
}

/// One flow's figures for one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowTimes {
    pub lost: u64,
    /// Loss-derived convergence time: `lost` / the flow's rate (ms).
    pub loss_ms: f64,
    /// From the last frame received before the flow's first loss to the first received after
    /// its last loss (ms); None when it lost nothing.
    pub outage_ms: Option<f64>,
    /// When that last frame before the loss arrived, from the event (ms).
    pub loss_from_ms: Option<f64>,
    /// When the first frame after the last loss arrived, from the event (ms): the flow's
    /// prefixes restored through the next-best path.
    pub restored_ms: Option<f64>,
    /// Frames received from the event to the end of the measurement.
    pub received: u64,
}

/// The RFC 7747 figures of one event over all flows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    pub lost: u64,
    /// Loss-derived convergence time of the whole offered load: all frames lost over the
    /// total rate (ms): the average over the prefixes.
    pub loss_ms: f64,
    /// The shortest and longest per-flow loss-derived time (ms).
    pub min_flow_loss_ms: f64,
    pub max_flow_loss_ms: f64,
    /// First-prefix convergence: the first flow restored, from the event (ms).
    pub first_prefix_ms: Option<f64>,
    /// Last-prefix convergence: the last flow restored, from the event (ms).
    pub last_prefix_ms: Option<f64>,
    /// Flows that lost frames.
    pub flows_with_loss: usize,
}

impl Aggregate {
    /// Over flows `(rate, times)`.
    pub fn of<'a>(flows: impl IntoIterator<Item = (f64, &'a FlowTimes)> + Clone) -> Aggregate {
        let lost: u64 = flows.clone().into_iter().map(|(_, t)| t.lost).sum();
        let rate: f64 = flows.clone().into_iter().map(|(r, _)| r).sum();
        let per = || flows.clone().into_iter().map(|(_, t)| t);
        let restored = || per().filter_map(|t| t.restored_ms);
        Aggregate {
            lost,
            loss_ms: loss_ms(lost, rate),
            min_flow_loss_ms: per().map(|t| t.loss_ms).fold(f64::INFINITY, f64::min),
            max_flow_loss_ms: per().map(|t| t.loss_ms).fold(0.0, f64::max),
            first_prefix_ms: restored().reduce(f64::min),
            last_prefix_ms: restored().reduce(f64::max),
            flows_with_loss: per().filter(|t| t.lost > 0).count(),
        }
    }
}

/// Minimum, median and maximum of a figure over repeated events.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// None for no values.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            min: v[0],
            median,
            max: v[n - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(frames: u64, lost: u64, last_ms: f64) -> Reading {
        Reading {
            frames,
            lost,
            last_ns: (last_ms * 1e6) as u64,
        }
    }

    #[test]
    fn an_outage_spanning_polls_is_timed_from_the_stamps() {
        // 100 frames/s: a frame each 10 ms. Event at 1000 ms; frames stop after the one that
        // arrived at 1020 ms, 30 frames are lost, the next arrives at 1330 ms.
        let mut t = Track::new(r(100, 0, 1000.0), 100.0);
        t.update(r(102, 0, 1020.0), 1_025_000_000);
        t.update(r(102, 0, 1020.0), 1_100_000_000); // stalled
        t.update(r(102, 0, 1020.0), 1_300_000_000);
        // Two frames since: the first after the gap at 1330, the next at 1340.
        t.update(r(104, 30, 1340.0), 1_345_000_000);
        let f = t.result(1_000_000_000);
        assert_eq!(f.lost, 30);
        assert_eq!(f.loss_ms, 300.0);
        assert_eq!(f.loss_from_ms, Some(20.0));
        assert_eq!(f.restored_ms, Some(330.0));
        // 310 ms from the last frame before to the first after: 30 lost + 1 frame time.
        assert_eq!(f.outage_ms, Some(310.0));
    }

    #[test]
    fn loss_the_next_poll_takes_back_was_frames_in_flight() {
        let mut t = Track::new(r(100, 0, 1000.0), 100.0);
        assert!(!t.settled(0, 1_000_000_000, 200_000_000));
        // Two frames still on the other CPU when this poll read: taken back at the next.
        t.update(r(110, 2, 1100.0), 1_100_000_000);
        t.update(r(120, 0, 1200.0), 1_200_000_000);
        let f = t.result(1_000_000_000);
        assert_eq!((f.lost, f.outage_ms, f.loss_from_ms), (0, None, None));
        assert!(
            t.settled(0, 1_200_000_000, 200_000_000),
            "the quiet window went on"
        );
        // Loss the next poll keeps is loss.
        t.update(r(130, 3, 1300.0), 1_300_000_000);
        t.update(r(140, 3, 1400.0), 1_400_000_000);
        let f = t.result(1_000_000_000);
        assert_eq!((f.lost, f.loss_from_ms), (3, Some(200.0)));
    }

    #[test]
    fn loss_before_the_event_is_not_counted() {
        let mut t = Track::new(r(500, 7, 1000.0), 50.0);
        t.update(r(550, 7, 2000.0), 2_000_000_000);
        let f = t.result(1_000_000_000);
        assert_eq!((f.lost, f.loss_ms, f.outage_ms), (0, 0.0, None));
        assert_eq!(f.received, 50);
    }

    #[test]
    fn settled_needs_a_quiet_window_with_arrivals_after_the_fib() {
        let mut t = Track::new(r(0, 0, 0.0), 100.0);
        t.update(r(10, 0, 100.0), 100_000_000);
        // The FIB was complete at 500 ms: nothing counts before.
        assert!(!t.settled(500_000_000, 100_000_000, 1_000_000_000));
        t.update(r(50, 0, 500.0), 500_000_000);
        assert!(!t.settled(500_000_000, 500_000_000, 1_000_000_000));
        t.update(r(150, 0, 1500.0), 1_500_000_000);
        assert!(t.settled(500_000_000, 1_500_000_000, 1_000_000_000));
    }

    #[test]
    fn new_loss_restarts_the_quiet_window() {
        let mut t = Track::new(r(0, 0, 0.0), 100.0);
        t.update(r(10, 0, 100.0), 100_000_000);
        assert!(!t.settled(0, 100_000_000, 500_000_000));
        t.update(r(20, 5, 250.0), 250_000_000);
        // Asked at every poll, as the run does: the window runs from the poll after the loss.
        assert!(!t.settled(0, 250_000_000, 500_000_000));
        t.update(r(60, 5, 650.0), 650_000_000);
        assert!(!t.settled(0, 650_000_000, 500_000_000));
        t.update(r(80, 5, 800.0), 800_000_000);
        assert!(t.settled(0, 800_000_000, 500_000_000));
    }

    #[test]
    fn aggregate_and_spread() {
        let a = FlowTimes {
            lost: 10,
            loss_ms: 100.0,
            outage_ms: Some(110.0),
            loss_from_ms: Some(5.0),
            restored_ms: Some(115.0),
            received: 1,
        };
        let b = FlowTimes {
            lost: 30,
            loss_ms: 300.0,
            outage_ms: Some(310.0),
            loss_from_ms: Some(2.0),
            restored_ms: Some(312.0),
            received: 1,
        };
        let g = Aggregate::of([(100.0, &a), (100.0, &b)]);
        assert_eq!(g.lost, 40);
        assert_eq!(g.loss_ms, 200.0);
        assert_eq!((g.min_flow_loss_ms, g.max_flow_loss_ms), (100.0, 300.0));
        assert_eq!(
            (g.first_prefix_ms, g.last_prefix_ms),
            (Some(115.0), Some(312.0))
        );
        let s = Spread::of([3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 10.0));
        assert!(Spread::of([]).is_none());
    }
}
