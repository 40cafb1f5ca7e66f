//! A capture file, as `linerate replay FILE` reads it, through the loader and into a plan at
//! three speeds and a rate: any bytes must end in a plan or a one-line reason, never a panic.
//! The same bytes streamed from a mapped file must hold the same frames as loaded, and both the
//! frames pcap-file's own readers copy out (not the loader's offset arithmetic).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use linerate_files::{Hold, load_capture};
use linerate_stream::{Capture, Frames, Replay, Shape, Speed};

/// One file per fuzzing process, written with each input and removed once mapped.
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| std::env::temp_dir().join(format!("linerate-fuzz-{}", std::process::id())))
}

/// The frames of a capture the loader accepted, as pcap-file's readers hand them out (owned
/// copies: no offsets into the file).
fn independent(data: &[u8]) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    if let Ok(mut r) = pcap_file::pcap::PcapReader::new(data) {
        // Raw records, as the loader reads them (it accepts a nanosecond field over 10^9, as
        // libpcap does; the parsed reader refuses it).
        while let Some(p) = r.next_raw_packet() {
            frames.push(p.expect("the loader read it").data.into_owned());
        }
    } else {
        let mut r = pcap_file::pcapng::PcapNgReader::new(data).expect("the loader read it");
        while let Some(block) = r.next_block() {
            if let pcap_file::pcapng::Block::EnhancedPacket(p) = block.expect("the loader read it")
            {
                frames.push(p.data.into_owned());
            }
        }
    }
    frames
}

fuzz_target!(|data: &[u8]| {
    let parsed = Capture::parse(data, 1500);
    std::fs::write(scratch(), data).expect("scratch file");
    let streamed = load_capture(scratch(), 1500, Hold::Stream);
    // One streamed capture for each plan below (a plan consumes it).
    let mut for_plans: Vec<_> = (0..4)
        .map(|_| load_capture(scratch(), 1500, Hold::Stream))
        .collect();
    // The maps outlive the file's name: nothing is left behind.
    std::fs::remove_file(scratch()).expect("scratch file");
    let Ok(capture) = parsed else {
        // What is refused loaded is refused streamed (the caps aside: a fuzz input is small).
        assert!(streamed.is_err(), "streamed a capture refused loaded");
        return;
    };
    let streamed = streamed.expect("streamed what was loaded");
    let (Some(loaded), Frames::Streamed(mapped)) = (capture.frames.loaded(), &streamed.frames)
    else {
        panic!("not loaded and streamed");
    };
    let want = independent(data);
    assert_eq!(loaded, &want[..]);
    assert_eq!(mapped.len(), want.len() as u64);
    for (i, f) in want.iter().enumerate() {
        assert_eq!(mapped.raw(i), &f[..]);
    }
    assert_eq!(streamed.times_ns, capture.times_ns);
    assert_eq!(capture.frame_count() as usize, capture.times_ns.len());
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
        let Ok(again) = Capture::parse(data, 1500) else {
            unreachable!("parsed once");
        };
        if let Ok(plan) = again.plan("fuzz", &replay) {
            let _ = plan.requested_pps();
            for cycle in plan.cycles() {
                let _ = cycle.for_worker(1, 2, Some(1000));
            }
        }
        let Some(Ok(again)) = for_plans.pop() else {
            unreachable!("streamed once");
        };
        if let Ok(plan) = again.plan("fuzz", &replay)
            && let Shape::Streamed { frames, count, .. } = &plan.shape
        {
            let share = frames.for_worker(1, 2, *count, Some(1000));
            let mut buf = vec![0u8; frames.max_len()];
            let len = frames.copy_into((share.first_seq % frames.len()) as usize, &mut buf);
            assert_eq!(&buf[..6], &[2, 0, 0, 0, 0, 1]);
            assert!(len >= 14);
        }
    }
});
