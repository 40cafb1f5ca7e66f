//! A capture cut short under its map. When another process truncates a capture that is being
//! streamed, reading a page past the new end raises SIGBUS, which would kill the replay with
//! no word and no report. While a capture is mapped, its range is registered here; a SIGBUS
//! inside a registered range maps a zero page over the faulting one (so the copy that touched
//! it finishes, with zeros) and marks the capture cut, and the sender checks the mark after
//! each batch it copies — before it submits — and ends the run with the report so far. A SIGBUS
//! anywhere else gets the default action, as before.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Captures mapped at once that can be guarded; more go unguarded (as before).
const SLOTS: usize = 16;

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: AtomicUsize = AtomicUsize::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const FINE: AtomicBool = AtomicBool::new(false);
/// Each slot's range: its start (0: free) and length, read by the signal handler.
static STARTS: [AtomicUsize; SLOTS] = [EMPTY; SLOTS];
static LENS: [AtomicUsize; SLOTS] = [EMPTY; SLOTS];
static CUT: [AtomicBool; SLOTS] = [FINE; SLOTS];
/// The page size, read before the handler can run (sysconf is no async-signal-safe call).
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// A mapped range registered with the handler for as long as this lives.
#[derive(Debug)]
pub(crate) struct Guard {
    slot: usize,
}

impl Guard {
    /// Registers `len` bytes at `start`; None when every slot is taken (the map then goes
    /// unguarded) or the range is empty.
    pub(crate) fn register(start: *const u8, len: usize) -> Option<Guard> {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(install);
        if len == 0 {
            return None;
        }
        for slot in 0..SLOTS {
            if STARTS[slot].load(Ordering::Acquire) == 0
                && LENS[slot]
                    .compare_exchange(0, len, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                CUT[slot].store(false, Ordering::Release);
                STARTS[slot].store(start as usize, Ordering::Release);
                return Some(Guard { slot });
            }
        }
        None
    }

    /// The file was cut short under the map: some bytes read since are zeros, not the file's.
    #[inline]
    pub(crate) fn cut(&self) -> bool {
        CUT[self.slot].load(Ordering::Relaxed)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        STARTS[self.slot].store(0, Ordering::Release);
        LENS[self.slot].store(0, Ordering::Release);
    }
}

fn install() {
    // SAFETY: sysconf with a valid name has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page > 0 {
        PAGE.store(page as usize, Ordering::Relaxed);
    }
    // SAFETY: a zeroed sigaction is valid (empty mask, no flags); the handler below only makes
    // async-signal-safe calls (mmap, signal) and touches atomics.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}

extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel hands a SA_SIGINFO handler a valid siginfo; si_addr is the faulting
    // address for SIGBUS.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for slot in 0..SLOTS {
        let start = STARTS[slot].load(Ordering::Acquire);
        let len = LENS[slot].load(Ordering::Acquire);
        if start != 0 && addr >= start && addr < start + len {
            let at = addr & !(page - 1);
            // SAFETY: the page lies inside a private read-only file map this process made and
            // still holds (the guard is dropped before the map); a fixed anonymous map over it
            // replaces the vanished file page with zeros and is unmapped with the rest.
            let mapped = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if mapped != libc::MAP_FAILED {
                CUT[slot].store(true, Ordering::Relaxed);
                return;
            }
        }
    }
    // Not ours (or the page could not be replaced): the default action when it faults again.
    // SAFETY: signal(2) is async-signal-safe.
    unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
}
