//! MLRsearch against two RFC 2544 binary searches on the simulated tbf-like shaper: the trials
//! each method runs and the trial time each spends (the ratio quoted in docs/rfc2544.md).
//!
//! cargo run -p linerate-bench --example mlr_vs_binary

use std::time::Duration;

use linerate_bench::sim::Shaper;
use linerate_bench::{BinarySearch, FrameSize, Mlr, SearchGoal, TrialReport};

fn main() -> Result<(), linerate_bench::Error> {
    let size = FrameSize::new(64, 64)?;
    let shaper = Shaper {
        rate_fps: 387_654.0,
        bucket_bytes: 15_000.0,
    };
    let (min, max) = (1_488.095, 1_488_095.0);
    let final_d = Duration::from_secs(60);
    let (width, pdr) = (0.005, 0.005);
    println!(
        "device: shaper {} fps, bucket {} B; 64 B frames; loads {min}..{max} fps; width {width}; final trial {} s",
        shaper.rate_fps,
        shaper.bucket_bytes,
        final_d.as_secs()
    );
    println!(
        "known answers: NDR {:.1} fps, PDR(0.5 %) {:.1} fps",
        shaper.ndr(64, 60.0),
        shaper.pdr(64, 60.0, pdr)
    );

    let goals = vec![
        SearchGoal::new(0.0, final_d)?,
        SearchGoal::new(pdr, final_d)?,
    ];
    let mlr = Mlr::new(goals, min, max)?.search(size, &mut shaper.clone())?;
    println!("\nMLRsearch (NDR and PDR together):");
    print_trials(&mlr.trials);
    for g in &mlr.goals {
        println!(
            "  loss ratio {}: {:?}, lower {:.1?} upper {:.1?} conditional throughput {:.1?}",
            g.goal.loss_ratio,
            g.status,
            g.relevant_lower_fps,
            g.relevant_upper_fps,
            g.conditional_throughput_fps
        );
    }

    let mut binary_time = 0.0;
    for loss in [0.0, pdr] {
        let b =
            BinarySearch::new(loss, final_d, width, min, max)?.search(size, &mut shaper.clone())?;
        println!("\nbinary search, loss ratio {loss}:");
        print_trials(&b.trials);
        println!("  {:?}, throughput {:.1?}", b.status, b.throughput_fps);
        binary_time += b.trial_time_s;
    }
    println!(
        "\ntrial time: MLRsearch {:.1} s, two binary searches {:.1} s, ratio {:.3}",
        mlr.trial_time_s,
        binary_time,
        mlr.trial_time_s / binary_time
    );

    // The same comparison over shapers at other rates, so the figure is not one lucky point.
    let mut ratios = Vec::new();
    for i in 0..19 {
        let rate = max * (0.05 + 0.05 * f64::from(i)) * 1.013; // off the halving points
        let sh = Shaper {
            rate_fps: rate,
            bucket_bytes: 15_000.0,
        };
        let goals = vec![
            SearchGoal::new(0.0, final_d)?,
            SearchGoal::new(pdr, final_d)?,
        ];
        let m = Mlr::new(goals, min, max)?
            .search(size, &mut sh.clone())?
            .trial_time_s;
        let mut b = 0.0;
        for loss in [0.0, pdr] {
            b += BinarySearch::new(loss, final_d, width, min, max)?
                .search(size, &mut sh.clone())?
                .trial_time_s;
        }
        ratios.push(m / b);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "over {} shapers from 5 % to 96 % of the max load: ratio min {:.3}, median {:.3}, max {:.3}",
        ratios.len(),
        ratios[0],
        ratios[ratios.len() / 2],
        ratios[ratios.len() - 1]
    );
    Ok(())
}

fn print_trials(trials: &[TrialReport]) {
    for t in trials {
        println!(
            "  {:>12.1} fps {:>6.2} s  loss {:.5}",
            t.rate_fps, t.duration_s, t.loss_ratio
        );
    }
}
