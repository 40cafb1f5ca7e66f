//! `--backend afpacket` end to end (root): exact delivery counted at the lab's sink at full speed
//! and paced, bytes at the receiver decoded by tcpdump, interfaces without XDP transmit (where
//! the live backend refuses) sending by their own TX counters, and the advice a user without
//! CAP_NET_RAW gets.
#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{
    VethPair, after, catch_tx, frame_len, json, linerate, linerate_ok, linerate_usage_error,
    root_or_skip,
};
use linerate_lab::unique_name;

const MODE: &str = "tpacket_v2 qdisc-bypass";

fn exact(extra: &[&str]) -> serde_json::Value {
    let lab = common::lab("apk", 2);
    let before = lab.sink_counters().unwrap();
    let mut args = vec![
        "tx",
        "-q",
        "--json",
        "--backend",
        "afpacket",
        "-i",
        &lab.sender,
        "-n",
        "1000000",
    ];
    args.extend_from_slice(extra);
    let report = json(&linerate_ok(&args));
    let got = lab.sink_counters().unwrap().since(before);
    assert_eq!(report["backend"], "afpacket", "{report}");
    assert_eq!(report["submitted"], 1_000_000);
    assert_eq!(report["completed"], 1_000_000);
    assert_eq!(got.packets, 1_000_000, "sink count");
    assert_eq!(got.bytes, 60_000_000, "sink bytes");
    assert_eq!(report["sink"]["packets"], 1_000_000);
    assert_eq!(report["sink"]["lost"], 0);
    for w in report["workers"].as_array().unwrap() {
        assert_eq!(w["mode"], MODE, "{w}");
        assert_eq!(w["stats"]["copies"], 0, "{w}");
    }
    report
}

#[test]
fn a_million_frames_at_full_speed_arrive_exactly() {
    if root_or_skip("a_million_frames_at_full_speed_arrive_exactly") {
        exact(&[]);
    }
}

#[test]
fn a_million_frames_two_workers_arrive_exactly() {
    if root_or_skip("a_million_frames_two_workers_arrive_exactly") {
        let report = exact(&["--cores", "0,1"]);
        assert_eq!(report["workers"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn a_million_paced_frames_arrive_exactly_and_never_early() {
    if !root_or_skip("a_million_paced_frames_arrive_exactly_and_never_early") {
        return;
    }
    let report = exact(&["--rate", "200k"]);
    assert_eq!(report["requested_pps"], 200_000.0);
    // The pacer never runs ahead of the schedule: 1,000,000 frames at 200 kpps take 5 s at
    // least. How late a shared machine makes it is the rate tests' business (tests/rate.rs).
    let elapsed = report["elapsed_s"].as_f64().unwrap();
    assert!(elapsed >= 4.95, "{elapsed} s: faster than asked");
    assert!(
        report["pacing"]["late_p50_ns"].as_u64().is_some(),
        "{report}"
    );
}

#[test]
fn frames_caught_at_the_receiver_decode_as_asked() {
    if !root_or_skip("frames_caught_at_the_receiver_decode_as_asked") {
        return;
    }
    let pair = VethPair::new(&unique_name("apc"));
    let mac = pair.b_mac();
    let frames = catch_tx(
        &pair,
        1000,
        &[
            "--backend",
            "afpacket",
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
    // In ring order, one socket: the order on the wire is the order of the plan.
    let order: Vec<&str> = frames.iter().map(|f| common::src_port(f)).collect();
    let want: Vec<String> = (1000..2000).map(|p| p.to_string()).collect();
    assert_eq!(order, want);
    assert_eq!(ports.len(), 1000);
}

/// A network namespace of the test's own with interfaces that have no XDP transmit, removed on
/// drop. The issue names dummy and VLAN devices; kernels built without them (this one lacks
/// CONFIG_DUMMY and CONFIG_VLAN_8021Q) get macvlan devices, which lack it too.
struct NoXdpNs {
    ns: String,
    ifaces: Vec<String>,
}

impl NoXdpNs {
    fn new() -> Self {
        let ns = unique_name("apn");
        let ip = |args: &[&str]| {
            Command::new("ip")
                .args(["-n", &ns])
                .args(args)
                .output()
                .expect("run ip")
        };
        let must = |args: &[&str]| {
            let out = ip(args);
            assert!(
                out.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let made = Command::new("ip").args(["netns", "add", &ns]).status();
        assert!(made.unwrap().success(), "ip netns add {ns}");
        // No IPv6: an interface coming up would send its own solicitations and move the
        // counters this test reads.
        let quiet = Command::new("ip")
            .args(["netns", "exec", &ns, "sh", "-c"])
            .arg(
                "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && \
                 echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6",
            )
            .status();
        assert!(quiet.unwrap().success(), "disable IPv6 in {ns}");
        let mut me = Self {
            ns: ns.clone(),
            ifaces: Vec::new(),
        };
        must(&[
            "link", "add", "base0", "type", "veth", "peer", "name", "base1",
        ]);
        must(&["link", "set", "base0", "up"]);
        must(&["link", "set", "base1", "up"]);
        let kinds: [(&str, &[&str]); 4] = [
            ("dum0", &["type", "dummy"]),
            ("base0.7", &["link", "base0", "type", "vlan", "id", "7"]),
            (
                "mvl0",
                &["link", "base0", "type", "macvlan", "mode", "bridge"],
            ),
            // A bridge would do too, but it sends a frame of its own now and then, which
            // the exact TX count below cannot tell from ours.
            (
                "mvl1",
                &["link", "base1", "type", "macvlan", "mode", "private"],
            ),
        ];
        for (name, kind) in kinds {
            let mut args = vec!["link", "add", "name", name];
            args.extend_from_slice(kind);
            let out = ip(&args);
            if !out.status.success() {
                eprintln!(
                    "{name}: this kernel cannot make it ({})",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                continue;
            }
            must(&["link", "set", name, "up"]);
            me.ifaces.push(name.to_owned());
        }
        assert!(me.ifaces.len() >= 2, "no interface without XDP transmit");
        me
    }

    fn linerate(&self, args: &[&str]) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", &self.ns, env!("CARGO_BIN_EXE_linerate")])
            .args(args)
            .output()
            .expect("run linerate in the namespace")
    }

    fn tx_packets(&self, iface: &str) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.ns, "cat"])
            .arg(format!("/sys/class/net/{iface}/statistics/tx_packets"))
            .output()
            .expect("read tx_packets");
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

impl Drop for NoXdpNs {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

#[test]
fn interfaces_without_xdp_transmit_send_with_afpacket() {
    if !root_or_skip("interfaces_without_xdp_transmit_send_with_afpacket") {
        return;
    }
    let ns = NoXdpNs::new();
    for iface in &ns.ifaces {
        let before = ns.tx_packets(iface);
        let out = ns.linerate(&[
            "tx",
            "-q",
            "--json",
            "--backend",
            "afpacket",
            "-i",
            iface,
            "-n",
            "100000",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{iface}: {stderr}");
        let report = json(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(report["completed"], 100_000, "{iface}");
        assert_eq!(report["workers"][0]["mode"], MODE, "{iface}");
        assert_eq!(ns.tx_packets(iface) - before, 100_000, "{iface} tx counter");

        let out = ns.linerate(&["tx", "-q", "--backend", "live", "-i", iface, "-n", "10"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "live on {iface}: {stderr}");
        // A kernel that refuses live frames to root says so first, in its own terms.
        let why = match linerate_live::kernel_refuses_live_frames() {
            Some(_) => "refused to run the live program",
            None => "XDP transmit",
        };
        assert!(stderr.contains(why), "{stderr}");
    }
    // `linerate ports` offers afpacket on every interface that is up, and says why not on lo.
    let out = ns.linerate(&["ports", "--json"]);
    assert!(out.status.success());
    let ports = json(&String::from_utf8_lossy(&out.stdout));
    let ports = ports.as_array().unwrap();
    for p in ports {
        let name = p["name"].as_str().unwrap();
        let afpacket = p["backends"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b[0] == "afpacket")
            .unwrap_or_else(|| panic!("{p}"));
        if name == "lo" {
            assert!(afpacket[1].as_str().unwrap().contains("down"), "{p}");
        } else {
            assert_eq!(afpacket[1], "ok", "{p}");
        }
    }
    for iface in &ns.ifaces {
        assert!(ports.iter().any(|p| p["name"] == iface.as_str()), "{iface}");
    }
}

#[test]
fn without_cap_net_raw_the_advice_names_it() {
    if !root_or_skip("without_cap_net_raw_the_advice_names_it") {
        return;
    }
    let lab = common::lab("apr", 1);
    let before = lab.sink_counters().unwrap();
    // Root without CAP_NET_RAW: the capability is the only thing missing.
    let out = Command::new("setpriv")
        .args(["--bounding-set=-net_raw", "--inh-caps=-net_raw"])
        .arg(env!("CARGO_BIN_EXE_linerate"))
        .args(["tx", "--backend", "afpacket", "-i", &lab.sender, "-n", "1"])
        .output()
        .expect("setpriv (util-linux)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("CAP_NET_RAW"), "{stderr}");
    assert!(!stderr.contains("CAP_IPC_LOCK"), "{stderr}");
    assert_eq!(lab.sink_counters().unwrap().since(before).packets, 0);
    let line = linerate_usage_error(&["tx", "--backend", "afpacket", "-i", "nosuchif0", "-n", "1"]);
    assert!(
        line.contains("nosuchif0") && line.contains("does not exist"),
        "{line}"
    );
}

#[test]
fn a_sweep_runs_over_afpacket_and_counts_at_the_sink() {
    if !root_or_skip("a_sweep_runs_over_afpacket_and_counts_at_the_sink") {
        return;
    }
    let lab = common::lab("aps", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    linerate_ok(&[
        "sweep",
        "--backend",
        "afpacket",
        "-i",
        &lab.sender,
        "--sizes",
        "64,1518",
        "-d",
        "300ms",
        "--repeat",
        "2",
        "--warmup",
        "100ms",
        "--json",
        file.to_str().unwrap(),
    ]);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let text = result.to_string();
    assert!(text.contains("afpacket"), "{text}");
    for point in result["points"].as_array().unwrap() {
        for r in point["repetitions"].as_array().unwrap() {
            assert!(r["rx_frames"].as_u64().unwrap() > 0, "{r}");
        }
    }
    let _ = linerate(&["lab", "list"]);
}
