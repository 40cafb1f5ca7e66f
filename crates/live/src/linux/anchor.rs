//! Keeps the live program attached while it runs, so each BPF_PROG_RUN call is cheap.

use std::os::fd::{FromRawFd, OwnedFd};

use libbpf_rs::libbpf_sys;

/// Keeps the live program registered in the kernel's XDP dispatcher for the whole run.
///
/// BPF_PROG_RUN with a repeat above 1 adds the program to the dispatcher and removes it after
/// the call; each change rebuilds the dispatcher and waits for an RCU grace period, about 24 ms
/// for a call here — a third of the run at max rate, and no pacing finer than that. While the
/// program is attached somewhere those changes only count references. So it is attached, in
/// generic mode through a bpf_link, to the loopback of a network namespace of its own, where no
/// packet ever arrives; the link and the namespace go away on drop, or when the process dies.
pub(super) struct Anchor {
    _link: OwnedFd,
    _netns: OwnedFd,
}

impl Anchor {
    /// None when it cannot be set up (the run is slower, not wrong).
    pub(super) fn attach(prog: i32) -> Option<Anchor> {
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
