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
    let lab = common::lab("sw", 2);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("one.json"), dir.path().join("two.json"));
    let before = lab.sink_counters().unwrap();
    let one = sweep(&lab.sender, &a, "0");
    let at_sink = lab.sink_counters().unwrap().since(before);
    assert_eq!(one["measured_at"], "sink");
    assert_eq!(one["context"]["backend"], "afxdp");
    assert_eq!(one["context"]["mode"], "copy");
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
