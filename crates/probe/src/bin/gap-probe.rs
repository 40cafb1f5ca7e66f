//! Stamps the UDP frames reaching an interface and prints their gap table:
//! `gap-probe -i IFACE [--netns NS] --target-ns 2000 --frames 200000 [--skip 1000] [--json]`.
//! It stops at `--frames` arrivals or after `--idle` seconds without one.

#[cfg(target_os = "linux")]
fn main() -> anyhow::Result<()> {
    use anyhow::Context;
    use clap::Parser;
    use std::time::{Duration, Instant};

    #[derive(Parser)]
    struct Args {
        #[arg(short, long)]
        iface: String,
        #[arg(long)]
        netns: Option<String>,
        /// The gap the sender was asked for (ns); 0: the mean of what arrived.
        #[arg(long, default_value_t = 0.0)]
        target_ns: f64,
        #[arg(long, default_value_t = 200_000)]
        frames: u32,
        /// Arrivals left out at the start (the sender's first moments).
        #[arg(long, default_value_t = 0)]
        skip: usize,
        /// Seconds without a new arrival (after the first) that end the wait.
        #[arg(long, default_value_t = 2.0)]
        idle: f64,
        /// Waits at most this long for the first frame (s).
        #[arg(long, default_value_t = 30.0)]
        first: f64,
        /// Also a Kolmogorov–Smirnov test against exponential gaps at the target rate.
        #[arg(long)]
        poisson: bool,
        #[arg(long)]
        json: bool,
        /// Also writes the stamps kept (ns, one a line) to this file.
        #[arg(long)]
        stamps: Option<std::path::PathBuf>,
    }
    let args = Args::parse();
    let probe = linerate_probe::Probe::attach(&args.iface, args.netns.as_deref(), args.frames)
        .context("attaching the probe")?;
    // Ready: a script waits for this line before it starts the sender.
    eprintln!("gap-probe: attached to {}", args.iface);
    let started = Instant::now();
    let (mut last, mut changed) = (0, Instant::now());
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let seen = probe.seen()?;
        if seen != last {
            (last, changed) = (seen, Instant::now());
        }
        let idle = changed.elapsed().as_secs_f64();
        if seen >= u64::from(args.frames)
            || (seen > 0 && idle > args.idle)
            || (seen == 0 && started.elapsed().as_secs_f64() > args.first)
        {
            break;
        }
    }
    let stamps = probe.stamps()?;
    let stamps = &stamps[args.skip.min(stamps.len())..];
    if let Some(path) = &args.stamps {
        let text: String = stamps.iter().map(|s| format!("{s}\n")).collect();
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let Some(mean) = linerate_probe::GapTable::of(stamps, 1.0) else {
        anyhow::bail!("fewer than two frames arrived on {}", args.iface);
    };
    let target = if args.target_ns > 0.0 {
        args.target_ns
    } else {
        mean.mean_ns
    };
    let table = linerate_probe::GapTable::of(stamps, target).expect("two stamps or more");
    let mut out = table.to_json();
    if args.poisson {
        let ks = linerate_probe::ks_exponential(stamps, 1e9 / target).expect("two stamps");
        out["ks_d"] = ks.d.into();
        out["ks_p"] = ks.p_value.into();
    }
    if args.json {
        println!("{out}");
    } else {
        let pct = |x: f64| format!("{:.1} %", 100.0 * x);
        println!(
            "{} frames, target {:.0} ns, mean {:.1} ns ({:.1} pps): ±64 {} ±128 {} ±256 {} ±512 {}, back to back {}, median {} ns, longest {} ns",
            table.frames,
            table.target_ns,
            table.mean_ns,
            table.rate_pps,
            pct(table.within[0]),
            pct(table.within[1]),
            pct(table.within[2]),
            pct(table.within[3]),
            pct(table.back_to_back),
            table.median_ns,
            table.max_ns
        );
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("gap-probe: XDP is Linux's");
    std::process::exit(2);
}
