//! The port (probe: live frames in the kernel, ndo_xdp_xmit in the driver) and the runner: one
//! pinned thread per worker calling BPF_PROG_RUN in live-frame mode until its count is sent.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::Instant;

use hdrhistogram::Histogram;
use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags, Object};
use linerate_engine::pace::{
    CatchUp, MAX_LAG_PS, due_by, histogram, horizon, ps_since, wait_until,
};
use linerate_engine::{Observer, PacingStats, Report, RunConfig, WorkerReport};
use linerate_stream::{Pacing, Plan};

use crate::layout::{Layout, MAX_FIELDS, MAX_WINDOW, MAX_WORKERS, META_LEN};
use crate::{BACKEND, LiveError, MODE};

/// `NETDEV_XDP_ACT_NDO_XMIT` (include/uapi/linux/netdev.h): the driver takes redirected frames.
const NETDEV_XDP_ACT_NDO_XMIT: u64 = 1 << 2;
/// The kernel's cap on `batch_size` in live-frame mode (`TEST_XDP_MAX_BATCH`).
const MAX_BATCH: u32 = 256;
/// Frames asked of one BPF_PROG_RUN call at most: some 30 ms at 9 Mpps, long enough to amortise
/// the page pool set up per call (~15 µs). Stops do not wait for it: they raise the worker's
/// `stop` and the program drops the rest of the call's frames.
const CHUNK: u64 = 1 << 18;

/// An interface that can take live XDP frames.
#[derive(Debug, Clone)]
pub struct LivePort {
    iface: String,
    ifindex: u32,
    kernel: String,
    info: linerate_port::PortInfo,
}

impl LivePort {
    /// Checks that the kernel runs live frames (one probe frame, dropped by the probe program)
    /// and, on kernels that report XDP features (6.3+), that the driver of `iface` implements
    /// ndo_xdp_xmit. Nothing is sent.
    pub fn open(iface: &str) -> Result<LivePort, LiveError> {
        let ifindex = ifindex(iface)?;
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        let version = parse_version(&kernel);
        if version.is_some_and(|v| v < (5, 18)) {
            return Err(LiveError::NoLiveFrames { kernel });
        }
        let object = load(1, None)?;
        let probe = program(&object, "live_probe")?;
        let data = [0u8; 64];
        let ctx = xdp_ctx(0, data.len(), ifindex);
        match test_run(probe, &data, &ctx, 1, 0) {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
                return Err(LiveError::NoLiveFrames { kernel });
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
                return Err(LiveError::NotRoot {
                    what: "running a BPF program".into(),
                });
            }
            Err(source) => {
                return Err(LiveError::Run {
                    iface: iface.into(),
                    source,
                });
            }
        }
        if version.is_none_or(|v| v >= (6, 3)) {
            let features = xdp_features(ifindex).map_err(|source| LiveError::Run {
                iface: iface.into(),
                source,
            })?;
            if features & NETDEV_XDP_ACT_NDO_XMIT == 0 {
                return Err(LiveError::NoXdpTransmit {
                    iface: iface.into(),
                    hint: if is_veth(iface) {
                        " (a veth takes XDP frames only while its peer has an XDP program, as the lab's sink)"
                    } else {
                        ""
                    },
                });
            }
        }
        Ok(LivePort {
            iface: iface.into(),
            ifindex,
            kernel,
            info: port_info(iface),
        })
    }

    pub fn iface(&self) -> &str {
        &self.iface
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Name, MAC and MTU as sysfs tells them; the frames go out on the CPU that runs the
    /// program, so there are no queues to pick (`queues` is the CPU count).
    pub fn info(&self) -> &linerate_port::PortInfo {
        &self.info
    }

    /// The kernel release the probe ran on.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }
}

/// A veth (or another virtual device with a peer): no device in sysfs, and its `iflink` names
/// another interface. Only used to pick the hint of a refusal.
fn is_veth(iface: &str) -> bool {
    let read = |what: &str| std::fs::read_to_string(format!("/sys/class/net/{iface}/{what}"));
    let no_device = !std::path::Path::new(&format!("/sys/class/net/{iface}/device")).exists();
    matches!((read("ifindex"), read("iflink")), (Ok(a), Ok(b)) if a.trim() != b.trim()) && no_device
}

fn port_info(iface: &str) -> linerate_port::PortInfo {
    let read = |what: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{iface}/{what}"))
            .map(|s| s.trim().to_owned())
            .ok()
    };
    let mac = read("address").and_then(|text| {
        let bytes: Vec<u8> = text
            .split(':')
            .filter_map(|b| u8::from_str_radix(b, 16).ok())
            .collect();
        <[u8; 6]>::try_from(bytes).ok()
    });
    let virtual_device = std::fs::read_link(format!("/sys/class/net/{iface}"))
        .map(|p| p.to_string_lossy().contains("/virtual/"))
        .unwrap_or(true);
    linerate_port::PortInfo {
        name: iface.to_owned(),
        mac,
        mtu: read("mtu").and_then(|m| m.parse().ok()).unwrap_or(1500),
        // Virtual devices (veth) report a nominal speed that bounds nothing.
        link_speed: read("speed")
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|&s| s > 0 && !virtual_device)
            .map(|s| linerate_port::LinkSpeed::from_mbps(s as u64)),
        queues: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        driver: None,
        backend: crate::BACKEND,
    }
}

/// `struct live_worker` of `bpf/live_tx.bpf.c`, as the mmap of the `live_workers` map shows it:
/// a config line user space writes before the run, a state line and a line of field indices the
/// program writes, and a pad line (256 bytes: no 128-byte block shared between workers).
#[repr(C)]
struct WorkerSlot {
    limit: AtomicU64,
    ifindex: AtomicU32,
    _pad_a: AtomicU32,
    frame_base: AtomicU32,
    period: AtomicU32,
    win_off: AtomicU32,
    win_len: AtomicU32,
    tmpl_len: AtomicU32,
    _pad_b: AtomicU32,
    stop: AtomicU32,
    _pad0: AtomicU32,
    _pad1: [AtomicU64; 2],
    rng: AtomicU64,
    index: AtomicU32,
    _pad2: AtomicU32,
    sent: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
    _pad3: [AtomicU64; 3],
    indices: [AtomicU64; MAX_FIELDS],
    _pad4: [AtomicU64; 8],
}

const _: () = assert!(size_of::<WorkerSlot>() == 256);

/// The `live_workers` map mapped into this process; unmapped on drop.
struct WorkerMap {
    ptr: NonNull<WorkerSlot>,
    len: usize,
}

impl WorkerMap {
    fn map(object: &Object) -> Result<WorkerMap, LiveError> {
        let map = object
            .maps()
            .find(|m| m.name() == "live_workers")
            .ok_or_else(|| LiveError::Load {
                message: "the object has no map live_workers".into(),
            })?;
        let len = (MAX_WORKERS * size_of::<WorkerSlot>()).next_multiple_of(4096);
        // SAFETY: a shared mapping of a live BPF_F_MMAPABLE array map fd, `len` bytes (the map's
        // size rounded up to pages, as the kernel allows); the result is checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                map.as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(LiveError::Load {
                message: format!("mapping live_workers: {}", io::Error::last_os_error()),
            });
        }
        Ok(WorkerMap {
            ptr: NonNull::new(ptr.cast()).expect("mmap succeeded"),
            len,
        })
    }

    fn slots(&self) -> &[WorkerSlot] {
        // SAFETY: the mapping holds MAX_WORKERS entries of 128 bytes laid out as WorkerSlot
        // (all atomics, any bit pattern valid) and lives as long as `self`; the kernel writes
        // it concurrently, which atomics permit.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), MAX_WORKERS) }
    }
}

impl Drop for WorkerMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the mapping made in `map`, unmapped once here.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Keeps the live program registered in the kernel's XDP dispatcher for the whole run.
///
/// BPF_PROG_RUN with a repeat above 1 adds the program to the dispatcher and removes it after
/// the call; each change rebuilds the dispatcher and waits for an RCU grace period, about 24 ms
/// for a call here — a third of the run at max rate, and no pacing finer than that. While the
/// program is attached somewhere those changes only count references. So it is attached, in
/// generic mode through a bpf_link, to the loopback of a network namespace of its own, where no
/// packet ever arrives; the link and the namespace go away on drop, or when the process dies.
struct Anchor {
    _link: OwnedFd,
    _netns: OwnedFd,
}

impl Anchor {
    /// None when it cannot be set up (the run is slower, not wrong).
    fn attach(prog: i32) -> Option<Anchor> {
        std::thread::scope(|s| {
            s.spawn(|| {
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).ok()?;
                let netns = OwnedFd::from(std::fs::File::open("/proc/thread-self/ns/net").ok()?);
                let lo = nix::net::if_::if_nametoindex("lo").ok()?;
                let opts = libbpf_sys::bpf_link_create_opts {
                    sz: size_of::<libbpf_sys::bpf_link_create_opts>() as _,
                    flags: libbpf_sys::XDP_FLAGS_SKB_MODE,
                    ..Default::default()
                };
                // SAFETY: prog is a live program fd, lo an ifindex of this thread's namespace,
                // opts is initialised with its `sz` set and outlives the call.
                let fd = unsafe {
                    libbpf_sys::bpf_link_create(prog, lo as i32, libbpf_sys::BPF_XDP, &opts)
                };
                if fd < 0 {
                    return None;
                }
                // SAFETY: bpf_link_create returned a fresh fd that nothing else owns.
                let link = unsafe { OwnedFd::from_raw_fd(fd) };
                Some(Anchor {
                    _link: link,
                    _netns: netns,
                })
            })
            .join()
            .ok()
            .flatten()
        })
    }
}

/// A worker's pacing: the plan's schedule, the instant all workers count from, and where this
/// worker's frames sit in it (global frame `first_seq + k · stride` is its k-th).
#[derive(Clone, Copy)]
struct Pace<'a> {
    pacing: &'a Pacing,
    epoch: Instant,
    first_seq: u64,
    stride: u64,
}

/// How closely a paced worker kept its schedule, one record per call (ns).
struct PaceLog {
    late: Histogram<u64>,
    gap: Histogram<u64>,
}

impl PaceLog {
    fn new() -> PaceLog {
        PaceLog {
            late: histogram(),
            gap: histogram(),
        }
    }
}

/// Runs `plan` on `port`: one thread per worker, pinned to its core, each calling BPF_PROG_RUN
/// in live-frame mode with its own template until its share of the count is handed to the
/// driver, or until the duration or the stop flag ends the run. Counts are the program's: frames
/// it handed to the redirect, never the repeat asked for.
pub fn run(
    port: &LivePort,
    plan: &Plan,
    config: &RunConfig,
    observer: &dyn Observer,
) -> Result<Report, LiveError> {
    let workers = config.workers.len();
    if workers == 0 {
        return Err(LiveError::NoWorkers);
    }
    if let Some((core, available)) = linerate_engine::unavailable_core(&config.workers) {
        return Err(LiveError::Pin { core, available });
    }
    let layout = Layout::compile(plan, workers, config.count)?;
    let loaded = Loaded::new(&layout, port.ifindex)?;
    let slots = loaded.map.slots();
    let object = &loaded.object;
    let prog = program(object, "live_tx")?;
    let _anchor = Anchor::attach(prog);
    let batch = config.batch.clamp(1, MAX_BATCH);
    let epoch = OnceLock::new();
    let halt = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    let barrier = Barrier::new(workers + 1);

    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(workers);
        for (i, wl) in layout.workers.iter().enumerate() {
            let spec = config.workers[i];
            let (slot, halt, finished, barrier, epoch) =
                (&slots[i], &halt, &finished, &barrier, &epoch);
            handles.push(scope.spawn(move || {
                if let Some(core) = spec.core {
                    core_affinity::set_for_current(core_affinity::CoreId { id: core });
                }
                let mut data = vec![0u8; META_LEN + wl.template.len()];
                data[..4].copy_from_slice(&(i as u32).to_ne_bytes());
                data[META_LEN..].copy_from_slice(&wl.template);
                let ctx = xdp_ctx(META_LEN, data.len(), port.ifindex);
                let limit = wl.limit.unwrap_or(u64::MAX);
                barrier.wait();
                let pace = plan.pacing.as_ref().map(|pacing| Pace {
                    pacing,
                    epoch: *epoch.get_or_init(Instant::now),
                    first_seq: wl.first_seq,
                    stride: wl.stride,
                });
                let mut log = pace.map(|_| PaceLog::new());
                let start = Instant::now();
                let sender = Sender {
                    port,
                    prog,
                    data: &data,
                    ctx: &ctx,
                    batch,
                    slot,
                    halt,
                };
                let result = match pace {
                    Some(p) => sender.paced(limit, p, log.as_mut().expect("paced")),
                    None => sender.unpaced(limit),
                };
                let elapsed = start.elapsed();
                finished.fetch_add(1, Ordering::Release);
                let runs = result?;
                let sent = slot.sent.load(Ordering::Acquire);
                Ok(WorkerReport {
                    worker: i,
                    core: spec.core,
                    queue: spec.queue,
                    mode: MODE.into(),
                    submitted: sent,
                    completed: sent,
                    bytes: slot.bytes.load(Ordering::Acquire),
                    elapsed_s: elapsed.as_secs_f64(),
                    stats: [
                        (
                            "redirect_errors".to_owned(),
                            slot.errors.load(Ordering::Acquire),
                        ),
                        ("runs".to_owned(), runs),
                    ]
                    .into_iter()
                    .collect(),
                    pacing: log.map(|l| PacingStats::from_histograms(l.late, l.gap)),
                })
            }));
        }
        barrier.wait();
        let slots = &slots[..workers];
        // A stop also tells the program itself, so it drops what is left of each current call.
        linerate_engine::supervise(
            config,
            || finished.load(Ordering::Acquire) < slots.len(),
            || {
                halt.store(true, Ordering::Relaxed);
                for s in slots {
                    s.stop.store(1, Ordering::Relaxed);
                }
            },
            || {
                slots.iter().fold((0, 0), |a, s| {
                    (
                        a.0 + s.sent.load(Ordering::Relaxed),
                        a.1 + s.bytes.load(Ordering::Relaxed),
                    )
                })
            },
            observer,
        );
        let mut reports = Vec::with_capacity(workers);
        for (i, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(r) => reports.push(r?),
                Err(_) => return Err(LiveError::WorkerPanicked(i)),
            }
        }
        let mut report = Report::new(BACKEND, &port.iface, reports);
        report.requested_pps = plan.pacing.as_ref().map(|p| p.pps());
        Ok(report)
    })
}

/// The program loaded with a layout's maps and its worker slots set for a run toward `ifindex`.
struct Loaded {
    // Field order is drop order: the mapping goes before the object that owns the map.
    map: WorkerMap,
    object: Object,
}

impl Loaded {
    fn new(layout: &Layout, ifindex: u32) -> Result<Loaded, LiveError> {
        let entries: usize = layout.workers.iter().map(|w| w.frames.len()).sum();
        let object = load(entries.max(1) as u32, Some(&layout.fields_bytes()))?;
        fill_maps(&object, layout)?;
        let map = WorkerMap::map(&object)?;
        let mut base = 0u32;
        for (slot, w) in map.slots().iter().zip(&layout.workers) {
            slot.limit
                .store(w.limit.unwrap_or(u64::MAX), Ordering::Relaxed);
            slot.ifindex.store(ifindex, Ordering::Relaxed);
            slot.frame_base.store(base, Ordering::Relaxed);
            slot.period.store(w.period.max(1), Ordering::Relaxed);
            slot.win_off.store(w.win_off, Ordering::Relaxed);
            slot.win_len.store(w.win_len, Ordering::Relaxed);
            slot.tmpl_len
                .store(w.template.len() as u32, Ordering::Relaxed);
            slot.stop.store(0, Ordering::Relaxed);
            slot.rng.store(w.rng, Ordering::Relaxed);
            for (at, k) in slot.indices.iter().zip(&w.indices) {
                at.store(*k, Ordering::Relaxed);
            }
            slot.index.store(0, Ordering::Relaxed);
            slot.sent.store(0, Ordering::Relaxed);
            slot.bytes.store(0, Ordering::Relaxed);
            slot.errors.store(0, Ordering::Release);
            base += w.frames.len() as u32;
        }
        Ok(Loaded { map, object })
    }
}

/// Times the transmit program alone, for benchmarks: loaded with the first worker's share of a
/// plan, run without live frames — nothing is built or sent, the kernel only times the program
/// and drops its verdict. Everything the program does per frame is in the time (window copy,
/// fields, checksums, the redirect helper); the page pool, the redirect and the driver are not.
/// Needs root.
#[allow(missing_debug_implementations)] // holds a loaded object; nothing worth printing
pub struct ProgramClock {
    data: Vec<u8>,
    ctx: libbpf_sys::xdp_md,
    prog: i32,
    _anchor: Option<Anchor>,
    _loaded: Loaded,
}

impl ProgramClock {
    pub fn new(plan: &Plan) -> Result<ProgramClock, LiveError> {
        let layout = Layout::compile(plan, 1, None)?;
        // Any ifindex will do: bpf_redirect only records it, and no frame leaves.
        let loaded = Loaded::new(&layout, 1)?;
        let prog = program(&loaded.object, "live_tx")?;
        let w = &layout.workers[0];
        let mut data = vec![0u8; META_LEN + w.template.len()];
        data[META_LEN..].copy_from_slice(&w.template);
        Ok(ProgramClock {
            ctx: xdp_ctx(META_LEN, data.len(), 0),
            data,
            prog,
            _anchor: Anchor::attach(prog),
            _loaded: loaded,
        })
    }

    /// Runs the program `repeat` times; the kernel's mean time per run, in ns.
    pub fn time(&self, repeat: u32) -> Result<f64, LiveError> {
        let mut opts = libbpf_sys::bpf_test_run_opts {
            sz: size_of::<libbpf_sys::bpf_test_run_opts>() as _,
            data_in: self.data.as_ptr().cast(),
            data_size_in: self.data.len() as u32,
            ctx_in: (&self.ctx as *const libbpf_sys::xdp_md).cast(),
            ctx_size_in: size_of::<libbpf_sys::xdp_md>() as u32,
            repeat: repeat.clamp(1, i32::MAX as u32) as i32,
            ..Default::default()
        };
        // SAFETY: prog is a live program fd; opts has its `sz` set and points to `data` and
        // `ctx`, which outlive the call and which the kernel only reads (no data_out or ctx_out).
        let ret = unsafe { libbpf_sys::bpf_prog_test_run_opts(self.prog, &mut opts) };
        let fail = |why: String| LiveError::Load {
            message: format!("timing the program: {why}"),
        };
        if ret < 0 {
            return Err(fail(io::Error::from_raw_os_error(-ret).to_string()));
        }
        if opts.retval != libbpf_sys::XDP_REDIRECT {
            return Err(fail(format!(
                "verdict {} instead of a redirect",
                opts.retval
            )));
        }
        Ok(f64::from(opts.duration))
    }
}

/// What one worker needs to call the program.
struct Sender<'a> {
    port: &'a LivePort,
    prog: i32,
    data: &'a [u8],
    ctx: &'a libbpf_sys::xdp_md,
    batch: u32,
    slot: &'a WorkerSlot,
    halt: &'a AtomicBool,
}

impl Sender<'_> {
    /// Max rate: calls sized for what is left, until the program has handed over `limit` frames
    /// or the run is halted. Returns the number of calls.
    fn unpaced(&self, limit: u64) -> Result<u64, LiveError> {
        let mut runs = 0u64;
        loop {
            let sent = self.slot.sent.load(Ordering::Acquire);
            if sent >= limit || self.halt.load(Ordering::Relaxed) {
                return Ok(runs);
            }
            self.call((limit - sent).min(CHUNK))?;
            runs += 1;
        }
    }

    /// Paced, by the engine's rules (`linerate_engine::pace`): each call sends the frames due
    /// now and those due within a slice of the first of them, no more than the catch-up limit
    /// allows, then waits for the next frame's time. A call costs ~15 µs, so at high rates the
    /// slice is what lets one call carry many frames; frames of a call leave back to back, at
    /// most a slice early. Lateness is the first frame's, one record per call. Returns the
    /// number of calls.
    fn paced(&self, limit: u64, p: Pace<'_>, log: &mut PaceLog) -> Result<u64, LiveError> {
        let mut catch_up = CatchUp::for_worker(p.pacing, p.stride, u64::from(self.batch));
        let (mut shift, mut last_call, mut runs) = (0u64, 0u64, 0u64);
        loop {
            let sent = self.slot.sent.load(Ordering::Acquire);
            if sent >= limit || self.halt.load(Ordering::Relaxed) {
                return Ok(runs);
            }
            let seq = p.first_seq + sent * p.stride;
            let first = p.pacing.due_ps(seq) + shift;
            let now = ps_since(p.epoch);
            if now < first {
                wait_until(p.epoch, first, self.halt);
                continue;
            }
            let late = now - first;
            if late > MAX_LAG_PS {
                shift += late - MAX_LAG_PS;
            }
            let until = horizon(p.pacing, first, now);
            let cap = (limit - sent).min(CHUNK);
            let due_now = due_by(p.pacing, seq, p.stride, shift, until, cap);
            let want = match catch_up.grant(now, due_now) {
                Ok(n) => n,
                Err(refill) => {
                    wait_until(p.epoch, refill, self.halt);
                    continue;
                }
            };
            catch_up.spend(want);
            log.late.saturating_record(late / 1000);
            if runs > 0 {
                log.gap.saturating_record((now - last_call) / 1000);
            }
            last_call = now;
            self.call(want)?;
            runs += 1;
        }
    }

    /// One call of `repeat` frames. A call that hands nothing over while redirects fail means
    /// the interface refuses the frames.
    fn call(&self, repeat: u64) -> Result<(), LiveError> {
        let sent = self.slot.sent.load(Ordering::Acquire);
        let errors = self.slot.errors.load(Ordering::Acquire);
        match test_run(self.prog, self.data, self.ctx, repeat as i32, self.batch) {
            Ok(()) => {}
            // A signal (Ctrl-C) cut the call short: the counters say how far it got.
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(source) => {
                return Err(LiveError::Run {
                    iface: self.port.iface.clone(),
                    source,
                });
            }
        }
        let errors_now = self.slot.errors.load(Ordering::Acquire);
        if self.slot.sent.load(Ordering::Acquire) == sent
            && errors_now > errors
            && !self.halt.load(Ordering::Relaxed)
        {
            return Err(LiveError::Refused {
                iface: self.port.iface.clone(),
                errors: errors_now,
            });
        }
        Ok(())
    }
}

/// Writes the frames' windows into their map.
fn fill_maps(object: &Object, layout: &Layout) -> Result<(), LiveError> {
    let find = |name: &str| {
        object
            .maps()
            .find(|m| m.name() == name)
            .ok_or_else(|| LiveError::Load {
                message: format!("the object has no map {name}"),
            })
    };
    let update = |e: libbpf_rs::Error| LiveError::Load {
        message: format!("filling the program's maps: {e:#}"),
    };
    let frames = find("live_frames")?;
    let mut key = 0u32;
    let mut value = vec![0u8; 8 + MAX_WINDOW];
    for w in &layout.workers {
        for (len, bytes) in &w.frames {
            value.fill(0);
            value[..4].copy_from_slice(&len.to_ne_bytes());
            value[8..8 + bytes.len()].copy_from_slice(bytes);
            frames
                .update(&key.to_ne_bytes(), &value, MapFlags::ANY)
                .map_err(update)?;
            key += 1;
        }
    }
    Ok(())
}

/// Opens and loads the embedded object with room for `frames` window entries and with `fields`
/// (the program's read-only data, `Layout::fields_bytes`; none: no field varies).
fn load(frames: u32, fields: Option<&[u8]>) -> Result<Object, LiveError> {
    linerate_xdp::load_object("live_tx", linerate_xdp::live_tx_object(), |open| {
        let mut fields_set = fields.is_none();
        for mut map in open.maps_mut() {
            if map.name() == "live_frames" {
                map.set_max_entries(frames)?;
            } else if let Some(fields) = fields
                && map.name().to_string_lossy().ends_with(".rodata")
            {
                map.set_initial_value(fields)?;
                fields_set = true;
            }
        }
        // Without them the program would send every frame with its fields unchanged.
        if !fields_set {
            return Err(libbpf_rs::Error::from(io::Error::other(
                "the object has no read-only data for the fields",
            )));
        }
        Ok(())
    })
    .map_err(|e| match e {
        linerate_xdp::XdpError::NotRoot { .. } => LiveError::NotRoot {
            what: "loading the live transmit program".into(),
        },
        linerate_xdp::XdpError::Load { message, .. } => LiveError::Load { message },
        other => LiveError::Load {
            message: other.to_string(),
        },
    })
}

/// The fd of the object's program `name`, valid while `object` lives.
fn program(object: &Object, name: &str) -> Result<i32, LiveError> {
    object
        .progs()
        .find(|p| p.name() == name)
        .map(|p| p.as_fd().as_raw_fd())
        .ok_or_else(|| LiveError::Load {
            message: format!("the object has no program {name}"),
        })
}

/// The context of a live run: `meta` bytes of metadata before the frame, received on `ifindex`.
fn xdp_ctx(meta: usize, data_len: usize, ifindex: u32) -> libbpf_sys::xdp_md {
    libbpf_sys::xdp_md {
        data: meta as u32,
        data_end: data_len as u32,
        data_meta: 0,
        ingress_ifindex: ifindex,
        rx_queue_index: 0,
        egress_ifindex: 0,
    }
}

/// One BPF_PROG_RUN in live-frame mode: the program runs `repeat` times (fewer if a signal
/// arrives), on frames built from `data`, `batch` at a time.
fn test_run(
    prog: i32,
    data: &[u8],
    ctx: &libbpf_sys::xdp_md,
    repeat: i32,
    batch: u32,
) -> io::Result<()> {
    let mut opts = libbpf_sys::bpf_test_run_opts {
        sz: size_of::<libbpf_sys::bpf_test_run_opts>() as _,
        data_in: data.as_ptr().cast(),
        data_size_in: data.len() as u32,
        ctx_in: (ctx as *const libbpf_sys::xdp_md).cast(),
        ctx_size_in: size_of::<libbpf_sys::xdp_md>() as u32,
        repeat,
        flags: libbpf_sys::BPF_F_TEST_XDP_LIVE_FRAMES,
        batch_size: batch,
        ..Default::default()
    };
    // SAFETY: prog is a live program fd; opts has its `sz` set and points to `data` and `ctx`,
    // which outlive the call and which the kernel only reads (no data_out or ctx_out given).
    let ret = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog, &mut opts) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    Ok(())
}

/// The XDP features the driver of `ifindex` reports (`NETDEV_XDP_ACT_*`).
fn xdp_features(ifindex: u32) -> io::Result<u64> {
    // SAFETY: bpf_xdp_query_opts is a plain C struct of integers; all zeroes is valid.
    let mut opts: libbpf_sys::bpf_xdp_query_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<libbpf_sys::bpf_xdp_query_opts>() as _;
    // SAFETY: opts is initialised with its `sz` set and outlives the call.
    let ret = unsafe { libbpf_sys::bpf_xdp_query(ifindex as i32, 0, &mut opts) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    Ok(opts.feature_flags)
}

fn ifindex(iface: &str) -> Result<u32, LiveError> {
    let unknown = || LiveError::UnknownInterface {
        iface: iface.to_owned(),
    };
    if iface.is_empty() || iface.len() >= libc::IFNAMSIZ || iface.contains(['/', '\0']) {
        return Err(unknown());
    }
    nix::net::if_::if_nametoindex(iface).map_err(|_| unknown())
}

/// `major.minor` of a kernel release such as `6.18.44-fc`.
fn parse_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_parse() {
        assert_eq!(parse_version("6.18.44-fc-v657"), Some((6, 18)));
        assert_eq!(parse_version("5.4.0-150-generic"), Some((5, 4)));
        assert_eq!(parse_version("5.18"), Some((5, 18)));
        assert_eq!(parse_version("garbage"), None);
        assert!((5, 17) < (5, 18) && (6, 0) > (5, 18));
    }
}
