//! `linerate console`: the OTG client's options from the flags, then the TUI or the text loop.

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use linerate_cli::ConsoleArgs;
use linerate_console::client::{ClientOptions, OtgClient};
use linerate_console::tui::{self, Options};

use crate::usage::usage;

pub fn run(args: &ConsoleArgs) -> Result<()> {
    let token = match (&args.token, &args.token_file) {
        (_, Some(file)) => Some(crate::options::read_token(file, "--token-file")?),
        (t, None) => t.clone(),
    };
    let ca = args
        .ca
        .as_ref()
        .map(|f| std::fs::read(f).map_err(|e| usage(format!("--ca {}: {e}", f.display()))))
        .transpose()?;
    if !(args.location.starts_with("https://") || args.location.starts_with("http://")) {
        return Err(usage(format!(
            "--location {}: give the server's URL, e.g. https://127.0.0.1:8443",
            args.location
        )));
    }
    if args.interval < Duration::from_millis(100) {
        return Err(usage("--interval: at least 100ms"));
    }
    let client = OtgClient::new(&ClientOptions {
        location: args.location.clone(),
        token,
        ca,
        timeout: Duration::from_secs(10),
    })
    .map_err(|e| usage(e.to_string()))?;
    let stop = crate::signal::stop_flag()?;
    let stopped = || stop.load(Ordering::Relaxed);
    let options = Options {
        interval: args.interval,
        location: args.location.clone(),
    };
    if args.no_tui {
        let mut out = std::io::stdout().lock();
        tui::print(&client, &options, &mut out, &stopped).context("print the table")
    } else {
        // A first reading before the screen is taken: a server that cannot be reached is one
        // line on a terminal left as it was.
        if let Err(e) = client.flows() {
            return Err(match e {
                linerate_console::ConsoleError::Transport(why) => anyhow::anyhow!(
                    "no OTG server answers at {} ({why}): start `linerate serve` there, or give \
                     its --location",
                    args.location
                ),
                other => anyhow::Error::new(other).context(args.location.clone()),
            });
        }
        tui::run(&client, &options, &stopped).context("the console")
    }
}
