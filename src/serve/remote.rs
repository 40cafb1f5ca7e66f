//! The controller: a config whose ports live on agents (`HOST:PORT/IFACE[@NETNS]`). It is split
//! into one setup per agent and set up everywhere or nowhere; a start is one instant on every
//! agent's clock, each agent's offset measured first; the agents are polled for their counts
//! (which also renews their leases), and losing one stops the others and says which.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use linerate_agent::client::ClientOptions;
use linerate_agent::{AgentClient, FlowSetup, GivenMac, Offset, Setup, StartClock, Status};
use linerate_otg as otg;
use linerate_rx::RxTotals;

use super::config::PortThread;
use super::hosts::gateway;
use super::{Counting, DRAIN, FlowAt, PortAt, Progress, RunResult};
use crate::cli::ControllerArgs;

/// How often agents are asked for their status (and their leases renewed).
const POLL: Duration = Duration::from_millis(250);
/// Longest wait for one agent's answer.
const ANSWER_WAIT: Duration = Duration::from_secs(5);
/// How far ahead of now a start instant is set, beyond the slowest agent's round trip.
const START_LEAD: Duration = Duration::from_millis(250);

/// How this controller reaches agents (`--agent-token-file` and its companions).
#[derive(Debug, Clone)]
pub(crate) struct Controller {
    client: ClientOptions,
    tolerance: Duration,
    strict: bool,
}

impl Controller {
    /// None without `--agent-token-file`: ports on agents are then refused.
    pub(crate) fn new(args: &ControllerArgs) -> Result<Option<Controller>> {
        let Some(file) = &args.agent_token_file else {
            return Ok(None);
        };
        let token = super::read_token(file, "--agent-token-file")?;
        let ca = match &args.agent_ca {
            Some(f) => Some(
                std::fs::read(f)
                    .map_err(|e| crate::usage(format!("--agent-ca {}: {e}", f.display())))?,
            ),
            None => {
                if !args.agent_http {
                    eprintln!(
                        "linerate serve: warning: no --agent-ca: agents' certificates are not \
                         checked (the token still guards them; give their CA to be sure who \
                         answers)"
                    );
                }
                None
            }
        };
        Ok(Some(Controller {
            client: ClientOptions {
                token,
                ca,
                http: args.agent_http,
                timeout: ANSWER_WAIT,
            },
            tolerance: args.sync_tolerance,
            strict: args.strict_sync,
        }))
    }
}

/// One agent of the config.
#[derive(Debug)]
struct Agent {
    client: AgentClient,
    /// Its ports, in its session's order.
    ports: Vec<String>,
    /// The global index of its first port.
    first: usize,
}

/// What the controller knows of its agents, shared by the run and the metrics.
#[derive(Debug)]
pub(super) struct Remote {
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

impl Remote {
    /// Every receiver's counts, by global port index, as last polled.
    pub(super) fn totals(&self) -> Vec<Option<RxTotals>> {
        let statuses = self.statuses.lock().unwrap_or_else(|p| p.into_inner());
        self.agents
            .iter()
            .zip(statuses.iter())
            .flat_map(|(a, s)| {
                (0..a.ports.len()).map(move |i| s.as_ref().and_then(|s| s.rx.get(i).cloned()?))
            })
            .collect()
    }

    /// The link of global port `g`, as last polled.
    pub(super) fn link(&self, g: usize) -> bool {
        let Some(i) = self.agent_of(g) else {
            return false;
        };
        let statuses = self.statuses.lock().unwrap_or_else(|p| p.into_inner());
        statuses[i]
            .as_ref()
            .and_then(|s| s.links.get(g - self.agents[i].first).copied())
            .unwrap_or(false)
    }

    /// The agent index of global port `g`.
    fn agent_of(&self, g: usize) -> Option<usize> {
        self.agents
            .iter()
            .position(|a| (a.first..a.first + a.ports.len()).contains(&g))
    }

    /// Frames from global port `tx` to `rx` are stamped and received on one clock: the same
    /// agent's, or two agents' TAI (hosts PTP keeps together: docs/distributed.md). Otherwise
    /// their one-way latency is not reported.
    pub(super) fn one_clock(&self, tx: usize, rx: usize) -> bool {
        let (Some(a), Some(b)) = (self.agent_of(tx), self.agent_of(rx)) else {
            return false;
        };
        let offsets = self.offsets.lock().unwrap_or_else(|p| p.into_inner());
        let tai = |i: usize| matches!(offsets.get(i), Some(Some((StartClock::Tai, _))));
        a == b || (tai(a) && tai(b))
    }

    /// One line per agent: its clock, offset and uncertainty, for a start's warnings.
    pub(super) fn offsets_said(&self) -> Vec<String> {
        let offsets = self.offsets.lock().unwrap_or_else(|p| p.into_inner());
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

    /// The agents, their ports and clock offsets (GET /linerate/controller/v1/agents).
    pub(super) fn describe(&self) -> serde_json::Value {
        let offsets = self
            .offsets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let lost = self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone();
        serde_json::json!({
            "agents": self.agents.iter().zip(offsets).map(|(a, o)| serde_json::json!({
                "agent": a.client.agent,
                "ports": a.ports,
                "clock": o.map(|o| o.0),
                "offset_ns": o.map(|o| o.1.offset_ns),
                "uncertainty_ns": o.map(|o| o.1.uncertainty_ns),
            })).collect::<Vec<_>>(),
            "lost": lost,
        })
    }

    /// The agent that owns `location`.
    fn client(&self, location: &otg::Location) -> Result<&AgentClient> {
        let agent = location.agent.as_deref().unwrap_or_default();
        self.agents
            .iter()
            .find(|a| a.client.agent == agent)
            .map(|a| &a.client)
            .with_context(|| format!("{location}: no agent {agent} in the config"))
    }

    /// What the hosts of every global port learned, asked of their agents.
    pub(super) fn neighbours(&self) -> Result<Vec<Vec<linerate_hosts::Neighbour>>> {
        let mut out = Vec::new();
        for a in &self.agents {
            let got = a.client.neighbours()?;
            for i in 0..a.ports.len() {
                out.push(
                    got.ports
                        .get(i)
                        .map(|ns| {
                            ns.iter()
                                .map(|n| linerate_hosts::Neighbour {
                                    addr: n.addr,
                                    vlan: n.vlan,
                                    mac: n.mac,
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                );
            }
        }
        Ok(out)
    }

    /// Starts or stops the capture on an agent's port.
    pub(super) fn capture(&self, location: &otg::Location, start: bool) -> Result<()> {
        Ok(self.client(location)?.capture(&location.local(), start)?)
    }

    /// An agent's port's capture file.
    pub(super) fn capture_file(&self, location: &otg::Location, pcapng: bool) -> Result<Vec<u8>> {
        Ok(self
            .client(location)?
            .capture_file(&location.local(), pcapng)?)
    }

    fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Asks every agent for its status; the first that does not answer (or whose lease ran
    /// out) is lost, and every other is stopped and released.
    fn poll(&self) -> Vec<Option<Status>> {
        let mut fresh = Vec::with_capacity(self.agents.len());
        for a in &self.agents {
            match a.client.status() {
                Ok(s) if s.lease_expired.is_some() || !s.configured => {
                    let why = s
                        .lease_expired
                        .clone()
                        .unwrap_or_else(|| "its setup is gone (was it restarted?)".into());
                    self.lose(a, &format!("agent {}: {why}", a.client.agent));
                    fresh.push(Some(s));
                }
                Ok(s) => fresh.push(Some(s)),
                Err(e) => {
                    self.lose(a, &e.to_string());
                    fresh.push(None);
                }
            }
        }
        let mut statuses = self.statuses.lock().unwrap_or_else(|p| p.into_inner());
        for (old, new) in statuses.iter_mut().zip(&fresh) {
            if new.is_some() {
                old.clone_from(new);
            }
        }
        fresh
    }

    /// Marks `agent` lost (`why` names it) and stops and releases every other agent.
    fn lose(&self, agent: &Agent, why: &str) {
        let mut lost = self.lost.lock().unwrap_or_else(|p| p.into_inner());
        if lost.is_some() {
            return;
        }
        let why = format!("lost {why}");
        eprintln!("linerate serve: {why}: stopping and releasing the other agents");
        *lost = Some(why);
        drop(lost);
        for other in self
            .agents
            .iter()
            .filter(|o| o.client.agent != agent.client.agent)
        {
            let _ = other.client.stop();
            if let Err(e) = other.client.teardown() {
                eprintln!("linerate serve: releasing {}: {e}", other.client.agent);
            }
        }
    }

    fn teardown_all(&self) {
        for a in &self.agents {
            if let Err(e) = a.client.teardown() {
                eprintln!("linerate serve: releasing {}: {e}", a.client.agent);
            }
        }
    }
}

/// The agents of a config, set up, and the thread that keeps their leases; dropped, it
/// releases them.
pub(crate) struct Conductor {
    remote: Arc<Remote>,
    heartbeat: Option<std::thread::JoinHandle<()>>,
    /// Flow id → (the global port that receives it), for the drain.
    toward: Vec<(u16, usize)>,
}

impl Conductor {
    /// Sets `plan` up on every agent, or none, and starts keeping their leases.
    pub(crate) fn set_up(controller: &Controller, plan: &Split) -> Result<Conductor> {
        let remote = Arc::new(set_up(controller, plan)?);
        let beat = Arc::clone(&remote);
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
            .context("start the agents' heartbeat")?;
        let toward = plan
            .flows
            .iter()
            .filter_map(|f| Some((f.id, f.rx?)))
            .collect();
        Ok(Conductor {
            remote,
            heartbeat: Some(heartbeat),
            toward,
        })
    }

    /// One run on every agent from one instant, then up to `drain` for what is on its way
    /// (see [`run`]).
    pub(crate) fn run(
        &self,
        stop: &Arc<AtomicBool>,
        progress: &Progress,
        drain: Duration,
    ) -> Result<RunResult> {
        run(self, stop, progress, drain)
    }

    /// Each receiver's counts by global port, as last polled.
    pub(crate) fn totals(&self) -> Vec<Option<RxTotals>> {
        self.remote.totals()
    }
}

impl Drop for Conductor {
    fn drop(&mut self) {
        self.remote.quit.store(true, Ordering::Relaxed);
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
        if self.remote.lost().is_none() {
            self.remote.teardown_all();
        }
    }
}

/// Splits the config per agent and sets it up on all of them, or on none.
pub(super) fn start(
    controller: &Controller,
    mapped: Arc<otg::Mapped>,
) -> Result<(PortThread, Counting)> {
    let plan = split(&mapped)?;
    let controller = controller.clone();
    let setup = move || -> Result<_> {
        let conductor = Conductor::set_up(&controller, &plan)?;
        let counting = Counting {
            receivers: vec![None; plan.global_ports],
            flows: plan.flows.clone(),
            ports: plan.ports.clone(),
            remote: Some(Arc::clone(&conductor.remote)),
        };
        Ok((conductor, counting))
    };
    let run = move |c: &mut Conductor, stop: &Arc<AtomicBool>, progress: &Progress, _| {
        c.run(stop, progress, DRAIN)
            .unwrap_or_else(RunResult::failed)
    };
    PortThread::spawn(setup, run)
}

/// A config split per agent.
pub(crate) struct Split {
    /// Each agent's address and setup.
    setups: Vec<(String, Setup)>,
    global_ports: usize,
    /// Per stream, in order: its id, sending port and receiving port (global).
    pub(crate) flows: Vec<FlowAt>,
    ports: BTreeMap<String, PortAt>,
}

/// A host on an agent's port.
pub(crate) struct Placed {
    /// `HOST:PORT` of the agent.
    pub(crate) agent: String,
    /// The host, its port as the agent names it (`IFACE[@NETNS]`).
    pub(crate) spec: linerate_stream::HostSpec,
    /// Its gateway's MAC, given rather than resolved.
    pub(crate) given: Option<GivenMac>,
    /// The name its port is reported by (the OTG port's, or the port itself).
    pub(crate) port_name: String,
}

impl Placed {
    /// `spec`, whose port is `HOST:PORT/IFACE[@NETNS]`; None for a port of this host.
    pub(crate) fn of(spec: &linerate_stream::HostSpec) -> Option<Placed> {
        let location = otg::Location::parse(&spec.port)?;
        let agent = location.agent.clone()?;
        let mut local = spec.clone();
        local.port = location.local();
        Some(Placed {
            agent,
            spec: local,
            given: None,
            port_name: spec.port.clone(),
        })
    }
}

fn split(mapped: &otg::Mapped) -> Result<Split> {
    if mapped.hosts.is_empty() {
        bail!(
            "ports on agents carry flows between devices (tx_rx.device): give each port's \
             ethernet an address and name the devices' addresses in the flows"
        );
    }
    // Each host's agent and its port as that agent names it.
    let mut placed = Vec::with_capacity(mapped.hosts.len());
    for h in &mapped.hosts {
        let port = mapped.port(&h.port).context("a host's port")?;
        let Some(agent) = port.location.agent.clone() else {
            bail!(
                "port '{}' ({}) is this host's, beside ports on agents: run `linerate agent` \
                 here too and name it HOST:PORT/{}",
                port.name,
                port.location,
                port.location
            );
        };
        let mut spec = h.spec.clone();
        spec.port = port.location.local();
        let given = gateway(h).zip(h.gateway_mac).map(|(hop, mac)| GivenMac {
            host: h.spec.name.clone(),
            hop,
            mac: mac.octets(),
        });
        placed.push(Placed {
            agent,
            spec,
            given,
            port_name: h.port.clone(),
        });
    }
    // A capture on one of an agent's ports needs the frames to reach its stack.
    let pass = |agent: &str| {
        mapped
            .ports
            .iter()
            .any(|p| p.capture && p.location.agent.as_deref() == Some(agent))
    };
    split_hosts(&placed, &mapped.streams, mapped.duration, pass)
}

/// Splits `streams` between `placed` hosts per agent: each agent's setup holds its hosts, the
/// others as peers, its streams with test-bed-wide flow ids (agent by agent, each agent's ports
/// in order) and the flows that arrive at it.
pub(crate) fn split_hosts(
    placed: &[Placed],
    streams: &[linerate_stream::StreamSpec],
    duration: Option<Duration>,
    pass: impl Fn(&str) -> bool,
) -> Result<Split> {
    let mut agents: Vec<String> = Vec::new();
    for p in placed {
        if !agents.contains(&p.agent) {
            agents.push(p.agent.clone());
        }
    }
    let host_index = |name: &str| placed.iter().position(|p| p.spec.name == name);
    // Global port numbering: agent by agent, each agent's ports in its session's order.
    let mut port_of_host = vec![0usize; placed.len()];
    let mut setups = Vec::with_capacity(agents.len());
    let mut next_port = 0usize;
    let mut next_id = 0u32;
    let mut flows = vec![
        FlowAt {
            id: 0,
            tx: 0,
            rx: None
        };
        streams.len()
    ];
    let mut ports = BTreeMap::new();
    for agent in &agents {
        let here: Vec<usize> = (0..placed.len())
            .filter(|&i| placed[i].agent == *agent)
            .collect();
        let specs: Vec<_> = here.iter().map(|&i| placed[i].spec.clone()).collect();
        let local_ports = linerate_session::ports_of(&specs);
        for &i in &here {
            let p = local_ports
                .iter()
                .position(|q| *q == placed[i].spec.port)
                .expect("listed");
            port_of_host[i] = next_port + p;
            ports.insert(
                placed[i].port_name.clone(),
                PortAt {
                    tx: Some(next_port + p),
                    rx: Some(next_port + p),
                },
            );
        }
        let mut setup = Setup {
            hosts: specs,
            peers: placed
                .iter()
                .filter(|p| p.agent != *agent)
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
        };
        setups.push((agent.clone(), std::mem::take(&mut setup)));
        // Flow ids: this agent's ports in order, each port's streams in the config's order.
        for (p, _) in local_ports.iter().enumerate() {
            for (i, s) in streams.iter().enumerate() {
                let from = s.from.as_deref().and_then(host_index);
                let Some(from) =
                    from.filter(|&f| port_of_host[f] == next_port + p && placed[f].agent == *agent)
                else {
                    continue;
                };
                let to = s.to.as_deref().and_then(host_index);
                let id = u16::try_from(next_id)
                    .map_err(|_| anyhow::anyhow!("more than 65,536 flows across the agents"))?;
                next_id += 1;
                flows[i] = FlowAt {
                    id,
                    tx: port_of_host[from],
                    rx: to.map(|t| port_of_host[t]),
                };
                let last = setups.last_mut().expect("pushed");
                last.1.flows.push(FlowSetup {
                    id,
                    stream: s.clone(),
                });
            }
        }
        next_port += local_ports.len();
    }
    // A flow whose receiver is on an agent listed later got its port number before that agent
    // was numbered: number again now that every port is; and tell each agent what arrives.
    for (i, s) in streams.iter().enumerate() {
        if let Some(t) = s.to.as_deref().and_then(host_index) {
            flows[i].rx = Some(port_of_host[t]);
            if let Some((_, setup)) = setups.iter_mut().find(|(a, _)| *a == placed[t].agent) {
                setup.arriving.push(flows[i].id);
            }
        }
    }
    Ok(Split {
        setups,
        global_ports: next_port,
        flows,
        ports,
    })
}

/// Sets every agent up, or none: a refusal tears down the agents that were set up. All at
/// once: each agent's hosts resolve their next hops, which may be another agent's hosts, which
/// answer only once that agent is set up too.
fn set_up(controller: &Controller, plan: &Split) -> Result<Remote> {
    let made: Vec<Result<(AgentClient, linerate_agent::SetupReply)>> = std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .setups
            .iter()
            .map(|(address, setup)| {
                s.spawn(move || -> Result<_> {
                    let client = AgentClient::new(address, &controller.client)?;
                    let reply = client.setup(setup)?;
                    Ok((client, reply))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    if let Some(i) = made.iter().position(Result::is_err) {
        for (client, _) in made.iter().flatten() {
            let _ = client.teardown();
        }
        let e = made
            .into_iter()
            .nth(i)
            .and_then(Result::err)
            .expect("an error");
        return Err(e.context("no agent keeps the config"));
    }
    let mut agents: Vec<Agent> = Vec::with_capacity(made.len());
    let mut first = 0;
    for (client, reply) in made.into_iter().flatten() {
        let n = reply.ports.len();
        agents.push(Agent {
            client,
            ports: reply.ports,
            first,
        });
        first += n;
    }
    let remote = Remote {
        statuses: Mutex::new(vec![None; agents.len()]),
        offsets: Mutex::new(vec![None; agents.len()]),
        lost: Mutex::new(None),
        quit: AtomicBool::new(false),
        controller: controller.clone(),
        agents,
    };
    if let Err(e) = measure(&remote) {
        remote.teardown_all();
        return Err(e.context("no agent keeps the config"));
    }
    remote.poll();
    Ok(remote)
}

/// Measures every agent's clock offset; one beyond the tolerance is a warning, or with
/// --strict-sync an error.
fn measure(remote: &Remote) -> Result<Vec<(StartClock, Offset)>> {
    let mut out = Vec::with_capacity(remote.agents.len());
    for a in &remote.agents {
        let (clock, offset) = a.client.offset(remote.controller.tolerance / 4)?;
        let tolerance = remote.controller.tolerance.as_nanos() as u64;
        if offset.uncertainty_ns > tolerance {
            let why = format!(
                "agent {}: its clock is known to within ±{} µs only (offset {} µs), over \
                 --sync-tolerance {:?}: synchronise the hosts' clocks (docs/distributed.md)",
                a.client.agent,
                offset.uncertainty_ns / 1000,
                offset.offset_ns / 1000,
                remote.controller.tolerance
            );
            if remote.controller.strict {
                bail!("{why}");
            }
            eprintln!("linerate serve: warning: {why}");
        }
        out.push((clock, offset));
    }
    *remote.offsets.lock().unwrap_or_else(|p| p.into_inner()) =
        out.iter().copied().map(Some).collect();
    Ok(out)
}

/// One run on every agent from one instant: started, polled until every agent has ended,
/// drained, and summed.
fn run(
    c: &Conductor,
    stop: &Arc<AtomicBool>,
    progress: &Progress,
    drain: Duration,
) -> Result<RunResult> {
    let remote = &c.remote;
    if let Some(lost) = remote.lost() {
        bail!("{lost}: set the config again");
    }
    let offsets = measure(remote)?;
    let slowest = offsets
        .iter()
        .map(|(_, o)| o.round_trip_ns)
        .max()
        .unwrap_or(0);
    let lead = START_LEAD.as_nanos() as u64 + 4 * slowest;
    // One instant, fixed before any agent is told: now on this host's clock plus the lead, on
    // each agent's clock. The starts go out at once (an agent clears its receivers before it
    // answers, which takes a while on a large flow table).
    let now: Vec<u64> = offsets.iter().map(|(clock, _)| clock.now_ns()).collect();
    let started: Vec<Result<u64, linerate_agent::AgentError>> = std::thread::scope(|s| {
        let handles: Vec<_> = remote
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
        for a in &remote.agents {
            let _ = a.client.stop();
        }
        let e = started.into_iter().find_map(Result::err).expect("an error");
        return Err(anyhow::Error::from(e).context("the start"));
    }
    let expected: Vec<u64> = started.into_iter().flatten().collect();
    let mut stopped = false;
    let statuses = loop {
        std::thread::sleep(Duration::from_millis(100));
        if stop.load(Ordering::Relaxed) && !stopped {
            stopped = true;
            for a in &remote.agents {
                let _ = a.client.stop();
            }
        }
        let fresh = remote.poll();
        if let Some(lost) = remote.lost() {
            return Ok(lost_result(remote, &lost));
        }
        let (frames, bytes) = fresh
            .iter()
            .flatten()
            .fold((0, 0), |(f, b), s| (f + s.frames, b + s.bytes));
        progress.frames.store(frames, Ordering::Relaxed);
        progress.bytes.store(bytes, Ordering::Relaxed);
        let ended = fresh.iter().zip(&expected).all(|(s, &n)| {
            s.as_ref()
                .is_some_and(|s| s.runs == n && !s.running && s.result.is_some())
        });
        if ended {
            break fresh;
        }
    };
    let result = summed(remote, &statuses);
    // The frames still on their way: until every flow has arrived, or the drain is over.
    let deadline = Instant::now() + drain;
    while Instant::now() < deadline && !arrived(&c.toward, &result, &remote.totals()) {
        std::thread::sleep(Duration::from_millis(20));
        remote.poll();
        if let Some(lost) = remote.lost() {
            return Ok(lost_result(remote, &lost));
        }
    }
    Ok(result)
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
fn summed(remote: &Remote, statuses: &[Option<Status>]) -> RunResult {
    let mut result = RunResult::default();
    for (a, s) in remote.agents.iter().zip(statuses) {
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
fn lost_result(remote: &Remote, lost: &str) -> RunResult {
    let statuses = remote
        .statuses
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let sent: u64 = statuses.iter().flatten().map(|s| s.frames).sum();
    let received: u64 = remote
        .totals()
        .iter()
        .flatten()
        .map(linerate_session::all_frames)
        .sum();
    RunResult::failed(anyhow::anyhow!(
        "{lost}; the other agents were stopped and released; counted until then: {sent} \
         frames sent, {received} received (as last polled: senders report once a second)"
    ))
}
