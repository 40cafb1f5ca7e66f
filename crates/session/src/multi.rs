//! Runs over several ports at once: every port sends its own streams at the same time (both
//! directions of a router test, a switch's every port), and every port that receives counts
//! the flows sent toward it, whichever port sent them. Flows are numbered across the session,
//! so a receiver tells apart flows from several senders.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use linerate_engine::Report;
use linerate_stream::{Plan, StreamSpec};

use crate::error::{Result, SessionError};
use crate::flows::{FlowSent, RunFlows, sent_per_flow};
use crate::session::{RunOptions, Session};

/// How often a run over several ports looks whether its ports have ended.
const ENDED_POLL: Duration = Duration::from_millis(2);

/// What one port sends in a run over several ports.
#[derive(Debug, Clone)]
pub struct PortRun {
    /// The sending port's index in the session.
    pub port: usize,
    pub streams: Vec<StreamSpec>,
    /// For each stream, the port whose receiver counts it (None: no port of the session).
    pub to: Vec<Option<usize>>,
}

/// What a run over several ports did, per port.
#[derive(Debug)]
pub struct PortOutcome {
    pub port: usize,
    /// The engine's report, when the port sent.
    pub report: Option<Report>,
    /// Frames each flow this port sent.
    pub sent: Vec<FlowSent>,
    /// Per flow sent toward this port what its receiver saw, when it has a receiver.
    pub flows: Option<RunFlows>,
}

impl Session {
    /// Compiles every port's streams, flows numbered across the ports in order: the first
    /// port's streams are flows 0…, the next port's follow.
    pub fn compile_all(&mut self, runs: &[PortRun]) -> Result<Vec<Plan>> {
        self.compile_from(runs, None)
    }

    /// Compiles every port's streams with the first flow id of each run given (`firsts`, one
    /// per run), or numbered from 0 across the runs (None): a test bed that spans several
    /// sessions numbers its flows across all of them.
    pub fn compile_from(&mut self, runs: &[PortRun], firsts: Option<&[u16]>) -> Result<Vec<Plan>> {
        if let Some(f) = firsts
            && f.len() != runs.len()
        {
            return Err(SessionError::usage(format!(
                "{} runs but {} first flow ids",
                runs.len(),
                f.len()
            )));
        }
        let mut next = 0u32;
        let mut plans = Vec::with_capacity(runs.len());
        for (i, r) in runs.iter().enumerate() {
            if let Some(f) = firsts {
                next = u32::from(f[i]);
            }
            if r.port >= self.ports().len() {
                return Err(SessionError::usage(format!(
                    "run {i} names port {} of a session of {}",
                    r.port,
                    self.ports().len()
                )));
            }
            if runs[..i].iter().any(|o| o.port == r.port) {
                return Err(SessionError::usage(format!(
                    "port {} is given two runs: put all its streams in one",
                    r.port
                )));
            }
            if r.to.len() != r.streams.len() {
                return Err(SessionError::usage(format!(
                    "port {}: {} streams but {} destinations",
                    r.port,
                    r.streams.len(),
                    r.to.len()
                )));
            }
            let first = u16::try_from(next).map_err(|_| {
                SessionError::usage(
                    "more than 65,536 flows in one session: the signature numbers flows in 16 bits",
                )
            })?;
            let port = self.port_mut(r.port);
            port.set_first_flow(first);
            plans.push(port.compile(&r.streams)?);
            next += r.streams.len() as u32;
        }
        Ok(plans)
    }

    /// Runs every port's plan (from [`Session::compile_all`]) at once, each on its own thread
    /// with its own workers, until `run.end`; then each port with a receiver waits up to
    /// `run.drain` for, and reports, the flows sent toward it. A port that fails stops the
    /// others (the shared stop flag) and its error is the run's.
    pub fn run_all(
        &mut self,
        runs: &[PortRun],
        plans: &[Plan],
        run: RunOptions<'_>,
    ) -> Result<Vec<PortOutcome>> {
        self.clear_receivers()?;
        self.run_cleared(runs, plans, run)
    }

    /// Clears every port's receiver: what it counts from here on is the next run's.
    pub fn clear_receivers(&mut self) -> Result<()> {
        for i in 0..self.ports().len() {
            self.port_mut(i).clear_receiver()?;
        }
        Ok(())
    }

    /// [`Session::run_all`] with the receivers as they are: cleared by the caller earlier,
    /// before a start instant shared with other sessions, so frames that another session's
    /// earlier start sends here are not wiped by this one's.
    pub fn run_cleared(
        &mut self,
        runs: &[PortRun],
        plans: &[Plan],
        run: RunOptions<'_>,
    ) -> Result<Vec<PortOutcome>> {
        let stop = run.stop;
        let ports = self.ports();
        // Each port stops by a flag of its own: the run's stop reaches all of them, and a port
        // whose every flow is stopped (held by its control, as a subset started alone leaves
        // the others) ends once every other port has ended, as a stopped lane ends with the
        // lanes that ran beside it.
        let own: Vec<Arc<AtomicBool>> = runs.iter().map(|_| Arc::default()).collect();
        let reports: Vec<Result<Report>> = std::thread::scope(|scope| {
            let handles: Vec<_> = runs
                .iter()
                .zip(plans)
                .zip(&own)
                .map(|((r, plan), own)| {
                    let port = &ports[r.port];
                    let run = RunOptions { stop: own, ..run };
                    scope.spawn(move || {
                        let report = port.send(plan, &run);
                        if report.is_err() {
                            stop.store(true, Ordering::Relaxed);
                        }
                        report
                    })
                })
                .collect();
            loop {
                let waited = handles
                    .iter()
                    .zip(runs)
                    .any(|(h, r)| !h.is_finished() && !ports[r.port].holds_stopped_only());
                if stop.load(Ordering::Relaxed) || !waited {
                    own.iter().for_each(|s| s.store(true, Ordering::Relaxed));
                    break;
                }
                std::thread::sleep(ENDED_POLL);
            }
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut sent_by: Vec<(usize, Report, Vec<FlowSent>)> = Vec::with_capacity(runs.len());
        for ((r, plan), report) in runs.iter().zip(plans).zip(reports) {
            let report = report.map_err(|e| e.context(format!("port {}", r.port)))?;
            let sent = sent_per_flow(plan, &report);
            sent_by.push((r.port, report, sent));
        }
        // Flow id → receiving port.
        let mut toward: Vec<(u16, usize)> = Vec::new();
        for (r, plan) in runs.iter().zip(plans) {
            for (i, to) in r.to.iter().enumerate() {
                if let Some(to) = to {
                    toward.push((plan.first_flow + i as u16, *to));
                }
            }
        }
        let mut outcomes = Vec::with_capacity(ports.len());
        for (index, port) in ports.iter().enumerate() {
            let flows = match port.receiver() {
                Some(rx) => {
                    let tx: Vec<FlowSent> = sent_by
                        .iter()
                        .flat_map(|(_, _, sent)| sent.iter().cloned())
                        .filter(|s| toward.iter().any(|&(f, to)| f == s.0 && to == index))
                        .collect();
                    Some(rx.finish(&tx, run.drain)?)
                }
                None => None,
            };
            let (report, sent) = match sent_by.iter().position(|(p, _, _)| *p == index) {
                Some(k) => {
                    let (_, report, sent) = &sent_by[k];
                    (Some(report.clone()), sent.clone())
                }
                None => (None, Vec::new()),
            };
            outcomes.push(PortOutcome {
                port: index,
                report,
                sent,
                flows,
            });
        }
        Ok(outcomes)
    }
}
