//! `linerate tx`: builds the streams, opens one port, runs them, prints the report.

use anyhow::Result;
use linerate_port::ladder::Choice;
use linerate_session::{
    Backend, Outcome, PortOptions, PortSession, RunFlows, RunOptions, SinkResult,
};
use linerate_stream::{Plan, SpecFile, StreamSpec};

use crate::cli::{StreamArgs, TxArgs};
use crate::options;
use crate::output::{self, LiveStatus};
use crate::signal::stop_flag;
use crate::usage;

/// Builds the streams, opens the port, runs the workers, prints the report.
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
    if !hosts.is_empty() || streams.iter().any(|s| s.from.is_some()) {
        linerate_stream::check_hosts(&hosts, &streams)?;
        if args.rx.is_some() {
            return Err(usage(
                "with hosts every port receives what the others send toward it: drop --rx",
            ));
        }
        return hosts_run(args, &hosts, streams);
    }
    let rate: Option<linerate_stream::Rate> = args.rate.as_deref().map(str::parse).transpose()?;
    for s in &mut streams {
        // A receiver counts per flow only what carries the signature.
        s.signature |= args.rx.is_some();
        if let Some(rate) = rate {
            s.rate = rate;
        }
        if let (Some(frames), Some(per_second)) = (args.burst, args.bursts_per_sec) {
            s.bursts = Some(linerate_stream::Bursts { frames, per_second });
        }
    }
    let backend = options::send_backend(
        &args.send,
        "nothing to send to: give -i IFACE, --pcap FILE or --null",
    )?;
    let port = options::send_port(&args.send, backend, args.mtu, &args.cores, args.link_speed);
    // A pcap file is compiled for before it is created, so a refused stream never truncates an
    // earlier capture; its port imposes what a null port of the same MTU does.
    let early = match backend {
        Backend::Pcap => {
            let probe = PortSession::open(&PortOptions {
                backend: Backend::Null,
                ..port.clone()
            })?;
            let plan = probe.compile(&streams)?;
            if plan.count().is_none() && args.count.is_none() && args.send.duration.is_none() {
                return Err(usage(
                    "a pcap file needs an end: give --count or --duration",
                ));
            }
            Some(plan)
        }
        _ => None,
    };
    let mut session = PortSession::open(&port)?;
    let plan = match early {
        Some(plan) => plan,
        None => session.compile(&streams)?,
    };
    if let Some(target) = &args.rx {
        session.receive(&options::send_rx(target, &args.send))?;
    }
    let stop = stop_flag()?;
    let name = session.info().name.clone();
    let live = LiveStatus::new(session.link_mbps(), args.send.quiet).with_rx(session.rx_handle());
    let run = RunOptions {
        end: options::send_end(&args.send, args.count),
        stop: &stop,
        observer: &live,
        drain: args.send.drain,
        start_at: None,
    };
    let outcome = match session.run_plan(&plan, run) {
        Ok(outcome) => outcome,
        Err(e) => {
            // A worker ended the run early: the report so far still goes out, then the cause.
            if let Some(i) = e.interrupted() {
                print_report(args, &i.report, &plan, None, None, session.choice())?;
            }
            return Err(anyhow::Error::from(e).context(format!("transmit on {name}")));
        }
    };
    let Outcome {
        report,
        flows,
        sink,
        ..
    } = outcome;
    output::finish_send(args.send.pcap.as_deref(), &report, sink, |sink| {
        print_report(args, &report, &plan, sink, flows.as_ref(), session.choice())
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

#[cfg(target_os = "linux")]
fn hosts_run(
    args: &TxArgs,
    hosts: &[linerate_stream::HostSpec],
    streams: Vec<StreamSpec>,
) -> Result<()> {
    crate::tx_hosts::run(args, hosts, streams)
}

#[cfg(not(target_os = "linux"))]
fn hosts_run(
    _args: &TxArgs,
    _hosts: &[linerate_stream::HostSpec],
    _streams: Vec<StreamSpec>,
) -> Result<()> {
    Err(usage(
        "emulated hosts (--host, [[host]]) answer ARP/ND in XDP: they need Linux",
    ))
}

/// The streams to send and the hosts they go between: a TOML file, or the one stream of the
/// template flags.
fn streams(args: &StreamArgs) -> Result<(Vec<StreamSpec>, Vec<linerate_stream::HostSpec>)> {
    match &args.stream {
        Some(path) => {
            let given = args.template.given();
            if !given.is_empty() {
                return Err(usage(format!(
                    "--stream cannot be used with --{}: the file sets every key of its streams",
                    given.join(", --")
                )));
            }
            let file = SpecFile::load(path)?;
            Ok((file.streams, file.hosts))
        }
        None => Ok((vec![args.template.spec()?], Vec::new())),
    }
}
