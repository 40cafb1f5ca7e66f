//! Hosts on this machine's ports: every port a host lives on is a place, each answering ARP,
//! ND and ping for its hosts and counting the flows sent toward it, all sending at once.

use std::sync::Arc;

use linerate_engine::FlowControl;
use linerate_session::{HostSession, PortRun, PortSession, RunOptions, RunReceiver};
use linerate_stream::{Plan, StreamSpec};

use crate::FlowAt;
use crate::bed::{BedRun, BedSpec, Places};
use crate::error::{Result, TestBedError};

#[derive(Debug)]
pub(crate) struct LocalHosts {
    session: HostSession,
    peers: Vec<linerate_stream::HostSpec>,
    wait: std::time::Duration,
    runs: Vec<PortRun>,
    plans: Vec<Plan>,
}

impl LocalHosts {
    pub(crate) fn open(spec: &BedSpec) -> Result<LocalHosts> {
        let Places::Hosts {
            hosts,
            given,
            peers,
            capture,
        } = &spec.places
        else {
            unreachable!("opened for hosts");
        };
        let mut rx = spec.rx.clone().unwrap_or_default();
        // A capture needs the frames to reach the stack.
        rx.receiver.pass |= !capture.is_empty();
        let mut session = HostSession::open(hosts, &spec.port, &rx, &spec.to_stack)?;
        for g in given {
            session.give_neighbour(&g.host, g.hop, g.mac)?;
        }
        Ok(LocalHosts {
            session,
            peers: peers.clone(),
            wait: spec.resolve_wait,
            runs: Vec::new(),
            plans: Vec::new(),
        })
    }

    pub(crate) fn places(&self) -> Vec<String> {
        self.session.ports.clone()
    }

    pub(crate) fn resolve(&mut self) -> Result<()> {
        self.session
            .resolve_gateways(self.wait)
            .map_err(|e| TestBedError::from(e).context("the hosts' gateways"))
    }

    /// Each place's run of `streams`, its next hops resolved, the addresses a stream's own
    /// headers set kept on top of its hosts'.
    fn runs(&mut self, streams: &[StreamSpec]) -> Result<Vec<PortRun>> {
        let mut runs = self
            .session
            .runs_toward(streams, &self.peers, self.wait)
            .map_err(|e| TestBedError::from(e).context("the hosts' next hops"))?;
        for s in runs.iter_mut().flat_map(|r| r.streams.iter_mut()) {
            if let Some(own) = streams.iter().find(|m| m.name == s.name) {
                keep_own(s, own);
            }
        }
        Ok(runs)
    }

    pub(crate) fn compile(
        &mut self,
        streams: &[StreamSpec],
        ids: Option<&[u16]>,
    ) -> Result<Vec<FlowAt>> {
        let runs = self.runs(streams)?;
        let firsts = ids
            .map(|ids| {
                let order = order_of(&runs, streams)?;
                crate::several::first_ids(&runs, &order, ids)
            })
            .transpose()?;
        let plans = self
            .session
            .session
            .compile_from(&runs, firsts.as_deref())?;
        let mut flows = vec![FlowAt::default(); streams.len()];
        for (r, plan) in runs.iter().zip(&plans) {
            for (j, (s, to)) in r.streams.iter().zip(&r.to).enumerate() {
                if let Some(i) = streams.iter().position(|f| f.name == s.name) {
                    flows[i] = FlowAt {
                        id: plan.first_flow + j as u16,
                        tx: r.port,
                        rx: *to,
                    };
                }
            }
        }
        self.runs = runs;
        self.plans = plans;
        Ok(flows)
    }

    pub(crate) fn check(&self, streams: &[StreamSpec]) -> Result<()> {
        // Without resolving: a size or MTU refusal needs no neighbour.
        for r in &self.runs {
            let sized: Vec<StreamSpec> = r
                .streams
                .iter()
                .map(|s| {
                    let own = streams.iter().find(|m| m.name == s.name).unwrap_or(s);
                    StreamSpec {
                        size: own.size,
                        ..s.clone()
                    }
                })
                .collect();
            self.session.session.port(r.port).compile(&sized)?;
        }
        Ok(())
    }

    pub(crate) fn run(&mut self, run: RunOptions<'_>, cleared: bool) -> Result<BedRun> {
        let session = &mut self.session.session;
        crate::several::run(session, &self.runs, &self.plans, run, cleared)
    }

    /// A control for each sending port's plan, set on the port: (place, control, first flow id).
    pub(crate) fn set_control(&mut self) -> Vec<(usize, Arc<FlowControl>, u16)> {
        crate::several::set_control(&mut self.session.session, &self.runs, &self.plans)
    }

    pub(crate) fn plan(&self, place: usize) -> Option<&Plan> {
        crate::several::plan(&self.runs, &self.plans, place)
    }

    pub(crate) fn first_sender(&self) -> Option<&PortSession> {
        let first = self.runs.first().map_or(0, |r| r.port);
        self.session.session.ports().get(first)
    }

    pub(crate) fn check_receivers(&self) -> Result<()> {
        self.session
            .session
            .ports()
            .iter()
            .try_for_each(PortSession::check_receiver)
            .map_err(Into::into)
    }

    pub(crate) fn asked(&self) -> linerate_session::AskedNeighbours {
        self.session.asked()
    }

    pub(crate) fn receivers(&self) -> Vec<Option<Arc<RunReceiver>>> {
        self.session
            .session
            .ports()
            .iter()
            .map(PortSession::rx_handle)
            .collect()
    }
}

/// The addresses a flow's own headers set stay on top of its hosts' (patterns vary them all
/// the same).
fn keep_own(run: &mut StreamSpec, own: &StreamSpec) {
    run.src_ip = own.src_ip.or(run.src_ip);
    run.dst_ip = own.dst_ip.or(run.dst_ip);
    run.src_mac = own.src_mac.or(run.src_mac);
    run.dst_mac = own.dst_mac.or(run.dst_mac);
}

/// The streams of each run, by their index in `streams` (found by name).
fn order_of(runs: &[PortRun], streams: &[StreamSpec]) -> Result<Vec<Vec<usize>>> {
    runs.iter()
        .map(|r| {
            r.streams
                .iter()
                .map(|s| {
                    streams
                        .iter()
                        .position(|m| m.name == s.name)
                        .ok_or_else(|| {
                            TestBedError::usage(format!("stream {:?}: no flow id", s.name))
                        })
                })
                .collect()
        })
        .collect()
}
