//! `linerate rfc2544` in both directions at once (issue 23): hosts on a router lab's two ports,
//! a shaper each way at different rates (so a mix-up of the directions shows), the aggregate
//! and each direction's NDR against the shapers' arithmetic. Plus the usage errors of the hosts'
//! flags, which need no root.

#![cfg(target_os = "linux")]

mod common;

use std::path::Path;

use common::{json, linerate_ok, linerate_usage_error, root_or_skip};
use linerate_lab::{DutKind, Impairments, LabConfig, LabGuard, unique_name};
use serde_json::Value;

/// 1518-byte frames: 1514 bytes as the kernel counts them (no FCS). The fewest frames for the
/// rates: the sender's catch-up after a hold-up on a loaded machine (it still sends every frame
/// a trial asks for) is then fewest frames at once, and the router's own work least.
const SIZE: f64 = 1514.0;
const FORWARD_BPS: u64 = 20_000_000;
const REVERSE_BPS: u64 = 30_000_000;
const TRIAL_S: f64 = 1.0;

/// The lab's tbf at `bps` (crates/lab/src/linux/dut.rs `tbf`), in frames per second: its rate
/// r, and what a trial of d seconds can pass without loss, r + (burst + queue)/d, its bucket
/// being 5 ms at the rate (at least 3036 bytes) and its queue 50 ms plus the bucket: the NDR
/// lies between the two, nearer the second the better the trial fills the queue.
fn shaper(bps: u64) -> (f64, f64) {
    let bytes = bps as f64 / 8.0;
    let burst = (bytes / 200.0).max(3036.0);
    let queue = bytes / 20.0 + burst;
    (
        bytes / SIZE,
        bytes / SIZE + (burst + queue) / SIZE / TRIAL_S,
    )
}

/// (goal loss ratio, throughput fps) of a throughput result's goals.
fn goals(t: &Value) -> Vec<(f64, Option<f64>)> {
    t["goals"]
        .as_array()
        .unwrap_or_else(|| panic!("no goals: {t}"))
        .iter()
        .map(|g| {
            (
                g["goal"]["loss_ratio"].as_f64().expect("a loss ratio"),
                g["relevant_lower_fps"].as_f64(),
            )
        })
        .collect()
}

fn ndr(t: &Value) -> f64 {
    let g = goals(t);
    assert_eq!(g[0].0, 0.0, "the first goal is NDR: {g:?}");
    g[0].1.unwrap_or_else(|| panic!("an NDR: {t}"))
}

/// Within the shaper's arithmetic for a trial: no more than 5 % below what a trial can pass
/// (the search width, 2 %, and a sender delayed by the shared cores; 5 % below is about the
/// shaper's bare rate, which tbf never drops below) and no more than 10 % above it (a trial the
/// sender stretches by δ lets tbf pass r·δ more, as in tests/rfc2544.rs's one-way shaper test).
fn near(name: &str, got: f64, (_, most): (f64, f64)) -> Result<(), String> {
    if (most * 0.95..=most * 1.10).contains(&got) {
        Ok(())
    } else {
        Err(format!(
            "{name}: NDR {got:.0} fps, the shaper's arithmetic {most:.0}"
        ))
    }
}

#[test]
fn bidirectional_ndr_meets_each_directions_shaper() {
    if !root_or_skip("bidirectional_ndr_meets_each_directions_shaper") {
        return;
    }
    let mut lab = LabGuard::up_with_dut(
        &LabConfig {
            name: unique_name("rbd"),
            queues: 1,
        },
        Some(DutKind::Router),
    )
    .expect("lab up with a router DUT");
    lab.impair(
        &Impairments {
            rate_bps: Some(FORWARD_BPS),
            reverse_rate_bps: Some(REVERSE_BPS),
            ..Default::default()
        },
        Path::new(env!("CARGO_BIN_EXE_linerate")),
    )
    .expect("impair the DUT both ways");
    let (west, _, _, east) = linerate_lab::routed_addresses(&lab.name);
    let (gw_west, gw_east) = lab.dut.as_ref().unwrap().gateways.unwrap();
    let west = format!(
        "name=west,port={},ipv4={west}/30,gateway={gw_west}",
        lab.sender
    );
    let east = format!(
        "name=east,port={}@{},ipv4={east}/30,gateway={gw_east}",
        lab.receiver, lab.netns
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let csv = dir.path().join("bidir.csv");
    // A search on two shared vCPUs now and then meets a sender held back mid-trial (a burst the
    // shaper drops), which lowers its NDR by a step; three searches, one within bounds.
    let mut v = Value::Null;
    common::within_three_attempts(|| {
        let started = std::time::Instant::now();
        let out = linerate_ok(&[
            "rfc2544",
            "throughput",
            "--host",
            &west,
            "--host",
            &east,
            "--bidir",
            "--sizes",
            "1518",
            "--trial",
            "1s",
            "--initial-trial",
            "100ms",
            "--max-rate",
            "4k",
            "--min-rate",
            "500",
            "--precision",
            "2%",
            "--drain",
            "200ms",
            "--goals",
            "0",
            "--cores",
            "0,1",
            "-q",
            "--csv",
            csv.to_str().unwrap(),
            "--json",
            "-",
        ]);
        v = json(&out);
        let size = &v["sizes"][0];
        let (fwd, rev) = (shaper(FORWARD_BPS), shaper(REVERSE_BPS));
        let aggregate = ndr(&size["throughput"]);
        let per: Vec<(String, f64)> = size["directions"]
            .as_array()
            .unwrap_or_else(|| panic!("no directions: {size}"))
            .iter()
            .map(|d| {
                (
                    d["direction"].as_str().unwrap().to_owned(),
                    ndr(&d["throughput"]),
                )
            })
            .collect();
        eprintln!(
            "aggregate NDR {aggregate:.0} fps per direction; per direction {per:?}; known {fwd:.0?} \
             (west-east, {FORWARD_BPS} bit/s) and {rev:.0?} (east-west, {REVERSE_BPS} bit/s); {:.1} s",
            started.elapsed().as_secs_f64()
        );
        assert_eq!(
            v["context"]["directions"],
            serde_json::json!(["west-east", "east-west"])
        );
        // Every direction must pass: the aggregate is the slower shaper's.
        assert_eq!(per.len(), 2, "{per:?}");
        near("aggregate", aggregate, fwd)?;
        near("west-east", per[0].1, fwd)?;
        near("east-west", per[1].1, rev)
    });
    // Every trial of the aggregate search logs both directions; a direction's search is marked.
    for t in v["trials"].as_array().unwrap() {
        let ds = t["directions"].as_array().expect("both directions' counts");
        assert_eq!(ds.len(), 2, "{t}");
        for d in ds {
            assert!(d["tx"].as_u64().unwrap() > 0, "{t}");
        }
    }
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv
        .lines()
        .filter(|l| l.starts_with("throughput,"))
        .collect();
    assert_eq!(rows.len(), 3, "aggregate and each direction: {csv}");
    assert!(
        rows[1].ends_with(",west-east") && rows[2].ends_with(",east-west"),
        "{csv}"
    );
}

#[test]
fn hosts_flags_are_checked_before_anything_opens() {
    let host = |n: &str, ip: &str| format!("name={n},port=nosuch{n},ipv4={ip}/30");
    let (a, b) = (host("a", "198.18.0.1"), host("b", "198.19.0.1"));
    let line = linerate_usage_error(&["rfc2544", "throughput", "--host", &a, "--bidir"]);
    assert!(
        line.contains("--bidir") && line.contains("two --host"),
        "{line}"
    );
    let line = linerate_usage_error(&["rfc2544", "throughput", "--host", &a, "--host", &b]);
    assert!(
        line.contains("--flow FROM:TO") && line.contains("--bidir"),
        "{line}"
    );
    let line = linerate_usage_error(&[
        "rfc2544",
        "throughput",
        "--host",
        &a,
        "--host",
        &b,
        "--bidir",
        "--rx",
    ]);
    assert!(line.contains("drop -i and --rx"), "{line}");
    let line = linerate_usage_error(&[
        "rfc2544",
        "throughput",
        "--host",
        &a,
        "--host",
        &b,
        "--flow",
        "a-b",
    ]);
    assert!(line.contains("write FROM:TO"), "{line}");
    let line = linerate_usage_error(&[
        "rfc2544",
        "throughput",
        "--host",
        &a,
        "--host",
        &b,
        "--bidir",
        "--src-ip",
        "10.0.0.1",
    ]);
    assert!(line.contains("the addresses are the hosts'"), "{line}");
    // Two directions leaving one port would each get half of what the load says.
    let c = "name=c,port=nosucha,ipv4=198.20.0.1/30".to_owned();
    let line = linerate_usage_error(&[
        "rfc2544",
        "throughput",
        "--host",
        &a,
        "--host",
        &b,
        "--host",
        &c,
        "--flow",
        "a:b",
        "--flow",
        "c:b",
    ]);
    assert!(line.contains("port of its own"), "{line}");
    // The reverse shaper's rate has the forward one's bounds, checked before the lab is looked
    // at; and tx takes --bidir as rfc2544 does.
    let line = linerate_usage_error(&[
        "lab",
        "impair",
        "--name",
        "nosuch",
        "--reverse-rate",
        "1kbps",
    ]);
    assert!(
        line.contains("--reverse-rate") && line.contains("8 kbit/s"),
        "{line}"
    );
    let line = linerate_usage_error(&["tx", "--host", &a, "--bidir"]);
    assert!(line.contains("two --host"), "{line}");
}
