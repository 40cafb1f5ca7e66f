//! The one place the command line's argument types become the library's options: every
//! conversion from a clap type to a `linerate_session` type is here.

use anyhow::Result;
use linerate_session as session;
use linerate_session::{
    AfXdpOptions, Backend, Clock, PortOptions, ReceiverOptions, RxAttach, RxTarget, XdpAttach,
    XdpMode,
};

use crate::usage;
use linerate_cli::rfc2544::{Search, Test};
use linerate_cli::{
    self as cli, AfXdpArgs, AttachArg, ClockArg, ReceiverArgs, SendArgs, XdpModeArg,
};

/// The backend a `--backend` names.
pub fn backend(b: cli::Backend) -> Backend {
    match b {
        cli::Backend::Auto => Backend::Auto,
        cli::Backend::Afxdp => Backend::Afxdp,
        cli::Backend::Afpacket => Backend::Afpacket,
        cli::Backend::Bpf => Backend::Bpf,
        cli::Backend::Live => Backend::Live,
        cli::Backend::Pcap => Backend::Pcap,
        cli::Backend::Null => Backend::Null,
    }
}

pub fn afxdp(a: &AfXdpArgs) -> AfXdpOptions {
    AfXdpOptions {
        mode: match a.xdp_mode {
            XdpModeArg::Auto => XdpMode::Auto,
            XdpModeArg::Zerocopy => XdpMode::ZeroCopy,
            XdpModeArg::Copy => XdpMode::Copy,
        },
        attach: match a.attach {
            AttachArg::Auto => XdpAttach::Auto,
            AttachArg::Drv => XdpAttach::Drv,
            AttachArg::Skb => XdpAttach::Skb,
        },
        need_wakeup: !a.no_need_wakeup,
    }
}

pub fn clock(c: ClockArg) -> Clock {
    match c {
        ClockArg::Monotonic => Clock::Monotonic,
        ClockArg::Tai => Clock::Tai,
    }
}

pub fn rx_attach(a: cli::XdpAttach) -> RxAttach {
    match a {
        cli::XdpAttach::Drv => RxAttach::Drv,
        cli::XdpAttach::Skb => RxAttach::Skb,
    }
}

pub fn receiver(a: &ReceiverArgs) -> ReceiverOptions {
    ReceiverOptions {
        flows: a.rx_flows,
        hist_flows: a.rx_hist_flows,
        clock: clock(a.clock),
        pass: a.rx_pass,
        every_frame: a.rx_time_every_frame,
        gaps: a.rx_gaps,
    }
}

pub fn test(t: Test) -> linerate_report::rfc2544::Test {
    use linerate_report::rfc2544::Test as T;
    match t {
        Test::Throughput => T::Throughput,
        Test::Latency => T::Latency,
        Test::Loss => T::Loss,
        Test::BackToBack => T::BackToBack,
        Test::All => T::All,
    }
}

pub fn search(s: Search) -> linerate_report::rfc2544::Search {
    use linerate_report::rfc2544::Search as S;
    match s {
        Search::Mlr => S::Mlr,
        Search::Binary => S::Binary,
    }
}

/// The backend asked for, else the platform's (see [`interface_default`]).
pub fn backend_or_default(backend: Option<cli::Backend>, afxdp: &AfXdpArgs) -> Backend {
    backend.map_or_else(|| interface_default(afxdp), self::backend)
}

/// The platform's backend on an interface, unless an AF_XDP flag was given: that names AF_XDP,
/// where `auto` might choose a backend the flag does not apply to.
fn interface_default(afxdp: &AfXdpArgs) -> Backend {
    let asked = afxdp.xdp_mode != XdpModeArg::Auto
        || afxdp.attach != AttachArg::Auto
        || afxdp.no_need_wakeup;
    if asked && cfg!(target_os = "linux") {
        Backend::Afxdp
    } else {
        Backend::platform_default()
    }
}

/// The backend `tx` and `replay` use: the one asked, else the one -i, --pcap or --null implies.
/// `nothing` is the sentence for none of them.
pub fn send_backend(send: &SendArgs, nothing: &str) -> Result<Backend> {
    Ok(
        match (send.backend, &send.interface, &send.pcap, send.null) {
            (Some(b), _, _, _) => backend(b),
            (None, _, Some(_), _) => Backend::Pcap,
            (None, _, _, true) => Backend::Null,
            (None, Some(_), _, _) => interface_default(&send.afxdp),
            (None, None, None, false) => return Err(usage(nothing)),
        },
    )
}

/// The port `tx` and `replay` describe with their shared flags.
pub fn send_port(send: &SendArgs, backend: Backend) -> PortOptions {
    PortOptions {
        backend,
        interface: send.interface.clone(),
        pcap: send.pcap.clone(),
        mtu: send.port.mtu,
        afxdp: afxdp(&send.afxdp),
        cores: send.port.cores.clone(),
        queues: send.queues.clone(),
        batch: send.batch,
        link_speed: send.port.link_speed,
        clock: clock(send.receiver.clock),
    }
}

/// The receiver `--rx` asks for: "" is the lab's receive end.
pub fn send_rx(target: &str, send: &SendArgs) -> RxTarget {
    RxTarget {
        at: (!target.is_empty()).then(|| target.to_owned()),
        attach: rx_attach(send.rx_mode),
        receiver: receiver(&send.receiver),
    }
}

/// When a `tx` or `replay` run ends.
pub fn send_end(send: &SendArgs, count: Option<u64>) -> session::End {
    session::End {
        duration: send.duration,
        count,
    }
}

/// A token kept in a file (a Kubernetes Secret, a file only its owner reads): its first line,
/// trimmed. At most the first 4 KiB are read: a file with no line end (`/dev/zero`) must not
/// keep the command from starting or ending.
#[cfg(target_os = "linux")]
pub fn read_token(file: &std::path::Path, flag: &str) -> Result<String> {
    use std::io::Read;
    const MAX_LINE: usize = 4096;
    let failed = |why: String| usage(format!("{flag} {}: {why}", file.display()));
    let mut head = Vec::with_capacity(MAX_LINE + 1);
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_LINE as u64 + 1).read_to_end(&mut head))
        .map_err(|e| failed(e.to_string()))?;
    let line = match head.iter().position(|&b| b == b'\n') {
        Some(end) => &head[..end],
        None if head.len() <= MAX_LINE => &head[..],
        None => {
            return Err(failed(format!(
                "no line end in its first 4 KiB: put the token (at most {MAX_LINE} bytes) on its first line"
            )));
        }
    };
    let token = std::str::from_utf8(line)
        .map_err(|_| failed("the first line is not UTF-8 text: put the token on it".into()))?
        .trim()
        .to_owned();
    if token.is_empty() {
        return Err(failed(
            "the file is empty: put the token on its first line".into(),
        ));
    }
    Ok(token)
}

/// How the controller reaches agents; None without `--agent-token-file` (ports on agents are
/// then refused).
#[cfg(target_os = "linux")]
pub fn controller(
    args: &linerate_cli::ControllerArgs,
) -> Result<Option<linerate_testbed::Controller>> {
    let Some(file) = &args.agent_token_file else {
        return Ok(None);
    };
    let token = read_token(file, "--agent-token-file")?;
    let ca = match &args.agent_ca {
        Some(f) => {
            let failed = |why: String| usage(format!("--agent-ca {}: {why}", f.display()));
            let pem = std::fs::read(f).map_err(|e| failed(e.to_string()))?;
            // Checked here, once: taken as it was, a wrong file failed every agent's setup.
            let roots = linerate_agent::client::ca_roots(&pem).map_err(failed)?;
            for (i, root) in roots.iter().enumerate() {
                rustls::RootCertStore::empty()
                    .add(rustls::pki_types::CertificateDer::from(root.der()))
                    .map_err(|e| {
                        failed(format!(
                            "certificate {} is not one a CA can be read from ({e}): give the agents' CA certificate in PEM",
                            i + 1
                        ))
                    })?;
            }
            Some(pem)
        }
        None => {
            if !args.agent_http {
                eprintln!(
                    "linerate: warning: no --agent-ca: agents' certificates are not checked \
                     (the token still guards them; give their CA to be sure who answers)"
                );
            }
            None
        }
    };
    Ok(Some(linerate_testbed::Controller {
        client: linerate_agent::client::ClientOptions {
            token,
            ca,
            http: args.agent_http,
            // Longest wait for one agent's answer.
            timeout: std::time::Duration::from_secs(5),
        },
        tolerance: args.sync_tolerance,
        strict: args.strict_sync,
        id: linerate_testbed::Controller::new_id(),
    }))
}

/// Refuses at start what would only fail later (a 500 at the first metrics call, a 413 for every
/// POST, a port thread that cannot pin its worker).
#[cfg(target_os = "linux")]
pub fn check_serve(args: &linerate_cli::ServeArgs) -> Result<()> {
    if !args.listen.ip().is_loopback() && args.token.is_none() {
        return Err(usage(format!(
            "--listen {} is reachable from other hosts: give --token T (clients send \
             'Authorization: Bearer T') or listen on 127.0.0.1",
            args.listen
        )));
    }
    // Bytes a header carries as they are: spaces would be trimmed by clients and proxies, and
    // a two-byte character is half the guessing it looks like.
    let printable = |t: &str| t.bytes().all(|b| b.is_ascii_graphic());
    if let Some(t) = args.token.as_deref()
        && (t.len() < 16 || !printable(t))
    {
        return Err(usage(
            "--token needs at least 16 characters, each printable ASCII other than a space \
             (a guessable token guards nothing)",
        ));
    }
    // Checked here, not at the first set_config: a config's ports are interfaces, and the
    // other backends would fail there as a 500 naming flags serve does not have (pcap) or send
    // nowhere (null).
    if let Some(b @ (cli::Backend::Pcap | cli::Backend::Null | cli::Backend::Bpf)) = args.backend {
        return Err(usage(format!(
            "--backend {}: serve transmits on the config's interfaces; use auto, afxdp, afpacket or live",
            clap::ValueEnum::to_possible_value(&b)
                .map_or_else(String::new, |v| v.get_name().to_owned())
        )));
    }
    if args.max_body == 0 {
        return Err(usage(
            "--max-body 0 would refuse every request with a body: give a size in bytes",
        ));
    }
    check_cores(&args.cores)
}

/// Each core once, and each one this process may run on.
#[cfg(target_os = "linux")]
pub fn check_cores(cores: &[usize]) -> Result<()> {
    linerate_session::workers(cores, None, None).map_err(|e| usage(format!("--cores: {e}")))?;
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .map_err(|e| anyhow::anyhow!("read this process's CPU set: {e}"))?;
    match cores.iter().find(|&&c| !allowed.is_set(c).unwrap_or(false)) {
        Some(c) => Err(usage(format!(
            "--cores {c}: this process may not run on core {c} (it may run on {})",
            (0..nix::sched::CpuSet::count())
                .filter(|&i| allowed.is_set(i).unwrap_or(false))
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ))),
        None => Ok(()),
    }
}

/// Refuses what only a controller takes, and a lease too short to be renewed.
#[cfg(target_os = "linux")]
pub fn check_agent(args: &linerate_cli::AgentArgs) -> Result<()> {
    let c = &args.api.controller;
    if c.agent_token_file.is_some() || c.agent_ca.is_some() || c.agent_http || c.strict_sync {
        return Err(usage(
            "--agent-token-file, --agent-ca, --agent-http and --strict-sync are the controller's: \
             give them to linerate serve",
        ));
    }
    if args.lease < std::time::Duration::from_millis(500) {
        return Err(usage(format!(
            "--lease {:?}: under 500ms a busy controller would lose its agents; give 1s or more",
            args.lease
        )));
    }
    Ok(())
}

/// serve keeps AF_XDP unless told: its runs are the OTG client's, not auto's to reroute.
#[cfg(target_os = "linux")]
fn serve_backend(app: &cli::ServeArgs) -> Backend {
    app.backend.map_or(Backend::Afxdp, backend)
}

/// The options every port of a config opens with: serve's backend, AF_XDP settings and cores.
#[cfg(target_os = "linux")]
pub fn serve_port(app: &cli::ServeArgs, interface: &str) -> PortOptions {
    let mut options = PortOptions::interface(interface);
    options.backend = serve_backend(app);
    options.afxdp = afxdp(&app.afxdp);
    options.cores = app.cores.clone();
    options
}

/// The receive options of every place of a config: the driver's hook, frames passed on to the
/// stack where a capture needs them.
#[cfg(target_os = "linux")]
pub fn serve_receive(pass: bool, clock: Clock) -> RxTarget {
    RxTarget {
        at: None,
        attach: RxAttach::Drv,
        receiver: ReceiverOptions {
            pass,
            clock,
            ..ReceiverOptions::default()
        },
    }
}

#[cfg(target_os = "linux")]
pub fn start_clock(c: cli::AgentClock) -> linerate_agent::StartClock {
    match c {
        cli::AgentClock::Realtime => linerate_agent::StartClock::Realtime,
        cli::AgentClock::Tai => linerate_agent::StartClock::Tai,
    }
}
