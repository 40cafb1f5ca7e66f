//! The receive side off Linux. On macOS it is a `/dev/bpf` capture keeping signed frames,
//! analysed by the same per-flow code as the Linux receive program (`linerate_rx`); elsewhere
//! (FreeBSD) there is none yet.

#[cfg(target_os = "macos")]
pub use macos::{RunReceiver, run, start_for};

#[cfg(target_os = "macos")]
pub use crate::rx_common::{RunFlows, sent_per_flow};

#[cfg(not(target_os = "macos"))]
pub use elsewhere::{RunFlows, RunReceiver, run, sent_per_flow, start_for};

#[cfg(target_os = "macos")]
mod macos {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use anyhow::{Context, Result};
    use linerate_bpfdev::CaptureThread;
    use linerate_bpfdev::capture::{CaptureCounts, Keep};
    use linerate_rx::FlowReport;

    use crate::cli::{ClockArg, ReceiverArgs, RxArgs};
    use crate::lab::capture;
    use crate::rx_common::{RunFlows, print_lone};
    use crate::usage;

    /// A capture of the signed frames on `iface`, with the flow table `args` asks for.
    fn start(iface: &str, args: &ReceiverArgs) -> Result<CaptureThread> {
        if args.clock == ClockArg::Tai {
            return Err(usage(
                "--clock tai needs Linux (macOS has no CLOCK_TAI): use the default monotonic clock",
            ));
        }
        let counts = CaptureCounts::new(args.rx_flows as usize, args.rx_hist_flows as usize);
        capture(iface, Keep::Signed, counts)
    }

    fn warn_drops(t: &CaptureThread, iface: &str) {
        if t.drops() > 0 {
            eprintln!(
                "linerate: warning: the bpf buffer on {iface} overflowed: {} frame(s) arrived \
                 but were not analysed (the receiver fell behind); they count as lost",
                t.drops()
            );
        }
    }

    pub fn run(args: &RxArgs) -> Result<()> {
        if args.netns.is_some() {
            return Err(usage(
                "--netns needs Linux: macOS has no network namespaces",
            ));
        }
        let t = start(&args.interface, &args.receiver)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
            .context("install the Ctrl-C handler")?;
        eprintln!("receiving on {} (/dev/bpf); Ctrl-C to stop", args.interface);
        let start = Instant::now();
        let mut last = (start, 0u64);
        while !stop.load(Ordering::Relaxed) && args.duration.is_none_or(|d| start.elapsed() < d) {
            std::thread::sleep(Duration::from_millis(50));
            let now = Instant::now();
            if now - last.0 >= Duration::from_secs(1) {
                let (frames, flows, other) = t.with_counts(|c| {
                    (
                        c.signed_frames(),
                        c.flows.iter().filter(|f| f.frames > 0).count(),
                        c.global.other_frames,
                    )
                })?;
                eprintln!(
                    "{:>6.1}s  {:>8.3} Mpps  {flows} flows  {frames} frames  other {other}",
                    (now - start).as_secs_f64(),
                    (frames - last.1) as f64 / (now - last.0).as_secs_f64() / 1e6,
                );
                last = (now, frames);
            }
        }
        warn_drops(&t, &args.interface);
        let totals = t.finish()?.totals();
        print_lone(args.json, &args.interface, None, start.elapsed(), &totals)
    }

    /// The receive side of a session: a capture opened before the first frame, read after
    /// each run's drain and opened afresh before the next run (a capture's counts cannot be
    /// cleared in place; opening /dev/bpf again costs far less than a trial).
    #[derive(Debug)]
    pub struct RunReceiver {
        t: Mutex<CaptureThread>,
        iface: String,
        args: ReceiverArgs,
        pub at: String,
    }

    /// The capture a session asked for: `target` "" takes the receiver end of the feth lab
    /// whose sender is `interface`, `IFACE` any interface.
    pub fn start_for(
        target: &str,
        interface: Option<&str>,
        _mode: crate::cli::XdpAttach,
        args: &ReceiverArgs,
    ) -> Result<RunReceiver> {
        let iface = if target.is_empty() {
            let lab = match interface {
                Some(i) => linerate_lab::feth::Feth::system().lab_of(i)?,
                None => None,
            };
            let Some(lab) = lab else {
                return Err(usage(
                    "--rx without an interface takes the feth lab's receive end, but -i is not \
                     a lab's sender: give --rx IFACE",
                ));
            };
            lab.receiver
        } else if target.contains('@') {
            return Err(usage(format!(
                "--rx {target}: IFACE@NETNS needs Linux (macOS has no network namespaces)"
            )));
        } else {
            target.to_owned()
        };
        let t = start(&iface, args)?;
        Ok(RunReceiver {
            t: Mutex::new(t),
            at: if target.is_empty() {
                format!("the lab's receive end ({iface})")
            } else {
                iface.clone()
            },
            iface,
            args: args.clone(),
        })
    }

    impl RunReceiver {
        fn capture(&self) -> std::sync::MutexGuard<'_, CaptureThread> {
            self.t
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        /// Everything counted since the run began, flows or not; from any thread.
        pub fn read(&self) -> Result<linerate_rx::RxTotals> {
            Ok(self.capture().with_counts(CaptureCounts::totals)?)
        }

        /// What the capture counted so far, for the status line.
        pub fn progress(&self) -> Option<linerate_rx::RxProgress> {
            self.read().ok().map(|t| t.progress())
        }

        /// Forgets the counts: a fresh capture on the same interface.
        pub fn reset(&self) -> Result<()> {
            let fresh = start(&self.iface, &self.args)?;
            let old = std::mem::replace(&mut *self.capture(), fresh);
            drop(old);
            Ok(())
        }

        /// Waits up to `drain` for the frames still on their way (returns as soon as every flow
        /// has what was sent), then reads the flows against what each sent.
        pub fn finish(
            &self,
            tx: &[(u16, Option<String>, u64)],
            drain: Duration,
        ) -> Result<RunFlows> {
            let sent: u64 = tx.iter().map(|t| t.2).sum();
            let deadline = Instant::now() + drain;
            let unique = |c: &CaptureCounts| c.flows.iter().map(|f| f.frames - f.dups).sum::<u64>();
            while Instant::now() < deadline && self.capture().with_counts(unique)? < sent {
                std::thread::sleep(Duration::from_millis(10));
            }
            let t = self.capture();
            warn_drops(&t, &self.iface);
            let totals = t.with_counts(CaptureCounts::totals)?;
            let flows = tx
                .iter()
                .map(|(id, name, n)| FlowReport::new(*id, name.clone(), *n, totals.flow(*id)))
                .collect();
            Ok(RunFlows {
                at: self.at.clone(),
                lab_end: false,
                flows,
                other: totals.global,
            })
        }

        /// For frames the sender does not count per flow (a replayed capture): waits up to
        /// `drain` until `frames` frames of any kind arrived; signed ones as a lone receiver.
        pub fn finish_frames(&self, frames: u64, drain: Duration) -> Result<RunFlows> {
            let deadline = Instant::now() + drain;
            let mut totals = self.read()?;
            while Instant::now() < deadline && crate::rx_common::all_frames(&totals) < frames {
                std::thread::sleep(Duration::from_millis(10));
                totals = self.read()?;
            }
            warn_drops(&self.capture(), &self.iface);
            Ok(RunFlows {
                at: self.at.clone(),
                lab_end: false,
                flows: crate::rx_common::lone_reports(&totals),
                other: totals.global,
            })
        }
    }
}

#[cfg(not(target_os = "macos"))]
mod elsewhere {
    use anyhow::Result;

    use crate::cli::RxArgs;
    use crate::usage;

    pub fn run(_args: &RxArgs) -> Result<()> {
        Err(usage(
            "linerate rx needs Linux (XDP) or macOS (/dev/bpf); count at one of those",
        ))
    }

    /// Per flow what came back: never on this platform yet.
    #[derive(Debug, serde::Serialize)]
    pub struct RunFlows {
        pub at: String,
        #[serde(skip)]
        pub lab_end: bool,
        pub flows: Vec<linerate_rx::FlowReport>,
        pub other: linerate_rx::RxGlobal,
    }

    impl RunFlows {
        pub fn all_frames(&self) -> (u64, u64) {
            (0, 0)
        }
    }

    /// Never constructed here: `start_for` refuses a receiver.
    #[derive(Debug)]
    pub enum RunReceiver {}

    impl RunReceiver {
        #[expect(
            dead_code,
            reason = "the same API as the Linux and macOS receivers; only the OTG server (Linux) reads it"
        )]
        pub fn read(&self) -> Result<linerate_rx::RxTotals> {
            match *self {}
        }

        pub fn reset(&self) -> Result<()> {
            match *self {}
        }

        pub fn progress(&self) -> Option<linerate_rx::RxProgress> {
            match *self {}
        }

        pub fn finish(
            &self,
            _tx: &[(u16, Option<String>, u64)],
            _drain: std::time::Duration,
        ) -> Result<RunFlows> {
            match *self {}
        }

        pub fn finish_frames(&self, _frames: u64, _drain: std::time::Duration) -> Result<RunFlows> {
            match *self {}
        }
    }

    pub fn start_for(
        _target: &str,
        _interface: Option<&str>,
        _mode: crate::cli::XdpAttach,
        _args: &crate::cli::ReceiverArgs,
    ) -> Result<RunReceiver> {
        Err(usage(
            "--rx needs Linux (XDP) or macOS (/dev/bpf) on this version; count at one of those with linerate rx",
        ))
    }

    pub fn sent_per_flow(
        _plan: &linerate_stream::Plan,
        _report: &linerate_engine::Report,
    ) -> Vec<(u16, Option<String>, u64)> {
        Vec::new()
    }
}
