//! The receive side's per-frame work: a trailer read from any bytes, and the flow analysis of a
//! stream of signatures (any sequence numbers, stamps and arrival times). The counts must stay
//! consistent, a frame is timed exactly when the clock is read (all of them with `every_frame`,
//! which the first byte's low bit picks), and every latency must land in the histogram bucket
//! that holds it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_rx::hist::{BUCKETS, bounds, bucket};
use linerate_rx::{FlowState, RxFlow};
use linerate_wire::signature::{self, Signature};

fuzz_target!(|data: &[u8]| {
    // Any buffer: a trailer is found or not, never a panic.
    let _ = signature::parse(data);
    let mut flow = RxFlow::default();
    let mut hist = vec![0u64; BUCKETS];
    let mut future = 0u64;
    let mut now = 0u64;
    let mut reads = 0u64;
    let every_frame = data.first().is_some_and(|b| b & 1 == 1);
    // Records of 12 bytes: seq (4), tx stamp (6), arrival step (2).
    for r in data.chunks_exact(12) {
        let seq = u32::from_be_bytes(r[0..4].try_into().unwrap());
        let tx_ns = r[4..10].iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        now = now.wrapping_add(u64::from(u16::from_be_bytes([r[10], r[11]])) << 8);
        let sig = Signature {
            flow: 0,
            seq,
            tx_ns,
        };
        let mut state = FlowState {
            flow: &mut flow,
            hist: Some(&mut hist),
        };
        if !state.observe(sig, 60, every_frame, || {
            reads += 1;
            now
        }) {
            future += 1;
        }
        if let Some(lat) = signature::latency(tx_ns, now) {
            let (low, high) = bounds(bucket(lat));
            assert!(bucket(lat) < BUCKETS);
            assert!(
                lat >= low && (lat <= high || bucket(lat) == BUCKETS - 1),
                "{lat}"
            );
        }
    }
    let frames = (data.len() / 12) as u64;
    assert_eq!(flow.frames, frames);
    assert_eq!(flow.lat_count + future, reads);
    if every_frame {
        assert_eq!(reads, frames);
    } else {
        // The first frame is always timed.
        assert!(reads <= frames && (frames == 0 || reads >= 1));
    }
    assert_eq!(hist.iter().sum::<u64>(), flow.lat_count);
    assert!(flow.late + flow.dups + flow.old <= frames.saturating_sub(1));
    if flow.lat_count > 0 {
        assert!(flow.lat_min <= flow.lat_max);
    }
});
