//! The live transmit program: loaded with a layout's maps and read-only fields, and one call
//! of BPF_PROG_RUN.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::Ordering;

use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags, Object};

use super::worker_map::WorkerMap;
use crate::LiveError;
use crate::layout::{Layout, MAX_WINDOW};

/// The program loaded with a layout's maps and its worker slots set for a run toward `ifindex`.
pub(super) struct Loaded {
    // Field order is drop order: the mapping goes before the object that owns the map.
    pub(super) map: WorkerMap,
    pub(super) object: Object,
}

impl Loaded {
    pub(super) fn new(layout: &Layout, ifindex: u32) -> Result<Loaded, LiveError> {
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
/// `bpf/live_tx.bpf.c`'s maps as the Rust side writes them, checked before the object loads: a
/// worker entry, a frame (length, padding, the window) and the read-only fields.
const ABI: [linerate_xdp::MapAbi; 3] = [
    linerate_xdp::MapAbi::of::<u32, super::worker_map::WorkerSlot>("live_workers"),
    linerate_xdp::MapAbi::sized("live_frames", 4, 8 + crate::layout::MAX_WINDOW),
    linerate_xdp::MapAbi::sized(
        ".rodata",
        4,
        8 + crate::layout::MAX_FIELDS * crate::layout::FIELD_LEN,
    ),
];

pub(super) fn load(frames: u32, fields: Option<&[u8]>) -> Result<Object, LiveError> {
    linerate_xdp::load_object_checked("live_tx", linerate_xdp::live_tx_object(), &ABI, |open| {
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
