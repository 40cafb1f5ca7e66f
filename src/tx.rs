//! `linerate tx`: builds the streams, opens the test bed (one port, or the hosts' ports), runs
//! them, prints the report.

use anyhow::{Context, Result};
use linerate_port::ladder::Choice;
use linerate_session::{Backend, PortOptions, PortSession, RunFlows, SinkResult};
use linerate_stream::{HostSpec, Plan, StreamSpec};
use linerate_testbed::{BedRun, BedSpec, Go, Places, TestBed};

use crate::options;
use crate::output::{self, LiveStatus};
use crate::signal::stop_flag;
use crate::usage;
use linerate_cli::{StreamArgs, TxArgs};

/// Builds the streams, opens the test bed, runs it, prints the report.
pub fn run(args: &TxArgs) -> Result<()> {
    let (mut streams, mut hosts) = streams(&args.stream)?;
    hosts.extend(args.hosts.host.iter().cloned());
    if args.hosts.flows_given() {
        if args.stream.stream.is_some() {
            return Err(usage(
                "--flow makes streams from the template flags: with --stream, give each [[stream]] from and to",
            ));
        }
        streams = args.hosts.flows(&streams[0]).map_err(usage)?;
    }
    let with_hosts = !hosts.is_empty() || streams.iter().any(|s| s.from.is_some());
    let rate: Option<linerate_stream::Rate> = args.rate.as_deref().map(str::parse).transpose()?;
    for s in &mut streams {
        // A receiver counts per flow only what carries the signature; with hosts every port
        // receives.
        s.signature |= args.rx.is_some() || with_hosts;
        if let Some(rate) = rate {
            s.rate = rate;
        }
        s.pacing = args.pacing.unwrap_or(s.pacing);
        s.gaps = args.gaps.unwrap_or(s.gaps);
        if let (Some(frames), Some(per_second)) = (args.burst, args.bursts_per_sec)
            && !with_hosts
        {
            s.bursts = Some(linerate_stream::Bursts { frames, per_second });
        }
    }
    #[cfg(target_os = "linux")]
    let speakers = crate::host_routing::devices(&hosts)?;
    #[cfg(target_os = "linux")]
    if let Some((d, _)) = speakers.iter().find(|(d, _)| {
        d.links
            .iter()
            .any(|l| linerate_testbed::agent_of(&l.port).is_some())
    }) {
        return Err(usage(format!(
            "host {}: routing on an agent's port is driven through `linerate serve` (OTG \
             devices); `tx` runs hosts' routing daemons on this machine's ports",
            d.name
        )));
    }
    #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
    let mut spec = if with_hosts {
        hosts_spec(args, hosts, &streams)?
    } else {
        port_spec(args, &streams)?
    };
    #[cfg(target_os = "linux")]
    {
        spec.to_stack = speakers
            .iter()
            .map(|(d, groups)| (d.name.clone(), groups.clone()))
            .collect();
    }
    let stop = stop_flag()?;
    let mut bed = TestBed::open(&spec)?;
    // The hosts' routing daemons, up and advertising before the first frame; they stop (and
    // their namespaces go) when the run is over.
    #[cfg(target_os = "linux")]
    let _speakers = if speakers.is_empty() {
        None
    } else {
        let devices = speakers.into_iter().map(|(d, _)| d).collect();
        Some(crate::host_routing::start(devices, &stop)?)
    };
    let end = options::send_end(&args.send, args.count);
    bed.compile(&streams, end)?;
    let live = match bed.port() {
        Some(port) => LiveStatus::new(port.link_mbps(), args.send.quiet).with_rx(port.rx_handle()),
        None => LiveStatus::new(None, true),
    };
    let names: Vec<String> = streams.iter().map(|s| s.name.clone()).collect();
    let stats = args
        .stats
        .as_deref()
        .map(|path| {
            crate::stats::Stats::create(
                path,
                &live,
                bed.counts(),
                &names,
                bed.flows(),
                bed.places(),
            )
        })
        .transpose()?;
    let go = Go {
        stop: &stop,
        observer: stats
            .as_ref()
            .map_or(&live as &dyn linerate_engine::Observer, |s| s),
        drain: args.send.drain,
        start_at: None,
        cleared: false,
    };
    let ran = bed.run(go);
    // The series' own failure comes after the run's report, never instead of it.
    let series = stats
        .as_ref()
        .map_or(Ok(()), |s| s.finish(ran.as_ref().ok()));
    let printed = match bed.port() {
        Some(port) => print_port(args, &bed, port, ran),
        None => print_hosts(args, &bed, &ran.context("transmit on the hosts' ports")?),
    };
    printed.and(series)
}

/// One port: its options, and a pcap file's plan checked before the file is created.
fn port_spec(args: &TxArgs, streams: &[StreamSpec]) -> Result<BedSpec> {
    let backend = options::send_backend(
        &args.send,
        "nothing to send to: give -i IFACE, --pcap FILE or --null",
    )?;
    let port = options::send_port(&args.send, backend);
    // A pcap file is compiled for before it is created, so a refused stream never truncates an
    // earlier capture; its port imposes what a null port of the same MTU does.
    if backend == Backend::Pcap {
        let probe = PortSession::open(&PortOptions {
            backend: Backend::Null,
            ..port.clone()
        })?;
        let plan = probe.compile(streams)?;
        if plan.count().is_none() && args.count.is_none() && args.send.duration.is_none() {
            return Err(usage(
                "a pcap file needs an end: give --count or --duration",
            ));
        }
    }
    let mut spec = BedSpec::port(port);
    spec.rx = args.rx.as_deref().map(|t| {
        let mut rx = options::send_rx(t, &args.send);
        // A rate asked is a gap asked: the receiver says how the gaps came out.
        rx.receiver.gaps |= args.rate.is_some();
        rx
    });
    Ok(spec)
}

/// The hosts' ports: each answers ARP/ND for its hosts and receives what the others send it.
fn hosts_spec(args: &TxArgs, hosts: Vec<HostSpec>, streams: &[StreamSpec]) -> Result<BedSpec> {
    linerate_stream::check_hosts(&hosts, streams)?;
    if args.rx.is_some() {
        return Err(usage(
            "with hosts every port receives what the others send toward it: drop --rx",
        ));
    }
    if args.send.interface.is_some() || args.send.pcap.is_some() || args.send.null {
        return Err(usage(
            "with hosts the ports are the hosts' own (port= of each): drop -i, --pcap and --null",
        ));
    }
    let backend = args
        .send
        .backend
        .map_or(Backend::Auto, crate::options::backend);
    let mut spec = BedSpec::port(options::send_port(&args.send, backend));
    spec.places = Places::Hosts {
        hosts,
        #[cfg(target_os = "linux")]
        given: Vec::new(),
        peers: Vec::new(),
        capture: Vec::new(),
    };
    spec.rx = Some(options::send_rx("", &args.send));
    spec.resolve_wait = args.hosts.resolve_timeout;
    Ok(spec)
}

/// One port's report (or the report so far of a run a worker ended, then the cause).
fn print_port(
    args: &TxArgs,
    bed: &TestBed,
    port: &PortSession,
    ran: linerate_testbed::Result<BedRun>,
) -> Result<()> {
    let plan = bed.plan(0).context("the port's plan")?;
    let name = port.info().name.clone();
    let ran = match ran {
        Ok(ran) => ran,
        Err(e) => {
            if let Some(i) = e.interrupted() {
                print_report(args, &i.report, plan, None, None, port.choice())?;
            }
            return Err(anyhow::Error::from(e).context(format!("transmit on {name}")));
        }
    };
    let BedRun { places, sink, .. } = ran;
    let place = places.into_iter().next().context("the port's run")?;
    let report = place.report.context("the port's report")?;
    let flows = place.received;
    output::finish_send(args.send.pcap.as_deref(), &report, sink, |sink| {
        print_report(args, &report, plan, sink, flows.as_ref(), port.choice())
    })
}

fn print_report(
    args: &TxArgs,
    report: &linerate_engine::Report,
    plan: &Plan,
    sink: Option<SinkResult>,
    flows: Option<&RunFlows>,
    choice: Option<&Choice>,
) -> Result<()> {
    if let Some(warning) = flows.and_then(RunFlows::foreign_warning) {
        eprintln!("linerate: warning: {warning}");
    }
    if args.send.json {
        output::print_json(&output::TxJson {
            report,
            streams: output::streams(plan),
            sink,
            rx: flows,
            backend_choice: output::ChoiceJson::of(choice),
        })
    } else {
        let detail = output::Detail {
            choice,
            verbose: args.send.verbose,
        };
        output::print_tx(report, plan, sink.as_ref(), detail)?;
        match flows {
            Some(f) => output::print(&format!(
                "received  at {}\n{}",
                f.at,
                linerate_rx::table::flow_table(&f.flows, &f.other)
            )),
            None => Ok(()),
        }
    }
}

/// What a run of hosts printed: per port, then the neighbours (Linux: hosts answer in XDP).
#[cfg(target_os = "linux")]
mod hosts_report {
    use anyhow::Result;
    use linerate_session::RunFlows;
    use linerate_testbed::{BedRun, TestBed};
    use serde::Serialize;

    use crate::output::{self, StreamJson};
    use linerate_cli::TxArgs;

    #[derive(Serialize)]
    struct PortJson<'a> {
        port: &'a str,
        #[serde(skip_serializing_if = "Option::is_none", flatten)]
        report: Option<&'a linerate_engine::Report>,
        streams: Vec<StreamJson>,
        #[serde(skip_serializing_if = "Option::is_none")]
        rx: Option<&'a RunFlows>,
    }

    /// A neighbour the hosts asked for: the MAC the streams use, and what answered since.
    #[derive(Serialize)]
    struct NeighbourJson<'a> {
        port: &'a str,
        addr: std::net::IpAddr,
        #[serde(skip_serializing_if = "Option::is_none")]
        vlan: Option<u16>,
        mac: String,
        /// The port's table holds another MAC for it now: the last answer heard.
        #[serde(skip_serializing_if = "Option::is_none")]
        learned: Option<String>,
        conflict: bool,
    }

    /// How many neighbours a port learned that its hosts did not ask for.
    #[derive(Serialize)]
    struct OthersJson<'a> {
        port: &'a str,
        count: usize,
    }

    #[derive(Serialize)]
    struct HostsJson<'a> {
        ports: Vec<PortJson<'a>>,
        neighbours: Vec<NeighbourJson<'a>>,
        other_neighbours: Vec<OthersJson<'a>>,
    }

    /// Per port what it sent and what reached it, then the neighbours the hosts asked for
    /// (with the MAC the streams used) and how many others they learned; a neighbour whose
    /// answers conflicted is a warning on stderr.
    pub(super) fn print_hosts(args: &TxArgs, bed: &TestBed, ran: &BedRun) -> Result<()> {
        let places = bed.places();
        let neighbours = bed.counts().neighbours()?;
        for (port, ns) in places.iter().zip(&neighbours) {
            for line in ns.conflicts(port) {
                eprintln!("linerate: warning: {line}");
            }
        }
        if args.send.json {
            let json = HostsJson {
                ports: ran
                    .places
                    .iter()
                    .map(|o| PortJson {
                        port: &places[o.place],
                        report: o.report.as_ref(),
                        streams: bed.plan(o.place).map(output::streams).unwrap_or_default(),
                        rx: o.received.as_ref(),
                    })
                    .collect(),
                neighbours: places
                    .iter()
                    .zip(&neighbours)
                    .flat_map(|(port, ns)| {
                        ns.asked.iter().map(move |n| NeighbourJson {
                            port,
                            addr: n.addr,
                            vlan: n.vlan,
                            mac: linerate_wire::Mac(n.mac).to_string(),
                            learned: n.learned.map(|m| linerate_wire::Mac(m).to_string()),
                            conflict: n.conflict,
                        })
                    })
                    .collect(),
                other_neighbours: places
                    .iter()
                    .zip(&neighbours)
                    .map(|(port, ns)| OthersJson {
                        port,
                        count: ns.others,
                    })
                    .collect(),
            };
            return output::print_json(&json);
        }
        let mut out = String::new();
        for o in &ran.places {
            let port = &places[o.place];
            if let Some(r) = &o.report {
                out.push_str(&format!(
                    "port {port}: sent {} frames in {:.3} s ({:.0} frames/s) on {}\n",
                    r.completed, r.elapsed_s, r.pps, r.backend
                ));
            }
            if let Some(f) = &o.received {
                out.push_str(&format!(
                    "received  at {port}\n{}",
                    linerate_rx::table::flow_table(&f.flows, &f.other)
                ));
            }
        }
        for (port, ns) in places.iter().zip(&neighbours) {
            for n in &ns.asked {
                out.push_str(&format!(
                    "neighbour {}{} is {} (on {port}){}\n",
                    n.addr,
                    n.vlan.map(|v| format!(" vlan {v}")).unwrap_or_default(),
                    linerate_wire::Mac(n.mac),
                    if n.conflict {
                        ", answers conflicted"
                    } else {
                        ""
                    }
                ));
            }
            if ns.others > 0 {
                out.push_str(&format!(
                    "{} other neighbour(s) learned on {port}: stations that asked for the hosts, not listed\n",
                    ns.others
                ));
            }
        }
        output::print(&out)
    }
}

#[cfg(target_os = "linux")]
use hosts_report::print_hosts;

#[cfg(not(target_os = "linux"))]
fn print_hosts(_args: &TxArgs, _bed: &TestBed, _ran: &BedRun) -> Result<()> {
    unreachable!("a test bed of hosts opens on Linux only")
}

/// The streams to send and the hosts they go between: a TOML file, or the one stream of the
/// template flags.
fn streams(args: &StreamArgs) -> Result<(Vec<StreamSpec>, Vec<HostSpec>)> {
    match &args.stream {
        Some(path) => {
            let given = args.template.given();
            if !given.is_empty() {
                return Err(usage(format!(
                    "--stream cannot be used with --{}: the file sets every key of its streams",
                    given.join(", --")
                )));
            }
            let file = linerate_files::load_stream_file(path)?;
            Ok((file.streams, file.hosts))
        }
        None => Ok((
            vec![args.template.spec().map_err(|e| crate::usage(e.0))?],
            Vec::new(),
        )),
    }
}
