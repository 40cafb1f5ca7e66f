//! `linerate sweep` and `linerate compare`: max rate at each frame size, measured at the sink
//! when there is one — on one backend, or on several interleaved (`--backends`) — and
//! side-by-side comparisons of the result files.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Result;
use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use linerate_engine::{Observer, Snapshot};
use linerate_report::{
    BackendSweeps, Context, MeasuredAt, Outputs, Skipped, SweepResult, compare as compare_results,
    draw, names_from_paths, plot_compare, reserve_plot, sweep_csv_paths,
};
use linerate_session::{Cut, PortNeeds, Sender, Sink, Sweep, SweepObserver, TempLab};

use crate::options;
use crate::output;
use crate::signal::stop_flag;
use crate::usage::{Interrupted, usage};
use linerate_cli::{Backends, CompareArgs, SweepArgs};

/// Shows the current rate on the progress bar while a run goes; when stderr is no terminal (a
/// log, CI), where the bar is hidden, a line a run instead, with the time left.
struct BarObserver<'a> {
    bar: &'a ProgressBar,
    /// Several backends take turns: the prefix names the one running.
    several: bool,
    lines: bool,
    started: Instant,
    /// The last rate a tick showed (f64 bits).
    last_pps: AtomicU64,
}

impl Observer for BarObserver<'_> {
    fn tick(&self, s: &Snapshot) {
        self.last_pps.store(s.pps().to_bits(), Ordering::Relaxed);
        self.bar.set_message(format!("{:.3} Mpps", s.pps() / 1e6));
    }
}

impl SweepObserver for BarObserver<'_> {
    fn run_starts(&self, size: usize, backend: &str) {
        self.last_pps.store(0, Ordering::Relaxed);
        if self.several {
            self.bar.set_prefix(format!("{size} B {backend}"));
        } else {
            self.bar.set_prefix(format!("{size} B"));
        }
    }

    fn run_done(&self) {
        self.bar.inc(1);
        if self.lines {
            let (done, all) = (self.bar.position(), self.bar.length().unwrap_or(0));
            let elapsed = self.started.elapsed().as_secs_f64();
            let left = elapsed / done.max(1) as f64 * all.saturating_sub(done) as f64;
            eprintln!(
                "sweep {done}/{all}: {} {:.3} Mpps ({:.0} s so far, about {:.0} s left)",
                self.bar.prefix(),
                f64::from_bits(self.last_pps.load(Ordering::Relaxed)) / 1e6,
                elapsed,
                left
            );
        }
    }

    fn warn(&self, text: &str) {
        self.bar.suspend(|| eprintln!("linerate: warning: {text}"));
    }
}

fn check_sizes(sizes: &[usize]) -> Result<()> {
    if sizes.is_empty() {
        return Err(usage("--sizes needs at least one size"));
    }
    for (i, size) in sizes.iter().enumerate() {
        if sizes[..i].contains(size) {
            return Err(usage(format!("--sizes names {size} twice")));
        }
    }
    Ok(())
}

fn progress_bar(steps: u64) -> ProgressBar {
    ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    )
}

pub fn run(args: &SweepArgs) -> Result<()> {
    check_sizes(&args.sizes)?;
    // Every output is checked and reserved before the first frame: a bad path costs nothing.
    let outputs = outputs(args)?;
    // With --backends each backend checks the workers for itself as it opens.
    let backend = match args.backends {
        None => args.backend.map(crate::options::backend),
        Some(_) => None,
    };
    let workers = linerate_session::workers(&args.cores, args.queues.as_deref(), backend)?;
    let queues = workers.iter().map(|w| w.queue).max().unwrap_or(0) + 1;
    let (lab, iface) = interface(args, queues)?;
    // The sink before the senders: on a veth whose peer it is, its program is what lets live
    // open, and what `auto` reads to choose live (issue 40 #14).
    let sink = match &args.sink_iface {
        Some(sink) => Some(Sink::attach(sink, args.sink_netns.as_deref())?),
        None => Sink::of_lab_counting(&iface)?,
    };
    let (senders, skipped) = open_senders(args, &iface)?;
    let first = &senders[0];
    let link = args
        .link_speed
        .or(first.info().link_speed.map(|s| s.mbps()));
    let plans = senders
        .iter()
        .map(|s| linerate_session::sweep_plans(&args.sizes, s, sink.as_ref(), link))
        .collect::<Result<Vec<_>, _>>()?;
    let steps = (args.sizes.len() * senders.len()) as u64 * u64::from(args.repeat + 1);
    let bar = progress_bar(steps);
    let sweep = Sweep {
        senders: senders.iter().collect(),
        interface: &iface,
        sink: sink.as_ref(),
        workers,
        batch: args.batch,
        duration: args.duration,
        warmup: args.warmup,
        repeat: args.repeat,
        stop: stop_flag()?,
    };
    let observer = BarObserver {
        bar: &bar,
        several: args.backends.is_some(),
        lines: !std::io::stderr().is_terminal(),
        started: Instant::now(),
        last_pps: AtomicU64::new(0),
    };
    let swept = sweep.run(&args.sizes, &plans, &observer);
    bar.finish_and_clear();
    let cut = swept.cut.map(|c| match c {
        Cut::Stopped => stopped(),
        Cut::Failed(e) => e.into(),
    });
    if swept.series.iter().all(|s| s.points.is_empty()) {
        return Err(match cut {
            Some(e) if !e.is::<Interrupted>() => e,
            _ => Interrupted("stopped before any measurement: nothing written".into()).into(),
        });
    }
    let measured_at = if sink.is_some() {
        MeasuredAt::Sink
    } else {
        MeasuredAt::TxCompletions
    };
    let results: Vec<SweepResult> = senders
        .iter()
        .zip(swept.series)
        .map(|(sender, series)| SweepResult {
            context: context(args, sender, &series.mode, &sweep, link),
            measured_at,
            points: series.points,
            interrupted: cut.is_some(),
        })
        .collect();
    drop(sweep);
    drop(sink);
    drop(senders);
    drop(lab);
    let measured = results.iter().map(|r| r.points.len()).max().unwrap_or(0);
    let wrote = match args.backends {
        None => outputs.write(&results[0])?,
        Some(_) => outputs.write(&BackendSweeps {
            sweeps: results,
            skipped,
        })?,
    };
    output::wrote(&wrote)?;
    match cut {
        None => Ok(()),
        Some(e) => Err(e.context(format!(
            "sweep cut short after {measured} of {} size(s); what was measured is written, marked interrupted",
            args.sizes.len()
        ))),
    }
}

/// The interface the sweep sends on: `-i`, or the sender of a lab of its own (`--lab`, with
/// `queues` per end), which goes when it is dropped.
fn interface(args: &SweepArgs, queues: u32) -> Result<(Option<TempLab>, String)> {
    if args.lab {
        let lab = TempLab::up(args.lab_name.as_deref(), queues.max(2))?;
        let iface = lab.sender.clone();
        return Ok((Some(lab), iface));
    }
    let iface = args.interface.clone();
    Ok((None, iface.ok_or_else(|| usage("give -i IFACE or --lab"))?))
}

/// The senders of the run: the one backend (`--backend`, or the platform's default), or each
/// of `--backends` that opens here. With `all`, one that cannot send here is skipped with its
/// reason, said now and kept for the report; a backend named in a list must open.
fn open_senders(args: &SweepArgs, iface: &str) -> Result<(Vec<Sender>, Vec<Skipped>)> {
    let needs = PortNeeds {
        queues: args.queues.is_some(),
        workers: args.cores.len().max(1),
    };
    let Some(backends) = &args.backends else {
        let backend = options::backend_or_default(args.backend, &args.afxdp);
        let port =
            Sender::open_interface(backend, iface, crate::options::afxdp(&args.afxdp), needs)?;
        return Ok((vec![port], Vec::new()));
    };
    let mut senders = Vec::new();
    let mut skipped = Vec::new();
    let mut first_error = None;
    for wanted in backends.wanted() {
        let name = wanted
            .to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default();
        let backend = crate::options::backend(wanted);
        let opened = linerate_session::workers(&args.cores, args.queues.as_deref(), Some(backend))
            .and_then(|_| {
                Sender::open_interface(backend, iface, crate::options::afxdp(&args.afxdp), needs)
            });
        match opened {
            Ok(sender) => senders.push(sender),
            Err(e) if *backends == Backends::All => {
                let why = crate::words::one_line(&e);
                eprintln!("linerate: note: {name} skipped: it cannot send on {iface} here: {why}");
                skipped.push(Skipped { backend: name, why });
                first_error.get_or_insert(e);
            }
            Err(e) => return Err(anyhow::Error::from(e).context(format!("--backends {name}"))),
        }
    }
    if let (true, Some(e)) = (senders.is_empty(), first_error) {
        // The first reason keeps its kind (a usage error exits 2); the others are said above.
        return Err(anyhow::Error::from(e).context(format!("no backend can send on {iface} here")));
    }
    Ok((senders, skipped))
}

/// Where and how `sender` ran in `sweep`, for its result.
fn context(
    args: &SweepArgs,
    sender: &Sender,
    mode: &str,
    sweep: &Sweep,
    link: Option<u64>,
) -> Context {
    let info = sender.info();
    let mut context = Context::collect(
        env!("CARGO_PKG_VERSION"),
        info.backend,
        mode,
        sweep.interface,
    );
    context.queues = sweep.workers.iter().map(|w| w.queue).collect();
    context.driver = info.driver.clone();
    context.backend_choice = sender.choice().map(crate::output::choice_json);
    context.link_speed_mbps = link;
    context.cores = sweep.workers.iter().filter_map(|w| w.core).collect();
    context.duration_s = args.duration.as_secs_f64();
    context.repeat = args.repeat;
    context.warmup_s = args.warmup.as_secs_f64();
    context
}

fn stopped() -> anyhow::Error {
    Interrupted("stopped by a signal".into()).into()
}

/// The files a sweep writes, reserved before it measures.
fn outputs(args: &SweepArgs) -> Result<Outputs> {
    let csv = args.csv.as_deref().map(sweep_csv_paths).unwrap_or_default();
    Ok(Outputs::reserve(
        args.json.as_deref(),
        &csv,
        args.plot.as_deref(),
    )?)
}

pub fn compare(args: &CompareArgs) -> Result<()> {
    let plot = match &args.plot {
        Some(p) => Some(reserve_plot(p)?),
        None => None,
    };
    let results = args
        .files
        .iter()
        .map(|f| SweepResult::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let names = names_from_paths(&args.files);
    let comparison = compare_results(&results, &names)?;
    output::println(&comparison.render_with(&results))?;
    if let Some(mut out) = plot {
        draw(&mut out, |p| {
            plot_compare(&results, &names, p).map(|()| true)
        })?;
        let path = out.path().to_owned();
        out.commit()?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
