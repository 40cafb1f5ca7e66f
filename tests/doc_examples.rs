//! The examples of README.md and docs/*.md, run (issue 41): every `linerate tx`, `replay`,
//! `sink` and `rx` command of a ```sh block that sends on the lab (`lr0`, `lr1@lr-sink`) or
//! into a pcap file, every `lab status` and `lab impair` (on a lab with a router DUT) and
//! `ports`, runs on a lab of its own and must exit 0; one that asks for `-n N` frames must say it
//! sent N. The parse-only test (crates/cli/src/doc_commands.rs) checks every other command's
//! flags; this one catches what parses but fails as written.
//!
//! Run as written, with three changes that keep CI short and the labs apart: the lab `lr` is a
//! lab with a name of the test's own (its interfaces, namespace and router addresses follow
//! from the name, so each is rewritten); a duration (`-d 5s`) is 300 ms; the files an example
//! names exist (a 3,000-frame `trace.pcap`/`trace.pcapng` made by `tx --pcap`, the repository's
//! `examples/`), in a directory of the test's own.
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use linerate_lab::{DutKind, LabConfig, LabGuard};

/// One example: where it was found and its words after `linerate`.
#[derive(Debug, Clone)]
struct Example {
    at: String,
    args: Vec<String>,
}

/// The commands of the ```sh blocks of `text`: continuations joined, `# comments` cut, `&&`
/// chains split, `sudo` and the binary's path dropped.
fn examples(name: &str, text: &str) -> Vec<Example> {
    let mut found = Vec::new();
    let mut in_block = false;
    let mut joined = String::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = line.trim_start() == "```sh" && !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            joined.push_str(head);
            continue;
        }
        joined.push_str(line);
        let whole = std::mem::take(&mut joined);
        let code = whole.split(" #").next().unwrap_or_default();
        for part in code.split("&&") {
            let mut words: Vec<String> = part.split_whitespace().map(str::to_owned).collect();
            if words.first().is_some_and(|w| w == "sudo") {
                words.remove(0);
            }
            if words
                .first()
                .is_some_and(|w| w == "linerate" || w.ends_with("/linerate"))
            {
                found.push(Example {
                    at: format!("{name}:{}", i + 1),
                    args: words[1..].to_vec(),
                });
            }
        }
    }
    found
}

/// Why an example is not run here, or None to run it.
fn skip(e: &Example) -> Option<&'static str> {
    let has = |w: &str| e.args.iter().any(|a| a == w);
    let text = e.args.join(" ");
    match (
        e.args.first().map(String::as_str),
        e.args.get(1).map(String::as_str),
    ) {
        (Some("tx" | "replay" | "sink" | "rx" | "ports"), _) => {}
        // A lab's state and impairments, on a lab the test makes with `lab up`.
        (Some("lab"), Some("status" | "impair")) => {}
        _ => {
            return Some(
                "not a command this test runs (lab up/down, tcp, sweep, rfc2544, serve: tests of their own)",
            );
        }
    }

    if text.contains("eth") || text.contains('[') || text.contains('…') || text.contains("...") {
        return Some("another machine's interface, or a syntax summary");
    }
    if matches!(e.args[0].as_str(), "ports" | "lab") {
        return None;
    }
    if !text.contains("lr") && !has("--pcap") && !has("--null") {
        return Some("not on the lab");
    }
    let ends = has("-n") || has("--count") || has("-d") || has("--duration");
    if e.args[0] == "rx" && !(has("-d") || has("--duration")) {
        return Some("runs until stopped");
    }
    let replay_once = e.args[0] == "replay" && !text.contains("--loop inf");
    let sink = e.args[0] == "sink";
    if !(ends || replay_once || sink) {
        return Some("runs until stopped");
    }
    None
}

/// The example's words for the lab `name`: its interfaces, namespace and router addresses
/// for the default lab's, durations shortened.
fn rewrite(args: &[String], name: &str) -> Vec<String> {
    let (s, i, e, r) = linerate_lab::routed_addresses("lr");
    let (s2, i2, e2, r2) = linerate_lab::routed_addresses(name);
    let mut out = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        // `--name lr`: the lab itself.
        if a == "lr" {
            out.push(name.to_owned());
            continue;
        }
        let mut a = a
            .replace("lr-sink", &format!("{name}-sink"))
            .replace("lr0", &format!("{name}0"))
            .replace("lr1", &format!("{name}1"));
        for (from, to) in [(s, s2), (i, i2), (e, e2), (r, r2)] {
            a = a.replace(&from.to_string(), &to.to_string());
        }
        if a == "examples/sequence.toml" {
            a = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(&a)
                .to_string_lossy()
                .into_owned();
        }
        let duration = a == "-d" || a == "--duration";
        out.push(a);
        if duration && it.next().is_some() {
            out.push("300ms".into());
        }
    }
    // A lab command without --name means the default lab, `lr`: the test's own here.
    if out.first().is_some_and(|a| a == "lab") && !out.iter().any(|a| a == "--name") {
        out.extend(["--name".to_owned(), name.to_owned()]);
    }
    out
}

/// The default lab's kind an example needs: a router when its hosts are on the router's
/// subnets.
fn needs_router(args: &[String]) -> bool {
    args.iter().any(|a| a.contains("gateway="))
}

/// A lab made and removed by the binary (`lab up --dut router`, `lab down`): a lab command
/// is refused on a lab another process holds, as the test's own `LabGuard`s are held.
struct CliLab(String);

impl CliLab {
    fn up() -> Self {
        let name = linerate_lab::unique_name("docl");
        common::linerate_ok(&[
            "lab", "up", "--name", &name, "--dut", "router", "--queues", "1",
        ]);
        CliLab(name)
    }
}

impl Drop for CliLab {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_linerate"))
            .args(["lab", "down", "--name", &self.0])
            .output();
    }
}

#[test]
fn every_lab_example_of_the_docs_runs_as_written() {
    if !common::root_or_skip("every_lab_example_of_the_docs_runs_as_written") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = examples(
        "README.md",
        &std::fs::read_to_string(root.join("README.md")).unwrap(),
    );
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|d| d.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    for d in docs {
        let name = format!("docs/{}", d.file_name().unwrap().to_string_lossy());
        all.extend(examples(&name, &std::fs::read_to_string(&d).unwrap()));
    }
    let (run, skipped): (Vec<_>, Vec<_>) = all.into_iter().partition(|e| skip(e).is_none());
    assert!(
        run.len() >= 15,
        "only {} examples to run: {run:?}",
        run.len()
    );
    eprintln!(
        "running {} examples; {} skipped (a command with a test of its own, another machine's interface, or no end)",
        run.len(),
        skipped.len()
    );

    let dir = tempfile::tempdir().unwrap();
    // The captures the replay examples name: 3,000 frames each.
    for f in ["trace.pcap", "trace.pcapng"] {
        let path = dir.path().join(f);
        common::linerate_ok(&["tx", "--pcap", path.to_str().unwrap(), "-n", "3000", "-q"]);
    }
    let plain = common::lab("doc", 1);
    let routed = LabGuard::up_with_dut(
        &LabConfig {
            name: linerate_lab::unique_name("docr"),
            queues: 2,
        },
        Some(DutKind::Router),
    )
    .expect("lab up --dut router");

    let cli = CliLab::up();
    let mut failed = Vec::new();
    // A kernel that refuses live frames to root: an example that names the live backend is
    // refused in one line that says so (docs/usage.md), and that is what it is held to.
    let live_refused = linerate_live::kernel_refuses_live_frames();
    for e in &run {
        let lab = if e.args[0] == "lab" {
            &cli.0
        } else if needs_router(&e.args) {
            &routed.name
        } else {
            &plain.name
        };
        let args = rewrite(&e.args, lab);
        let out = Command::new(env!("CARGO_BIN_EXE_linerate"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .expect("run linerate");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let names_live = e.args.windows(2).any(|w| w == ["--backend", "live"]);
        let why = if let (true, Some(refused)) = (names_live, &live_refused) {
            (out.status.code() != Some(2) || !stderr.contains(refused.as_str())).then(|| {
                format!(
                    "this kernel refuses live frames, and the example did not say so: exit {:?}: {}",
                    out.status.code(),
                    stderr.trim()
                )
            })
        } else if !out.status.success() {
            Some(format!("exit {:?}: {}", out.status.code(), stderr.trim()))
        } else {
            asked(&e.args).and_then(|n| {
                // `sent      N frames`, a port's `sent N frames in …`, or the JSON's count.
                let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
                let said = format!("sent {n} frames");
                let json = format!("\"submitted\": {n}");
                (!words.contains(&said) && !words.contains(&json))
                    .then(|| format!("asked -n {n}, the report says otherwise:\n{stdout}"))
            })
        };
        if let Some(why) = why {
            failed.push(format!("{} `linerate {}`: {why}", e.at, args.join(" ")));
        }
        // The lab's sink settles between examples.
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        failed.is_empty(),
        "{} of {} examples failed:\n{}",
        failed.len(),
        run.len(),
        failed.join("\n\n")
    );
}

/// The frames an example asks for with `-n`, as a whole number.
fn asked(args: &[String]) -> Option<u64> {
    let at = args.iter().position(|a| a == "-n" || a == "--count")?;
    linerate_wire::quantity::parse_count(args.get(at + 1)?).ok()
}
