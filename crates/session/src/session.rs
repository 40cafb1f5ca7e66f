//! A session: N ports opened once, each with its lab's sink and optionally a receiver of its
//! own, and any number of runs on them — what `tx` does once, and what a trial loop
//! (`rfc2544`) or the OTG server does many times. Each run compiles its streams, runs the
//! engine, waits for the receiver to drain and reads per flow what came back; a receiver's
//! counts are cleared between runs, so every run's sequence numbers start afresh.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use linerate_engine::{FlowControl, Observer, Report, RunConfig, WorkerSpec};
use linerate_port::PortInfo;
use linerate_stream::{Plan, StreamSpec};

use crate::compile::compile_from;
use crate::error::{Result, SessionError};
use crate::flows::{FlowSent, RunFlows, sent_per_flow};
use crate::options::{Clock, End, PortOptions, RxTarget};
use crate::receiver::RunReceiver;
use crate::sender::Sender;
use crate::sink::{Sink, SinkResult};

/// The ports of one test. Today's commands open one (N = 1); each port has its own sender,
/// sink and receiver, and runs are addressed per port.
#[derive(Debug, Default)]
pub struct Session {
    ports: Vec<PortSession>,
}

impl Session {
    /// Opens every port (and finds the lab behind each interface). Nothing is sent yet.
    pub fn open(ports: &[PortOptions]) -> Result<Session> {
        Ok(Session {
            ports: ports.iter().map(PortSession::open).collect::<Result<_>>()?,
        })
    }

    /// Adds a port opened elsewhere; returns its index.
    pub fn push(&mut self, port: PortSession) -> usize {
        self.ports.push(port);
        self.ports.len() - 1
    }

    pub fn ports(&self) -> &[PortSession] {
        &self.ports
    }

    /// The port at `index`, as [`Session::open`] was given them.
    ///
    /// # Panics
    /// If there is no such port.
    pub fn port(&self, index: usize) -> &PortSession {
        &self.ports[index]
    }

    /// The port at `index`, to attach its receiver or run on it.
    ///
    /// # Panics
    /// If there is no such port.
    pub fn port_mut(&mut self, index: usize) -> &mut PortSession {
        &mut self.ports[index]
    }
}

/// What one run did.
#[derive(Debug)]
pub struct Outcome {
    /// The engine's report: frames, bytes, rate, workers.
    pub report: Report,
    /// Frames each flow of the plan sent.
    pub sent: Vec<FlowSent>,
    /// Per flow what the receiver saw against `sent`, when the port has a receiver.
    pub flows: Option<RunFlows>,
    /// What a lab's sink counted, when the port is a lab's sender end.
    pub sink: Option<SinkResult>,
}

/// What the receiver waits for after a run, and reports.
#[derive(Debug, Clone, Copy)]
enum Counted {
    /// Each flow's signed frames against what it sent.
    PerFlow,
    /// Frames of any kind against all the sender completed.
    AllFrames,
}

/// How a run goes: when it ends, what stops it early, who watches it, how long its frames
/// still on their way are waited for.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    pub end: End,
    pub stop: &'a Arc<AtomicBool>,
    pub observer: &'a dyn Observer,
    pub drain: Duration,
    /// Start the workers at this instant (see `RunConfig::start_at`).
    pub start_at: Option<std::time::Instant>,
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("end", &self.end)
            .field("drain", &self.drain)
            .finish()
    }
}

/// One port of a session: its sender and workers, its lab's sink, its receiver.
#[derive(Debug)]
pub struct PortSession {
    sender: Sender,
    workers: Vec<WorkerSpec>,
    batch: u32,
    link_speed: Option<u64>,
    clock: Clock,
    interface: Option<String>,
    /// The namespace of `interface` (`IFACE@NETNS`): opened and run from inside it.
    netns: Option<String>,
    /// The signature's flow id of this port's first stream (see `Limits::first_flow`).
    first_flow: u16,
    lab: Option<Sink>,
    rx: Option<Arc<RunReceiver>>,
    /// The receiver has counted a run since it was attached or cleared.
    rx_used: bool,
    /// The control of the flows of its plan, when they are steered while they run.
    control: Option<Arc<FlowControl>>,
}

impl PortSession {
    /// Opens the port (and finds the lab behind its interface, if any). Nothing is sent yet.
    pub fn open(options: &PortOptions) -> Result<PortSession> {
        Self::open_receiving(options, None)
    }

    /// [`PortSession::open`] with the receiver of `rx` attached, before the sender opens: on a
    /// veth whose peer is the receive end, the receiver's program is what lets the veth take
    /// live frames (ndo_xdp_xmit), and live refuses to open, or `auto` passes it over, without
    /// it (issue 40 #14). A receiver attached afterwards ([`PortSession::receive`]) is too late
    /// for that choice.
    pub fn open_receiving(options: &PortOptions, rx: Option<&RxTarget>) -> Result<PortSession> {
        let workers = options.workers()?;
        let queues = workers.iter().map(|w| w.queue).max().unwrap_or(0) + 1;
        let (interface, netns) = match &options.interface {
            Some(at) => {
                let (iface, ns) = crate::netns::split(crate::Setting::Interface, at)?;
                (Some(iface.to_owned()), ns.map(str::to_owned))
            }
            None => (None, None),
        };
        let options = PortOptions {
            interface: interface.clone(),
            ..options.clone()
        };
        // A lab's sender end is in the root namespace: an interface elsewhere lends no lab.
        // Found before the receiver, which may take the lab's receive end from its sink.
        let lab = match (&interface, &netns) {
            (Some(iface), None) => Sink::of_lab(iface)?,
            _ => None,
        };
        let rx = match rx {
            Some(target) => Some(Arc::new(start_receiver(
                target,
                interface.as_deref(),
                netns.as_deref(),
            )?)),
            None => None,
        };
        let sender = crate::netns::within(netns.as_deref(), || Sender::open(&options, queues))?;
        if let Some(note) = lab.as_ref().and_then(Sink::lone_receiver_note) {
            eprintln!("linerate: {note}");
        }
        Ok(PortSession {
            sender,
            workers,
            batch: options.batch,
            link_speed: options.link_speed,
            clock: options.clock,
            interface,
            netns,
            first_flow: 0,
            control: None,
            lab,
            rx,
            rx_used: false,
        })
    }

    /// Attaches the receiver; from now on each run reports per flow what came back.
    pub fn receive(&mut self, target: &RxTarget) -> Result<()> {
        let rx = start_receiver(target, self.interface.as_deref(), self.netns.as_deref())?;
        self.rx = Some(Arc::new(rx));
        self.rx_used = false;
        Ok(())
    }

    /// Attaches a receiver on the port's own interface: in a run over several ports it counts
    /// what the others send toward it (not what it sends itself, which leaves by the same link).
    pub fn receive_here(&mut self, target: &RxTarget) -> Result<()> {
        let rx = RunReceiver::start(&self.here(target)?, None)?;
        self.rx = Some(Arc::new(rx));
        self.rx_used = false;
        Ok(())
    }

    /// [`PortSession::receive_here`] with the receiver's hosts given by `hosts` before it sees a
    /// frame (see [`RunReceiver::start_with_hosts`]).
    #[cfg(target_os = "linux")]
    pub fn receive_here_with_hosts(
        &mut self,
        target: &RxTarget,
        hosts: crate::receiver::FillHosts<'_>,
    ) -> Result<()> {
        let rx = RunReceiver::start_with_hosts(&self.here(target)?, None, Some(hosts))?;
        self.rx = Some(Arc::new(rx));
        self.rx_used = false;
        Ok(())
    }

    /// `target` at the port's own interface.
    fn here(&self, target: &RxTarget) -> Result<RxTarget> {
        let Some(iface) = &self.interface else {
            return Err(SessionError::usage(
                "a port without an interface (pcap, null) receives nothing",
            ));
        };
        let at = match &self.netns {
            Some(ns) => format!("{iface}@{ns}"),
            None => iface.clone(),
        };
        Ok(RxTarget {
            at: Some(at),
            ..target.clone()
        })
    }

    /// Checks the receiver's link (see [`RunReceiver::check_link`]); fine without a receiver.
    pub fn check_receiver(&self) -> Result<()> {
        self.rx.as_ref().map_or(Ok(()), |rx| rx.check_link())
    }

    /// The receiver, to read its live per-flow totals from another thread while a run is in
    /// progress (`read()`); None without one. Its counts restart at each run.
    pub fn rx_handle(&self) -> Option<Arc<RunReceiver>> {
        self.rx.clone()
    }

    /// The port as its backend describes it.
    pub fn info(&self) -> &PortInfo {
        self.sender.info()
    }

    /// What `--backend auto` chose and why, for the report; None for a backend asked by name.
    pub fn choice(&self) -> Option<&linerate_port::ladder::Choice> {
        self.sender.choice()
    }

    /// The workers each run starts.
    pub fn workers(&self) -> &[WorkerSpec] {
        &self.workers
    }

    /// Link speed in Mbit/s: the one given, else the port's; None when neither is known.
    pub fn link_mbps(&self) -> Option<u64> {
        self.link_speed
            .or(self.sender.info().link_speed.map(|s| s.mbps()))
    }

    /// Compiles streams for this port (its MTU, MAC, the lab's addresses, the link speed) with
    /// the port's stamp clock. Every check of the streams happens here, before a frame.
    pub fn compile(&self, streams: &[StreamSpec]) -> Result<Plan> {
        let mut plan = compile_from(
            streams,
            self.sender.info(),
            self.lab.as_ref(),
            self.link_speed,
            self.first_flow,
        )?;
        plan.set_stamp_clock(self.clock == Clock::Tai);
        Ok(plan)
    }

    /// Compiles and runs streams: see [`PortSession::run_plan`].
    pub fn run(&mut self, streams: &[StreamSpec], run: RunOptions<'_>) -> Result<Outcome> {
        let plan = self.compile(streams)?;
        self.run_plan(&plan, run)
    }

    /// Runs a compiled plan until `run.end` (or its own count, or the stop flag), then waits up
    /// to `run.drain` for the frames still on their way and reads per flow what arrived. A run
    /// that a worker ended early fails with [`crate::SessionError::Interrupted`], which holds
    /// the report so far.
    pub fn run_plan(&mut self, plan: &Plan, run: RunOptions<'_>) -> Result<Outcome> {
        self.run_counted(plan, run, Counted::PerFlow)
    }

    /// Runs a plan whose frames carry no signature (a replayed capture), as
    /// [`PortSession::run_plan`] does, but the receiver waits for and reports frames of any
    /// kind: there are no flows to count them against.
    pub fn run_unsigned(&mut self, plan: &Plan, run: RunOptions<'_>) -> Result<Outcome> {
        self.run_counted(plan, run, Counted::AllFrames)
    }

    fn run_counted(
        &mut self,
        plan: &Plan,
        run: RunOptions<'_>,
        counted: Counted,
    ) -> Result<Outcome> {
        self.clear_receiver()?;
        // A lone receiver holding the lab's receive end counts there: no sink count this run.
        let before = self
            .lab
            .as_ref()
            .filter(|l| l.lone_receiver.is_none())
            .map(Sink::read)
            .transpose()?;
        let report = self.send(plan, &run)?;
        let sent = sent_per_flow(plan, &report);
        let flows = match (&self.rx, counted) {
            (Some(rx), Counted::PerFlow) => Some(rx.finish(&sent, run.drain)?),
            (Some(rx), Counted::AllFrames) => Some(rx.finish_frames(report.completed, run.drain)?),
            (None, _) => None,
        };
        let sink = match (&self.lab, before, &flows) {
            // The receiver had the lab's receive end: it saw what the sink would have.
            (Some(l), Some(_), Some(f)) if f.lab_end => {
                let (packets, bytes) = f.all_frames();
                Some(SinkResult::new(&l.name, packets, bytes, report.completed))
            }
            (Some(l), Some(b), _) => Some(l.settle(b, report.completed)?),
            _ => None,
        };
        let sink = sink.map(|mut s| {
            if let (Some(l), Some(first)) = (&self.lab, plan.first_frame()) {
                s.explain(&first, l.peer_mac);
            }
            s
        });
        Ok(Outcome {
            report,
            sent,
            flows,
            sink,
        })
    }

    /// Clears what the receiver counted in an earlier run, so this run's sequence numbers start
    /// afresh; marks it used.
    pub(crate) fn clear_receiver(&mut self) -> Result<()> {
        if let Some(rx) = &self.rx
            && self.rx_used
        {
            rx.reset()
                .map_err(|e| e.context("clear the receiver before the run"))?;
        }
        self.rx_used = self.rx.is_some();
        Ok(())
    }

    /// Sends `plan` until `run.end`: the engine's run on this port's workers, from inside the
    /// port's namespace when it has one.
    pub(crate) fn send(&self, plan: &Plan, run: &RunOptions<'_>) -> Result<Report> {
        let config = RunConfig {
            workers: self.workers.clone(),
            batch: self.batch,
            duration: run.end.duration,
            count: run.end.count,
            stop: Arc::clone(run.stop),
            tick: Duration::from_secs(1),
            start_at: run.start_at,
            control: self.control.clone(),
        };
        let (sender, observer) = (&self.sender, run.observer);
        crate::netns::within(self.netns.as_deref(), move || {
            sender.run(plan, &config, observer)
        })
    }

    /// The receiver, when the port has one.
    pub(crate) fn receiver(&self) -> Option<&RunReceiver> {
        self.rx.as_deref()
    }

    /// The maps of the hosts the port's receiver answers for.
    #[cfg(target_os = "linux")]
    pub fn hosts_table(&self) -> Result<linerate_hosts::HostTable> {
        self.receiver()
            .ok_or_else(|| SessionError::usage("the port has no receiver to answer for its hosts"))?
            .hosts()
    }

    /// Steers the streams of this port's runs by `control` (lane `i`: stream `i` of the plan),
    /// or not, with None.
    pub fn set_control(&mut self, control: Option<Arc<FlowControl>>) {
        self.control = control;
    }

    /// Every flow of its plan is stopped by its control (none is steered: false). Its loop
    /// holds them for a start that may come while the run goes on.
    pub(crate) fn holds_stopped_only(&self) -> bool {
        self.control.as_ref().is_some_and(|c| !c.any_live())
    }

    /// Numbers this port's flows from `first` on (see `Limits::first_flow`).
    pub fn set_first_flow(&mut self, first: u16) {
        self.first_flow = first;
    }

    /// The interface, without its namespace, and the namespace.
    pub fn interface(&self) -> (Option<&str>, Option<&str>) {
        (self.interface.as_deref(), self.netns.as_deref())
    }
}

/// The receiver of `target` for a port that sends on `interface` in `netns`.
fn start_receiver(
    target: &RxTarget,
    interface: Option<&str>,
    netns: Option<&str>,
) -> Result<RunReceiver> {
    // A port does not receive what it sends: the receiver would count nothing and every
    // frame would read as lost (issue 27 #18).
    if let (Some(at), Some(iface)) = (&target.at, interface)
        && crate::netns::split(crate::Setting::Receiver, at)? == (iface, netns)
    {
        return Err(SessionError::setting(
            crate::Setting::Receiver,
            format!(
                "{at} is the port that transmits: receive at the far end of its link (an IFACE@NETNS, or a lab's receive end)"
            ),
        ));
    }
    RunReceiver::start(target, interface)
}

#[cfg(test)]
mod tests {
    use linerate_engine::Snapshot;

    use super::*;
    use crate::options::Backend;

    struct Quiet;

    impl Observer for Quiet {
        fn tick(&self, _: &Snapshot) {}
    }

    /// One port of a session, a null one: a counted run sends its count, all of it the one
    /// signed flow's, with no receiver and no lab to report.
    #[test]
    fn a_null_port_runs_its_count_and_splits_it_per_flow() {
        let mut session = Session::open(&[PortOptions {
            backend: Backend::Null,
            interface: None,
            ..PortOptions::interface("unused")
        }])
        .unwrap();
        assert_eq!(session.ports().len(), 1);
        let port = session.port_mut(0);
        assert_eq!(port.info().backend, "null");
        let stop = Arc::new(AtomicBool::new(false));
        let run = RunOptions {
            end: End {
                duration: None,
                count: Some(1000),
            },
            stop: &stop,
            observer: &Quiet,
            drain: Duration::ZERO,
            start_at: None,
        };
        let signed = StreamSpec {
            signature: true,
            ..StreamSpec::seed()
        };
        let out = port.run(&[signed], run).unwrap();
        assert_eq!(out.report.completed, 1000);
        assert_eq!(out.sent.iter().map(|s| s.2).sum::<u64>(), 1000);
        assert!(out.flows.is_none() && out.sink.is_none());
    }
}
