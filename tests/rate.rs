//! Rate control and stream sequences on a real veth lab over AF_XDP (root): the asked rate at the
//! sink, sequences in order and bursts in shape at the receiver, the gaps between frames as the
//! tests' own XDP probe stamps them (and linerate's receiver reports them), and bad rates refused.
#![cfg(target_os = "linux")]

mod common;

use std::sync::Mutex;

use common::{
    VethPair, catch_tx, json, linerate_ok, linerate_usage_error, root_or_skip, src_port,
    within_three_attempts,
};
use linerate_lab::unique_name;
use linerate_probe::{GapTable, OnTime, Probe, ks_exponential_above};

/// Rate tests share the machine's two cores: they run one at a time.
static ALONE: Mutex<()> = Mutex::new(());

#[test]
fn a_hundred_kpps_for_two_seconds_at_the_sink() {
    if !root_or_skip("a_hundred_kpps_for_two_seconds_at_the_sink") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let lab = common::lab("rt", 2);
    within_three_attempts(|| {
        let out = linerate_ok(&[
            "tx",
            "-q",
            "--json",
            "-i",
            &lab.sender,
            "--rate",
            "100k",
            "-d",
            "2s",
        ]);
        let report = json(&out);
        assert_eq!(report["sink"]["lost"], 0);
        assert_eq!(report["requested_pps"], 100_000.0);
        assert!(report["pacing"]["late_p50_ns"].as_u64().is_some(), "{out}");
        let at_sink = report["sink"]["packets"].as_u64().unwrap();
        if (198_000..=202_000).contains(&at_sink) {
            Ok(())
        } else {
            Err(format!(
                "sink counted {at_sink} frames, asked 200,000 ± 1 % (lateness {})",
                report["pacing"]
            ))
        }
    });
}

#[test]
fn a_three_stream_sequence_arrives_exactly_and_in_order() {
    if !root_or_skip("a_three_stream_sequence_arrives_exactly_and_in_order") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let pair = VethPair::new(&unique_name("rsq"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("seq.toml");
    let mac = pair.b_mac();
    std::fs::write(
        &file,
        format!(
            r#"
[[stream]]
name = "one"
dst-mac = "{mac}"
src-port = 1001
count = 1000
next = "next"
rate = "50k"

[[stream]]
name = "two"
dst-mac = "{mac}"
src-port = 1002
count = 2000
next = "next"
rate = "50k"

[[stream]]
name = "three"
dst-mac = "{mac}"
src-port = 1003
count = 3000
next = "stop"
rate = "50k"
"#
        ),
    )
    .unwrap();
    let frames = catch_tx(&pair, 6000, &["--stream", file.to_str().unwrap()]);
    let ports: Vec<&str> = frames.iter().map(|f| src_port(f)).collect();
    assert_eq!(ports.len(), 6000);
    assert!(ports[..1000].iter().all(|p| *p == "1001"));
    assert!(ports[1000..3000].iter().all(|p| *p == "1002"));
    assert!(ports[3000..].iter().all(|p| *p == "1003"));
}

#[test]
fn bursts_arrive_in_bursts_of_the_asked_size() {
    if !root_or_skip("bursts_arrive_in_bursts_of_the_asked_size") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let pair = VethPair::new(&unique_name("rbu"));
    let mac = pair.b_mac();
    let frames = catch_tx(
        &pair,
        80,
        &[
            "--dst-mac",
            &mac,
            "-n",
            "80",
            "--burst",
            "16",
            "--bursts-per-sec",
            "20",
        ],
    );
    // -tt: the first word is the capture time in seconds.
    let times: Vec<f64> = frames
        .iter()
        .map(|f| f.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let mut bursts = vec![1usize];
    for w in times.windows(2) {
        // Bursts are 50 ms apart; frames inside one are microseconds apart.
        if w[1] - w[0] > 0.020 {
            bursts.push(1);
        } else {
            *bursts.last_mut().unwrap() += 1;
        }
    }
    assert_eq!(bursts, vec![16; 5], "frames per burst at the receiver");
}

/// Sends `frames` UDP frames from `pair`'s root end with `args` and returns their arrival stamps
/// at the namespace end, where the tests' own probe (not linerate's receiver) times each one.
fn stamps_at_the_far_end(pair: &VethPair, frames: u32, args: &[&str]) -> Vec<u64> {
    let probe = Probe::attach(&pair.b(), Some(&pair.name), frames).expect("attach the probe");
    let (a, mac, n) = (pair.a(), pair.b_mac(), frames.to_string());
    let mut all = vec!["tx", "-q", "-i", &a, "--dst-mac", &mac, "-n", &n];
    all.extend_from_slice(args);
    linerate_ok(&all);
    // veth delivers in the sender's context: every frame is stamped once tx has returned.
    let stamps = probe.stamps().expect("read the stamps");
    assert_eq!(
        stamps.len(),
        frames as usize,
        "frames stamped of {frames} sent"
    );
    stamps
}

/// The share of the gaps between `stamps` within `window_ns` of `target_ns`.
fn share_within(stamps: &[u64], target_ns: f64, window_ns: f64) -> f64 {
    let near = stamps
        .windows(2)
        .filter(|w| ((w[1] - w[0]) as f64 - target_ns).abs() <= window_ns)
        .count();
    near as f64 / (stamps.len() - 1) as f64
}

/// Each frame at its own time: the mean rate exact to ±0.1 %, no frame back to back, 60 % of all
/// gaps within ±512 ns of the target, and of the gaps between frames that left on time (within
/// 2 µs of the schedule, [`OnTime`]; 200 of them at least) 75 % within ±512 ns and a tenth
/// within ±64 ns. Sliced sends put none within ±512 ns and most back to back; a pacer that
/// sleeps (±50 µs) puts almost none within ±512 ns.
///
/// The bounds are what a debug build keeps on a 2-vCPU VM in the phases when its host takes the
/// vCPU away for 0.5–3 ms every few tens of ms (CI's machine and this lab's, 2026-12-08): a sender
/// then spends most of the run catching up, by design in gaps 448 ns short (within ±512 ns), so
/// 75–84 % of all gaps are within ±512 ns but only 0.3–13 % of the frames are on time, and the
/// gaps between those are 85–98 % within ±512 ns and 18–32 % within ±64 ns; the rate held within
/// ±0.05 %. (In quiet phases: 29–83 % of the frames on time, their gaps 91–99 % and 30–55 %.)
/// MoonGen's 99 % and 50 % are the benchmark's to show. At rates a debug build's per-frame send
/// holds with room on a busy 2-core machine (it takes 1 to 4.7 µs on veth, the peer's XDP
/// included): 100 and 200 kpps. 500 kpps and 1 Mpps are the benchmark's (scripts/bench-gaps.sh,
/// a release build, docs/performance.md).
#[test]
fn precise_pacing_spaces_every_frame_at_its_own_time() {
    if !root_or_skip("precise_pacing_spaces_every_frame_at_its_own_time") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let pair = VethPair::new(&unique_name("rpg"));
    for (rate, pps) in [("100k", 100_000.0), ("200k", 200_000.0)] {
        within_three_attempts(|| {
            let stamps = stamps_at_the_far_end(
                &pair,
                200_000,
                &["--backend", "afxdp", "--pacing", "precise", "--rate", rate],
            );
            // The first thousand leave while the worker's first sends warm the ring up.
            let t = GapTable::of(&stamps[1000..], 1e9 / pps).unwrap();
            let on = OnTime::of(&stamps[1000..], 1e9 / pps, 2_000.0);
            let held = (t.rate_pps / pps - 1.0).abs() <= 0.001
                && t.back_to_back < 0.001
                && t.within[3] >= 0.6
                && on
                    .as_ref()
                    .is_some_and(|o| o.gaps >= 200 && o.within[0] >= 0.1 && o.within[3] >= 0.75);
            let on = on.map_or(serde_json::Value::Null, |o| o.to_json());
            let figures = format!("{rate}: {} {on}", t.to_json());
            eprintln!("{figures}");
            if held { Ok(()) } else { Err(figures) }
        });
    }
}

/// `auto` spacing times the port's first sends and goes sliced only where a send costs more than
/// the worker's gap. At 1 Mpps (1 µs gaps) a debug build's send into veth with the probe's XDP on
/// the far end costs more on any machine this runs on (1.9–4.7 µs on this lab's VMs): it goes
/// sliced, and every frame arrives. At 50 kpps (20 µs) every send fits: it stays precise and the
/// probe counts the asked rate. Between them the choice is the machine's: at 500 kpps a send costs
/// 1.9–2.4 µs in a release build on an EPYC VM (sliced), 0.45 µs on a Xeon (precise) — and a debug
/// build on a 2-vCPU VM whose host takes time away holds 500 kpps sliced in one phase and only
/// 430–490 kpps in another (CI's run of 2026-12-07), so the rate is asked only where it fits.
#[test]
fn auto_pacing_chooses_by_the_send_it_measured() {
    if !root_or_skip("auto_pacing_chooses_by_the_send_it_measured") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let pair = VethPair::new(&unique_name("rpa"));
    for (rate, gap_ns, frames) in [("1M", 1_000u64, 50_000u32), ("50k", 20_000, 25_000)] {
        within_three_attempts(|| {
            let probe =
                Probe::attach(&pair.b(), Some(&pair.name), frames).expect("attach the probe");
            let (a, mac, n) = (pair.a(), pair.b_mac(), frames.to_string());
            let out = json(&linerate_ok(&[
                "tx",
                "-q",
                "--json",
                "-i",
                &a,
                "--dst-mac",
                &mac,
                "-n",
                &n,
                "--backend",
                "afxdp",
                "--rate",
                rate,
            ]));
            let stamps = probe.stamps().expect("read the stamps");
            assert_eq!(
                stamps.len(),
                frames as usize,
                "{rate}: frames stamped of {frames} sent"
            );
            let pacing = &out["workers"][0]["pacing"];
            let send_ns = pacing["send_ns"].as_u64().unwrap_or(0);
            let spacing = pacing["spacing"].as_str().unwrap_or("");
            assert!(send_ns > 0, "{rate}: the send was measured: {pacing}");
            // The rate over the whole run: a worker whose first sends (precise, while they are
            // measured) fell behind catches up after them, so a window that leaves the start
            // out reads the catching up as a faster rate.
            let t = GapTable::of(&stamps, gap_ns as f64).unwrap();
            let figures = format!("{rate}, {spacing} ({send_ns} ns a send): {}", t.to_json());
            eprintln!("{figures}");
            if send_ns > gap_ns {
                assert_eq!(spacing, "sliced", "{figures}");
            } else if 2 * send_ns < gap_ns {
                assert_eq!(spacing, "precise", "{figures}");
            }
            if gap_ns < 2 * send_ns {
                // Not a rate a debug build holds frame by frame: the choice is the check.
                return Ok(());
            }
            if (t.rate_pps * gap_ns as f64 / 1e9 - 1.0).abs() <= 0.005 {
                Ok(())
            } else {
                Err(figures)
            }
        });
    }
}

/// `--gaps poisson` draws exponential gaps of the rate's mean from the stream's seed: the
/// arrivals pass a Kolmogorov–Smirnov test against that exponential. At 2 kpps (a 500 µs
/// mean): a gap shorter than one send (up to 2.5 µs in a debug build) cannot be kept, and at 10
/// kpps those 2.5 % of the gaps alone move the distribution by D ≈ 0.02, past the test's bound.
#[test]
fn poisson_gaps_are_exponential_at_the_receiver() {
    const FLOOR_NS: u64 = 20_000;
    if !root_or_skip("poisson_gaps_are_exponential_at_the_receiver") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let pair = VethPair::new(&unique_name("rpo"));
    within_three_attempts(|| {
        let stamps = stamps_at_the_far_end(
            &pair,
            6_000,
            &["--backend", "afxdp", "--gaps", "poisson", "--rate", "2k"],
        );
        // Above a floor of a few sends' cost: gaps due closer than a send takes leave as one
        // batch (the pacer's rule), a share of the whole sample that grows with the port's
        // send cost (a slow VM's AF_XDP copy path: 1.5–2× the exponential's 1 % under 5 µs).
        // An exponential above any floor is the same exponential; the gaps under it are held
        // to twice its share (3.9 % under 20 µs), so a pacer that bunches still fails.
        let ks = ks_exponential_above(&stamps, 2_000.0, FLOOR_NS).unwrap();
        let under = linerate_probe::gaps(&stamps)
            .iter()
            .filter(|&&g| g <= FLOOR_NS)
            .count() as f64
            / (stamps.len() - 1) as f64;
        let share = 1.0 - (-(FLOOR_NS as f64) / 500_000.0).exp();
        // What each attempt looked like, for a failure to be read: bursts (gaps under a
        // send's cost) or stalls (the longest gaps)?
        let mut gaps = linerate_probe::gaps(&stamps);
        gaps.sort_unstable();
        let short = gaps.iter().filter(|&&g| g < 5_000).count();
        let quartiles: Vec<u64> = [0.25, 0.5, 0.75]
            .map(|q| gaps[(q * gaps.len() as f64) as usize])
            .to_vec();
        let figures = format!(
            "{ks:?} above {FLOOR_NS} ns, {:.1} % of gaps under it (the exponential's {:.1} %); {short} of {} gaps under 5 µs, quartiles {quartiles:?} ns (an \
             exponential of 500 µs: 143,841, 346,574, 693,147), longest {:?} ns",
            under * 100.0,
            share * 100.0,
            gaps.len(),
            &gaps[gaps.len().saturating_sub(5)..]
        );
        eprintln!("{figures}");
        // Even gaps at the same rate fail it by far (D ≈ 0.37): the test can tell them apart.
        if ks.p_value > 0.01 && under <= 2.0 * share {
            Ok(())
        } else {
            Err(figures)
        }
    });
}

/// `tx --rx --rate` reports each flow's gaps from the receive program's histogram; it agrees
/// with the probe's stamps of runs alike, one before it and one after (the two cannot share an
/// interface's XDP hook), to within the error it states, plus a point, plus how far the two
/// probed runs differ: on this lab's VM two runs in a row put 11 % and 44 % of their gaps within
/// ±64 ns (0–0.2 % steal, 2026-12-08), so one probed run alone could not say whether the
/// receiver's figure or the runs differed.
#[test]
fn the_receivers_gap_report_agrees_with_the_probe() {
    if !root_or_skip("the_receivers_gap_report_agrees_with_the_probe") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let pair = VethPair::new(&unique_name("rpr"));
    let paced = [
        "--backend",
        "afxdp",
        "--pacing",
        "precise",
        "--rate",
        "100k",
    ];
    let lab = common::lab("rpr", 2);
    within_three_attempts(|| {
        let before = stamps_at_the_far_end(&pair, 100_000, &paced);
        let out = json(&linerate_ok(
            &[
                &[
                    "tx",
                    "-q",
                    "-i",
                    &lab.sender,
                    "-n",
                    "100000",
                    "--rx",
                    "--json",
                ],
                &paced[..],
            ]
            .concat(),
        ));
        let after = stamps_at_the_far_end(&pair, 100_000, &paced);
        let flow = &out["rx"]["flows"][0];
        let gaps = &flow["gaps"];
        let err = gaps["error_ns"]
            .as_f64()
            .ok_or(format!("no gap report: {flow}"))?;
        if gaps["gaps"] != 99_999 {
            return Err(format!("gaps measured: {gaps}"));
        }
        let target = gaps["target_ns"].as_f64().unwrap();
        if (target - 10_000.0).abs() > 5.0 {
            return Err(format!("target {target} ns, asked 10000: {gaps}"));
        }
        let probed = |window: f64| {
            let [a, b] =
                [&before, &after].map(|s| share_within(&s[1000..], 10_000.0, window.max(0.0)));
            (a.min(b), a.max(b))
        };
        for w in [64.0, 128.0, 256.0, 512.0] {
            let said = gaps[format!("within_{w}ns")].as_f64().unwrap();
            let (least, most) = probed(w);
            let spread = most - least;
            let low = probed(w - err).0 - 0.01 - spread;
            let high = probed(w + err).1 + 0.01 + spread;
            if !(low..=high).contains(&said) {
                return Err(format!(
                    "within ±{w} ns: receiver {said:.4}, probe {low:.4}..{high:.4} (runs before and after: {least:.4}, {most:.4}): {gaps}"
                ));
            }
        }
        Ok(())
    });
}

#[test]
fn pacing_and_gaps_refuse_what_they_cannot_do() {
    let line = linerate_usage_error(&["tx", "--null", "-n", "1", "--gaps", "poisson"]);
    assert!(line.contains("--rate"), "{line}");
    let line = linerate_usage_error(&[
        "tx",
        "--null",
        "-n",
        "1",
        "--rate",
        "10k",
        "--gaps",
        "poisson",
        "--burst",
        "4",
        "--bursts-per-sec",
        "100",
    ]);
    assert!(line.contains("drop --burst"), "{line}");
    let line = linerate_usage_error(&["tx", "--null", "-n", "1", "--pacing", "precise"]);
    assert!(line.contains("--rate"), "{line}");
    let line = linerate_usage_error(&["tx", "--null", "-n", "1", "--pacing", "exact"]);
    assert!(line.contains("auto, precise or sliced"), "{line}");
}

#[test]
fn bad_rates_are_refused() {
    let line = linerate_usage_error(&["tx", "--null", "-n", "1", "--rate", "0"]);
    assert!(line.contains("more than zero"), "{line}");
    let line = linerate_usage_error(&["tx", "--null", "-n", "1", "--rate=-5k"]);
    assert!(line.contains("-5k"), "{line}");
    let line = linerate_usage_error(&["tx", "--null", "-n", "1", "--rate", "fast"]);
    assert!(line.contains("fast"), "{line}");
    let line = linerate_usage_error(&[
        "tx",
        "--null",
        "-n",
        "1",
        "--rate",
        "2M",
        "--link-speed",
        "1G",
    ]);
    assert!(line.contains("above the link"), "{line}");
    let line = linerate_usage_error(&["tx", "--null", "-n", "1", "--rate", "50%"]);
    assert!(line.contains("link speed"), "{line}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[[stream]]\ncount = 10\nnext = \"goto-3\"\n").unwrap();
    let line = linerate_usage_error(&["tx", "--null", "--stream", file.to_str().unwrap()]);
    assert!(line.contains("goto-3"), "{line}");
    std::fs::write(
        &file,
        "[[stream]]\ncount = 10\nnext = \"goto-first\"\nloops = 0\n",
    )
    .unwrap();
    let line = linerate_usage_error(&["tx", "--null", "--stream", file.to_str().unwrap()]);
    assert!(line.contains("loops 0"), "{line}");
    std::fs::write(&file, "[[stream]]\nname = \"a\"\ncount = 10\nnext = \"stop\"\n[[stream]]\nname = \"b\"\ncount = 5\n").unwrap();
    let line = linerate_usage_error(&["tx", "--null", "--stream", file.to_str().unwrap()]);
    assert!(line.contains("never reached"), "{line}");
}
