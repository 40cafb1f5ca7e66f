//! `linerate sweep` and `linerate compare`: max rate at each frame size, measured at the sink
//! when there is one, and side-by-side comparisons of the result files.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context as _, Result};
use indicatif::{ProgressBar, ProgressStyle};
use linerate_engine::{Observer, RunConfig, Snapshot};
use linerate_report::{
    Context, MeasuredAt, Repetition, SizePoint, SweepResult, compare as compare_results,
    names_from_paths, plot_compare, plot_sweep, render_table, write_csv,
};
use linerate_stream::{Plan, StreamSpec};

use crate::cli::{CompareArgs, SweepArgs};
use crate::output;
use crate::platform::{self, Receiver};
use crate::tx;
use crate::usage;

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
    // A plot that cannot be drawn is refused before the sweep, not after it.
    if let Some(p) = &args.plot {
        linerate_report::PlotFormat::from_path(p)?;
    }
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
    for (plan, &size) in plans.iter().zip(&args.sizes) {
        let mut repetitions = Vec::new();
        for rep in 0..=args.repeat {
            if stop.load(Ordering::Relaxed) {
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
            let before = receiver.as_ref().map(|r| (r.counters)()).transpose()?;
            let report = port
                .run(plan, &config, &BarObserver(&bar))
                .with_context(|| format!("transmit {size}-byte frames on {iface}"))?;
            let rx = match (&receiver, before) {
                (Some(r), Some(b)) => Some(tx::settle(r, b, report.completed)?),
                _ => None,
            };
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
    }
    bar.finish_and_clear();
    if points.is_empty() {
        anyhow::bail!("stopped before any measurement");
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
    };
    drop(receiver);
    drop(port);
    drop(lab);
    write_outputs(args, &result)
}

fn write_outputs(args: &SweepArgs, result: &SweepResult) -> Result<()> {
    match args.json.as_deref() {
        Some(p) if p == Path::new("-") => println!("{}", result.to_json()),
        Some(p) => {
            result.save(p)?;
            println!("{}", render_table(result));
            eprintln!("wrote {}", p.display());
        }
        None => println!("{}", render_table(result)),
    }
    if let Some(p) = &args.csv {
        for written in write_csv(result, p)? {
            eprintln!("wrote {}", written.display());
        }
    }
    if let Some(p) = &args.plot {
        plot_sweep(result, p)?;
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

pub fn compare(args: &CompareArgs) -> Result<()> {
    let results = args
        .files
        .iter()
        .map(|f| SweepResult::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let names = names_from_paths(&args.files);
    let comparison = compare_results(&results, &names)?;
    output::println(&comparison.render_with(&results))?;
    if let Some(p) = &args.plot {
        plot_compare(&results, &names, p)?;
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}
