//! `linerate convergence` (RFC 7747) on a BGP lab of its own: 100 prefixes, a withdraw, every
//! flow converged onto the next-best path and counted exactly; bad input refused in one line
//! with exit 2; nothing of the devices left behind.
#![cfg(target_os = "linux")]

mod common;

use std::process::Command;

use common::{json, linerate_usage_error, root_or_skip};
use linerate_lab::{DutKind, LabConfig, LabGuard, unique_name};

fn bgp_lab() -> LabGuard {
    LabGuard::up_with_dut(
        &LabConfig {
            name: unique_name("cvg"),
            queues: 1,
        },
        Some(DutKind::Bgp),
    )
    .expect("lab up with a BGP DUT")
}

#[test]
fn withdraw_converges_every_flow_onto_the_backup_path() {
    if !root_or_skip("withdraw_converges_every_flow_onto_the_backup_path") {
        return;
    }
    let lab = bgp_lab();
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["convergence", "--lab", &lab.name, "--prefixes", "100"])
        .args([
            "--rate",
            "20k",
            "--event",
            "withdraw",
            "--timeout",
            "60s",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run linerate convergence");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait for linerate");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "linerate convergence failed: {stderr}"
    );
    let r = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(r["prefixes"], 100);
    assert_eq!(r["flows"], 100);
    let (_, _, _, preferred) = linerate_lab::routed_addresses(&lab.name);
    let (_, backup) = linerate_lab::backup_addresses(&lab.name);
    assert_eq!(r["preferred_next_hop"], preferred.to_string());
    assert_eq!(r["backup_next_hop"], backup.to_string());
    let e = &r["events"][0];
    // The DUT's own FIB held every prefix via the backup and none via the preferred device.
    assert!(e["fib_ms"].as_f64().is_some(), "{e}");
    let rate = r["flow_rate_pps"].as_f64().unwrap();
    let mut lost = 0;
    for f in e["flows"].as_array().unwrap() {
        let n = f["lost"].as_u64().unwrap();
        lost += n;
        // Loss-derived time is lost / the flow's rate, as computed.
        assert_eq!(
            f["loss_ms"].as_f64().unwrap(),
            n as f64 * 1000.0 / rate,
            "{f}"
        );
        // Received after the event: through the backup path once converged.
        assert!(f["received"].as_u64().unwrap() > 0, "{f}");
        assert_eq!(f["outage_ms"].is_null(), n == 0, "{f}");
    }
    assert_eq!(e["lost"].as_u64().unwrap(), lost);
    // The run's accounting by the sender's count is exact: lost is sent − received.
    let a = &r["accounting"];
    let (sent, received) = (a["sent"].as_u64().unwrap(), a["received"].as_u64().unwrap());
    assert_eq!(a["lost"].as_u64().unwrap(), sent - received, "{a}");
    assert!(received > 0, "{a}");
    // The per-flow figures come from the sequence numbers the receiver saw reached (over
    // every CPU) less the frames received: once drained, exactly the sender's count.
    assert_eq!(a["gap_lost"], a["lost"], "{a}");
    assert!(a["inexact"].as_array().unwrap().is_empty(), "{a}");
    // The devices' daemons and namespaces went with the process.
    let left = common::device_namespaces_of(pid);
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn bad_input_is_refused_in_one_line() {
    if !root_or_skip("bad_input_is_refused_in_one_line") {
        return;
    }
    let missing = unique_name("cvn");
    let said = linerate_usage_error(&["convergence", "--lab", &missing]);
    assert!(said.contains("no lab named"), "{said}");
    let lab = LabGuard::up_with_dut(
        &LabConfig {
            name: unique_name("cvr"),
            queues: 1,
        },
        Some(DutKind::Router),
    )
    .expect("lab up with a router DUT");
    let said = linerate_usage_error(&["convergence", "--lab", &lab.name]);
    assert!(said.contains("not a BGP DUT"), "{said}");
    let said = linerate_usage_error(&["convergence", "--lab", &lab.name, "--prefixes", "0"]);
    assert!(said.contains("--prefixes 0"), "{said}");
    let said = linerate_usage_error(&["convergence", "--lab", &lab.name, "--event", "flap"]);
    assert!(said.contains("flap"), "{said}");
}
