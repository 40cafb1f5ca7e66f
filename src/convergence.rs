//! `linerate convergence`: the RFC 7747 benchmark on a `--dut bgp` lab (docs/convergence.md).
//! Parses the arguments into the library's settings, runs `linerate_convergence::run`, and
//! writes the table, JSON, CSV and plot.

use anyhow::{Context, Result};
use linerate_cli::convergence::{ConvergenceArgs, Event};
use linerate_convergence::ConvergenceError;
use linerate_convergence::run::{self, Settings};
use linerate_session::{Clock, PortOptions};
use linerate_stream::Rate;

use crate::usage::{Interrupted, usage};

/// `--rate` as frames per second of `size`-byte frames.
fn pps(text: &str, size: u32) -> Result<f64> {
    let rate: Rate = text
        .parse()
        .map_err(|e| usage(format!("--rate {text}: {e}")))?;
    // Frame bits on the wire: the frame with its FCS, plus preamble and gap for L1.
    let frame_bits = f64::from(size) * 8.0;
    match rate {
        Rate::Pps(p) => Ok(p),
        Rate::L2(bps) => Ok(bps / frame_bits),
        Rate::L1(bps) => Ok(bps / (frame_bits + 160.0)),
        Rate::Max | Rate::Percent(_) => Err(usage(format!(
            "--rate {text}: give frames per second (100k) or a bit rate (50Mbps): each flow's \
             rate is what its loss is divided by"
        ))),
    }
}

pub fn run(args: &ConvergenceArgs) -> Result<()> {
    let settings = Settings {
        lab: args.lab.clone(),
        prefixes: args.prefixes,
        event: match args.event {
            Event::Withdraw => run::Event::Withdraw,
            Event::Down => run::Event::Down,
        },
        rate_pps: pps(&args.rate, args.size)?,
        size: args.size,
        repeat: args.repeat,
        settle: args.settle,
        timeout: args.timeout,
        port: PortOptions::interface(""),
        rx: crate::options::serve_receive(false, Clock::Monotonic),
    };
    // Refused before anything starts: the lab, the counts, the rate.
    run::check(&settings).map_err(said)?;
    let stop = crate::signal::stop_flag()?;
    let report = run::run(&settings, &stop).map_err(said)?;
    if let Some(path) = &args.csv {
        std::fs::write(path, report.csv())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        report.plot(path)?;
    }
    let json = serde_json::to_string_pretty(&report).context("the report as JSON")?;
    match args.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => println!("{json}"),
        Some(p) => {
            std::fs::write(p, json + "\n").with_context(|| format!("writing {}", p.display()))?;
            print!("{}", report.table());
        }
        None => print!("{}", report.table()),
    }
    Ok(())
}

/// The library's error with the exit code it deserves.
fn said(e: ConvergenceError) -> anyhow::Error {
    match e {
        e if e.is_usage() => usage(e.to_string()),
        ConvergenceError::Interrupted => Interrupted("convergence".into()).into(),
        e => anyhow::Error::from(e),
    }
}
