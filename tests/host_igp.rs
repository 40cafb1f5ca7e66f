//! `[host.ospf]`, `[host.ospf6]` and `[host.isis]` (issue 35's CLI): two hosts of a stream file
//! on the two ends of a lab's link, each an OSPFv2, OSPFv3 and IS-IS router through FRR's
//! ospfd, ospf6d and isisd,
//! advertising ranges to the other. Each host's own FIB (its namespace's kernel routes, which
//! zebra installs from the daemons) holds the other's ranges exactly, learned by the protocol
//! that advertised them, while the run lasts; frames between the hosts are counted exactly;
//! the namespaces are gone after the run. Mistakes in a table are one line naming the host and
//! the table, exit 2.
#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{json, linerate_usage_error, root_or_skip};
use linerate_lab::{LabConfig, LabGuard, unique_name};

fn file(lab: &str, west_extra: &str) -> String {
    format!(
        r#"
[[host]]
name = "west"
port = "{lab}0"
mac = "02:00:00:00:0c:01"
ipv4 = "198.18.0.1/30"
gateway = "198.18.0.2"
ipv6 = "2001:db8:ff::1/64"
{west_extra}

[host.ospf]
hello = 1
dead = 4
routes = [{{ prefix = "100.1.0.0/24", count = 20 }}]

[host.isis]
hello = 1
dead = 3
routes = [{{ prefix = "100.2.0.0/24", count = 20, metric = 30 }}]

[host.ospf6]
hello = 1
dead = 4
routes = [{{ prefix = "2001:db8:100::/64", count = 8 }}]

[[host]]
name = "east"
port = "{lab}1@{lab}-sink"
mac = "02:00:00:00:0c:02"
ipv4 = "198.18.0.2/30"
gateway = "198.18.0.1"
ipv6 = "2001:db8:ff::2/64"

[host.ospf]
hello = 1
dead = 4
routes = [{{ prefix = "100.3.0.0/24", count = 10, origin = "intra-area" }}]

[host.isis]
hello = 1
dead = 3
routes = [{{ prefix = "100.4.0.0/24", count = 10 }}]

[host.ospf6]
hello = 1
dead = 4
routes = [{{ prefix = "2001:db8:200::/64", count = 4, origin = "intra-area" }}]

[[stream]]
name = "west-east"
from = "west"
to = "east"
size = 128
rate = "10k"
"#
    )
}

/// The routes of `proto` in namespace `ns` whose prefix starts with `start`.
fn fib(ns: &str, proto: &str, start: &str) -> usize {
    let family = if start.contains(':') { "-6" } else { "-4" };
    let out = Command::new("ip")
        .args(["-n", ns, family, "route", "show", "proto", proto])
        .output()
        .expect("ip route");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(start))
        .count()
}

/// The namespace of the device whose macvlan has `mac`.
fn namespace_with(namespaces: &[String], mac: &str) -> Option<String> {
    namespaces
        .iter()
        .find(|ns| {
            Command::new("ip")
                .args(["-n", ns, "link", "show"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(mac))
        })
        .cloned()
}

#[test]
fn ospf_ospf6_and_isis_hosts_learn_each_others_ranges_into_their_fibs() {
    if !root_or_skip("ospf_ospf6_and_isis_hosts_learn_each_others_ranges_into_their_fibs") {
        return;
    }
    let lab = LabGuard::up(&LabConfig {
        name: unique_name("hig"),
        queues: 1,
    })
    .expect("lab up");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("igp.toml");
    std::fs::write(&path, file(&lab.name, "")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tx",
            "--stream",
            path.to_str().unwrap(),
            "-n",
            "50000",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run linerate");
    let pid = child.id();
    // Each host's FIB while the run lasts: the other's ranges, by the protocol that carried
    // them (OSPF external and intra-area routes, IS-IS level 2 routes).
    let deadline = Instant::now() + Duration::from_secs(60);
    let want = [20, 20, 8, 10, 10, 4];
    let mut seen = [0usize; 6];
    let mut names = (None, None);
    while Instant::now() < deadline && seen != want {
        let ours = common::device_namespaces_of(pid);
        if names.0.is_none() || names.1.is_none() {
            names = (
                namespace_with(&ours, "02:00:00:00:0c:01"),
                namespace_with(&ours, "02:00:00:00:0c:02"),
            );
        }
        if let (Some(west), Some(east)) = &names {
            let now = [
                fib(east, "ospf", "100.1."),
                fib(east, "isis", "100.2."),
                fib(east, "ospf", "2001:db8:100:"),
                fib(west, "ospf", "100.3."),
                fib(west, "isis", "100.4."),
                fib(west, "ospf", "2001:db8:200:"),
            ];
            for (s, n) in seen.iter_mut().zip(now) {
                *s = (*s).max(n);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        seen, want,
        "east's OSPFv2, IS-IS and OSPFv3 routes from west, west's from east; {stderr}"
    );
    let r = json(&String::from_utf8_lossy(&out.stdout));
    let east = r["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["port"] == format!("{}1@{}-sink", lab.name, lab.name))
        .unwrap_or_else(|| panic!("east's port in the report: {r:#}"));
    let flow = &east["rx"]["flows"][0];
    assert_eq!(flow["tx_frames"], 50_000, "{flow}");
    assert_eq!(flow["rx_frames"], 50_000, "{flow}");
    assert_eq!(flow["lost"], 0, "{flow}");
    let left = common::device_namespaces_of(pid);
    assert!(left.is_empty(), "left behind: {left:?}");

    // Mistakes: one line naming the host and the table, exit 2, before anything starts.
    std::fs::write(&path, file(&lab.name, "[host.bgp]\nas = 0")).unwrap();
    let line = linerate_usage_error(&["tx", "--stream", path.to_str().unwrap(), "-n", "1"]);
    assert!(
        line.contains("host west: [host.bgp]: as 0 is reserved"),
        "{line}"
    );
    for (from, to, says) in [
        (
            "count = 20 }]\n\n[host.isis]",
            "count = 20, origin = \"nearby\" }]\n\n[host.isis]",
            "host west: [host.ospf]: route range west-ospf0: origin \"nearby\"",
        ),
        (
            "dead = 3\nroutes = [{ prefix = \"100.2.0.0/24\"",
            "dead = 3\nlevel = \"l3\"\nroutes = [{ prefix = \"100.2.0.0/24\"",
            "host west: [host.isis]: level \"l3\": l1, l2 or l1-2",
        ),
        (
            "mac = \"02:00:00:00:0c:01\"",
            "",
            "host west: [host.ospf], [host.ospf6], [host.isis]: a routing host needs a mac of its own",
        ),
        (
            "hello = 1\ndead = 4\nroutes = [{ prefix = \"100.1.0.0/24\"",
            "hello = 5\ndead = 4\nroutes = [{ prefix = \"100.1.0.0/24\"",
            "dead interval must be longer than a hello",
        ),
    ] {
        let text = file(&lab.name, "").replacen(from, to, 1);
        assert_ne!(text, file(&lab.name, ""), "{from}");
        std::fs::write(&path, text).unwrap();
        let line = linerate_usage_error(&["tx", "--stream", path.to_str().unwrap(), "-n", "1"]);
        assert!(line.contains(says), "{says}: {line}");
    }
}
