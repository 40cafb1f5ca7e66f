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

/// A size the port cannot send was refused only after the resolve wait (its ARP on the wire):
/// now before any goes out, so a gateway nobody holds is never asked for.
#[test]
fn a_size_the_port_cannot_send_is_refused_before_resolving() {
    if !root_or_skip("hosts on a lab") {
        return;
    }
    let lab = router_lab("hsz");
    let [_, east] = hosts(&lab);
    let (west_ip, _, _, _) = linerate_lab::routed_addresses(&lab.name);
    let o = west_ip.octets();
    let nobody = std::net::Ipv4Addr::new(o[0], o[1], o[2], o[3] ^ 0x80);
    let west = format!(
        "name=west,port={},ipv4={west_ip}/24,gateway={nobody}",
        lab.sender
    );
    let e = common::linerate_usage_error(&[
        "tx",
        "--host",
        &west,
        "--host",
        &east,
        "--flow",
        "west:east",
        "-n",
        "10",
        "--size",
        "9000",
        "--resolve-timeout",
        "1s",
    ]);
    assert!(e.contains("9000") && !e.contains("did not answer"), "{e}");
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
        // Issue 40 #5: found before any port opens (x0 and x1 do not exist), not after ARP.
        (
            vec![
                "tx",
                "--host",
                "name=a,port=x0,ipv4=10.0.0.1/24",
                "--host",
                "name=b,port=x1,ipv4=10.0.0.1/24",
                "--flow",
                "a:b",
            ],
            "10.0.0.1 is also host a's",
        ),
        (
            vec![
                "tx",
                "--host",
                "name=a,port=x0,ipv4=10.0.0.1/24",
                "--host",
                "name=b,port=x1,ipv4=10.0.0.2/24",
                "--flow",
                "a:a",
            ],
            "not to itself",
        ),
        (
            vec![
                "tx",
                "--host",
                "name=a,port=x0,ipv4=10.0.0.255/24",
                "--flow",
                "a:a",
            ],
            "broadcast address of 10.0.0.0/24",
        ),
        (
            vec![
                "tx",
                "--host",
                "name=a,port=x0,ipv4=10.0.0.1/24,mac=00:00:00:00:00:00",
                "--flow",
                "a:a",
            ],
            "mac: 00:00:00:00:00:00",
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

/// A neighbour played on a packet socket at the far end of a veth pair: it answers every ARP
/// request for `addr` with `mac` (in the ARP sender and the Ethernet source) until `stop`.
fn answer_arp_as(
    netns: &str,
    iface: &str,
    addr: std::net::Ipv4Addr,
    mac: [u8; 6],
    stop: &std::sync::atomic::AtomicBool,
) {
    use etherparse::{
        ArpHardwareId, ArpOperation, ArpPacket, EtherType, NetSlice, PacketBuilder, SlicedPacket,
    };
    use std::io::Write;
    use std::sync::atomic::Ordering;
    const ETH_P_ARP: u16 = 0x0806;
    let iface = iface.to_owned();
    let fd = linerate_xdp::in_netns(Some(netns), move || {
        let fd = linerate_sys::raw_socket(libc::AF_PACKET, i32::from(ETH_P_ARP.to_be())).unwrap();
        let sll = libc::sockaddr_ll {
            sll_family: libc::AF_PACKET as u16,
            sll_protocol: ETH_P_ARP.to_be(),
            sll_ifindex: linerate_sys::if_index(&iface).unwrap() as i32,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 0,
            sll_addr: [0; 8],
        };
        linerate_sys::bind(&fd, &sll).unwrap();
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: 20_000,
        };
        linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout).unwrap();
        Ok(fd)
    })
    .unwrap();
    let mut out = std::fs::File::from(fd.try_clone().unwrap());
    let mut buf = vec![0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let Ok(got) = linerate_sys::recv_packet(&fd, &mut buf) else {
            continue;
        };
        if got.pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        let Ok(p) = SlicedPacket::from_ethernet(&buf[..got.len]) else {
            continue;
        };
        let Some(NetSlice::Arp(a)) = &p.net else {
            continue;
        };
        if a.operation() != ArpOperation::REQUEST || a.target_protocol_addr() != addr.octets() {
            continue;
        }
        let reply = ArpPacket::new(
            ArpHardwareId::ETHERNET,
            EtherType::IPV4,
            ArpOperation::REPLY,
            &mac,
            &addr.octets(),
            a.sender_hw_addr(),
            a.sender_protocol_addr(),
        )
        .unwrap();
        let asker: [u8; 6] = a.sender_hw_addr().try_into().unwrap();
        let mut frame = Vec::new();
        PacketBuilder::ethernet2(mac, asker)
            .arp(reply)
            .write_to_vec(&mut frame)
            .unwrap();
        out.write_all(&frame).unwrap();
    }
}

/// Issue 40 #4: a gateway "resolved" to a broadcast, multicast or zero MAC would turn a
/// line-rate stream into a storm on the DUT's segment. The run must fail naming the MAC, and
/// tcpdump on the gateway's end must see the ARP exchange and not one frame of the stream.
#[test]
fn a_gateway_answering_with_a_group_or_zero_mac_fails_the_run_and_gets_nothing() {
    if !root_or_skip("a gateway answering with a group MAC") {
        return;
    }
    use std::process::Stdio;
    let p = linerate_lab::unique_name("hgb");
    let (hosts_ns, gw_ns) = (format!("{p}a"), format!("{p}r"));
    let _guard = Netns(vec![hosts_ns.clone(), gw_ns.clone()]);
    for ns in [&hosts_ns, &gw_ns] {
        ip(&["netns", "add", ns]);
    }
    let (pa, qa, pb, qb) = (
        format!("{p}pa"),
        format!("{p}qa"),
        format!("{p}pb"),
        format!("{p}qb"),
    );
    for (port, peer) in [(&pa, &qa), (&pb, &qb)] {
        #[rustfmt::skip]
        ip(&["-n", &hosts_ns, "link", "add", port, "type", "veth", "peer", "name", peer, "netns", &gw_ns]);
        // Both kernels stay quiet on these links: only linerate and the played gateway talk.
        for (ns, dev) in [(&hosts_ns, port), (&gw_ns, peer)] {
            let sysctl = format!("net.ipv6.conf.{dev}.disable_ipv6=1");
            ip(&["netns", "exec", ns, "sysctl", "-qw", &sysctl]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
    }
    let gateway = std::net::Ipv4Addr::new(198, 18, 0, 1);
    let west = format!("name=w,port={pa}@{hosts_ns},ipv4=198.18.0.10/24,gateway={gateway}");
    let east = format!("name=e,port={pb}@{hosts_ns},ipv4=198.18.1.10/24");
    let dir = tempfile::tempdir().unwrap();
    for bogus in [[0xff; 6], [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01], [0; 6]] {
        let pcap = dir.path().join("gw.pcap");
        let mut tcpdump = Command::new("ip")
            .args([
                "netns", "exec", &gw_ns, "tcpdump", "-i", &qa, "-U", "-n", "-w",
            ])
            .arg(&pcap)
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump");
        let _stderr = common::listening(&mut tcpdump);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let out = std::thread::scope(|scope| {
            scope.spawn(|| answer_arp_as(&gw_ns, &qa, gateway, bogus, &stop));
            let out = common::linerate(&[
                "tx",
                "--host",
                &west,
                "--host",
                &east,
                "--flow",
                "w:e",
                "-n",
                "1000",
                "--resolve-timeout",
                "1s",
            ]);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            out
        });
        // Frames still in flight reach tcpdump before it is stopped.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let _ = Command::new("kill")
            .args(["-INT", &tcpdump.id().to_string()])
            .status();
        tcpdump.wait().unwrap();
        let text = mac(bogus);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text}: {out:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&text) && stderr.contains(&gateway.to_string()),
            "{stderr}"
        );
        let frames = common::tcpdump(&pcap);
        assert!(
            frames
                .iter()
                .any(|f| f.contains("Request who-has 198.18.0.1")),
            "the gateway was asked: {frames:#?}"
        );
        assert!(
            frames.iter().all(|f| f.contains("ethertype ARP")),
            "{text}: only ARP on the gateway's link, no stream: {:#?}",
            &frames[..frames.len().min(8)]
        );
    }
}

/// Two ports in one process once both ran their workers on core 0 unless told, taking turns
/// on it: each now takes a core of its own, and where there are too few they share, said so.
#[test]
fn each_port_of_a_run_takes_a_core_of_its_own_and_sharing_is_said() {
    if !root_or_skip("hosts on two ports") {
        return;
    }
    let lab = router_lab("hcr");
    let [west, east] = hosts(&lab);
    let run = |taskset: Option<&str>| {
        let mut cmd = match taskset {
            Some(cores) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cores, env!("CARGO_BIN_EXE_linerate")]);
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_linerate")),
        };
        let out = cmd
            .args(["tx", "--host", &west, "--host", &east])
            .args(["--flow", "west:east", "--flow", "east:west"])
            .args(["-n", "1000", "--rate", "10k", "--json", "-q"])
            .output()
            .expect("linerate tx");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let json = common::json(&String::from_utf8_lossy(&out.stdout));
        let mut cores: Vec<u64> = json["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .flat_map(|p| p["workers"].as_array().expect("workers").clone())
            .map(|w| w["core"].as_u64().expect("a core"))
            .collect();
        cores.sort_unstable();
        (cores, stderr)
    };
    let allowed = std::thread::available_parallelism().map_or(1, |n| n.get());
    if allowed >= 2 {
        let (cores, stderr) = run(None);
        assert_eq!(cores.len(), 2, "{stderr}");
        assert_ne!(cores[0], cores[1], "both ports on one core: {stderr}");
        assert!(!stderr.contains("share"), "{stderr}");
    }
    let (cores, stderr) = run(Some("0"));
    assert_eq!(cores, [0, 0], "{stderr}");
    assert!(
        stderr.contains(&format!(
            "warning: 2 transmitting ports on the 1 core(s) this process may run on: {} and {}@{} share core 0",
            lab.sender, lab.receiver, lab.netns
        )),
        "{stderr}"
    );
}

/// A gateway played on a packet socket at `iface` of `netns` for issue 40 #7: answers ARP for
/// `gateway` with `real`; once the stream's first frame arrives (the hosts resolved it, the
/// stream was compiled), a spoofer answers for `gateway` with `spoofer`, and 4,095 stations
/// flood `host` with requests (in rounds of 32, each waited for by its replies: a socket's
/// buffer holds a few hundred), then one of
/// them asks again: its reply is the last answer, after everything before it. Sets `flooded`
/// once that reply arrived.
#[allow(clippy::too_many_arguments)]
fn spoof_and_flood(
    netns: &str,
    iface: &str,
    gateway: std::net::Ipv4Addr,
    real: [u8; 6],
    spoofer: [u8; 6],
    host: (std::net::Ipv4Addr, [u8; 6]),
    flooded: &std::sync::atomic::AtomicBool,
    stop: &std::sync::atomic::AtomicBool,
) {
    use etherparse::{
        ArpHardwareId, ArpOperation, ArpPacket, EtherType, NetSlice, PacketBuilder, SlicedPacket,
        TransportSlice,
    };
    use std::io::Write;
    use std::sync::atomic::Ordering;
    const ETH_P_ALL: u16 = 0x0003;
    let iface = iface.to_owned();
    let fd = linerate_xdp::in_netns(Some(netns), move || {
        let fd = linerate_sys::raw_socket(libc::AF_PACKET, i32::from(ETH_P_ALL.to_be())).unwrap();
        let sll = libc::sockaddr_ll {
            sll_family: libc::AF_PACKET as u16,
            sll_protocol: ETH_P_ALL.to_be(),
            sll_ifindex: linerate_sys::if_index(&iface).unwrap() as i32,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 0,
            sll_addr: [0; 8],
        };
        linerate_sys::bind(&fd, &sll).unwrap();
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: 20_000,
        };
        linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout).unwrap();
        linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &(4i32 << 20)).unwrap();
        Ok(fd)
    })
    .unwrap();
    let mut out = std::fs::File::from(fd.try_clone().unwrap());
    let mut send_arp = |op: ArpOperation,
                        sha: [u8; 6],
                        spa: std::net::Ipv4Addr,
                        tha: [u8; 6],
                        tpa: [u8; 4],
                        dst: [u8; 6]| {
        let arp = ArpPacket::new(
            ArpHardwareId::ETHERNET,
            EtherType::IPV4,
            op,
            &sha,
            &spa.octets(),
            &tha,
            &tpa,
        )
        .unwrap();
        let mut frame = Vec::new();
        PacketBuilder::ethernet2(sha, dst)
            .arp(arp)
            .write_to_vec(&mut frame)
            .unwrap();
        out.write_all(&frame).unwrap();
    };
    let station = |i: u16| -> ([u8; 6], std::net::Ipv4Addr) {
        let [hi, lo] = i.to_be_bytes();
        (
            [0x02, 0xee, 0, 0, hi, lo],
            std::net::Ipv4Addr::new(10, 77, hi, lo),
        )
    };
    const FLOOD: u16 = 4095;
    // 0: answering; 1: flooding, `sent` requests out; replies counted back.
    let (mut flooding, mut sent, mut replies) = (false, 0u32, 0u32);
    let mut buf = vec![0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        if flooding && replies == sent && sent < u32::from(FLOOD) + 1 {
            let round = (u32::from(FLOOD) - sent).min(32);
            for i in sent..sent + round {
                let (sha, spa) = station(i as u16);
                send_arp(
                    ArpOperation::REQUEST,
                    sha,
                    spa,
                    [0; 6],
                    host.0.octets(),
                    [0xff; 6],
                );
            }
            sent += round;
            if round == 0 {
                // The last word: the first station asks again.
                let (sha, spa) = station(0);
                send_arp(
                    ArpOperation::REQUEST,
                    sha,
                    spa,
                    [0; 6],
                    host.0.octets(),
                    [0xff; 6],
                );
                sent += 1;
            }
        }
        let Ok(got) = linerate_sys::recv_packet(&fd, &mut buf) else {
            continue;
        };
        if got.pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        let Ok(p) = SlicedPacket::from_ethernet(&buf[..got.len]) else {
            continue;
        };
        match (&p.net, &p.transport) {
            (Some(NetSlice::Arp(a)), _)
                if a.operation() == ArpOperation::REQUEST
                    && a.target_protocol_addr() == gateway.octets() =>
            {
                let asker: [u8; 6] = a.sender_hw_addr().try_into().unwrap();
                let spa: [u8; 4] = a.sender_protocol_addr().try_into().unwrap();
                send_arp(ArpOperation::REPLY, real, gateway, asker, spa, asker);
            }
            (Some(NetSlice::Arp(a)), _) if a.operation() == ArpOperation::REPLY && flooding => {
                replies += 1;
                if replies == u32::from(FLOOD) + 1 {
                    flooded.store(true, Ordering::Relaxed);
                }
            }
            (_, Some(TransportSlice::Udp(_))) if !flooding => {
                // Unasked, a "reply" for the gateway with the spoofer's MAC.
                send_arp(
                    ArpOperation::REPLY,
                    spoofer,
                    gateway,
                    host.1,
                    host.0.octets(),
                    host.1,
                );
                flooding = true;
            }
            _ => {}
        }
    }
    eprintln!("flood: {sent} requests sent, {replies} replies");
}

/// Issue 40 #7: the neighbour report showed the last MAC learned (a spoofer's) rather than the
/// one the stream used, without a word, and listed every station of an ARP flood. After the
/// host resolved its gateway, a spoofer answers for it and 4,095 stations flood the host: the
/// report must name the MAC the stream used (the one every frame tcpdump caught on the
/// gateway's link went to), mark the conflict naming the spoofer (a warning on stderr too), and
/// count the flood rather than list it.
#[test]
fn the_report_shows_the_mac_the_stream_used_warns_of_a_spoofer_and_counts_a_flood() {
    if !root_or_skip("a spoofed gateway and an ARP flood") {
        return;
    }
    use std::sync::atomic::{AtomicBool, Ordering};
    let p = linerate_lab::unique_name("hsf");
    let (hosts_ns, gw_ns) = (format!("{p}a"), format!("{p}r"));
    let _guard = Netns(vec![hosts_ns.clone(), gw_ns.clone()]);
    for ns in [&hosts_ns, &gw_ns] {
        ip(&["netns", "add", ns]);
    }
    let (pa, qa, pb, qb) = (
        format!("{p}pa"),
        format!("{p}qa"),
        format!("{p}pb"),
        format!("{p}qb"),
    );
    for (port, peer) in [(&pa, &qa), (&pb, &qb)] {
        #[rustfmt::skip]
        ip(&["-n", &hosts_ns, "link", "add", port, "type", "veth", "peer", "name", peer, "netns", &gw_ns]);
        for (ns, dev) in [(&hosts_ns, port), (&gw_ns, peer)] {
            let sysctl = format!("net.ipv6.conf.{dev}.disable_ipv6=1");
            ip(&["netns", "exec", ns, "sysctl", "-qw", &sysctl]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
    }
    let gateway = std::net::Ipv4Addr::new(198, 18, 0, 1);
    let (real, spoofer) = ([0x02, 0x4c, 0x52, 0, 0, 0x01], [0x02, 0x66, 0, 0, 0, 0x66]);
    let (w_addr, w_mac) = (
        std::net::Ipv4Addr::new(198, 18, 0, 10),
        [0x02, 0x4c, 0x52, 0, 0, 0x10],
    );
    let west = format!(
        "name=w,port={pa}@{hosts_ns},mac={},ipv4={w_addr}/24,gateway={gateway}",
        mac(w_mac)
    );
    let east = format!("name=e,port={pb}@{hosts_ns},ipv4=198.18.1.10/24");
    let capture = common::VethCapture::start(&gw_ns, &qa, 3000, "udp");
    let (flooded, stop) = (AtomicBool::new(false), AtomicBool::new(false));
    let (out, flooded_in_time) = std::thread::scope(|scope| {
        scope.spawn(|| {
            spoof_and_flood(
                &gw_ns,
                &qa,
                gateway,
                real,
                spoofer,
                (w_addr, w_mac),
                &flooded,
                &stop,
            )
        });
        let out = common::linerate(&[
            "tx", "--host", &west, "--host", &east, "--flow", "w:e", "-n", "3000", "--rate", "1k",
            "--json",
        ]);
        let in_time = flooded.load(Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        (out, in_time)
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        flooded_in_time,
        "the flood was not answered before the run's end (3 s): the report may predate it"
    );
    // Every frame of the stream went to the MAC resolved, the real gateway's.
    let frames = capture.frames();
    assert_eq!(frames.len(), 3000);
    let to_real = format!("{} > {}", mac(w_mac), mac(real));
    assert!(
        frames.iter().all(|f| f.contains(&to_real)),
        "{:#?}",
        frames.iter().find(|f| !f.contains(&to_real))
    );
    let json = common::json(&String::from_utf8_lossy(&out.stdout));
    let port_a = format!("{pa}@{hosts_ns}");
    let port_b = format!("{pb}@{hosts_ns}");
    assert_eq!(
        json["neighbours"],
        serde_json::json!([{
            "port": port_a,
            "addr": gateway.to_string(),
            "mac": mac(real),
            "learned": mac(spoofer),
            "conflict": true,
        }]),
        "{json}"
    );
    assert_eq!(
        json["other_neighbours"],
        serde_json::json!([{"port": port_a, "count": 4095}, {"port": port_b, "count": 0}]),
        "{json}"
    );
    let warning = format!(
        "warning: neighbour {gateway} on {port_a}: the streams use {}, and {} answered for it too",
        mac(real),
        mac(spoofer)
    );
    assert!(stderr.contains(&warning), "{stderr}");
}
