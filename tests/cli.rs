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
        vec!["completions", "bash"],
        vec!["man"],
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

#[test]
fn a_mistyped_flag_keeps_the_tip_and_a_missing_sweep_file_is_the_users() {
    let line = linerate_usage_error(&["tx", "--rat", "1"]);
    assert!(line.contains("'--rat'"), "{line}");
    assert!(
        line.contains("tip: a similar argument exists: '--rate'"),
        "{line}"
    );
    let dir = tempfile::tempdir().unwrap();
    let a = sweep_file(dir.path(), "a.json");
    let missing = dir.path().join("missing.json");
    let line = linerate_usage_error(&["compare", &a, missing.to_str().unwrap()]);
    assert!(line.contains("missing.json"), "{line}");
    let line = linerate_usage_error(&["compare", &a, dir.path().to_str().unwrap()]);
    assert!(line.contains(dir.path().to_str().unwrap()), "{line}");
}

/// The help's sections, in the order they appear.
fn headings(help: &str) -> Vec<&str> {
    help.lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':') && !l.starts_with("Usage"))
        .collect()
}

#[test]
fn the_help_is_grouped_and_ends_in_examples() {
    let help = common::linerate_ok(&["tx", "--help"]);
    assert_eq!(
        headings(&help),
        [
            "Options:",
            "What to send:",
            "Where to send:",
            "How fast and how long:",
            "Receive:",
            "Output:",
            "Workers and backend tuning:",
            "Hosts: several ports, both directions:",
            "Examples:",
        ],
        "{help}"
    );
    assert!(help.contains("[default: 500ms]"), "defaults shown: {help}");
    for command in ["replay", "sweep", "rx", "serve", "lab", "compare"] {
        let help = common::linerate_ok(&[command, "--help"]);
        assert!(
            help.contains("\nExamples:\n  linerate "),
            "{command}: {help}"
        );
    }
    // What a command refuses, its help does not offer.
    let offered = [
        ("serve", "[possible values: auto, afxdp, afpacket, live]"),
        ("sweep", "[possible values: auto, afxdp, afpacket, live]"),
        (
            "tx",
            "[possible values: auto, afxdp, afpacket, live, pcap, null]",
        ),
    ];
    for (command, values) in offered {
        let help = common::linerate_ok(&[command, "-h"]);
        let backend = help.lines().find(|l| l.contains("--backend <")).unwrap();
        assert!(backend.contains(values), "{command}: {backend}");
    }
    // The others still parse, for the command's own refusal naming what it takes.
    let line = linerate_usage_error(&["sweep", "-i", "lo", "--backend", "null"]);
    assert!(line.contains("afxdp, afpacket or live"), "{line}");
    let replay = common::linerate_ok(&["replay", "--help"]);
    assert!(!replay.contains("--clock"), "{replay}");
}

#[test]
fn completions_and_the_manual_page_come_from_the_parser() {
    let bash = common::linerate_ok(&["completions", "bash"]);
    assert!(
        bash.contains("complete -F") && bash.contains("--rx-mode"),
        "{bash}"
    );
    let zsh = common::linerate_ok(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef linerate"), "{zsh}");
    let fish = common::linerate_ok(&["completions", "fish"]);
    assert!(fish.contains("complete -c linerate"), "{fish}");
    let man = common::linerate_ok(&["man"]);
    assert!(
        man.starts_with(".ie") || man.contains(".TH linerate"),
        "{man}"
    );
    let dir = tempfile::tempdir().unwrap();
    common::linerate_ok(&["man", "--dir", dir.path().to_str().unwrap()]);
    let page = std::fs::read_to_string(dir.path().join("linerate-tx.1")).unwrap();
    assert!(page.contains("rx\\-mode"), "{page}");
    let line = linerate_usage_error(&["man", "--dir", "/nonexistent/linerate-man"]);
    assert!(line.contains("not a directory"), "{line}");
}

#[test]
fn the_old_spelling_of_a_renamed_flag_still_parses() {
    // rx and sink said --mode where tx and rfc2544 say --rx-mode; scripts keep the old name.
    for flag in ["--mode", "--rx-mode"] {
        let line = linerate_usage_error(&["rx", "-i", "lr-none-such0", flag, "bogus"]);
        assert!(line.contains("possible values: drv, skb"), "{flag}: {line}");
    }
    let help = common::linerate_ok(&["sink", "--help"]);
    assert!(
        help.contains("--rx-mode") && !help.contains("--mode"),
        "{help}"
    );
}
