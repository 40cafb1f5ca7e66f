//! The receive program in the kernel (BPF_PROG_RUN, no interface needed) held to the Rust model,
//! frame for frame: the same sequence state, counts and latency bookkeeping. Needs root; with
//! CI=true a non-root run fails instead of skipping.
#![cfg(target_os = "linux")]

use libbpf_rs::ProgramInput;
use linerate_rx::flow::RxFlow;
use linerate_rx::{FlowState, Receiver, RxConfig, RxError};
use linerate_wire::signature::{self, Signature};
use linerate_wire::{FrameSpec, IpSpec, L4Spec, Payload, checksum};

fn root_or_skip() -> bool {
    linerate_lab::root_or_skip("receive program tests (loading BPF)")
}

fn frame(flow: u16, len: usize) -> Vec<u8> {
    let spec = FrameSpec {
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
        vlan: None,
        ip: IpSpec::V4 {
            src: [198, 18, 0, 1].into(),
            dst: [198, 18, 0, 2].into(),
            ttl: 64,
            id: 0,
            dscp: 0,
        },
        l4: L4Spec::Udp {
            src_port: 1024,
            dst_port: 5001,
        },
        payload: Payload::Increment,
    };
    let f = spec.stack().build(len + 4).unwrap();
    let layout = f.flow_layout().unwrap();
    let mut bytes = f.bytes;
    assert!(signature::write_template(&mut bytes, flow));
    assert!(checksum::fill_frame(&mut bytes, &layout));
    bytes
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs one frame through the program on CPU 0 and returns its verdict.
fn run(rx: &mut Receiver, frame: &[u8]) -> u32 {
    let input = ProgramInput {
        data_in: Some(frame),
        repeat: 1,
        ..ProgramInput::default()
    };
    rx.program()
        .test_run(input)
        .expect("BPF_PROG_RUN")
        .return_value
}

/// Keeps this thread on one CPU: the program's state is per CPU, and BPF_PROG_RUN runs an XDP
/// program on the calling one.
fn pin_to_one_cpu() {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET and sched_setaffinity only read and
    // write the set we own, for the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// Sends `seqs` of flow 0 through the kernel and the model; returns both flow states.
fn kernel_and_model(seqs: &[u32], len: usize) -> (linerate_rx::RxTotals, RxFlow) {
    pin_to_one_cpu();
    let mut rx = Receiver::load(RxConfig::default()).unwrap();
    let mut model = RxFlow::default();
    let mut f = frame(0, len);
    for &seq in seqs {
        let tx = monotonic_ns();
        signature::stamp(&mut f, seq, tx);
        assert_eq!(run(&mut rx, &f), libbpf_rs::libbpf_sys::XDP_DROP);
        FlowState {
            flow: &mut model,
            hist: None,
        }
        .observe(
            Signature {
                flow: 0,
                seq,
                tx_ns: tx & signature::TS_MASK,
            },
            f.len() as u64,
            false,
            || tx + 1_000,
        );
    }
    (rx.read().unwrap(), model)
}

#[test]
fn the_kernel_program_agrees_with_the_model_on_gaps_lates_duplicates_and_old_frames() {
    if !root_or_skip() {
        return;
    }
    let seqs = [
        0,
        1,
        3,
        4,
        2,
        4,
        100,
        5,
        101,
        101,
        99,
        102,
        4_000_000_000,
        7,
        4_000_000_001,
    ];
    let (totals, model) = kernel_and_model(&seqs, 60);
    assert_eq!(totals.flows.len(), 1);
    let k = &totals.flows[0];
    assert_eq!(k.frames, model.frames);
    assert_eq!(k.bytes, model.bytes);
    assert_eq!(k.frames, seqs.len() as u64);
    assert_eq!(k.bytes, 60 * seqs.len() as u64);
    assert_eq!(
        (k.gaps, k.late, k.duplicates, k.old),
        (model.gaps, model.late, model.dups, model.old)
    );
    // The model's own known answer for this sequence.
    assert_eq!((model.late, model.dups), (2, 2));
    let lat = k.latency.expect("latency measured");
    assert!(lat.min <= lat.max && lat.min as f64 <= lat.mean && lat.mean <= lat.max as f64);
    // Stamped a moment before the run: more than 0, far less than a second.
    assert!(lat.max < 1_000_000_000, "{lat:?}");
    assert!(lat.p50.is_some(), "flow 0 has a histogram");
    assert_eq!(totals.global.other_frames, 0);
}

/// Frames that share a departure stamp (a sender's bulk) are counted and sequenced, and timed
/// once: the kernel times the same frames the model does, and every frame with `every_frame`.
#[test]
fn frames_sharing_a_stamp_are_timed_once_unless_every_frame() {
    if !root_or_skip() {
        return;
    }
    pin_to_one_cpu();
    for every_frame in [false, true] {
        let mut rx = Receiver::load(RxConfig {
            every_frame,
            ..RxConfig::default()
        })
        .unwrap();
        let mut model = RxFlow::default();
        let mut f = frame(0, 60);
        // 3 bulks of 16 frames, and a duplicate of the first bulk's among the third's: its
        // stamp differs from the last timed, so it is timed, and so is the frame after it.
        // 3 + 2 timed.
        let stamps: Vec<u64> = (0..3).map(|_| monotonic_ns()).collect();
        let mut sent: Vec<(u32, u64)> = (0..48u32).map(|s| (s, stamps[s as usize / 16])).collect();
        sent.insert(40, (3, stamps[0]));
        for &(seq, tx) in &sent {
            signature::stamp(&mut f, seq, tx);
            run(&mut rx, &f);
            let sig = Signature {
                flow: 0,
                seq,
                tx_ns: tx & signature::TS_MASK,
            };
            FlowState {
                flow: &mut model,
                hist: None,
            }
            .observe(sig, 60, every_frame, monotonic_ns);
        }
        let totals = rx.read().unwrap();
        let k = &totals.flows[0];
        let timed = k.latency.expect("timed").timed;
        assert_eq!(k.frames, 49);
        assert_eq!(timed, model.lat_count);
        assert_eq!(
            timed,
            if every_frame { 49 } else { 5 },
            "every_frame {every_frame}"
        );
        assert_eq!((k.duplicates, k.late), (1, 0));
    }
}

#[test]
fn random_orders_and_repeats_agree_with_the_model() {
    if !root_or_skip() {
        return;
    }
    // A fixed pseudo-random walk: mostly forward, some jumps back, some repeats.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut seq = 0u32;
    let mut seqs = vec![];
    for _ in 0..3000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        seq = match state % 10 {
            0 => seq.wrapping_sub((state >> 8) as u32 % 100),
            1 => seq,
            2 => seq.wrapping_add((state >> 8) as u32 % 80),
            _ => seq.wrapping_add(1),
        };
        seqs.push(seq);
    }
    let (totals, model) = kernel_and_model(&seqs, 61);
    let k = &totals.flows[0];
    assert_eq!(
        (k.frames, k.gaps, k.late, k.duplicates, k.old),
        (model.frames, model.gaps, model.late, model.dups, model.old)
    );
    assert!(model.late > 0 && model.dups > 0 && model.old > 0 && model.gaps > 0);
}

#[test]
fn stray_frames_are_other_and_flows_beyond_the_table_are_untracked() {
    if !root_or_skip() {
        return;
    }
    let mut rx = Receiver::load(RxConfig {
        flows: 16,
        hist_flows: 4,
        ..RxConfig::default()
    })
    .unwrap();
    let mut stray = frame(0, 60);
    let n = stray.len();
    stray[n - 1] ^= 0xff; // the magic no longer matches
    run(&mut rx, &stray);
    run(&mut rx, &[0u8; 14]); // shorter than a trailer
    let mut beyond = frame(16, 60);
    signature::stamp(&mut beyond, 0, monotonic_ns());
    run(&mut rx, &beyond);
    let mut future = frame(3, 60);
    signature::stamp(&mut future, 0, monotonic_ns() + 10_000_000_000);
    run(&mut rx, &future);
    let totals = rx.read().unwrap();
    assert_eq!(totals.global.other_frames, 2);
    assert_eq!(totals.global.other_bytes, 60 + 14);
    assert_eq!(totals.global.untracked_frames, 1);
    assert_eq!(totals.global.future, 1);
    // The future frame is still a flow's frame, without a latency.
    let f3 = totals.flow(3).expect("flow 3 counted");
    assert_eq!((f3.frames, f3.latency), (1, None));
    assert!(totals.flow(16).is_none());
}

#[test]
fn the_pass_option_passes_and_bad_table_sizes_are_refused() {
    if !root_or_skip() {
        return;
    }
    let mut rx = Receiver::load(RxConfig {
        pass: true,
        ..RxConfig::default()
    })
    .unwrap();
    assert_eq!(run(&mut rx, &frame(0, 60)), libbpf_rs::libbpf_sys::XDP_PASS);
    for (flows, hist_flows) in [(0, 0), (70_000, 0), (16, 17)] {
        let e = Receiver::load(RxConfig {
            flows,
            hist_flows,
            ..RxConfig::default()
        })
        .unwrap_err();
        assert!(
            matches!(e, RxError::FlowTable { .. } | RxError::HistFlows { .. }),
            "{e}"
        );
    }
}

/// A second run's sequence numbers restart at 0: after `reset` the program judges them afresh
/// (no late, old or duplicate frames from the first run's state) and the counts start at zero.
#[test]
fn reset_forgets_the_last_run_so_sequences_may_restart() {
    if !root_or_skip() {
        return;
    }
    pin_to_one_cpu();
    let mut rx = Receiver::load(RxConfig {
        flows: 8,
        hist_flows: 2,
        ..RxConfig::default()
    })
    .unwrap();
    let send = |rx: &mut Receiver, flow: u16, seqs: std::ops::Range<u32>| {
        let mut f = frame(flow, 60);
        for seq in seqs {
            signature::stamp(&mut f, seq, monotonic_ns());
            run(rx, &f);
        }
    };
    let mut stray = frame(0, 60);
    let n = stray.len();
    stray[n - 1] ^= 0xff;
    send(&mut rx, 0, 0..100);
    send(&mut rx, 5, 0..10);
    run(&mut rx, &stray);
    // Without a reset, the same sequences again are duplicates and old frames.
    send(&mut rx, 5, 0..10);
    let before = rx.read().unwrap();
    assert_eq!(before.flow(5).unwrap().duplicates, 10);
    rx.reset().unwrap();
    let empty = rx.read().unwrap();
    assert!(empty.flows.is_empty(), "{empty:?}");
    assert_eq!(empty.global, linerate_rx::RxGlobal::default());
    send(&mut rx, 0, 0..50);
    let after = rx.read().unwrap();
    assert_eq!(after.flows.len(), 1);
    let f0 = after.flow(0).unwrap();
    assert_eq!(
        (f0.frames, f0.gaps, f0.late, f0.duplicates, f0.old),
        (50, 0, 0, 0, 0)
    );
    // The histogram was cleared too: it holds this run's frames only.
    let lat = f0.latency.unwrap();
    assert!(lat.p50.is_some() && lat.max < 1_000_000_000, "{lat:?}");
    assert_eq!(after.global.other_frames, 0);
}
