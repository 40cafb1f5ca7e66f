//! The receive side of a port on macOS: a `/dev/bpf` capture keeping signed frames, analysed
//! by the same per-flow code as the Linux receive program (`linerate_rx`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use linerate_bpfdev::CaptureThread;
use linerate_bpfdev::capture::{CaptureCounts, Keep};
use linerate_rx::{RxProgress, RxTotals};

use crate::error::{Result, SessionError};
use crate::flows::{FlowSent, RunFlows, against, lone_reports};
use crate::macos::capture;
use crate::options::{Clock, ReceiverOptions, RxTarget};

/// A capture of the signed frames on `iface`, with the flow table `options` ask for.
pub fn start_capture(iface: &str, options: &ReceiverOptions) -> Result<CaptureThread> {
    if options.clock == Clock::Tai {
        return Err(SessionError::setting(
            crate::Setting::Clock,
            "the TAI clock needs Linux (macOS has no CLOCK_TAI): use the default monotonic clock",
        ));
    }
    let mut counts = CaptureCounts::new(options.flows as usize, options.hist_flows as usize);
    counts.every_frame = options.every_frame;
    capture(iface, Keep::Signed, counts)
}

/// Says how many frames the capture lost because it fell behind.
pub fn warn_drops(t: &CaptureThread, iface: &str) {
    if t.drops() > 0 {
        eprintln!(
            "linerate: warning: the bpf buffer on {iface} overflowed: {} frame(s) arrived \
             but were not analysed (the receiver fell behind); they count as lost",
            t.drops()
        );
    }
}

/// The receive side of a port: a capture opened before the first frame, read after each run's
/// drain and opened afresh before the next run (a capture's counts cannot be cleared in place;
/// opening /dev/bpf again costs far less than a trial).
#[derive(Debug)]
pub struct RunReceiver {
    t: Mutex<CaptureThread>,
    iface: String,
    options: ReceiverOptions,
    pub at: String,
    pub lab_end: bool,
}

impl RunReceiver {
    /// The capture a port asked for: no `target.at` takes the receiver end of the feth lab
    /// whose sender is `interface`, `IFACE` any interface.
    pub fn start(target: &RxTarget, interface: Option<&str>) -> Result<RunReceiver> {
        let iface = match &target.at {
            None => {
                let lab = match interface {
                    Some(i) => linerate_lab::feth::Feth::system().lab_of(i)?,
                    None => None,
                };
                let Some(lab) = lab else {
                    return Err(SessionError::setting(
                        crate::Setting::Receiver,
                        "a receiver without an interface takes the feth lab's receive end, but \
                         the port is not a lab's sender: name the receive interface",
                    ));
                };
                lab.receiver
            }
            Some(at) if at.contains('@') => {
                return Err(SessionError::setting(
                    crate::Setting::Receiver,
                    format!("{at}: IFACE@NETNS needs Linux (macOS has no network namespaces)"),
                ));
            }
            Some(at) => at.clone(),
        };
        let t = start_capture(&iface, &target.receiver)?;
        Ok(RunReceiver {
            t: Mutex::new(t),
            at: match target.at {
                None => format!("the lab's receive end ({iface})"),
                Some(_) => iface.clone(),
            },
            iface,
            options: target.receiver,
            lab_end: false,
        })
    }

    fn capture(&self) -> std::sync::MutexGuard<'_, CaptureThread> {
        self.t
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Everything counted since the run began, flows or not; from any thread.
    pub fn read(&self) -> Result<RxTotals> {
        Ok(self.capture().with_counts(CaptureCounts::totals)?)
    }

    /// What the capture counted so far, for the status line.
    pub fn progress(&self) -> Option<RxProgress> {
        self.read().ok().map(|t| t.progress())
    }

    /// Forgets the counts: a fresh capture on the same interface.
    /// The receive link's state is not checked here: always fine.
    pub fn check_link(&self) -> Result<()> {
        Ok(())
    }

    pub fn reset(&self) -> Result<()> {
        let fresh = start_capture(&self.iface, &self.options)?;
        let old = std::mem::replace(&mut *self.capture(), fresh);
        drop(old);
        Ok(())
    }

    /// Waits up to `drain` for the frames still on their way (returns as soon as every flow
    /// has what was sent), then reads the flows against what each sent.
    pub fn finish(&self, tx: &[FlowSent], drain: Duration) -> Result<RunFlows> {
        let sent: u64 = tx.iter().map(|t| t.2).sum();
        let deadline = Instant::now() + drain;
        let unique = |c: &CaptureCounts| c.flows.iter().map(|f| f.frames - f.dups).sum::<u64>();
        while Instant::now() < deadline && self.capture().with_counts(unique)? < sent {
            std::thread::sleep(Duration::from_millis(10));
        }
        let t = self.capture();
        warn_drops(&t, &self.iface);
        let totals = t.with_counts(CaptureCounts::totals)?;
        Ok(RunFlows {
            at: self.at.clone(),
            lab_end: false,
            flows: against(tx, &totals),
            other: totals.global,
            foreign: crate::flows::foreign(tx, &totals),
        })
    }

    /// For frames the sender does not count per flow (a replayed capture): waits up to `drain`
    /// until `frames` frames of any kind arrived; signed ones as a lone receiver.
    pub fn finish_frames(&self, frames: u64, drain: Duration) -> Result<RunFlows> {
        let deadline = Instant::now() + drain;
        let mut totals = self.read()?;
        while Instant::now() < deadline && totals.all_frames() < frames {
            std::thread::sleep(Duration::from_millis(10));
            totals = self.read()?;
        }
        warn_drops(&self.capture(), &self.iface);
        Ok(RunFlows {
            at: self.at.clone(),
            lab_end: false,
            flows: lone_reports(&totals),
            other: totals.global,
            foreign: Default::default(),
        })
    }
}
