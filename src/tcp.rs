//! `linerate tcp`: the stateful client and server (crates/stateful) on a port, a line a second
//! on stderr and the report on stdout.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use linerate_cli::{ProfileCheck, TcpAction, TcpBothArgs, TcpClientArgs, TcpServerArgs, Think};
use linerate_report::{Curve, Outputs, Panel, ReportError, Written, plot_panels};
use linerate_stateful::{
    Addresses, Check, ClientConfig, ClientReport, ClientSnapshot, HttpTemplate, PacketLink, Range,
    Recording, Replay, Schedule, ServerConfig, ServerReport, ServerSnapshot, StatefulError,
};

use crate::usage::usage;

pub fn run(action: &TcpAction) -> Result<()> {
    match action {
        TcpAction::Client(args) => client(args),
        TcpAction::Server(args) => server(args),
        TcpAction::Both(args) => both(args),
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
            let addr: IpAddr = addr
                .parse()
                .map_err(|_| usage(format!("--gateway {text}: {addr} is not an IP address")))?;
            let most = if addr.is_ipv4() { 32 } else { 128 };
            let len: u8 = len.parse().ok().filter(|l| *l <= most).ok_or_else(|| {
                usage(format!(
                    "--gateway {text}: the prefix length is 0 to {most}"
                ))
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
    let schedule = schedule(args)?;
    let config = ClientConfig {
        addresses: Addresses {
            mac: args.mac,
            range,
            prefix_len,
            gateway,
            vlan: args.vlan,
            inner_vlan: args.inner_vlan,
            outer_tpid: args.outer_tpid,
        },
        ports,
        server: args.server,
        connections: schedule.map_or(args.connections, |s| s.connections()),
        rate: if schedule.is_some() { None } else { args.rate },
        schedule,
        concurrent: args.concurrent,
        http: match &args.mix {
            Some(mix) => mix
                .0
                .iter()
                .map(|k| HttpTemplate {
                    response_bytes: k.response_bytes,
                    requests: k.requests,
                    weight: k.weight,
                })
                .collect(),
            None => vec![HttpTemplate::only(args.response_bytes, args.requests)],
        },
        think: match args.think {
            Think::After(t) => t,
            Think::Recorded if args.profile.is_none() => {
                return Err(usage(
                    "--think recorded waits a replay's own pauses: give --profile FILE too, or a time (--think 1s)",
                ));
            }
            Think::Recorded => std::time::Duration::ZERO,
        },
        think_recorded: args.think == Think::Recorded,
        timeout: args.timeout,
        rx_buffer: usize::try_from(args.window)
            .ok()
            .filter(|w| (1024..=1 << 30).contains(w))
            .ok_or_else(|| usage(format!("--window {}: 1 KiB to 1 GiB", args.window)))?,
        time_wait: args.time_wait,
        replay: replay(args.profile.as_deref(), args.profile_check)?,
        timestamps: !args.no_timestamps,
        seed: std::process::id().into(),
    };
    config.validate().map_err(lift)?;
    // A rate the link cannot carry is refused before the first SYN; its speed as given, or as
    // a NIC in this namespace reports it (a virtual device's bounds nothing: not checked).
    let link = args.link_speed.or_else(|| {
        args.netns.is_none().then(|| {
            linerate_port::iface::Interface::read(&args.interface)
                .ok()?
                .speed
                .map(|s| s.mbps())
        })?
    });
    if let Some(mbps) = link {
        config.check_link(mbps).map_err(lift)?;
    }
    Ok(config)
}

/// The recorded session of `--profile`, read before anything is sent.
fn replay(path: Option<&Path>, check: ProfileCheck) -> Result<Option<Replay>> {
    let Some(path) = path else { return Ok(None) };
    let recording = Recording::read(path).map_err(lift)?;
    let (client, server) = recording.bytes();
    eprintln!(
        "profile {}: {} turns of {} → {}, {client} bytes from the client and {server} from the server, the {} closing first",
        path.display(),
        recording.turns.len(),
        recording.client,
        recording.server,
        if recording.server_closes {
            "server"
        } else {
            "client"
        }
    );
    Ok(Some(Replay {
        recording: std::sync::Arc::new(recording),
        check: match check {
            ProfileCheck::Bytes => Check::Bytes,
            ProfileCheck::Lengths => Check::Lengths,
        },
    }))
}

/// The ramp-up, steady time and ramp-down, when any is given: they need the rate they hold.
fn schedule(args: &TcpClientArgs) -> Result<Option<Schedule>> {
    if args.duration.is_none() && args.ramp_up.is_none() && args.ramp_down.is_none() {
        return Ok(None);
    }
    let rate = args.rate.ok_or_else(|| {
        usage("--duration, --ramp-up and --ramp-down pace connections at a rate: give --rate CPS")
    })?;
    let schedule = Schedule {
        rate,
        ramp_up: args.ramp_up.unwrap_or_default(),
        steady: args.duration.unwrap_or_default(),
        ramp_down: args.ramp_down.unwrap_or_default(),
    };
    schedule.validate().map_err(lift)?;
    Ok(Some(schedule))
}

fn client(args: &TcpClientArgs) -> Result<()> {
    let config = client_config(args)?;
    // The files are reserved before the first SYN: a bad path costs no run.
    let csv: Vec<_> = args.csv.iter().cloned().collect();
    let json = args.json.then_some(Path::new("-"));
    let outputs = Outputs::reserve(json, &csv, args.plot.as_deref())?;
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
        pace(&config)
    );
    let mut seconds: Vec<Second> = Vec::new();
    let report = linerate_stateful::run_client(&mut link, &config, &stop, |s| {
        seconds.push(client_second(seconds.last(), s, ""));
    })
    .context("running the TCP client")?;
    let run = ClientRun {
        report,
        seconds,
        interface: args.interface.clone(),
        server: config.server,
    };
    crate::output::wrote(&outputs.write(&run)?)?;
    client_ended(&run.report, &config, &stop)
}

/// A client's second: its line on stderr (after `who`, when both ends print), kept for the
/// CSV and the plot.
fn client_second(last: Option<&Second>, s: &ClientSnapshot, who: &str) -> Second {
    let second = Second::after(last, s);
    let c = &s.counters;
    eprintln!(
        "{who}{:6.1}s  attempted {}  established {}  active {}  closed {}  failed {}  responses {}  retransmitted {}  {:.0} cps",
        s.elapsed_s,
        c.attempted,
        c.established,
        s.active,
        c.ended(),
        c.failed(),
        c.responses,
        c.retransmitted,
        second.cps
    );
    second
}

/// What a client's run says after its report: an interruption, the connections that timed
/// out, each kind of a mix, and an error when any connection did not end cleanly.
fn client_ended(report: &ClientReport, config: &ClientConfig, stop: &AtomicBool) -> Result<()> {
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
    if report.templates.len() > 1 {
        for t in &report.templates {
            let c = &t.counters;
            eprintln!(
                "kind {}: {} connections, {} closed cleanly, {} responses, {:.0} cps, {:.1} Mbit/s, response p50 {:.0} µs, p99 {:.0} µs",
                t.name,
                c.attempted,
                c.closed,
                c.responses,
                t.cps,
                t.goodput_bps / 1e6,
                t.response_time.p50_us,
                t.response_time.p99_us
            );
        }
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

/// How the run paces its connections, for the first line.
fn pace(config: &ClientConfig) -> String {
    match (&config.schedule, config.rate) {
        (Some(s), _) => format!(
            ", {} a second after {:.0} s of ramp-up, for {:.0} s, then {:.0} s of ramp-down",
            s.rate,
            s.ramp_up.as_secs_f64(),
            s.steady.as_secs_f64(),
            s.ramp_down.as_secs_f64()
        ),
        (None, Some(r)) => format!(", {r} a second"),
        (None, None) => String::new(),
    }
}

/// One second of a client run, as the CSV and the plot show it.
#[derive(Debug, Clone)]
struct Second {
    snapshot: ClientSnapshot,
    /// Connections established a second since the last row.
    cps: f64,
    /// Segments sent again a second since the last row.
    retransmitted_per_s: f64,
    /// Body bits received a second since the last row.
    goodput_bps: f64,
    /// Each kind's of a mix: connections established and body bits a second since the last
    /// row.
    kinds: Vec<(f64, f64)>,
}

impl Second {
    fn after(last: Option<&Second>, s: &ClientSnapshot) -> Second {
        let (t, established, retransmitted, body) = last.map_or((0.0, 0, 0, 0), |l| {
            let c = &l.snapshot.counters;
            (
                l.snapshot.elapsed_s,
                c.established,
                c.retransmitted,
                c.body_bytes,
            )
        });
        let per_s = |now: u64, then: u64| per_second(now - then, s.elapsed_s - t);
        let kinds = s
            .templates
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let then = last
                    .and_then(|l| l.snapshot.templates.get(k))
                    .copied()
                    .unwrap_or_default();
                (
                    per_s(c.established, then.established),
                    per_s(c.body_bytes, then.body_bytes) * 8.0,
                )
            })
            .collect();
        Second {
            snapshot: s.clone(),
            cps: per_s(s.counters.established, established),
            retransmitted_per_s: per_s(s.counters.retransmitted, retransmitted),
            goodput_bps: per_s(s.counters.body_bytes, body) * 8.0,
            kinds,
        }
    }
}

/// A run's report as its JSON file holds it.
fn report_json(report: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default() + "\n"
}

/// A CSV of a row a second under `header`, each row as `row` writes it.
fn seconds_csv<T, const N: usize>(
    header: [&str; N],
    rows: &[T],
    row: impl Fn(&T) -> [String; N],
) -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(row(r));
    }
    vec![String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()]
}

/// `count` over `span` seconds (a row's span is about a second; the last may be shorter).
fn per_second(count: u64, span: f64) -> f64 {
    count as f64 / span.max(1e-9)
}

/// A plot's curve through `rows`, where `y` has a value.
fn curve<T>(
    name: &str,
    dashed: bool,
    rows: &[T],
    x: impl Fn(&T) -> f64,
    y: impl Fn(&T) -> Option<f64>,
) -> Curve {
    Curve {
        name: name.into(),
        points: rows.iter().filter_map(|r| Some((x(r), y(r)?))).collect(),
        dashed,
    }
}

/// A panel over seconds.
fn panel(y: &str, curves: Vec<Curve>) -> Panel {
    Panel {
        x_desc: "seconds".into(),
        y_desc: y.into(),
        curves,
    }
}

/// A client run: its report and its seconds.
struct ClientRun {
    report: ClientReport,
    seconds: Vec<Second>,
    interface: String,
    server: SocketAddr,
}

impl Written for ClientRun {
    fn json(&self) -> String {
        report_json(&self.report)
    }

    /// A row a second of the run's counts (`kind` all) and, of a mix of several kinds, one
    /// for each kind after it (the link's figures — the asked rate, retransmissions, round
    /// trips — left empty there).
    fn csv(&self) -> Vec<String> {
        let mix = self.report.templates.len() > 1;
        let rows: Vec<(&Second, Option<usize>)> = self
            .seconds
            .iter()
            .flat_map(|s| {
                let kinds = if mix { s.kinds.len() } else { 0 };
                std::iter::once((s, None)).chain((0..kinds).map(move |k| (s, Some(k))))
            })
            .collect();
        seconds_csv(
            [
                "elapsed_s",
                "target_cps",
                "cps",
                "attempted",
                "established",
                "active",
                "closed",
                "failed_timeout",
                "failed_refused",
                "closed_reset",
                "closed_timeout",
                "closed_bad_response",
                "requests",
                "responses",
                "body_bytes",
                "retransmitted",
                "goodput_mbps",
                "rtt_p50_us",
                "rtt_p99_us",
                "kind",
            ],
            &rows,
            |&(second, kind)| {
                let s = &second.snapshot;
                let (c, cps, goodput_bps) = match kind {
                    None => (s.counters, second.cps, second.goodput_bps),
                    Some(k) => (s.templates[k], second.kinds[k].0, second.kinds[k].1),
                };
                let link = |v: String| if kind.is_none() { v } else { String::new() };
                [
                    format!("{:.3}", s.elapsed_s),
                    link(s.target_cps.map_or(String::new(), |r| format!("{r:.1}"))),
                    format!("{cps:.1}"),
                    c.attempted.to_string(),
                    c.established.to_string(),
                    c.active().to_string(),
                    c.closed.to_string(),
                    c.failed_timeout.to_string(),
                    c.failed_refused.to_string(),
                    c.closed_reset.to_string(),
                    c.closed_timeout.to_string(),
                    c.closed_bad_response.to_string(),
                    c.requests.to_string(),
                    c.responses.to_string(),
                    c.body_bytes.to_string(),
                    link(c.retransmitted.to_string()),
                    format!("{:.3}", goodput_bps / 1e6),
                    link(format!("{:.0}", s.rtt.p50_us)),
                    link(format!("{:.0}", s.rtt.p99_us)),
                    match kind {
                        None => "all".to_owned(),
                        Some(k) => self.report.templates[k].name.clone(),
                    },
                ]
            },
        )
    }

    fn plot(&self, path: &Path) -> Result<bool, ReportError> {
        let curve = |name: &str, dashed: bool, y: &dyn Fn(&Second) -> Option<f64>| {
            curve(name, dashed, &self.seconds, |s| s.snapshot.elapsed_s, y)
        };
        let mut rates = vec![curve("established a second", false, &|s| Some(s.cps))];
        if self.seconds.iter().any(|s| s.snapshot.target_cps.is_some()) {
            rates.push(curve("asked", true, &|s| s.snapshot.target_cps));
        }
        let panels = [
            panel("connections a second", rates),
            panel(
                "connections open",
                vec![curve("established, not ended", false, &|s| {
                    Some(s.snapshot.active as f64)
                })],
            ),
            panel(
                "segments sent again a second",
                vec![curve("retransmitted", false, &|s| {
                    Some(s.retransmitted_per_s)
                })],
            ),
        ];
        let title = format!("linerate tcp client: {} → {}", self.interface, self.server);
        plot_panels(path, &title, &panels).map(|()| true)
    }

    fn table(&self) -> String {
        summary(&self.report)
    }
}

fn summary(r: &ClientReport) -> String {
    let c = &r.counters;
    format!(
        "connections  attempted {}  established {}  closed {}  failed {} (timeout {}, refused {})  reset {}  timed out {}  bad response {}\n\
         requests     {}  responses {}  body bytes {}\n\
         rate         {:.0} connections/s  goodput {:.1} Mbit/s  over {:.2} s\n\
         connect      p50 {:.0} µs  p99 {:.0} µs   response p50 {:.0} µs  p99 {:.0} µs\n\
         segments     retransmitted {}   round trip p50 {:.0} µs  p99 {:.0} µs\n\
         {}",
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
        c.retransmitted,
        r.rtt.p50_us,
        r.rtt.p99_us,
        port_line(&r.link),
    )
}

/// The port's own counts: what it could not take or hand up is a loss no TCP counter explains.
fn port_line(l: &linerate_stateful::LinkCounters) -> String {
    format!(
        "port         frames sent {}  received {}  waited for room {}  dropped sending {}  receiving {}",
        l.tx_frames,
        l.rx_frames,
        l.tx_waits,
        l.tx_dropped,
        l.rx_dropped + l.rx_oversize,
    )
}

fn server(args: &TcpServerArgs) -> Result<()> {
    let config = server_config(args, "--address")?;
    let listening = SocketAddr::new(config.addresses.range.nth(0), args.port);
    // The files are reserved before the port opens: a bad path costs no run.
    let csv: Vec<_> = args.csv.iter().cloned().collect();
    let json = args.json.then_some(Path::new("-"));
    let outputs = Outputs::reserve(json, &csv, args.plot.as_deref())?;
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
        "tcp server on {}: listening on {listening}; Ctrl-C to stop",
        args.interface,
    );
    let mut seconds: Vec<ServerSecond> = Vec::new();
    let report = linerate_stateful::run_server(&mut link, &config, &stop, |s| {
        seconds.push(server_second(seconds.last(), s, ""));
    })
    .map_err(lift)?;
    let run = ServerRun {
        report,
        seconds,
        interface: args.interface.clone(),
        listening,
    };
    crate::output::wrote(&outputs.write(&run)?)
}

/// A server's second: its line on stderr, kept for the CSV and the plot.
fn server_second(last: Option<&ServerSecond>, s: &ServerSnapshot, who: &str) -> ServerSecond {
    let second = ServerSecond::after(last, s);
    let c = &s.counters;
    eprintln!(
        "{who}{:6.1}s  accepted {}  active {}  requests {}  responses {}  body bytes {}  retransmitted {}  {:.0} cps",
        s.elapsed_s,
        c.accepted,
        c.active(),
        c.requests,
        c.responses,
        c.body_bytes,
        c.retransmitted,
        second.cps
    );
    second
}

/// The server's configuration from its options; `address_flag` names its address's option
/// in an error.
fn server_config(args: &TcpServerArgs, address_flag: &str) -> Result<ServerConfig> {
    let (addr, len) = args
        .address
        .split_once('/')
        .and_then(|(a, l)| {
            let a = a.parse::<IpAddr>().ok()?;
            let most = if a.is_ipv4() { 32 } else { 128 };
            Some((a, l.parse::<u8>().ok().filter(|l| *l <= most)?))
        })
        .ok_or_else(|| {
            usage(format!(
                "{address_flag} {}: give ADDR/LEN, e.g. 10.0.0.1/24 or 2001:db8::1/64",
                args.address
            ))
        })?;
    let config = ServerConfig {
        addresses: Addresses {
            mac: args.mac,
            range: Range::single(addr),
            prefix_len: len,
            gateway: args.gateway,
            vlan: args.vlan,
            inner_vlan: args.inner_vlan,
            outer_tpid: args.outer_tpid,
        },
        port: args.port,
        default_bytes: args.response_bytes,
        max_bytes: 1 << 30,
        concurrent: args.concurrent,
        send_buffer: args.send_buffer as usize,
        timeout: args.timeout,
        time_wait: args.time_wait,
        replay: replay(args.profile.as_deref(), args.profile_check)?,
        think_recorded: match args.think {
            Think::Recorded if args.profile.is_none() => {
                return Err(usage(
                    "--think recorded waits a replay's own pauses: give --profile FILE too",
                ));
            }
            Think::Recorded => true,
            Think::After(t) if t.is_zero() => false,
            Think::After(_) => {
                return Err(usage(
                    "tcp server --think takes `recorded` (a replay's own pauses); a fixed server delay is not built",
                ));
            }
        },
        timestamps: !args.no_timestamps,
        seed: std::process::id().into(),
    };
    config.addresses.validate().map_err(lift)?;
    Ok(config)
}

/// One second of a server run, as the CSV and the plot show it.
#[derive(Debug, Clone, Copy)]
struct ServerSecond {
    snapshot: ServerSnapshot,
    /// Connections accepted a second since the last row.
    cps: f64,
    retransmitted_per_s: f64,
    /// Body bits sent a second since the last row.
    goodput_bps: f64,
}

impl ServerSecond {
    fn after(last: Option<&ServerSecond>, s: &ServerSnapshot) -> ServerSecond {
        let then = last.map(|l| (l.snapshot.elapsed_s, l.snapshot.counters));
        let (t, c0) = then.unwrap_or_default();
        let c = &s.counters;
        let per_s = |now: u64, then: u64| per_second(now - then, s.elapsed_s - t);
        ServerSecond {
            snapshot: *s,
            cps: per_s(c.accepted, c0.accepted),
            retransmitted_per_s: per_s(c.retransmitted, c0.retransmitted),
            goodput_bps: per_s(c.body_bytes, c0.body_bytes) * 8.0,
        }
    }
}

/// A server run: its report and its seconds.
struct ServerRun {
    report: ServerReport,
    seconds: Vec<ServerSecond>,
    interface: String,
    listening: SocketAddr,
}

impl Written for ServerRun {
    fn json(&self) -> String {
        report_json(&self.report)
    }

    fn csv(&self) -> Vec<String> {
        seconds_csv(
            [
                "elapsed_s",
                "cps",
                "accepted",
                "active",
                "closed",
                "reset",
                "bad_request",
                "timeout",
                "requests",
                "responses",
                "body_bytes",
                "retransmitted",
                "goodput_mbps",
                "rtt_p50_us",
                "rtt_p99_us",
            ],
            &self.seconds,
            |second| {
                let s = &second.snapshot;
                let c = &s.counters;
                [
                    format!("{:.3}", s.elapsed_s),
                    format!("{:.1}", second.cps),
                    c.accepted.to_string(),
                    c.active().to_string(),
                    c.closed.to_string(),
                    c.reset.to_string(),
                    c.bad_request.to_string(),
                    c.timeout.to_string(),
                    c.requests.to_string(),
                    c.responses.to_string(),
                    c.body_bytes.to_string(),
                    c.retransmitted.to_string(),
                    format!("{:.3}", second.goodput_bps / 1e6),
                    format!("{:.0}", s.rtt.p50_us),
                    format!("{:.0}", s.rtt.p99_us),
                ]
            },
        )
    }

    fn plot(&self, path: &Path) -> Result<bool, ReportError> {
        let curve = |name: &str, y: &dyn Fn(&ServerSecond) -> Option<f64>| {
            curve(name, false, &self.seconds, |s| s.snapshot.elapsed_s, y)
        };
        let panels = [
            panel(
                "connections a second",
                vec![curve("accepted a second", &|s| Some(s.cps))],
            ),
            panel(
                "connections open",
                vec![curve("accepted, not ended", &|s| {
                    Some(s.snapshot.counters.active() as f64)
                })],
            ),
            panel(
                "segments sent again a second",
                vec![curve("retransmitted", &|s| Some(s.retransmitted_per_s))],
            ),
        ];
        let title = format!(
            "linerate tcp server: {} on {}",
            self.interface, self.listening
        );
        plot_panels(path, &title, &panels).map(|()| true)
    }

    fn table(&self) -> String {
        let (r, c) = (&self.report, &self.report.counters);
        format!(
            "connections  accepted {}  closed {}  reset {}  bad request {}  timed out {}\n\
             requests     {}  responses {}  body bytes {}\n\
             segments     retransmitted {}   round trip p50 {:.0} µs  p99 {:.0} µs\n\
             {}",
            c.accepted,
            c.closed,
            c.reset,
            c.bad_request,
            c.timeout,
            c.requests,
            c.responses,
            c.body_bytes,
            c.retransmitted,
            r.rtt.p50_us,
            r.rtt.p99_us,
            port_line(&r.link)
        )
    }
}

/// `tcp both`: the server on its thread, listening before the client's first SYN; the client
/// on this one; the server stopped once the client has ended (every connection closed, or
/// Ctrl-C's stop), then one report of both.
fn both(args: &TcpBothArgs) -> Result<()> {
    let c = &args.client;
    if c.interface == args.server_interface && c.netns == args.server_netns {
        return Err(usage(format!(
            "tcp both: the client and the server on one interface ({}) would not see each other's frames: give the server its own port (--server-interface)",
            c.interface
        )));
    }
    let config = client_config(c)?;
    let server_args = TcpServerArgs {
        interface: args.server_interface.clone(),
        netns: args.server_netns.clone(),
        address: args.server_address.clone(),
        gateway: args.server_gateway,
        port: c.server.port(),
        mac: args.server_mac,
        vlan: args.server_vlan,
        inner_vlan: None,
        outer_tpid: linerate_stateful::QINQ_TPID,
        think: match c.think {
            Think::Recorded => Think::Recorded,
            Think::After(_) => Think::After(std::time::Duration::ZERO),
        },
        response_bytes: c.response_bytes,
        concurrent: args.server_concurrent,
        send_buffer: args.server_send_buffer,
        time_wait: args.server_time_wait,
        no_timestamps: c.no_timestamps,
        // A keep-alive connection idles the client's think time between requests: the
        // server waits that out before it calls it stalled.
        timeout: c.timeout + config.think,
        duration: None,
        json: false,
        csv: None,
        plot: None,
        profile: c.profile.clone(),
        profile_check: c.profile_check,
    };
    let server_config = server_config(&server_args, "--server-address")?;
    if server_config.addresses.range.is_ipv6() != config.server.is_ipv6() {
        return Err(usage(format!(
            "tcp both: --server-address {} and --server {} are of different families",
            args.server_address, config.server
        )));
    }
    if let Some((client_core, server_core)) = args.cores {
        crate::options::check_cores(&[client_core, server_core])?;
    }
    let listening = SocketAddr::new(server_config.addresses.range.nth(0), server_args.port);
    // The files are reserved before either port opens: a bad path costs no run.
    let csv: Vec<_> = c.csv.iter().chain(&args.server_csv).cloned().collect();
    let json = c.json.then_some(Path::new("-"));
    let outputs = Outputs::reserve(json, &csv, c.plot.as_deref())?;
    let server_plot = Outputs::reserve(None, &[], args.server_plot.as_deref())?;
    let mut server_link = PacketLink::open(
        &args.server_interface,
        args.server_netns.as_deref(),
        server_config.addresses,
    )
    .map_err(lift)?;
    let mut client_link =
        PacketLink::open(&c.interface, c.netns.as_deref(), config.addresses).map_err(lift)?;
    let stop = crate::signal::stop_flag()?;
    let server_stop = AtomicBool::new(false);
    eprintln!(
        "tcp both: server on {} listening on {listening}; client on {}: {} connections from {} to {}, {} at once{}; Ctrl-C to stop",
        args.server_interface,
        c.interface,
        config.connections,
        c.src,
        config.server,
        config.concurrent,
        pace(&config)
    );
    let (client, server) = std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let served = (|| {
                if let Some((_, core)) = args.cores {
                    pin_here(core)?;
                }
                let mut seconds: Vec<ServerSecond> = Vec::new();
                let report = linerate_stateful::run_server(
                    &mut server_link,
                    &server_config,
                    &server_stop,
                    |s| seconds.push(server_second(seconds.last(), s, "server ")),
                )
                .map_err(lift)?;
                Ok::<_, anyhow::Error>((report, seconds))
            })();
            if served.is_err() {
                // No server: the client opens nothing more (its open connections end by
                // their timeout) and the server's error is the run's.
                stop.store(true, Ordering::Relaxed);
            }
            served
        });
        let client = (|| {
            if let Some((core, _)) = args.cores {
                pin_here(core)?;
            }
            let mut seconds: Vec<Second> = Vec::new();
            let report = linerate_stateful::run_client(&mut client_link, &config, &stop, |s| {
                seconds.push(client_second(seconds.last(), s, "client "));
            })
            .context("running the TCP client")?;
            Ok::<_, anyhow::Error>((report, seconds))
        })();
        // The client is done (or failed): every connection it counts has closed, so the
        // server has nothing left to answer.
        server_stop.store(true, Ordering::Relaxed);
        let server = server
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (client, server)
    });
    let (client, server) = (client?, server.context("running the TCP server")?);
    let run = BothRun {
        client: ClientRun {
            report: client.0,
            seconds: client.1,
            interface: c.interface.clone(),
            server: config.server,
        },
        server: ServerRun {
            report: server.0,
            seconds: server.1,
            interface: args.server_interface.clone(),
            listening,
        },
        csv: (c.csv.is_some(), args.server_csv.is_some()),
    };
    crate::output::wrote(&outputs.write(&run)?)?;
    let plotted = server_plot.write(&run.server)?;
    for path in &plotted.files {
        eprintln!("wrote {}", path.display());
    }
    client_ended(&run.client.report, &config, &stop)
}

/// Runs the calling thread on `core` alone.
fn pin_here(core: usize) -> Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(core)
        .and_then(|()| nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set))
        .with_context(|| format!("running a thread on core {core}"))
}

/// Both ends' run: the JSON holds both reports, the CSV files are the client's (--csv) and
/// the server's (--server-csv) in that order, the plot is the client's, the table both.
struct BothRun {
    client: ClientRun,
    server: ServerRun,
    /// Which of the client's and the server's CSV files were asked for.
    csv: (bool, bool),
}

#[derive(serde::Serialize)]
struct BothReport<'a> {
    client: &'a ClientReport,
    server: &'a ServerReport,
}

impl Written for BothRun {
    fn json(&self) -> String {
        report_json(&BothReport {
            client: &self.client.report,
            server: &self.server.report,
        })
    }

    fn csv(&self) -> Vec<String> {
        let mut files = Vec::new();
        if self.csv.0 {
            files.extend(self.client.csv());
        }
        if self.csv.1 {
            files.extend(self.server.csv());
        }
        files
    }

    fn plot(&self, path: &Path) -> Result<bool, ReportError> {
        self.client.plot(path)
    }

    fn table(&self) -> String {
        format!(
            "client\n{}\nserver\n{}",
            self.client.table(),
            self.server.table()
        )
    }
}
