//! `linerate tx -i` over AF_XDP on a real veth lab (root): exact delivery counted by the XDP sink,
//! content decoded by tcpdump at the receiver, and bad input refused cleanly.
#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{
    VethPair, after, catch_tx, frame_len, json, linerate, linerate_ok, linerate_usage_error,
    root_or_skip, xdp_attached,
};
use linerate_lab::{LabGuard, unique_name};

fn lab(queues: u32) -> LabGuard {
    common::lab("ax", queues)
}

fn exact_delivery(cores: &str) {
    let lab = lab(2);
    let before = lab.sink_counters().unwrap();
    let out = linerate_ok(&[
        "tx",
        "--backend",
        "afxdp",
        "-q",
        "--json",
        "-i",
        &lab.sender,
        "-n",
        "1000000",
        "--cores",
        cores,
    ]);
    let report = json(&out);
    let after = lab.sink_counters().unwrap().since(before);
    assert_eq!(report["submitted"], 1_000_000);
    assert_eq!(report["completed"], 1_000_000);
    assert_eq!(report["bytes"], 60_000_000);
    assert_eq!(after.packets, 1_000_000, "sink count");
    assert_eq!(after.bytes, 60_000_000, "sink bytes");
    assert_eq!(report["sink"]["packets"], 1_000_000);
    assert_eq!(report["sink"]["lost"], 0);
    for w in report["workers"].as_array().unwrap() {
        assert_eq!(w["mode"], "copy");
        assert_eq!(w["stats"]["tx_invalid_descs"], 0);
    }
}

#[test]
fn a_million_frames_one_worker_arrive_exactly() {
    if root_or_skip("a_million_frames_one_worker_arrive_exactly") {
        exact_delivery("0");
    }
}

#[test]
fn a_million_frames_two_workers_two_queues_arrive_exactly() {
    if root_or_skip("a_million_frames_two_workers_two_queues_arrive_exactly") {
        exact_delivery("0,1");
    }
}

#[test]
fn frames_caught_at_the_receiver_decode_as_asked() {
    if !root_or_skip("frames_caught_at_the_receiver_decode_as_asked") {
        return;
    }
    let pair = VethPair::new(&unique_name("axc"));
    let mac = pair.b_mac();
    let frames = catch_tx(
        &pair,
        1000,
        &[
            "--backend",
            "afxdp",
            "-n",
            "1000",
            "--dst-mac",
            &mac,
            "--size",
            "128",
            "--vary",
            "src-port:inc:1000-1999",
            "--dst-ip",
            "198.18.0.77",
        ],
    );
    assert_eq!(frames.len(), 1000);
    let mut ports = BTreeSet::new();
    for f in &frames {
        assert_eq!(frame_len(f), 124, "{f}");
        assert!(f.contains(&format!("> {mac}")), "{f}");
        assert!(
            f.contains("[udp sum ok]") && !f.contains("bad cksum"),
            "{f}"
        );
        assert!(f.contains("> 198.18.0.77.9:"), "{f}");
        ports.insert(
            after(f, "length 110) ")
                .unwrap()
                .rsplit_once('.')
                .unwrap()
                .1
                .to_owned(),
        );
    }
    assert_eq!(ports, (1000..=1999).map(|p| p.to_string()).collect());
}

#[test]
fn bad_input_leaves_nothing_attached() {
    if !root_or_skip("bad_input_leaves_nothing_attached") {
        return;
    }
    let lab = lab(2);
    let line = linerate_usage_error(&["tx", "--backend", "afxdp", "-i", "nosuchif0", "-n", "1"]);
    assert!(
        line.contains("nosuchif0") && line.contains("does not exist"),
        "{line}"
    );
    let line = linerate_usage_error(&[
        "tx",
        "--backend",
        "afxdp",
        "-i",
        &lab.sender,
        "-n",
        "1",
        "--queues",
        "5",
    ]);
    assert!(line.contains("queue 5"), "{line}");
    let line = linerate_usage_error(&[
        "tx",
        "--backend",
        "afxdp",
        "-i",
        &lab.sender,
        "-n",
        "1",
        "--cores",
        "0,1",
        "--queues",
        "1,1",
    ]);
    assert!(line.contains("twice"), "{line}");
    let line = linerate_usage_error(&[
        "tx",
        "--backend",
        "afxdp",
        "-i",
        &lab.sender,
        "-n",
        "1",
        "--size",
        "1519",
    ]);
    assert!(line.contains("1519") && line.contains("MTU 1500"), "{line}");
    let line = linerate_usage_error(&[
        "tx",
        "--backend",
        "afxdp",
        "-i",
        &lab.sender,
        "-n",
        "1",
        "--xdp-mode",
        "zerocopy",
    ]);
    assert!(line.contains("zero-copy"), "{line}");
    // An unprivileged user: one line that says to use root, exit 2.
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_linerate"))
        .args(["tx", "--backend", "afxdp", "-i", &lab.sender, "-n", "1"])
        .output()
        .expect("setpriv (util-linux)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("root") || stderr.contains("sudo"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        !xdp_attached(&lab.sender, None),
        "an XDP program was left on {}",
        lab.sender
    );
    // The lab's own sink is still the only program on the receiver, and still counts.
    assert!(xdp_attached(&lab.receiver, Some(&lab.netns)));
    let out = linerate(&[
        "tx",
        "--backend",
        "afxdp",
        "-q",
        "-i",
        &lab.sender,
        "-n",
        "10",
    ]);
    assert!(out.status.success());
}

/// Waits until the lab's sink has counted something: the sender is then surely transmitting.
fn wait_for_traffic(lab: &LabGuard) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while lab.sink_counters().unwrap().packets == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no traffic reached the sink"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starts `linerate tx --json` for a minute on the lab with a pass-through program attached
/// (skb mode, so veth takes it), and returns once frames reach the sink and the program is on.
fn sending_with_a_pass_program(lab: &LabGuard) -> std::process::Child {
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tx",
            "--backend",
            "afxdp",
            "-q",
            "--json",
            "-i",
            &lab.sender,
            "-d",
            "60s",
            "--attach",
            "skb",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_traffic(lab);
    assert!(
        xdp_attached(&lab.sender, None),
        "the pass-through program is on while sending"
    );
    child
}

#[test]
fn ctrl_c_stops_drains_reports_and_detaches() {
    if !root_or_skip("ctrl_c_stops_drains_reports_and_detaches") {
        return;
    }
    let lab = lab(2);
    let child = sending_with_a_pass_program(&lab);
    // SAFETY: kill(2) on our own child's pid; the child has not been reaped yet.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&String::from_utf8_lossy(&out.stdout));
    assert!(report["completed"].as_u64().unwrap() > 0);
    assert_eq!(
        report["completed"], report["submitted"],
        "completions drained"
    );
    assert_eq!(report["sink"]["lost"], 0);
    assert!(report["elapsed_s"].as_f64().unwrap() < 30.0);
    assert!(
        !xdp_attached(&lab.sender, None),
        "program left after Ctrl-C"
    );
}

#[test]
fn sigkill_leaves_no_program_and_the_lab_still_goes_down() {
    if !root_or_skip("sigkill_leaves_no_program_and_the_lab_still_goes_down") {
        return;
    }
    let lab = lab(1);
    let mut child = sending_with_a_pass_program(&lab);
    child.kill().unwrap();
    child.wait().unwrap();
    // The bpf_link dies with the process's last file descriptor.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while xdp_attached(&lab.sender, None) {
        assert!(
            std::time::Instant::now() < deadline,
            "XDP program left after SIGKILL"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let name = lab.name.clone();
    drop(lab);
    let out = linerate(&["lab", "down", "--name", &name]);
    assert!(out.status.success());
    assert!(!std::path::Path::new(&format!("/sys/class/net/{name}0")).exists());
}
