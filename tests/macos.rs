//! macOS root tests: the feth lab, the /dev/bpf receiver and both write paths, run by the
//! workflow's macOS job with sudo (`sudo -E cargo test --test macos -- --test-threads=1`).
//! Short known answers, seconds each. Each test builds its own lab (a fresh name) and removes it
//! even when it fails. Nothing here runs on Linux; on a Mac without root each test says it
//! skipped, unless CI=true makes that a failure.
#![cfg(target_os = "macos")]

mod common;

use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{linerate, linerate_ok};
use linerate_bpfdev::capture::{CaptureCounts, Keep};
use linerate_bpfdev::{BpfOptions, BpfReader, CaptureThread, WriteMode};
use linerate_lab::feth::Feth;
use serde_json::Value;

/// One lab at a time: `lab up` takes the lowest free feth pair, and two at once would race for it.
static ONE_LAB: Mutex<()> = Mutex::new(());

fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test} needs root, and CI=true forbids skipping it: run the tests with sudo"
    );
    eprintln!("skipping {test}: needs root (set CI=true to make this a failure)");
    false
}

/// A lab made by the binary, removed by it when dropped.
struct Lab {
    name: String,
    sender: String,
    receiver: String,
}

impl Lab {
    fn up(prefix: &str) -> Lab {
        let name = linerate_lab::unique_name(prefix);
        linerate_ok(&["lab", "up", "--name", &name]);
        let status: Value =
            serde_json::from_str(&linerate_ok(&["lab", "status", "--name", &name, "--json"]))
                .expect("lab status --json");
        Lab {
            sender: status["sender"].as_str().expect("sender").to_owned(),
            receiver: status["receiver"].as_str().expect("receiver").to_owned(),
            name,
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let out = linerate(&["lab", "down", "--name", &self.name]);
        if !out.status.success() && !std::thread::panicking() {
            panic!(
                "lab down {}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

fn ifconfig(args: &[&str]) -> (bool, String) {
    let out = Command::new("ifconfig")
        .args(args)
        .output()
        .expect("ifconfig");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn exists(iface: &str) -> bool {
    ifconfig(&["-l"]).1.split_whitespace().any(|i| i == iface)
}

/// Whether this macOS has `BIOCSBATCHWRITE` (14.4 and later).
fn has_batch_write() -> bool {
    let out = Command::new("sw_vers")
        .arg("-productVersion")
        .output()
        .expect("sw_vers");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text
        .trim()
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= (14, 4)
}

#[test]
fn lab_up_status_down_and_never_touches_a_foreign_feth() {
    if !root_or_skip("lab_up_status_down_and_never_touches_a_foreign_feth") {
        return;
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    // Someone else's feth at the lowest free unit: the lab must skip its pair.
    let mut unit = 0;
    while exists(&format!("feth{unit}")) || exists(&format!("feth{}", unit + 1)) {
        unit += 2;
    }
    let foreign = format!("feth{unit}");
    assert!(ifconfig(&[&foreign, "create"]).0, "create {foreign}");
    struct Destroy(String);
    impl Drop for Destroy {
        fn drop(&mut self) {
            let _ = Command::new("ifconfig").args([&self.0, "destroy"]).status();
        }
    }
    let _foreign = Destroy(foreign.clone());

    let lab = Lab::up("mo");
    assert_ne!(lab.sender, foreign);
    assert_ne!(lab.receiver, foreign);
    let (ok, text) = ifconfig(&[&lab.sender]);
    assert!(
        ok && text.contains(&format!("peer: {}", lab.receiver)),
        "{text}"
    );
    assert!(text.contains("mtu 1500"), "{text}");
    let (ok, text) = ifconfig(&[&lab.receiver]);
    assert!(
        ok && text.contains(&format!("peer: {}", lab.sender)),
        "{text}"
    );
    // The library finds the lab from its sender end, as `tx -i` and `sweep` do.
    assert_eq!(
        Feth::system()
            .lab_of(&lab.sender)
            .unwrap()
            .map(|l| l.receiver),
        Some(lab.receiver.clone())
    );
    assert_eq!(
        linerate(&["lab", "up", "--name", &lab.name]).status.code(),
        Some(2),
        "a second lab up of the same name is refused"
    );

    let (sender, receiver, name) = (lab.sender.clone(), lab.receiver.clone(), lab.name.clone());
    drop(lab);
    assert!(!exists(&sender) && !exists(&receiver));
    assert!(
        exists(&foreign),
        "lab down destroyed {foreign}, which it did not make"
    );
    // Twice is fine.
    linerate_ok(&["lab", "down", "--name", &name]);

    // A record naming an interface someone else now holds: down refuses and touches nothing.
    let lab = Lab::up("mo");
    let (s, r) = (lab.sender.clone(), lab.receiver.clone());
    assert!(ifconfig(&[&r, "destroy"]).0);
    assert!(
        ifconfig(&[&r, "create"]).0,
        "someone else's {r}, not peered"
    );
    let out = linerate(&["lab", "down", "--name", &lab.name]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(exists(&r) && exists(&s), "the refusal touched nothing");
    // What the refusal left is for its owner to remove; here that is us. Then the record goes.
    assert!(ifconfig(&[&r, "destroy"]).0 && ifconfig(&[&s, "destroy"]).0);
    linerate_ok(&["lab", "down", "--name", &lab.name]);
    let out = linerate(&["lab", "status", "--name", &lab.name]);
    assert!(!out.status.success(), "the record is gone");
    // Dropping would run `lab down` a third time; it is done.
    std::mem::forget(lab);
}

/// `tx` on a lab's sender end counts at its receiver: the /dev/bpf capture on the far feth.
#[test]
fn exactly_100000_frames_arrive_and_are_counted_by_the_bpf_receiver() {
    if !root_or_skip("exactly_100000_frames_arrive_and_are_counted_by_the_bpf_receiver") {
        return;
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::up("mx");
    // Paced so the capture never falls behind: this is about exactness, not speed.
    let out = linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "-s",
        "64",
        "--count",
        "100000",
        "--rate",
        "200k",
        "--rx",
        "--json",
        "--quiet",
    ]);
    let report: Value = serde_json::from_str(&out).expect("tx --json");
    assert_eq!(report["completed"], 100_000, "{report}");
    assert_eq!(report["sink"]["packets"], 100_000, "{report}");
    assert_eq!(report["sink"]["bytes"], 100_000 * 60, "{report}");
    assert_eq!(report["sink"]["lost"], 0, "{report}");
    // The signed copy, per flow through linerate_rx's analysis: all there, in order.
    let flow = &report["rx"]["flows"][0];
    assert_eq!(flow["tx_frames"], 100_000, "{report}");
    assert_eq!(flow["rx_frames"], 100_000, "{report}");
    assert_eq!(flow["lost"], 0, "{report}");
    assert_eq!(flow["late"], 0, "{report}");
    assert_eq!(flow["duplicates"], 0, "{report}");
    let lat = &flow["latency"];
    assert!(
        lat["min"].as_u64().unwrap() > 0 && lat["max"].as_u64().unwrap() < 1_000_000_000,
        "{report}"
    );
    // The write path this macOS offers.
    let mode = report["workers"][0]["mode"].as_str().unwrap();
    let want = if has_batch_write() {
        "bpf batch write"
    } else {
        "bpf single write"
    };
    assert_eq!(mode, want, "{report}");
}

/// What one bpf port sent and a capture on the lab's receiver counted.
struct Sent {
    /// The worker's write mode at the end of the run (after any fallback).
    mode: String,
    writes: u64,
    fallbacks: u64,
    frames: u64,
    bytes: u64,
}

/// Sends `count` 64-byte frames at full rate through a bpf port opened with `options` to the
/// lab's receiver, counted by a capture there.
fn send_and_count(lab: &Lab, options: &BpfOptions, count: u64) -> Sent {
    let mut feth = Feth::system();
    let mac = feth.mac(&lab.receiver).unwrap();
    // 8 MiB when the job raised debug.bpf_maxbufsize: the whole run fits in one buffer.
    let reader = BpfReader::open(
        &lab.receiver,
        8 * 1024 * 1024,
        Duration::from_millis(50),
        Keep::To(mac),
    )
    .unwrap();
    let capture = CaptureThread::spawn(
        reader,
        CaptureCounts::new(0, 0),
        linerate_bpfdev::sink::host_clocks,
    );
    let port = linerate_bpfdev::open_with(&lab.sender, options).unwrap();
    let info = linerate_port::Port::info(&port).clone();
    let spec = linerate_stream::StreamSpec {
        size: 64,
        ..linerate_stream::StreamSpec::seed()
    };
    let limits = linerate_stream::Limits {
        mtu: info.mtu,
        default_src_mac: info.mac,
        default_dst_mac: Some(mac),
        ..linerate_stream::Limits::default()
    };
    let plan = linerate_stream::Plan::compile(&[spec], &limits).unwrap();
    let config = linerate_engine::RunConfig {
        workers: vec![linerate_engine::WorkerSpec {
            core: None,
            queue: 0,
        }],
        batch: 64,
        duration: None,
        count: Some(count),
        stop: Arc::new(AtomicBool::new(false)),
        tick: Duration::from_secs(1),
        start_at: None,
        control: None,
    };
    let report = linerate_engine::run(&port, &plan, &config, &()).unwrap();
    assert_eq!(report.completed, count);
    let deadline = Instant::now() + Duration::from_secs(5);
    while capture.frames_bytes().unwrap().0 < count && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        capture.drops(),
        0,
        "the capture fell behind (is debug.bpf_maxbufsize raised?)"
    );
    let (frames, bytes) = capture.frames_bytes().unwrap();
    let w = &report.workers[0];
    Sent {
        mode: w.mode.clone(),
        writes: w.stats["bpf_writes"],
        fallbacks: w.stats["bpf_batch_fallbacks"],
        frames,
        bytes,
    }
}

#[test]
fn the_batch_write_path_delivers_every_frame() {
    if !root_or_skip("the_batch_write_path_delivers_every_frame") {
        return;
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::up("mb");
    let n = 20_000;
    let sent = send_and_count(&lab, &BpfOptions::default(), n);
    assert_eq!((sent.frames, sent.bytes), (n, n * 60));
    if has_batch_write() {
        // Batches of up to 64 frames per write(), and the kernel took every one of them.
        assert_eq!(sent.mode, WriteMode::Batch.describe());
        assert_eq!(sent.fallbacks, 0);
        assert!(
            sent.writes <= n / 8,
            "{} writes for {n} frames",
            sent.writes
        );
    } else {
        // Before 14.4 the ioctl is refused and every frame is a write of its own.
        assert_eq!(sent.mode, WriteMode::Single.describe());
        assert_eq!(sent.writes, n);
    }
}

#[test]
fn the_one_write_per_frame_fallback_delivers_every_frame() {
    if !root_or_skip("the_one_write_per_frame_fallback_delivers_every_frame") {
        return;
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::up("ms");
    let options = BpfOptions {
        batch_write: false,
        ..BpfOptions::default()
    };
    let n = 20_000;
    let sent = send_and_count(&lab, &options, n);
    assert_eq!(sent.mode, WriteMode::Single.describe());
    assert_eq!(sent.writes, n);
    assert_eq!((sent.frames, sent.bytes), (n, n * 60));
}

/// `sweep --lab` on a Mac: its own feth lab, counted at the receiver, gone afterwards.
#[test]
fn a_lab_sweep_of_64_and_1518_bytes_is_measured_at_the_receiver() {
    if !root_or_skip("a_lab_sweep_of_64_and_1518_bytes_is_measured_at_the_receiver") {
        return;
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let before = ifconfig(&["-l"]).1;
    let out = linerate(&[
        "sweep", "--lab", "--sizes", "64,1518", "-d", "1s", "--warmup", "200ms", "--json", "-",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).expect("sweep --json -");
    assert_eq!(result["measured_at"], "sink", "{result}");
    let points = result["points"].as_array().unwrap();
    assert_eq!(
        points
            .iter()
            .map(|p| p["size"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [64, 1518]
    );
    for p in points {
        for r in p["repetitions"].as_array().unwrap() {
            let (tx, rx) = (
                r["tx_frames"].as_u64().unwrap(),
                r["rx_frames"].as_u64().unwrap(),
            );
            assert!(tx > 0, "{result}");
            // At full speed the capture may fall behind; it says so, and then only then may
            // the receiver count less than was sent. Never more: the filter keeps our frames.
            if stderr.contains("overflowed") {
                assert!(rx <= tx, "{result}");
            } else {
                assert_eq!(rx, tx, "{result}\n{stderr}");
            }
            let size = p["size"].as_u64().unwrap();
            assert_eq!(r["rx_bytes"].as_u64().unwrap(), rx * (size - 4), "{result}");
        }
    }
    assert_eq!(ifconfig(&["-l"]).1, before, "the sweep's lab is gone");
}
