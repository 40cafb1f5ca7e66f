//! A config's life: the port thread that opens, compiles and runs it, and set_config/get_config.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use linerate_otg as otg;
use linerate_session::{
    End, PortOptions, ReceiverOptions, RunOptions, RxAttach, RxTarget, Session,
};
use linerate_stream::{MAX_STREAMS, Plan};

use super::api::{Fail, warnings};
use super::capture::CaptureState;
use super::{App, Cmd, Counting, DRAIN, Inner, Progress, RunResult, blocking, one_line};
use crate::cli::ServeArgs;

/// The thread that owns the transmit port of a config: it opens the port and compiles the plan
/// once, then runs the plan each time it is told to start. Dropping the handle ends it (the
/// port and its programs go with it).
#[derive(Debug)]
pub(super) struct PortThread {
    pub(super) cmd: Option<mpsc::Sender<Cmd>>,
    pub(super) thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for PortThread {
    fn drop(&mut self) {
        self.cmd.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl PortThread {
    /// Runs `setup` on a thread of its own (it opens the config's ports and compiles its
    /// flows there), then `run` each time the thread is told to start; returns once setup is
    /// done, with what it made for counting.
    pub(super) fn spawn<S: 'static>(
        setup: impl FnOnce() -> Result<(S, Counting)> + Send + 'static,
        mut run: impl FnMut(&mut S, &Arc<AtomicBool>, &Progress, Option<Instant>) -> RunResult
        + Send
        + 'static,
    ) -> Result<(PortThread, Counting)> {
        let (ready_tx, ready_rx) = mpsc::channel::<Result<Counting>>();
        let (cmd_tx, cmd_rx) = mpsc::channel::<Cmd>();
        let thread = std::thread::Builder::new()
            .name("otg-port".into())
            .spawn(move || {
                let mut state = match setup() {
                    Ok((state, counting)) => {
                        let _ = ready_tx.send(Ok(counting));
                        state
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Ok(Cmd::Start { stop, progress, at }) = cmd_rx.recv() {
                    // The instant on this host's monotonic clock, which the workers wait
                    // for once their queues are filled (that takes a while, and varies).
                    let start_at = at.map(|(clock, at)| {
                        let ahead = at.saturating_sub(clock.now_ns());
                        Instant::now() + std::time::Duration::from_nanos(ahead)
                    });
                    let result = run(&mut state, &stop, &progress, start_at);
                    progress.frames.store(result.frames, Ordering::Relaxed);
                    progress.bytes.store(result.bytes, Ordering::Relaxed);
                    *progress.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                    *progress.ended.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(Instant::now());
                    progress.running.store(false, Ordering::Release);
                }
            })
            .context("start the port thread")?;
        let handle = PortThread {
            cmd: Some(cmd_tx),
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(Ok(counting)) => Ok((handle, counting)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(anyhow::anyhow!("the port thread ended before it was ready")),
        }
    }

    /// Opens the config's session (its transmit port and, when a flow names a receive port,
    /// the receive program there) and compiles its flows, on the thread that will run them.
    fn start(app: &ServeArgs, mapped: Arc<otg::Mapped>) -> Result<(PortThread, Counting)> {
        let tx_name = mapped.tx_port.clone().context("no flows")?;
        let port = mapped.port(&tx_name).context("tx port")?.clone();
        let mut options = PortOptions::interface(&port.location.iface);
        options.backend = backend(app);
        options.afxdp = (&app.afxdp).into();
        options.cores = app.cores.clone();
        options.link_speed = port.link_mbps;
        let run_mapped = Arc::clone(&mapped);
        let setup = move || -> Result<_> {
            let mut session = Session::open(std::slice::from_ref(&options))
                .with_context(|| format!("port '{}' ({})", port.name, port.location))?;
            let tx = session.port_mut(0);
            if let Some(target) = rx_target(&mapped, &port.location.iface)? {
                tx.receive(&target).context("the receive port")?;
            }
            let plan = tx.compile(&mapped.streams).context("flows")?;
            let counting = Counting::one_port(&mapped, session.port(0).rx_handle());
            Ok(((session, plan), counting))
        };
        let run = move |(session, plan): &mut (Session, Plan),
                        stop: &Arc<AtomicBool>,
                        progress: &Progress,
                        start_at: Option<Instant>| {
            let run = RunOptions {
                end: End {
                    duration: run_mapped.duration,
                    count: None,
                },
                stop,
                observer: progress,
                drain: DRAIN,
                start_at,
            };
            match session.port_mut(0).run_plan(plan, run) {
                Ok(o) => RunResult {
                    per_flow: o.sent.iter().map(|(id, _, n)| (*id, *n)).collect(),
                    frames: o.report.completed,
                    bytes: o.report.bytes,
                    per_port: vec![(0, o.report.completed, o.report.bytes)],
                    elapsed_s: o.report.elapsed_s,
                    error: None,
                },
                Err(e) => RunResult::failed(e.into()),
            }
        };
        PortThread::spawn(setup, run)
    }
}

/// serve keeps AF_XDP unless told: its runs are the OTG client's, not auto's to reroute.
pub(super) fn backend(app: &ServeArgs) -> linerate_session::Backend {
    app.backend
        .map_or(linerate_session::Backend::Afxdp, Into::into)
}

/// Where the receive program goes: the lab's receive end (no `at`: the lab's sink is swapped out
/// while the config lasts and comes back when it is dropped) or `IFACE@NETNS`; None when no
/// flow names a receive port.
pub(super) fn rx_target(mapped: &otg::Mapped, tx_iface: &str) -> Result<Option<RxTarget>> {
    let Some(rx) = mapped.rx_port.as_deref().and_then(|r| mapped.port(r)) else {
        return Ok(None);
    };
    let lab_end = linerate_session::lab_of(tx_iface)?.is_some_and(|lab| {
        lab.receiver == rx.location.iface && rx.location.netns.as_deref() == Some(&lab.netns)
    });
    Ok(Some(RxTarget {
        at: (!lab_end).then(|| rx.location.to_string()),
        attach: RxAttach::Drv,
        receiver: ReceiverOptions {
            // A capture on the receive port needs the frames to reach the stack.
            pass: rx.capture,
            ..ReceiverOptions::default()
        },
    }))
}

pub(super) async fn set_config(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    // One config is built at a time: two interleaved would each tear down what the other set
    // up (a config whose receiver is gone).
    let Ok(_building) = app.configuring.try_lock() else {
        return Err(Fail::conflict(
            "another set_config is being applied: send this one once it has answered",
        ));
    };
    check_cost(&body)?;
    let config = otg::parse_config(&body)?;
    let mapped = Arc::new(otg::map_config(&config)?);
    // Hosts' ports may be in a namespace (the session sends from there); a lone transmit port
    // is this namespace's.
    if let Some(tx) = mapped.tx_port.as_deref().and_then(|t| mapped.port(t))
        && tx.location.netns.is_some()
    {
        return Err(Fail::bad(format!(
            "the transmit port '{}' is in a network namespace ({}): linerate serve sends from \
             its own namespace; give the interface there",
            tx.name, tx.location
        )));
    }
    let raw: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| Fail::bad(e.to_string()))?;
    drop(config);
    let old = {
        let mut inner = app.lock();
        if inner.run.progress.running.load(Ordering::Acquire) {
            return Err(Fail::conflict(
                "traffic is being transmitted: stop it (set_control_state flow_transmit stop) \
                 before set_config",
            ));
        }
        std::mem::take(&mut *inner)
    };
    let args = Arc::clone(&app);
    let new = Arc::clone(&mapped);
    let made = blocking(move || {
        let previous = old.mapped.clone().zip(old.config.clone());
        // The old config's port, receiver and captures go first: the new one may use them.
        drop(old);
        open(&args, &new).map_err(|e| {
            // Given back as it was set, so a failed set_config leaves the one that worked.
            let restored = previous.map(|(mapped, raw)| {
                open(&args, &mapped).map(|(port, c)| Box::new(applied(mapped, raw, port, c)))
            });
            (e, restored)
        })
    })
    .await?;
    match made {
        Ok((port, counting)) => {
            *app.lock() = applied(mapped, raw, port, counting);
            Ok(warnings())
        }
        Err((e, restored)) => {
            let kept = match restored {
                Some(Ok(previous)) => {
                    *app.lock() = *previous;
                    "the previous config is still set".to_owned()
                }
                Some(Err(again)) => format!(
                    "the previous config could not be set again either ({}): no config is set",
                    one_line(&again)
                ),
                None => "no config is set".to_owned(),
            };
            release_freed();
            Err(Fail::bad(format!("{}; {kept}", one_line(&e))))
        }
    }
}

/// The port thread of a config and where it counts (none when it has neither flows nor
/// devices).
fn open(app: &App, mapped: &Arc<otg::Mapped>) -> Result<(Option<PortThread>, Counting)> {
    let args = &app.args;
    let (port, counting) = if let Some(p) = mapped.ports.iter().find(|p| p.location.agent.is_some())
    {
        let Some(controller) = &app.controller else {
            return Err(crate::usage(format!(
                "port '{}' is on agent {}: start linerate serve with --agent-token-file FILE \
                 (the agents' token) to drive ports on agents",
                p.name,
                p.location.agent.as_deref().unwrap_or_default()
            )));
        };
        super::remote::start(controller, Arc::clone(mapped))?
    } else if !mapped.hosts.is_empty() {
        super::hosts::start(args, Arc::clone(mapped))?
    } else if mapped.tx_port.is_some() {
        PortThread::start(args, Arc::clone(mapped))?
    } else {
        return Ok((None, Counting::default()));
    };
    Ok((Some(port), counting))
}

/// The state of a config that was set: its port thread, where it counts and an empty capture
/// per port that has one.
fn applied(
    mapped: Arc<otg::Mapped>,
    raw: serde_json::Value,
    port: Option<PortThread>,
    counting: Counting,
) -> Inner {
    Inner {
        captures: mapped
            .ports
            .iter()
            .filter(|p| p.capture)
            .map(|p| (p.name.clone(), CaptureState::default()))
            .collect(),
        mapped: Some(mapped),
        config: Some(raw),
        port,
        counting: Arc::new(counting),
        ..Inner::default()
    }
}

/// Refuses, by counting before any flow is built, a config of more flows than one plan holds
/// (each flow costs the receive side and the plan their share whatever its frames; the frames'
/// own bytes are bounded when the plan is compiled, before any is built).
fn check_cost(body: &[u8]) -> Result<(), Fail> {
    // A body whose flows are not a list is refused by the typed parse, with its path.
    let flows = serde_json::from_slice::<Shape>(body).map_or(0, |s| s.flows.0);
    if flows > MAX_STREAMS {
        return Err(Fail::bad(format!(
            "flows: {flows} flows, over the {MAX_STREAMS} one config holds"
        )));
    }
    Ok(())
}

/// A config read only for its number of flows.
#[derive(serde::Deserialize)]
struct Shape {
    #[serde(default)]
    flows: Counted,
}

/// The length of a JSON list, each element skipped as it is read.
#[derive(Default)]
struct Counted(usize);

impl<'de> serde::Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Count;
        impl<'de> serde::de::Visitor<'de> for Count {
            type Value = Counted;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Counted, A::Error> {
                let mut n = 0;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Counted(n))
            }
        }
        d.deserialize_seq(Count)
    }
}

/// Gives the memory a refused config built back to the system: freed blocks stay in the
/// allocator's arenas otherwise, and repeated refusals would grow the server for good.
fn release_freed() {
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe { libc::malloc_trim(0) };
}

pub(super) async fn get_config(State(app): State<Arc<App>>) -> Response {
    let config = app
        .lock()
        .config
        .clone()
        .unwrap_or_else(|| serde_json::json!({}));
    axum::Json(config).into_response()
}
