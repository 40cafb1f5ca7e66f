//! The engine's one runner on a real AF_XDP port (root): a worker that panics or loses its
//! interface ends the run at once, with the report so far and the cause, and the CLI prints
//! that report and exits 1.
#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::{json, root_or_skip};
use linerate_afxdp::{XskOptions, XskPort};
use linerate_engine::{EngineError, RunConfig, WorkerFailure, WorkerSpec};
use linerate_port::{Port, PortError, PortInfo, QueueConfig, TxDesc, TxQueue};
use linerate_stream::{Limits, Plan, StreamSpec};

/// An AF_XDP port whose queue 1 panics at its 1001st submit, noting when.
struct Panicking(XskPort, Arc<OnceLock<Instant>>);

struct PanickingQueue {
    inner: Box<dyn TxQueue>,
    left: Option<u32>,
    at: Arc<OnceLock<Instant>>,
}

impl Port for Panicking {
    fn info(&self) -> &PortInfo {
        self.0.info()
    }
    fn min_slots(&self) -> u32 {
        self.0.min_slots()
    }
    fn open_queue(&self, config: &QueueConfig) -> Result<Box<dyn TxQueue>, PortError> {
        Ok(Box::new(PanickingQueue {
            inner: self.0.open_queue(config)?,
            left: (config.queue_id == 1).then_some(1000),
            at: self.1.clone(),
        }))
    }
}

impl TxQueue for PanickingQueue {
    fn slots(&self) -> u32 {
        self.inner.slots()
    }
    fn slot_size(&self) -> u32 {
        self.inner.slot_size()
    }
    fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        self.inner.slot_mut(slot)
    }
    fn reserve(&mut self, want: u32) -> u32 {
        self.inner.reserve(want)
    }
    fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError> {
        match &mut self.left {
            Some(0) => {
                self.at.get_or_init(Instant::now);
                panic!("injected fault")
            }
            Some(n) => *n -= 1,
            None => {}
        }
        self.inner.submit(descs)
    }
    fn reap(&mut self) -> Result<u32, PortError> {
        self.inner.reap()
    }
    fn drain(&mut self, timeout: Duration) -> Result<u32, PortError> {
        self.inner.drain(timeout)
    }
    fn mode(&self) -> String {
        self.inner.mode()
    }
}

/// The injected panic's message without the default hook's backtrace, which alone can take over
/// a second to resolve on a loaded machine (RUST_BACKTRACE); other panics print as usual.
fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() == Some(&"injected fault") {
                eprintln!("injected fault at {:?}", info.location());
            } else {
                previous(info);
            }
        }));
    });
}

#[test]
fn an_afxdp_worker_that_panics_ends_the_run_with_the_counts_so_far() {
    if !root_or_skip("an_afxdp_worker_that_panics_ends_the_run_with_the_counts_so_far") {
        return;
    }
    let lab = common::lab("rp", 2);
    let xsk = XskPort::open(&lab.sender, XskOptions::default()).expect("open");
    let port = Panicking(xsk, Arc::default());
    let spec = StreamSpec {
        dst_mac: linerate_wire::format_mac(&lab.receiver_mac),
        ..StreamSpec::default()
    };
    let plan = Plan::compile(&[spec], &Limits::default()).expect("plan");
    let config = RunConfig {
        workers: (0..2)
            .map(|q| WorkerSpec {
                core: None,
                queue: q,
            })
            .collect(),
        batch: 64,
        duration: Some(Duration::from_secs(30)),
        count: None,
        stop: Arc::new(AtomicBool::new(false)),
        tick: Duration::from_millis(100),
    };
    let start = Instant::now();
    quiet_injected_panics();
    let err = linerate_engine::run(&port, &plan, &config, &()).expect_err("the run must fail");
    // 64 000 frames at the lab's ~1 Mpps per core, then the panic: well under 30 s.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(!err.is_usage());
    let EngineError::Interrupted(i) = err else {
        panic!("not interrupted: {err}");
    };
    assert!(
        matches!(&i.failure, WorkerFailure::Panicked { worker: 1, .. }),
        "{}",
        i.failure
    );
    let r = &i.report;
    assert_eq!(r.workers[1].submitted, 64_000, "its 1000 submits of 64");
    assert_eq!(
        r.workers[0].completed, r.workers[0].submitted,
        "halted and drained"
    );
    assert_eq!(r.submitted, r.workers[0].submitted + 64_000);
}

/// `tx --json` on a lab whose sender interface is deleted (`delete`) or set down mid-run.
fn interface_lost_mid_run(delete: bool) {
    let lab = common::lab(if delete { "rd" } else { "rn" }, 1);
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["tx", "-q", "--json", "-i", &lab.sender, "-d", "20s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run linerate");
    std::thread::sleep(Duration::from_millis(1500));
    let action: &[&str] = if delete {
        &["link", "del", &lab.sender]
    } else {
        &["link", "set", &lab.sender, "down"]
    };
    let ip = Command::new("ip").args(action).status().expect("ip");
    assert!(ip.success());
    let lost_at = Instant::now();
    let out = child.wait_with_output().expect("wait");
    assert!(
        lost_at.elapsed() < Duration::from_secs(7),
        "{:?}",
        lost_at.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a system error: {stderr}");
    let cause = if delete { "disappeared" } else { "is down" };
    assert!(stderr.contains(cause), "{stderr}");
    let report = json(&String::from_utf8_lossy(&out.stdout));
    assert!(report["submitted"].as_u64().unwrap() > 0, "{report}");
}

#[test]
fn an_interface_set_down_mid_run_leaves_the_report_and_exit_1() {
    if root_or_skip("an_interface_set_down_mid_run_leaves_the_report_and_exit_1") {
        interface_lost_mid_run(false);
    }
}

#[test]
fn an_interface_deleted_mid_run_leaves_the_report_and_exit_1() {
    if root_or_skip("an_interface_deleted_mid_run_leaves_the_report_and_exit_1") {
        interface_lost_mid_run(true);
    }
}
