//! Hosts on agents' ports (`HOST:PORT/IFACE[@NETNS]`): the places are the agents', the
//! controller (`linerate_agent::controller`) sets each compile up on every agent or none, and
//! a run starts them all at one instant.

use linerate_agent::{Conductor, Controller, Placed, Split};
use linerate_rx::FlowReport;
use linerate_session::End;
use linerate_stream::{HostSpec, StreamSpec};

use crate::FlowAt;
use crate::bed::{BedRun, BedSpec, FlowRun, Go, Places};
use crate::counts::LiveCounts;
use crate::error::{Result, TestBedError};

/// `location` is an agent's port: its agent (`HOST:PORT`) and the port as the agent names it.
pub fn agent_of(location: &str) -> Option<(String, String)> {
    let (agent, local) = location.split_once('/')?;
    let (_, port) = agent.rsplit_once(':')?;
    port.parse::<u16>().ok().filter(|&p| p != 0)?;
    Some((agent.to_owned(), local.to_owned()))
}

/// The hosts' ports are agents': all of them (false: all this machine's). A mix is refused.
pub(crate) fn on_agents(hosts: &[HostSpec]) -> Result<bool> {
    let Some(remote) = hosts.iter().find(|h| agent_of(&h.port).is_some()) else {
        return Ok(false);
    };
    if let Some(here) = hosts.iter().find(|h| agent_of(&h.port).is_none()) {
        return Err(TestBedError::usage(format!(
            "host {}: port {} is this machine's, beside host {} on an agent's port {}: run \
             `linerate agent` here too and name its port 127.0.0.1:PORT/{}",
            here.name, here.port, remote.name, remote.port, here.port
        )));
    }
    Ok(true)
}

#[derive(Debug)]
pub(crate) struct AgentHosts {
    controller: Controller,
    placed: Vec<Placed>,
    /// Places whose agent passes received frames on to its stack (a capture runs there).
    capture: Vec<String>,
    /// The last compile, set up on the agents until the next one replaces it.
    conductor: Option<Conductor>,
    link: Option<u64>,
    /// Devices' control planes, each given to the agent its ports are on.
    routers: Vec<linerate_routing::Device>,
    /// Hosts whose other frames go to their agent's stack, with their groups.
    to_stack: Vec<(String, Vec<[u8; 6]>)>,
}

impl AgentHosts {
    pub(crate) fn new(spec: &BedSpec) -> Result<AgentHosts> {
        let Places::Hosts {
            hosts,
            given,
            capture,
            ..
        } = &spec.places
        else {
            unreachable!("opened for hosts");
        };
        let controller = spec.controller.clone().ok_or_else(|| {
            TestBedError::usage(
                "hosts on agents' ports (HOST:PORT/IFACE) need the agents' token: give the \
                 controller the agents' token file",
            )
        })?;
        let placed = hosts
            .iter()
            .map(|h| {
                let (agent, local) = agent_of(&h.port).expect("checked: on agents");
                let given = given.iter().find(|g| g.host == h.name).cloned();
                Placed {
                    agent,
                    spec: HostSpec {
                        port: local,
                        ..h.clone()
                    },
                    given,
                    port_name: h.port.clone(),
                }
            })
            .collect();
        Ok(AgentHosts {
            controller,
            placed,
            capture: capture.clone(),
            conductor: None,
            link: spec.port.link_speed,
            routers: Vec::new(),
            to_stack: Vec::new(),
        })
    }

    pub(crate) fn pass_to_stack(&mut self, hosts: &[(String, Vec<[u8; 6]>)]) {
        self.to_stack = hosts.to_vec();
    }

    pub(crate) fn control_planes(&mut self, devices: &[linerate_routing::Device]) {
        self.routers = devices.to_vec();
    }

    /// Splits `streams` per agent and sets them up everywhere (the last setup is released
    /// first: its ports are the same interfaces). A stream's count, when it has none, is the
    /// run's (each agent's run ends after `end.duration`).
    pub(crate) fn compile(
        &mut self,
        streams: &[StreamSpec],
        end: End,
    ) -> Result<(Vec<String>, Vec<FlowAt>)> {
        let streams: Vec<StreamSpec> = streams
            .iter()
            .map(|s| StreamSpec {
                count: s.count.or(end.count),
                ..s.clone()
            })
            .collect();
        let pass = |agent: &str| {
            self.capture
                .iter()
                .any(|c| agent_of(c).is_some_and(|(a, _)| a == agent))
        };
        let mut split = Split::new(&self.placed, &streams, end.duration, pass)?;
        split.control_planes(&self.placed, &self.routers, &self.to_stack)?;
        drop(self.conductor.take());
        self.conductor = Some(Conductor::set_up(&self.controller, &split)?);
        Ok((split.places, split.flows))
    }

    fn conductor(&self) -> Result<&Conductor> {
        self.conductor
            .as_ref()
            .ok_or_else(|| TestBedError::usage("nothing compiled to run"))
    }

    pub(crate) fn run(&self, go: &Go<'_>, flows: &[FlowAt], names: &[String]) -> Result<BedRun> {
        let conductor = self.conductor()?;
        let progress = |frames, bytes| {
            go.observer.tick(&linerate_engine::Snapshot {
                elapsed: std::time::Duration::ZERO,
                frames,
                bytes,
                interval: std::time::Duration::ZERO,
                interval_frames: 0,
                interval_bytes: 0,
            });
        };
        let summary = conductor.run(go.stop, &progress, go.drain)?;
        let totals = conductor.agents().totals();
        let elapsed = summary.elapsed_s;
        let flows = flows
            .iter()
            .zip(names)
            .map(|(at, name)| {
                let sent = summary
                    .per_flow
                    .iter()
                    .find(|(id, _)| *id == at.id)
                    .map_or(0, |(_, n)| *n);
                let got = at.rx.and_then(|g| totals.get(g)?.as_ref()?.flow(at.id));
                FlowRun {
                    name: name.clone(),
                    at: *at,
                    sent,
                    sent_fps: if elapsed > 0.0 {
                        sent as f64 / elapsed
                    } else {
                        0.0
                    },
                    // Polled counts carry no histogram: min, mean and max stand for the
                    // percentiles.
                    received: got
                        .map(|f| FlowReport::new(at.id, Some(name.clone()), sent, Some(f))),
                }
            })
            .collect();
        Ok(BedRun {
            summary,
            places: Vec::new(),
            flows,
            sink: None,
            mode: None,
        })
    }

    /// The agents, as a bed's control asks them to steer the flows they send.
    pub(crate) fn remote(&self) -> Option<std::sync::Arc<dyn crate::control::Remote>> {
        let agents = std::sync::Arc::clone(self.conductor.as_ref()?.agents());
        Some(std::sync::Arc::new(Steering(agents)))
    }

    pub(crate) fn link_mbps(&self) -> Option<u64> {
        self.link
    }

    pub(crate) fn counts(&self) -> LiveCounts {
        match &self.conductor {
            Some(c) => LiveCounts::from_agents(std::sync::Arc::clone(c.agents())),
            None => LiveCounts::local(Vec::new()),
        }
    }
}

/// The agents of a bed, steering the flows they send.
#[derive(Debug)]
struct Steering(std::sync::Arc<linerate_agent::Agents>);

impl crate::control::Remote for Steering {
    fn steer(
        &self,
        changes: &[(usize, crate::control::FlowChange)],
    ) -> std::result::Result<(), (String, Vec<usize>)> {
        use crate::control::RateAsk;
        use linerate_agent::proto::{SteerFlow, SteerRate};
        use linerate_engine::FlowState;
        let wire: Vec<(usize, SteerFlow)> = changes
            .iter()
            .map(|(place, c)| {
                let state = c.state.map(|s| {
                    match s {
                        FlowState::Running => "running",
                        FlowState::Paused => "paused",
                        FlowState::Stopped => "stopped",
                    }
                    .to_owned()
                });
                let rate = c.rate.map(|r| match r {
                    RateAsk::Pps(p) => SteerRate::Pps(p),
                    RateAsk::TimesPlanned(x) => SteerRate::TimesPlanned(x),
                    RateAsk::Planned => SteerRate::Planned,
                });
                (
                    *place,
                    SteerFlow {
                        id: c.id,
                        state,
                        rate,
                    },
                )
            })
            .collect();
        let refused = self.0.steer(&wire);
        if refused.is_empty() {
            return Ok(());
        }
        let why = refused
            .iter()
            .map(|(e, _)| e.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        let places = refused.into_iter().flat_map(|(_, places)| places).collect();
        Err((why, places))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, port: &str) -> HostSpec {
        HostSpec {
            name: name.into(),
            port: port.into(),
            ..HostSpec::default()
        }
    }

    #[test]
    fn an_agents_port_names_its_agent_and_its_own_name_for_it() {
        assert_eq!(
            agent_of("10.0.0.2:8443/eth1@ns"),
            Some(("10.0.0.2:8443".into(), "eth1@ns".into()))
        );
        assert_eq!(
            agent_of("[::1]:9/eth1"),
            Some(("[::1]:9".into(), "eth1".into()))
        );
        assert_eq!(agent_of("eth1@ns"), None);
        assert_eq!(agent_of("host:0/eth1"), None);
    }

    #[test]
    fn hosts_are_all_on_agents_or_all_here() {
        assert!(!on_agents(&[host("a", "lr0"), host("b", "lr1@ns")]).unwrap());
        assert!(on_agents(&[host("a", "h:1/e0"), host("b", "h:2/e0")]).unwrap());
        let mixed = on_agents(&[host("a", "h:1/e0"), host("b", "lr1")]).unwrap_err();
        assert!(
            mixed.is_usage() && mixed.to_string().contains("host b"),
            "{mixed}"
        );
    }
}
