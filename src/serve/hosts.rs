//! A config with devices: its hosts' session — every port a host lives on, each answering
//! ARP, ND and ping for its hosts and counting the flows sent toward it — with the gateways
//! resolved at set_config (one that does not answer fails it, naming the address) and every
//! port sending at once at start; and get_states, the gateways the hosts resolved.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use linerate_hosts::Neighbour;
use linerate_otg as otg;
use linerate_session::{
    Clock, End, HostSession, PortOptions, PortRun, ReceiverOptions, RunOptions, RxAttach, RxTarget,
};
use linerate_stream::{HostSpec, Plan, StreamSpec};

use super::api::Fail;
use super::config::{PortThread, backend};
use super::{App, Counting, DRAIN, FlowAt, PortAt, Progress, RunResult, blocking};
use crate::cli::ServeArgs;

/// How long a host's gateway has to answer (ARP or ND, retried) before set_config fails.
const RESOLVE_WAIT: Duration = Duration::from_secs(5);

/// What the port thread holds between runs.
struct Hosts {
    session: HostSession,
    runs: Vec<PortRun>,
    plans: Vec<Plan>,
}

/// Opens the hosts' ports and resolves their flows' next hops on the thread that will run them.
pub(super) fn start(app: &ServeArgs, mapped: Arc<otg::Mapped>) -> Result<(PortThread, Counting)> {
    let base = base_options(app, &mapped.hosts[0].spec.port);
    // A capture needs the frames to reach the stack.
    let pass = mapped.ports.iter().any(|p| p.capture);
    let duration = mapped.duration;
    let setup = move || -> Result<_> {
        let specs: Vec<_> = mapped.hosts.iter().map(|h| h.spec.clone()).collect();
        let mut session = open(&specs, &base, pass, Clock::Monotonic)?;
        for h in &mapped.hosts {
            if let (Some(mac), Some(gateway)) = (h.gateway_mac, gateway(h)) {
                session.give_neighbour(&h.spec.name, gateway, mac.octets())?;
            }
        }
        // Every gateway, so get_states knows them all; then each flow's next hop.
        session
            .resolve_gateways(RESOLVE_WAIT)
            .context("the devices' gateways")?;
        let mut runs = session
            .runs(&mapped.streams, RESOLVE_WAIT)
            .context("the devices' next hops")?;
        keep_owns(&mut runs, &mapped.streams);
        let plans = session.session.compile_all(&runs).context("flows")?;
        let counting = counting(&session, &runs, &plans, &mapped);
        Ok((
            Hosts {
                session,
                runs,
                plans,
            },
            counting,
        ))
    };
    let run = move |h: &mut Hosts, stop: &Arc<AtomicBool>, progress: &Progress, at| {
        run_ports(h, duration, stop, progress, false, at)
    };
    PortThread::spawn(setup, run)
}

/// An agent's share of a test bed: its hosts' ports opened, their flows compiled with the ids
/// the controller gave; returns the ports in session order.
pub(super) fn start_agent(
    app: &ServeArgs,
    setup: linerate_agent::Setup,
    clock: Clock,
) -> Result<(PortThread, Counting, Vec<String>)> {
    let first = setup
        .hosts
        .first()
        .context("the setup has no host on this agent")?;
    // Stamps and receivers on the agent's clock: TAI between hosts PTP keeps together.
    let mut base = base_options(app, &first.port);
    base.clock = clock;
    let duration = setup.duration_ms.map(Duration::from_millis);
    let (ports_tx, ports_rx) = std::sync::mpsc::channel();
    let opened = move || -> Result<_> {
        let mut session = open(&setup.hosts, &base, setup.pass, clock)?;
        for g in &setup.given {
            session.give_neighbour(&g.host, g.hop, g.mac)?;
        }
        session
            .resolve_gateways(RESOLVE_WAIT)
            .context("the hosts' gateways")?;
        let streams: Vec<StreamSpec> = setup.flows.iter().map(|f| f.stream.clone()).collect();
        let mut runs = session
            .runs_toward(&streams, &setup.peers, RESOLVE_WAIT)
            .context("the hosts' next hops")?;
        keep_owns(&mut runs, &streams);
        let firsts = first_ids(&runs, &setup.flows)?;
        let plans = session
            .session
            .compile_from(&runs, Some(&firsts))
            .context("flows")?;
        let counting = Counting {
            receivers: (0..session.ports.len())
                .map(|i| session.session.port(i).rx_handle())
                .collect(),
            ..Counting::default()
        };
        let _ = ports_tx.send(session.ports.clone());
        Ok((
            Hosts {
                session,
                runs,
                plans,
            },
            counting,
        ))
    };
    // The receivers were cleared when the start was asked for, before the shared instant.
    let run = move |h: &mut Hosts, stop: &Arc<AtomicBool>, progress: &Progress, at| {
        run_ports(h, duration, stop, progress, true, at)
    };
    let (thread, counting) = PortThread::spawn(opened, run)?;
    let ports = ports_rx.recv().context("the port thread's ports")?;
    Ok((thread, counting, ports))
}

/// The first flow id of each run: its streams' ids, which must follow each other.
fn first_ids(runs: &[PortRun], flows: &[linerate_agent::FlowSetup]) -> Result<Vec<u16>> {
    let id = |name: &String| {
        flows
            .iter()
            .find(|f| f.stream.name == *name)
            .map(|f| f.id)
            .with_context(|| format!("stream {name:?}: no flow id"))
    };
    runs.iter()
        .map(|r| {
            let ids = r
                .streams
                .iter()
                .map(|s| id(&s.name))
                .collect::<Result<Vec<u16>>>()?;
            let first = *ids.first().context("a run without streams")?;
            if ids
                .iter()
                .enumerate()
                .any(|(i, &f)| usize::from(f) != usize::from(first) + i)
            {
                anyhow::bail!(
                    "port {}: flow ids {ids:?} do not follow each other (the controller numbers \
                     one port's flows consecutively)",
                    r.port
                );
            }
            Ok(first)
        })
        .collect()
}

/// The options every host port opens with: serve's backend, AF_XDP settings and cores.
fn base_options(app: &ServeArgs, first_port: &str) -> PortOptions {
    let mut base = PortOptions::interface(first_port);
    base.backend = backend(app);
    base.afxdp = (&app.afxdp).into();
    base.cores = app.cores.clone();
    base
}

/// Opens the hosts' ports, each with its receiver (which answers for its hosts).
fn open(specs: &[HostSpec], base: &PortOptions, pass: bool, clock: Clock) -> Result<HostSession> {
    let rx = RxTarget {
        at: None,
        attach: RxAttach::Drv,
        receiver: ReceiverOptions {
            pass,
            clock,
            ..ReceiverOptions::default()
        },
    };
    HostSession::open(specs, base, &rx).context("the hosts' ports")
}

/// One run of every port, the receivers cleared first unless `cleared`, its workers started
/// at `start_at` when given.
fn run_ports(
    h: &mut Hosts,
    duration: Option<Duration>,
    stop: &Arc<AtomicBool>,
    progress: &Progress,
    cleared: bool,
    start_at: Option<std::time::Instant>,
) -> RunResult {
    let run = RunOptions {
        end: End {
            duration,
            count: None,
        },
        stop,
        observer: progress,
        drain: DRAIN,
        start_at,
    };
    let outcomes = if cleared {
        h.session.session.run_cleared(&h.runs, &h.plans, run)
    } else {
        h.session.session.run_all(&h.runs, &h.plans, run)
    };
    match outcomes {
        Ok(outcomes) => {
            let mut result = RunResult::default();
            for o in &outcomes {
                result
                    .per_flow
                    .extend(o.sent.iter().map(|(id, _, n)| (*id, *n)));
                if let Some(r) = &o.report {
                    result.frames += r.completed;
                    result.bytes += r.bytes;
                    result.per_port.push((o.port, r.completed, r.bytes));
                    result.elapsed_s = result.elapsed_s.max(r.elapsed_s);
                }
            }
            result
        }
        Err(e) => RunResult::failed(e.into()),
    }
}

/// A host's gateway, of its family.
pub(super) fn gateway(h: &otg::HostPlan) -> Option<IpAddr> {
    h.spec
        .gateway
        .map(IpAddr::V4)
        .or(h.spec.gateway6.map(IpAddr::V6))
}

/// [`keep_own`] for every stream of `runs`, from the stream of the same name in `own`.
fn keep_owns(runs: &mut [PortRun], own: &[StreamSpec]) {
    for s in runs.iter_mut().flat_map(|r| r.streams.iter_mut()) {
        if let Some(own) = own.iter().find(|m| m.name == s.name) {
            keep_own(s, own);
        }
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

/// Each flow's id (numbered across the ports, as compiled), sending port and receiver; each
/// OTG port's session port.
fn counting(
    session: &HostSession,
    runs: &[PortRun],
    plans: &[Plan],
    mapped: &otg::Mapped,
) -> Counting {
    let mut flows = vec![
        FlowAt {
            id: 0,
            tx: 0,
            rx: None
        };
        mapped.flows.len()
    ];
    for (r, plan) in runs.iter().zip(plans) {
        for (j, (s, to)) in r.streams.iter().zip(&r.to).enumerate() {
            if let Some(i) = mapped.flows.iter().position(|f| f.name == s.name) {
                flows[i] = FlowAt {
                    id: plan.first_flow + j as u16,
                    tx: r.port,
                    rx: *to,
                };
            }
        }
    }
    let ports = mapped
        .ports
        .iter()
        .filter_map(|p| {
            let at = p.location.to_string();
            let i = session.ports.iter().position(|q| *q == at)?;
            Some((
                p.name.clone(),
                PortAt {
                    tx: Some(i),
                    rx: Some(i),
                },
            ))
        })
        .collect();
    Counting {
        receivers: (0..session.ports.len())
            .map(|i| session.session.port(i).rx_handle())
            .collect(),
        flows,
        ports,
        remote: None,
    }
}

/// POST /monitor/states: `ipv4_neighbors` or `ipv6_neighbors`, each host's gateway and the
/// link-layer address it resolved (or was given); other states are protocols linerate does not
/// run.
pub(super) async fn get_states(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    let req: otg::StatesRequest = otg::parse_json(&body)?;
    if let Some((k, _)) = req.rest.iter().find(|(_, v)| !v.is_null()) {
        return Err(Fail::bad(format!("{k}: not supported by linerate")));
    }
    let (v6, asked) = match req.choice.as_deref() {
        Some("ipv4_neighbors") | None => (false, req.ipv4_neighbors),
        Some("ipv6_neighbors") => (true, req.ipv6_neighbors),
        Some(other) => {
            return Err(Fail::bad(format!(
                "choice: '{other}' is not supported: linerate's devices are hosts \
                 (ipv4_neighbors and ipv6_neighbors are)"
            )));
        }
    };
    let key = if v6 {
        "ipv6_neighbors"
    } else {
        "ipv4_neighbors"
    };
    let asked = asked.unwrap_or_default();
    if let Some((k, _)) = asked.rest.iter().find(|(_, v)| !v.is_null()) {
        return Err(Fail::bad(format!("{key}.{k}: not supported by linerate")));
    }
    let (mapped, counting) = {
        let inner = app.lock();
        let mapped = inner
            .mapped
            .clone()
            .ok_or_else(|| Fail::bad("no config: set_config first"))?;
        (mapped, Arc::clone(&inner.counting))
    };
    for (i, name) in asked.ethernet_names.iter().enumerate() {
        if !mapped.hosts.iter().any(|h| &h.ethernet == name) {
            return Err(Fail::bad(format!(
                "{key}.ethernet_names[{i}]: no ethernet with an address is named '{name}'"
            )));
        }
    }
    let learnt = if mapped.hosts.is_empty() {
        Default::default()
    } else {
        blocking(move || neighbours(&counting))
            .await?
            .map_err(|e| Fail(StatusCode::INTERNAL_SERVER_ERROR, vec![format!("{e:#}")]))?
    };
    let response = states(&mapped, &learnt, v6, &asked.ethernet_names);
    Ok(axum::Json(response).into_response())
}

/// Per address object of the family with a gateway (of the ethernets named, or all), the
/// gateway and its MAC: given, or as its port's hosts learnt it.
fn states(
    mapped: &otg::Mapped,
    learnt: &BTreeMap<String, Vec<Neighbour>>,
    v6: bool,
    ethernets: &[String],
) -> otg::StatesResponse {
    let rows = mapped
        .hosts
        .iter()
        .filter(|h| ethernets.is_empty() || ethernets.contains(&h.ethernet))
        .filter_map(|h| Some((h, gateway(h).filter(|g| g.is_ipv6() == v6)?)))
        .map(|(h, gw)| {
            let mac = h.gateway_mac.map(|m| m.octets()).or_else(|| {
                learnt
                    .get(&h.port)?
                    .iter()
                    .find(|n| n.addr == gw && n.vlan == h.spec.vlan)
                    .map(|n| n.mac)
            });
            (
                h.ethernet.clone(),
                gw,
                mac.map(|m| linerate_wire::Mac(m).to_string()),
            )
        });
    if v6 {
        otg::StatesResponse {
            choice: "ipv6_neighbors".into(),
            ipv6_neighbors: Some(
                rows.map(
                    |(ethernet_name, gw, link_layer_address)| otg::Neighborsv6State {
                        ethernet_name,
                        ipv6_address: gw.to_string(),
                        link_layer_address,
                    },
                )
                .collect(),
            ),
            ..otg::StatesResponse::default()
        }
    } else {
        otg::StatesResponse {
            choice: "ipv4_neighbors".into(),
            ipv4_neighbors: Some(
                rows.map(
                    |(ethernet_name, gw, link_layer_address)| otg::Neighborsv4State {
                        ethernet_name,
                        ipv4_address: gw.to_string(),
                        link_layer_address,
                    },
                )
                .collect(),
            ),
            ..otg::StatesResponse::default()
        }
    }
}

/// What each OTG port's hosts learnt, read from its receiver's maps (or asked of the agents).
fn neighbours(counting: &Counting) -> Result<std::collections::BTreeMap<String, Vec<Neighbour>>> {
    let mut out = std::collections::BTreeMap::new();
    if let Some(remote) = &counting.remote {
        let mut learnt = remote.neighbours()?;
        for (name, at) in &counting.ports {
            if let Some(ns) = at.rx.and_then(|g| learnt.get_mut(g)) {
                out.insert(name.clone(), std::mem::take(ns));
            }
        }
        return Ok(out);
    }
    for (name, at) in &counting.ports {
        let Some(rx) = at.rx.and_then(|i| counting.receivers.get(i)?.as_ref()) else {
            continue;
        };
        out.insert(name.clone(), rx.hosts()?.neighbours()?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ethernets on two ports: one IPv4 address resolved by auto, one IPv6 address whose
    /// gateway MAC is given.
    fn mapped() -> otg::Mapped {
        let config = serde_json::json!({
            "ports": [{"name": "p1", "location": "a0"}, {"name": "p2", "location": "a1@ns"}],
            "devices": [
                {"name": "d1", "ethernets": [{"name": "e1", "connection": {"port_name": "p1"},
                    "vlans": [{"name": "v", "id": 7}],
                    "ipv4_addresses": [{"name": "v4", "address": "10.0.0.2", "gateway": "10.0.0.1", "prefix": 24}]}]},
                {"name": "d2", "ethernets": [{"name": "e2", "connection": {"port_name": "p2"},
                    "ipv6_addresses": [{"name": "v6", "address": "2001:2::2", "gateway": "2001:2::1",
                        "gateway_mac": {"choice": "value", "value": "02:00:00:00:00:09"}}]}]}
            ]
        });
        otg::map_config(&otg::parse_config(config.to_string().as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn neighbours_are_each_gateway_with_its_learnt_or_given_mac() {
        let m = mapped();
        let learnt = BTreeMap::from([(
            "p1".to_owned(),
            vec![
                // Another VLAN's entry for the same address is not this ethernet's.
                Neighbour {
                    addr: "10.0.0.1".parse().unwrap(),
                    vlan: None,
                    mac: [2, 0, 0, 0, 0, 1],
                },
                Neighbour {
                    addr: "10.0.0.1".parse().unwrap(),
                    vlan: Some(7),
                    mac: [2, 0, 0, 0, 0, 7],
                },
            ],
        )]);
        let v4 = states(&m, &learnt, false, &[]).ipv4_neighbors.unwrap();
        assert_eq!(
            v4,
            [otg::Neighborsv4State {
                ethernet_name: "e1".into(),
                ipv4_address: "10.0.0.1".into(),
                link_layer_address: Some("02:00:00:00:00:07".into()),
            }]
        );
        let v6 = states(&m, &learnt, true, &[]).ipv6_neighbors.unwrap();
        assert_eq!(v6[0].ipv6_address, "2001:2::1");
        assert_eq!(
            v6[0].link_layer_address.as_deref(),
            Some("02:00:00:00:00:09")
        );
        // Unresolved: the gateway without a MAC; filtered by ethernet.
        let none = BTreeMap::new();
        let v4 = states(&m, &none, false, &["e1".into()])
            .ipv4_neighbors
            .unwrap();
        assert_eq!(v4[0].link_layer_address, None);
        assert!(
            states(&m, &none, false, &["e2".into()])
                .ipv4_neighbors
                .unwrap()
                .is_empty()
        );
    }
}
