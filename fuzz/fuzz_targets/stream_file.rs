//! A stream file, as `--stream FILE` reads it, through validation and `Plan::compile`, then split
//! for two workers: any text must end in a plan or an error, within the memory bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_stream::{Limits, Plan, Shape, SpecFile, lane_counts, merge};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = SpecFile::parse(text, "fuzz.toml") else {
        return;
    };
    for limits in [
        Limits::default(),
        Limits {
            mtu: 9000,
            link_mbps: Some(10_000),
            ..Limits::default()
        },
    ] {
        if let Ok(plan) = Plan::compile(&file.streams, &limits) {
            let _ = plan.max_len();
            let _ = plan.requested_pps();
            if let Shape::Lanes(lanes) = &plan.shape {
                let _ = lane_counts(lanes, Some(1000));
                let _ = merge(lanes);
            }
            for cycle in plan.cycles() {
                for worker in 0..2 {
                    let _ = cycle.for_worker(worker, 2, Some(1000));
                    let _ = cycle.flow_counts(worker, 2, 1000);
                }
            }
        }
    }
});
