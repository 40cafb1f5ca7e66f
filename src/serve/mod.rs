//! `linerate serve`: the Open Traffic Generator HTTP API (models v1.60.0, what snappi 1.60.0
//! speaks; docs/otg.md). The OTG side (models, mapping, refusals, metrics) is `linerate-otg`;
//! the ports, receivers, agents and captures are the test bed's (`linerate-testbed`: a config's
//! bed runs on a thread of its own, its counts are read from any thread). These modules are the
//! HTTP handlers only, on `linerate-listener`'s socket (TLS by rustls with a certificate made
//! at start, the accept loop, the connection pools): `api` (routes and guards), one module of
//! handlers per OTG area (`config`, `control`, `metrics`, `hosts`, `capture`, `routing`) and
//! the agent's routes (`agent`), over `state`. Imports go one way: this file → api → handlers
//! → state.

use std::sync::Arc;

use anyhow::{Context, Result};
use linerate_agent::tls::TlsError;
use linerate_otg as otg;

use linerate_cli::{AgentArgs, ServeArgs};

mod agent;
mod api;
mod capture;
mod config;
mod control;
mod hosts;
mod metrics;
mod routing;
mod state;
mod ui;

use state::App;

pub fn run(args: ServeArgs) -> Result<()> {
    let controller = crate::options::controller(&args.controller)?;
    start(args, None, controller)
}

/// `linerate agent`: serve with the agent's routes, its lease and its start clock.
pub fn agent(args: AgentArgs) -> Result<()> {
    crate::options::check_agent(&args)?;
    let lease = linerate_agent::Lease::new(args.lease, crate::options::start_clock(args.clock));
    start(args.api, Some(lease), None)
}

fn start(
    mut args: ServeArgs,
    agent: Option<linerate_agent::Lease>,
    controller: Option<linerate_testbed::Controller>,
) -> Result<()> {
    if let Some(file) = &args.token_file {
        args.token = Some(crate::options::read_token(file, "--token-file")?);
    }
    crate::options::check_serve(&args)?;
    if args.http && args.token.is_some() && !args.listen.ip().is_loopback() {
        eprintln!(
            "linerate serve: warning: --http on {}: the bearer token travels in clear text \
             (drop --http for TLS)",
            args.listen
        );
    }
    let tls = if args.http {
        None
    } else {
        Some(tls_config(&args)?)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("start the HTTP runtime")?;
    let app = Arc::new(App {
        inner: std::sync::Mutex::new(state::Inner::default()),
        configuring: tokio::sync::Mutex::new(()),
        owner: owner(&args),
        args,
        agent,
        controller,
    });
    if app.agent.is_some() {
        runtime.spawn(agent::watch(Arc::clone(&app)));
    }
    let result = runtime.block_on(serve(Arc::clone(&app), tls));
    // Ctrl-C or SIGTERM: stop traffic, detach programs (dropping the port thread, the receiver
    // and the captures does both), then exit.
    app.teardown();
    result
}

/// The listener's TLS: `--tls-cert` and `--tls-key`, else a certificate made at start.
fn tls_config(args: &ServeArgs) -> Result<Arc<rustls::ServerConfig>> {
    let given = args.tls_cert.as_deref().zip(args.tls_key.as_deref());
    let names = vec!["localhost".to_string(), args.listen.ip().to_string()];
    linerate_agent::tls::server_config(given, names).map_err(|e| match (e, given) {
        (e @ TlsError::Mismatch(_), Some((cert, key))) => crate::usage(format!(
            "--tls-cert {} with --tls-key {}: {e}",
            cert.display(),
            key.display()
        )),
        (e, _) if e.is_usage() => crate::usage(format!("--tls-cert/--tls-key: {e}")),
        (e, _) => anyhow::Error::from(e),
    })
}

/// Serves the API until Ctrl-C or SIGTERM, after one line a script can wait for (the port,
/// when --listen asked for port 0).
async fn serve(app: Arc<App>, tls: Option<Arc<rustls::ServerConfig>>) -> Result<()> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let slots = usize::from(app.args.max_connections);
    let listener =
        linerate_listener::Listener::bind(app.args.listen, tls, slots, app.owner).await?;
    let role = if app.agent.is_some() {
        "agent"
    } else {
        "serve"
    };
    let local = listener.local_addr();
    eprintln!(
        "linerate {role}: OTG API {} on {scheme}://{local}",
        otg::API_SPEC_VERSION
    );
    let forbidden = api::forbidden(app.owner.unwrap_or(0));
    listener
        .serve(api::router(Arc::clone(&app)), forbidden)
        .await?;
    eprintln!("linerate {role}: stopping");
    Ok(())
}

/// Who may drive a loopback listen without a token: the user who started serve (and root), as
/// the kernel's socket table says of the client's end. None: the token (or nothing) decides.
fn owner(args: &ServeArgs) -> Option<u32> {
    let sudo = std::env::var("SUDO_UID").ok();
    (args.listen.ip().is_loopback() && args.token.is_none())
        .then(|| linerate_sys::started_by(nix::unistd::geteuid().as_raw(), sudo.as_deref()))
}
