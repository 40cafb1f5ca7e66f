//! Loading the embedded objects (root: the kernel creates their maps).
#![cfg(target_os = "linux")]

use std::sync::mpsc;
use std::time::Duration;

use linerate_xdp::{MapAbi, XdpError, live_tx_object, load_object, load_object_checked};

fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid takes no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("{test}: skipped, needs root");
    }
    root
}

/// Makes the kernel refuse one map of the object, so the load fails with libbpf's lines about it.
fn break_map(open: &mut libbpf_rs::OpenObject, name: &str) -> libbpf_rs::Result<()> {
    for mut map in open.maps_mut() {
        if map.name() == name {
            map.set_max_entries(0)?;
        }
    }
    Ok(())
}

#[test]
fn a_load_reports_its_own_log_while_another_load_runs() {
    if !root_or_skip("a_load_reports_its_own_log_while_another_load_runs") {
        return;
    }
    let (started_tx, started_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<String>();
    std::thread::scope(|scope| {
        let first = scope.spawn(move || {
            load_object("live_tx", live_tx_object(), |open| {
                started_tx.send(()).unwrap();
                // The other load runs now if nothing keeps it out; with loads serialised it
                // cannot finish before this one does.
                let _ = done_rx.recv_timeout(Duration::from_millis(500));
                break_map(open, "live_frames")
            })
        });
        started_rx.recv().unwrap();
        let second = load_object("live_tx", live_tx_object(), |open| {
            break_map(open, "live_workers")
        });
        let second = second.expect_err("live_workers of 0 entries").to_string();
        let _ = done_tx.send(second.clone());
        let first = first
            .join()
            .unwrap()
            .expect_err("live_frames of 0 entries")
            .to_string();
        assert!(first.contains("live_frames"), "{first}");
        assert!(
            !first.contains("'live_workers'"),
            "the first load's error shows the second load's log: {first}"
        );
        assert!(second.contains("live_workers"), "{second}");
        assert!(!second.contains("'live_frames'"), "{second}");
    });
}

#[test]
fn a_map_whose_sizes_differ_from_the_rust_type_is_refused_before_loading() {
    // The check reads the object, not the kernel: no root needed.
    let err = load_object_checked(
        "live_tx",
        live_tx_object(),
        &[MapAbi::sized("live_frames", 4, 7)],
        |_| Ok(()),
    )
    .unwrap_err();
    match &err {
        XdpError::Abi {
            map, what, rust, ..
        } => assert_eq!((map.as_str(), *what, *rust), ("live_frames", "value", 7)),
        other => panic!("{other}"),
    }
    let err = load_object_checked(
        "live_tx",
        live_tx_object(),
        &[MapAbi::of::<u32, u32>("no_such_map")],
        |_| Ok(()),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            XdpError::AbiMissingMap {
                map: "no_such_map",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn the_live_program_loads_with_its_abi_checked() {
    if !root_or_skip("the_live_program_loads_with_its_abi_checked") {
        return;
    }
    // The sizes the object holds: a worker entry of 384 bytes, as the Rust mirror states
    // (linerate-live's WorkerSlot).
    let object = load_object_checked(
        "live_tx",
        live_tx_object(),
        &[MapAbi::sized("live_workers", 4, 384)],
        |_| Ok(()),
    );
    assert!(object.is_ok(), "{:?}", object.err());
}
