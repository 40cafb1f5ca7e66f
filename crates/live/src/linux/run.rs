//! The live transmitter: a `LivePort` is a `linerate_engine::Transmitter` whose workers call
//! BPF_PROG_RUN in live-frame mode with their own template (`send`), on the engine's runner and
//! pacer; the engine builds the report.

use std::sync::atomic::Ordering;

use linerate_engine::{
    Done, EngineError, Job, Observer, PacingStats, Report, RunConfig, Runner, Transmitter, Work,
    WorkerContext, WorkerReport,
};
use linerate_port::PortInfo;
use linerate_stream::{MappedFrames, Plan};

use super::anchor::Anchor;
use super::port::LivePort;
use super::program::{Loaded, Placement, program, xdp_ctx};
use super::send::Sender;
use super::worker_map::{RingBytes, WorkerSlot};
use crate::layout::{self, Layout, META_LEN, WorkerLayout};
use crate::ring::{self, Ring};
use crate::{LiveError, MODE};

/// The kernel's cap on `batch_size` in live-frame mode (`TEST_XDP_MAX_BATCH`).
const MAX_BATCH: u32 = 256;

/// Runs `plan` on `port` through the engine's one transmit path (`linerate_engine::run`), with
/// the live backend's own errors as they are: the engine's runner gives each worker a pinned
/// thread, which calls BPF_PROG_RUN in live-frame mode until its share of the count is handed
/// to the driver, or until the duration or the stop flag ends the run. Counts are the program's:
/// frames it handed to the redirect, never the repeat asked for.
pub fn run(
    port: &LivePort,
    plan: &Plan,
    config: &RunConfig,
    observer: &dyn Observer,
) -> Result<Report, LiveError> {
    Ok(linerate_engine::run(port, plan, config, observer)?)
}

impl Transmitter for LivePort {
    fn info(&self) -> &PortInfo {
        LivePort::info(self)
    }

    fn transmit(&self, work: Work<'_>, runner: &Runner<'_>) -> Result<Vec<Done>, EngineError> {
        Ok(transmit(self, work, runner, &|_, _| {})?)
    }
}

/// A streamed capture's frames and how its rings are cut.
struct Streamed<'a> {
    frames: &'a MappedFrames,
    template: Vec<u8>,
    entries: u32,
}

/// Loads the program for `work` and runs one job a worker on `runner`, calling
/// `after_call(worker, frames sent)` after each call of the program (the tests' way to make a
/// worker fail mid-run).
fn transmit(
    port: &LivePort,
    work: Work<'_>,
    runner: &Runner<'_>,
    after_call: &(dyn Fn(usize, u64) + Sync),
) -> Result<Vec<Done>, LiveError> {
    let config = runner.config();
    if let Some(state) = port.not_running() {
        return Err(LiveError::Down {
            iface: port.iface().to_owned(),
            state,
        });
    }
    if config.control.is_some() {
        return Err(LiveError::Unsupported {
            why: "its flows are steered while they run (paused, resumed, given a new rate), which \
                  the engine's own loops do and the in-kernel cycle cannot: use --backend afxdp \
                  or afpacket"
                .into(),
        });
    }
    let workers = config.workers.len();
    // A streamed capture: each worker's frames go through a ring of entries refilled before
    // each call (crate::ring); otherwise the one cycle, laid into the map once.
    let (layout, pacing, streamed) = match work {
        Work::Streamed {
            frames,
            pacing,
            count,
        } => {
            let template = ring::template(frames)?;
            let entries = ring::ring_entries(workers);
            let layout = ring::layout(frames, &template, workers, count, config.count, entries)?;
            let streamed = Streamed {
                frames,
                template,
                entries,
            };
            (layout, pacing, Some(streamed))
        }
        Work::Cycle { cycle, pacing } => {
            let layout = Layout::compile_cycle(cycle, workers, config.count)?;
            (layout, pacing, None)
        }
        Work::Lanes(lanes) => return Err(layout::unmerged(lanes.len())),
    };
    if let Some(p) = pacing
        && p.spacing == linerate_stream::Spacing::Precise
    {
        let gap = p.cycle_ps / p.cycle_frames.max(1) * workers as u64;
        if gap < super::send::CALL_PS {
            return Err(LiveError::Unsupported {
                why: format!(
                    "precise pacing sends each frame in its own BPF_PROG_RUN call, which costs \
                     ~15 µs: a worker's frames {:.2} µs apart cannot leave alone (it holds \
                     {} kpps a worker): use --backend afxdp or afpacket, or --pacing sliced",
                    gap as f64 / 1e6,
                    (linerate_stream::PS_PER_S / super::send::CALL_PS as f64 / 1e3) as u64
                ),
            });
        }
    }
    let cores: Vec<Option<usize>> = config.workers.iter().map(|w| w.core).collect();
    let placement = Placement::for_cores(&cores);
    let mut loaded = match &streamed {
        Some(s) => Loaded::streamed(&layout, port.ifindex(), s.entries, &placement)?,
        None => Loaded::new(&layout, port.ifindex(), &placement)?,
    };
    let all = loaded.map.slots();
    let slots: Vec<&WorkerSlot> = placement.slots.iter().map(|&at| &all[at]).collect();
    let prog = program(&loaded.object, layout.program())?;
    let _anchor = Anchor::attach(prog);
    // Per worker (streamed), its ring with the entries it writes.
    let mut rings = match (&mut loaded.frames, &streamed) {
        (Some(map), Some(s)) => map.rings(s.entries).into_iter().map(Some).collect(),
        _ => Vec::new(),
    };
    rings.resize_with(workers, || None);
    let call = Call {
        port,
        prog,
        batch: config.batch.clamp(1, MAX_BATCH),
        pacing,
        after_call,
    };
    let jobs = layout
        .workers
        .iter()
        .zip(rings)
        .enumerate()
        .map(|(i, (wl, bytes))| {
            let ring = streamed.as_ref().zip(bytes).map(|(s, bytes)| {
                let share = s.frames.for_worker(i, workers, None, None);
                (Ring::new(&share, &s.template, s.entries), bytes)
            });
            let (call, slot, at) = (&call, slots[i], placement.slots[i]);
            let cpu = placement.by_cpu.then_some(at);
            Box::new(move |ctx: &WorkerContext<'_>| {
                Ok(call.worker(wl, slot, at as u32, cpu, ring, ctx)?)
            }) as Job<'_>
        })
        .collect();
    // A halt also tells the program itself, so it drops what is left of each current call.
    let on_halt = || {
        for s in &slots {
            s.stop.store(1, Ordering::Relaxed);
        }
    };
    let drops_before = port.xmit_drops();
    let done = runner.run(jobs, &on_halt).map_err(EngineError::from)?;
    // The program counts a redirect as sent; a driver whose XDP ring is full drops it and
    // says so only in its own counters.
    if let (Some(before), Some(after)) = (drops_before, port.xmit_drops())
        && after > before
    {
        return Err(LiveError::DriverDropped {
            iface: port.iface().to_owned(),
            dropped: after - before,
            sent: done.iter().map(|d| d.report.completed).sum(),
        });
    }
    Ok(done)
}

/// What every worker shares to call the program.
struct Call<'a> {
    port: &'a LivePort,
    prog: i32,
    batch: u32,
    pacing: Option<&'a linerate_stream::Pacing>,
    after_call: &'a (dyn Fn(usize, u64) + Sync),
}

impl Call<'_> {
    /// One worker's run: its template behind the program's metadata (the index of its entry,
    /// `key`), its loop, its report. `cpu`: the program finds the entry by the CPU it runs on,
    /// which must be this one.
    fn worker(
        &self,
        wl: &WorkerLayout,
        slot: &WorkerSlot,
        key: u32,
        cpu: Option<usize>,
        ring: Option<(Ring<'_>, RingBytes<'_>)>,
        ctx: &WorkerContext<'_>,
    ) -> Result<Done, LiveError> {
        let i = ctx.worker;
        let mut data = vec![0u8; META_LEN + wl.template.len()];
        data[..4].copy_from_slice(&key.to_ne_bytes());
        data[META_LEN..].copy_from_slice(&wl.template);
        let sender = Sender {
            port: self.port,
            prog: self.prog,
            ctx: xdp_ctx(META_LEN, data.len(), self.port.ifindex()),
            data,
            batch: self.batch,
            slot,
            halt: ctx.halt(),
            cpu: cpu.map(|c| (i, c)),
        };
        let pacer = self.pacing.map(|p| {
            linerate_engine::pace::Pacer::new(
                p,
                ctx.epoch,
                wl.first_seq,
                wl.stride,
                self.batch.into(),
            )
            .sending_at(super::send::CALL_PS)
            .measuring()
        });
        let start = std::time::Instant::now();
        let limit = wl.limit.unwrap_or(u64::MAX);
        let (runs, log) = sender.send(limit, pacer, ring, ctx, self.after_call)?;
        let (sent, bytes, errors) = sender.counts();
        let report = WorkerReport {
            worker: i,
            core: ctx.spec.core,
            queue: ctx.spec.queue,
            mode: MODE.into(),
            submitted: sent,
            completed: sent,
            bytes,
            elapsed_s: start.elapsed().as_secs_f64(),
            stats: [
                ("redirect_errors".to_owned(), errors),
                ("runs".to_owned(), runs),
            ]
            .into_iter()
            .collect(),
            pacing: log.map(PacingStats::from_log),
            cpu: None,
        };
        Ok(Done {
            report,
            lanes: Vec::new(),
        })
    }
}

/// `run` with `after_call` (see `transmit`), for the tests.
#[cfg(test)]
fn run_with(
    port: &LivePort,
    plan: &Plan,
    config: &RunConfig,
    observer: &dyn Observer,
    after_call: &(dyn Fn(usize, u64) + Sync),
) -> Result<Report, LiveError> {
    /// A live port whose workers call `after_call` after each call of the program.
    struct Faulty<'a> {
        port: &'a LivePort,
        after_call: &'a (dyn Fn(usize, u64) + Sync),
    }
    impl Transmitter for Faulty<'_> {
        fn info(&self) -> &PortInfo {
            self.port.info()
        }
        fn transmit(&self, work: Work<'_>, runner: &Runner<'_>) -> Result<Vec<Done>, EngineError> {
            Ok(transmit(self.port, work, runner, self.after_call)?)
        }
    }
    let faulty = Faulty { port, after_call };
    Ok(linerate_engine::run(&faulty, plan, config, observer)?)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, OnceLock};
    use std::time::{Duration, Instant};

    use linerate_engine::{WorkerFailure, WorkerSpec};
    use linerate_lab::{LabConfig, LabGuard, root_or_skip, unique_name};
    use linerate_port::Usage;
    use linerate_port::fault::quiet_injected_panics;
    use linerate_stream::{Limits, StreamSpec};

    use super::*;

    /// A live run of two workers on a lab of its own, endless, whose worker 1 panics once the
    /// program has sent 1000 of its frames.
    #[test]
    fn a_worker_that_panics_ends_the_run_with_the_counts_so_far() {
        if !root_or_skip("a_worker_that_panics_ends_the_run_with_the_counts_so_far") {
            return;
        }
        if !crate::live_frames_or_skip("a_worker_that_panics_ends_the_run_with_the_counts_so_far") {
            return;
        }
        let lab = LabGuard::up(&LabConfig {
            name: unique_name("lp"),
            queues: 2,
        })
        .expect("lab up");
        let spec = StreamSpec {
            dst_mac: Some(lab.receiver_mac.into()),
            // Paced, so calls are short and the panic comes early.
            rate: "200k".parse().unwrap(),
            ..StreamSpec::default()
        };
        let plan = Plan::compile(&[spec], &Limits::default()).expect("plan");
        let port = LivePort::open(&lab.sender).expect("open live port");
        let config = RunConfig {
            workers: WorkerSpec::unpinned(2),
            batch: 64,
            duration: Some(Duration::from_secs(30)),
            count: None,
            stop: Arc::new(AtomicBool::new(false)),
            tick: Duration::from_millis(100),
            start_at: None,
            control: None,
        };
        let panicked = OnceLock::new();
        let fault = |worker: usize, sent: u64| {
            if worker == 1 && sent >= 1000 {
                panicked.get_or_init(|| (Instant::now(), sent));
                panic!("injected fault");
            }
        };
        quiet_injected_panics();
        let err = run_with(&port, &plan, &config, &(), &fault).expect_err("the run must fail");
        let (at, sent) = *panicked.get().expect("worker 1 panicked");
        assert!(
            at.elapsed() < Duration::from_secs(1),
            "ended {:?} after the panic",
            at.elapsed()
        );
        assert!(!err.is_usage(), "a failure mid-run is a system error");
        let LiveError::Engine(EngineError::Interrupted(i)) = err else {
            panic!("not interrupted: {err}");
        };
        assert!(
            matches!(&i.failure, WorkerFailure::Panicked { worker: 1, message } if message == "injected fault"),
            "{}",
            i.failure
        );
        assert_eq!(i.report.backend, "live");
        assert_eq!(i.report.workers.len(), 2);
        assert_eq!(i.report.workers[1].submitted, sent);
        assert_eq!(i.report.submitted, i.report.workers[0].submitted + sent);
    }
}
