//! linerate-xdp against a real lab (root): attach modes, clear errors, links that detach.

#![cfg(target_os = "linux")]

mod common;

use std::process::Command;

use common::{RawSender, frame, root_or_skip};
use linerate_lab::{LabConfig, LabGuard, unique_name};
use linerate_xdp::{AttachMode, Sink, SinkCounters, XdpError, attach_pass, ifindex};

/// `ip -d link show` of `iface` (in `netns`).
fn link_details(netns: Option<&str>, iface: &str) -> String {
    let mut cmd = Command::new("ip");
    if let Some(ns) = netns {
        cmd.args(["-n", ns]);
    }
    let out = cmd
        .args(["-d", "link", "show", "dev", iface])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn lab(prefix: &str) -> LabGuard {
    LabGuard::up(&LabConfig {
        name: unique_name(prefix),
        queues: 1,
    })
    .expect("lab up")
}

#[test]
fn the_lab_sink_runs_in_driver_mode() {
    if !root_or_skip("the_lab_sink_runs_in_driver_mode") {
        return;
    }
    let lab = lab("x");
    let details = link_details(Some(&lab.netns), &lab.receiver);
    assert!(details.contains("prog/xdp "), "{details}");
    assert!(!details.contains("xdpgeneric"), "{details}");
}

#[test]
fn a_second_program_on_the_sink_is_refused_clearly() {
    if !root_or_skip("a_second_program_on_the_sink_is_refused_clearly") {
        return;
    }
    let lab = lab("x");
    let err = Sink::attach(&lab.receiver, Some(&lab.netns), AttachMode::Drv).unwrap_err();
    // The lab's sink holds the end through a pinned bpf_link, which `ip … xdp off` cannot
    // remove: the error names the lab and the command that can (issue 41).
    assert!(
        matches!(&err, XdpError::HeldByLab { lab: l, .. } if *l == lab.name),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("linerate lab down --name {}", lab.name))
            && message.contains("cannot remove"),
        "{message}"
    );
}

#[test]
fn unknown_interfaces_and_namespaces_are_named() {
    if !root_or_skip("unknown_interfaces_and_namespaces_are_named") {
        return;
    }
    let err = Sink::attach("nosuch0", None, AttachMode::Skb).unwrap_err();
    assert!(matches!(err, XdpError::UnknownInterface { .. }), "{err:?}");
    assert!(err.to_string().contains("nosuch0"));
    let err = Sink::attach("lo", Some("nosuch-ns"), AttachMode::Skb).unwrap_err();
    assert!(matches!(err, XdpError::NoSuchNetns { .. }), "{err:?}");
    let err = ifindex("nosuch0").unwrap_err();
    assert!(matches!(err, XdpError::UnknownInterface { .. }), "{err:?}");
    let err = ifindex("this-name-is-too-long").unwrap_err();
    assert!(matches!(err, XdpError::UnknownInterface { .. }), "{err:?}");
}

#[test]
fn an_unpinned_sink_counts_and_detaches_on_drop() {
    if !root_or_skip("an_unpinned_sink_counts_and_detaches_on_drop") {
        return;
    }
    let lab = lab("x");
    // Move the lab's sink aside: the pinned one goes, an unpinned one in skb mode takes its place.
    linerate_xdp::PinnedSink::unpin(&lab.pin_dir()).unwrap();
    let sink = Sink::attach(&lab.receiver, Some(&lab.netns), AttachMode::Skb).expect("attach");
    let details = link_details(Some(&lab.netns), &lab.receiver);
    assert!(details.contains("xdpgeneric"), "{details}");
    let sender = RawSender::bind(&lab.sender);
    let f = frame(&lab, 60);
    for _ in 0..10 {
        sender.send(&f);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while sink.counters().unwrap().packets < 10 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(
        sink.counters().unwrap(),
        SinkCounters {
            packets: 10,
            bytes: 600
        }
    );
    drop(sink);
    let details = link_details(Some(&lab.netns), &lab.receiver);
    assert!(
        !details.contains("prog/xdp"),
        "still attached after drop: {details}"
    );
}

#[test]
fn the_pass_program_attaches_and_detaches_on_drop() {
    if !root_or_skip("the_pass_program_attaches_and_detaches_on_drop") {
        return;
    }
    let lab = lab("x");
    let index = ifindex(&lab.sender).unwrap();
    for mode in [AttachMode::Drv, AttachMode::Skb] {
        let pass = attach_pass(index, mode).expect("attach pass");
        let details = link_details(None, &lab.sender);
        let want = if mode == AttachMode::Drv {
            "prog/xdp "
        } else {
            "xdpgeneric"
        };
        assert!(details.contains(want), "{mode}: {details}");
        let again = attach_pass(index, mode).unwrap_err();
        // Held by this process's own bpf_link: the error names the link to look up.
        assert!(matches!(again, XdpError::HeldByLink { .. }), "{again:?}");
        assert!(
            again.to_string().contains("bpftool link show id"),
            "{again}"
        );
        drop(pass);
        let details = link_details(None, &lab.sender);
        assert!(
            !details.contains("prog/xdp"),
            "{mode}: still attached after drop: {details}"
        );
    }
}
