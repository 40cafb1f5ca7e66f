//! Ports that are hosts (issue 23): a Linux router the test never configures by hand — a lab
//! router DUT, two subnets, neighbours learnt by ARP — and linerate's hosts on both sides. The
//! hosts resolve their gateway, the router learns them from linerate's answers, both
//! directions run at once and every flow is counted exactly at the far port.
#![cfg(target_os = "linux")]

mod common;

use linerate_lab::{DutKind, LabConfig, LabGuard, root_or_skip};
use std::process::Command;

fn router_lab(prefix: &str) -> LabGuard {
    LabGuard::up_with_dut(
        &LabConfig {
            name: linerate_lab::unique_name(prefix),
            queues: 1,
        },
        Some(DutKind::Router),
    )
    .expect("lab up with a router DUT")
}

/// `ip netns exec NS cat /proc/net/snmp`'s `Ip: ForwDatagrams`: what the router forwarded.
fn forwarded(netns: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", netns, "cat", "/proc/net/snmp"])
        .output()
        .expect("ip netns exec");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ip = text.lines().filter(|l| l.starts_with("Ip:"));
    let (names, values) = (ip.next().unwrap(), ip.next().unwrap());
    let i = names
        .split_whitespace()
        .position(|n| n == "ForwDatagrams")
        .expect("ForwDatagrams");
    values.split_whitespace().nth(i).unwrap().parse().unwrap()
}

fn mac(m: [u8; 6]) -> String {
    m.map(|b| format!("{b:02x}")).join(":")
}

/// The two hosts of a router lab: west on the sender end, east on the receive end, each on its
/// router's subnet with the router's address as gateway.
fn hosts(lab: &LabGuard) -> [String; 2] {
    let (west, _, _, east) = linerate_lab::routed_addresses(&lab.name);
    let (gw_west, gw_east) = lab.dut.as_ref().unwrap().gateways.unwrap();
    [
        format!(
            "name=west,port={},ipv4={west}/30,gateway={gw_west}",
            lab.sender
        ),
        format!(
            "name=east,port={}@{},ipv4={east}/30,gateway={gw_east}",
            lab.receiver, lab.netns
        ),
    ]
}

#[test]
fn hosts_resolve_a_router_and_count_both_directions_exactly() {
    if !root_or_skip("hosts through a router") {
        return;
    }
    let lab = router_lab("hst");
    let dut = lab.dut.clone().unwrap();
    let [west, east] = hosts(&lab);
    let before = forwarded(&dut.netns);
    let n = 100_000u64;
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tx",
            "--host",
            &west,
            "--host",
            &east,
            "--flow",
            "west:east",
            "--flow",
            "east:west",
            "-n",
            &n.to_string(),
            "--rate",
            "50k",
            "--cores",
            "0,1",
            "--json",
            "-q",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("linerate tx");
    // While the hosts' session is open, the router's own checks of them succeed: they answer
    // its pings from XDP.
    std::thread::sleep(std::time::Duration::from_millis(800));
    let (west_ip, _, _, east_ip) = linerate_lab::routed_addresses(&lab.name);
    for ip in [west_ip, east_ip] {
        let ping = Command::new("ip")
            .args([
                "netns", "exec", &dut.netns, "ping", "-c", "2", "-i", "0.2", "-W", "1",
            ])
            .arg(ip.to_string())
            .output()
            .expect("ping");
        assert!(
            ping.status.success(),
            "the router pings {ip}: {}",
            String::from_utf8_lossy(&ping.stdout)
        );
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = common::json(&String::from_utf8_lossy(&out.stdout));
    // Each port counts the flow sent toward it, whole.
    let mut seen = Vec::new();
    for port in json["ports"].as_array().unwrap() {
        assert_eq!(port["completed"], n, "{port}");
        let flows = port["rx"]["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 1, "{port}");
        let f = &flows[0];
        assert_eq!(
            (f["tx_frames"].as_u64(), f["rx_frames"].as_u64()),
            (Some(n), Some(n)),
            "{f}"
        );
        assert_eq!(
            (f["lost"].as_u64(), f["duplicates"].as_u64()),
            (Some(0), Some(0)),
            "{f}"
        );
        seen.push(f["name"].as_str().unwrap().to_owned());
    }
    seen.sort();
    assert_eq!(seen, ["east-west", "west-east"]);
    // The router forwarded exactly both directions' frames (its pings are not forwarded).
    assert_eq!(forwarded(&dut.netns) - before, 2 * n);
    // The hosts resolved the router's two ends; the router learnt both hosts from their
    // answers, no entry of them made by hand.
    let neighbours = json["neighbours"].as_array().unwrap();
    let (gw_west, gw_east) = dut.gateways.unwrap();
    for gw in [gw_west, gw_east] {
        assert!(
            neighbours.iter().any(|n| n["addr"] == gw.to_string()),
            "{gw} in {neighbours:?}"
        );
    }
    let learnt = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["-n", &dut.netns, "neigh", "show"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    for (ip, m) in [(west_ip, lab.sender_mac), (east_ip, lab.receiver_mac)] {
        let line = learnt
            .lines()
            .find(|l| l.starts_with(&format!("{ip} ")))
            .unwrap_or_else(|| panic!("{ip} in {learnt}"));
        assert!(
            line.contains(&mac(m)) && !line.contains("PERMANENT"),
            "{line}"
        );
    }
}

#[test]
fn a_gateway_that_never_answers_is_named_and_nothing_is_sent() {
    if !root_or_skip("an unanswered gateway") {
        return;
    }
    let lab = router_lab("hsg");
    let dut = lab.dut.clone().unwrap();
    let [_, east] = hosts(&lab);
    // West on a /24 whose gateway is an address nobody holds.
    let (west_ip, _, _, _) = linerate_lab::routed_addresses(&lab.name);
    let o = west_ip.octets();
    let nobody = std::net::Ipv4Addr::new(o[0], o[1], o[2], o[3] ^ 0x80);
    let west = format!(
        "name=west,port={},ipv4={west_ip}/24,gateway={nobody}",
        lab.sender
    );
    let before = (forwarded(&dut.netns), lab.sink_counters().unwrap().packets);
    let out = common::linerate(&[
        "tx",
        "--host",
        &west,
        "--host",
        &east,
        "--flow",
        "west:east",
        "-n",
        "1000",
        "--resolve-timeout",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&nobody.to_string()) && stderr.contains("did not answer"),
        "{stderr}"
    );
    assert_eq!(
        (forwarded(&dut.netns), lab.sink_counters().unwrap().packets),
        before,
        "nothing sent"
    );
}

#[test]
fn hosts_and_flows_are_checked_before_anything_opens() {
    for (args, says) in [
        (
            vec!["tx", "--host", "name=a,port=x0", "--flow", "a:a"],
            "give it an address",
        ),
        (
            vec![
                "tx",
                "--host",
                "name=a,port=x0,ipv4=10.0.0.1/24",
                "--flow",
                "a:b",
            ],
            "no host named \"b\"",
        ),
        (
            vec![
                "tx",
                "--host",
                "name=a,port=x0,ipv4=10.0.0.1/24",
                "--flow",
                "ab",
            ],
            "FROM:TO",
        ),
        (
            vec![
                "tx",
                "-i",
                "x0",
                "--host",
                "name=a,port=x0,ipv4=10.0.0.1/24",
                "--host",
                "name=b,port=x1,ipv4=10.0.0.2/24",
                "--flow",
                "a:b",
            ],
            "drop -i",
        ),
    ] {
        let e = common::linerate_usage_error(&args);
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

/// Namespaces and links a test made with `ip`, removed when it ends however it ends.
struct Netns(Vec<String>);

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// IPv6 (neighbour discovery): a router built here in a namespace of its own, forwarding
/// between two subnets, no neighbour entry made by hand. The hosts resolve its addresses by ND,
/// it learns theirs from their advertisements, and both directions arrive whole. (A VLAN-tagged
/// host is tested against a neighbour played on a packet socket in crates/hosts/tests: this
/// kernel has no 802.1Q, `CONFIG_VLAN_8021Q` unset, so no Linux router here ends a VLAN.)
#[test]
fn ipv6_hosts_resolve_a_router_by_nd_and_count_exactly() {
    if !root_or_skip("IPv6 and VLAN hosts through a router") {
        return;
    }
    let p = linerate_lab::unique_name("h6");
    let (r, a, b) = (format!("{p}r"), format!("{p}a"), format!("{p}b"));
    let _guard = Netns(vec![r.clone(), a.clone(), b.clone()]);
    for ns in [&r, &a, &b] {
        ip(&["netns", "add", ns]);
    }
    let (ra, pa, rb, pb) = (
        format!("{p}ra"),
        format!("{p}pa"),
        format!("{p}rb"),
        format!("{p}pb"),
    );
    ip(&[
        "-n", &r, "link", "add", &ra, "type", "veth", "peer", "name", &pa, "netns", &a,
    ]);
    ip(&[
        "-n", &r, "link", "add", &rb, "type", "veth", "peer", "name", &pb, "netns", &b,
    ]);
    // The ports' own stack stays quiet: linerate's hosts speak for them.
    for (ns, dev) in [(&a, &pa), (&b, &pb)] {
        ip(&[
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{dev}.disable_ipv6=1"),
        ]);
        ip(&["-n", ns, "link", "set", dev, "up"]);
    }
    ip(&[
        "netns",
        "exec",
        &r,
        "sysctl",
        "-qw",
        "net.ipv6.conf.all.forwarding=1",
    ]);
    for dev in [&ra, &rb] {
        ip(&["-n", &r, "link", "set", dev, "up"]);
    }
    ip(&[
        "-n",
        &r,
        "addr",
        "add",
        "2001:2:0:a::1/64",
        "dev",
        &ra,
        "nodad",
    ]);
    ip(&[
        "-n",
        &r,
        "addr",
        "add",
        "2001:2:0:b::1/64",
        "dev",
        &rb,
        "nodad",
    ]);
    let west = format!("name=w,port={pa}@{a},ipv6=2001:2:0:a::10/64,gateway6=2001:2:0:a::1");
    let east = format!("name=e,port={pb}@{b},ipv6=2001:2:0:b::10/64,gateway6=2001:2:0:b::1");
    let n = 20_000u64;
    let out = common::linerate_ok(&[
        "tx",
        "--host",
        &west,
        "--host",
        &east,
        "--flow",
        "w:e",
        "--flow",
        "e:w",
        "--ipv6",
        "-s",
        "128",
        "-n",
        &n.to_string(),
        "--rate",
        "20k",
        "--cores",
        "0,1",
        "--json",
        "-q",
    ]);
    let json = common::json(&out);
    for port in json["ports"].as_array().unwrap() {
        let f = &port["rx"]["flows"][0];
        assert_eq!(
            (f["tx_frames"].as_u64(), f["rx_frames"].as_u64()),
            (Some(n), Some(n)),
            "{f}"
        );
        assert_eq!(f["lost"], 0, "{f}");
    }
    let neighbours = json["neighbours"].as_array().unwrap();
    for gw in ["2001:2:0:a::1", "2001:2:0:b::1"] {
        assert!(
            neighbours.iter().any(|x| x["addr"] == gw),
            "{gw} in {neighbours:?}"
        );
    }
    let learnt = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["-n", &r, "-6", "neigh", "show"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    for (addr, dev) in [("2001:2:0:a::10", &ra), ("2001:2:0:b::10", &rb)] {
        let line = learnt
            .lines()
            .find(|l| l.starts_with(&format!("{addr} dev {dev} ")))
            .unwrap_or_else(|| panic!("{addr} on {dev} in {learnt}"));
        assert!(
            !line.contains("PERMANENT") && line.contains("lladdr"),
            "{line}"
        );
    }
}
