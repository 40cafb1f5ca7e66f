//! Loading, attaching (through bpf_link), pinning and reading the XDP programs on Linux.

use std::ffi::CString;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags, MapHandle, Object, ObjectBuilder, OpenObject, PrintLevel};

use crate::{AttachMode, MapAbi, SinkCounters, XdpError, check_abi};

mod receive_end;
pub use receive_end::{LinkSwap, ReceiveEnd, ReceiveEndLock, link_running};

/// Aligns an embedded object file: libelf reads 64-bit ELF headers in place.
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

static SINK_OBJ: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/sink.bpf.o")));
static PASS_OBJ: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/pass.bpf.o")));
static LIVE_TX_OBJ: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/live_tx.bpf.o")));

static RX_OBJ: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/rx.bpf.o")));

static DUT_FWD_OBJ: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/dut_fwd.bpf.o")));
static IMPAIR_OBJ: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/impair.bpf.o")));
static STAMP_OBJ: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/stamp.bpf.o")));
static HOST_OBJ: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/host.bpf.o")));

/// The compiled `bpf/host.bpf.c` (a transmit-only port's emulated hosts), 8-byte aligned, for
/// `linerate-hosts`.
pub fn host_object() -> &'static [u8] {
    &HOST_OBJ.0
}

/// The compiled `bpf/stamp.bpf.c` (the tests' own arrival stamps, apart from the receiver),
/// 8-byte aligned, for `linerate-probe`.
pub fn stamp_object() -> &'static [u8] {
    &STAMP_OBJ.0
}

/// The compiled `bpf/dut_fwd.bpf.c` (the lab's XDP DUT), 8-byte aligned, for `linerate-lab`.
pub fn dut_fwd_object() -> &'static [u8] {
    &DUT_FWD_OBJ.0
}

/// The compiled `bpf/impair.bpf.c` (the lab's tc impairments), 8-byte aligned, for
/// `linerate-lab`.
pub fn impair_object() -> &'static [u8] {
    &IMPAIR_OBJ.0
}

/// The compiled `bpf/pass.bpf.c`, 8-byte aligned, for `linerate-lab` (its router's ends).
pub fn pass_object() -> &'static [u8] {
    &PASS_OBJ.0
}

/// The compiled `bpf/rx.bpf.c`, 8-byte aligned, for `linerate-rx` to load.
pub fn rx_object() -> &'static [u8] {
    &RX_OBJ.0
}

/// The compiled `bpf/live_tx.bpf.c`, 8-byte aligned, for `linerate-live` to load: every BPF
/// object of the project is built here, by one build script.
pub fn live_tx_object() -> &'static [u8] {
    &LIVE_TX_OBJ.0
}

/// The counter map's name in `bpf/sink.bpf.c`.
const SINK_MAP: &str = "sink_counters";
/// `bpf/sink.bpf.c`'s map as the Rust side reads it.
const SINK_ABI: [MapAbi; 1] = [MapAbi::of::<u32, SinkCounters>(SINK_MAP)];
/// File names under a pin directory.
const PIN_LINK: &str = "link";
const PIN_MAP: &str = "counters";
/// The sink's program, pinned so it can be put back on the link after a receiver that had
/// swapped itself in died without doing so (its reference to the sink was the last one).
const PIN_PROG: &str = "prog";
/// Where the receive-end locks live (bpffs holds no plain files).
const LOCK_DIR: &str = "/run/linerate";
/// Where bpffs lives, and its magic number (`BPF_FS_MAGIC` in linux/magic.h).
const BPFFS: &str = "/sys/fs/bpf";
const BPF_FS_MAGIC: u64 = 0xcafe_4a11;

/// The sink attached to an interface: owns the loaded object and the bpf_link. Dropping it
/// detaches the program unless it was pinned.
pub struct Sink {
    link: OwnedFd,
    object: Object,
    iface: String,
    netns: Option<String>,
    pinned: bool,
}

impl fmt::Debug for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sink")
            .field("iface", &self.iface)
            .field("netns", &self.netns)
            .field("link_fd", &self.link.as_raw_fd())
            .finish()
    }
}

impl Sink {
    /// Loads the sink and attaches it through a bpf_link (so it dies with the process unless
    /// pinned) to `iface`, looked up inside network namespace `netns` (None = the caller's), in
    /// `mode`.
    pub fn attach(iface: &str, netns: Option<&str>, mode: AttachMode) -> Result<Sink, XdpError> {
        let object = load("sink", &SINK_OBJ.0, &SINK_ABI)?;
        let link = link_in_netns(&object, iface, netns, mode)?;
        Ok(Sink {
            link,
            object,
            iface: iface.to_owned(),
            netns: netns.map(str::to_owned),
            pinned: false,
        })
    }

    /// The counters so far, summed over CPUs.
    pub fn counters(&self) -> Result<SinkCounters, XdpError> {
        let map = self
            .object
            .maps()
            .find(|m| m.name() == SINK_MAP)
            .ok_or_else(|| XdpError::Read {
                message: format!("the sink object has no map {SINK_MAP}"),
            })?;
        read_counters(&map)
    }

    /// Pins the link and the counter map under `dir` (bpffs, e.g. /sys/fs/bpf/linerate/<lab>),
    /// mounting bpffs at /sys/fs/bpf first if it is not mounted. The program then stays attached
    /// after this process exits, until [`PinnedSink::unpin`].
    pub fn pin(&mut self, dir: &Path) -> Result<(), XdpError> {
        ensure_bpffs()?;
        std::fs::create_dir_all(dir).map_err(|source| pin_error(dir, source))?;
        let map = self
            .object
            .maps()
            .find(|m| m.name() == SINK_MAP)
            .ok_or_else(|| XdpError::Read {
                message: format!("the sink object has no map {SINK_MAP}"),
            })?;
        let map_path = dir.join(PIN_MAP);
        let prog_path = dir.join(PIN_PROG);
        let program = self.object.progs().next().ok_or_else(|| XdpError::Read {
            message: "the sink object has no program".into(),
        })?;
        obj_pin(map.as_fd().as_raw_fd(), &map_path)?;
        let pinned = obj_pin(program.as_fd().as_raw_fd(), &prog_path)
            .and_then(|()| obj_pin(self.link.as_raw_fd(), &dir.join(PIN_LINK)));
        if let Err(e) = pinned {
            let _ = std::fs::remove_file(&prog_path);
            let _ = std::fs::remove_file(&map_path);
            return Err(e);
        }
        self.pinned = true;
        Ok(())
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if !self.pinned {
            detach(&self.link);
        }
    }
}

/// The sink's counters, reached through its pins from any process.
#[derive(Debug)]
pub struct PinnedSink {
    map: MapHandle,
    dir: PathBuf,
}

impl PinnedSink {
    /// Opens the counter map pinned under `dir` by [`Sink::pin`].
    pub fn open(dir: &Path) -> Result<PinnedSink, XdpError> {
        let path = dir.join(PIN_MAP);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(XdpError::NotPinned {
                    dir: dir.to_owned(),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return Err(XdpError::NotRoot {
                    what: format!("opening {}", path.display()),
                });
            }
            Err(e) => return Err(pin_error(&path, e)),
        }
        let map = MapHandle::from_pinned_path(&path).map_err(|e| match e.kind() {
            libbpf_rs::ErrorKind::PermissionDenied => XdpError::NotRoot {
                what: format!("opening {}", path.display()),
            },
            libbpf_rs::ErrorKind::NotFound => XdpError::NotPinned {
                dir: dir.to_owned(),
            },
            _ => XdpError::Read {
                message: format!("opening {}: {e}", path.display()),
            },
        })?;
        Ok(PinnedSink {
            map,
            dir: dir.to_owned(),
        })
    }

    /// The counters so far, summed over CPUs.
    pub fn counters(&self) -> Result<SinkCounters, XdpError> {
        read_counters(&self.map)
    }

    /// Removes the pins and detaches the program. Safe when they are already gone, and when bpffs
    /// is not mounted at all.
    ///
    /// The link is detached explicitly (BPF_LINK_DETACH) before its pin goes: dropping the last
    /// reference by unlinking the pin frees the link from a kernel work queue, a moment later, so
    /// an attach right after would still find the interface busy. Another holder of the link
    /// keeps an fd to a defunct link.
    pub fn unpin(dir: &Path) -> Result<(), XdpError> {
        detach_pinned_link(&dir.join(PIN_LINK))?;
        if let Err(e) = std::fs::remove_file(ReceiveEndLock::path(dir))
            && e.kind() != io::ErrorKind::NotFound
        {
            eprintln!(
                "linerate: removing the receive-end lock of {}: {e}",
                dir.display()
            );
        }
        for name in [PIN_LINK, PIN_PROG, PIN_MAP] {
            let path = dir.join(name);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    return Err(XdpError::NotRoot {
                        what: format!("removing {}", path.display()),
                    });
                }
                Err(e) => return Err(pin_error(&path, e)),
            }
        }
        match std::fs::remove_dir(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(pin_error(dir, e)),
        }
    }

    /// The pin directory this sink was opened from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Any loaded object's XDP program attached to an interface through a bpf_link; detaches on drop.
/// The caller keeps the object (its maps) alive beside it.
pub struct XdpLink {
    link: OwnedFd,
    iface: String,
    netns: Option<String>,
    pinned: bool,
}

impl fmt::Debug for XdpLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XdpLink")
            .field("iface", &self.iface)
            .field("netns", &self.netns)
            .field("link_fd", &self.link.as_raw_fd())
            .finish()
    }
}

impl Drop for XdpLink {
    fn drop(&mut self) {
        if !self.pinned {
            detach(&self.link);
        }
    }
}

impl XdpLink {
    /// The link still holds its interface: false once the interface was deleted (or moved to
    /// another namespace), which detaches every XDP link on it and leaves the program seeing
    /// nothing more.
    pub fn attached(&self) -> bool {
        link_ifindex(&self.link).is_ok_and(|i| i != 0)
    }

    /// Pins the link at `path` (bpffs, mounted first if it is not): the program then stays
    /// attached after this process exits, until [`unpin_link`].
    pub fn pin(&mut self, path: &Path) -> Result<(), XdpError> {
        ensure_bpffs()?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| pin_error(dir, source))?;
        }
        obj_pin(self.link.as_raw_fd(), path)?;
        self.pinned = true;
        Ok(())
    }
}

/// The interface an XDP link holds (0 once the interface is gone or the link detached).
fn link_ifindex(link: &OwnedFd) -> io::Result<u32> {
    let info = link_info(link.as_fd())?;
    if info.type_ != libbpf_sys::BPF_LINK_TYPE_XDP {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    // SAFETY: an XDP link's info fills the union's xdp member (its type was checked).
    Ok(unsafe { info.__bindgen_anon_1.xdp.ifindex })
}

/// What the kernel says of a link.
fn link_info(link: std::os::fd::BorrowedFd<'_>) -> io::Result<libbpf_sys::bpf_link_info> {
    // SAFETY: bpf_link_info is plain integers and unions of them; zeroes are valid.
    let mut info: libbpf_sys::bpf_link_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libbpf_sys::bpf_link_info>() as u32;
    // SAFETY: info and len are ours and sized as the call expects; the fd is live.
    let ret = unsafe { libbpf_sys::bpf_link_get_info_by_fd(link.as_raw_fd(), &mut info, &mut len) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    Ok(info)
}

/// Detaches the link pinned at `path` and removes the pin; nothing to do when it is not there.
pub fn unpin_link(path: &Path) -> Result<(), XdpError> {
    detach_pinned_link(path)?;
    unpin(path)
}

/// Removes any pin at `path` (a map's, a link's); nothing to do when it is not there.
pub fn unpin(path: &Path) -> Result<(), XdpError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(pin_error(path, e)),
    }
}

/// Pins a map (any BPF object fd) at `path`, creating its directory.
pub fn pin_fd(fd: std::os::fd::BorrowedFd<'_>, path: &Path) -> Result<(), XdpError> {
    ensure_bpffs()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| pin_error(dir, source))?;
    }
    obj_pin(fd.as_raw_fd(), path)
}

/// Attaches the first program of `object` to `iface` inside network namespace `netns` (None =
/// the caller's) in `mode`, through a bpf_link, as the sink attaches.
pub fn attach_object(
    object: &Object,
    iface: &str,
    netns: Option<&str>,
    mode: AttachMode,
) -> Result<XdpLink, XdpError> {
    let link = link_in_netns(object, iface, netns, mode)?;
    Ok(XdpLink {
        link,
        iface: iface.to_owned(),
        netns: netns.map(str::to_owned),
        pinned: false,
    })
}

/// The pass-through program attached to an interface; detaches on drop.
pub struct PassLink {
    link: OwnedFd,
    _object: Object,
    ifindex: u32,
    mode: AttachMode,
}

impl fmt::Debug for PassLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PassLink")
            .field("ifindex", &self.ifindex)
            .field("mode", &self.mode)
            .field("link_fd", &self.link.as_raw_fd())
            .finish()
    }
}

impl Drop for PassLink {
    fn drop(&mut self) {
        detach(&self.link);
    }
}

/// Detaches a link now. Closing its fd would too, but not while a child forked by another thread
/// still holds a copy between fork and exec; an explicit detach does not wait for that.
fn detach(link: &OwnedFd) {
    // SAFETY: link is a live fd for the duration of the call. A failure leaves closing the fd
    // to detach, as it would without this call.
    unsafe { libbpf_sys::bpf_link_detach(link.as_raw_fd()) };
}

/// Attaches the pass-through program to the interface `ifindex` of the caller's network namespace
/// through a bpf_link: for drivers that need a program on the queue for zero-copy AF_XDP TX.
pub fn attach_pass(ifindex: u32, mode: AttachMode) -> Result<PassLink, XdpError> {
    let object = load("pass", &PASS_OBJ.0, &[])?;
    let link = link_xdp(&object, ifindex, mode, &format!("ifindex {ifindex}"), None)?;
    Ok(PassLink {
        link,
        _object: object,
        ifindex,
        mode,
    })
}

/// The index of `iface` in the caller's network namespace.
pub fn ifindex(iface: &str) -> Result<u32, XdpError> {
    let unknown = || XdpError::UnknownInterface {
        iface: iface.to_owned(),
        netns: None,
    };
    if iface.is_empty() || iface.len() >= libc::IFNAMSIZ || iface.contains(['/', '\0']) {
        return Err(unknown());
    }
    nix::net::if_::if_nametoindex(iface).map_err(|_| unknown())
}

/// Serialises loads: libbpf's print callback is global, so the log captured for one load is that
/// load's only while no other load (in any crate: all go through `load_object`) runs meanwhile.
static LOADING: Mutex<()> = Mutex::new(());
/// The libbpf lines of the load in progress. Apart from `LOADING` because the callback locks it.
static LOAD_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn capture_libbpf(_level: PrintLevel, msg: String) {
    if let Ok(mut log) = LOAD_LOG.try_lock() {
        log.push(msg);
    }
}

/// The XDP features the driver of `ifindex` reports (`NETDEV_XDP_ACT_*`, see
/// [`crate::xdp_act`]); 0 on kernels before 6.3, which do not report them.
pub fn xdp_features(ifindex: u32) -> io::Result<u64> {
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

/// The shared description of interface `name` (sysfs, see `linerate_port::iface`) with the XDP
/// features its driver reports, where the kernel answers.
pub fn interface(name: &str) -> Result<linerate_port::iface::Interface, linerate_port::PortError> {
    let mut iface = linerate_port::iface::Interface::read(name)?;
    iface.xdp_features = xdp_features(iface.ifindex).ok();
    Ok(iface)
}

fn load(program: &'static str, bytes: &[u8], abi: &[MapAbi]) -> Result<Object, XdpError> {
    load_object_checked(program, bytes, abi, |_| Ok(()))
}

/// Opens an embedded object, lets `configure` adjust it before loading (map sizes, read-only
/// data), and loads it, turning a failure into libbpf's own words.
pub fn load_object(
    program: &'static str,
    bytes: &[u8],
    configure: impl FnOnce(&mut OpenObject) -> libbpf_rs::Result<()>,
) -> Result<Object, XdpError> {
    load_object_checked(program, bytes, &[], configure)
}

/// [`load_object`], refusing the object first when one of its maps is missing or its key or
/// value size differs from the Rust type `abi` names for it (aya's `check_kv_size`): a C struct
/// and its Rust mirror that drift apart fail here, with both sizes, not in the hot loop.
pub fn load_object_checked(
    program: &'static str,
    bytes: &[u8],
    abi: &[MapAbi],
    configure: impl FnOnce(&mut OpenObject) -> libbpf_rs::Result<()>,
) -> Result<Object, XdpError> {
    // Held until the log is read: another load would swap the print callback or the lines.
    let _loading = LOADING.lock().unwrap_or_else(|e| e.into_inner());
    LOAD_LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let previous = libbpf_rs::set_print(Some((PrintLevel::Info, capture_libbpf)));
    let mut abi_error = None;
    let result = ObjectBuilder::default()
        .open_memory(bytes)
        .and_then(|mut open| {
            let maps: Vec<(String, u32, u32)> = open
                .maps()
                .map(|m| {
                    let name = m.name().to_string_lossy().into_owned();
                    (name, m.key_size(), m.value_size())
                })
                .collect();
            if let Err(e) = check_abi(program, &maps, abi) {
                abi_error = Some(e);
                return Err(libbpf_rs::Error::from(io::Error::other("ABI mismatch")));
            }
            configure(&mut open)?;
            open.load()
        });
    libbpf_rs::set_print(previous);
    if let Some(e) = abi_error {
        return Err(e);
    }
    result.map_err(|e| {
        // The verifier refuses a program with EACCES too: only without root is it privilege.
        if e.kind() == libbpf_rs::ErrorKind::PermissionDenied && !nix::unistd::geteuid().is_root() {
            return XdpError::NotRoot {
                what: format!("loading the XDP program {program}"),
            };
        }
        let log = LOAD_LOG.lock().unwrap_or_else(|e| e.into_inner());
        let tail: Vec<&str> = log
            .iter()
            .rev()
            .take(20)
            .rev()
            .map(|l| l.trim_end())
            .collect();
        let message = if tail.is_empty() {
            format!("{e:#}")
        } else {
            format!("{e:#}; libbpf says:\n{}", tail.join("\n"))
        };
        XdpError::Load { program, message }
    })
}

/// Creates an XDP bpf_link for the object's only program on `ifindex` of the calling thread's
/// network namespace.
/// Attaches the first program of `object` to `iface`, looked up inside `netns` (None = ours).
fn link_in_netns(
    object: &Object,
    iface: &str,
    netns: Option<&str>,
    mode: AttachMode,
) -> Result<OwnedFd, XdpError> {
    in_netns(netns, || {
        let index = ifindex(iface).map_err(|e| match e {
            XdpError::UnknownInterface { iface, .. } => XdpError::UnknownInterface {
                iface,
                netns: netns.map(str::to_owned),
            },
            e => e,
        })?;
        link_xdp(object, index, mode, iface, netns)
    })
}

fn link_xdp(
    object: &Object,
    ifindex: u32,
    mode: AttachMode,
    iface: &str,
    netns: Option<&str>,
) -> Result<OwnedFd, XdpError> {
    let program = object.progs().next().ok_or_else(|| XdpError::Load {
        program: "xdp",
        message: "the object holds no program".into(),
    })?;
    let flags = match mode {
        AttachMode::Drv => libbpf_sys::XDP_FLAGS_DRV_MODE,
        AttachMode::Skb => libbpf_sys::XDP_FLAGS_SKB_MODE,
    };
    // SAFETY: bpf_link_create_opts is a plain C struct of integers, pointers and a union of
    // those; all zeroes is its documented "no options" value.
    let mut opts: libbpf_sys::bpf_link_create_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<libbpf_sys::bpf_link_create_opts>() as _;
    opts.flags = flags;
    let prog_fd = program.as_fd().as_raw_fd();
    // SAFETY: prog_fd is a valid program fd owned by `object`, which outlives the call; opts
    // points to an initialised struct whose `sz` is set, as libbpf requires.
    let ret =
        unsafe { libbpf_sys::bpf_link_create(prog_fd, ifindex as i32, libbpf_sys::BPF_XDP, &opts) };
    if ret < 0 {
        let errno = -ret;
        let iface = iface.to_owned();
        let netns = netns.map(str::to_owned);
        return Err(match errno {
            libc::EPERM | libc::EACCES => XdpError::NotRoot {
                what: format!("attaching XDP to {iface}"),
            },
            libc::EBUSY | libc::EEXIST => held(ifindex, iface, netns),
            libc::ENODEV => XdpError::UnknownInterface { iface, netns },
            libc::EOPNOTSUPP if mode == AttachMode::Drv => {
                XdpError::ModeUnsupported { iface, netns, mode }
            }
            _ => XdpError::Attach {
                iface,
                netns,
                mode,
                source: io::Error::from_raw_os_error(errno),
            },
        });
    }
    // SAFETY: bpf_link_create returned a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret) })
}

/// Why an attach to `ifindex` (of the calling thread's namespace) found the interface busy: a
/// program attached the old way (`ip … xdp off` removes it), or a bpf_link, which that cannot
/// remove: a lab's pinned one (named, with `lab down`), or another's (how to find its holder).
fn held(ifindex: u32, iface: String, netns: Option<String>) -> XdpError {
    let Some(link) = xdp_link_on(ifindex) else {
        return XdpError::AlreadyAttached { iface, netns };
    };
    match lab_pin_of(link) {
        Some((lab, pin)) => XdpError::HeldByLab {
            iface,
            netns,
            lab,
            pin,
        },
        None => XdpError::HeldByLink { iface, netns, link },
    }
}

/// The id of the XDP link that runs the program attached to `ifindex` (of the calling thread's
/// namespace), if a link runs it. Links name their interface by index only, so the program's
/// id must match too (the same index in another namespace runs another program).
fn xdp_link_on(ifindex: u32) -> Option<u32> {
    // SAFETY: bpf_xdp_query_opts is a plain C struct of integers; all zeroes is valid.
    let mut opts: libbpf_sys::bpf_xdp_query_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<libbpf_sys::bpf_xdp_query_opts>() as _;
    // SAFETY: opts is initialised with its `sz` set and outlives the call.
    if unsafe { libbpf_sys::bpf_xdp_query(ifindex as i32, 0, &mut opts) } < 0 {
        return None;
    }
    let progs = [opts.drv_prog_id, opts.skb_prog_id, opts.hw_prog_id];
    let mut id = 0u32;
    loop {
        // SAFETY: a plain syscall wrapper writing the next id into `id`, which is ours.
        if unsafe { libbpf_sys::bpf_link_get_next_id(id, &mut id) } < 0 {
            return None;
        }
        // SAFETY: a plain syscall on an id; it returns a fresh fd or a negative errno.
        let fd = unsafe { libbpf_sys::bpf_link_get_fd_by_id(id) };
        if fd < 0 {
            continue;
        }
        // SAFETY: bpf_link_get_fd_by_id returned a fresh fd that nothing else owns.
        let link = unsafe { OwnedFd::from_raw_fd(fd) };
        let Ok(info) = link_info(link.as_fd()) else {
            continue;
        };
        if info.type_ == libbpf_sys::BPF_LINK_TYPE_XDP
            // SAFETY: an XDP link's info fills the union's xdp member (its type was checked).
            && unsafe { info.__bindgen_anon_1.xdp.ifindex } == ifindex
            && info.prog_id != 0
            && progs.contains(&info.prog_id)
        {
            return Some(info.id);
        }
    }
}

/// The lab (and the pin) whose pinned links include link `id`: every lab pins under
/// /sys/fs/bpf/linerate/<lab>/.
fn lab_pin_of(id: u32) -> Option<(String, PathBuf)> {
    for lab in std::fs::read_dir(Path::new(BPFFS).join("linerate"))
        .ok()?
        .flatten()
    {
        for pin in std::fs::read_dir(lab.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = pin.path();
            let Ok(Some(fd)) = open_pinned_link(&path) else {
                continue;
            };
            if link_info(fd.as_fd()).is_ok_and(|info| info.id == id) {
                return Some((lab.file_name().to_string_lossy().into_owned(), path));
            }
        }
    }
    None
}

/// Runs `f` in network namespace `netns` (None: right here). setns(2) changes the calling
/// thread's namespace only, so a short-lived thread enters it and the caller's stays as it was.
/// Not `ip netns exec`: it remounts /sys, which hides bpffs.
pub fn in_netns<T: Send>(
    netns: Option<&str>,
    f: impl FnOnce() -> Result<T, XdpError> + Send,
) -> Result<T, XdpError> {
    let Some(ns) = netns else {
        return f();
    };
    if ns.is_empty() || ns.contains('/') {
        return Err(XdpError::NoSuchNetns { netns: ns.into() });
    }
    let file = match File::open(Path::new("/run/netns").join(ns)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(XdpError::NoSuchNetns { netns: ns.into() });
        }
        Err(source) => {
            return Err(XdpError::Netns {
                netns: ns.into(),
                source,
            });
        }
    };
    in_netns_file(file, f, |errno| match errno {
        nix::errno::Errno::EPERM => XdpError::NotRoot {
            what: format!("entering network namespace {ns}"),
        },
        errno => XdpError::Netns {
            netns: ns.into(),
            source: errno.into(),
        },
    })
}

/// Runs `f` on a short-lived thread that entered the network namespace `file` names (setns(2)
/// moves only the calling thread, so the caller's stays as it was); `entering` says why the
/// thread could not enter it. The one way every crate enters a namespace.
pub fn in_netns_file<T: Send, E: Send>(
    file: File,
    f: impl FnOnce() -> Result<T, E> + Send,
    entering: impl FnOnce(nix::errno::Errno) -> E + Send,
) -> Result<T, E> {
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(entering)?;
                f()
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn read_counters(map: &impl MapCore) -> Result<SinkCounters, XdpError> {
    let per_cpu = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| match e.kind() {
            libbpf_rs::ErrorKind::PermissionDenied => XdpError::NotRoot {
                what: "reading the sink counters".into(),
            },
            _ => XdpError::Read {
                message: format!("{e:#}"),
            },
        })?
        .ok_or_else(|| XdpError::Read {
            message: "the counter map has no entry 0".into(),
        })?;
    let mut total = SinkCounters::default();
    for value in per_cpu {
        let (packets, bytes) = match (value.get(0..8), value.get(8..16)) {
            (Some(p), Some(b)) => (p, b),
            _ => {
                return Err(XdpError::Read {
                    message: format!("a counter entry holds {} bytes, not 16", value.len()),
                });
            }
        };
        total.packets += u64::from_ne_bytes(packets.try_into().expect("8 bytes"));
        total.bytes += u64::from_ne_bytes(bytes.try_into().expect("8 bytes"));
    }
    Ok(total)
}

/// Mounts bpffs at /sys/fs/bpf unless it is there already.
fn ensure_bpffs() -> Result<(), XdpError> {
    let mounted = |stat: nix::sys::statfs::Statfs| stat.filesystem_type().0 as u64 == BPF_FS_MAGIC;
    match nix::sys::statfs::statfs(BPFFS) {
        Ok(stat) if mounted(stat) => return Ok(()),
        Ok(_) => {}
        Err(e) => {
            return Err(XdpError::Bpffs {
                reason: format!("{BPFFS}: {e}"),
            });
        }
    }
    nix::mount::mount(
        Some("bpf"),
        BPFFS,
        Some("bpf"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .map_err(|e| XdpError::Bpffs {
        reason: match e {
            nix::errno::Errno::EPERM => "permission denied: run as root".into(),
            e => e.to_string(),
        },
    })
}

/// The link pinned at `path`; None when nothing is pinned there.
fn open_pinned_link(path: &Path) -> Result<Option<OwnedFd>, XdpError> {
    let Ok(cpath) = CString::new(path.as_os_str().as_bytes()) else {
        return Ok(None);
    };
    // SAFETY: cpath is a NUL-terminated string that outlives the call.
    let ret = unsafe { libbpf_sys::bpf_obj_get(cpath.as_ptr()) };
    if ret < 0 {
        return match -ret {
            libc::ENOENT | libc::ENOTDIR => Ok(None),
            libc::EPERM | libc::EACCES => Err(XdpError::NotRoot {
                what: format!("opening {}", path.display()),
            }),
            errno => Err(pin_error(path, io::Error::from_raw_os_error(errno))),
        };
    }
    // SAFETY: bpf_obj_get returned a fresh fd that nothing else owns.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(ret) }))
}

/// Detaches the link pinned at `path`, if there is one.
fn detach_pinned_link(path: &Path) -> Result<(), XdpError> {
    let Some(link) = open_pinned_link(path)? else {
        return Ok(());
    };
    // SAFETY: link is a live fd for the duration of the call.
    let ret = unsafe { libbpf_sys::bpf_link_detach(link.as_raw_fd()) };
    // ENOLINK: already detached (its interface is gone); EINVAL: the pin is not a link.
    match -ret {
        0 | libc::ENOLINK | libc::EINVAL => Ok(()),
        errno => Err(pin_error(path, io::Error::from_raw_os_error(errno))),
    }
}

fn obj_pin(fd: i32, path: &Path) -> Result<(), XdpError> {
    let cpath = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| pin_error(path, io::ErrorKind::InvalidInput.into()))?;
    // SAFETY: fd is a live BPF object fd borrowed for the call; cpath is a NUL-terminated string
    // that outlives it.
    let ret = unsafe { libbpf_sys::bpf_obj_pin(fd, cpath.as_ptr()) };
    if ret < 0 {
        return Err(pin_error(path, io::Error::from_raw_os_error(-ret)));
    }
    Ok(())
}

fn pin_error(path: &Path, source: io::Error) -> XdpError {
    if source.kind() == io::ErrorKind::PermissionDenied {
        XdpError::NotRoot {
            what: format!("pinning {}", path.display()),
        }
    } else {
        XdpError::Pin {
            path: path.to_owned(),
            source,
        }
    }
}
