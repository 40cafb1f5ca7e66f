//! A lab's receive end: who holds it (one receiver at a time), a receiver's program swapped onto
//! the sink's pinned link for a run, the sink put back after a receiver that died, and whether
//! the receive interface still carries frames.

use std::ffi::CString;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use libbpf_rs::libbpf_sys;

use super::{LOCK_DIR, PIN_LINK, PIN_PROG, PinnedSink, in_netns, open_pinned_link, pin_error};
use crate::{Holder, HolderKind, XdpError};

impl PinnedSink {
    /// What runs on the sink's link now. When a receiver swapped itself in and died without
    /// putting the sink back (SIGKILL, a crash), the link still runs its program, and every
    /// later count of the sink would read as loss: the sink is put back here, and the answer
    /// says so. A receiver that is alive (it holds the receive-end lock) is left alone.
    pub fn receive_end(&self) -> Result<ReceiveEnd, XdpError> {
        let link_path = self.dir.join(PIN_LINK);
        let Some(link) = open_pinned_link(&link_path)? else {
            return Err(XdpError::NotPinned {
                dir: self.dir.clone(),
            });
        };
        // A lab made before the program was pinned cannot be checked: take it as it is.
        let Some(sink) = open_pinned_link(&self.dir.join(PIN_PROG))? else {
            return Ok(ReceiveEnd::Sink);
        };
        let running = link_prog_id(&link).map_err(|e| pin_error(&link_path, e))?;
        if running == prog_id(&sink).map_err(|e| pin_error(&link_path, e))? {
            return Ok(ReceiveEnd::Sink);
        }
        let Some(_lock) = ReceiveEndLock::try_take(&self.dir)? else {
            return Ok(ReceiveEnd::InUse);
        };
        update_link(&link, sink.as_raw_fd()).map_err(|e| pin_error(&link_path, e))?;
        Ok(ReceiveEnd::Restored)
    }
}

/// What runs on a lab's receive end, as [`PinnedSink::receive_end`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveEnd {
    /// The sink, counting.
    Sink,
    /// A receiver that died had left its program there: the sink is back, counting from now.
    Restored,
    /// A running receiver holds it: the sink counts nothing until that receiver ends.
    InUse,
}

/// Who holds a lab's receive end: an exclusive flock on /run/linerate/rx-<lab>.lock, taken
/// before the link is touched, so a second receiver is refused instead of swapping itself in
/// over the first (whose counts would then miss what the second saw). The kernel releases it
/// when its holder exits, however it exits; whoever removes the lab removes the file.
#[derive(Debug)]
pub struct ReceiveEndLock {
    _file: nix::fcntl::Flock<File>,
}

impl ReceiveEndLock {
    pub(super) fn path(dir: &Path) -> PathBuf {
        let lab = dir.file_name().unwrap_or_default().to_string_lossy();
        Path::new(LOCK_DIR).join(format!("rx-{lab}.lock"))
    }

    /// Takes the lock of the receive end pinned under `dir`, or `None` while another holds it.
    pub fn try_take(dir: &Path) -> Result<Option<ReceiveEndLock>, XdpError> {
        use std::os::unix::fs::MetadataExt;
        let path = Self::path(dir);
        std::fs::create_dir_all(LOCK_DIR).map_err(|e| pin_error(Path::new(LOCK_DIR), e))?;
        loop {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| pin_error(&path, e))?;
            let file =
                match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                    Ok(file) => file,
                    Err((_, nix::errno::Errno::EWOULDBLOCK)) => return Ok(None),
                    Err((_, errno)) => return Err(pin_error(&path, errno.into())),
                };
            // A lab removed (and its lock file with it) between the open and the lock: lock the
            // file at the path now, so one receive end never has two holders.
            let held = file.metadata().map_err(|e| pin_error(&path, e))?;
            let there = std::fs::metadata(&path).ok();
            if there.is_some_and(|m| m.dev() == held.dev() && m.ino() == held.ino()) {
                return Ok(Some(ReceiveEndLock { _file: file }));
            }
        }
    }

    /// Takes the lock for a `kind` of command, writing it (and this process's id) into the lock
    /// file for whoever finds the end busy, or says who is in the way.
    pub fn take(dir: &Path, kind: HolderKind) -> Result<ReceiveEndLock, XdpError> {
        use std::os::unix::fs::FileExt;
        let lock = Self::try_take(dir)?.ok_or_else(|| XdpError::ReceiveEndBusy {
            lab: dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            by: Self::holder(dir),
        })?;
        let holder = Holder {
            kind,
            pid: std::process::id(),
        };
        let path = Self::path(dir);
        let file: &File = &lock._file;
        file.set_len(0)
            .and_then(|()| file.write_all_at(holder.line().as_bytes(), 0))
            .map_err(|e| pin_error(&path, e))?;
        Ok(lock)
    }

    /// Who holds the receive end pinned under `dir`, as its lock file says: meaningful while the
    /// lock is held by another (a holder that just took it may not have written it yet).
    pub fn holder(dir: &Path) -> Option<Holder> {
        Holder::parse(&std::fs::read_to_string(Self::path(dir)).ok()?)
    }
}

/// The id of the program a bpf_link runs.
fn link_prog_id(link: &OwnedFd) -> io::Result<u32> {
    Ok(super::link_info(link.as_fd())?.prog_id)
}

/// The id of a program.
fn prog_id(prog: &OwnedFd) -> io::Result<u32> {
    // SAFETY: bpf_prog_info is plain integers and pointers the kernel fills only when their
    // lengths are non-zero; zeroes ask for nothing.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: info and len are ours and sized as the call expects; prog is a live fd.
    let ret = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    Ok(info.id)
}

/// A pinned link (a lab's sink) running another program for as long as this lives: the link's
/// own program comes back on drop. How a receive program takes the lab's receive end for a run
/// without detaching the sink (an interface holds one XDP link). A process killed with SIGKILL
/// leaves the other program on the link until `lab down` (or the next swap) replaces it.
pub struct LinkSwap {
    link: OwnedFd,
    original: OwnedFd,
    path: PathBuf,
    // Declared last: released after the original program is back.
    _lock: ReceiveEndLock,
}

impl fmt::Debug for LinkSwap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkSwap")
            .field("path", &self.path)
            .finish()
    }
}

impl LinkSwap {
    /// Puts `program` on the link pinned under `dir` (as [`Sink::pin`] pins it), holding the
    /// receive end's lock for a `kind` of command: a second swap while this one lives is refused
    /// ([`XdpError::ReceiveEndBusy`]) before the link is touched.
    pub fn new(
        dir: &Path,
        program: BorrowedFd<'_>,
        kind: HolderKind,
    ) -> Result<LinkSwap, XdpError> {
        let lock = ReceiveEndLock::take(dir, kind)?;
        let path = dir.join(PIN_LINK);
        let link = open_pinned_link(&path)?.ok_or_else(|| XdpError::NotPinned {
            dir: dir.to_owned(),
        })?;
        // What goes back is the sink, even when a receiver that died left its own program on
        // the link; a lab made before the sink's program was pinned gives what runs now.
        let original = match open_pinned_link(&dir.join(PIN_PROG))? {
            Some(sink) => sink,
            None => {
                let id = link_prog_id(&link).map_err(|e| pin_error(&path, e))?;
                // SAFETY: a plain syscall on an id; it returns a fresh fd or a negative errno.
                let ret = unsafe { libbpf_sys::bpf_prog_get_fd_by_id(id) };
                if ret < 0 {
                    return Err(pin_error(&path, io::Error::from_raw_os_error(-ret)));
                }
                // SAFETY: bpf_prog_get_fd_by_id returned a fresh fd that nothing else owns.
                unsafe { OwnedFd::from_raw_fd(ret) }
            }
        };
        update_link(&link, program.as_raw_fd()).map_err(|e| pin_error(&path, e))?;
        Ok(LinkSwap {
            link,
            original,
            path,
            _lock: lock,
        })
    }
}

impl LinkSwap {
    /// The link still holds its interface: false once the interface was deleted (or the lab
    /// taken down, which detaches the link), after which nothing more arrives.
    pub fn attached(&self) -> bool {
        super::link_ifindex(&self.link).is_ok_and(|i| i != 0)
    }
}

impl Drop for LinkSwap {
    fn drop(&mut self) {
        if let Err(e) = update_link(&self.link, self.original.as_raw_fd()) {
            eprintln!(
                "linerate: could not put the original program back on {}: {e}",
                self.path.display()
            );
        }
    }
}

fn update_link(link: &OwnedFd, program: i32) -> io::Result<()> {
    // SAFETY: a zeroed bpf_link_update_opts is "no options"; sz is set as libbpf requires.
    let mut opts: libbpf_sys::bpf_link_update_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<libbpf_sys::bpf_link_update_opts>() as _;
    // SAFETY: link and program are live fds for the duration of the call; opts is initialised.
    let ret = unsafe { libbpf_sys::bpf_link_update(link.as_raw_fd(), program, &opts) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    Ok(())
}

/// Whether `iface` (in `netns`) is up with carrier, as the kernel says through a socket made
/// inside the namespace (sysfs would show the caller's namespace): `None` when there is no such
/// interface any more.
pub fn link_running(iface: &str, netns: Option<&str>) -> Result<Option<bool>, XdpError> {
    let name = CString::new(iface).map_err(|_| XdpError::UnknownInterface {
        iface: iface.into(),
        netns: netns.map(str::to_owned),
    })?;
    in_netns(netns, move || {
        let socket = nix::sys::socket::socket(
            nix::sys::socket::AddressFamily::Inet,
            nix::sys::socket::SockType::Datagram,
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|e| XdpError::Read {
            message: format!("a socket to ask for {iface}'s state: {e}"),
        })?;
        // SAFETY: ifreq is a plain C struct; zeroes are a valid empty request.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        let bytes = name.as_bytes_with_nul();
        if bytes.len() > req.ifr_name.len() {
            return Ok(None);
        }
        for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        // SAFETY: SIOCGIFFLAGS reads the name from and writes the flags into `req`, which is
        // ours and as large as the call expects; the socket is live.
        let ret = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) };
        if ret < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENODEV) => Ok(None),
                _ => Err(XdpError::Read {
                    message: format!("the state of {iface}: {e}"),
                }),
            };
        }
        // SAFETY: SIOCGIFFLAGS filled the union's flags member.
        let flags = i32::from(unsafe { req.ifr_ifru.ifru_flags });
        let running = libc::IFF_UP | libc::IFF_RUNNING;
        Ok(Some(flags & running == running))
    })
}
