//! `[host.bgp]` (issue 35's CLI): a host of a stream file advertises 100 prefixes by eBGP to
//! the lab's BIRD DUT through FRR's bgpd, and another 50 IPv6 prefixes over the DUT's IPv6
//! subnet; the DUT installs them (read from its own FIB while the run lasts), frames from the other side to every prefix are counted exactly at the
//! host's port, and when the run ends the routes are withdrawn and the daemon's namespace is
//! gone. Mistakes in the table are one line naming the host, exit 2.
#![cfg(target_os = "linux")]

mod common;

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{json, linerate_usage_error, root_or_skip};
use linerate_lab::{DutKind, LabConfig, LabGuard, unique_name};

/// The lab's two /30s: (sender, DUT ingress), (receiver, DUT egress).
fn addresses(lab: &str) -> ((Ipv4Addr, Ipv4Addr), (Ipv4Addr, Ipv4Addr)) {
    let out = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["lab", "status", "--name", lab, "--json"])
        .output()
        .expect("lab status");
    let s = json(&String::from_utf8_lossy(&out.stdout));
    let ip = |k: &str| s[k].as_str().unwrap().parse::<Ipv4Addr>().unwrap();
    let (tx, rx) = (ip("sender_ip"), ip("receiver_ip"));
    // BIRD's sessions: the DUT holds the other address of each /30 (lab.rs).
    let other = |a: Ipv4Addr| Ipv4Addr::from(u32::from(a) ^ 0b11);
    ((tx, other(tx)), (rx, other(rx)))
}

fn file(lab: &str, bgp: &str, extra_host: &str, more: &str) -> String {
    let ((west, west_gw), (east, east_gw)) = addresses(lab);
    format!(
        r#"{more}
[[host]]
name = "west"
port = "{lab}0"
{extra_host}
ipv4 = "{west}/30"
gateway = "{west_gw}"

[host.bgp]
{bgp}

[[host]]
name = "east"
port = "{lab}1@{lab}-sink"
ipv4 = "{east}/30"
gateway = "{east_gw}"

[[stream]]
name = "to-routes"
from = "east"
to = "west"
dst-ip = "100.0.0.1"
vary = ["dst-ip:inc:100.0.0.1-100.0.99.1:256"]
size = 128
rate = "10k"
"#
    )
}

/// The DUT's routes from BIRD of one family whose prefix starts so.
fn routes(lab: &str, family: &str, prefix: &str) -> usize {
    let ns = format!("{lab}-dut");
    let out = Command::new("ip")
        .args(["-n", &ns, family, "route", "show", "proto", "bird"])
        .output()
        .expect("ip route");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count()
}

fn fib(lab: &str) -> usize {
    routes(lab, "-4", "100.0.")
}

fn fib6(lab: &str) -> usize {
    routes(lab, "-6", "2001:db8:")
}

#[test]
fn a_bgp_host_teaches_the_dut_its_prefixes_and_receives_every_frame_sent_to_them() {
    if !root_or_skip(
        "a_bgp_host_teaches_the_dut_its_prefixes_and_receives_every_frame_sent_to_them",
    ) {
        return;
    }
    let lab = LabGuard::up_with_dut(
        &LabConfig {
            name: unique_name("hbg"),
            queues: 1,
        },
        Some(DutKind::Bgp),
    )
    .expect("lab up with a BGP DUT");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bgp.toml");
    let bgp = "as = 65201\nroutes = [{ prefix = \"100.0.0.0/24\", count = 100, med = 20 }]";
    // A second host on the same port speaks IPv6 only, over the BGP DUT's IPv6 subnet.
    let (west6, ingress6, _, _) = linerate_lab::routed_addresses6(&lab.name);
    let v6 = format!(
        r#"
[[host]]
name = "west6"
port = "{}0"
mac = "02:00:00:00:0b:06"
ipv6 = "{west6}/64"
gateway6 = "{ingress6}"

[host.bgp]
as = 65206
router-id = "192.0.2.6"
routes = [{{ prefix = "2001:db8::/64", count = 50 }}]
"#,
        lab.name
    );
    std::fs::write(
        &path,
        file(&lab.name, bgp, "mac = \"02:00:00:00:0b:01\"", &v6),
    )
    .unwrap();
    assert_eq!(
        fib(&lab.name),
        0,
        "the DUT starts with none of the prefixes"
    );
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tx",
            "--stream",
            path.to_str().unwrap(),
            "-n",
            "30000",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run linerate");
    let pid = child.id();
    // The DUT's own FIB while the run lasts: all 100 learned from the host's bgpd.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut most, mut most6) = (0, 0);
    while Instant::now() < deadline && (most < 100 || most6 < 50) {
        most = most.max(fib(&lab.name));
        most6 = most6.max(fib6(&lab.name));
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(most, 100, "prefixes in the DUT's FIB; {stderr}");
    assert_eq!(most6, 50, "IPv6 prefixes in the DUT's FIB; {stderr}");
    let r = json(&String::from_utf8_lossy(&out.stdout));
    let west = r["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["port"] == format!("{}0", lab.name))
        .expect("west's port in the report");
    let flow = &west["rx"]["flows"][0];
    // 30,000 frames over 100 prefixes, every one forwarded by the DUT on the learned routes.
    assert_eq!(flow["tx_frames"], 30_000, "{flow}");
    assert_eq!(flow["rx_frames"], 30_000, "{flow}");
    assert_eq!(flow["lost"], 0, "{flow}");
    // The run over, its bgpd gone: the DUT withdrew the routes, no namespace is left.
    let deadline = Instant::now() + Duration::from_secs(15);
    while fib(&lab.name) + fib6(&lab.name) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(fib(&lab.name), 0, "routes withdrawn after the run");
    assert_eq!(fib6(&lab.name), 0, "IPv6 routes withdrawn after the run");
    let left = common::device_namespaces_of(pid);
    assert!(left.is_empty(), "left behind: {left:?}");

    // Mistakes: one line naming the host and what to do, exit 2, before anything starts.
    for (bgp, extra, says) in [
        ("as = 65201", "", "needs a mac of its own"),
        ("as = 0", "mac = \"02:00:00:00:0b:01\"", "as 0 is reserved"),
        (
            "as = 65201\npeer = \"192.0.2.1\"",
            "mac = \"02:00:00:00:0b:01\"",
            "192.0.2.1 is on none of the device's subnets",
        ),
        (
            "as = 65201\nroutes = [{ prefix = \"255.255.255.0/24\", count = 2 }]",
            "mac = \"02:00:00:00:0b:01\"",
            "address space",
        ),
        (
            "as = 65201\nbogus = 1",
            "mac = \"02:00:00:00:0b:01\"",
            "unknown field `bogus`",
        ),
    ] {
        std::fs::write(&path, file(&lab.name, bgp, extra, "")).unwrap();
        let line = linerate_usage_error(&["tx", "--stream", path.to_str().unwrap(), "-n", "1"]);
        assert!(line.contains(says), "{bgp}: {line}");
    }
}
