//! `linerate sweep` on a real lab and `linerate compare` of its files (root), and bad input.
#![cfg(target_os = "linux")]

mod common;

use std::process::Command;

use common::{VethPair, linerate_ok, linerate_usage_error, root_or_skip};
use linerate_lab::unique_name;

fn sweep(iface: &str, json: &std::path::Path, cores: &str) -> serde_json::Value {
    linerate_ok(&[
        "sweep",
        "-i",
        iface,
        "--sizes",
        "64,256",
        "-d",
        "300ms",
        "--repeat",
        "2",
        "--warmup",
        "100ms",
        "--cores",
        cores,
        "--json",
        json.to_str().unwrap(),
    ]);
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

fn median_kpps(result: &serde_json::Value, size: u64) -> f64 {
    let point = result["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["size"] == size)
        .unwrap();
    let mut rates: Vec<f64> = point["repetitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rx_frames"].as_f64().unwrap() / r["elapsed_s"].as_f64().unwrap() / 1e3)
        .collect();
    rates.sort_by(f64::total_cmp);
    (rates[0] + rates[rates.len() - 1]) / 2.0
}

#[test]
fn a_lab_sweep_counts_at_the_sink_and_compares() {
    if !root_or_skip("a_lab_sweep_counts_at_the_sink_and_compares") {
        return;
    }
    if !common::live_frames_or_skip("a_lab_sweep_counts_at_the_sink_and_compares") {
        return;
    }
    let lab = common::lab("sw", 2);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("one.json"), dir.path().join("two.json"));
    let before = lab.sink_counters().unwrap();
    let one = sweep(&lab.sender, &a, "0");
    let at_sink = lab.sink_counters().unwrap().since(before);
    assert_eq!(one["measured_at"], "sink");
    // Without --backend the sweep measures auto's choice, which on the lab's veth is live.
    assert_eq!(one["context"]["backend"], "live");
    assert_eq!(one["context"]["mode"], "live (redirect)");
    assert_eq!(one["context"]["backend_choice"]["backend"], "live");
    let mut counted = 0;
    for point in one["points"].as_array().unwrap() {
        let reps = point["repetitions"].as_array().unwrap();
        assert_eq!(reps.len(), 2);
        for r in reps {
            assert_eq!(r["rx_frames"], r["tx_frames"], "a frame was lost: {r}");
            let size = point["size"].as_u64().unwrap();
            assert_eq!(
                r["rx_bytes"].as_u64().unwrap(),
                r["rx_frames"].as_u64().unwrap() * (size - 4)
            );
            counted += r["rx_frames"].as_u64().unwrap();
        }
    }
    // The sink also saw the warm-ups, which the file does not count.
    assert!(
        at_sink.packets > counted && counted > 0,
        "sink {} vs file {counted}",
        at_sink.packets
    );

    let two = sweep(&lab.sender, &b, "0,1");
    let out = linerate_ok(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    for size in [64, 256] {
        let ratio = median_kpps(&two, size) / median_kpps(&one, size);
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("| {size:>4} |")))
            .unwrap_or_else(|| panic!("no row for {size} in {out}"));
        let shown: f64 = row
            .split('|')
            .map(str::trim)
            .find_map(|cell| cell.strip_suffix('×'))
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("no ratio in {row}"));
        assert!(
            (shown - ratio).abs() <= 0.0051,
            "ratio {ratio:.3} shown as {shown} in {row}"
        );
    }
}

#[test]
fn bad_sweeps_and_comparisons_are_refused() {
    let line = linerate_usage_error(&["sweep", "-i", "lo", "--sizes", "64,abc"]);
    assert!(line.contains("abc"), "{line}");
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, "{\"format\": \"linerate-sweep/1\", \"points\": [").unwrap();
    let line = linerate_usage_error(&[
        "compare",
        empty.to_str().unwrap(),
        corrupt.to_str().unwrap(),
    ]);
    assert!(line.contains("empty.json"), "{line}");
    let line = linerate_usage_error(&[
        "compare",
        corrupt.to_str().unwrap(),
        empty.to_str().unwrap(),
    ]);
    assert!(line.contains("corrupt.json"), "{line}");
    if !root_or_skip("bad_sweeps_and_comparisons_are_refused (root part)") {
        return;
    }
    let lab = common::lab("swb", 1);
    let line = linerate_usage_error(&["sweep", "-i", &lab.sender, "--sizes", "64,1519"]);
    assert!(line.contains("1519"), "{line}");
    let pair = VethPair::new(&unique_name("swd"));
    let down = Command::new("ip")
        .args(["link", "set", &pair.a(), "down"])
        .status()
        .unwrap();
    assert!(down.success());
    let line = linerate_usage_error(&["sweep", "-i", &pair.a(), "--sizes", "64"]);
    assert!(line.contains("down"), "{line}");
    // Two sweeps that share no size cannot be compared.
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for (file, size) in [(&a, "64"), (&b, "128")] {
        linerate_ok(&[
            "sweep",
            "-i",
            &lab.sender,
            "--sizes",
            size,
            "-d",
            "100ms",
            "--repeat",
            "1",
            "--warmup",
            "10ms",
            "--json",
            file.to_str().unwrap(),
        ]);
    }
    let line = linerate_usage_error(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(line.contains("share no frame size"), "{line}");
}

/// A file that must come through untouched, and a symbolic link to it planted at `at`.
fn plant_link(dir: &std::path::Path, at: &str) -> std::path::PathBuf {
    let victim = dir.join(format!("victim-{at}"));
    std::fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(at)).unwrap();
    victim
}

#[test]
fn outputs_are_checked_before_the_first_trial_and_never_followed() {
    if !root_or_skip("outputs_are_checked_before_the_first_trial_and_never_followed") {
        return;
    }
    let lab = common::lab("swo", 1);
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let victims = [
        plant_link(dir.path(), "link.json"),
        plant_link(dir.path(), "t.repetitions.csv"),
        plant_link(dir.path(), "link.svg"),
    ];
    let bad: [&[&str]; 5] = [
        &["--json", "/nonexistent-dir/a.json"],
        &["--csv", "/nonexistent-dir/a.csv"],
        &["--plot", "/nonexistent-dir/a.svg"],
        &["--json", &d("link.json")],
        &["--csv", &d("t.csv")],
    ];
    let before = lab.sink_counters().unwrap();
    for extra in bad {
        let mut args = vec!["sweep", "-i", &lab.sender, "--sizes", "64", "-d", "2s"];
        args.extend_from_slice(extra);
        let line = linerate_usage_error(&args);
        assert!(
            line.contains(extra[1]) || line.contains("t.repetitions.csv"),
            "{line}"
        );
    }
    let line = linerate_usage_error(&[
        "sweep",
        "-i",
        &lab.sender,
        "--sizes",
        "64",
        "--plot",
        &d("link.svg"),
    ]);
    assert!(line.contains("symbolic link"), "{line}");
    assert_eq!(
        lab.sink_counters().unwrap().since(before).packets,
        0,
        "a trial ran before the outputs were checked"
    );
    for v in &victims {
        assert_eq!(
            std::fs::read_to_string(v).unwrap(),
            "keep",
            "{v:?} written through"
        );
    }
    // The files it writes are named, and an earlier result is replaced, not appended to.
    std::fs::write(d("ok.json"), "earlier").unwrap();
    let out = common::linerate(&[
        "sweep",
        "-i",
        &lab.sender,
        "--sizes",
        "64",
        "-d",
        "100ms",
        "--repeat",
        "1",
        "--warmup",
        "10ms",
        "--json",
        &d("ok.json"),
        "--csv",
        &d("ok.csv"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for f in ["ok.json", "ok.csv", "ok.repetitions.csv"] {
        assert!(stderr.contains(&format!("wrote {}", d(f))), "{f}: {stderr}");
    }
    // Issue 41: with stderr no terminal the bar is hidden, and a line a run says how far.
    assert!(
        stderr.contains("sweep 1/2: 64 B") && stderr.contains("sweep 2/2: 64 B"),
        "{stderr}"
    );
    common::json(&std::fs::read_to_string(d("ok.json")).unwrap());
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    left.sort();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// A sweep of 64 and 128 B, 50 repetitions of 300 ms, cut by `cut` once two whole
/// repetitions have ended: its output and the JSON it wrote.
fn cut_sweep(
    lab: &linerate_lab::LabGuard,
    name: &str,
    cut: impl FnOnce(&std::process::Child),
) -> (std::process::Output, serde_json::Value) {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join(format!("{name}.json"));
    let before = lab.sink_counters().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "sweep",
            "-i",
            &lab.sender,
            "--sizes",
            "64,128",
            "-d",
            "300ms",
            "--repeat",
            "50",
            "--warmup",
            "100ms",
            "--json",
        ])
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Frames arriving at the sink mean the warm-up has begun; a second later at least two
    // 300 ms repetitions have ended and the 50th has not.
    let deadline = Instant::now() + Duration::from_secs(20);
    while lab.sink_counters().unwrap().since(before).packets == 0 {
        assert!(Instant::now() < deadline, "the sweep never sent");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_secs(1));
    cut(&child);
    let out = child.wait_with_output().unwrap();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; stderr: {}",
            json.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, serde_json::from_str(&text).unwrap())
}

/// A sweep killed (SIGKILL) while it measures leaves nothing beside the files it would have
/// written: their temporary files are made only when they are written (issue 40 #13).
#[test]
fn a_killed_sweep_leaves_no_temporary_file_behind() {
    use std::time::{Duration, Instant};
    if !root_or_skip("a_killed_sweep_leaves_no_temporary_file_behind") {
        return;
    }
    let lab = common::lab("swk", 1);
    let dir = tempfile::tempdir().unwrap();
    let before = lab.sink_counters().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["sweep", "-i", &lab.sender, "--sizes", "64", "-d", "300ms"])
        .args(["--repeat", "50", "--warmup", "100ms", "--json"])
        .arg(dir.path().join("r.json"))
        .arg("--csv")
        .arg(dir.path().join("r.csv"))
        .arg("--plot")
        .arg(dir.path().join("r.svg"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while lab.sink_counters().unwrap().since(before).packets == 0 {
        assert!(Instant::now() < deadline, "the sweep never sent");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn an_interrupted_sweep_is_marked_and_keeps_only_whole_repetitions() {
    if !root_or_skip("an_interrupted_sweep_is_marked_and_keeps_only_whole_repetitions") {
        return;
    }
    let lab = common::lab("swi", 1);
    let (out, result) = cut_sweep(&lab, "cut", |child| {
        let kill = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("INTERRUPTED"));
    assert_eq!(result["interrupted"], true);
    let points = result["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "128 B never ran: {result}");
    let reps = points[0]["repetitions"].as_array().unwrap();
    assert!(
        !reps.is_empty() && reps.len() < 50,
        "{} repetitions",
        reps.len()
    );
    for r in reps {
        let elapsed = r["elapsed_s"].as_f64().unwrap();
        assert!(elapsed >= 0.29, "a cut-short repetition was kept: {r}");
    }
}

#[test]
fn a_sweep_whose_port_fails_mid_run_still_writes_what_it_measured() {
    if !root_or_skip("a_sweep_whose_port_fails_mid_run_still_writes_what_it_measured") {
        return;
    }
    let lab = common::lab("swf", 1);
    let (out, result) = cut_sweep(&lab, "failed", |_| {
        let down = Command::new("ip")
            .args(["link", "set", &lab.sender, "down"])
            .status()
            .unwrap();
        assert!(down.success());
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a system error: {stderr}");
    assert!(stderr.contains("cut short"), "{stderr}");
    assert_eq!(result["interrupted"], true);
    let reps = result["points"][0]["repetitions"].as_array().unwrap();
    assert!(!reps.is_empty(), "{result}");
}

/// The `--backends` file's repetitions of `backend` at `size`.
fn backend_reps<'a>(
    result: &'a serde_json::Value,
    size: u64,
    backend: &str,
) -> &'a Vec<serde_json::Value> {
    let point = result["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["size"] == size)
        .unwrap_or_else(|| panic!("no point at {size} B in {result}"));
    point["backends"][backend]["repetitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no {backend} at {size} B in {point}"))
}

#[test]
fn a_backends_sweep_measures_each_backend_in_turn_and_reports_a_column_each() {
    if !root_or_skip("a_backends_sweep_measures_each_backend_in_turn_and_reports_a_column_each") {
        return;
    }
    if !common::live_frames_or_skip(
        "a_backends_sweep_measures_each_backend_in_turn_and_reports_a_column_each",
    ) {
        return;
    }
    let lab = common::lab("swm", 2);
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("m.json"), dir.path().join("m.csv"));
    let before = lab.sink_counters().unwrap();
    let table = linerate_ok(&[
        "sweep",
        "-i",
        &lab.sender,
        "--backends",
        "live,afpacket",
        "--sizes",
        "64,256",
        "-d",
        "200ms",
        "--repeat",
        "2",
        "--warmup",
        "50ms",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let at_sink = lab.sink_counters().unwrap().since(before);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["format"], "linerate-sweep-backends/1");
    assert_eq!(result["measured_at"], "sink");
    let backends: Vec<&str> = result["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, ["live", "afpacket"]);
    assert_eq!(result["backends"][0]["context"]["mode"], "live (redirect)");
    assert_eq!(result["skipped"], serde_json::json!([]));
    let mut counted = 0;
    for size in [64, 256] {
        for backend in ["live", "afpacket"] {
            let reps = backend_reps(&result, size, backend);
            assert_eq!(reps.len(), 2, "{backend} at {size} B");
            for r in reps {
                assert_eq!(
                    r["rx_frames"], r["tx_frames"],
                    "{backend} lost a frame: {r}"
                );
                assert_eq!(
                    r["rx_bytes"].as_u64().unwrap(),
                    r["rx_frames"].as_u64().unwrap() * (size - 4)
                );
                counted += r["rx_frames"].as_u64().unwrap();
            }
        }
    }
    // The sink also saw the warm-ups, which the file does not count.
    assert!(
        at_sink.packets > counted && counted > 0,
        "sink {} vs file {counted}",
        at_sink.packets
    );

    let mut reader = csv::Reader::from_path(&csv).unwrap();
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
    };
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    for (row, size) in rows.iter().zip([64, 256]) {
        assert_eq!(&row[column("size")], size.to_string());
        for backend in ["live", "afpacket"] {
            let point = result["points"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["size"] == size)
                .unwrap();
            let median = point["backends"][backend]["summary"]["kpps_median"]
                .as_f64()
                .unwrap();
            assert_eq!(
                row[column(&format!("{backend}_kpps_median"))],
                format!("{median:.3}")
            );
            assert_eq!(&row[column(&format!("{backend}_repetitions"))], "2");
        }
    }

    let header_line = table.lines().next().unwrap();
    for column in ["live Kpps", "afpacket Kpps", "afpacket/live"] {
        assert!(header_line.contains(column), "no {column} in {table}");
    }
    for size in [64, 256] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("| {size:>4} |"))),
            "no row for {size} in {table}"
        );
    }
    assert!(table.contains("interleaved"), "{table}");

    // `all` skips, with its reason, a backend that cannot run as asked: live takes no --queues.
    let out = common::linerate(&[
        "sweep",
        "-i",
        &lab.sender,
        "--backends",
        "all",
        "--queues",
        "0",
        "--sizes",
        "64",
        "-d",
        "100ms",
        "--repeat",
        "1",
        "--warmup",
        "10ms",
        "--json",
        "-",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("live skipped"), "{stderr}");
    let all = common::json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(all["skipped"][0]["backend"], "live");
    let why = all["skipped"][0]["why"].as_str().unwrap();
    assert!(why.contains("--queues"), "{why}");
    let backends: Vec<&str> = all["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, ["afxdp", "afpacket"]);
    for backend in backends {
        assert_eq!(backend_reps(&all, 64, backend).len(), 1);
    }
}

#[test]
fn backends_is_all_or_a_list_and_not_with_backend() {
    let line = linerate_usage_error(&[
        "sweep",
        "-i",
        "lo",
        "--backend",
        "live",
        "--backends",
        "all",
    ]);
    assert!(
        line.contains("--backends") && line.contains("--backend"),
        "{line}"
    );
    let line = linerate_usage_error(&["sweep", "-i", "lo", "--backends", "auto"]);
    assert!(line.contains("`auto`"), "{line}");
    let line = linerate_usage_error(&["sweep", "-i", "lo", "--backends", "live,live"]);
    assert!(line.contains("twice"), "{line}");
    let line = linerate_usage_error(&["sweep", "-i", "lo", "--backends", "pcap"]);
    assert!(
        line.contains("`pcap`") && line.contains("afpacket"),
        "{line}"
    );
    let line = linerate_usage_error(&["sweep", "-i", "lo", "--backends"]);
    assert!(line.contains("--backends"), "{line}");
}
