//! `linerate tcp`: the stateful client and server (crates/stateful) on a port, a line a second
//! on stderr and the report on stdout.

use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use linerate_cli::{TcpAction, TcpClientArgs, TcpServerArgs};
use linerate_stateful::{
    Addresses, ClientConfig, ClientReport, PacketLink, Range, ServerConfig, StatefulError,
};

use crate::output::{print_json, println};
use crate::usage::usage;

pub fn run(action: &TcpAction) -> Result<()> {
    match action {
        TcpAction::Client(args) => client(args),
        TcpAction::Server(args) => server(args),
    }
}

/// A usage error of the library is the user's: exit 2 with its line.
fn lift(e: StatefulError) -> anyhow::Error {
    match e {
        StatefulError::Usage(m) => usage(format!("tcp: {m}")),
        other => other.into(),
    }
}

fn client_config(args: &TcpClientArgs) -> Result<ClientConfig> {
    let range = Range::parse(&args.src).map_err(lift)?;
    let (gateway, prefix_len) = match &args.gateway {
        Some(text) => {
            let (addr, len) = text.split_once('/').ok_or_else(|| {
                usage(format!(
                    "--gateway {text}: give ADDR/LEN, the gateway and the on-link prefix length"
                ))
            })?;
            let addr: Ipv4Addr = addr
                .parse()
                .map_err(|_| usage(format!("--gateway {text}: {addr} is not an IPv4 address")))?;
            let len: u8 =
                len.parse().ok().filter(|l| *l <= 32).ok_or_else(|| {
                    usage(format!("--gateway {text}: the prefix length is 0 to 32"))
                })?;
            (Some(addr), len)
        }
        None => (None, range.prefix_len),
    };
    let ports = args
        .src_ports
        .split_once('-')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .ok_or_else(|| {
            usage(format!(
                "--src-ports {}: give FIRST-LAST, e.g. 1024-65535",
                args.src_ports
            ))
        })?;
    let config = ClientConfig {
        addresses: Addresses {
            mac: args.mac,
            range,
            prefix_len,
            gateway,
        },
        ports,
        server: args.server,
        connections: args.connections,
        rate: args.rate,
        concurrent: args.concurrent,
        requests: args.requests,
        response_bytes: args.response_bytes,
        think: args.think,
        timeout: args.timeout,
        rx_buffer: usize::try_from(args.window)
            .ok()
            .filter(|w| (1024..=1 << 30).contains(w))
            .ok_or_else(|| usage(format!("--window {}: 1 KiB to 1 GiB", args.window)))?,
        seed: std::process::id().into(),
    };
    config.validate().map_err(lift)?;
    Ok(config)
}

fn client(args: &TcpClientArgs) -> Result<()> {
    let config = client_config(args)?;
    let mut link =
        PacketLink::open(&args.interface, args.netns.as_deref(), config.addresses).map_err(lift)?;
    let stop = crate::signal::stop_flag()?;
    eprintln!(
        "tcp client on {}: {} connections from {} to {}, {} at once{}; Ctrl-C to stop",
        args.interface,
        config.connections,
        args.src,
        config.server,
        config.concurrent,
        config
            .rate
            .map(|r| format!(", {r} a second"))
            .unwrap_or_default()
    );
    let mut last = (0.0, 0u64);
    let report = linerate_stateful::run_client(&mut link, &config, &stop, |s| {
        let c = &s.counters;
        let cps = (c.established - last.1) as f64 / (s.elapsed_s - last.0).max(1e-9);
        last = (s.elapsed_s, c.established);
        eprintln!(
            "{:6.1}s  attempted {}  established {}  active {}  closed {}  failed {}  responses {}  {:.0} cps",
            s.elapsed_s,
            c.attempted,
            c.established,
            s.active,
            c.ended(),
            c.failed(),
            c.responses,
            cps
        );
    })
    .context("running the TCP client")?;
    if args.json {
        print_json(&report)?;
    } else {
        println(&summary(&report))?;
    }
    if report.stopped && stop.load(Ordering::Relaxed) {
        return Err(
            crate::usage::Interrupted("the client stopped opening connections".into()).into(),
        );
    }
    for t in &report.timed_out {
        eprintln!(
            "timed out: {} → {} while {} in {}",
            t.source, config.server, t.phase, t.tcp_state
        );
    }
    let c = report.counters;
    if c.failed() + c.closed_reset + c.closed_timeout + c.closed_bad_response > 0 {
        anyhow::bail!(
            "{} of {} connections did not end cleanly (failed {}, reset {}, timed out {}, bad response {})",
            c.attempted - c.closed,
            c.attempted,
            c.failed(),
            c.closed_reset,
            c.closed_timeout,
            c.closed_bad_response
        );
    }
    Ok(())
}

fn summary(r: &ClientReport) -> String {
    let c = &r.counters;
    format!(
        "connections  attempted {}  established {}  closed {}  failed {} (timeout {}, refused {})  reset {}  timed out {}  bad response {}\n\
         requests     {}  responses {}  body bytes {}\n\
         rate         {:.0} connections/s  goodput {:.1} Mbit/s  over {:.2} s\n\
         connect      p50 {:.0} µs  p99 {:.0} µs   response p50 {:.0} µs  p99 {:.0} µs",
        c.attempted,
        c.established,
        c.closed,
        c.failed(),
        c.failed_timeout,
        c.failed_refused,
        c.closed_reset,
        c.closed_timeout,
        c.closed_bad_response,
        c.requests,
        c.responses,
        c.body_bytes,
        r.cps,
        r.goodput_bps / 1e6,
        r.elapsed_s,
        r.connect_time.p50_us,
        r.connect_time.p99_us,
        r.response_time.p50_us,
        r.response_time.p99_us,
    )
}

fn server(args: &TcpServerArgs) -> Result<()> {
    let (addr, len) = args
        .address
        .split_once('/')
        .and_then(|(a, l)| {
            Some((
                a.parse::<Ipv4Addr>().ok()?,
                l.parse::<u8>().ok().filter(|l| *l <= 32)?,
            ))
        })
        .ok_or_else(|| {
            usage(format!(
                "--address {}: give ADDR/LEN, e.g. 10.0.0.1/24",
                args.address
            ))
        })?;
    let config = ServerConfig {
        addresses: Addresses {
            mac: args.mac,
            range: Range::single(addr),
            prefix_len: len,
            gateway: args.gateway,
        },
        port: args.port,
        default_bytes: args.response_bytes,
        max_bytes: 1 << 30,
        concurrent: args.concurrent,
        send_buffer: args.send_buffer as usize,
        timeout: args.timeout,
        time_wait: args.time_wait,
        seed: std::process::id().into(),
    };
    config.addresses.validate().map_err(lift)?;
    let mut link =
        PacketLink::open(&args.interface, args.netns.as_deref(), config.addresses).map_err(lift)?;
    let stop = crate::signal::stop_flag()?;
    if let Some(d) = args.duration {
        let flag = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(d);
            flag.store(true, Ordering::Relaxed);
        });
    }
    eprintln!(
        "tcp server on {}: listening on {addr}:{}; Ctrl-C to stop",
        args.interface, args.port
    );
    let report = linerate_stateful::run_server(&mut link, &config, &stop, |t, c| {
        eprintln!(
            "{t:6.1}s  accepted {}  active {}  requests {}  responses {}  body bytes {}",
            c.accepted,
            c.active(),
            c.requests,
            c.responses,
            c.body_bytes
        );
    })
    .map_err(lift)?;
    if args.json {
        print_json(&report)
    } else {
        let c = report.counters;
        println(&format!(
            "connections  accepted {}  closed {}  reset {}  bad request {}  timed out {}\nrequests     {}  responses {}  body bytes {}",
            c.accepted,
            c.closed,
            c.reset,
            c.bad_request,
            c.timeout,
            c.requests,
            c.responses,
            c.body_bytes
        ))
    }
}
