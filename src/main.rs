//! The `linerate` command: parses what the user asked for, hands it to the library crates, and
//! turns their typed errors into one clear line and an exit code (2 for usage errors).

mod cli;
mod output;
mod platform;
mod tx;
mod usage;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
pub(crate) use crate::usage::usage;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Tx(args) => tx::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("linerate: {}", one_line(&err));
            if usage::is_usage(&err) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// The error and its causes on one line, outermost first, without repeating a cause that the
/// outer message already quotes.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}
