//! The receive program's own cost per frame: the kernel times `REPEAT` runs of `bpf/rx.bpf.c`
//! on one frame (BPF_PROG_RUN, no interface). Every repetition sees the same frame, so after the
//! first it takes the duplicate branch, as cheap as the in-order one (a few compares and shifts).
//! Cases run round-robin on one pinned core; median and min of `ROUNDS`. Root only (loading
//! BPF); prints a line and succeeds otherwise. Target (issue 13): ≤ 40 ns with the histogram.
//!
//! `cargo bench -p linerate-rx --bench program`

#[cfg(target_os = "linux")]
fn main() {
    use libbpf_rs::ProgramInput;
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
        let mut f = spec.build(64).expect("64-byte frame");
        if signed {
            signature::write_template(&mut f.bytes, 0);
            checksum::fill_frame(&mut f.bytes, &f.layout);
            signature::stamp(&mut f.bytes, 1, 0);
        }
        f.bytes
    };
    let cases: Vec<(&str, Vec<u8>, RxConfig)> = vec![
        (
            "64 B, no signature (other)",
            frame(false),
            RxConfig::default(),
        ),
        (
            "64 B, signed, flow without histogram",
            frame(true),
            RxConfig {
                hist_flows: 0,
                ..RxConfig::default()
            },
        ),
        (
            "64 B, signed, flow with histogram",
            frame(true),
            RxConfig::default(),
        ),
    ];
    if let Some(core) = core_affinity::get_core_ids().and_then(|c| c.last().copied()) {
        core_affinity::set_for_current(core);
    }
    let mut receivers: Vec<Receiver> = cases
        .iter()
        .map(|(_, _, config)| Receiver::load(config.clone()).expect("load"))
        .collect();
    let mut ns = vec![Vec::with_capacity(ROUNDS); cases.len()];
    for _ in 0..ROUNDS {
        for ((rx, (_, data, _)), times) in receivers.iter_mut().zip(&cases).zip(&mut ns) {
            let input = ProgramInput {
                data_in: Some(data),
                repeat: REPEAT,
                ..ProgramInput::default()
            };
            let out = rx.program().test_run(input).expect("BPF_PROG_RUN");
            times.push(out.duration.as_nanos() as f64);
        }
    }
    println!(
        "{:<42} {:>8} {:>6}",
        "receive program per frame (ns)", "median", "min"
    );
    for ((name, _, _), times) in cases.iter().zip(&mut ns) {
        times.sort_by(f64::total_cmp);
        println!("{name:<42} {:>8.0} {:>6.0}", times[ROUNDS / 2], times[0]);
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("program: the receive program runs on Linux only");
}
