//! The live transmit program's own cost per frame, by what it has to do: the kernel times
//! `REPEAT` runs of `bpf/live_tx.bpf.c` without live frames (nothing is sent). The cases run
//! round-robin on one pinned core, so the VM's drift hits them alike; median and min of `ROUNDS`.
//! The budget per frame at the lab's ~9 Mpps is ~110 ns, so a case's extra ns over "one frame",
//! over that budget, is roughly its share of the rate. Root only (loading BPF); prints a line and
//! succeeds otherwise.
//!
//! `cargo bench -p linerate-live --bench program`

#[cfg(target_os = "linux")]
fn main() {
    use linerate_live::ProgramClock;
    use linerate_stream::{Limits, Plan, StreamSpec};

    const REPEAT: u32 = 2_000_000;
    const ROUNDS: usize = 21;

    if !nix::unistd::geteuid().is_root() {
        println!("program: skipped, loading BPF needs root");
        return;
    }
    // (name, fields, signature)
    let cases: &[(&str, &[&str], bool)] = &[
        ("one frame, nothing varies", &[], false),
        ("one frame, the signature stamped", &[], true),
        (
            "10 pre-built frames (the seed's ip-id)",
            &["ip-id:inc:0-9"],
            false,
        ),
        (
            "4096 pre-built frames (src-port inc)",
            &["src-port:inc:1-4096"],
            false,
        ),
        (
            "src-port inc over 65535 (patched)",
            &["src-port:inc:1-65535"],
            false,
        ),
        ("src-port random", &["src-port:random:1-65535"], false),
        (
            "src-ip random (32 bits)",
            &["src-ip:random:10.0.0.1-10.255.255.254"],
            false,
        ),
        (
            "dst-mac random (48 bits)",
            &["dst-mac:random:02:00:00:00:00:01-02:00:00:ff:ff:ff"],
            false,
        ),
        (
            "src-port random + dst-port inc",
            &["src-port:random:1-65535", "dst-port:inc:1-65535"],
            false,
        ),
    ];
    let last = core_affinity::get_core_ids().and_then(|c| c.last().copied());
    if let Some(core) = last {
        core_affinity::set_for_current(core);
    }
    let clocks: Vec<ProgramClock> = cases
        .iter()
        .map(|(_, vary, signature)| {
            let spec = StreamSpec {
                vary: vary.iter().map(|v| v.parse().unwrap()).collect(),
                signature: *signature,
                ..StreamSpec::default()
            };
            let plan = Plan::compile(&[spec], &Limits::default()).expect("plan");
            ProgramClock::new(&plan).expect("load")
        })
        .collect();
    let mut ns = vec![Vec::with_capacity(ROUNDS); cases.len()];
    for _ in 0..ROUNDS {
        for (clock, times) in clocks.iter().zip(&mut ns) {
            times.push(clock.time(REPEAT).expect("timing run"));
        }
    }
    println!(
        "{:<42} {:>8} {:>6}",
        "program work per frame (ns)", "median", "min"
    );
    for ((name, _, _), times) in cases.iter().zip(&mut ns) {
        times.sort_by(f64::total_cmp);
        println!("{name:<42} {:>8.0} {:>6.0}", times[ROUNDS / 2], times[0]);
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("program: the live backend runs on Linux only");
}
