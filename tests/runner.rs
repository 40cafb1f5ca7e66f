//! The engine's one runner on a real AF_XDP port (root): a worker that panics or loses its
//! interface ends the run at once, with the report so far and the cause, and the CLI prints
//! that report and exits 1.
#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::{json, root_or_skip};
use linerate_afxdp::{XskOptions, XskPort};
use linerate_engine::{EngineError, RunConfig, WorkerFailure, WorkerSpec};
use linerate_port::Usage;
use linerate_port::fault::{Fault, FaultyPort, quiet_injected_panics};
use linerate_stream::{Limits, Plan, StreamSpec};

#[test]
fn an_afxdp_worker_that_panics_ends_the_run_with_the_counts_so_far() {
    if !root_or_skip("an_afxdp_worker_that_panics_ends_the_run_with_the_counts_so_far") {
        return;
    }
    let lab = common::lab("rp", 2);
    let xsk = XskPort::open(&lab.sender, XskOptions::default()).expect("open");
    let port = FaultyPort::new(xsk, 1, 1000, Fault::Panic);
    let spec = StreamSpec {
        dst_mac: Some(lab.receiver_mac.into()),
        ..StreamSpec::default()
    };
    let plan = Plan::compile(&[spec], &Limits::default()).expect("plan");
    let config = RunConfig {
        workers: (0..2)
            .map(|q| WorkerSpec {
                core: None,
                queue: q,
            })
            .collect(),
        batch: 64,
        duration: Some(Duration::from_secs(30)),
        count: None,
        stop: Arc::new(AtomicBool::new(false)),
        tick: Duration::from_millis(100),
        start_at: None,
        control: None,
    };
    let start = Instant::now();
    quiet_injected_panics();
    let err = linerate_engine::run(&port, &plan, &config, &()).expect_err("the run must fail");
    // 64 000 frames at the lab's ~1 Mpps per core, then the panic: well under 30 s.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(!err.is_usage());
    let EngineError::Interrupted(i) = err else {
        panic!("not interrupted: {err}");
    };
    assert!(
        matches!(&i.failure, WorkerFailure::Panicked { worker: 1, .. }),
        "{}",
        i.failure
    );
    let r = &i.report;
    assert_eq!(r.workers[1].submitted, 64_000, "its 1000 submits of 64");
    assert_eq!(
        r.workers[0].completed, r.workers[0].submitted,
        "halted and drained"
    );
    assert_eq!(r.submitted, r.workers[0].submitted + 64_000);
}

/// `tx --json` on a lab whose sender interface is deleted (`delete`) or set down mid-run.
fn interface_lost_mid_run(delete: bool) {
    let lab = common::lab(if delete { "rd" } else { "rn" }, 1);
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tx",
            "-q",
            "--json",
            "--backend",
            "afxdp",
            "-i",
            &lab.sender,
            "-d",
            "20s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run linerate");
    std::thread::sleep(Duration::from_millis(1500));
    let action: &[&str] = if delete {
        &["link", "del", &lab.sender]
    } else {
        &["link", "set", &lab.sender, "down"]
    };
    let ip = Command::new("ip").args(action).status().expect("ip");
    assert!(ip.success());
    let lost_at = Instant::now();
    let out = child.wait_with_output().expect("wait");
    assert!(
        lost_at.elapsed() < Duration::from_secs(7),
        "{:?}",
        lost_at.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a system error: {stderr}");
    let cause = if delete { "disappeared" } else { "is down" };
    assert!(stderr.contains(cause), "{stderr}");
    let report = json(&String::from_utf8_lossy(&out.stdout));
    assert!(report["submitted"].as_u64().unwrap() > 0, "{report}");
}

#[test]
fn an_interface_set_down_mid_run_leaves_the_report_and_exit_1() {
    if root_or_skip("an_interface_set_down_mid_run_leaves_the_report_and_exit_1") {
        interface_lost_mid_run(false);
    }
}

#[test]
fn an_interface_deleted_mid_run_leaves_the_report_and_exit_1() {
    if root_or_skip("an_interface_deleted_mid_run_leaves_the_report_and_exit_1") {
        interface_lost_mid_run(true);
    }
}
