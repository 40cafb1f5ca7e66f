//! The receive side on a real lab (root): the receive program takes the lab's receive end for a
//! run and gives it back, `linerate rx` counts what arrives, and bad input.
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::{linerate, linerate_usage_error, root_or_skip};
use linerate_rx::{Receiver, RxConfig};
use linerate_xdp::PinnedSink;

/// Polls `read` until it returns `want` or two seconds pass; returns the last value.
fn settle(want: u64, mut read: impl FnMut() -> u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let got = read();
        if got == want || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_receiver_borrows_the_labs_receive_end_and_gives_it_back() {
    if !root_or_skip("receive side on a lab") {
        return;
    }
    let lab = common::lab("rxs", 1);
    let sink = PinnedSink::open(&lab.pin_dir()).unwrap();
    let sink_packets = || sink.counters().unwrap().packets;
    let before = sink_packets();
    {
        let rx = Receiver::swap_into(&lab.pin_dir(), RxConfig::default()).unwrap();
        // Frames without a signature: the receiver counts them as other, the sink sees nothing.
        let out = linerate(&["tx", "-i", &lab.sender, "-n", "100", "--cores", "0"]);
        assert!(out.status.code().is_some(), "{out:?}");
        let other = settle(100, || rx.read().unwrap().global.other_frames);
        assert_eq!(other, 100);
        assert!(rx.read().unwrap().flows.is_empty());
        assert_eq!(sink_packets(), before);
    }
    // The sink is back and counts again.
    common::linerate_ok(&["tx", "-i", &lab.sender, "-n", "100", "--cores", "0"]);
    assert_eq!(settle(before + 100, sink_packets), before + 100);
}

#[test]
fn rx_refuses_bad_tables_and_unknown_interfaces_with_one_line() {
    for (args, says) in [
        (
            &["rx", "-i", "lo", "--rx-flows", "0", "-d", "1s"][..],
            "flow table of 0 flows",
        ),
        (
            &["rx", "-i", "lo", "--rx-hist-flows", "5000", "-d", "1s"][..],
            "latency histograms for 5000 flows",
        ),
    ] {
        let err = linerate_usage_error(args);
        assert!(err.contains(says), "{err}");
    }
    if !root_or_skip("rx on an unknown interface") {
        return;
    }
    let err = linerate_usage_error(&["rx", "-i", "lrnosuch0", "-d", "1s"]);
    assert!(err.contains("lrnosuch0"), "{err}");
}
