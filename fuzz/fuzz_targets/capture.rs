//! A capture file, as `linerate replay FILE` reads it, through the loader and into a plan at
//! three speeds and a rate: any bytes must end in a plan or a one-line reason, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_stream::{Capture, Replay, Speed};

fuzz_target!(|data: &[u8]| {
    let Ok(capture) = Capture::parse(data, 1500) else {
        return;
    };
    assert_eq!(capture.frames.len(), capture.times_ns.len());
    assert!(capture.times_ns.windows(2).all(|w| w[0] <= w[1]));
    for (speed, rate) in [
        (Speed::Max, None),
        (Speed::Times(1.0), None),
        (Speed::Times(1e9), None),
        (Speed::Times(1.0), Some("1Gbps-l1".to_owned())),
    ] {
        let replay = Replay {
            speed,
            rate,
            loops: Some(3),
            dst_mac: Some([2, 0, 0, 0, 0, 1]),
            ..Replay::default()
        };
        if let Ok(plan) = capture.clone().plan("fuzz", &replay) {
            let _ = plan.requested_pps();
            for cycle in plan.cycles() {
                let _ = cycle.for_worker(1, 2, Some(1000));
            }
        }
    }
});
