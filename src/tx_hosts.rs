//! `linerate tx` with hosts (`--host`, or `[[host]]` tables in the stream file): every host's
//! port is a port of the run, each answers ARP/ND for its hosts and resolves their next hops,
//! all ports send at once, and each reports per flow what reached it.

use anyhow::{Context, Result};
use linerate_session::{Backend, PortOutcome, RunOptions};
use linerate_stream::{HostSpec, StreamSpec};
use serde::Serialize;

use crate::cli::TxArgs;
use crate::options;
use crate::output::{self, LiveStatus, StreamJson};
use crate::signal::stop_flag;
use crate::usage;

#[derive(Serialize)]
struct PortJson<'a> {
    port: &'a str,
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    report: Option<&'a linerate_engine::Report>,
    streams: Vec<StreamJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rx: Option<&'a linerate_session::RunFlows>,
}

#[derive(Serialize)]
struct NeighbourJson {
    port: String,
    addr: std::net::IpAddr,
    #[serde(skip_serializing_if = "Option::is_none")]
    vlan: Option<u16>,
    mac: String,
}

#[derive(Serialize)]
struct HostsJson<'a> {
    ports: Vec<PortJson<'a>>,
    neighbours: Vec<NeighbourJson>,
}

/// Opens the hosts' ports, resolves, runs every port at once, prints per port and per flow.
pub fn run(args: &TxArgs, hosts: &[HostSpec], mut streams: Vec<StreamSpec>) -> Result<()> {
    if args.send.interface.is_some() || args.send.pcap.is_some() || args.send.null {
        return Err(usage(
            "with hosts the ports are the hosts' own (port= of each): drop -i, --pcap and --null",
        ));
    }
    let rate: Option<linerate_stream::Rate> = args.rate.as_deref().map(str::parse).transpose()?;
    for s in &mut streams {
        s.signature = true;
        if let Some(rate) = rate {
            s.rate = rate;
        }
    }
    let backend = args.send.backend.map_or(Backend::Auto, Backend::from);
    let base = options::send_port(&args.send, backend, args.mtu, &args.cores, args.link_speed);
    let rx = options::send_rx("", &args.send);
    let mut hs = linerate_session::HostSession::open(hosts, &base, &rx)?;
    let runs = hs.runs(&streams, args.hosts.resolve_timeout)?;
    let plans = hs.session.compile_all(&runs)?;
    let stop = stop_flag()?;
    let live = LiveStatus::new(None, true);
    let run = RunOptions {
        end: options::send_end(&args.send, args.count),
        stop: &stop,
        observer: &live,
        drain: args.send.drain,
        start_at: None,
    };
    let outcomes = hs
        .session
        .run_all(&runs, &plans, run)
        .context("transmit on the hosts' ports")?;
    let neighbours = hs.neighbours()?;
    let streams_of = |port: usize| {
        runs.iter()
            .zip(&plans)
            .find(|(r, _)| r.port == port)
            .map(|(_, p)| output::streams(p))
            .unwrap_or_default()
    };
    if args.send.json {
        let json = HostsJson {
            ports: outcomes
                .iter()
                .map(|o| PortJson {
                    port: &hs.ports[o.port],
                    report: o.report.as_ref(),
                    streams: streams_of(o.port),
                    rx: o.flows.as_ref(),
                })
                .collect(),
            neighbours: neighbours
                .iter()
                .flat_map(|(port, ns)| {
                    ns.iter().map(move |n| NeighbourJson {
                        port: port.clone(),
                        addr: n.addr,
                        vlan: n.vlan,
                        mac: linerate_wire::Mac(n.mac).to_string(),
                    })
                })
                .collect(),
        };
        return output::print_json(&json);
    }
    output::print(&text(&hs.ports, &outcomes, &neighbours))
}

/// Per port what it sent and what reached it, then what the hosts learned.
fn text(
    ports: &[String],
    outcomes: &[PortOutcome],
    neighbours: &[(String, Vec<linerate_hosts::Neighbour>)],
) -> String {
    let mut out = String::new();
    for o in outcomes {
        let port = &ports[o.port];
        if let Some(r) = &o.report {
            out.push_str(&format!(
                "port {port}: sent {} frames in {:.3} s ({:.0} frames/s) on {}\n",
                r.completed, r.elapsed_s, r.pps, r.backend
            ));
        }
        if let Some(f) = &o.flows {
            out.push_str(&format!(
                "received  at {port}\n{}",
                linerate_rx::table::flow_table(&f.flows, &f.other)
            ));
        }
    }
    for (port, ns) in neighbours {
        for n in ns {
            out.push_str(&format!(
                "neighbour {}{} is {} (on {port})\n",
                n.addr,
                n.vlan.map(|v| format!(" vlan {v}")).unwrap_or_default(),
                linerate_wire::Mac(n.mac)
            ));
        }
    }
    out
}
