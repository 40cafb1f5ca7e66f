//! Lab benchmark of the live backend (root): for each size and worker count, sends a fixed count
//! three times to a fresh lab's sink and prints the median rate counted at the sink.
//!
//! `cargo run --release -p linerate-live --example live_bench -- [COUNT] [SIZES] [VARY] [WORKERS]`
//! e.g. `-- 5000000 64,512,1518 src-port:random:1-65535 1,2` (VARY `-`: no field varies).
//! `LIVE_BENCH_QUEUES=N` gives the lab N queues whatever the worker count; `LIVE_BENCH_CORE=C`
//! puts worker 0 on core C (worker w on C + w).

#[cfg(target_os = "linux")]
fn main() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    use linerate_engine::{RunConfig, WorkerSpec};
    use linerate_lab::{LabConfig, LabGuard, unique_name};
    use linerate_stream::{Limits, Plan, StreamSpec};

    let args: Vec<String> = std::env::args().collect();
    let count: u64 = args.get(1).map_or(5_000_000, |s| s.parse().expect("COUNT"));
    let sizes: Vec<usize> = args.get(2).map_or(vec![64, 512, 1518], |s| {
        s.split(',').map(|x| x.parse().expect("SIZES")).collect()
    });
    let vary: Vec<String> = args
        .get(3)
        .filter(|s| *s != "-")
        .map(|s| vec![s.clone()])
        .unwrap_or_default();
    let worker_counts: Vec<usize> = args.get(4).map_or(vec![1, 2], |s| {
        s.split(',').map(|x| x.parse().expect("WORKERS")).collect()
    });
    let queues: Option<u32> = std::env::var("LIVE_BENCH_QUEUES")
        .ok()
        .map(|q| q.parse().expect("LIVE_BENCH_QUEUES"));
    let first_core: usize = std::env::var("LIVE_BENCH_CORE")
        .ok()
        .map_or(0, |c| c.parse().expect("LIVE_BENCH_CORE"));
    let cores = core_affinity::get_core_ids().map_or(1, |c| c.len());
    println!("size  workers  vary  Mpps(median of 3)  runs");
    for workers in worker_counts {
        let lab = LabGuard::up(&LabConfig {
            name: unique_name("lvb"),
            queues: queues.unwrap_or(workers as u32),
        })
        .expect("lab up");
        let port = linerate_live::LivePort::open(&lab.sender).expect("open");
        for &size in &sizes {
            let spec = StreamSpec {
                src_mac: linerate_wire::format_mac(&lab.sender_mac),
                dst_mac: linerate_wire::format_mac(&lab.receiver_mac),
                src_ip: lab.sender_ip.to_string(),
                dst_ip: lab.receiver_ip.to_string(),
                size,
                vary: vary.clone(),
                ..StreamSpec::default()
            };
            let plan = Plan::compile(&[spec], &Limits::default()).expect("plan");
            let mut rates = Vec::new();
            for _ in 0..3 {
                let config = RunConfig {
                    workers: (0..workers)
                        .map(|w| WorkerSpec {
                            core: Some((first_core + w) % cores),
                            queue: w as u32,
                        })
                        .collect(),
                    batch: 64,
                    duration: None,
                    count: Some(count),
                    stop: Arc::new(AtomicBool::new(false)),
                    tick: Duration::from_millis(500),
                };
                let before = lab.sink_counters().expect("sink");
                let start = Instant::now();
                let report = linerate_live::run(&port, &plan, &config, &()).expect("run");
                let elapsed = start.elapsed();
                // Wait until the sink has everything (it counts on the sender's CPU: soon).
                let deadline = Instant::now() + Duration::from_secs(5);
                let got = loop {
                    let got = lab.sink_counters().expect("sink").since(before);
                    if got.packets >= report.submitted || Instant::now() > deadline {
                        break got;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                assert_eq!(got.packets, count, "sink count");
                rates.push(got.packets as f64 / elapsed.as_secs_f64() / 1e6);
            }
            let mut sorted = rates.clone();
            sorted.sort_by(f64::total_cmp);
            let runs: Vec<String> = rates.iter().map(|r| format!("{r:.2}")).collect();
            println!(
                "{size:>4}  {workers:>7}  {:<5} {:>8.2}           {}",
                if vary.is_empty() { "-" } else { "1" },
                sorted[1],
                runs.join(" ")
            );
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("the live backend runs on Linux only");
}
