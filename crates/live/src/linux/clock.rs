//! Times the transmit program alone, for benchmarks.

use std::io;

use libbpf_rs::libbpf_sys;
use linerate_stream::Plan;

use super::anchor::Anchor;
use super::program::{Loaded, Placement, program, xdp_ctx};
use crate::LiveError;
use crate::layout::{Layout, META_LEN};

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
        let loaded = Loaded::new(&layout, 1, &Placement::by_meta(1))?;
        let prog = program(&loaded.object, layout.program())?;
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
