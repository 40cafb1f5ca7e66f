//! Rate control and stream sequences on a real veth lab over AF_XDP (root): the asked rate at the
//! sink, sequences in order and bursts in shape at the receiver, and bad rates refused.
#![cfg(target_os = "linux")]

mod common;

use std::sync::Mutex;

use common::{
    VethPair, catch_tx, json, linerate_ok, linerate_usage_error, root_or_skip, src_port,
    within_three_attempts,
};
use linerate_lab::unique_name;

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
