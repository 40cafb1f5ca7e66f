//! A config's life: the port thread that opens, compiles and runs it, and set_config/get_config.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use linerate_otg as otg;
use linerate_session::{Backend, Clock, End, RxTarget};
use linerate_testbed::{BedSpec, BedThread, Places, TestBed};
use otg::metrics::PortCounted;

use super::routing::Planes;
use super::state::{App, Counting, DRAIN, Fail, Inner, blocking};

/// How long a host's gateway has to answer (ARP or ND, retried) before set_config fails.
const RESOLVE_WAIT: Duration = Duration::from_secs(5);

/// Where the receive program of a config without devices goes: the lab's receive end (no
/// `at`: the lab's sink is swapped out while the config lasts and comes back when it is
/// dropped) or `IFACE@NETNS`; None when no flow names a receive port.
fn rx_target(mapped: &otg::Mapped, tx_iface: &str) -> Result<Option<RxTarget>> {
    let Some(rx) = mapped.rx_port.as_deref().and_then(|r| mapped.port(r)) else {
        return Ok(None);
    };
    let lab_end = linerate_session::lab_of(tx_iface)?.is_some_and(|lab| {
        lab.receiver == rx.location.iface && rx.location.netns.as_deref() == Some(&lab.netns)
    });
    Ok(Some(RxTarget {
        at: (!lab_end).then(|| rx.location.to_string()),
        ..crate::options::serve_receive(rx.capture, Clock::Monotonic)
    }))
}

/// The test bed of a config: its devices' ports (this machine's or agents'), the ports its
/// port flows leave from and arrive at when they are several, or its one transmit port; None
/// when it has neither flows nor devices.
fn bed_spec(app: &App, mapped: &otg::Mapped) -> Result<Option<BedSpec>> {
    if let Some(p) = mapped.ports.iter().find(|p| p.location.agent.is_some()) {
        if app.controller.is_none() {
            return Err(crate::usage(format!(
                "port '{}' is on agent {}: start linerate serve with --agent-token-file FILE \
                 (the agents' token) to drive ports on agents",
                p.name,
                p.location.agent.as_deref().unwrap_or_default()
            )));
        }
        if mapped.hosts.is_empty() {
            return Err(crate::usage(
                "ports on agents carry flows between devices (tx_rx.device), not port flows \
                 (tx_rx.port): give each port's ethernet an address and name the devices' \
                 addresses in the flows",
            ));
        }
    }
    if !mapped.hosts.is_empty() {
        let hosts = mapped.placed_hosts();
        let given = mapped
            .given_gateways()
            .into_iter()
            .map(|(host, hop, mac)| linerate_testbed::GivenMac { host, hop, mac })
            .collect();
        let capture = mapped.capture_locations();
        let mut spec = BedSpec::port(crate::options::serve_port(&app.args, &hosts[0].port));
        spec.port.link_speed = mapped.hosts_link_mbps();
        spec.places = Places::Hosts {
            hosts,
            given,
            peers: Vec::new(),
            capture,
        };
        spec.rx = Some(crate::options::serve_receive(false, Clock::Monotonic));
        spec.resolve_wait = RESOLVE_WAIT;
        spec.controller = app.controller.clone();
        return Ok(Some(spec));
    }
    if !mapped.flow_ports.is_empty() {
        // Port flows on several ports: each port a place that sends its flows and counts
        // those sent toward it, as hosts' ports do.
        let ports: Vec<(String, Option<u64>)> = mapped
            .flow_ports
            .iter()
            .filter_map(|name| mapped.port(name))
            .map(|p| (p.location.to_string(), p.link_mbps))
            .collect();
        let first = ports.first().map(|(at, _)| at.clone()).unwrap_or_default();
        let mut spec = BedSpec::port(crate::options::serve_port(&app.args, &first));
        spec.places = Places::Ports {
            ports,
            capture: mapped.capture_locations(),
        };
        spec.rx = Some(crate::options::serve_receive(false, Clock::Monotonic));
        return Ok(Some(spec));
    }
    let Some(tx_name) = &mapped.tx_port else {
        return Ok(None);
    };
    let port = mapped.port(tx_name).context("tx port")?;
    let mut options = crate::options::serve_port(&app.args, &port.location.iface);
    options.link_speed = port.link_mbps;
    let mut spec = BedSpec::port(options);
    spec.rx = rx_target(mapped, &port.location.iface)?;
    Ok(Some(spec))
}

/// What a config made: its test bed on its thread, where it counts, and its devices' daemons.
struct Made {
    bed: Option<BedThread>,
    counting: Counting,
    routers: Option<super::state::Daemons>,
    lags: Option<Arc<linerate_lacp::Lags>>,
}

/// The config's test bed, then its devices' control planes (their frames pass the bed's
/// programs to the stack once the bed is open) and its LAGs' LACP.
fn open(app: &App, mapped: &Arc<otg::Mapped>) -> Result<Made> {
    let (bed, counting) = open_bed(app, mapped)?;
    let lags = if mapped.lags.is_empty() {
        None
    } else {
        let l = linerate_lacp::Lags::start(mapped.lags.clone()).context("the LAGs")?;
        Some(Arc::new(l))
    };
    let routers = if mapped.routers.is_empty() {
        None
    } else if let Some(agents) = counting.counts.agents() {
        // Their agents started them with their setups.
        Some(Arc::new(Planes::Agents(Arc::clone(agents))))
    } else {
        let r = linerate_routing::Routers::start(mapped.routers.clone())
            .context("the devices' control planes")?;
        Some(Arc::new(Planes::Here(std::sync::Mutex::new(r))))
    };
    Ok(Made {
        bed,
        counting,
        routers,
        lags,
    })
}

/// The config's test bed, opened, resolved and compiled on its own thread, and where each of
/// its flows and ports is counted.
pub(super) fn open_bed(
    app: &App,
    mapped: &Arc<otg::Mapped>,
) -> Result<(Option<BedThread>, Counting)> {
    let Some(spec) = bed_spec(app, mapped)? else {
        return Ok((None, Counting::default()));
    };
    let streams = mapped.streams.clone();
    let end = End {
        duration: mapped.duration,
        count: None,
    };
    let what = match &mapped.tx_port {
        Some(t) if mapped.hosts.is_empty() => mapped.port(t).map_or_else(String::new, |p| {
            format!("port '{}' ({})", p.name, p.location)
        }),
        _ if mapped.hosts.is_empty() => "the flows' ports".to_owned(),
        _ => "the devices' ports".to_owned(),
    };
    let routers = mapped.routers.clone();
    let mut spec = spec;
    spec.to_stack = mapped.routed_hosts();
    let thread = BedThread::spawn(
        move || {
            let mut bed = TestBed::open(&spec).map_err(|e| e.context(what))?;
            // Flows steered while they run (pause, resume, a subset, a new rate) run as lanes
            // of the engine's own loops; a bed asked to be live sends one in-kernel cycle.
            bed.set_controlled(spec.port.backend != Backend::Live);
            bed.control_planes_to_agents(&routers);
            bed.resolve()
                .map_err(|e| e.context("the devices' gateways"))?;
            bed.compile(&streams, end).map_err(|e| e.context("flows"))?;
            Ok(bed)
        },
        DRAIN,
    )?;
    let counting = counting(mapped, &thread);
    Ok((Some(thread), counting))
}

/// Each flow's id, sending place and receiver; each OTG port's places.
fn counting(mapped: &otg::Mapped, bed: &BedThread) -> Counting {
    let mut counting = Counting::of(bed);
    let first_rx = bed.flows().first().and_then(|f| f.rx);
    counting.ports = PortCounted::of_ports(mapped, &counting.places, first_rx);
    counting
}

pub(super) async fn set_config(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    // One config is built at a time: two interleaved would each tear down what the other set
    // up (a config whose receiver is gone).
    let Ok(_building) = app.configuring.try_lock() else {
        return Err(Fail::conflict(
            "another set_config is being applied: send this one once it has answered",
        ));
    };
    otg::check_flow_count(&body)?;
    let config = otg::parse_config(&body)?;
    let mapped = Arc::new(otg::map_config(&config)?);
    // Hosts' ports and those of port flows on several ports may be in a namespace (the session
    // sends from there); a lone transmit port is this namespace's.
    if let Some(tx) = mapped.tx_port.as_deref().and_then(|t| mapped.port(t))
        && tx.location.netns.is_some()
    {
        return Err(Fail::bad(format!(
            "the transmit port '{}' is in a network namespace ({}): linerate serve sends from \
             its own namespace; give the interface there",
            tx.name, tx.location
        )));
    }
    drop(config);
    let raw = body;
    let old = {
        let mut inner = app.lock();
        if inner.run.progress.running() {
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
        // Mapped again from its body: update_config may have given its flows new rates, which
        // the body says and the old mapping does not.
        let remapped = old.config.clone().and_then(|raw| {
            let config = otg::parse_config(&raw).ok()?;
            Some((Arc::new(otg::map_config(&config).ok()?), raw))
        });
        let previous = remapped.or_else(|| old.mapped.clone().zip(old.config.clone()));
        // The old config's port, receiver and captures go first: the new one may use them.
        drop(old);
        open(&args, &new).map_err(|e| {
            // Given back as it was set, so a failed set_config leaves the one that worked.
            let restored = previous.map(|(mapped, raw)| {
                open(&args, &mapped).map(|made| Box::new(applied(mapped, raw, made)))
            });
            (e, restored)
        })
    })
    .await?;
    match made {
        Ok(made) => {
            let said = mapped.warnings.clone();
            *app.lock() = applied(mapped, raw, made);
            Ok(super::state::json(&otg::Warning { warnings: said }))
        }
        Err((e, restored)) => {
            let kept = match restored {
                Some(Ok(previous)) => {
                    *app.lock() = *previous;
                    "the previous config is still set".to_owned()
                }
                Some(Err(again)) => format!(
                    "the previous config could not be set again either ({again:#}): no config is set"
                ),
                None => "no config is set".to_owned(),
            };
            // Repeated refusals would otherwise grow the server by what each built.
            linerate_sys::release_freed();
            Err(Fail::bad(format!("{e:#}; {kept}")))
        }
    }
}

/// The state of a config that was set: its port thread, where it counts and an empty capture
/// per port that has one.
fn applied(mapped: Arc<otg::Mapped>, raw: Bytes, made: Made) -> Inner {
    let Made {
        bed,
        counting,
        routers,
        lags,
    } = made;
    Inner {
        captures: mapped
            .ports
            .iter()
            .filter(|p| p.capture)
            .map(|p| (p.name.clone(), linerate_testbed::PortCapture::default()))
            .collect(),
        mapped: Some(mapped),
        config: Some(raw),
        bed,
        counting: Arc::new(counting),
        routers,
        lags,
        ..Inner::default()
    }
}

/// The config as it was set (its body, which was JSON: the typed parse took it).
pub(super) async fn get_config(State(app): State<Arc<App>>) -> Response {
    let config = app.lock().config.clone();
    let body = config.unwrap_or_else(|| Bytes::from_static(b"{}"));
    let json = axum::http::HeaderValue::from_static("application/json");
    ([(axum::http::header::CONTENT_TYPE, json)], body).into_response()
}
