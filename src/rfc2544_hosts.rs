//! `linerate rfc2544` with hosts (`--host`, and `--flow FROM:TO` or `--bidir`): every host's
//! port is a port of the trials, each direction a flow between two hosts, all sent at once.
//! The load of a trial is offered on each direction (RFC 2544 §14); the report gives the
//! aggregate and each direction.

use anyhow::Result;
use linerate_session::rfc2544::Rfc2544;

use crate::cli::rfc2544::Rfc2544Args;
use crate::rfc2544::template;
use crate::usage;

/// Checks the hosts' flags, opens the hosts' ports, resolves each direction's next hop, then
/// runs the procedure over every direction at once.
pub fn run(args: &Rfc2544Args, procedure: Rfc2544) -> Result<()> {
    let h = &args.hosts;
    if h.host.is_empty() {
        return Err(usage(
            "--flow and --bidir name hosts: give each with --host",
        ));
    }
    if !h.flows_given() {
        return Err(usage(
            "with hosts, name the directions: --flow FROM:TO (repeat) or --bidir",
        ));
    }
    if args.interface.is_some() || args.rx.is_some() {
        return Err(usage(
            "with hosts the ports are the hosts' own (port= of each), each receiving what is sent toward it: drop -i and --rx",
        ));
    }
    if args.src_mac.is_some()
        || args.dst_mac.is_some()
        || args.src_ip.is_some()
        || args.dst_ip.is_some()
    {
        return Err(usage(
            "with hosts the addresses are the hosts' and their next hops': drop --src-mac, --dst-mac, --src-ip and --dst-ip",
        ));
    }
    let streams = h.flows(&template(args)).map_err(usage)?;
    linerate_stream::check_hosts(&h.host, &streams)?;
    let mut senders: Vec<&str> = Vec::new();
    for s in &streams {
        let from = s.from.as_deref().unwrap_or_default();
        let port = h
            .host
            .iter()
            .find(|x| x.name == from)
            .map(|x| x.port.as_str());
        if let Some(port) = port {
            if senders.contains(&port) {
                return Err(usage(format!(
                    "two directions leave from port {port}: rfc2544 offers its load once per port, give each direction a port of its own"
                )));
            }
            senders.push(port);
        }
    }
    open_and_measure(args, &procedure, &streams)
}

#[cfg(target_os = "linux")]
fn open_and_measure(
    args: &Rfc2544Args,
    procedure: &Rfc2544,
    streams: &[linerate_stream::StreamSpec],
) -> Result<()> {
    use crate::rfc2544::{Outputs, Where, measure, port_options, rx_target};
    use linerate_session::rfc2544::Ports;

    let h = &args.hosts;
    if h.host.iter().any(|x| crate::serve::Placed::of(x).is_some()) {
        return on_agents(args, procedure, streams);
    }
    let outputs = Outputs::reserve(args)?;
    let rx = rx_target(args, streams.len() as u32);
    let mut hs = linerate_session::HostSession::open(&h.host, &port_options(args), &rx)?;
    let runs = hs.runs(streams, h.resolve_timeout)?;
    let at = Where {
        interface: hs.ports.join(", "),
        rx: "each host's port".into(),
    };
    let ports = Ports::Directions {
        session: &mut hs.session,
        runs,
    };
    measure(args, procedure, outputs, ports, at)
}

/// Hosts on agents' ports (`port=HOST:PORT/IFACE`): every trial runs there, through them.
#[cfg(target_os = "linux")]
fn on_agents(
    args: &Rfc2544Args,
    procedure: &Rfc2544,
    streams: &[linerate_stream::StreamSpec],
) -> Result<()> {
    use crate::rfc2544::{Outputs, Where, measure};
    use crate::serve::{Controller, Placed};
    use linerate_session::rfc2544::Ports;

    let h = &args.hosts;
    let mut placed = Vec::with_capacity(h.host.len());
    for host in &h.host {
        placed.push(Placed::of(host).ok_or_else(|| {
            usage(format!(
                "host {}: port {} is this machine's, beside hosts on agents: run `linerate \
                 agent` here too and give port=127.0.0.1:PORT/{}",
                host.name, host.port, host.port
            ))
        })?);
    }
    let controller = Controller::new(&args.agents)?.ok_or_else(|| {
        usage("hosts on agents' ports (port=HOST:PORT/IFACE): give --agent-token-file FILE")
    })?;
    let outputs = Outputs::reserve(args)?;
    let at = Where {
        interface: placed
            .iter()
            .map(|p| p.port_name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        rx: "each host's port, on its agent".into(),
    };
    let agents = crate::rfc2544_agents::AgentDirections::new(
        controller,
        placed,
        streams.to_vec(),
        args.link_speed,
    );
    measure(
        args,
        procedure,
        outputs,
        Ports::Agents(Box::new(agents)),
        at,
    )
}

#[cfg(not(target_os = "linux"))]
fn open_and_measure(
    _args: &Rfc2544Args,
    _procedure: &Rfc2544,
    _streams: &[linerate_stream::StreamSpec],
) -> Result<()> {
    Err(usage(
        "hosts (--host) need Linux: their ports answer ARP/ND from the receive side's XDP program",
    ))
}
