//! The controller: a test bed whose hosts live on agents' ports (`HOST:PORT/IFACE[@NETNS]`).
//! Its streams are split into one [`Setup`] per agent and set up everywhere or nowhere; a
//! start is one instant on every agent's clock, each agent's offset measured first; the agents
//! are polled for their counts (which also renews their leases), and losing one stops the
//! others and says which.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use linerate_rx::RxTotals;
use linerate_stream::{HostSpec, StreamSpec};
use serde::Serialize;

use crate::client::{AgentClient, ClientOptions};
use crate::clock::{Offset, StartClock};
use crate::error::AgentError;
use crate::lease::locked;
use crate::proto::{
    FlowAt, FlowSetup, GivenMac, PortNeighbours, RunResult, Setup, SetupReply, Status,
};

/// How often agents are asked for their status (and their leases renewed).
const POLL: Duration = Duration::from_millis(250);
/// How far ahead of now a start instant is set, beyond the slowest agent's round trip.
const START_LEAD: Duration = Duration::from_millis(250);

/// How this controller reaches its agents and how closely their clocks must agree.
#[derive(Debug, Clone)]
pub struct Controller {
    pub client: ClientOptions,
    /// Largest clock offset uncertainty before a start warns (or, `strict`, is refused).
    pub tolerance: Duration,
    pub strict: bool,
    /// This controller's id, which every setup carries: an agent held by another controller
    /// refuses it (see [`Controller::new_id`]).
    pub id: String,
}

impl Controller {
    /// An id no other controller has: the process, the time, and the standard library's
    /// per-process random hash keys.
    pub fn new_id() -> String {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        format!("{}-{:016x}", std::process::id(), h.finish())
    }
}

/// A host on an agent's port.
#[derive(Debug, Clone)]
pub struct Placed {
    /// `HOST:PORT` of the agent.
    pub agent: String,
    /// The host, its port as the agent names it (`IFACE[@NETNS]`).
    pub spec: HostSpec,
    /// Its gateway's MAC, given rather than resolved.
    pub given: Option<GivenMac>,
    /// The name its port is known by in the test bed (`HOST:PORT/IFACE[@NETNS]`).
    pub port_name: String,
}

/// Streams split per agent.
#[derive(Debug, Clone)]
pub struct Split {
    /// Each agent's address and setup.
    setups: Vec<(String, Setup)>,
    /// Every port of the test bed by the name its hosts give it, agent by agent, each agent's
    /// ports in its session's order: the global port numbering.
    pub places: Vec<String>,
    /// Per stream, in order: its id, sending port and receiving port (global).
    pub flows: Vec<FlowAt>,
}

impl Split {
    /// Splits `streams` between `placed` hosts per agent: each agent's setup holds its hosts,
    /// the others as peers, its streams with test-bed-wide flow ids (agent by agent, each
    /// agent's ports in order) and the flows that arrive at it. `pass(agent)`: frames received
    /// there go on to its stack (a capture runs there).
    pub fn new(
        placed: &[Placed],
        streams: &[StreamSpec],
        duration: Option<Duration>,
        pass: impl Fn(&str) -> bool,
    ) -> Result<Split, AgentError> {
        let mut agents: Vec<&str> = Vec::new();
        for p in placed {
            if !agents.contains(&p.agent.as_str()) {
                agents.push(&p.agent);
            }
        }
        let mut split = Split {
            setups: Vec::with_capacity(agents.len()),
            places: Vec::new(),
            flows: vec![FlowAt::default(); streams.len()],
        };
        let mut port_of_host = vec![0usize; placed.len()];
        let mut next_id = 0u32;
        for agent in agents {
            let first_port = split.places.len();
            let here: Vec<usize> = (0..placed.len())
                .filter(|&i| placed[i].agent == agent)
                .collect();
            let hosts: Vec<HostSpec> = here.iter().map(|&i| placed[i].spec.clone()).collect();
            // This agent's ports, each once, in the order its hosts first name them: the order
            // of the agent's own session.
            let mut local: Vec<&str> = Vec::new();
            for &i in &here {
                let port = placed[i].spec.port.as_str();
                match local.iter().position(|q| *q == port) {
                    Some(p) => port_of_host[i] = first_port + p,
                    None => {
                        port_of_host[i] = first_port + local.len();
                        local.push(port);
                        split.places.push(placed[i].port_name.clone());
                    }
                }
            }
            let setup = Setup {
                hosts,
                peers: placed
                    .iter()
                    .filter(|p| p.agent != agent)
                    .map(|p| p.spec.clone())
                    .collect(),
                given: here
                    .iter()
                    .filter_map(|&i| placed[i].given.clone())
                    .collect(),
                flows: Vec::new(),
                arriving: Vec::new(),
                duration_ms: duration.map(|d| d.as_millis() as u64),
                pass: pass(agent),
                routers: Vec::new(),
                to_stack: Vec::new(),
                // Stamped with the controller's id as it is sent.
                controller: String::new(),
            };
            split.setups.push((agent.to_owned(), setup));
            // Flow ids: this agent's ports in order, each port's streams in the given order.
            for port in first_port..split.places.len() {
                for (i, s) in streams.iter().enumerate() {
                    // A host of an agent not numbered yet has no port number: its agent first.
                    let Some(from) = host_index(placed, s.from.as_deref())
                        .filter(|&f| placed[f].agent == agent && port_of_host[f] == port)
                    else {
                        continue;
                    };
                    let id = u16::try_from(next_id).map_err(|_| AgentError::TooManyFlows)?;
                    next_id += 1;
                    split.flows[i] = FlowAt {
                        id,
                        tx: port_of_host[from],
                        rx: None,
                    };
                    let (_, setup) = split.setups.last_mut().expect("pushed");
                    setup.flows.push(FlowSetup {
                        id,
                        stream: s.clone(),
                        interleaved: s.mode == linerate_stream::Mode::Interleaved,
                    });
                }
            }
        }
        // Every port is numbered now: each flow's receiver, and each agent told what arrives.
        for (i, s) in streams.iter().enumerate() {
            if let Some(t) = host_index(placed, s.to.as_deref()) {
                split.flows[i].rx = Some(port_of_host[t]);
                if let Some((_, setup)) =
                    split.setups.iter_mut().find(|(a, _)| *a == placed[t].agent)
                {
                    setup.arriving.push(split.flows[i].id);
                }
            }
        }
        Ok(split)
    }
}

impl Split {
    /// Gives each device's control plane to the agent its ports are on (each link's port is
    /// `HOST:PORT/IFACE[@NETNS]`, given to the agent as `IFACE[@NETNS]`), and each host whose
    /// other frames go to the stack (`to_stack`, by host name) to its agent. A device whose
    /// links are on two agents, or on no agent of the split, is refused.
    pub fn control_planes(
        &mut self,
        placed: &[Placed],
        devices: &[linerate_routing::Device],
        to_stack: &[(String, Vec<[u8; 6]>)],
    ) -> Result<(), AgentError> {
        for d in devices {
            let mut agent: Option<String> = None;
            let mut here = d.clone();
            for link in &mut here.links {
                let (a, local) = link.port.split_once('/').ok_or_else(|| {
                    AgentError::Placement(format!(
                        "device {}: port {} is not an agent's (HOST:PORT/IFACE)",
                        d.name, link.port
                    ))
                })?;
                match &agent {
                    Some(first) if first != a => {
                        return Err(AgentError::Placement(format!(
                            "device {}: its interfaces are on agents {first} and {a}: a \
                             device's control plane runs on one machine",
                            d.name
                        )));
                    }
                    _ => agent = Some(a.to_owned()),
                }
                link.port = local.to_owned();
            }
            let agent = agent.unwrap_or_default();
            let (_, setup) = self
                .setups
                .iter_mut()
                .find(|(a, _)| *a == agent)
                .ok_or_else(|| {
                    AgentError::Placement(format!(
                        "device {}: agent {agent} has no host of the test bed",
                        d.name
                    ))
                })?;
            setup.routers.push(here);
        }
        for (host, groups) in to_stack {
            let Some(p) = placed.iter().find(|p| p.spec.name == *host) else {
                continue;
            };
            if let Some((_, setup)) = self.setups.iter_mut().find(|(a, _)| *a == p.agent) {
                setup.to_stack.push((host.clone(), groups.clone()));
            }
        }
        Ok(())
    }
}

fn host_index(placed: &[Placed], name: Option<&str>) -> Option<usize> {
    let name = name?;
    placed.iter().position(|p| p.spec.name == name)
}

/// One agent of the test bed.
#[derive(Debug)]
struct Agent {
    client: AgentClient,
    /// Its ports, in its session's order.
    ports: Vec<String>,
    /// The global index of its first port.
    first: usize,
    /// Its setup runs control planes: it answers [`Agents::routing`].
    routers: bool,
}

/// What the controller knows of its agents, shared by the run and whoever reads the counts.
#[derive(Debug)]
pub struct Agents {
    agents: Vec<Agent>,
    /// The last status of each agent.
    statuses: Mutex<Vec<Option<Status>>>,
    /// The first agent lost, and why.
    lost: Mutex<Option<String>>,
    /// Each agent's clock and offset, as last measured.
    offsets: Mutex<Vec<Option<(StartClock, Offset)>>>,
    quit: AtomicBool,
    controller: Controller,
}

/// One agent as [`Agents::describe`] tells it.
#[derive(Debug, Clone, Serialize)]
pub struct AgentView {
    pub agent: String,
    pub ports: Vec<String>,
    pub clock: Option<StartClock>,
    pub offset_ns: Option<i64>,
    pub uncertainty_ns: Option<u64>,
}

/// The agents of a test bed, their ports and clock offsets, and the one lost if any.
#[derive(Debug, Clone, Serialize)]
pub struct AgentsView {
    pub agents: Vec<AgentView>,
    pub lost: Option<String>,
}

impl Agents {
    /// Every receiver's counts, by global port index, as last polled.
    pub fn totals(&self) -> Vec<Option<RxTotals>> {
        let statuses = locked(&self.statuses);
        self.agents
            .iter()
            .zip(statuses.iter())
            .flat_map(|(a, s)| {
                (0..a.ports.len()).map(move |i| s.as_ref().and_then(|s| s.rx.get(i).cloned()?))
            })
            .collect()
    }

    /// Every port's link, by global port index, as last polled.
    pub fn links(&self) -> Vec<bool> {
        let statuses = locked(&self.statuses);
        self.agents
            .iter()
            .zip(statuses.iter())
            .flat_map(|(a, s)| {
                (0..a.ports.len())
                    .map(move |i| s.as_ref().and_then(|s| s.links.get(i).copied()) == Some(true))
            })
            .collect()
    }

    /// Frames and bytes sent so far in this run, all agents, as last polled.
    pub fn progress(&self) -> (u64, u64) {
        locked(&self.statuses)
            .iter()
            .flatten()
            .fold((0, 0), |(f, b), s| (f + s.frames, b + s.bytes))
    }

    /// The agent index of global port `g`.
    fn agent_of(&self, g: usize) -> Option<usize> {
        self.agents
            .iter()
            .position(|a| (a.first..a.first + a.ports.len()).contains(&g))
    }

    /// Frames from global port `tx` to `rx` are stamped and received on one clock: the same
    /// agent's, or two agents' TAI (hosts PTP keeps together: docs/distributed.md). Otherwise
    /// their one-way latency means nothing.
    pub fn one_clock(&self, tx: usize, rx: usize) -> bool {
        let (Some(a), Some(b)) = (self.agent_of(tx), self.agent_of(rx)) else {
            return false;
        };
        let offsets = locked(&self.offsets);
        let tai = |i: usize| matches!(offsets.get(i), Some(Some((StartClock::Tai, _))));
        a == b || (tai(a) && tai(b))
    }

    /// One line per agent: its clock, offset and uncertainty, for a start's warnings.
    pub fn offsets_said(&self) -> Vec<String> {
        let offsets = locked(&self.offsets);
        self.agents
            .iter()
            .zip(offsets.iter())
            .filter_map(|(a, o)| {
                let (clock, o) = o.as_ref()?;
                Some(format!(
                    "agent {}: clock {:?} offset {:+.1} µs ± {:.1} µs from the controller's \
                     (one-way latency between agents is off by as much)",
                    a.client.agent,
                    clock,
                    o.offset_ns as f64 / 1e3,
                    o.uncertainty_ns as f64 / 1e3
                ))
            })
            .collect()
    }

    /// The agents, their ports and clock offsets.
    pub fn describe(&self) -> AgentsView {
        let offsets = locked(&self.offsets).clone();
        AgentsView {
            agents: self
                .agents
                .iter()
                .zip(offsets)
                .map(|(a, o)| AgentView {
                    agent: a.client.agent.clone(),
                    ports: a.ports.clone(),
                    clock: o.map(|o| o.0),
                    offset_ns: o.map(|o| o.1.offset_ns),
                    uncertainty_ns: o.map(|o| o.1.uncertainty_ns),
                })
                .collect(),
            lost: self.lost(),
        }
    }

    /// Asks each agent to steer the flows its places send: `changes` by the global place that
    /// sends each flow, one request per agent, every agent asked even when one refuses. Each
    /// refusal, with the global places whose changes it kept from taking effect.
    pub fn steer(
        &self,
        changes: &[(usize, crate::proto::SteerFlow)],
    ) -> Vec<(AgentError, std::ops::Range<usize>)> {
        let mut refused = Vec::new();
        for a in &self.agents {
            let places = a.first..a.first + a.ports.len();
            let mine: Vec<crate::proto::SteerFlow> = changes
                .iter()
                .filter(|(place, _)| places.contains(place))
                .map(|(_, c)| c.clone())
                .collect();
            if !mine.is_empty()
                && let Err(e) = a.client.steer(&crate::proto::Steer { changes: mine })
            {
                refused.push((e, places));
            }
        }
        refused
    }

    /// The agent that owns `agent` (`HOST:PORT`).
    fn client(&self, agent: &str) -> Result<&AgentClient, AgentError> {
        self.agents
            .iter()
            .find(|a| a.client.agent == agent)
            .map(|a| &a.client)
            .ok_or_else(|| AgentError::NoSuchAgent(agent.to_owned()))
    }

    /// `ask` of every agent whose setup runs control planes, in the agents' order: each one's
    /// answer (the daemons of a device are one agent's).
    pub fn routing<T: serde::de::DeserializeOwned>(
        &self,
        ask: &crate::proto::RoutingAsk,
    ) -> Result<Vec<T>, AgentError> {
        self.agents
            .iter()
            .filter(|a| a.routers)
            .map(|a| a.client.routing(ask))
            .collect()
    }

    /// What the hosts of every global port asked for and learned, asked of their agents.
    pub fn neighbours(&self) -> Result<Vec<PortNeighbours>, AgentError> {
        let mut out = Vec::new();
        for a in &self.agents {
            let got = a.client.neighbours()?;
            for i in 0..a.ports.len() {
                out.push(got.ports.get(i).cloned().unwrap_or_default());
            }
        }
        Ok(out)
    }

    /// Starts or stops the capture on port `port` (as the agent names it) of `agent`.
    pub fn capture(&self, agent: &str, port: &str, start: bool) -> Result<(), AgentError> {
        self.client(agent)?.capture(port, start)
    }

    /// The capture file of port `port` of `agent`.
    pub fn capture_file(
        &self,
        agent: &str,
        port: &str,
        pcapng: bool,
    ) -> Result<Vec<u8>, AgentError> {
        self.client(agent)?.capture_file(port, pcapng)
    }

    /// The first agent lost, and why.
    pub fn lost(&self) -> Option<String> {
        locked(&self.lost).clone()
    }

    /// Asks every agent for its status; the first that does not answer (or whose lease ran
    /// out) is lost, and every other is stopped and released.
    fn poll(&self) -> Vec<Option<Status>> {
        let mut fresh = Vec::with_capacity(self.agents.len());
        for a in &self.agents {
            match a.client.status() {
                // Its counts are gone with its setup: the last ones polled stay, for the
                // message that says what was counted until the agent was lost.
                Ok(s) if s.lease_expired.is_some() || !s.configured => {
                    let why = s
                        .lease_expired
                        .clone()
                        .unwrap_or_else(|| "its setup is gone (was it restarted?)".into());
                    self.lose(a, &format!("agent {}: {why}", a.client.agent));
                    fresh.push(None);
                }
                Ok(s) => fresh.push(Some(s)),
                Err(e) => {
                    self.lose(a, &e.to_string());
                    fresh.push(None);
                }
            }
        }
        let mut statuses = locked(&self.statuses);
        for (old, new) in statuses.iter_mut().zip(&fresh) {
            if new.is_some() {
                old.clone_from(new);
            }
        }
        fresh
    }

    /// Marks `agent` lost (`why` names it) and stops and releases every other agent.
    fn lose(&self, agent: &Agent, why: &str) {
        let mut lost = locked(&self.lost);
        if lost.is_some() {
            return;
        }
        let why = format!("lost {why}");
        eprintln!("linerate: {why}: stopping and releasing the other agents");
        *lost = Some(why);
        drop(lost);
        for other in self
            .agents
            .iter()
            .filter(|o| o.client.agent != agent.client.agent)
        {
            let _ = other.client.stop();
            if let Err(e) = other.client.teardown() {
                eprintln!("linerate: releasing {}: {e}", other.client.agent);
            }
        }
    }

    fn teardown_all(&self) {
        for a in &self.agents {
            if let Err(e) = a.client.teardown() {
                eprintln!("linerate: releasing {}: {e}", a.client.agent);
            }
        }
    }

    fn stop_all(&self) {
        for a in &self.agents {
            let _ = a.client.stop();
        }
    }
}

/// The agents of a split, set up, and the thread that keeps their leases; dropped, it
/// releases them.
#[derive(Debug)]
pub struct Conductor {
    agents: Arc<Agents>,
    heartbeat: Option<std::thread::JoinHandle<()>>,
    /// Flow id → (the global port that receives it), for the drain.
    toward: Vec<(u16, usize)>,
}

impl Conductor {
    /// Sets `split` up on every agent, or none, and starts keeping their leases.
    pub fn set_up(controller: &Controller, split: &Split) -> Result<Conductor, AgentError> {
        let agents = Arc::new(set_up(controller, split)?);
        let beat = Arc::clone(&agents);
        let heartbeat = std::thread::Builder::new()
            .name("agents".into())
            .spawn(move || {
                while !beat.quit.load(Ordering::Relaxed) {
                    std::thread::sleep(POLL);
                    if beat.lost().is_none() {
                        beat.poll();
                    }
                }
            })
            .map_err(AgentError::Thread)?;
        let toward = split
            .flows
            .iter()
            .filter_map(|f| Some((f.id, f.rx?)))
            .collect();
        Ok(Conductor {
            agents,
            heartbeat: Some(heartbeat),
            toward,
        })
    }

    /// The agents, to read their counts from any thread.
    pub fn agents(&self) -> &Arc<Agents> {
        &self.agents
    }

    /// One run on every agent from one instant: started, polled until every agent has ended
    /// (`progress` told the frames and bytes sent so far at each poll), then up to `drain` for
    /// what is still on its way, and summed. A lost agent ends it with a result that says so.
    pub fn run(
        &self,
        stop: &AtomicBool,
        progress: &dyn Fn(u64, u64),
        drain: Duration,
    ) -> Result<RunResult, AgentError> {
        let agents = &self.agents;
        if let Some(lost) = agents.lost() {
            return Err(AgentError::Lost(format!("{lost}: set the config again")));
        }
        let expected = start_all(agents)?;
        let mut stopped = false;
        let statuses = loop {
            std::thread::sleep(Duration::from_millis(100));
            if stop.load(Ordering::Relaxed) && !stopped {
                stopped = true;
                agents.stop_all();
            }
            let fresh = agents.poll();
            if let Some(lost) = agents.lost() {
                return Ok(lost_result(agents, &lost));
            }
            let (frames, bytes) = fresh
                .iter()
                .flatten()
                .fold((0, 0), |(f, b), s| (f + s.frames, b + s.bytes));
            progress(frames, bytes);
            let ended = fresh.iter().zip(&expected).all(|(s, &n)| {
                s.as_ref()
                    .is_some_and(|s| s.runs == n && !s.running && s.result.is_some())
            });
            if ended {
                break fresh;
            }
        };
        let result = summed(agents, &statuses);
        // The frames still on their way: until every flow has arrived, or the drain is over.
        let deadline = Instant::now() + drain;
        while Instant::now() < deadline && !arrived(&self.toward, &result, &agents.totals()) {
            std::thread::sleep(Duration::from_millis(20));
            agents.poll();
            if let Some(lost) = agents.lost() {
                return Ok(lost_result(agents, &lost));
            }
        }
        Ok(result)
    }
}

impl Drop for Conductor {
    fn drop(&mut self) {
        self.agents.quit.store(true, Ordering::Relaxed);
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
        if self.agents.lost().is_none() {
            self.agents.teardown_all();
        }
    }
}

/// Sets every agent up, or none: a refusal tears down the agents that were set up. All at
/// once: each agent's hosts resolve their next hops, which may be another agent's hosts, which
/// answer only once that agent is set up too.
fn set_up(controller: &Controller, split: &Split) -> Result<Agents, AgentError> {
    // An agent set up early is kept alive while the others still resolve their gateways: its
    // lease would lapse before a slow one answers (issue 40 #3).
    let early: Mutex<Vec<AgentClient>> = Mutex::new(Vec::new());
    let pending = std::sync::atomic::AtomicUsize::new(split.setups.len());
    let made: Vec<Result<(AgentClient, SetupReply), AgentError>> = std::thread::scope(|s| {
        let handles: Vec<_> = split
            .setups
            .iter()
            .map(|(address, setup)| {
                let (early, pending) = (&early, &pending);
                s.spawn(move || {
                    let setup = Setup {
                        controller: controller.id.clone(),
                        ..setup.clone()
                    };
                    let made = AgentClient::new(address, &controller.client).and_then(|client| {
                        let reply = client.setup(&setup)?;
                        Ok((client, reply))
                    });
                    if let Ok((client, _)) = &made {
                        locked(early).push(client.clone());
                    }
                    pending.fetch_sub(1, Ordering::AcqRel);
                    made
                })
            })
            .collect();
        while pending.load(Ordering::Acquire) > 0 {
            std::thread::sleep(POLL);
            for client in locked(&early).iter() {
                let _ = client.status();
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    // An agent that could not be reached is named before one that failed its setup: the
    // others' failures (a gateway on the dead agent's link that never answers ARP) follow
    // from it and name the wrong machine.
    let unreachable = made
        .iter()
        .position(|m| matches!(m, Err(AgentError::Unreachable { .. })));
    if let Some(i) = unreachable.or_else(|| made.iter().position(Result::is_err)) {
        for (client, _) in made.iter().flatten() {
            let _ = client.teardown();
        }
        let e = made
            .into_iter()
            .nth(i)
            .and_then(Result::err)
            .expect("an error");
        return Err(AgentError::NotKept(Box::new(e)));
    }
    let mut list: Vec<Agent> = Vec::with_capacity(made.len());
    let mut first = 0;
    for ((client, reply), (_, setup)) in made.into_iter().flatten().zip(&split.setups) {
        let n = reply.ports.len();
        list.push(Agent {
            client,
            ports: reply.ports,
            first,
            routers: !setup.routers.is_empty(),
        });
        first += n;
    }
    let agents = Agents {
        statuses: Mutex::new(vec![None; list.len()]),
        offsets: Mutex::new(vec![None; list.len()]),
        lost: Mutex::new(None),
        quit: AtomicBool::new(false),
        controller: controller.clone(),
        agents: list,
    };
    if let Err(e) = measure(&agents) {
        agents.teardown_all();
        return Err(AgentError::NotKept(Box::new(e)));
    }
    // Every agent still holds its setup before the test bed is said to be set up.
    agents.poll();
    if let Some(lost) = agents.lost() {
        agents.teardown_all();
        return Err(AgentError::NotKept(Box::new(AgentError::Lost(lost))));
    }
    Ok(agents)
}

/// Measures every agent's clock offset; one beyond the tolerance is a warning, or when strict
/// an error.
fn measure(agents: &Agents) -> Result<Vec<(StartClock, Offset)>, AgentError> {
    let tolerance = agents.controller.tolerance;
    let mut out = Vec::with_capacity(agents.agents.len());
    for a in &agents.agents {
        let (clock, offset) = a.client.offset(tolerance / 4)?;
        if offset.uncertainty_ns > tolerance.as_nanos() as u64 {
            let why = format!(
                "agent {}: its clock is known to within ±{} µs only (offset {} µs), over the \
                 sync tolerance {tolerance:?}: synchronise the hosts' clocks \
                 (docs/distributed.md)",
                a.client.agent,
                offset.uncertainty_ns / 1000,
                offset.offset_ns / 1000,
            );
            if agents.controller.strict {
                return Err(AgentError::Unsynchronised(why));
            }
            eprintln!("linerate: warning: {why}");
        }
        out.push((clock, offset));
    }
    *locked(&agents.offsets) = out.iter().copied().map(Some).collect();
    Ok(out)
}

/// Tells every agent to start at one instant, fixed before any agent is told: now on this
/// host's clock plus a lead, on each agent's clock. The starts go out at once (an agent clears
/// its receivers before it answers, which takes a while on a large flow table). Returns each
/// agent's run number.
fn start_all(agents: &Agents) -> Result<Vec<u64>, AgentError> {
    let offsets = measure(agents)?;
    let slowest = offsets
        .iter()
        .map(|(_, o)| o.round_trip_ns)
        .max()
        .unwrap_or(0);
    let lead = START_LEAD.as_nanos() as u64 + 4 * slowest;
    let now: Vec<u64> = offsets.iter().map(|(clock, _)| clock.now_ns()).collect();
    let started: Vec<Result<u64, AgentError>> = std::thread::scope(|s| {
        let handles: Vec<_> = agents
            .agents
            .iter()
            .zip(offsets.iter().zip(&now))
            .map(|(a, ((_, offset), now))| {
                let at = now
                    .saturating_add(lead)
                    .saturating_add_signed(offset.offset_ns);
                s.spawn(move || a.client.start(Some(at)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    if started.iter().any(Result::is_err) {
        agents.stop_all();
        let e = started.into_iter().find_map(Result::err).expect("an error");
        return Err(AgentError::Start(Box::new(e)));
    }
    Ok(started.into_iter().flatten().collect())
}

/// Every flow's frames reached its receiver (unique frames ≥ sent).
fn arrived(toward: &[(u16, usize)], result: &RunResult, totals: &[Option<RxTotals>]) -> bool {
    toward.iter().all(|&(id, g)| {
        let sent = result
            .per_flow
            .iter()
            .find(|(f, _)| *f == id)
            .map_or(0, |(_, n)| *n);
        let got = totals
            .get(g)
            .and_then(|t| t.as_ref()?.flow(id))
            .map_or(0, |f| f.unique());
        got >= sent
    })
}

/// The agents' results as one: flows by their global ids, ports by their global index.
fn summed(agents: &Agents, statuses: &[Option<Status>]) -> RunResult {
    let mut result = RunResult::default();
    for (a, s) in agents.agents.iter().zip(statuses) {
        let Some(r) = s.as_ref().and_then(|s| s.result.as_ref()) else {
            continue;
        };
        result.per_flow.extend(r.per_flow.iter().copied());
        result
            .per_port
            .extend(r.per_port.iter().map(|&(p, f, b)| (a.first + p, f, b)));
        result.frames += r.frames;
        result.bytes += r.bytes;
        result.elapsed_s = result.elapsed_s.max(r.elapsed_s);
        if let (None, Some(e)) = (&result.error, &r.error) {
            result.error = Some(format!("agent {}: {e}", a.client.agent));
        }
    }
    result
}

/// A run that lost an agent: why, and what the others had counted until then.
fn lost_result(agents: &Agents, lost: &str) -> RunResult {
    let (sent, _) = agents.progress();
    let received: u64 = agents
        .totals()
        .iter()
        .flatten()
        .map(RxTotals::all_frames)
        .sum();
    RunResult {
        error: Some(format!(
            "{lost}; the other agents were stopped and released; counted until then: {sent} \
             frames sent, {received} received (as last polled: senders report once a second)"
        )),
        ..RunResult::default()
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

    fn placed(agent: &str, name: &str, port: &str) -> Placed {
        Placed {
            agent: agent.into(),
            spec: host(name, port),
            given: None,
            port_name: format!("{agent}/{port}"),
        }
    }

    fn stream(from: &str, to: &str) -> StreamSpec {
        StreamSpec {
            name: format!("{from}-{to}"),
            from: Some(from.into()),
            to: Some(to.into()),
            ..StreamSpec::default()
        }
    }

    /// Ports are numbered agent by agent in the order their hosts come; flow ids follow the
    /// sending ports in that order, each port's streams in the order given — a stream from a
    /// later agent's host is never counted as an earlier agent's (its port has no number yet).
    #[test]
    fn a_split_numbers_ports_and_flows_agent_by_agent() {
        let hosts = [
            placed("a1:1", "x", "e0"),
            placed("a2:1", "y", "e0"),
            placed("a1:1", "z", "e1"),
        ];
        let streams = [stream("y", "x"), stream("x", "y"), stream("z", "y")];
        let split = Split::new(&hosts, &streams, None, |a| a == "a2:1").unwrap();
        assert_eq!(split.places, ["a1:1/e0", "a1:1/e1", "a2:1/e0"]);
        // x's stream is flow 0 (a1's first port), z's flow 1, y's flow 2 (a2's port).
        let at = |id, tx, rx| FlowAt {
            id,
            tx,
            rx: Some(rx),
        };
        assert_eq!(split.flows, [at(2, 2, 0), at(0, 0, 2), at(1, 1, 2)]);
        let (a1, a2) = (&split.setups[0].1, &split.setups[1].1);
        assert_eq!(split.setups[0].0, "a1:1");
        let ids = |s: &Setup| s.flows.iter().map(|f| f.id).collect::<Vec<_>>();
        assert_eq!((ids(a1), ids(a2)), (vec![0, 1], vec![2]));
        assert_eq!(
            (a1.arriving.clone(), a2.arriving.clone()),
            (vec![2], vec![0, 1])
        );
        assert_eq!(a1.peers.len(), 1);
        assert_eq!(a2.peers.len(), 2);
        assert!(!a1.pass && a2.pass);
    }

    fn device(name: &str, ports: &[&str]) -> linerate_routing::Device {
        linerate_routing::Device {
            name: name.into(),
            links: ports
                .iter()
                .map(|p| linerate_routing::Link {
                    port: (*p).into(),
                    mac: [2, 0, 0, 0, 0, 1],
                    addrs: Vec::new(),
                })
                .collect(),
            bgp: None,
            isis: None,
            ospf: None,
            ospf6: None,
            lldp: None,
        }
    }

    /// Each device goes to the agent its ports are on, named there as the agent names them;
    /// each host passed to the stack to its own agent; a device on two agents is refused.
    #[test]
    fn a_split_gives_each_control_plane_to_its_agent() {
        let hosts = [placed("a1:1", "x", "e0"), placed("a2:1", "y", "e0@n")];
        let mut split = Split::new(&hosts, &[], None, |_| false).unwrap();
        let devices = [device("dx", &["a1:1/e0"]), device("dy", &["a2:1/e0@n"])];
        let to_stack = [("y".to_owned(), vec![[1, 0x80, 0xc2, 0, 0, 0x14]])];
        split.control_planes(&hosts, &devices, &to_stack).unwrap();
        let (a1, a2) = (&split.setups[0].1, &split.setups[1].1);
        assert_eq!(a1.routers, [device("dx", &["e0"])]);
        assert_eq!(a2.routers, [device("dy", &["e0@n"])]);
        assert!(a1.to_stack.is_empty());
        assert_eq!(a2.to_stack, to_stack);

        let mut split = Split::new(&hosts, &[], None, |_| false).unwrap();
        let both = [device("dxy", &["a1:1/e0", "a2:1/e0@n"])];
        let e = split.control_planes(&hosts, &both, &[]).unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("device dxy"), "{e}");
        let elsewhere = [device("dz", &["a3:1/e0"])];
        let e = split.control_planes(&hosts, &elsewhere, &[]).unwrap_err();
        assert!(e.to_string().contains("agent a3:1 has no host"), "{e}");
    }

    /// A fake agent on loopback (plain HTTP): its setup answers after `setup_wait`; it keeps
    /// when each status call came.
    fn fake_agent(setup_wait: Duration) -> (String, Arc<Mutex<Vec<Instant>>>) {
        fake_agent_refusing(setup_wait, None)
    }

    /// [`fake_agent`] whose setup answers 400 with `refusal` as its error, when given.
    fn fake_agent_refusing(
        setup_wait: Duration,
        refusal: Option<&'static str>,
    ) -> (String, Arc<Mutex<Vec<Instant>>>) {
        fake_agent_with(setup_wait, refusal, |_| Status {
            configured: true,
            ..Status::default()
        })
    }

    /// [`fake_agent_refusing`] whose n-th status call (from 0) answers `status(n)`.
    fn fake_agent_with(
        setup_wait: Duration,
        refusal: Option<&'static str>,
        status: fn(usize) -> Status,
    ) -> (String, Arc<Mutex<Vec<Instant>>>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let statuses = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&statuses);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut length = 0usize;
                loop {
                    let mut header = String::new();
                    let _ = reader.read_line(&mut header);
                    if header.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let now = StartClock::Realtime.now_ns();
                let mut code = "200 OK";
                let answer = if line.contains(crate::proto::SETUP) && line.starts_with("POST") {
                    std::thread::sleep(setup_wait);
                    match refusal {
                        Some(why) => {
                            code = "400 Bad Request";
                            serde_json::json!({"code": 400, "errors": [why]})
                        }
                        None => serde_json::json!({"ports": ["e0"], "clock": "realtime"}),
                    }
                } else if line.contains(crate::proto::STATUS) {
                    let mut seen = seen.lock().unwrap();
                    seen.push(Instant::now());
                    serde_json::to_value(status(seen.len() - 1)).unwrap()
                } else if line.contains(crate::proto::CLOCK) {
                    serde_json::json!({"clock": "realtime", "received_ns": now, "sent_ns": now})
                } else {
                    serde_json::json!({})
                };
                let text = answer.to_string();
                let _ = write!(
                    conn,
                    "HTTP/1.1 {code}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        (address, statuses)
    }

    /// An agent set up early is polled (its lease renewed) while another still sets up: a slow
    /// gateway on one agent must not let the others' leases lapse (issue 40 #3).
    #[test]
    fn agents_set_up_early_are_kept_alive_while_another_is_slow() {
        let (fast, fast_statuses) = fake_agent(Duration::ZERO);
        let (slow, _) = fake_agent(Duration::from_millis(1500));
        let hosts = [placed(&fast, "x", "e0"), placed(&slow, "y", "e0")];
        let split = Split::new(&hosts, &[stream("x", "y")], None, |_| false).unwrap();
        let controller = Controller {
            client: ClientOptions {
                token: "t".repeat(16),
                ca: None,
                http: true,
                timeout: Duration::from_secs(5),
            },
            tolerance: Duration::from_secs(1),
            strict: false,
            id: Controller::new_id(),
        };
        let began = Instant::now();
        let agents = set_up(&controller, &split).unwrap();
        let slow_done = began + Duration::from_millis(1500);
        let during = fast_statuses
            .lock()
            .unwrap()
            .iter()
            .filter(|&&at| at < slow_done)
            .count();
        assert!(
            during >= 3,
            "the fast agent was polled {during} times while the slow one set up"
        );
        assert!(agents.lost().is_none());
    }

    fn controller() -> Controller {
        Controller {
            client: ClientOptions {
                token: "t".repeat(16),
                ca: None,
                http: true,
                timeout: Duration::from_secs(5),
            },
            tolerance: Duration::from_secs(1),
            strict: false,
            id: Controller::new_id(),
        }
    }

    /// One agent is dead; the other's gateway (on the dead one's link) never answers. The
    /// refusal named the living agent's ARP timeout; the dead agent is what to fix.
    #[test]
    fn a_dead_agent_is_named_before_the_failures_it_causes() {
        let (living, _) = fake_agent_refusing(
            Duration::from_millis(200),
            Some("the hosts' gateways: 198.18.0.2 did not answer on e0"),
        );
        let dead = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().to_string()
        };
        let hosts = [placed(&living, "x", "e0"), placed(&dead, "y", "e0")];
        let split = Split::new(&hosts, &[stream("x", "y")], None, |_| false).unwrap();
        let Err(AgentError::NotKept(e)) = set_up(&controller(), &split) else {
            panic!("set up with a dead agent");
        };
        assert!(
            matches!(&*e, AgentError::Unreachable { agent, .. } if *agent == dead),
            "{e}"
        );
    }

    /// A controller frozen past the lease finds the agent released: its message said 0 frames
    /// counted although thousands had been polled before.
    #[test]
    fn a_lost_agent_leaves_the_counts_polled_before() {
        static FROZEN: AtomicBool = AtomicBool::new(false);
        let (address, _) = fake_agent_with(Duration::ZERO, None, |_| {
            match FROZEN.load(Ordering::Relaxed) {
                false => Status {
                    configured: true,
                    running: true,
                    frames: 15_000,
                    bytes: 15_000 * 60,
                    ..Status::default()
                },
                true => Status {
                    lease_expired: Some("its controller went silent for 3s".into()),
                    ..Status::default()
                },
            }
        });
        let hosts = [placed(&address, "x", "e0")];
        let split = Split::new(&hosts, &[], None, |_| false).unwrap();
        let agents = set_up(&controller(), &split).unwrap();
        assert_eq!(agents.progress().0, 15_000);
        FROZEN.store(true, Ordering::Relaxed);
        agents.poll();
        let lost = agents.lost().expect("lost");
        assert_eq!(agents.progress().0, 15_000);
        let said = lost_result(&agents, &lost).error.unwrap();
        assert!(
            said.contains("counted until then: 15000 frames sent"),
            "{said}"
        );
    }

    #[test]
    fn controllers_have_ids_of_their_own() {
        assert_ne!(Controller::new_id(), Controller::new_id());
    }
}
