//! The lab end to end (root): up, find, frames counted exactly at the sink, down twice.

#![cfg(target_os = "linux")]

mod common;

use std::path::Path;

use common::{RawSender, frame, root_or_skip, send_counted, wait_for};
use linerate_lab::{Lab, LabConfig, LabError, LabGuard, LabLock, SinkCounters, unique_name};
use linerate_xdp::PinnedSink;

fn nothing_left(name: &str) {
    assert!(
        !Path::new(&format!("/sys/class/net/{name}0")).exists(),
        "veth {name}0 left"
    );
    assert!(
        !Path::new(&format!("/run/netns/{name}-sink")).exists(),
        "netns {name}-sink left"
    );
    assert!(
        !Path::new(&format!("/sys/fs/bpf/linerate/{name}")).exists(),
        "pins of {name} left"
    );
    assert!(!Lab::marker_path(name).exists(), "marker of {name} left");
    assert!(
        !Path::new(&format!("/run/linerate/lab-{name}.lock")).exists(),
        "lock file of {name} left"
    );
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&netns.stdout).contains(&format!("{name}-sink")));
}

#[test]
fn lab_counts_exactly_and_goes_away() {
    if !root_or_skip("lab_counts_exactly_and_goes_away") {
        return;
    }
    let name = unique_name("t");
    let guard = LabGuard::up(&LabConfig {
        name: name.clone(),
        queues: 2,
    })
    .expect("lab up");

    // status finds what up built
    let found = Lab::find(&name).expect("find").expect("the lab exists");
    assert_eq!(found, *guard);
    assert_eq!(found.sender, format!("{name}0"));
    assert_eq!(found.receiver, format!("{name}1"));
    assert_eq!(found.netns, format!("{name}-sink"));
    assert_eq!(found.queues, 2);
    assert_ne!(found.sender_mac, found.receiver_mac);
    assert_eq!(
        (found.sender_ip, found.receiver_ip),
        linerate_lab::addresses(&name)
    );

    // a second lab of the same name is refused
    let again = Lab::up(&LabConfig {
        name: name.clone(),
        queues: 1,
    });
    assert!(matches!(again, Err(LabError::Exists { .. })), "{again:?}");

    // nothing reached the sink but what we send: IPv6 off, static neighbours
    assert_eq!(guard.sink_counters().unwrap(), SinkCounters::default());

    let sender = RawSender::bind(&guard.sender);
    send_counted(&guard, &sender, &frame(&guard, 60), 1000);
    let expected = send_counted(&guard, &sender, &frame(&guard, 1514), 100);
    assert_eq!(
        expected,
        SinkCounters {
            packets: 1100,
            bytes: 1000 * 60 + 100 * 1514
        }
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(wait_for(&guard, expected), expected);

    // another reader, through the pins only
    let pinned = PinnedSink::open(&guard.pin_dir()).expect("open pinned sink");
    assert_eq!(pinned.counters().unwrap(), expected);
    drop(pinned);
    drop(sender);

    // the guard holds the name's lock: no other command removes the lab under it
    assert!(matches!(Lab::down(&name), Err(LabError::Busy { .. })));
    drop(guard);
    nothing_left(&name);
    assert_eq!(Lab::find(&name).unwrap(), None);
    Lab::down(&name).expect("down again");
    nothing_left(&name);
}

#[test]
fn down_removes_a_half_built_lab() {
    if !root_or_skip("down_removes_a_half_built_lab") {
        return;
    }
    let name = unique_name("h");
    // A failed assertion below must not leave the hand-made namespace and marker behind.
    struct Leftovers(String);
    impl Drop for Leftovers {
        fn drop(&mut self) {
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", &format!("{}-sink", self.0)])
                .output();
            let _ = std::fs::remove_file(Lab::marker_path(&self.0));
        }
    }
    let _leftovers = Leftovers(name.clone());
    // What `up` leaves when it is killed right after creating the namespace: the marker first,
    // then the namespace.
    let marker = Lab::marker_path(&name);
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    std::fs::write(&marker, format!("lab {name}\n")).unwrap();
    let status = std::process::Command::new("ip")
        .args(["netns", "add", &format!("{name}-sink")])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(matches!(Lab::find(&name), Err(LabError::Incomplete { .. })));
    assert!(matches!(
        Lab::up(&LabConfig {
            name: name.clone(),
            queues: 1
        }),
        Err(LabError::Exists { .. })
    ));
    Lab::down(&name).expect("down");
    nothing_left(&name);
    assert!(!marker.exists());
}

#[test]
fn guard_removes_the_lab_when_a_test_panics() {
    if !root_or_skip("guard_removes_the_lab_when_a_test_panics") {
        return;
    }
    let name = unique_name("p");
    let config = LabConfig {
        name: name.clone(),
        queues: 1,
    };
    let result = std::panic::catch_unwind(|| {
        let _guard = LabGuard::up(&config).expect("lab up");
        panic!("a failing assertion");
    });
    assert!(result.is_err());
    nothing_left(&name);
}

#[test]
fn bad_names_are_refused_before_anything_is_built() {
    for name in ["", "waytoolong", "Bad", "a-b"] {
        let config = LabConfig {
            name: name.into(),
            queues: 1,
        };
        assert!(matches!(
            Lab::up(&config),
            Err(LabError::InvalidName { .. })
        ));
        assert!(matches!(Lab::down(name), Err(LabError::InvalidName { .. })));
    }
}

/// `ip ARGS…` or `tc ARGS…`'s output: iproute2 as an independent reader of what the lab built
/// through netlink.
fn show(program: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .expect("iproute2 runs");
    assert!(out.status.success(), "{program} {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn dut_labs_as_ip_and_tc_see_them() {
    if !root_or_skip("dut_labs_as_ip_and_tc_see_them") {
        return;
    }
    use linerate_lab::{DutKind, Impairments};
    for kind in [DutKind::Router, DutKind::Bridge] {
        let name = unique_name("n");
        let mut lab = LabGuard::up_with_dut(
            &LabConfig {
                name: name.clone(),
                queues: 2,
            },
            Some(kind),
        )
        .expect("lab up");
        let dut = lab.dut.clone().expect("a DUT");
        let (sink, dut_ns) = (lab.netns.clone(), dut.netns.clone());
        let sender = show("ip", &["-d", "link", "show", "dev", &lab.sender]);
        for part in [
            "state UP",
            "numtxqueues 2 numrxqueues 2",
            &format!("alias linerate lab {name}"),
        ] {
            assert!(sender.contains(part), "{part:?} in {sender}");
        }
        let receiver = show(
            "ip",
            &["-n", &sink, "-d", "link", "show", "dev", &lab.receiver],
        );
        assert!(
            receiver.contains("numtxqueues 2 numrxqueues 2"),
            "{receiver}"
        );
        assert!(receiver.contains("prog/xdp"), "the sink: {receiver}");
        let addr = show("ip", &["-n", &sink, "addr", "show", "dev", &lab.receiver]);
        assert!(
            addr.contains(&format!("inet {}/30", lab.receiver_ip)),
            "{addr}"
        );
        let mac = |m: [u8; 6]| m.map(|b| format!("{b:02x}")).join(":");
        let neigh = show("ip", &["neigh", "show", "dev", &lab.sender]);
        match kind {
            DutKind::Router => {
                // Two subnets, one each side, the router's own address on each: its routes are
                // the connected ones, and it has no neighbour it did not learn.
                let (ingress_ip, egress_ip) = dut.gateways.expect("a router has gateways");
                assert_eq!(lab.receiver_ip.octets()[..2], [198, 19]);
                assert_eq!(lab.sender_ip.octets()[..2], [198, 18]);
                let addrs = show("ip", &["-n", &dut_ns, "-4", "addr", "show"]);
                for part in [
                    format!("inet {ingress_ip}/30"),
                    format!("inet {egress_ip}/30"),
                ] {
                    assert!(addrs.contains(&part), "{part} in {addrs}");
                }
                let routes = show("ip", &["-n", &dut_ns, "route", "show"]);
                assert!(
                    routes.contains(&format!("dev {} proto kernel scope link", dut.egress)),
                    "{routes}"
                );
                let learnt = show("ip", &["-n", &dut_ns, "neigh", "show"]);
                assert!(!learnt.contains("PERMANENT"), "{learnt}");
                assert!(!neigh.contains("PERMANENT"), "{neigh}");
            }
            _ => {
                assert!(
                    neigh.contains(&format!(
                        "{} lladdr {} PERMANENT",
                        lab.receiver_ip,
                        mac(lab.receiver_mac)
                    )),
                    "{neigh}"
                );
                let bridge = show(
                    "ip",
                    &[
                        "-n",
                        &dut_ns,
                        "-d",
                        "link",
                        "show",
                        "dev",
                        &format!("{name}br"),
                    ],
                );
                assert!(bridge.contains("mcast_snooping 0"), "{bridge}");
                let port = show("ip", &["-n", &dut_ns, "link", "show", "dev", &dut.egress]);
                assert!(port.contains(&format!("master {name}br")), "{port}");
            }
        }
        let qdiscs = || show("tc", &["-n", &dut_ns, "qdisc", "show", "dev", &dut.egress]);
        lab.impair(
            &Impairments {
                loss: 0.01,
                rate_bps: Some(10_000_000),
                limit: Some(100),
                ..Impairments::default()
            },
            Path::new("/nonexistent/no-delay-line-asked"),
        )
        .expect("impair");
        let shown = qdiscs();
        for part in [
            "qdisc tbf 1: root",
            "rate 10Mbit",
            "qdisc pfifo 10: parent 1:1 limit 100p",
            "qdisc clsact ffff:",
        ] {
            assert!(shown.contains(part), "{part:?} in {shown}");
        }
        lab.impair(&Impairments::default(), Path::new("/nonexistent"))
            .expect("clear");
        let shown = qdiscs();
        for gone in ["tbf", "pfifo", "clsact"] {
            assert!(!shown.contains(gone), "{gone} left in {shown}");
        }
        drop(lab);
        nothing_left(&name);
        assert!(
            !Path::new(&format!("/run/netns/{name}-dut")).exists(),
            "netns {name}-dut left"
        );
    }
}

/// A name's lock file goes when its lab does, and a process that opened the file before that
/// never becomes a second holder: it can lock the removed file, but the name's lock is the file
/// at the path, which `take` checks it holds.
#[test]
fn a_lab_lock_goes_with_its_file_and_a_stale_open_holds_nothing() {
    if !root_or_skip("a_lab_lock_goes_with_its_file_and_a_stale_open_holds_nothing") {
        return;
    }
    let name = unique_name("k");
    let path = format!("/run/linerate/lab-{name}.lock");
    let first = LabLock::take(&name).expect("lock");
    assert!(matches!(LabLock::take(&name), Err(LabError::Busy { .. })));
    let stale = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    first.unlink();
    drop(first);
    assert!(!Path::new(&path).exists());
    let second = LabLock::take(&name).expect("lock again, on a new file");
    let stale = nix::fcntl::Flock::lock(stale, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .expect("the removed file locks: nothing ties it to the name any more");
    assert!(matches!(LabLock::take(&name), Err(LabError::Busy { .. })));
    drop(stale);
    second.unlink();
    drop(second);
    assert!(!Path::new(&path).exists());
}
