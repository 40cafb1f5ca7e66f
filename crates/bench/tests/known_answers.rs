//! Each search against a simulated device whose answer is known in closed form (see `sim`).

use std::time::Duration;

use linerate_bench::sim::{DelayLine, Noisy, Queue, RandomLoss, Rng, Shaper};
use linerate_bench::{
    BackToBack, BinarySearch, DEFAULT_BACK_TO_BACK_TRIALS, DEFAULT_LATENCY_TRIALS, Error,
    FrameLoss, FrameSize, GoalStatus, LatencyTest, Mlr, SearchGoal,
};

const SIZE: u32 = 64;
/// 64-byte frames at 1 GbE: 10^9 / ((64 + 20) · 8).
const LINE_1G_64: f64 = 1_488_095.0;
const FINAL: Duration = Duration::from_secs(60);
const WIDTH: f64 = 0.005;
const PDR: f64 = 0.005;

fn size() -> FrameSize {
    FrameSize::new(SIZE, 64).unwrap()
}

/// 387,654 fps with a bucket of ten 1500-byte frames: a shaper admitting an odd rate, so no
/// search lands on it by halving.
fn shaper() -> Shaper {
    Shaper {
        rate_fps: 387_654.0,
        bucket_bytes: 15_000.0,
    }
}

fn ndr_pdr() -> Vec<SearchGoal> {
    vec![
        SearchGoal::new(0.0, FINAL).unwrap(),
        SearchGoal::new(PDR, FINAL).unwrap(),
    ]
}

/// What the shaper admits in a full-length trial is the answer: the NDR is within the width
/// below R + B / (size · 60 s) (R + 3.9 fps), the PDR within the width below that / (1 − 0.005).
#[test]
fn mlr_finds_ndr_and_pdr_of_a_shaper() {
    let sh = shaper();
    let mlr = Mlr::new(ndr_pdr(), LINE_1G_64 / 1000.0, LINE_1G_64).unwrap();
    let r = mlr.search(size(), &mut sh.clone()).unwrap();
    let want = [sh.ndr(SIZE, 60.0), sh.pdr(SIZE, 60.0, PDR)];
    for (g, want) in r.goals.iter().zip(want) {
        assert_eq!(g.status, GoalStatus::Regular, "{g:?}");
        let (lo, up) = (g.relevant_lower_fps.unwrap(), g.relevant_upper_fps.unwrap());
        assert!(lo <= want && up > want, "{lo} .. {up} must bracket {want}");
        assert!(
            (up - lo) / up <= WIDTH * (1.0 + 1e-9),
            "{lo} .. {up} wider than {WIDTH}"
        );
        assert!(
            lo > want * (1.0 - WIDTH),
            "{lo} not within {WIDTH} of {want}"
        );
        // Conditional throughput: what came through at the lower bound.
        let ct = g.conditional_throughput_fps.unwrap();
        assert!(
            ct <= lo && ct >= lo * (1.0 - g.goal.loss_ratio),
            "{ct} vs {lo}"
        );
    }
    // The lower bounds are confirmed by full-length trials only.
    for g in &r.goals {
        let lo = g.relevant_lower_fps.unwrap();
        assert!(
            r.trials
                .iter()
                .any(|t| t.rate_fps == lo && t.duration_s >= 60.0)
        );
    }
    assert!(
        r.trials.iter().any(|t| t.duration_s < 60.0),
        "no short trial was used"
    );
}

#[test]
fn binary_search_finds_the_same_answers_with_full_length_trials() {
    let sh = shaper();
    for (loss, want) in [(0.0, sh.ndr(SIZE, 60.0)), (PDR, sh.pdr(SIZE, 60.0, PDR))] {
        let b = BinarySearch::new(loss, FINAL, WIDTH, LINE_1G_64 / 1000.0, LINE_1G_64).unwrap();
        let r = b.search(size(), &mut sh.clone()).unwrap();
        assert_eq!(r.status, GoalStatus::Regular);
        let (lo, up) = (r.throughput_fps.unwrap(), r.failed_fps.unwrap());
        assert!(
            lo <= want && up > want && (up - lo) / up <= WIDTH,
            "{lo} .. {up} vs {want}"
        );
        assert!(r.trials.iter().all(|t| t.duration_s == 60.0));
    }
}

/// The time both methods spend on the shaper for NDR and PDR at the same width: the figure
/// docs/rfc2544.md quotes (`cargo test -p linerate-bench --test known_answers -- --nocapture`).
#[test]
fn mlr_takes_less_trial_time_than_two_binary_searches() {
    let sh = shaper();
    let (min, max) = (LINE_1G_64 / 1000.0, LINE_1G_64);
    let mlr = Mlr::new(ndr_pdr(), min, max)
        .unwrap()
        .search(size(), &mut sh.clone())
        .unwrap();
    let binary: f64 = [0.0, PDR]
        .iter()
        .map(|&loss| {
            let b = BinarySearch::new(loss, FINAL, WIDTH, min, max).unwrap();
            b.search(size(), &mut sh.clone()).unwrap().trial_time_s
        })
        .sum();
    let ratio = mlr.trial_time_s / binary;
    println!(
        "shaper {} fps, 64 B, NDR+PDR(0.5 %), width 0.5 %, final 60 s: MLRsearch {:.1} s in {} trials, \
         two binary searches {:.1} s; ratio {:.3}",
        sh.rate_fps,
        mlr.trial_time_s,
        mlr.trials.len(),
        binary,
        ratio
    );
    assert!(
        ratio < 1.0,
        "MLRsearch {} s vs binary {} s",
        mlr.trial_time_s,
        binary
    );
}

/// 0.1 % random loss: every trial of enough frames loses something, so no rate meets NDR (the
/// min load fails it: reported as such, not as 0), and even the max load meets PDR at 0.5 %.
#[test]
fn random_loss_has_no_ndr_and_pdr_at_the_max_load() {
    let (min, max) = (LINE_1G_64 / 100.0, LINE_1G_64);
    let mut dev = RandomLoss {
        p: 0.001,
        rng: Rng::new(2544),
    };
    let r = Mlr::new(ndr_pdr(), min, max)
        .unwrap()
        .search(size(), &mut dev)
        .unwrap();
    let (ndr, pdr) = (&r.goals[0], &r.goals[1]);
    assert_eq!(ndr.status, GoalStatus::NoRateMeetsGoal);
    assert_eq!(ndr.throughput_fps(), None);
    assert_eq!(ndr.relevant_upper_fps, Some(min));
    assert_eq!(pdr.status, GoalStatus::MaxLoadIsLowerBound);
    assert_eq!(pdr.throughput_fps(), Some(max));
    assert_eq!(pdr.relevant_upper_fps, None);
    // Forwarded at the max load: 99.9 % of it, within 10^-4 (σ of the loss ratio ≈ 3.4·10^-6).
    let ct = pdr.conditional_throughput_fps.unwrap();
    assert!((ct / max - 0.999).abs() < 1e-4, "{ct}");

    let mut dev = RandomLoss {
        p: 0.001,
        rng: Rng::new(2544),
    };
    let b = BinarySearch::new(0.0, FINAL, WIDTH, min, max).unwrap();
    let r = b.search(size(), &mut dev).unwrap();
    assert_eq!(r.status, GoalStatus::NoRateMeetsGoal);
    assert_eq!(r.throughput_fps, None);
}

/// A forwarder clean up to 800 kfps, losing beyond 1 Mfps, and in between losing a few frames in
/// one trial out of 20. An NDR goal with exceed ratio 0 (RFC 2544) takes any such hiccup as the
/// limit, so its answer lands anywhere in the noisy band, seed by seed; a goal with exceed ratio
/// 0.5 over 4 full-length trials (TST009's median) needs 3 lossy trials of 4 to call a load an
/// upper bound (probability ≈ 5·10^-4 per load here), so it finds 1 Mfps every time.
#[test]
fn exceed_ratio_rides_out_a_noisy_band() {
    let (cap, from) = (1_000_000.0, 800_000.0);
    let width = 0.01;
    let final_d = Duration::from_secs(10);
    let strict = SearchGoal::new(0.0, final_d)
        .unwrap()
        .with_width(width)
        .unwrap();
    let median = strict
        .with_exceed_ratio(0.5)
        .unwrap()
        .with_duration_sum(final_d * 4)
        .unwrap();
    let mut low_strict = 0;
    let (mut sum_strict, mut sum_median) = (0.0, 0.0);
    let seeds = 20;
    for seed in 0..seeds {
        let ndr = |goal: SearchGoal| {
            let mut dev = Noisy {
                capacity_fps: cap,
                noisy_from_fps: from,
                flip: 0.05,
                rng: Rng::new(seed),
            };
            let r = Mlr::new(vec![goal], 10_000.0, 1_500_000.0)
                .unwrap()
                .search(size(), &mut dev)
                .unwrap();
            r.goals[0].relevant_lower_fps.unwrap()
        };
        let (s, m) = (ndr(strict), ndr(median));
        // A trial offers round(L · 10 s) frames, so loads up to cap + 0.05 fps still pass.
        let top = cap + 0.5 / 10.0;
        assert!(s <= top && m <= top, "seed {seed}: {s} {m}");
        assert!(
            m >= cap * (1.0 - width),
            "seed {seed}: exceed ratio 0.5 gave {m}"
        );
        if s < cap * (1.0 - width) {
            low_strict += 1;
        }
        sum_strict += s;
        sum_median += m;
    }
    println!(
        "noisy band: exceed 0 NDR below 1 Mfps by more than the width in {low_strict}/{seeds} seeds, \
         mean {:.0} fps; exceed 0.5 mean {:.0} fps",
        sum_strict / f64::from(seeds as u32),
        sum_median / f64::from(seeds as u32)
    );
    assert!(
        low_strict > 0,
        "the noise never moved the exceed-0 answer: the test shows nothing"
    );
}

/// Q = 1000 frames behind a 700 kfps drain, fed at 1 Mfps: the fluid answer is
/// Q·M/(M − D) = 3333.3 frames, the discrete one floor((Q − 1)·M/(M − D)) + 1 = 3331;
/// the search must find the discrete one exactly, so within M/(M − D) = 3.3 frames of the fluid.
#[test]
fn back_to_back_finds_the_queue_capacity() {
    let (q, d, m) = (1000u64, 700_000.0, 1_000_000.0);
    let mut dev = Queue {
        queue: q,
        drain_fps: d,
    };
    let exact = dev.longest_clean_burst(m);
    let b2b = BackToBack::new(m, 100_000, DEFAULT_BACK_TO_BACK_TRIALS).unwrap();
    let r = b2b.run(size(), &mut dev).unwrap();
    assert_eq!(r.bursts.len(), 50);
    assert!(!r.capped);
    assert!(
        r.bursts.iter().all(|&b| b == exact),
        "{:?} vs {exact}",
        r.bursts
    );
    let fluid = q as f64 * m / (m - d);
    assert!(
        (r.mean - fluid).abs() <= m / (m - d),
        "{} vs {fluid}",
        r.mean
    );
    // Bursts are timed by their own length.
    assert!(
        r.trials
            .iter()
            .all(|t| (t.duration_s - t.burst.unwrap() as f64 / m).abs() < 1e-12)
    );

    let short = BackToBack::new(m, 1000, 3)
        .unwrap()
        .run(size(), &mut dev)
        .unwrap();
    assert!(short.capped && short.bursts == [1000, 1000, 1000]);
}

/// RFC 2544 §26.3 on the shaper from 1 Mfps down: every step above R loses 1 − (R·d + B/s)/(L·d),
/// the steps at 300 and 200 kfps lose nothing, and the test stops there.
#[test]
fn frame_loss_steps_down_until_two_clean_trials() {
    let sh = shaper();
    let max = 1_000_000.0;
    let r = FrameLoss::new(max, FINAL, 0.1)
        .unwrap()
        .run(size(), &mut sh.clone())
        .unwrap();
    let loads: Vec<f64> = r.rows.iter().map(|row| row.load_percent.round()).collect();
    assert_eq!(
        loads,
        [100.0, 90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 20.0]
    );
    assert!(r.settled);
    for row in &r.rows {
        let admitted = sh.ndr(SIZE, 60.0) * 60.0;
        let want = (1.0 - admitted / (row.rate_fps * 60.0)).max(0.0) * 100.0;
        assert!((row.loss_percent - want).abs() < 1e-4, "{row:?} vs {want}");
    }
    assert!(r.rows[..7].iter().all(|row| row.loss_percent > 0.0));

    // A device that never settles walks down to the last step.
    let mut lossy = RandomLoss {
        p: 0.01,
        rng: Rng::new(1),
    };
    let r = FrameLoss::new(max, Duration::from_secs(1), 0.1)
        .unwrap()
        .run(size(), &mut lossy)
        .unwrap();
    assert_eq!(r.rows.len(), 10);
    assert!(!r.settled);
}

/// Trial i of the delay line spans base + i·step .. + spread, so over n trials: min = base,
/// max = base + (n − 1)·step + spread, mean = p50 = base + (n − 1)·step/2 + spread/2.
#[test]
fn latency_aggregates_the_trials() {
    let (base, step, spread) = (10_000u64, 100u64, 1_000u64);
    let mut dev = DelayLine {
        base_ns: base,
        step_ns: step,
        spread_ns: spread,
        trials_done: 0,
    };
    let n = DEFAULT_LATENCY_TRIALS;
    let r = LatencyTest::new(200_000.0, Duration::from_secs(2), n)
        .unwrap()
        .run(size(), &mut dev)
        .unwrap();
    let nf = f64::from(n - 1);
    let mid = base as f64 + nf * step as f64 / 2.0;
    assert_eq!(r.trials.len(), n as usize);
    assert_eq!(r.min_ns, base);
    assert_eq!(r.max_ns, base + u64::from(n - 1) * step + spread);
    assert!((r.mean_ns - (mid + spread as f64 / 2.0)).abs() < 1e-6);
    assert!((r.p50_ns - (mid + 500.0)).abs() < 1e-6);
    assert!((r.p99_ns - (mid + 990.0)).abs() < 1e-6);
    assert!((r.p999_ns - (mid + 999.0)).abs() < 1e-6);

    let no_latency = LatencyTest::new(1000.0, Duration::from_secs(1), 1).unwrap();
    assert!(matches!(
        no_latency.run(size(), &mut shaper()),
        Err(Error::NoLatency { .. })
    ));
}

#[test]
fn bad_input_is_refused_before_any_trial() {
    let g = SearchGoal::new(0.0, FINAL).unwrap();
    assert!(matches!(Mlr::new(vec![], 1.0, 2.0), Err(Error::NoGoals)));
    assert!(matches!(
        Mlr::new(vec![g], 2.0, 1.0),
        Err(Error::LoadRange { .. })
    ));
    assert!(matches!(
        Mlr::new(vec![g], 0.0, 1.0),
        Err(Error::LoadRange { .. })
    ));
    let bad = SearchGoal {
        loss_ratio: 1.5,
        ..g
    };
    assert!(matches!(
        Mlr::new(vec![bad], 1.0, 2.0),
        Err(Error::LossRatio(_))
    ));
    assert!(matches!(
        Mlr::new(vec![g], 1.0, 2.0).unwrap().with_initial_width(0.0),
        Err(Error::Width(_))
    ));
    assert!(matches!(
        BinarySearch::new(0.0, FINAL, 0.0, 1.0, 2.0),
        Err(Error::Width(_))
    ));
    assert!(matches!(
        BinarySearch::new(-0.1, FINAL, 0.1, 1.0, 2.0),
        Err(Error::LossRatio(_))
    ));
    assert!(matches!(
        BinarySearch::new(0.0, Duration::ZERO, 0.1, 1.0, 2.0),
        Err(Error::ZeroDuration(_))
    ));
    assert!(matches!(
        FrameLoss::new(1e6, FINAL, 0.2),
        Err(Error::Step(_))
    ));
    assert!(matches!(
        FrameLoss::new(0.0, FINAL, 0.1),
        Err(Error::Rate(_))
    ));
    assert!(matches!(BackToBack::new(1e6, 0, 50), Err(Error::Zero(_))));
    assert!(matches!(BackToBack::new(1e6, 10, 0), Err(Error::Zero(_))));
    assert!(matches!(
        LatencyTest::new(1e6, FINAL, 0),
        Err(Error::Zero(_))
    ));
    assert!(matches!(
        FrameSize::new(60, 64),
        Err(Error::SizeTooSmall { size: 60, min: 64 })
    ));
}

#[test]
fn results_serialize_with_every_trial() {
    let r = Mlr::new(ndr_pdr(), 1488.0, LINE_1G_64)
        .unwrap()
        .search(size(), &mut shaper())
        .unwrap();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["goals"][0]["status"], "regular");
    assert_eq!(v["goals"].as_array().unwrap().len(), 2);
    let trials = v["trials"].as_array().unwrap();
    assert_eq!(trials.len(), r.trials.len());
    for (t, want) in trials.iter().zip(&r.trials) {
        assert_eq!(t["rate_fps"], want.rate_fps);
        assert_eq!(t["tx"], want.tx);
        assert_eq!(t["rx"], want.rx);
        assert_eq!(t["loss_ratio"], want.loss_ratio);
        assert_eq!(t["duration_s"], want.duration_s);
    }
    let total: f64 = r.trials.iter().map(|t| t.duration_s).sum();
    assert_eq!(v["trial_time_s"], total);
}

/// Several goals in one search share their trials: NDR and PDR together cost less trial time
/// than the two searched one after the other.
#[test]
fn goals_searched_together_share_trials() {
    let sh = shaper();
    let (min, max) = (LINE_1G_64 / 1000.0, LINE_1G_64);
    let time = |goals| {
        Mlr::new(goals, min, max)
            .unwrap()
            .search(size(), &mut sh.clone())
            .unwrap()
            .trial_time_s
    };
    let together = time(ndr_pdr());
    let apart: f64 = ndr_pdr().into_iter().map(|g| time(vec![g])).sum();
    println!("NDR+PDR together {together:.1} s, apart {apart:.1} s");
    assert!(together < apart, "together {together} s, apart {apart} s");
}

/// Without room for shorter trials (initial = final) every trial is full length and the answer
/// is the same.
#[test]
fn initial_equal_to_final_runs_full_length_trials_only() {
    let sh = shaper();
    let d = Duration::from_secs(10);
    let g = SearchGoal::new(0.0, d)
        .unwrap()
        .with_initial_duration(d)
        .unwrap();
    let r = Mlr::new(vec![g], 1488.0, LINE_1G_64)
        .unwrap()
        .search(size(), &mut sh.clone())
        .unwrap();
    assert!(r.trials.iter().all(|t| t.duration_s == 10.0));
    let (lo, up) = (
        r.goals[0].relevant_lower_fps.unwrap(),
        r.goals[0].relevant_upper_fps.unwrap(),
    );
    let want = sh.ndr(SIZE, 10.0);
    assert!(
        lo <= want && up > want && (up - lo) / up <= WIDTH * (1.0 + 1e-9),
        "{lo} {up} {want}"
    );
}
