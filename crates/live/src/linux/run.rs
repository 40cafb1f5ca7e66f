//! The live runner: the engine's runner starts one pinned thread per worker, and each calls
//! BPF_PROG_RUN in live-frame mode with its own template until its count is sent, paced by the
//! engine's pacer.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use libbpf_rs::libbpf_sys;
use linerate_engine::pace::{Grant, PaceLog, Pacer};
use linerate_engine::{
    EngineError, Observer, PacingStats, Report, RunConfig, WorkerContext, WorkerReport,
    check_workers, run_workers,
};
use linerate_stream::{Plan, Shape};

use super::anchor::Anchor;
use super::port::LivePort;
use super::program::{Loaded, program, test_run, xdp_ctx};
use super::worker_map::{RingBytes, WorkerSlot};
use crate::layout::{self, Layout, META_LEN, WorkerLayout};
use crate::ring::{self, Ring};
use crate::{BACKEND, LiveError, MODE};

/// The kernel's cap on `batch_size` in live-frame mode (`TEST_XDP_MAX_BATCH`).
const MAX_BATCH: u32 = 256;
/// Frames asked of one BPF_PROG_RUN call at most: some 30 ms at 9 Mpps, long enough to amortise
/// the page pool set up per call (~15 µs). Stops do not wait for it: they raise the worker's
/// `stop` and the program drops the rest of the call's frames.
const CHUNK: u64 = 1 << 18;

/// Runs `plan` on `port`: the engine's runner gives each worker a pinned thread, which calls
/// BPF_PROG_RUN in live-frame mode with its own template until its share of the count is handed
/// to the driver, or until the duration or the stop flag ends the run. Counts are the
/// program's: frames it handed to the redirect, never the repeat asked for.
pub fn run(
    port: &LivePort,
    plan: &Plan,
    config: &RunConfig,
    observer: &dyn Observer,
) -> Result<Report, LiveError> {
    run_with(port, plan, config, observer, &|_, _| {})
}

/// `run`, calling `after_call(worker, frames sent)` after each call of the program: the tests'
/// way to make a worker fail mid-run.
pub(crate) fn run_with(
    port: &LivePort,
    plan: &Plan,
    config: &RunConfig,
    observer: &dyn Observer,
    after_call: &(dyn Fn(usize, u64) + Sync),
) -> Result<Report, LiveError> {
    check_workers(&config.workers)?;
    if let Some(state) = port.not_running() {
        return Err(LiveError::Down {
            iface: port.iface().to_owned(),
            state,
        });
    }
    let workers = config.workers.len();
    // A streamed capture: each worker's frames go through a ring of entries refilled before
    // each call (crate::ring); otherwise the plan's one cycle, laid into the map once.
    let (layout, pacing, streamed) = match &plan.shape {
        Shape::Streamed {
            frames,
            pacing,
            count,
        } => {
            let template = ring::template(frames)?;
            let entries = ring::ring_entries(workers);
            let layout = ring::layout(frames, &template, workers, *count, config.count, entries)?;
            (
                layout,
                pacing.as_ref().map(Cow::Borrowed),
                Some((&**frames, template, entries)),
            )
        }
        _ => {
            let (cycle, pacing) = layout::cycle_of(plan)?;
            let layout = Layout::compile_cycle(&cycle, workers, config.count)?;
            (layout, pacing, None)
        }
    };
    let pacing = pacing.as_deref();
    let mut loaded = match &streamed {
        Some((_, _, entries)) => Loaded::streamed(&layout, port.ifindex(), *entries)?,
        None => Loaded::new(&layout, port.ifindex())?,
    };
    let slots = loaded.map.slots();
    let prog = program(&loaded.object, "live_tx")?;
    let _anchor = Anchor::attach(prog);
    let batch = config.batch.clamp(1, MAX_BATCH);
    // Per worker, its layout and (streamed) its ring with the entries it writes.
    let mut rings = match (&mut loaded.frames, &streamed) {
        (Some(map), Some((_, _, entries))) => map.rings(*entries).into_iter().map(Some).collect(),
        _ => Vec::new(),
    };
    rings.resize_with(workers, || None);
    let jobs: Vec<_> = layout
        .workers
        .iter()
        .zip(rings)
        .enumerate()
        .map(|(i, (wl, bytes))| {
            let ring = streamed
                .as_ref()
                .zip(bytes)
                .map(|((frames, template, entries), bytes)| {
                    let share = frames.for_worker(i, workers, None, None);
                    (Ring::new(&share, template, *entries), bytes)
                });
            (wl, ring)
        })
        .collect();

    let work = |(wl, ring): (&WorkerLayout, Option<(Ring<'_>, RingBytes<'_>)>),
                ctx: &WorkerContext<'_>| {
        let i = ctx.worker;
        let mut data = vec![0u8; META_LEN + wl.template.len()];
        data[..4].copy_from_slice(&(i as u32).to_ne_bytes());
        data[META_LEN..].copy_from_slice(&wl.template);
        let sender = Sender {
            port,
            prog,
            ctx: xdp_ctx(META_LEN, data.len(), port.ifindex()),
            data,
            batch,
            slot: &slots[i],
            halt: ctx.halt(),
        };
        let pacer = pacing.map(|p| Pacer::new(p, ctx.epoch, wl.first_seq, wl.stride, batch.into()));
        let start = std::time::Instant::now();
        let (runs, log) =
            sender.send(wl.limit.unwrap_or(u64::MAX), pacer, ring, ctx, after_call)?;
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
            pacing: log.map(|l| PacingStats::from_histograms(l.late, l.gap)),
            cpu: None,
        };
        Ok::<_, LiveError>((report, ()))
    };
    // A halt also tells the program itself, so it drops what is left of each current call.
    let on_halt = || {
        for s in &slots[..workers] {
            s.stop.store(1, Ordering::Relaxed);
        }
    };
    let cores = linerate_engine::cpu::CoreTimes::read();
    let done = run_workers(
        config,
        (BACKEND, port.iface()),
        jobs,
        work,
        on_halt,
        observer,
    )
    .map_err(EngineError::from)?;
    let mut report = Report::new(
        BACKEND,
        port.iface(),
        done.into_iter().map(|d| d.0).collect(),
    );
    report.requested_pps = plan.requested_pps();
    report.cores = cores.load_until(&linerate_engine::cpu::CoreTimes::read());
    // Lanes went out as their merged cycle (cycle_of): each stream's share, as the engine
    // reports it, from where each worker's frames fall in that cycle.
    if let linerate_stream::Shape::Lanes(lanes) = &plan.shape
        && let Some(m) = linerate_stream::merge(lanes)
    {
        let mut sent = vec![linerate_engine::LaneTotals::default(); lanes.len()];
        for w in &report.workers {
            let share = linerate_engine::merged_lanes(&m, w.worker, workers, w.submitted);
            for (sum, lane) in sent.iter_mut().zip(share) {
                sum.submitted += lane.submitted;
                sum.bytes += lane.bytes;
            }
        }
        linerate_engine::set_per_stream(&mut report, plan, &sent);
    }
    Ok(report)
}

/// How often a worker checks that the link still carries frames.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// What one worker needs to call the program.
struct Sender<'a> {
    port: &'a LivePort,
    prog: i32,
    data: Vec<u8>,
    ctx: libbpf_sys::xdp_md,
    batch: u32,
    slot: &'a WorkerSlot,
    halt: &'a AtomicBool,
}

impl Sender<'_> {
    /// The worker's loop: calls sized for what is left (a chunk at most) or, paced, for what
    /// the pacer grants, until the program has handed over `limit` frames or the run is halted.
    /// A call costs ~15 µs, so at high rates the pacer's slice is what lets one call carry many
    /// frames; frames of a call leave back to back. Returns the number of calls and, paced, how
    /// closely they kept the schedule (one record per call).
    fn send(
        &self,
        limit: u64,
        mut pacer: Option<Pacer<'_>>,
        mut ring: Option<(Ring<'_>, RingBytes<'_>)>,
        ctx: &WorkerContext<'_>,
        after_call: &(dyn Fn(usize, u64) + Sync),
    ) -> Result<(u64, Option<PaceLog>), LiveError> {
        let mut log = pacer.as_ref().map(|_| PaceLog::new());
        let mut runs = 0u64;
        // The program counts a redirect as sent; the kernel drops it later if the link is down,
        // and tells no one. So the link is looked at now and then, and once more at the end.
        let mut looked = std::time::Instant::now();
        loop {
            let (sent, _, _) = self.counts();
            if sent >= limit || self.halt.load(Ordering::Relaxed) || looked.elapsed() >= LOOK_EVERY
            {
                looked = std::time::Instant::now();
                if let Some(state) = self.port.not_running() {
                    return Err(LiveError::WentDown {
                        iface: self.port.iface().to_owned(),
                        state,
                    });
                }
            }
            if sent >= limit || self.halt.load(Ordering::Relaxed) {
                return Ok((runs, log));
            }
            // A streamed capture's call takes at most what its ring holds.
            let most = ring.as_ref().map_or(CHUNK, |(r, _)| r.most());
            let room = (limit - sent).min(CHUNK).min(most);
            let want = match pacer.as_mut() {
                None => room,
                Some(p) => match p.grant(p.now(), room) {
                    Grant::Send(k) => k,
                    Grant::Wait(until) => {
                        p.wait(until, self.halt);
                        continue;
                    }
                },
            };
            match ring.as_mut() {
                None => self.call(want)?,
                Some((ring, bytes)) => {
                    // The frames go into the entries from where the program stands; it moves
                    // on by as many as it takes (fewer when stopped or at the limit).
                    let (off, len) = ring.widen(want);
                    self.slot.win_off.store(off, Ordering::Relaxed);
                    self.slot.win_len.store(len, Ordering::Relaxed);
                    let before = self.slot.index.load(Ordering::Relaxed);
                    ring.write(before, want, bytes.bytes);
                    self.call(want)?;
                    ring.advance(before, self.slot.index.load(Ordering::Relaxed));
                }
            }
            runs += 1;
            let (now_sent, bytes, _) = self.counts();
            if let (Some(p), Some(log)) = (pacer.as_mut(), log.as_mut()) {
                p.sent(now_sent - sent, log);
            }
            ctx.publish(now_sent, now_sent, bytes);
            after_call(ctx.worker, now_sent);
        }
    }

    /// What the program has counted for this worker: (frames sent, bytes, redirect errors).
    fn counts(&self) -> (u64, u64, u64) {
        (
            self.slot.sent.load(Ordering::Acquire),
            self.slot.bytes.load(Ordering::Acquire),
            self.slot.errors.load(Ordering::Acquire),
        )
    }

    /// One call of `repeat` frames. A call that hands nothing over while redirects fail means
    /// the interface refuses the frames.
    fn call(&self, repeat: u64) -> Result<(), LiveError> {
        let (sent, _, errors) = self.counts();
        // The call's first frame reads the clock afresh (a signed plan's stamps: one read a
        // bulk of STAMP_EVERY frames, counted from the call's start as the kernel's bulks are).
        self.slot.stamp_left.store(0, Ordering::Relaxed);
        match test_run(self.prog, &self.data, &self.ctx, repeat as i32, self.batch) {
            Ok(()) => {}
            // A signal (Ctrl-C) cut the call short: the counters say how far it got.
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(source) => {
                return Err(LiveError::Run {
                    iface: self.port.iface().to_owned(),
                    source,
                });
            }
        }
        let (sent_now, _, errors_now) = self.counts();
        if sent_now == sent && errors_now > errors && !self.halt.load(Ordering::Relaxed) {
            return Err(LiveError::Refused {
                iface: self.port.iface().to_owned(),
                errors: errors_now,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, OnceLock};
    use std::time::{Duration, Instant};

    use linerate_engine::{WorkerFailure, WorkerSpec};
    use linerate_lab::{LabConfig, LabGuard, root_or_skip, unique_name};
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
