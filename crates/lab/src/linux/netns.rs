//! Named network namespaces as iproute2 keeps them, without running `ip netns`: a namespace is
//! a file /run/netns/NAME on which the namespace of a thread is bind-mounted, so it lives on
//! after the thread and every tool (`ip netns`, `ip -n`, setns(2) on the file) finds it.

use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use nix::errno::Errno;
use nix::mount::{MntFlags, MsFlags};

use super::netns_path;
use crate::LabError;

/// Where iproute2 and linerate keep named namespaces.
const NETNS_RUN_DIR: &str = "/run/netns";

fn errno_error(what: String) -> impl FnOnce(Errno) -> LabError {
    move |errno| match errno {
        Errno::EPERM | Errno::EACCES => LabError::NotRoot { what },
        errno => LabError::Io {
            what,
            source: errno.into(),
        },
    }
}

/// `ip netns add NAME`: a new network namespace, bind-mounted at /run/netns/NAME.
pub(crate) fn add(name: &str) -> Result<(), LabError> {
    let dir = Path::new(NETNS_RUN_DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .map_err(super::state_io(format!("creating {NETNS_RUN_DIR}")))?;
    make_shared(dir)?;
    let path = netns_path(name);
    // O_EXCL: a namespace of that name is never taken over.
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o000)
        .open(&path)
        .map_err(super::state_io(format!("creating {}", path.display())))?;
    let bound = std::thread::scope(|scope| {
        scope
            .spawn(|| -> Result<(), LabError> {
                // This thread alone moves to the new namespace, and ends right after.
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(errno_error(format!("creating network namespace {name}")))?;
                nix::mount::mount(
                    Some("/proc/thread-self/ns/net"),
                    &path,
                    None::<&str>,
                    MsFlags::MS_BIND,
                    None::<&str>,
                )
                .map_err(errno_error(format!(
                    "binding network namespace {name} to {}",
                    path.display()
                )))
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    if bound.is_err() {
        let _ = std::fs::remove_file(&path);
    }
    bound
}

/// Makes /run/netns a shared mount (bind-mounting it on itself first if it is no mount), as
/// iproute2 does: an unmount here then reaches the copies of it in other mount namespaces (those
/// `ip netns exec` makes), so a deleted namespace is freed, not kept alive by a stale mount.
fn make_shared(dir: &Path) -> Result<(), LabError> {
    let shared = || {
        nix::mount::mount(
            None::<&str>,
            dir,
            None::<&str>,
            MsFlags::MS_SHARED | MsFlags::MS_REC,
            None::<&str>,
        )
    };
    let what = || format!("making {} a shared mount", dir.display());
    match shared() {
        Ok(()) => Ok(()),
        // EINVAL: not a mount point yet.
        Err(Errno::EINVAL) => {
            nix::mount::mount(
                Some(dir),
                dir,
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&str>,
            )
            .map_err(errno_error(what()))?;
            shared().map_err(errno_error(what()))
        }
        Err(errno) => Err(errno_error(what())(errno)),
    }
}

/// `ip netns del NAME`: detaches the bind mount and removes the file. The namespace itself goes
/// when nothing else holds it (its last process or open handle).
pub(crate) fn del(name: &str) -> Result<(), LabError> {
    let path = netns_path(name);
    // EINVAL: not mounted (a half-made namespace); the file still goes.
    match nix::mount::umount2(&path, MntFlags::MNT_DETACH) {
        Ok(()) | Err(Errno::EINVAL) | Err(Errno::ENOENT) => {}
        Err(errno) => {
            return Err(errno_error(format!("unmounting {}", path.display()))(errno));
        }
    }
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(super::state_io(format!("removing {}", path.display()))(e))
        }
        _ => Ok(()),
    }
}
