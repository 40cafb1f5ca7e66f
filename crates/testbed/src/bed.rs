//! The test bed itself: what it holds (one port, hosts on this machine's ports, hosts on
//! agents' ports, or several of this machine's ports without hosts), and the one path every
//! command takes through it.
//!
//! ```text
//!  open ──> resolve ──> compile(streams, end) ──> run(go) ──> BedRun
//!   │          │              │                      │          (per place, per flow)
//!   │  gateways (hosts)   plans per place,       every place at once
//!   │                     flow ids across        (agents: one instant)
//!   │                     all places
//!   └── counts(): LiveCounts, readable from any thread while a run goes on
//! ```

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use linerate_engine::{FlowControl, Observer, Report};
use linerate_rx::FlowReport;
use linerate_session::{
    End, FlowSent, Outcome, PortOptions, PortSession, RunFlows, RunOptions, RxTarget, SinkResult,
};
use linerate_stream::{HostSpec, Plan, Shape, StreamSpec};

use crate::control::BedControl;
use crate::counts::LiveCounts;
use crate::error::{Result, TestBedError};
use crate::{FlowAt, RunResult};

/// Where the ports of a test bed are.
#[derive(Debug, Clone)]
pub enum Places {
    /// One port: the interface of the options (or a pcap file, or the null port).
    Port,
    /// Hosts on ports, each named `IFACE[@NETNS]` on this machine or `HOST:PORT/IFACE[@NETNS]`
    /// on an agent (all of them one or the other).
    Hosts {
        hosts: Vec<HostSpec>,
        /// Next hops whose MAC is given, never resolved (OTG `gateway_mac`).
        #[cfg(target_os = "linux")]
        given: Vec<crate::GivenMac>,
        /// Hosts on ports of other test beds (an agent's peers): streams toward them take
        /// their addresses, and none of this bed's receivers counts them.
        peers: Vec<HostSpec>,
        /// The places (as named by the hosts) where a capture runs: received frames go on to
        /// the stack there too.
        capture: Vec<String>,
    },
    /// Ports of this machine, each a place that sends its own streams and counts those sent
    /// toward it (flows between ports, no hosts): a stream's `from` and `to` name the places
    /// it leaves from and goes to, by their `IFACE[@NETNS]`.
    Ports {
        /// Each port, `IFACE[@NETNS]`, with its link speed in Mbit/s when given (else the
        /// options' or the port's own).
        ports: Vec<(String, Option<u64>)>,
        /// The places where a capture runs: received frames go on to the stack there too.
        capture: Vec<String>,
    },
}

/// How to open a test bed.
#[derive(Debug, Clone)]
pub struct BedSpec {
    pub places: Places,
    /// Every port's options: backend, AF_XDP settings, link speed, clock; with hosts or
    /// several ports, port i runs its workers on core `cores[i % len]`.
    pub port: PortOptions,
    /// One port: its receiver, and where (None: no receiver). Hosts or several ports: the
    /// options every port receives with (`at` is each port's own; None: no receivers).
    pub rx: Option<RxTarget>,
    /// How long a next hop has to answer ARP/ND.
    pub resolve_wait: Duration,
    /// How agents are reached, when the hosts' ports are theirs.
    #[cfg(target_os = "linux")]
    pub controller: Option<crate::Controller>,
    /// Hosts with a control plane, each with the group MACs it listens on (none for BGP):
    /// frames to their MACs that the hosts do not answer go on to their ports' kernel stacks,
    /// where their daemons (crates/routing) take them, from each receiver's first frame. Hosts
    /// on agents' ports are told so with the agents' setups, at the first compile.
    pub to_stack: Vec<(String, Vec<[u8; 6]>)>,
}

impl BedSpec {
    /// One port with these options and no receiver.
    pub fn port(port: PortOptions) -> Self {
        BedSpec {
            places: Places::Port,
            port,
            rx: None,
            resolve_wait: Duration::from_secs(5),
            #[cfg(target_os = "linux")]
            controller: None,
            to_stack: Vec::new(),
        }
    }
}

/// Whether a plan's streams are lanes a control can hold one by one: interleaved lanes, or a
/// lone stream's cycle (streams in sequence share one cycle, a capture streams on its own).
pub(crate) fn steerable(plan: &Plan) -> bool {
    match &plan.shape {
        Shape::Lanes(_) => true,
        Shape::Cycle { .. } => plan.streams.len() == 1,
        Shape::Streamed { .. } => false,
    }
}

/// Each stream's planned rate in a plan (frames per second; None: unpaced).
fn planned_pps(plan: &Plan) -> Vec<Option<f64>> {
    match &plan.shape {
        Shape::Lanes(lanes) => lanes.iter().map(|l| Some(l.pacing.pps())).collect(),
        Shape::Cycle { pacing, .. } | Shape::Streamed { pacing, .. } => {
            vec![pacing.as_ref().map(linerate_stream::Pacing::pps)]
        }
    }
}

/// How a run goes: what stops it early, who watches it, how long its frames still on their way
/// are waited for, when it starts.
#[derive(Clone, Copy)]
pub struct Go<'a> {
    pub stop: &'a Arc<AtomicBool>,
    pub observer: &'a dyn Observer,
    pub drain: Duration,
    /// Start the workers at this instant (an agent's share of a synchronized start).
    pub start_at: Option<Instant>,
    /// The receivers were cleared by the caller already (before a start instant shared with
    /// other test beds, so that what another bed's earlier start sends here is kept).
    pub cleared: bool,
}

impl std::fmt::Debug for Go<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Go")
            .field("drain", &self.drain)
            .field("start_at", &self.start_at)
            .field("cleared", &self.cleared)
            .finish_non_exhaustive()
    }
}

/// What one place did in a run (places of this machine; an agent's are summed in
/// [`BedRun::summary`]).
#[derive(Debug, Clone)]
pub struct PlaceRun {
    pub place: usize,
    /// The engine's report, when the place sent.
    pub report: Option<Report>,
    /// Frames each flow this place sent.
    pub sent: Vec<FlowSent>,
    /// Per flow sent toward this place what its receiver saw, when it has one.
    pub received: Option<RunFlows>,
}

/// One flow of a run, in the order of the streams compiled.
#[derive(Debug, Clone)]
pub struct FlowRun {
    pub name: String,
    pub at: FlowAt,
    pub sent: u64,
    /// Frames per second its place sent.
    pub sent_fps: f64,
    /// What its receiver counted of it, when one did.
    pub received: Option<FlowReport>,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct BedRun {
    /// Frames per flow and per place, the totals, and the error of a run that failed on an
    /// agent.
    pub summary: RunResult,
    pub places: Vec<PlaceRun>,
    pub flows: Vec<FlowRun>,
    /// What a lab's sink counted, when the one port is a lab's sender end.
    pub sink: Option<SinkResult>,
    /// The mode the first sending place bound in (copy, zero-copy, skb…), when known.
    pub mode: Option<String>,
}

/// The ports of a test, opened once for any number of runs.
#[derive(Debug)]
pub struct TestBed {
    bed: Bed,
    /// Each place's name, in the order every index of the bed counts them.
    places: Vec<String>,
    /// Per stream of the last compile: where it is sent and counted.
    flows: Vec<FlowAt>,
    names: Vec<String>,
    end: End,
    /// Whether compiled flows are steered while they run, and their control once compiled.
    controlled: bool,
    control: BedControl,
}

#[derive(Debug)]
enum Bed {
    Port {
        port: Box<PortSession>,
        plan: Option<Box<Plan>>,
    },
    #[cfg(target_os = "linux")]
    Hosts(Box<crate::hosts::LocalHosts>),
    #[cfg(target_os = "linux")]
    Agents(Box<crate::agents::AgentHosts>),
    #[cfg(target_os = "linux")]
    Ports(Box<crate::ports::LocalPorts>),
}

impl TestBed {
    /// Opens every place (its port, its receiver, its hosts, which answer from here on; on
    /// agents, nothing yet: they are set up by [`TestBed::compile`]). Nothing is sent.
    pub fn open(spec: &BedSpec) -> Result<TestBed> {
        if !spec.to_stack.is_empty() && !matches!(spec.places, Places::Hosts { .. }) {
            return Err(TestBedError::Usage(
                "control planes run on devices with addresses (hosts): a port of its own has \
                 none"
                    .into(),
            ));
        }
        let (bed, places) = match &spec.places {
            Places::Port => {
                // The receiver first: on a veth it is what lets live open (issue 40 #14).
                let port = PortSession::open_receiving(&spec.port, spec.rx.as_ref())?;
                let name = port.info().name.clone();
                (
                    Bed::Port {
                        port: Box::new(port),
                        plan: None,
                    },
                    vec![name],
                )
            }
            #[cfg(target_os = "linux")]
            Places::Hosts { hosts, .. } if crate::agents::on_agents(hosts)? => {
                let mut a = crate::agents::AgentHosts::new(spec)?;
                a.pass_to_stack(&spec.to_stack);
                (Bed::Agents(Box::new(a)), Vec::new())
            }
            #[cfg(target_os = "linux")]
            Places::Hosts { .. } => {
                let h = crate::hosts::LocalHosts::open(spec)?;
                let places = h.places();
                (Bed::Hosts(Box::new(h)), places)
            }
            #[cfg(target_os = "linux")]
            Places::Ports { .. } => {
                let p = crate::ports::LocalPorts::open(spec)?;
                let places = p.places();
                (Bed::Ports(Box::new(p)), places)
            }
            #[cfg(not(target_os = "linux"))]
            Places::Hosts { .. } => {
                return Err(TestBedError::usage(
                    "hosts answer ARP/ND from the receive side's XDP program: they need Linux",
                ));
            }
            #[cfg(not(target_os = "linux"))]
            Places::Ports { .. } => {
                return Err(TestBedError::usage(
                    "flows between several ports are counted by each port's XDP receiver: they \
                     need Linux",
                ));
            }
        };
        Ok(TestBed {
            bed,
            places,
            flows: Vec::new(),
            names: Vec::new(),
            end: End::default(),
            controlled: false,
            control: BedControl::default(),
        })
    }

    /// Steers the flows of the next compile while they run ([`TestBed::control`]): each port
    /// then runs them as lanes of their own, never merged into one cycle (so live, which sends
    /// only a merged cycle, gives way to the next backend of `auto`'s ladder).
    pub fn set_controlled(&mut self, on: bool) {
        self.controlled = on;
    }

    /// The control of the flows compiled last: hold, resume and re-rate them by index while
    /// a run goes on (every flow refuses when the bed is not controlled).
    pub fn control(&self) -> &BedControl {
        &self.control
    }

    /// A control for each place's plan, set on its port, and each flow's lane in it.
    fn make_control(&mut self) -> BedControl {
        if !self.controlled {
            return BedControl::none(
                self.flows.len(),
                "the flows of this test bed are not steered while they run",
            );
        }
        let mut places: Vec<(usize, Arc<FlowControl>, u16)> = Vec::new();
        let mut planned: Vec<(usize, Vec<Option<f64>>)> = Vec::new();
        match &mut self.bed {
            Bed::Port { port, plan } => {
                if let Some(p) = plan.as_ref().filter(|p| steerable(p)) {
                    let c = Arc::new(FlowControl::new(p.streams.len()));
                    port.set_control(Some(Arc::clone(&c)));
                    places.push((0, c, p.first_flow));
                    planned.push((0, planned_pps(p)));
                }
            }
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => {
                places = h.set_control();
                planned = places
                    .iter()
                    .map(|(place, _, _)| {
                        (*place, h.plan(*place).map(planned_pps).unwrap_or_default())
                    })
                    .collect();
            }
            #[cfg(target_os = "linux")]
            Bed::Ports(p) => {
                places = p.set_control();
                planned = places
                    .iter()
                    .map(|(place, _, _)| {
                        (*place, p.plan(*place).map(planned_pps).unwrap_or_default())
                    })
                    .collect();
            }
            #[cfg(target_os = "linux")]
            Bed::Agents(a) => {
                let flows: Vec<(usize, u16)> = self.flows.iter().map(|f| (f.tx, f.id)).collect();
                return match a.remote() {
                    Some(remote) => BedControl::remote(&flows, remote),
                    None => BedControl::none(flows.len(), "the agents are not set up"),
                };
            }
        }
        let lanes = self.flows.iter().map(|f| {
            places
                .iter()
                .find(|(place, _, _)| *place == f.tx)
                .and_then(|(_, c, first)| {
                    Some((Arc::clone(c), usize::from(f.id.checked_sub(*first)?)))
                })
        });
        let rates = self.flows.iter().zip(lanes.clone()).map(|(f, lane)| {
            let (_, pps) = planned.iter().find(|(place, _)| *place == f.tx)?;
            pps.get(lane?.1).copied().flatten()
        });
        BedControl::new(lanes.collect(), rates.collect())
    }

    /// Resolves every host's gateways but those given, whether or not a stream goes through
    /// them (an OTG device's neighbours are known once its config is set). One that does not
    /// answer is an error naming it. Agents resolve theirs as they are set up.
    pub fn resolve(&mut self) -> Result<()> {
        match &mut self.bed {
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => h.resolve(),
            _ => Ok(()),
        }
    }

    /// Compiles `streams` for the places that send them, flows numbered across every place,
    /// to run until `end` (or each plan's own count, or the stop flag). With hosts, each
    /// stream goes from one host to another and takes their addresses and its next hop's MAC;
    /// on agents this sets every agent up, or none. Every check of the streams happens here.
    pub fn compile(&mut self, streams: &[StreamSpec], end: End) -> Result<()> {
        self.compile_numbered(streams, None, end)
    }

    /// [`TestBed::compile`] with each stream's flow id given (an agent's share of a test bed
    /// numbered by its controller; one port's ids follow each other).
    pub fn compile_numbered(
        &mut self,
        streams: &[StreamSpec],
        ids: Option<&[u16]>,
        end: End,
    ) -> Result<()> {
        self.flows = match &mut self.bed {
            Bed::Port { port, plan } => {
                let mut port_ids = ids.map(<[u16]>::iter);
                if let Some(first) = port_ids.as_mut().and_then(Iterator::next) {
                    port.set_first_flow(*first);
                }
                let p = port.compile(streams)?;
                let rx = port.rx_handle().map(|_| 0);
                let flows = (0..streams.len())
                    .map(|i| FlowAt {
                        id: p.first_flow + i as u16,
                        tx: 0,
                        rx,
                    })
                    .collect();
                *plan = Some(Box::new(p));
                flows
            }
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => h.compile(streams, ids)?,
            #[cfg(target_os = "linux")]
            Bed::Ports(p) => p.compile(streams, ids)?,
            #[cfg(target_os = "linux")]
            Bed::Agents(a) => {
                let (places, flows) = a.compile(streams, end)?;
                self.places = places;
                flows
            }
        };
        self.names = streams.iter().map(|s| s.name.clone()).collect();
        self.end = end;
        self.control = self.make_control();
        Ok(())
    }

    /// Compiles `streams` as [`TestBed::compile`] would, keeping nothing: a check before the
    /// first run (agents compile theirs where the ports are, as they are set up).
    pub fn check(&self, streams: &[StreamSpec]) -> Result<()> {
        match &self.bed {
            Bed::Port { port, .. } => port.compile(streams).map(drop).map_err(Into::into),
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => h.check(streams),
            #[cfg(target_os = "linux")]
            Bed::Ports(p) => p.check(streams),
            #[cfg(target_os = "linux")]
            Bed::Agents(_) => Ok(()),
        }
    }

    /// Runs what was compiled on every place at once, then waits up to `go.drain` for the
    /// frames still on their way and reads per flow what arrived. A run that a worker ended
    /// early fails with the report so far ([`TestBedError::interrupted`]); a run on agents
    /// that one of them failed or lost comes back with `summary.error` set.
    pub fn run(&mut self, go: Go<'_>) -> Result<BedRun> {
        let run = RunOptions {
            end: self.end,
            stop: go.stop,
            observer: go.observer,
            drain: go.drain,
            start_at: go.start_at,
        };
        let mut ran = match &mut self.bed {
            Bed::Port { port, plan } => {
                let plan = plan
                    .as_ref()
                    .ok_or_else(|| TestBedError::usage("nothing compiled to run"))?;
                one_port(port.run_plan(plan, run)?)
            }
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => h.run(run, go.cleared)?,
            #[cfg(target_os = "linux")]
            Bed::Ports(p) => p.run(run, go.cleared)?,
            #[cfg(target_os = "linux")]
            Bed::Agents(a) => a.run(&go, &self.flows, &self.names)?,
        };
        if ran.flows.is_empty() {
            ran.flows = flow_runs(&self.flows, &self.names, &ran.places);
        }
        Ok(ran)
    }

    /// Runs `plan` on the one port (a replayed capture: its frames carry no signature, and the
    /// receiver counts frames of any kind). Other beds refuse.
    pub fn run_unsigned(&mut self, plan: &Plan, run: RunOptions<'_>) -> Result<Outcome> {
        match &mut self.bed {
            Bed::Port { port, .. } => Ok(port.run_unsigned(plan, run)?),
            #[allow(unreachable_patterns)]
            _ => Err(TestBedError::usage("a capture is replayed on one port")),
        }
    }

    /// Each place's name, in the order indices of the bed count them.
    pub fn places(&self) -> &[String] {
        &self.places
    }

    /// Per stream of the last compile: its flow id, the place that sends it and the one whose
    /// receiver counts it.
    pub fn flows(&self) -> &[FlowAt] {
        &self.flows
    }

    /// The plan place `place` sends, when it is this machine's and sends.
    pub fn plan(&self, place: usize) -> Option<&Plan> {
        match &self.bed {
            Bed::Port { plan, .. } => plan.as_deref().filter(|_| place == 0),
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => h.plan(place),
            #[cfg(target_os = "linux")]
            Bed::Ports(p) => p.plan(place),
            #[cfg(target_os = "linux")]
            Bed::Agents(_) => None,
        }
    }

    /// The one port of a bed of one port (for what only a single port reports: its backend's
    /// choice, its sink, a sweep's runs).
    pub fn port(&self) -> Option<&PortSession> {
        match &self.bed {
            Bed::Port { port, .. } => Some(port),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The first sending place of this machine: its link speed, backend and choice stand for
    /// all.
    pub fn first_port(&self) -> Option<&PortSession> {
        match &self.bed {
            Bed::Port { port, .. } => Some(port),
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => h.first_sender(),
            #[cfg(target_os = "linux")]
            Bed::Ports(p) => p.first_sender(),
            #[cfg(target_os = "linux")]
            Bed::Agents(_) => None,
        }
    }

    /// The first sending port's link speed, Mbit/s, when known.
    pub fn link_mbps(&self) -> Option<u64> {
        match &self.bed {
            #[cfg(target_os = "linux")]
            Bed::Agents(a) => a.link_mbps(),
            _ => self.first_port().and_then(PortSession::link_mbps),
        }
    }

    /// Where the runs go, for a report's backend field: the first port's backend, or "agents".
    pub fn backend(&self) -> String {
        match self.first_port() {
            Some(p) => p.info().backend.to_string(),
            None => "agents".into(),
        }
    }

    /// The places are agents': what runs there is compiled there, as each compile sets them up.
    pub fn on_agents(&self) -> bool {
        #[cfg(target_os = "linux")]
        if let Bed::Agents(_) = self.bed {
            return true;
        }
        false
    }

    /// The bed holds one port, not hosts or several: its runs have no directions.
    pub fn is_one_port(&self) -> bool {
        matches!(self.bed, Bed::Port { .. })
    }

    /// Devices' control planes on agents' ports go to their agents with the next compile's
    /// setups, each agent starting its own devices' daemons (true); a bed of this machine's
    /// ports runs none itself (false: the caller starts them, as `linerate_routing::Routers`).
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
    pub fn control_planes_to_agents(&mut self, devices: &[linerate_routing::Device]) -> bool {
        match &mut self.bed {
            #[cfg(target_os = "linux")]
            Bed::Agents(a) => {
                a.control_planes(devices);
                true
            }
            _ => false,
        }
    }

    /// Checks every receiver's link; an agent checks its own (a dead one fails the run there).
    pub fn check_receivers(&self) -> Result<()> {
        match &self.bed {
            Bed::Port { port, .. } => Ok(port.check_receiver()?),
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => h.check_receivers(),
            #[cfg(target_os = "linux")]
            Bed::Ports(p) => p.check_receivers(),
            #[cfg(target_os = "linux")]
            Bed::Agents(_) => Ok(()),
        }
    }

    /// The counts of every receiver, readable from any thread while a run goes on.
    pub fn counts(&self) -> LiveCounts {
        match &self.bed {
            Bed::Port { port, .. } => LiveCounts::local(vec![port.rx_handle()]),
            #[cfg(target_os = "linux")]
            Bed::Hosts(h) => LiveCounts::of_hosts(h.receivers(), h.asked()),
            #[cfg(target_os = "linux")]
            Bed::Ports(p) => LiveCounts::local(p.receivers()),
            #[cfg(target_os = "linux")]
            Bed::Agents(a) => a.counts(),
        }
    }
}

/// One port's run as the bed's.
fn one_port(out: Outcome) -> BedRun {
    let Outcome {
        report,
        sent,
        flows,
        sink,
    } = out;
    let summary = RunResult {
        per_flow: sent.iter().map(|(id, _, n)| (*id, *n)).collect(),
        per_port: vec![(0, report.completed, report.bytes)],
        frames: report.completed,
        bytes: report.bytes,
        elapsed_s: report.elapsed_s,
        error: None,
    };
    BedRun {
        summary,
        mode: report.workers.first().map(|w| w.mode.clone()),
        places: vec![PlaceRun {
            place: 0,
            report: Some(report),
            sent,
            received: flows,
        }],
        flows: Vec::new(),
        sink,
    }
}

/// Each flow's run from what the places of this machine sent and received.
fn flow_runs(flows: &[FlowAt], names: &[String], places: &[PlaceRun]) -> Vec<FlowRun> {
    flows
        .iter()
        .zip(names)
        .map(|(at, name)| {
            let by = places.iter().find(|p| p.place == at.tx);
            let sent = by
                .and_then(|p| p.sent.iter().find(|s| s.0 == at.id))
                .map_or(0, |s| s.2);
            let received = at
                .rx
                .and_then(|rx| places.iter().find(|p| p.place == rx))
                .and_then(|p| p.received.as_ref())
                .and_then(|r| r.flows.iter().find(|f| f.flow == at.id))
                .cloned();
            FlowRun {
                name: name.clone(),
                at: *at,
                sent,
                sent_fps: by.and_then(|p| p.report.as_ref()).map_or(0.0, |r| r.pps),
                received,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use linerate_engine::Snapshot;
    use linerate_session::Backend;

    use super::*;

    struct Quiet;

    impl Observer for Quiet {
        fn tick(&self, _: &Snapshot) {}
    }

    /// A bed of one null port: the one path (open, compile, run) sends the count, split per
    /// flow exactly, each flow numbered in order on place 0 with no receiver.
    #[test]
    fn a_bed_of_one_null_port_runs_its_count_and_splits_it_per_flow() {
        let mut bed = TestBed::open(&BedSpec::port(PortOptions {
            backend: Backend::Null,
            interface: None,
            ..PortOptions::interface("unused")
        }))
        .unwrap();
        assert!(bed.is_one_port() && !bed.on_agents());
        // Two streams at once, each at its own rate.
        let signed = |name: &str| StreamSpec {
            name: name.into(),
            signature: true,
            mode: linerate_stream::Mode::Interleaved,
            rate: linerate_stream::Rate::Pps(1e6),
            ..StreamSpec::seed()
        };
        let end = End {
            duration: None,
            count: Some(1000),
        };
        bed.compile(&[signed("a"), signed("b")], end).unwrap();
        let at = |id| FlowAt {
            id,
            tx: 0,
            rx: None,
        };
        assert_eq!(bed.flows(), [at(0), at(1)]);
        let stop = Arc::new(AtomicBool::new(false));
        let go = Go {
            stop: &stop,
            observer: &Quiet,
            drain: Duration::ZERO,
            start_at: None,
            cleared: false,
        };
        let ran = bed.run(go).unwrap();
        assert_eq!(ran.summary.frames, 1000);
        let sent: Vec<u64> = ran.flows.iter().map(|f| f.sent).collect();
        assert_eq!(sent.iter().sum::<u64>(), 1000);
        assert_eq!(ran.summary.per_flow.len(), 2);
        assert!(ran.flows.iter().all(|f| f.received.is_none()));
        assert_eq!(ran.places.len(), 1);
    }
}
