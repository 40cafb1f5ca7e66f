//! The flows of a test bed steered while they run: each flow's lane in the control of the place
//! that sends it, or, for a flow an agent sends, the agent asked to steer it, so a caller holds,
//! resumes and re-rates flows by their index in the streams it compiled, without asking where
//! they are sent.

use std::sync::{Arc, Mutex};

use linerate_engine::{FlowControl, FlowState};

use crate::error::{Result, TestBedError};

/// A new rate for a flow: frames per second, its planned rate times a factor (a rate in the
/// unit it was planned in, where the plan is another machine's), or its planned rate again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateAsk {
    Pps(f64),
    TimesPlanned(f64),
    Planned,
}

/// One flow's change, as a place that sends it takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowChange {
    /// The flow's id (the signature's).
    pub id: u16,
    /// None: as it is.
    pub state: Option<FlowState>,
    /// None: as it is.
    pub rate: Option<RateAsk>,
}

/// Places of other machines, steered by asking them: `changes` by the global place that sends
/// each flow. A refusal says why and which places' changes did not take effect (the others'
/// did: each machine is asked on its own).
pub trait Remote: Send + Sync + std::fmt::Debug {
    fn steer(
        &self,
        changes: &[(usize, FlowChange)],
    ) -> std::result::Result<(), (String, Vec<usize>)>;
}

/// Where a flow is steered.
#[derive(Debug, Clone)]
enum Lane {
    /// Its place is this machine's: its control and its lane there.
    Local(Arc<FlowControl>, usize),
    /// Another machine's place sends it: that place, its id, and the state last asked.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Remote {
        place: usize,
        id: u16,
        state: Arc<Mutex<FlowState>>,
    },
}

/// Per flow (the streams compiled, in order): where it is steered. Cheap to clone; every clone
/// steers the same runs.
#[derive(Debug, Clone, Default)]
pub struct BedControl {
    flows: Vec<Option<Lane>>,
    /// Per flow, the rate it was planned at (frames per second; None: unpaced, or planned on
    /// another machine).
    planned: Vec<Option<f64>>,
    remote: Option<Arc<dyn Remote>>,
    /// Why a flow has no control (None for each that has one): the same words for each.
    why_not: Option<String>,
}

impl BedControl {
    pub(crate) fn new(
        flows: Vec<Option<(Arc<FlowControl>, usize)>>,
        planned: Vec<Option<f64>>,
    ) -> Self {
        BedControl {
            flows: flows
                .into_iter()
                .map(|f| f.map(|(c, lane)| Lane::Local(c, lane)))
                .collect(),
            planned,
            remote: None,
            why_not: None,
        }
    }

    /// Flows that other machines' places send, each `(place, id)`, steered through `remote`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn remote(flows: &[(usize, u16)], remote: Arc<dyn Remote>) -> Self {
        BedControl {
            flows: flows
                .iter()
                .map(|&(place, id)| {
                    Some(Lane::Remote {
                        place,
                        id,
                        state: Arc::new(Mutex::new(FlowState::Running)),
                    })
                })
                .collect(),
            planned: vec![None; flows.len()],
            remote: Some(remote),
            why_not: None,
        }
    }

    /// No flow steered, and why.
    pub(crate) fn none(flows: usize, why: impl Into<String>) -> Self {
        BedControl {
            flows: vec![None; flows],
            planned: vec![None; flows],
            remote: None,
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

    /// Flow `flow`'s lane (the bed checked by the caller).
    fn lane(&self, flow: usize) -> Result<&Lane> {
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

    /// Flow `flow`'s state (for a flow an agent sends, as last asked); None when it has no
    /// control.
    pub fn state(&self, flow: usize) -> Option<FlowState> {
        match self.flows.get(flow)?.as_ref()? {
            Lane::Local(c, lane) => Some(c.state(*lane)),
            Lane::Remote { state, .. } => Some(*locked(state)),
        }
    }

    /// The rate flow `flow` was planned at, in frames per second (None: sent unpaced, or
    /// planned where an agent sends it).
    pub fn planned(&self, flow: usize) -> Option<f64> {
        self.planned.get(flow).copied().flatten()
    }

    /// Whether another machine sends flow `flow`.
    pub fn is_remote(&self, flow: usize) -> bool {
        matches!(self.flows.get(flow), Some(Some(Lane::Remote { .. })))
    }

    /// Sets the flows given to `state`: one change per place, which its workers see together
    /// (an agent's places, one request per agent).
    pub fn set(&self, flows: &[usize], state: FlowState) -> Result<()> {
        let change = FlowChange {
            id: 0,
            state: Some(state),
            rate: None,
        };
        let changes: Vec<(usize, FlowChange)> = flows.iter().map(|&f| (f, change)).collect();
        self.apply(&changes)
    }

    /// Gives flow `flow` a new rate.
    pub fn set_rate(&self, flow: usize, rate: RateAsk) -> Result<()> {
        let change = FlowChange {
            id: 0,
            state: None,
            rate: Some(rate),
        };
        self.apply(&[(flow, change)])
    }

    /// Applies each `(flow index, change)`: every flow checked first, then the local ones one
    /// change per place, the remote ones one request per agent.
    fn apply(&self, changes: &[(usize, FlowChange)]) -> Result<()> {
        self.check()?;
        for (f, change) in changes {
            if let (Some(RateAsk::TimesPlanned(_)), Lane::Local(..)) = (change.rate, self.lane(*f)?)
                && self.planned(*f).is_none()
            {
                return Err(TestBedError::usage(
                    "the flow is sent unpaced, at the port's max rate: it has no schedule to change",
                ));
            }
        }
        /// A place's control and the changes of its lanes.
        type Local<'a> = (&'a Arc<FlowControl>, Vec<(usize, FlowChange)>);
        let mut places: Vec<Local<'_>> = Vec::new();
        let mut remote: Vec<(usize, FlowChange)> = Vec::new();
        for &(f, change) in changes {
            match self.lane(f)? {
                Lane::Local(c, lane) => {
                    let change = match change.rate {
                        Some(RateAsk::TimesPlanned(x)) => FlowChange {
                            rate: self.planned(f).map(|p| RateAsk::Pps(p * x)),
                            ..change
                        },
                        _ => change,
                    };
                    match places.iter_mut().find(|(p, _)| Arc::ptr_eq(p, c)) {
                        Some((_, lanes)) => lanes.push((*lane, change)),
                        None => places.push((c, vec![(*lane, change)])),
                    }
                }
                Lane::Remote { place, id, .. } => {
                    remote.push((*place, FlowChange { id: *id, ..change }));
                }
            }
        }
        if !remote.is_empty() {
            let to = self.remote.as_ref().ok_or_else(|| {
                TestBedError::usage("flows on another machine, and no way to reach it")
            })?;
            let outcome = to.steer(&remote);
            let failed = outcome
                .as_ref()
                .err()
                .map_or(&[][..], |(_, p)| p.as_slice());
            // What took effect is remembered, what did not is not.
            for &(f, change) in changes {
                if let (Some(Lane::Remote { state, place, .. }), Some(s)) =
                    (self.flows.get(f).and_then(Option::as_ref), change.state)
                    && !failed.contains(place)
                {
                    *locked(state) = s;
                }
            }
            if let Err((why, _)) = outcome {
                return Err(TestBedError::usage(why));
            }
        }
        for (c, lanes) in places {
            for (lane, change) in &lanes {
                match change.rate {
                    Some(RateAsk::Pps(pps)) => c.set_rate(*lane, Some(pps)),
                    Some(RateAsk::Planned) => c.set_rate(*lane, None),
                    // Made frames per second above, where the plan is this machine's.
                    Some(RateAsk::TimesPlanned(_)) | None => {}
                }
            }
            let states: Vec<(usize, FlowState)> = lanes
                .iter()
                .filter_map(|(lane, change)| Some((*lane, change.state?)))
                .collect();
            if !states.is_empty() {
                c.set_states(states);
            }
        }
        Ok(())
    }

    /// Applies changes a controller asked of this machine's places, by flow id (an agent's
    /// share of a controller's bed): `ids[i]` is flow `i`'s id.
    pub fn apply_by_id(&self, ids: &[u16], changes: &[FlowChange]) -> Result<()> {
        let mut by_index = Vec::with_capacity(changes.len());
        for change in changes {
            let f = ids.iter().position(|&id| id == change.id).ok_or_else(|| {
                TestBedError::usage(format!("no flow with id {} here", change.id))
            })?;
            by_index.push((f, *change));
        }
        self.apply(&by_index)
    }

    /// Whether some flow is running or paused.
    pub fn any_live(&self) -> bool {
        (0..self.flows.len()).any(|f| self.state(f).is_some_and(|s| s != FlowState::Stopped))
    }

    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
        bed.set_rate(0, RateAsk::TimesPlanned(3.0)).unwrap();
        bed.set_rate(2, RateAsk::Pps(50.0)).unwrap();
        assert_eq!((a.rate(0), a.rate(1)), (Some(3000.0), Some(50.0)));
        let unpaced = bed.set_rate(1, RateAsk::TimesPlanned(2.0)).unwrap_err();
        assert!(unpaced.to_string().contains("unpaced"), "{unpaced}");
        bed.set_rate(0, RateAsk::Planned).unwrap();
        assert_eq!(a.rate(0), None);
        let no = bed.set(&[0, 3], FlowState::Stopped).unwrap_err();
        assert_eq!(no.to_string(), "no flow 3: the test bed has 3");
        assert_eq!(a.state(0), FlowState::Paused, "all or nothing");
        bed.set(&[0, 1, 2], FlowState::Stopped).unwrap();
        assert!(!bed.any_live());
        assert_eq!(
            (bed.planned(0), bed.planned(1), bed.planned(7)),
            (Some(1000.0), None, None)
        );
        let none = BedControl::none(2, "not steered here");
        assert_eq!(
            none.set(&[0], FlowState::Paused).unwrap_err().to_string(),
            "not steered here"
        );
        assert_eq!(none.state(0), None);
        // An agent's share: changes by id.
        bed.apply_by_id(
            &[7, 8, 9],
            &[FlowChange {
                id: 9,
                state: Some(FlowState::Running),
                rate: None,
            }],
        )
        .unwrap();
        assert_eq!(a.state(1), FlowState::Running);
        assert!(
            bed.apply_by_id(
                &[7, 8, 9],
                &[FlowChange {
                    id: 4,
                    state: None,
                    rate: None
                }]
            )
            .is_err()
        );
    }

    #[derive(Debug, Default)]
    struct Asked(Mutex<Vec<(usize, FlowChange)>>);

    impl Remote for Asked {
        fn steer(
            &self,
            changes: &[(usize, FlowChange)],
        ) -> std::result::Result<(), (String, Vec<usize>)> {
            // Place 9's machine is gone; the others take their changes.
            locked(&self.0).extend(changes.iter().filter(|(place, _)| *place != 9));
            if changes.iter().any(|(place, _)| *place == 9) {
                return Err(("agent 9 is gone".into(), vec![9]));
            }
            Ok(())
        }
    }

    #[test]
    fn an_agents_flows_are_asked_of_it_by_place_and_id_and_remembered() {
        let asked = Arc::new(Asked::default());
        let bed = BedControl::remote(&[(0, 10), (2, 11), (9, 12)], Arc::clone(&asked) as _);
        bed.set(&[0, 1], FlowState::Paused).unwrap();
        bed.set_rate(1, RateAsk::TimesPlanned(2.0)).unwrap();
        let got = locked(&asked.0).clone();
        assert_eq!(got.len(), 3);
        assert_eq!(
            (got[0].0, got[0].1.id, got[0].1.state),
            (0, 10, Some(FlowState::Paused))
        );
        assert_eq!(
            (got[2].0, got[2].1.rate),
            (2, Some(RateAsk::TimesPlanned(2.0)))
        );
        assert_eq!(bed.state(1), Some(FlowState::Paused));
        assert!(bed.is_remote(0) && bed.planned(0).is_none());
        let lost = bed.set(&[0, 2], FlowState::Stopped).unwrap_err();
        assert_eq!(lost.to_string(), "agent 9 is gone");
        assert_eq!(
            bed.state(2),
            Some(FlowState::Running),
            "not remembered when refused"
        );
        assert_eq!(
            bed.state(0),
            Some(FlowState::Stopped),
            "the agent that took it"
        );
    }
}
