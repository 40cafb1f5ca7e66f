//! The flows of a test bed steered while they run: each flow's lane in the control of the place
//! that sends it, so a caller holds, resumes and re-rates flows by their index in the streams
//! it compiled, without asking where they are sent.

use std::sync::Arc;

use linerate_engine::{FlowControl, FlowState};

use crate::error::{Result, TestBedError};

/// Per flow (the streams compiled, in order): the control of the place that sends it and its
/// lane there. Cheap to clone; every clone steers the same runs.
#[derive(Debug, Clone, Default)]
pub struct BedControl {
    flows: Vec<Option<(Arc<FlowControl>, usize)>>,
    /// Per flow, the rate it was planned at (frames per second; None: unpaced).
    planned: Vec<Option<f64>>,
    /// Why a flow has no control (None for each that has one): the same words for each.
    why_not: Option<String>,
}

impl BedControl {
    pub(crate) fn new(
        flows: Vec<Option<(Arc<FlowControl>, usize)>>,
        planned: Vec<Option<f64>>,
    ) -> Self {
        BedControl {
            flows,
            planned,
            why_not: None,
        }
    }

    /// No flow steered, and why.
    pub(crate) fn none(flows: usize, why: impl Into<String>) -> Self {
        BedControl {
            flows: vec![None; flows],
            planned: vec![None; flows],
            why_not: Some(why.into()),
        }
    }

    /// Whether every flow can be steered; else why not.
    pub fn check(&self) -> Result<()> {
        match (&self.why_not, self.flows.iter().any(Option::is_none)) {
            (Some(why), _) => Err(TestBedError::usage(why.clone())),
            (None, true) => Err(TestBedError::usage(
                "a flow of this test bed has no control (nothing compiled for it)",
            )),
            (None, false) => Ok(()),
        }
    }

    fn lane(&self, flow: usize) -> Result<&(Arc<FlowControl>, usize)> {
        self.check()?;
        self.flows
            .get(flow)
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                TestBedError::usage(format!(
                    "no flow {flow}: the test bed has {}",
                    self.flows.len()
                ))
            })
    }

    /// Flow `flow`'s state; None when it has no control.
    pub fn state(&self, flow: usize) -> Option<FlowState> {
        let (c, lane) = self.flows.get(flow)?.as_ref()?;
        Some(c.state(*lane))
    }

    /// The rate flow `flow` was given since it was planned (frames per second).
    pub fn rate(&self, flow: usize) -> Option<f64> {
        let (c, lane) = self.flows.get(flow)?.as_ref()?;
        c.rate(*lane)
    }

    /// The rate flow `flow` was planned at, in frames per second (None: sent unpaced).
    pub fn planned(&self, flow: usize) -> Option<f64> {
        self.planned.get(flow).copied().flatten()
    }

    /// Sets the flows given to `state`: one change per place, which its workers see together.
    pub fn set(&self, flows: &[usize], state: FlowState) -> Result<()> {
        for &f in flows {
            self.lane(f)?;
        }
        /// A place's control and the changes of its lanes.
        type Changes<'a> = (&'a Arc<FlowControl>, Vec<(usize, FlowState)>);
        let mut places: Vec<Changes<'_>> = Vec::new();
        for &f in flows {
            let (c, lane) = self.lane(f)?;
            match places.iter_mut().find(|(p, _)| Arc::ptr_eq(p, c)) {
                Some((_, lanes)) => lanes.push((*lane, state)),
                None => places.push((c, vec![(*lane, state)])),
            }
        }
        for (c, lanes) in places {
            c.set_states(lanes);
        }
        Ok(())
    }

    /// Gives flow `flow` a new rate in frames per second (None: its planned rate).
    pub fn set_rate(&self, flow: usize, pps: Option<f64>) -> Result<()> {
        let (c, lane) = self.lane(flow)?;
        c.set_rate(*lane, pps);
        Ok(())
    }

    /// Whether some flow is running or paused.
    pub fn any_live(&self) -> bool {
        self.flows
            .iter()
            .flatten()
            .any(|(c, lane)| c.state(*lane) != FlowState::Stopped)
    }

    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_are_steered_on_the_place_and_lane_that_send_them() {
        let (a, b) = (Arc::new(FlowControl::new(2)), Arc::new(FlowControl::new(1)));
        let bed = BedControl::new(
            vec![
                Some((Arc::clone(&a), 0)),
                Some((Arc::clone(&b), 0)),
                Some((Arc::clone(&a), 1)),
            ],
            vec![Some(1000.0), None, Some(10.0)],
        );
        bed.set(&[0, 2], FlowState::Paused).unwrap();
        assert_eq!(
            (a.state(0), a.state(1)),
            (FlowState::Paused, FlowState::Paused)
        );
        assert_eq!(b.state(0), FlowState::Running);
        bed.set_rate(1, Some(500.0)).unwrap();
        assert_eq!(
            (b.rate(0), bed.rate(1), bed.rate(0)),
            (Some(500.0), Some(500.0), None)
        );
        let no = bed.set(&[0, 3], FlowState::Stopped).unwrap_err();
        assert_eq!(no.to_string(), "no flow 3: the test bed has 3");
        assert_eq!(a.state(0), FlowState::Paused, "all or nothing");
        bed.set(&[0, 1, 2], FlowState::Stopped).unwrap();
        assert!(!bed.any_live());
        assert_eq!(
            (bed.planned(0), bed.planned(1), bed.planned(7)),
            (Some(1000.0), None, None)
        );
        let none = BedControl::none(2, "agents' flows are not steered yet");
        assert_eq!(
            none.set(&[0], FlowState::Paused).unwrap_err().to_string(),
            "agents' flows are not steered yet"
        );
        assert_eq!(none.state(0), None);
    }
}
