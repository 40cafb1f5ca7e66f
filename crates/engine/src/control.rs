//! Flows started, stopped, paused, resumed and given a new rate while a run goes on. A run that
//! is given a [`FlowControl`] keeps one entry a lane (a stream of its plan, the lone stream of a
//! cycle); any thread changes them, and each worker's loop sees the change at its next turn
//! through one load of a generation counter, so a run whose flows never change pays that load
//! and nothing else.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// What a flow does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowState {
    /// Sending on its schedule.
    Running,
    /// Holding its place: resumed, its next frame leaves at once and the rest follow as planned.
    Paused,
    /// Not sending. A flow stopped and started again within one run goes on from where it was
    /// (its counters too): a run's flows are stopped only by ending the run.
    Stopped,
}

impl FlowState {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Running,
            1 => Self::Paused,
            _ => Self::Stopped,
        }
    }

    fn as_u8(self) -> u8 {
        match self {
            Self::Running => 0,
            Self::Paused => 1,
            Self::Stopped => 2,
        }
    }

    /// Whether the flow sends no frame now.
    pub fn holds(self) -> bool {
        self != Self::Running
    }
}

#[derive(Debug, Default)]
struct LaneControl {
    state: AtomicU8,
    /// The rate asked since the run was planned, as f64 bits; 0: the plan's own.
    pps: AtomicU64,
}

/// Each lane's state and rate, shared between whoever controls a run and its workers.
#[derive(Debug)]
pub struct FlowControl {
    generation: AtomicU64,
    lanes: Box<[LaneControl]>,
}

impl FlowControl {
    /// `lanes` lanes, each running at its planned rate.
    pub fn new(lanes: usize) -> Self {
        FlowControl {
            generation: AtomicU64::new(0),
            lanes: (0..lanes).map(|_| LaneControl::default()).collect(),
        }
    }

    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// `lane`'s state (a lane the control does not hold runs).
    pub fn state(&self, lane: usize) -> FlowState {
        self.lanes.get(lane).map_or(FlowState::Running, |l| {
            FlowState::from_u8(l.state.load(Ordering::Relaxed))
        })
    }

    /// The rate asked for `lane` since it was planned (frames per second); None: the plan's.
    pub fn rate(&self, lane: usize) -> Option<f64> {
        let bits = self.lanes.get(lane)?.pps.load(Ordering::Relaxed);
        (bits != 0).then(|| f64::from_bits(bits))
    }

    /// Sets the states of the lanes given, as one change the workers see together (a lane
    /// the control does not hold is left out).
    pub fn set_states(&self, changes: impl IntoIterator<Item = (usize, FlowState)>) {
        for (lane, state) in changes {
            if let Some(l) = self.lanes.get(lane) {
                l.state.store(state.as_u8(), Ordering::Relaxed);
            }
        }
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Gives `lane` a new rate in frames per second (None: back to the plan's), from the
    /// instant its worker sees it; a held lane takes it when it runs again. The caller checks
    /// the rate (`Pacing::at_rate` holds it): one the schedule cannot keep leaves the lane at
    /// the rate it has.
    pub fn set_rate(&self, lane: usize, pps: Option<f64>) {
        let bits = pps
            .filter(|p| p.is_finite() && *p > 0.0)
            .map_or(0, f64::to_bits);
        if let Some(l) = self.lanes.get(lane) {
            l.pps.store(bits, Ordering::Relaxed);
        }
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Whether some lane is running or paused (a run whose every lane stopped has nothing
    /// left to do).
    pub fn any_live(&self) -> bool {
        (0..self.lanes.len()).any(|i| self.state(i) != FlowState::Stopped)
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// A worker's view of a run's control: whether it changed since the worker last looked.
#[derive(Debug)]
pub(crate) struct Watch<'a> {
    pub(crate) control: &'a FlowControl,
    seen: u64,
}

impl<'a> Watch<'a> {
    /// Watching from the start: the first look reports a change, so the states set before the
    /// run are applied before its first frame.
    pub(crate) fn new(control: &'a FlowControl) -> Self {
        Watch {
            control,
            seen: u64::MAX,
        }
    }

    /// Whether the control changed since the last call that said so.
    #[inline]
    pub(crate) fn changed(&mut self) -> bool {
        let now = self.control.generation();
        let changed = now != self.seen;
        self.seen = now;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_sees_each_change_once_and_the_states_set_before_it_started() {
        let c = FlowControl::new(3);
        c.set_states([(1, FlowState::Stopped)]);
        let mut w = Watch::new(&c);
        assert!(w.changed());
        assert!(!w.changed());
        assert_eq!(c.state(1), FlowState::Stopped);
        c.set_states([(0, FlowState::Paused), (1, FlowState::Running)]);
        c.set_rate(2, Some(2000.0));
        assert!(w.changed() && !w.changed());
        assert_eq!(
            (c.state(0), c.state(1), c.rate(2), c.rate(0)),
            (FlowState::Paused, FlowState::Running, Some(2000.0), None)
        );
        c.set_states([(0, FlowState::Stopped), (1, FlowState::Stopped)]);
        assert!(c.any_live(), "lane 2 runs");
        c.set_states([(2, FlowState::Stopped)]);
        assert!(!c.any_live());
        c.set_rate(2, None);
        assert_eq!(
            (c.rate(2), c.state(7), c.rate(7)),
            (None, FlowState::Running, None)
        );
    }
}
