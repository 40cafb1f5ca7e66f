//! The generator alone: 64-byte frames per second per core into the null port.
//! (a) cycling pre-built frames (descriptors only), (b) one random 16-bit field patched in place
//! with an incremental checksum, (c) the pre-built cycle with the receive side's signature
//! stamped into each frame (sequence, transmit time, compensation word), (d) a capture of 2^20
//! distinct frames streamed from its mapped file (each frame copied into its slot as it is
//! sent). 10 GbE line rate is 14.88 Mpps, 67 ns a frame.

use std::hint::black_box;
use std::sync::atomic::AtomicBool;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use linerate_engine::{Steer, slots_for, transmit, transmit_streamed};
use linerate_port::{NullPort, NullQueue, Port, QueueConfig, TxQueue};
use linerate_stream::{Limits, Plan, Shape, StreamSpec};

const FRAMES: u64 = 1 << 20;

fn bench_plan(c: &mut Criterion, name: &str, spec: StreamSpec) {
    let plan = Plan::compile(&[spec], &Limits::default()).expect("plan compiles");
    let Shape::Cycle { cycle, .. } = &plan.shape else {
        panic!("one stream is one cycle")
    };
    let wp = cycle.for_worker(0, 1, Some(FRAMES));
    let mut queue = NullQueue::new(&QueueConfig {
        queue_id: 0,
        // As the engine sizes a null port's queue.
        slots: slots_for(wp.frames.len(), NullPort::new(1).min_slots()),
        slot_size: 64,
        batch: 64,
    });
    for slot in 0..queue.slots() {
        let frame = wp.frames[(slot as usize) % wp.frames.len()];
        queue.slot_mut(slot)[..frame.len()].copy_from_slice(frame);
    }
    let stop = AtomicBool::new(false);
    let mut group = c.benchmark_group("hot_path");
    group.throughput(Throughput::Elements(FRAMES));
    group.bench_function(name, |b| {
        b.iter(|| {
            black_box(
                transmit(&mut queue, &wp, 64, Steer::stop(&stop), None, None)
                    .expect("null never fails"),
            )
        })
    });
    group.finish();
}

fn cached(c: &mut Criterion) {
    bench_plan(c, "cycle_prebuilt_64B", StreamSpec::seed());
}

fn patched(c: &mut Criterion) {
    let spec = StreamSpec {
        vary: vec!["src-port:random:0-65535".parse().unwrap()],
        ..StreamSpec::default()
    };
    bench_plan(c, "random_u16_patch_64B", spec);
}

fn signed(c: &mut Criterion) {
    let spec = StreamSpec {
        signature: true,
        ..StreamSpec::seed()
    };
    bench_plan(c, "cycle_prebuilt_signature_64B", spec);
}

/// A capture of FRAMES 60-byte frames, each with its own source port and address, streamed:
/// one lap of the file per iteration, after a first lap that maps its pages in.
fn streamed(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("64B.pcap");
    let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("capture file"));
    let mut w = pcap_file::pcap::PcapWriter::new(file).expect("pcap header");
    for i in 0..FRAMES as u32 {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[26..30].copy_from_slice(&i.to_be_bytes());
        f[34..36].copy_from_slice(&(i as u16).to_be_bytes());
        w.write_packet(&pcap_file::pcap::PcapPacket::new(
            std::time::Duration::ZERO,
            60,
            &f,
        ))
        .expect("frame written");
    }
    drop(w);
    // From the file's map, as a replay streams it.
    let capture = linerate_files::load_capture(&path, 1500, linerate_files::Hold::Stream)
        .expect("capture streams");
    let replay = linerate_stream::Replay {
        speed: linerate_stream::Speed::Max,
        loops: None,
        ..linerate_stream::Replay::default()
    };
    let plan = capture.plan("64B", &replay).expect("plan");
    let Shape::Streamed { frames, .. } = &plan.shape else {
        panic!("asked to stream")
    };
    let share = frames.for_worker(0, 1, Some(FRAMES), None);
    let mut queue = NullQueue::new(&QueueConfig {
        queue_id: 0,
        slots: NullPort::new(1).min_slots(),
        slot_size: 64,
        batch: 64,
    });
    let stop = AtomicBool::new(false);
    let mut send =
        || transmit_streamed(&mut queue, &share, 64, &stop, None, None).expect("null never fails");
    send();
    let mut group = c.benchmark_group("hot_path");
    group.throughput(Throughput::Elements(FRAMES));
    group.bench_function("capture_streamed_64B", |b| b.iter(|| black_box(send())));
    group.finish();
}

criterion_group!(benches, cached, patched, signed, streamed);
criterion_main!(benches);
