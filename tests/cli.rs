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
    // rfc2544's rate has another name: the way there, not clap's "use -- --rate".
    let line = linerate_usage_error(&["rfc2544", "throughput", "-i", "lo", "--rate", "1M"]);
    assert!(
        line.contains("give --max-rate") && !line.contains("-- --rate"),
        "{line}"
    );
    // A stream file's one [stream] table where a list is read.
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.toml");
    std::fs::write(&one, "[stream]\nsize = 128\n").unwrap();
    let line = linerate_usage_error(&["tx", "--null", "--stream", one.to_str().unwrap()]);
    assert!(line.contains("write [[stream]]"), "{line}");
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

/// Runs linerate, killed after `limit` if it has not ended: (exit code, stderr), None when it
/// had to be killed.
#[cfg(target_os = "linux")]
fn within(args: &[&str], limit: std::time::Duration) -> Option<(Option<i32>, String)> {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run linerate");
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Some((child.wait().unwrap().code(), stderr))
}

/// Issue 40 #10: a token file without a line end (`/dev/zero`) was read without bound, and the
/// command never started nor ended. At most its first 4 KiB are read now.
#[cfg(target_os = "linux")]
#[test]
fn a_token_file_without_a_first_line_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("long");
    std::fs::write(&long, vec![b'a'; 10_000]).unwrap();
    let long = long.to_str().unwrap();
    for args in [
        vec![
            "serve",
            "--http",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            "/dev/zero",
        ],
        vec![
            "agent",
            "--http",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            "/dev/zero",
        ],
        vec![
            "serve",
            "--http",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            long,
        ],
        vec![
            "serve",
            "--http",
            "--listen",
            "127.0.0.1:0",
            "--agent-token-file",
            "/dev/zero",
        ],
    ] {
        let (code, stderr) = within(&args, std::time::Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{args:?} did not end"));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("4 KiB") && stderr.contains(args[5]),
            "{args:?}: {stderr}"
        );
    }
}

/// Issue 40 #11: an `--agent-ca` that holds no certificate was taken, and every set_config
/// failed on it later. It is refused before anything starts.
#[cfg(target_os = "linux")]
#[test]
fn an_agent_ca_that_is_not_a_certificate_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "secret\n").unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "this is not a certificate\n").unwrap();
    let armoured = dir.path().join("armoured.pem");
    std::fs::write(
        &armoured,
        "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let token = token.to_str().unwrap();
    for ca in [junk.to_str().unwrap(), armoured.to_str().unwrap()] {
        let args = [
            "serve",
            "--http",
            "--listen",
            "127.0.0.1:0",
            "--agent-token-file",
            token,
            "--agent-ca",
            ca,
        ];
        let (code, stderr) = within(&args, std::time::Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{ca}: serve started"));
        assert_eq!(code, Some(2), "{ca}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("--agent-ca") && stderr.contains(ca),
            "{stderr}"
        );
    }
    // A real CA certificate still starts the controller (it serves until killed).
    let real = dir.path().join("ca.pem");
    let key = dir.path().join("ca.key");
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=linerate test CA", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&real)
        .output();
    if made.is_ok_and(|o| o.status.success()) {
        let args = [
            "serve",
            "--http",
            "--listen",
            "127.0.0.1:0",
            "--agent-token-file",
            token,
            "--agent-ca",
            real.to_str().unwrap(),
        ];
        let ended = within(&args, std::time::Duration::from_millis(1500));
        assert!(ended.is_none(), "a real CA was refused: {ended:?}");
    }
}
