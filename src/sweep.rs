//! `linerate sweep` and `linerate compare`: max rate at each frame size, measured at the sink
//! when there is one, and side-by-side comparisons of the result files.

use std::path::Path;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use linerate_engine::{Observer, Snapshot};
use linerate_report::{
    Context, MeasuredAt, OutputFile, SweepResult, compare as compare_results, csv_repetitions,
    csv_summary, names_from_paths, plot_compare, plot_sweep, render_table, repetitions_csv_path,
};
use linerate_session::{Backend, Cut, Sender, Sink, Sweep, SweepObserver, TempLab};

use crate::cli::{CompareArgs, SweepArgs};
use crate::options;
use crate::output::{self, draw, reserve_plot};
use crate::signal::stop_flag;
use crate::usage::{Interrupted, usage};

/// Shows the current rate on the progress bar while a run goes.
struct BarObserver<'a>(&'a ProgressBar);

impl Observer for BarObserver<'_> {
    fn tick(&self, s: &Snapshot) {
        self.0.set_message(format!("{:.3} Mpps", s.pps() / 1e6));
    }
}

impl SweepObserver for BarObserver<'_> {
    fn run_starts(&self, size: usize) {
        self.0.set_prefix(format!("{size} B"));
    }

    fn run_done(&self) {
        self.0.inc(1);
    }

    fn warn(&self, text: &str) {
        self.0.suspend(|| eprintln!("linerate: warning: {text}"));
    }
}

pub fn run(args: &SweepArgs) -> Result<()> {
    if args.sizes.is_empty() {
        return Err(usage("--sizes needs at least one size"));
    }
    for (i, size) in args.sizes.iter().enumerate() {
        if args.sizes[..i].contains(size) {
            return Err(usage(format!("--sizes names {size} twice")));
        }
    }
    // Every output is checked and reserved before the first frame: a bad path costs nothing.
    let outputs = Outputs::reserve(args)?;
    let backend = args.backend.map(Backend::from);
    let workers = linerate_session::workers(&args.cores, args.queues.as_deref(), backend)?;
    let queues = workers.iter().map(|w| w.queue).max().unwrap_or(0) + 1;
    let lab = if args.lab {
        Some(TempLab::up(args.lab_name.as_deref(), queues.max(2))?)
    } else {
        None
    };
    let iface = match (&lab, &args.interface) {
        (Some(l), _) => l.sender.clone(),
        (None, Some(i)) => i.clone(),
        (None, None) => return Err(usage("give -i IFACE or --lab")),
    };
    let backend = options::backend_or_default(args.backend, &args.afxdp);
    let port = Sender::open_interface(backend, &iface, (&args.afxdp).into())?;
    let sink = match &args.sink_iface {
        Some(sink) => Some(Sink::attach(sink, args.sink_netns.as_deref())?),
        None => Sink::of_lab(&iface)?,
    };
    let link = args.link_speed.or(port.info().link_speed.map(|s| s.mbps()));
    let plans = linerate_session::sweep_plans(&args.sizes, &port, sink.as_ref(), link)?;
    let steps = args.sizes.len() as u64 * u64::from(args.repeat + 1);
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let sweep = Sweep {
        sender: &port,
        interface: &iface,
        sink: sink.as_ref(),
        workers,
        batch: args.batch,
        duration: args.duration,
        warmup: args.warmup,
        repeat: args.repeat,
        stop: stop_flag()?,
    };
    let swept = sweep.run(&args.sizes, &plans, &BarObserver(&bar));
    bar.finish_and_clear();
    let cut = swept.cut.map(|c| match c {
        Cut::Stopped => stopped(),
        Cut::Failed(e) => e.into(),
    });
    if swept.points.is_empty() {
        return Err(match cut {
            Some(e) if !e.is::<Interrupted>() => e,
            _ => Interrupted("stopped before any measurement: nothing written".into()).into(),
        });
    }
    let info = port.info();
    let mut context =
        Context::collect(env!("CARGO_PKG_VERSION"), info.backend, &swept.mode, &iface);
    context.driver = info.driver.clone();
    context.backend_choice = port.choice().map(choice_json);
    context.link_speed_mbps = link;
    context.cores = args.cores.clone();
    context.queues = sweep.workers.iter().map(|w| w.queue).collect();
    context.duration_s = args.duration.as_secs_f64();
    context.repeat = args.repeat;
    context.warmup_s = args.warmup.as_secs_f64();
    let result = SweepResult {
        context,
        measured_at: if sink.is_some() {
            MeasuredAt::Sink
        } else {
            MeasuredAt::TxCompletions
        },
        points: swept.points,
        interrupted: cut.is_some(),
    };
    drop(sweep);
    drop(sink);
    drop(port);
    drop(lab);
    outputs.write(&result)?;
    match cut {
        None => Ok(()),
        Some(e) => Err(e.context(format!(
            "sweep cut short after {} of {} size(s); what was measured is written, marked interrupted",
            result.points.len(),
            args.sizes.len()
        ))),
    }
}

/// The report's record of what `--backend auto` chose.
pub fn choice_json(c: &linerate_port::ladder::Choice) -> linerate_report::BackendChoice {
    linerate_report::BackendChoice {
        backend: c.rung.backend().into(),
        why: c.why.clone(),
    }
}

/// The line above a table that states what `--backend auto` chose, as `tx`'s report does.
pub fn choice_line(c: Option<&linerate_report::BackendChoice>) -> String {
    c.map_or_else(String::new, |c| {
        format!("backend {}: {}\n", c.backend, c.why)
    })
}

fn stopped() -> anyhow::Error {
    Interrupted("stopped by a signal".into()).into()
}

/// The files a sweep writes, reserved before it measures (see [`OutputFile`]).
struct Outputs {
    /// None: the JSON goes to stdout (`--json -`) or nowhere.
    json: Option<OutputFile>,
    json_stdout: bool,
    csv: Option<(OutputFile, OutputFile)>,
    plot: Option<OutputFile>,
}

impl Outputs {
    fn reserve(args: &SweepArgs) -> Result<Self> {
        let json_stdout = args.json.as_deref() == Some(Path::new("-"));
        let json = match &args.json {
            Some(p) if !json_stdout => Some(OutputFile::reserve(p)?),
            _ => None,
        };
        let csv = match &args.csv {
            Some(p) => Some((
                OutputFile::reserve(p)?,
                OutputFile::reserve(&repetitions_csv_path(p))?,
            )),
            None => None,
        };
        let plot = match &args.plot {
            Some(p) => Some(reserve_plot(p)?),
            None => None,
        };
        Ok(Self {
            json,
            json_stdout,
            csv,
            plot,
        })
    }

    /// Writes every file, then the table (or the JSON) on stdout, and names each file on stderr.
    fn write(self, result: &SweepResult) -> Result<()> {
        let mut wrote = Vec::new();
        if let Some(out) = self.json {
            wrote.push(out.path().to_owned());
            out.write(result.to_json().as_bytes())?;
        }
        if let Some((summary, raw)) = self.csv {
            wrote.push(summary.path().to_owned());
            summary.write(csv_summary(result).as_bytes())?;
            wrote.push(raw.path().to_owned());
            raw.write(csv_repetitions(result).as_bytes())?;
        }
        if let Some(out) = self.plot {
            wrote.push(out.path().to_owned());
            draw(&out, |p| plot_sweep(result, p))?;
            out.commit()?;
        }
        for path in &wrote {
            eprintln!("wrote {}", path.display());
        }
        if self.json_stdout {
            output::print(&result.to_json())
        } else {
            output::println(&format!(
                "{}{}",
                choice_line(result.context.backend_choice.as_ref()),
                render_table(result)
            ))
        }
    }
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
    if let Some(out) = plot {
        draw(&out, |p| plot_compare(&results, &names, p))?;
        let path = out.path().to_owned();
        out.commit()?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
