//! `linerate rfc2544 --host …` where the hosts' ports are agents' (`HOST:PORT/IFACE`): every
//! trial is set up on the agents (each direction's stream at the trial's size, rate and frame
//! count), started at one instant, and judged by what each direction's receiving agent counted.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use linerate_report::rfc2544::DirectionTrial;
use linerate_session::rfc2544::{AgentTrials, counted};
use linerate_session::{End, SessionError};
use linerate_stream::{Rate, StreamSpec};

use crate::serve::{Conductor, Controller, Placed, Progress, split_hosts};

/// The directions of a test over agents, and the setup of the trial that ran last.
pub struct AgentDirections {
    controller: Controller,
    placed: Vec<Placed>,
    /// One per direction, from one host to another.
    streams: Vec<StreamSpec>,
    link: Option<u64>,
    /// Kept set up until the next trial replaces it (its leases renewed meanwhile).
    current: Option<Conductor>,
}

impl std::fmt::Debug for AgentDirections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentDirections")
            .field("directions", &self.directions())
            .finish_non_exhaustive()
    }
}

impl AgentDirections {
    pub fn new(
        controller: Controller,
        placed: Vec<Placed>,
        streams: Vec<StreamSpec>,
        link: Option<u64>,
    ) -> Self {
        AgentDirections {
            controller,
            placed,
            streams,
            link,
            current: None,
        }
    }
}

fn failed(e: anyhow::Error) -> SessionError {
    SessionError::Agents(format!("{e:#}"))
}

impl AgentTrials for AgentDirections {
    fn directions(&self) -> Vec<String> {
        self.streams.iter().map(|s| s.name.clone()).collect()
    }

    fn link_mbps(&self) -> Option<u64> {
        self.link
    }

    fn backend(&self) -> String {
        "agents".into()
    }

    fn run(
        &mut self,
        size: usize,
        rate: Rate,
        end: End,
        drain: Duration,
        stop: &Arc<AtomicBool>,
    ) -> Result<(Vec<DirectionTrial>, f64), SessionError> {
        let streams: Vec<StreamSpec> = self
            .streams
            .iter()
            .map(|s| StreamSpec {
                size,
                rate,
                count: end.count,
                ..s.clone()
            })
            .collect();
        let split = split_hosts(&self.placed, &streams, end.duration, |_| false).map_err(failed)?;
        // The last trial's ports go before this one's are opened on the same interfaces.
        drop(self.current.take());
        let conductor = Conductor::set_up(&self.controller, &split).map_err(failed)?;
        let progress = Progress::default();
        let result = conductor.run(stop, &progress, drain).map_err(failed)?;
        let elapsed = result.elapsed_s;
        if let Some(e) = result.error {
            return Err(SessionError::Agents(e));
        }
        let totals = conductor.totals();
        let directions = streams
            .iter()
            .zip(&split.flows)
            .map(|(s, at)| {
                let tx = result
                    .per_flow
                    .iter()
                    .find(|(id, _)| *id == at.id)
                    .map_or(0, |(_, n)| *n);
                let got = at.rx.and_then(|g| totals.get(g)?.as_ref()?.flow(at.id));
                let rx = got.map_or(0, |f| f.frames - f.duplicates);
                let sent_fps = if elapsed > 0.0 {
                    tx as f64 / elapsed
                } else {
                    0.0
                };
                // Polled counts carry no histogram: min, mean and max stand for the
                // percentiles, and across two agents only on one clock (--clock tai).
                counted(
                    &s.name,
                    tx,
                    rx,
                    sent_fps,
                    got.and_then(|f| f.latency.as_ref()),
                )
            })
            .collect();
        self.current = Some(conductor);
        Ok((directions, elapsed))
    }
}
