//! What an unlucky or hostile user meets at the command line (issue 12): arguments named in
//! every refusal, inputs that used to be taken silently, and stdout that is closed or full.

mod common;

use common::{linerate_usage_error, with_closed_stdout, with_full_stdout};
use linerate_report::{Context, MeasuredAt, Repetition, SizePoint, SweepResult};

/// A small valid sweep result file.
fn sweep_file(dir: &std::path::Path, name: &str) -> String {
    let result = SweepResult {
        context: Context::collect("0", "null", "discard", "null"),
        measured_at: MeasuredAt::TxCompletions,
        interrupted: false,
        points: vec![SizePoint {
            size: 64,
            repetitions: vec![Repetition {
                tx_frames: 1000,
                tx_bytes: 60_000,
                rx_frames: None,
                rx_bytes: None,
                elapsed_s: 1.0,
            }],
        }],
    };
    let path = dir.join(name);
    std::fs::write(&path, result.to_json()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn closed_stdout_ends_quietly_and_a_full_one_is_an_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let a = sweep_file(dir.path(), "a.json");
    let commands: Vec<Vec<&str>> = vec![
        vec!["compare", &a, &a],
        vec!["ports"],
        vec!["ports", "--json"],
        vec!["tx", "--null", "-n", "10", "-q"],
        vec!["tx", "--null", "-n", "10", "-q", "--json"],
    ];
    for args in &commands {
        let out = with_closed_stdout(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?} closed: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        let out = with_full_stdout(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} full: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("No space left"), "{args:?}: {stderr}");
    }
}

#[test]
fn argument_errors_name_the_argument() {
    let line = linerate_usage_error(&["tx", "--null", "-n", "3", "--burst", "32"]);
    assert!(line.contains("--bursts-per-sec"), "{line}");
    let line = linerate_usage_error(&["sweep", "--sizes", "64"]);
    assert!(line.contains("--interface"), "{line}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, "[[stream]]\n").unwrap();
    let file = file.to_str().unwrap();
    let line = linerate_usage_error(&["tx", "--null", "--stream", file, "--size", "128"]);
    assert!(line.contains("--size"), "{line}");
    assert!(
        !line.contains("--vlan"),
        "names only what was given: {line}"
    );
}

#[test]
fn inputs_that_were_taken_silently_are_refused() {
    let null = ["tx", "--null", "-n", "3", "-q"];
    let refused = |extra: &[&str], needle: &str| {
        let mut args = null.to_vec();
        args.extend_from_slice(extra);
        let line = linerate_usage_error(&args);
        assert!(line.contains(needle), "{extra:?}: {line}");
    };
    refused(&["--cores", "0,0"], "core 0");
    refused(&["--tcp-flags", "SA"], "--proto tcp");
    refused(&["--proto", "udp", "--tcp-flags", "SA"], "--proto tcp");
    refused(&["--src-ip", ""], "--src-ip");
    refused(&["--dst-mac", ""], "--dst-mac");
    refused(&["--rate", "1e-300"], "slowest");
    let line = linerate_usage_error(&[
        "tx",
        "-i",
        "lo",
        "--backend",
        "live",
        "--queues",
        "5",
        "-n",
        "3",
    ]);
    assert!(line.contains("--queues"), "{line}");
    // The flags still work when they make sense.
    let mut ok = null.to_vec();
    ok.extend(["--proto", "tcp", "--tcp-flags", "SA", "--rate", "1000"]);
    common::linerate_ok(&ok);
}
