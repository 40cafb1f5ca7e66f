//! A transmit port opened once, optionally a receiver attached once, and any number of runs on
//! them: what `tx` does once, and what a trial loop (`rfc2544`) or the OTG server does many
//! times. Each run compiles its streams, runs the engine, waits for the receiver to drain and
//! reads per flow what came back; the receiver's counts are cleared between runs, so every run's
//! sequence numbers start afresh.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use linerate_engine::{Observer, Report, RunConfig, WorkerSpec};
use linerate_port::{NullPort, PcapPort, PortInfo};
use linerate_stream::{Plan, StreamSpec};

use crate::cli::{AfXdpArgs, AttachArg, Backend, ClockArg, ReceiverArgs, XdpAttach, XdpModeArg};
use crate::platform::{self, Receiver, Sender};
use crate::rx::{RunFlows, RunReceiver};
use crate::tx::{self, SinkResult};
use crate::usage;

/// What to transmit on and how: the port, its workers, the stamp clock.
#[derive(Debug, Clone)]
pub struct PortOptions {
    /// The backend, already chosen (`tx` picks it from -i/--pcap/--null).
    pub backend: Backend,
    /// The interface, for the interface backends; with any backend, a lab's sender end here
    /// also lends the lab's addresses and its sink.
    pub interface: Option<String>,
    /// The file of the pcap backend.
    pub pcap: Option<PathBuf>,
    /// MTU of the pcap and null ports.
    pub mtu: u32,
    pub afxdp: AfXdpArgs,
    /// One worker per core.
    pub cores: Vec<usize>,
    /// The queue each worker drives (default 0, 1, …).
    pub queues: Option<Vec<u32>>,
    /// Frames per submit.
    pub batch: u32,
    /// Link speed in Mbit/s when the port does not report one (for % rates and % of line).
    pub link_speed: Option<u64>,
    /// The clock signed frames are stamped with (the receiver's must match).
    pub clock: ClockArg,
}

impl PortOptions {
    /// The port `tx` and `replay` describe with their shared flags; `mtu`, `cores` and
    /// `link_speed` are flags of their own (their help differs).
    pub fn of_send(
        send: &crate::cli::SendArgs,
        backend: Backend,
        mtu: u32,
        cores: &[usize],
        link_speed: Option<u64>,
    ) -> Self {
        PortOptions {
            backend,
            interface: send.interface.clone(),
            pcap: send.pcap.clone(),
            mtu,
            afxdp: send.afxdp.clone(),
            cores: cores.to_vec(),
            queues: send.queues.clone(),
            batch: send.batch,
            link_speed,
            clock: send.receiver.clock,
        }
    }

    /// An interface with the platform's default backend, one worker on core 0, the usual batch.
    pub fn interface(name: &str) -> Self {
        PortOptions {
            backend: tx::default_backend(),
            interface: Some(name.to_owned()),
            pcap: None,
            mtu: 1500,
            afxdp: AfXdpArgs {
                xdp_mode: XdpModeArg::Auto,
                attach: AttachArg::Auto,
                no_need_wakeup: false,
            },
            cores: vec![0],
            queues: None,
            batch: 64,
            link_speed: None,
            clock: ClockArg::Monotonic,
        }
    }
}

/// Where the receiver listens: `target` "" is the lab's receive end (when the port is a lab's
/// sender), else `IFACE` or `IFACE@NETNS`.
#[derive(Debug, Clone)]
pub struct RxTarget {
    pub target: String,
    pub mode: XdpAttach,
    pub receiver: ReceiverArgs,
}

/// When a run ends (else when the plan's own count is sent, or at the stop flag).
#[derive(Debug, Clone, Copy, Default)]
pub struct End {
    pub duration: Option<Duration>,
    pub count: Option<u64>,
}

/// Frames one flow sent in a run: flow id, stream name, frames.
pub type FlowSent = (u16, Option<String>, u64);

/// What one run did.
#[derive(Debug)]
pub struct Outcome {
    /// The engine's report: frames, bytes, rate, workers.
    pub report: Report,
    /// Frames each flow of the plan sent.
    pub sent: Vec<FlowSent>,
    /// Per flow what the receiver saw against `sent`, when the session has a receiver.
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

/// A port opened once, with its lab's sink and optionally a receiver, for many runs.
#[derive(Debug)]
pub struct Session {
    sender: Sender,
    workers: Vec<WorkerSpec>,
    batch: u32,
    link_speed: Option<u64>,
    clock: ClockArg,
    interface: Option<String>,
    lab: Option<Receiver>,
    rx: Option<Arc<RunReceiver>>,
    /// The receiver has counted a run since it was attached or cleared.
    rx_used: bool,
}

impl Session {
    /// Opens the port (and finds the lab behind its interface, if any). Nothing is sent yet.
    pub fn open(options: &PortOptions) -> Result<Session> {
        let workers = tx::workers(
            &options.cores,
            options.queues.as_deref(),
            Some(options.backend),
        )?;
        let queues = workers.iter().map(|w| w.queue).max().unwrap_or(0) + 1;
        let sender = match options.backend {
            Backend::Null => {
                let mut port = NullPort::new(queues);
                port.set_mtu(options.mtu);
                Sender::Port(Box::new(port))
            }
            Backend::Pcap => {
                let path = options
                    .pcap
                    .as_ref()
                    .ok_or_else(|| usage("--backend pcap needs --pcap FILE"))?;
                let mut port = PcapPort::create(path, queues)?;
                port.set_mtu(options.mtu);
                Sender::Port(Box::new(port))
            }
            b @ (Backend::Afxdp | Backend::Afpacket | Backend::Bpf | Backend::Live) => {
                let iface = options
                    .interface
                    .as_deref()
                    .ok_or_else(|| usage("this backend needs -i IFACE"))?;
                platform::open(b, iface, &options.afxdp)?
            }
        };
        let lab = match &options.interface {
            Some(iface) => platform::receiver_of(iface)?,
            None => None,
        };
        Ok(Session {
            sender,
            workers,
            batch: options.batch,
            link_speed: options.link_speed,
            clock: options.clock,
            interface: options.interface.clone(),
            lab,
            rx: None,
            rx_used: false,
        })
    }

    /// Attaches the receiver; from now on each run reports per flow what came back.
    pub fn receive(&mut self, target: &RxTarget) -> Result<()> {
        let rx = crate::rx::start_for(
            &target.target,
            self.interface.as_deref(),
            target.mode,
            &target.receiver,
        )?;
        self.rx = Some(Arc::new(rx));
        self.rx_used = false;
        Ok(())
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

    /// Link speed in Mbit/s: the one given, else the port's; None when neither is known.
    pub fn link_mbps(&self) -> Option<u64> {
        self.link_speed
            .or(self.sender.info().link_speed.map(|s| s.mbps()))
    }

    /// Compiles streams for this port (its MTU, MAC, the lab's addresses, the link speed) with
    /// the session's stamp clock. Every check of the streams happens here, before a frame.
    pub fn compile(&self, streams: &[StreamSpec]) -> Result<Plan> {
        let mut plan = tx::compile(
            streams,
            self.sender.info(),
            self.lab.as_ref(),
            self.link_speed,
        )?;
        plan.set_stamp_clock(self.clock == ClockArg::Tai);
        Ok(plan)
    }

    /// Compiles and runs streams: see [`Session::run_plan`].
    pub fn run(
        &mut self,
        streams: &[StreamSpec],
        end: End,
        stop: Arc<AtomicBool>,
        observer: &dyn Observer,
        drain: Duration,
    ) -> Result<Outcome> {
        let plan = self.compile(streams)?;
        self.run_plan(&plan, end, stop, observer, drain)
    }

    /// Runs a compiled plan until `end` (or its own count, or `stop`), then waits up to `drain`
    /// for the frames still on their way and reads per flow what arrived. A run that a worker
    /// ended early fails with the engine's `Interrupted`, which holds the report so far.
    pub fn run_plan(
        &mut self,
        plan: &Plan,
        end: End,
        stop: Arc<AtomicBool>,
        observer: &dyn Observer,
        drain: Duration,
    ) -> Result<Outcome> {
        self.run_counted(plan, end, stop, observer, drain, Counted::PerFlow)
    }

    /// Runs a plan whose frames carry no signature (a replayed capture), as
    /// [`Session::run_plan`] does, but the receiver waits for and reports frames of any kind:
    /// there are no flows to count them against.
    pub fn run_unsigned(
        &mut self,
        plan: &Plan,
        end: End,
        stop: Arc<AtomicBool>,
        observer: &dyn Observer,
        drain: Duration,
    ) -> Result<Outcome> {
        self.run_counted(plan, end, stop, observer, drain, Counted::AllFrames)
    }

    fn run_counted(
        &mut self,
        plan: &Plan,
        end: End,
        stop: Arc<AtomicBool>,
        observer: &dyn Observer,
        drain: Duration,
        counted: Counted,
    ) -> Result<Outcome> {
        if let Some(rx) = &self.rx
            && self.rx_used
        {
            rx.reset().context("clear the receiver before the run")?;
        }
        let config = RunConfig {
            workers: self.workers.clone(),
            batch: self.batch,
            duration: end.duration,
            count: end.count,
            stop,
            tick: Duration::from_secs(1),
        };
        let before = self.lab.as_ref().map(|l| (l.counters)()).transpose()?;
        self.rx_used = true;
        let report = self.sender.run(plan, &config, observer)?;
        let sent = crate::rx::sent_per_flow(plan, &report);
        let flows = match (&self.rx, counted) {
            (Some(rx), Counted::PerFlow) => Some(rx.finish(&sent, drain)?),
            (Some(rx), Counted::AllFrames) => Some(rx.finish_frames(report.completed, drain)?),
            (None, _) => None,
        };
        let sink = match (&self.lab, before, &flows) {
            // The receiver had the lab's receive end: it saw what the sink would have.
            (Some(l), Some(_), Some(f)) if f.lab_end => {
                let (packets, bytes) = f.all_frames();
                Some(SinkResult::new(&l.name, packets, bytes, report.completed))
            }
            (Some(l), Some(b), _) => Some(tx::settle(l, b, report.completed)?),
            _ => None,
        };
        Ok(Outcome {
            report,
            sent,
            flows,
            sink,
        })
    }
}
