//! The `linerate` command: parses what the user asked for, hands it to the library crates, and
//! turns their typed errors into one clear line and an exit code (2 for usage errors).

#[cfg(target_os = "linux")]
mod console;
#[cfg(target_os = "linux")]
mod convergence;
mod generate;
#[cfg(target_os = "linux")]
mod host_routing;
#[cfg_attr(target_os = "linux", path = "lab.rs")]
#[cfg_attr(not(target_os = "linux"), path = "lab_other.rs")]
mod lab;
mod options;
mod output;
mod ports;
mod replay;
mod rfc2544;
#[cfg_attr(target_os = "linux", path = "rx.rs")]
#[cfg_attr(not(target_os = "linux"), path = "rx_other.rs")]
mod rx;
#[cfg(target_os = "linux")]
mod serve;
mod signal;
mod stats;
mod sweep;
#[cfg(target_os = "linux")]
mod tcp;
mod tx;
mod usage;
mod words;

use std::process::ExitCode;

use clap::Parser;

pub(crate) use crate::usage::usage;
use linerate_cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return clap_error(err),
    };
    let result = match cli.command {
        Command::Tx(args) => tx::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Lab { action } => lab::run(&action),
        Command::Sink(args) => lab::sink(&args),
        Command::Rx(args) => rx::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Compare(args) => sweep::compare(&args),
        Command::Ports(args) => ports::run(&args),
        Command::Rfc2544(args) => rfc2544::run(&args),
        #[cfg(target_os = "linux")]
        Command::Convergence(args) => convergence::run(&args),
        #[cfg(not(target_os = "linux"))]
        Command::Convergence(_) => Err(usage(
            "linerate convergence runs on Linux for now (its devices' BGP speakers and the BGP lab are Linux's)",
        )),
        #[cfg(target_os = "linux")]
        Command::Serve(args) => serve::run(*args),
        #[cfg(not(target_os = "linux"))]
        Command::Serve(_) => Err(usage(
            "linerate serve runs on Linux for now (its receive side and captures are Linux's)",
        )),
        #[cfg(target_os = "linux")]
        Command::Agent(args) => serve::agent(*args),
        #[cfg(not(target_os = "linux"))]
        Command::Agent(_) => Err(usage(
            "linerate agent runs on Linux for now (its ports' receive side is Linux's XDP)",
        )),
        #[cfg(target_os = "linux")]
        Command::Console(args) => console::run(&args),
        #[cfg(not(target_os = "linux"))]
        Command::Console(_) => Err(usage(
            "linerate console runs on Linux for now (its OTG client's TLS is built there)",
        )),
        #[cfg(target_os = "linux")]
        Command::Tcp { action } => tcp::run(&action),
        #[cfg(not(target_os = "linux"))]
        Command::Tcp { .. } => Err(usage(
            "linerate tcp runs on Linux for now (its port is a packet socket)",
        )),
        Command::Completions(args) => generate::completions(&args),
        Command::Man(args) => generate::man(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let (code, say) = usage::exit_code(&err);
            if say {
                eprintln!("linerate: {}", words::one_line(err.as_ref()));
            }
            ExitCode::from(code)
        }
    }
}

/// Help and version print as clap likes; a parse error becomes our one line and exit code 2.
fn clap_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        return ExitCode::SUCCESS;
    }
    if let Some(line) = misplaced_flag(&err, std::env::args().nth(1).as_deref()) {
        eprintln!("linerate: {line}");
        return ExitCode::from(2);
    }
    eprintln!(
        "linerate: {} (see --help)",
        clap_line(&err.render().to_string())
    );
    ExitCode::from(2)
}

/// A flag another command takes, given where its own flag has another name: clap's tip (pass it
/// after `--` as a value) would lead astray.
fn misplaced_flag(err: &clap::Error, command: Option<&str>) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = arg.split('=').next().unwrap_or(arg);
    match (command, flag) {
        (Some("rfc2544"), "--rate") => Some(
            "rfc2544 searches for the rate itself: give --max-rate (the highest load it tries, e.g. --max-rate 1M), not --rate (see --help)".into(),
        ),
        _ => None,
    }
}

/// clap's message on one line: every paragraph but the usage block and the pointer to --help.
/// The first line alone often ends in "cannot be used with:" and leaves out the argument it is
/// about, and the "tip: a similar argument exists" paragraph is what a typo needs.
fn clap_line(text: &str) -> String {
    let mut line = String::new();
    let paragraphs = text.split("\n\n").filter(|p| {
        let p = p.trim_start();
        !p.starts_with("Usage:") && !p.starts_with("For more information")
    });
    for part in paragraphs.flat_map(str::lines) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let part = part.strip_prefix("error: ").unwrap_or(part);
        if !line.is_empty() && !line.ends_with(':') {
            line.push(';');
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(part);
    }
    line
}
