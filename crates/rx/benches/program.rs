//! The receive program's own cost per frame: the kernel times `REPEAT` runs of `bpf/rx.bpf.c`
//! on one frame (BPF_PROG_RUN, no interface). Every repetition sees the same frame, so after the
//! first it takes the duplicate branch, as cheap as the in-order one (a few compares and shifts),
//! and carries the same departure stamp: untimed, unless the receiver times every frame. The
//! first case, the lab's pass program, is what BPF_PROG_RUN itself costs a run; the net column
//! takes it away. The last line is a sender's bulk of 16 frames on one stamp (live frames): one
//! timed, fifteen not. Cases run round-robin on one pinned core; median and min of `ROUNDS`.
//! Root only (loading BPF); prints a line and succeeds otherwise. Target (issue 26): ≤ 25 ns net.
//!
//! `cargo bench -p linerate-rx --bench program`

#[cfg(target_os = "linux")]
fn main() {
    use libbpf_rs::{Object, ProgramInput};
    use linerate_rx::{Receiver, RxConfig};
    use linerate_wire::{FrameSpec, IpSpec, L4Spec, Payload, checksum, signature};

    const REPEAT: u32 = 2_000_000;
    const ROUNDS: usize = 21;

    // SAFETY: geteuid takes no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        println!("program: skipped, loading BPF needs root");
        return;
    }
    let frame = |signed: bool| {
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
        let f = spec.stack().build(64).expect("64-byte frame");
        let layout = f.flow_layout().expect("a UDP frame's layout");
        let mut bytes = f.bytes;
        if signed {
            signature::write_template(&mut bytes, 0);
            checksum::fill_frame(&mut bytes, &layout);
            signature::stamp(&mut bytes, 1, 0);
        }
        bytes
    };
    let timed = |hist_flows: u32| RxConfig {
        hist_flows,
        every_frame: true,
        ..RxConfig::default()
    };
    let untimed = |hist_flows: u32| RxConfig {
        hist_flows,
        ..RxConfig::default()
    };
    let cases: Vec<(&str, Vec<u8>, Option<RxConfig>)> = vec![
        ("BPF_PROG_RUN itself (the pass program)", frame(false), None),
        (
            "64 B, no signature (other)",
            frame(false),
            Some(untimed(256)),
        ),
        (
            "64 B, signed, not timed (stamp seen)",
            frame(true),
            Some(untimed(0)),
        ),
        (
            "64 B, signed, timed, no histogram",
            frame(true),
            Some(timed(0)),
        ),
        (
            "64 B, signed, timed, histogram",
            frame(true),
            Some(timed(256)),
        ),
    ];
    if let Some(core) = core_affinity::get_core_ids().and_then(|c| c.last().copied()) {
        core_affinity::set_for_current(core);
    }
    enum Loaded {
        Pass(Object),
        Rx(Receiver),
    }
    let mut loaded: Vec<Loaded> = cases
        .iter()
        .map(|(_, _, config)| match config {
            None => Loaded::Pass(
                linerate_xdp::load_object("pass", linerate_xdp::pass_object(), |_| Ok(()))
                    .expect("load the pass program"),
            ),
            Some(config) => Loaded::Rx(Receiver::load(config.clone()).expect("load")),
        })
        .collect();
    let mut ns = vec![Vec::with_capacity(ROUNDS); cases.len()];
    for _ in 0..ROUNDS {
        for ((l, (_, data, _)), times) in loaded.iter_mut().zip(&cases).zip(&mut ns) {
            let input = ProgramInput {
                data_in: Some(data),
                repeat: REPEAT,
                ..ProgramInput::default()
            };
            let out = match l {
                Loaded::Pass(o) => o.progs_mut().next().expect("one program").test_run(input),
                Loaded::Rx(rx) => rx.program().test_run(input),
            }
            .expect("BPF_PROG_RUN");
            times.push(out.duration.as_nanos() as f64);
        }
    }
    println!(
        "{:<42} {:>8} {:>6} {:>6}",
        "receive program per frame (ns)", "median", "min", "net"
    );
    let medians: Vec<f64> = ns
        .iter_mut()
        .map(|t| {
            t.sort_by(f64::total_cmp);
            t[ROUNDS / 2]
        })
        .collect();
    let base = medians[0];
    for ((name, _, _), (times, median)) in cases.iter().zip(ns.iter().zip(&medians)) {
        println!(
            "{name:<42} {median:>8.0} {:>6.0} {:>6.0}",
            times[0],
            median - base
        );
    }
    let bulk = (15.0 * medians[2] + medians[4]) / 16.0;
    println!(
        "{:<42} {bulk:>8.0} {:>6} {:>6.0}",
        "64 B, signed, a bulk of 16 on one stamp",
        "",
        bulk - base
    );
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("program: the receive program runs on Linux only");
}
