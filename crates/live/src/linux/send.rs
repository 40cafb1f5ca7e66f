//! A live worker's loop: calls of BPF_PROG_RUN sized for what is left or for what the pacer
//! grants, the link looked at now and then, a streamed capture's ring refilled between calls.

use std::sync::atomic::{AtomicBool, Ordering};

use libbpf_rs::libbpf_sys;
use linerate_engine::WorkerContext;
use linerate_engine::pace::{Grant, PaceLog, Pacer};

use super::port::LivePort;
use super::program::test_run;
use super::worker_map::{RingBytes, WorkerSlot};
use crate::LiveError;
use crate::ring::Ring;

/// Frames asked of one BPF_PROG_RUN call at most: some 30 ms at 9 Mpps, long enough to amortise
/// the page pool set up per call (~15 µs). Stops do not wait for it: they raise the worker's
/// `stop` and the program drops the rest of the call's frames.
const CHUNK: u64 = 1 << 18;

/// What one call costs, page pool and all (measured ~15 µs on the veth lab): `auto` spacing
/// sends frame by frame (a call each) only where a worker's frames are further apart.
pub(super) const CALL_PS: u64 = 20_000_000;

/// How often a worker checks that the link still carries frames.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// What one worker needs to call the program.
pub(super) struct Sender<'a> {
    pub(super) port: &'a LivePort,
    pub(super) prog: i32,
    pub(super) data: Vec<u8>,
    pub(super) ctx: libbpf_sys::xdp_md,
    pub(super) batch: u32,
    pub(super) slot: &'a WorkerSlot,
    pub(super) halt: &'a AtomicBool,
    /// (worker, core): the program finds this worker's entry by the CPU it runs on, so every
    /// call must run on the worker's core.
    pub(super) cpu: Option<(usize, usize)>,
}

impl Sender<'_> {
    /// The worker's loop: calls sized for what is left (a chunk at most) or, paced, for what
    /// the pacer grants, until the program has handed over `limit` frames or the run is halted.
    /// A call costs ~15 µs (`CALL_PS`), so at high rates the pacer's slice is what lets one call carry many
    /// frames; frames of a call leave back to back. Returns the number of calls and, paced, how
    /// closely they kept the schedule (one record per call).
    pub(super) fn send(
        &self,
        limit: u64,
        mut pacer: Option<Pacer<'_>>,
        mut ring: Option<(Ring<'_>, RingBytes<'_>)>,
        ctx: &WorkerContext<'_>,
        after_call: &(dyn Fn(usize, u64) + Sync),
    ) -> Result<(u64, Option<PaceLog>), LiveError> {
        let mut log = pacer.as_ref().map(|_| ctx.pace_log());
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
                    // Bytes read past a capture cut short are zeros: none of them is sent.
                    if ring.cut_short() {
                        return Err(LiveError::CaptureCut);
                    }
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
    pub(super) fn counts(&self) -> (u64, u64, u64) {
        (
            self.slot.sent.load(Ordering::Acquire),
            self.slot.bytes.load(Ordering::Acquire),
            self.slot.errors.load(Ordering::Acquire),
        )
    }

    /// One call of `repeat` frames. A call that hands nothing over while redirects fail means
    /// the interface refuses the frames.
    fn call(&self, repeat: u64) -> Result<(), LiveError> {
        if let Some((worker, core)) = self.cpu
            && let Ok(cpu) = nix::sched::sched_getcpu()
            && cpu != core
        {
            return Err(LiveError::OffCore { worker, core, cpu });
        }
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
