//! Two devices on the two ends of a veth pair, each with its own bgpd: the sessions come up,
//! each learns the other's ranges with their attributes (FRR's own view), a withdrawn range
//! leaves the peer's table, a killed daemon is named, and nothing is left behind.
#![cfg(target_os = "linux")]

use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use linerate_routing::{Bgp, Block, Device, Link, Origin, Peer, PeerKind, RouteRange, Routers};

fn ip(args: &[&str]) {
    let ok = Command::new("ip").args(args).status().unwrap().success();
    assert!(ok, "ip {args:?}");
}

/// A veth pair whose ends sit in two namespaces of their own, removed on drop.
struct Wire {
    ns: [String; 2],
}

impl Wire {
    fn new() -> Wire {
        let base = linerate_lab::unique_name("lrw");
        let ns = [format!("{base}a"), format!("{base}b")];
        for n in &ns {
            ip(&["netns", "add", n]);
        }
        ip(&[
            "link", "add", "w0", "netns", &ns[0], "type", "veth", "peer", "w1", "netns", &ns[1],
        ]);
        ip(&["-n", &ns[0], "link", "set", "w0", "up"]);
        ip(&["-n", &ns[1], "link", "set", "w1", "up"]);
        Wire { ns }
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        for n in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn device(
    name: &str,
    port: String,
    me: &str,
    peer: &str,
    asn: u32,
    routes: Vec<RouteRange>,
) -> Device {
    Device {
        name: name.into(),
        links: vec![Link {
            port,
            mac: [2, 0, 0, 0, 0, asn as u8],
            addrs: vec![(me.parse().unwrap(), 24)],
        }],
        bgp: Some(Bgp {
            router_id: me.parse().unwrap(),
            peers: vec![Peer {
                name: format!("{name}-peer"),
                address: peer.parse().unwrap(),
                local_as: asn,
                kind: PeerKind::Ebgp,
                keepalive: Some(1),
                hold: Some(3),
                md5: Some("lab-secret".into()),
                routes,
            }],
        }),
        isis: None,
        ospf: None,
        ospf6: None,
        lldp: None,
    }
}

fn range(name: &str, first: &str, count: u32) -> RouteRange {
    RouteRange {
        name: name.into(),
        blocks: vec![Block {
            first: first.parse().unwrap(),
            count,
            step: 1,
        }],
        advertised: true,
        ..RouteRange::default()
    }
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(Instant::now() < deadline, "{what}: not within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_devices_peer_learn_withdraw_and_leave_nothing_behind() {
    if !linerate_lab::root_or_skip("bgpd in namespaces") {
        return;
    }
    let wire = Wire::new();
    let mut attributed = range("tx-routes", "10.10.0.0/24", 100);
    attributed.med = Some(50);
    attributed.origin = Some(Origin::Egp);
    attributed.communities = vec![(1, 2)];
    attributed.as_path = vec![1112, 1113];
    attributed.next_hop = Some("1.1.1.3".parse().unwrap());
    let tx = device(
        "dtx",
        format!("w0@{}", wire.ns[0]),
        "1.1.1.1",
        "1.1.1.2",
        1111,
        vec![attributed, range("tx-gone", "172.16.0.0/30", 4)],
    );
    let rx = device(
        "drx",
        format!("w1@{}", wire.ns[1]),
        "1.1.1.2",
        "1.1.1.1",
        2222,
        vec![range("rx-routes", "20.20.0.0/24", 10)],
    );
    let mut routers = Routers::start(vec![tx, rx]).expect("start the daemons");
    let namespaces: Vec<String> = routers.namespaces().into_iter().map(|(_, n)| n).collect();
    let sessions = wait_for("both sessions established with every route", || {
        let s = routers.sessions().unwrap();
        s.iter()
            .all(|(_, s)| s.state == "Established" && s.received > 0 && s.advertised > 0)
            .then_some(s)
    });
    let counts: Vec<(u64, u64)> = sessions
        .iter()
        .map(|(_, s)| (s.advertised, s.received))
        .collect();
    assert_eq!(counts, [(104, 10), (10, 104)], "{sessions:?}");
    let learned = routers.learned("drx-peer").unwrap().unwrap();
    let v4 = learned.v4;
    assert!(learned.v6.is_empty());
    assert_eq!(v4.len(), 104);
    let first = v4
        .iter()
        .find(|l| l.prefix.to_string() == "10.10.0.0/24")
        .unwrap();
    assert_eq!(first.next_hop, Some("1.1.1.3".parse::<IpAddr>().unwrap()));
    assert_eq!(first.med, Some(50));
    assert_eq!(first.origin, Some(Origin::Egp));
    assert_eq!(first.as_path, [1111, 1112, 1113]);
    assert_eq!(first.communities, [(1, 2)]);

    assert!(routers.announce("tx-gone", false).unwrap());
    wait_for("the withdrawn range gone from the peer", || {
        let v4 = routers.learned("drx-peer").unwrap().unwrap().v4;
        (v4.len() == 100
            && !v4
                .iter()
                .any(|l| l.prefix.to_string().starts_with("172.16.")))
        .then_some(())
    });
    assert!(!routers.announce("no-such-range", false).unwrap());

    // A daemon that dies is named in the next answer.
    let pid: i32 =
        std::fs::read_to_string(format!("/run/linerate/routing/{}/bgpd.pid", namespaces[1]))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    assert!(
        Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let e = wait_for("the dead daemon named", || routers.sessions().err());
    assert!(e.to_string().contains("device drx: bgpd exited"), "{e}");

    drop(routers);
    for n in &namespaces {
        assert!(
            !std::path::Path::new(&format!("/run/netns/{n}")).exists(),
            "{n} left behind"
        );
        assert!(!std::path::Path::new(&format!("/run/linerate/routing/{n}")).exists());
    }
    // This test's devices' daemons only: another linerate on the machine may run its own.
    for n in &namespaces {
        let left = Command::new("pgrep")
            .args(["-f", &format!("linerate/routing/{n}/")])
            .output()
            .unwrap();
        assert!(
            left.stdout.is_empty(),
            "daemons of {n} left: {}",
            String::from_utf8_lossy(&left.stdout)
        );
    }
}
