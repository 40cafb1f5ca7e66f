//! `linerate sweep` and `linerate compare`: max rate at each frame size, measured at the sink
//! when there is one, and side-by-side comparisons of the result files.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context as _, Result};
use indicatif::{ProgressBar, ProgressStyle};
use linerate_engine::{Observer, RunConfig, Snapshot};
use linerate_report::{
    Context, MeasuredAt, OutputFile, Repetition, SizePoint, SweepResult,
    compare as compare_results, csv_repetitions, csv_summary, names_from_paths, plot_compare,
    plot_sweep, render_table, repetitions_csv_path,
};
use linerate_stream::{Plan, StreamSpec};

use crate::cli::{CompareArgs, SweepArgs};
use crate::output;
use crate::platform::{self, Receiver};
use crate::tx;
use crate::usage::{Interrupted, usage};

/// Shows the current rate on the progress bar while a run goes.
struct BarObserver<'a>(&'a ProgressBar);

impl Observer for BarObserver<'_> {
    fn tick(&self, s: &Snapshot) {
        self.0.set_message(format!("{:.3} Mpps", s.pps() / 1e6));
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
    let workers = tx::workers(&args.cores, args.queues.as_deref(), args.backend)?;
    let queues = workers.iter().map(|w| w.queue).max().unwrap_or(0) + 1;
    let lab = if args.lab {
        Some(platform::temp_lab(args.lab_name.as_deref(), queues.max(2))?)
    } else {
        None
    };
    let iface = match (&lab, &args.interface) {
        (Some(l), _) => l.sender.clone(),
        (None, Some(i)) => i.clone(),
        (None, None) => return Err(usage("give -i IFACE or --lab")),
    };
    let port = tx::open_interface(args.backend, &iface, &args.afxdp)?;
    let receiver: Option<Receiver> = match &args.sink_iface {
        Some(sink) => Some(platform::attach_sink(sink, args.sink_netns.as_deref())?),
        None => platform::receiver_of(&iface)?,
    };
    let link = args.link_speed.or(port.info().link_speed.map(|s| s.mbps()));
    // Every size is checked before the first frame goes out.
    let plans = args
        .sizes
        .iter()
        .map(|&size| {
            let spec = StreamSpec {
                size,
                ..StreamSpec::seed()
            };
            tx::compile(&[spec], port.info(), receiver.as_ref(), link)
                .with_context(|| format!("size {size}"))
        })
        .collect::<Result<Vec<Plan>>>()?;

    let stop = tx::stop_flag()?;
    let steps = args.sizes.len() as u64 * u64::from(args.repeat + 1);
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut points = Vec::new();
    let mut mode = String::new();
    // How the measuring ended: None when every size ran in full.
    let mut cut: Option<anyhow::Error> = None;
    'sizes: for (plan, &size) in plans.iter().zip(&args.sizes) {
        let mut repetitions = Vec::new();
        for rep in 0..=args.repeat {
            if stop.load(Ordering::Relaxed) {
                cut = Some(stopped());
                break;
            }
            let warmup = rep == 0;
            bar.set_prefix(format!("{size} B"));
            let config = RunConfig {
                workers: workers.clone(),
                batch: args.batch,
                duration: Some(if warmup { args.warmup } else { args.duration }),
                count: None,
                stop: stop.clone(),
                tick: Duration::from_millis(500),
            };
            let measured = (|| {
                let before = receiver.as_ref().map(|r| (r.counters)()).transpose()?;
                let report = port
                    .run(plan, &config, &BarObserver(&bar))
                    .with_context(|| format!("transmit {size}-byte frames on {iface}"))?;
                let rx = match (&receiver, before) {
                    (Some(r), Some(b)) => Some(tx::settle(r, b, report.completed)?),
                    _ => None,
                };
                anyhow::Ok((report, rx))
            })();
            let (report, rx) = match measured {
                Ok(m) => m,
                // What was measured before the failure is still written (marked), then the
                // failure is the command's error.
                Err(e) => {
                    if !repetitions.is_empty() {
                        points.push(SizePoint { size, repetitions });
                    }
                    cut = Some(e);
                    break 'sizes;
                }
            };
            // A run the stop cut short measured less than its duration: it is not a repetition.
            if stop.load(Ordering::Relaxed) {
                cut = Some(stopped());
                break;
            }
            if let Some(warning) = rx.as_ref().and_then(tx::SinkResult::shared_warning) {
                bar.suspend(|| eprintln!("linerate: warning: {size} B, run {rep}: {warning}"));
            }
            mode = report
                .workers
                .first()
                .map(|w| w.mode.clone())
                .unwrap_or_default();
            bar.inc(1);
            if !warmup {
                repetitions.push(Repetition {
                    tx_frames: report.completed,
                    tx_bytes: report.bytes,
                    rx_frames: rx.as_ref().map(|r| r.packets),
                    rx_bytes: rx.as_ref().map(|r| r.bytes),
                    elapsed_s: report.elapsed_s,
                });
            }
        }
        if !repetitions.is_empty() {
            points.push(SizePoint { size, repetitions });
        }
        if cut.is_some() {
            break;
        }
    }
    bar.finish_and_clear();
    if points.is_empty() {
        return Err(match cut {
            Some(e) if !e.is::<Interrupted>() => e,
            _ => Interrupted("stopped before any measurement: nothing written".into()).into(),
        });
    }
    let info = port.info();
    let mut context = Context::collect(env!("CARGO_PKG_VERSION"), info.backend, &mode, &iface);
    context.driver = info.driver.clone();
    context.link_speed_mbps = link;
    context.cores = args.cores.clone();
    context.queues = workers.iter().map(|w| w.queue).collect();
    context.duration_s = args.duration.as_secs_f64();
    context.repeat = args.repeat;
    context.warmup_s = args.warmup.as_secs_f64();
    let result = SweepResult {
        context,
        measured_at: if receiver.is_some() {
            MeasuredAt::Sink
        } else {
            MeasuredAt::TxCompletions
        },
        points,
        interrupted: cut.is_some(),
    };
    drop(receiver);
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
            output::println(&render_table(result))
        }
    }
}

/// A plot file: its format comes from the extension, and plotters writes it by path, so it must
/// be a regular file (drawn beside it, then renamed into place).
pub(crate) fn reserve_plot(path: &Path) -> Result<OutputFile> {
    linerate_report::PlotFormat::from_path(path)?;
    let out = OutputFile::reserve(path)?;
    if out.draw_path().is_none() {
        return Err(usage(format!(
            "--plot {}: a plot is written as a regular file, not to a device or pipe",
            path.display()
        )));
    }
    Ok(out)
}

pub(crate) fn draw(
    out: &OutputFile,
    plot: impl FnOnce(&Path) -> Result<(), linerate_report::ReportError>,
) -> Result<()> {
    let path = out
        .draw_path()
        .expect("reserve_plot takes regular files only");
    plot(path).map_err(|e| match e {
        // The error names the temporary file; the user knows the one they named.
        linerate_report::ReportError::Plot { message, .. } => linerate_report::ReportError::Plot {
            path: out.path().to_owned(),
            message,
        },
        other => other,
    })?;
    Ok(())
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
