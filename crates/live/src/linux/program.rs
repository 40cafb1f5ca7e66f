//! The live transmit program: loaded with a layout's maps and read-only fields, and one call
//! of BPF_PROG_RUN.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::Ordering;

use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags, Object};

use super::worker_map::{FrameMap, WorkerMap};
use crate::LiveError;
use crate::layout::{FRAME_HEADER, Layout, MAX_WINDOW, MAX_WORKERS};

/// The program loaded with a layout's maps and its worker slots set for a run toward `ifindex`.
pub(super) struct Loaded {
    // Field order is drop order: the mappings go before the object that owns the maps.
    pub(super) map: WorkerMap,
    /// A streamed capture's rings (`Loaded::streamed`): `live_frames` mapped.
    pub(super) frames: Option<FrameMap>,
    pub(super) object: Object,
}

/// Which entry of `live_workers` each worker uses, and how the program finds it.
pub(super) struct Placement {
    /// Worker i's entry.
    pub(super) slots: Vec<usize>,
    /// Each entry is its worker's core, and the program finds it by the CPU it runs on
    /// (`ro.by_cpu`); otherwise by the id in the frame's metadata.
    pub(super) by_cpu: bool,
}

impl Placement {
    /// Worker i in entry i, found by the frame's metadata.
    pub(super) fn by_meta(workers: usize) -> Placement {
        Placement {
            slots: (0..workers).collect(),
            by_cpu: false,
        }
    }

    /// By CPU when every worker is pinned to a core of its own, below `MAX_WORKERS`, that this
    /// process may run on (the runner pins each worker's thread there); by metadata otherwise
    /// (two workers on one core, an unpinned worker).
    pub(super) fn for_cores(cores: &[Option<usize>]) -> Placement {
        let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok();
        let mut seen = std::collections::HashSet::new();
        let own = cores.iter().all(|c| {
            c.is_some_and(|c| {
                c < MAX_WORKERS
                    && seen.insert(c)
                    && allowed
                        .as_ref()
                        .is_some_and(|a| a.is_set(c).unwrap_or(false))
            })
        });
        if own {
            Placement {
                slots: cores.iter().flatten().copied().collect(),
                by_cpu: true,
            }
        } else {
            Placement::by_meta(cores.len())
        }
    }
}

impl Loaded {
    pub(super) fn new(
        layout: &Layout,
        ifindex: u32,
        placement: &Placement,
    ) -> Result<Loaded, LiveError> {
        let entries: usize = layout.workers.iter().map(|w| w.frames.len()).sum();
        let ro = layout.ro_bytes(placement.by_cpu);
        let object = load(entries.max(1) as u32, Some(&ro), false)?;
        fill_maps(&object, layout)?;
        Self::set(object, layout, ifindex, None, placement)
    }

    /// For a streamed capture: `ring` entries of `live_frames` a worker (each worker's period),
    /// the map made mmapable and mapped so that the runner writes the frames straight into it
    /// (the loaded path keeps its plain map).
    pub(super) fn streamed(
        layout: &Layout,
        ifindex: u32,
        ring: u32,
        placement: &Placement,
    ) -> Result<Loaded, LiveError> {
        let entries = layout.workers.len() * ring as usize;
        let ro = layout.ro_bytes(placement.by_cpu);
        let object = load(entries as u32, Some(&ro), true)?;
        let frames = FrameMap::map(&object, entries)?;
        let mut loaded = Self::set(object, layout, ifindex, Some(ring), placement)?;
        loaded.frames = Some(frames);
        Ok(loaded)
    }

    /// Maps the worker entries and writes each worker's configuration; `ring`: the entries of a
    /// worker's ring, in place of its frames.
    fn set(
        object: Object,
        layout: &Layout,
        ifindex: u32,
        ring: Option<u32>,
        placement: &Placement,
    ) -> Result<Loaded, LiveError> {
        let port = object
            .maps()
            .find(|m| m.name() == "live_port")
            .ok_or_else(|| LiveError::Load {
                message: "the object has no map live_port".into(),
            })?;
        port.update(&0u32.to_ne_bytes(), &ifindex.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| LiveError::Load {
                message: format!("setting the port (ifindex {ifindex}) in live_port: {e:#}"),
            })?;
        let map = WorkerMap::map(&object)?;
        let mut base = 0u32;
        for (&at, w) in placement.slots.iter().zip(&layout.workers) {
            let slot = &map.slots()[at];
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
            if layout.words.is_some() {
                for (at, word) in slot.words.iter().zip(w.words()) {
                    at.store(word, Ordering::Relaxed);
                }
            }
            slot.index.store(0, Ordering::Relaxed);
            slot.lap.store(0, Ordering::Relaxed);
            slot.seq.store(w.first_seq, Ordering::Relaxed);
            slot.stamp_left.store(0, Ordering::Relaxed);
            slot.sent.store(0, Ordering::Relaxed);
            slot.bytes.store(0, Ordering::Relaxed);
            slot.errors.store(0, Ordering::Release);
            base += ring.unwrap_or(w.frames.len() as u32);
        }
        Ok(Loaded {
            map,
            frames: None,
            object,
        })
    }
}

/// Writes the frames' windows (and the mapped signature's sequence steps) into their map.
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
    let mut value = vec![0u8; FRAME_HEADER + MAX_WINDOW];
    for w in &layout.workers {
        for (i, (len, bytes)) in w.frames.iter().enumerate() {
            value.fill(0);
            value[..4].copy_from_slice(&len.to_ne_bytes());
            if let Some(s) = w.stamps.get(i) {
                value[4..8].copy_from_slice(&s.seq_base.to_ne_bytes());
                value[8..12].copy_from_slice(&s.seq_step.to_ne_bytes());
            }
            value[FRAME_HEADER..FRAME_HEADER + bytes.len()].copy_from_slice(bytes);
            frames
                .update(&key.to_ne_bytes(), &value, MapFlags::ANY)
                .map_err(update)?;
            key += 1;
        }
    }
    Ok(())
}

/// `bpf/live_tx.bpf.c`'s maps as the Rust side writes them, checked before the object loads: a
/// worker entry, a frame (length, sequence start and step, padding, the window) and the
/// read-only data (fields and signature).
const ABI: [linerate_xdp::MapAbi; 3] = [
    linerate_xdp::MapAbi::of::<u32, super::worker_map::WorkerSlot>("live_workers"),
    linerate_xdp::MapAbi::sized("live_frames", 4, FRAME_HEADER + MAX_WINDOW),
    linerate_xdp::MapAbi::sized(".rodata", 4, crate::layout::RO_LEN),
];

/// Opens and loads the embedded object with room for `frames` window entries and with `ro`
/// (the program's read-only data, `Layout::ro_bytes`; none: nothing varies, no signature);
/// `mmapable`: the frame entries can be mapped (`FrameMap`).
pub(super) fn load(frames: u32, ro: Option<&[u8]>, mmapable: bool) -> Result<Object, LiveError> {
    linerate_xdp::load_object_checked("live_tx", linerate_xdp::live_tx_object(), &ABI, |open| {
        let mut ro_set = ro.is_none();
        for mut map in open.maps_mut() {
            if map.name() == "live_frames" {
                map.set_max_entries(frames)?;
                if mmapable {
                    map.set_map_flags(map.map_flags() | libbpf_sys::BPF_F_MMAPABLE)?;
                }
            } else if let Some(ro) = ro
                && map.name().to_string_lossy().ends_with(".rodata")
            {
                map.set_initial_value(ro)?;
                ro_set = true;
            }
        }
        // Without it the program would send every frame with its fields unchanged, unstamped.
        if !ro_set {
            return Err(libbpf_rs::Error::from(io::Error::other(
                "the object has no read-only data for the fields and the signature",
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
pub(super) fn program(object: &Object, name: &str) -> Result<i32, LiveError> {
    object
        .progs()
        .find(|p| p.name() == name)
        .map(|p| p.as_fd().as_raw_fd())
        .ok_or_else(|| LiveError::Load {
            message: format!("the object has no program {name}"),
        })
}

/// The context of a live run: `meta` bytes of metadata before the frame, received on `ifindex`.
pub(super) fn xdp_ctx(meta: usize, data_len: usize, ifindex: u32) -> libbpf_sys::xdp_md {
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
pub(super) fn test_run(
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

#[cfg(test)]
mod tests {
    use linerate_stream::{Limits, Mode, Next, Plan, StreamSpec};
    use linerate_wire::signature;

    use super::*;
    use crate::layout::{self, META_LEN};

    fn now_ns(tai: bool) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let id = if tai {
            libc::CLOCK_TAI
        } else {
            libc::CLOCK_MONOTONIC
        };
        // SAFETY: clock_gettime only writes the timespec we own.
        assert_eq!(unsafe { libc::clock_gettime(id, &mut ts) }, 0);
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// Runs worker `worker`'s program `n` times without live frames (BPF_PROG_RUN hands the
    /// frame back, so the stamp is read from the kernel's own output); returns each frame with
    /// the clock read just before and after its run.
    fn run_kernel(layout: &Layout, worker: usize, n: usize, tai: bool) -> Vec<(u64, Vec<u8>, u64)> {
        let loaded =
            Loaded::new(layout, 1, &Placement::by_meta(layout.workers.len())).expect("load");
        let prog = program(&loaded.object, layout.program()).expect("program");
        let w = &layout.workers[worker];
        let mut data = vec![0u8; META_LEN + w.template.len()];
        data[..4].copy_from_slice(&(worker as u32).to_ne_bytes());
        data[META_LEN..].copy_from_slice(&w.template);
        let ctx = xdp_ctx(META_LEN, data.len(), 0);
        let mut out = vec![0u8; data.len()];
        (0..n)
            .map(|_| {
                let mut opts = libbpf_sys::bpf_test_run_opts {
                    sz: size_of::<libbpf_sys::bpf_test_run_opts>() as _,
                    data_in: data.as_ptr().cast(),
                    data_size_in: data.len() as u32,
                    data_out: out.as_mut_ptr().cast(),
                    data_size_out: out.len() as u32,
                    ctx_in: (&ctx as *const libbpf_sys::xdp_md).cast(),
                    ctx_size_in: size_of::<libbpf_sys::xdp_md>() as u32,
                    repeat: 1,
                    ..Default::default()
                };
                let before = now_ns(tai);
                // SAFETY: prog is a live program fd; opts has its `sz` set and points to `data`,
                // `ctx` (read) and `out` (written, `data_size_out` bytes), all outliving the call.
                let ret = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog, &mut opts) };
                let after = now_ns(tai);
                assert_eq!(ret, 0, "BPF_PROG_RUN");
                assert_eq!(opts.retval, libbpf_sys::XDP_REDIRECT);
                // The output starts at the metadata.
                let len = opts.data_size_out as usize;
                (before, out[META_LEN..len].to_vec(), after)
            })
            .collect()
    }

    #[test]
    fn workers_are_found_by_cpu_only_on_cores_of_their_own() {
        let all = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
        let mine: Vec<usize> = (0..MAX_WORKERS)
            .filter(|&c| all.is_set(c).unwrap())
            .collect();
        let p = Placement::for_cores(&[Some(mine[0])]);
        assert!(p.by_cpu && p.slots == [mine[0]]);
        if let [a, b, ..] = mine[..] {
            let p = Placement::for_cores(&[Some(b), Some(a)]);
            assert!(p.by_cpu && p.slots == [b, a]);
        }
        for cores in [
            vec![Some(mine[0]), Some(mine[0])],
            vec![Some(mine[0]), None],
            vec![Some(MAX_WORKERS)],
        ] {
            let p = Placement::for_cores(&cores);
            assert!(
                !p.by_cpu && p.slots == (0..cores.len()).collect::<Vec<_>>(),
                "{cores:?}"
            );
        }
    }

    /// The kernel program's frames against the engine's, for plans sent from the worker
    /// entry's words and from frame entries (a cycle too long for the words, a window of two
    /// words, frames trimmed to their lengths), each worker's first laps.
    #[test]
    fn the_program_sends_the_engines_frames() {
        if !linerate_lab::root_or_skip("the_program_sends_the_engines_frames") {
            return;
        }
        // (vary, sizes, words in the worker entry, sent by live_tx_words)
        let cases: [(&[&str], &str, bool, bool); 7] = [
            (&["ip-id:inc:0-9"], "fixed", true, true),
            (&["src-port:inc:1-16"], "fixed", true, true),
            (&[], "fixed", false, true),
            (&["src-port:inc:1-40"], "fixed", false, false),
            (
                &["src-ip:inc:10.0.0.1-10.0.0.4", "dst-port:inc:1-5"],
                "fixed",
                false,
                false,
            ),
            (&["src-port:inc:1-4"], "inc:64-70:2", false, false),
            (
                &["ip-id:inc:0-9", "ttl:random:1-255"],
                "fixed",
                false,
                false,
            ),
        ];
        for (vary, size_mode, held, lean) in cases {
            let spec = StreamSpec {
                vary: vary.iter().map(|v| v.parse().unwrap()).collect(),
                size_mode: size_mode.parse().unwrap(),
                ..StreamSpec::default()
            };
            let plan = Plan::compile(&[spec], &Limits::default()).expect("plan");
            let (cycle, _) = layout::cycle_of(&plan).expect("one cycle");
            for workers in [1, 2, 3] {
                let layout = Layout::compile_cycle(&cycle, workers, None).expect("layout");
                assert_eq!(layout.words.is_some(), held, "{vary:?} {workers}");
                assert_eq!(layout.lean, lean, "{vary:?} {workers}");
                for w in 0..workers {
                    const N: usize = 45;
                    let got = run_kernel(&layout, w, N, false);
                    let want = layout::expected(&cycle, w, workers, N as u64, || 0);
                    for (i, ((_, frame, _), e)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            frame, e,
                            "{vary:?} {size_mode}: worker {w}/{workers}, frame {i}"
                        );
                    }
                }
            }
        }
    }

    /// The kernel program's signature, frame by frame, against the Rust model and the wire
    /// crate's decoder: the engine's sequence numbers for every worker (one flow and several),
    /// a transmit time read between the clock readings around the run of each bulk's first
    /// frame and shared by the bulk (CLOCK_MONOTONIC, and CLOCK_TAI when asked), and every other
    /// byte the model's with the same time.
    #[test]
    fn the_program_stamps_the_engines_signature() {
        if !linerate_lab::root_or_skip("the_program_stamps_the_engines_signature") {
            return;
        }
        let signed = |port: u16, size_mode: &str, count: Option<u64>, next, mode| StreamSpec {
            src_port: port,
            size_mode: size_mode.parse().unwrap(),
            signature: true,
            vary: vec!["dst-port:random:1-65535".parse().unwrap()],
            count,
            next,
            mode,
            rate: if mode == Mode::Interleaved {
                linerate_stream::Rate::Pps(f64::from(5u32 << port) * 1e3)
            } else {
                linerate_stream::Rate::Max
            },
            ..StreamSpec::default()
        };
        let one = vec![signed(1, "inc:64-90:2", None, Next::Stop, Mode::Sequence)];
        let sequence = vec![
            signed(1, "fixed", Some(5), Next::Next, Mode::Sequence),
            signed(2, "inc:64-80:2", Some(3), Next::GotoFirst, Mode::Sequence),
        ];
        // One flow whose window is one word: live_tx's word path beside its stamping.
        let words = vec![StreamSpec {
            vary: vec!["ip-id:inc:0-9".parse().unwrap()],
            ..signed(1, "fixed", None, Next::Stop, Mode::Sequence)
        }];
        let lanes: Vec<StreamSpec> = (1..=3)
            .map(|p| StreamSpec {
                vary: Vec::new(),
                ..signed(p, "fixed", None, Next::Stop, Mode::Interleaved)
            })
            .collect();
        for (name, specs, tai) in [
            ("one flow", &one, false),
            ("one flow, TAI", &one, true),
            ("one flow, one-word windows", &words, false),
            ("a sequence", &sequence, false),
            ("merged lanes", &lanes, false),
        ] {
            let mut plan = Plan::compile(specs, &Limits::default()).expect(name);
            plan.set_stamp_clock(tai);
            let (cycle, _) = layout::cycle_of(&plan).expect(name);
            for workers in [1, 3] {
                let layout = Layout::compile_cycle(&cycle, workers, None).expect(name);
                assert!(!layout.lean, "{name}: signed");
                assert_eq!(layout.words.is_some(), specs == &words, "{name}");
                let w = workers - 1;
                const N: usize = 40;
                let got = run_kernel(&layout, w, N, tai);
                let stamps: Vec<u64> = got
                    .iter()
                    .map(|(_, f, _)| signature::parse(f).expect("signed").tx_ns)
                    .collect();
                // One clock read a bulk: the model reads the kernel's at each bulk's first frame.
                let mut at = stamps.iter().step_by(layout::STAMP_EVERY as usize);
                let model = layout::simulate(&layout, w, N as u64, 1, || *at.next().unwrap());
                let mut at = stamps.iter();
                let want = layout::expected(&cycle, w, workers, N as u64, || *at.next().unwrap());
                for (i, ((before, frame, after), (m, e))) in
                    got.iter().zip(model.iter().zip(&want)).enumerate()
                {
                    let why = format!("{name}: worker {w}/{workers}, frame {i}");
                    let s = signature::parse(frame).expect("signed");
                    let mask = signature::TS_MASK;
                    // The bulk's first frame read the clock in its own run; the others share it.
                    let first = i - i % layout::STAMP_EVERY as usize;
                    if first == i {
                        assert!(
                            (before & mask) <= s.tx_ns && s.tx_ns <= (after & mask),
                            "{why}: stamped {} outside {before}..{after}",
                            s.tx_ns
                        );
                    } else {
                        assert_eq!(s.tx_ns, stamps[first], "{why}: its bulk's time");
                    }
                    assert_eq!(frame, m, "{why}: the model");
                    assert_eq!(frame, e, "{why}: the engine's frame");
                }
            }
        }
    }
}
