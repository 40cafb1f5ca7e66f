//! The delay line: a process in the DUT's namespace that holds frames for the delay (± jitter)
//! and sends a share of them at once (reorder), because this kernel has no netem.
//!
//! The impairment program redirects every frame leaving the DUT toward the sink into veth
//! `<name>q0`; this process reads them on `<name>q1` (AF_PACKET, each frame's arrival from the
//! kernel's receive stamp, so its own wake-up is not added to the delay), keeps them in a queue
//! ordered by release time (a binary heap; frames of equal release time keep their order) and
//! sends each at its time out of the DUT's egress (AF_PACKET, `SO_MARK` = the mark the program
//! lets pass), so the tbf behind it still shapes them. It sleeps in `ppoll` until the next
//! release or the next arrival, with the timer slack at 1 ns so it wakes on time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, BufRead, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{STATE_DIR, dut, netns_path};
use crate::{Impairments, LabError};

/// The mark `bpf/impair.bpf.c` lets pass: frames the delay line sends back.
const MARK_DELAYED: u32 = 0x4c52_0002;
/// Frames held at most; beyond, arrivals are dropped (counted on stderr at exit).
const MAX_HELD: usize = 1 << 16;
/// The largest frame read: an Ethernet frame of a 1500-byte MTU with VLAN tags and room.
const FRAME_MAX: usize = 2048;

fn pid_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR)
        .join("labs")
        .join(format!("{name}.delay"))
}

fn log_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR)
        .join("labs")
        .join(format!("{name}.delay.log"))
}

fn error(name: &str, reason: impl Into<String>) -> LabError {
    LabError::DelayLine {
        name: name.into(),
        reason: reason.into(),
    }
}

/// The pid of lab `name`'s delay line when it runs: the pid file names a live process whose
/// command line is ours (a pid the kernel gave to something else since is not taken for it).
pub(crate) fn running(name: &str) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(pid_path(name))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let ours = args.contains(&b"delay-line".as_slice()) && args.contains(&name.as_bytes());
    // A zombie (exited, not yet reaped) has an empty command line, so it is not taken as running.
    ours.then_some(pid)
}

/// Starts the delay line of lab `name` (`<program> lab delay-line --name <name>`), which reads
/// the impairments from the record `lab impair` wrote, and waits until it is receiving.
pub(crate) fn start(name: &str, program: &Path) -> Result<(), LabError> {
    let log = std::fs::File::create(log_path(name)).map_err(super::state_io(format!(
        "creating {}",
        log_path(name).display()
    )))?;
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(program)
        .args(["lab", "delay-line", "--name", name])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        // Its own process group: a Ctrl-C meant for the command that started it passes it by.
        .process_group(0)
        .spawn()
        .map_err(|e| error(name, format!("starting {}: {e}", program.display())))?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    if line.trim() != "ready" {
        let _ = child.kill();
        let _ = child.wait();
        let mut why = String::new();
        let _ = std::fs::File::open(log_path(name)).and_then(|mut f| f.read_to_string(&mut why));
        return Err(error(
            name,
            format!(
                "it did not start: {}",
                why.trim().lines().last().unwrap_or("no message")
            ),
        ));
    }
    std::fs::write(pid_path(name), format!("{}\n", child.id())).map_err(super::state_io(
        format!("writing {}", pid_path(name).display()),
    ))?;
    Ok(())
}

/// Stops lab `name`'s delay line, if it runs, and removes its pid file.
pub(crate) fn stop(name: &str) -> Result<(), LabError> {
    if let Some(pid) = running(name) {
        let pid = nix::unistd::Pid::from_raw(pid);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(2);
        while running(name).is_some() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if running(name).is_some() {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
    for path in [pid_path(name), log_path(name)] {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(LabError::Io {
                    what: format!("removing {}", path.display()),
                    source: e,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// An AF_PACKET raw socket bound to `ifindex`; `protocol` 0 receives nothing.
fn packet_socket(ifindex: u32, protocol: u16) -> io::Result<OwnedFd> {
    let proto = protocol.to_be();
    // SAFETY: plain socket(2); the result is checked before use.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: raw is a fresh fd that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: sockaddr_ll is plain integers; all zeroes is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = proto;
    addr.sll_ifindex = ifindex as i32;
    // SAFETY: addr is a valid sockaddr_ll and the length passed is its size.
    let ret = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&raw const addr).cast(),
            size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

fn set_int(fd: &OwnedFd, level: i32, option: i32, value: i32) -> io::Result<()> {
    // SAFETY: value is a live i32 for the call and the length passed is its size.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            option,
            (&raw const value).cast(),
            size_of::<i32>() as u32,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads one frame into `buf` without waiting: its length (≤ 0 when none) and the kernel's
/// receive stamp (CLOCK_REALTIME ns, `SO_TIMESTAMPNS`), when there is one.
fn recv_stamped(rx: &OwnedFd, buf: &mut [u8]) -> (isize, Option<u64>) {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one cmsghdr and a timespec, 8-byte aligned.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain integers and pointers; all zeroes is a valid empty value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control);
    // SAFETY: msg points at iov (over buf) and control, all alive and writable for the call.
    let n = unsafe { libc::recvmsg(rx.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n <= 0 {
        return (n, None);
    }
    let mut stamp = None;
    // SAFETY: msg was filled by recvmsg; CMSG_FIRSTHDR/CMSG_NXTHDR walk its control buffer
    // within msg_controllen, and CMSG_DATA of an SCM_TIMESTAMPNS header holds a timespec (read
    // unaligned, as the kernel does not promise its alignment).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    (n, stamp)
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC, from the tightest of a few monotonic brackets around a
/// realtime read: a bracket a preemption widened would shift every arrival by its width.
fn clock_offset() -> u64 {
    let mut best = (u64::MAX, 0);
    for _ in 0..8 {
        let before = monotonic_ns();
        let real = realtime_ns();
        let after = monotonic_ns();
        let width = after - before;
        if width < best.0 {
            best = (width, real.wrapping_sub(before + width / 2));
        }
    }
    best.1
}

fn realtime_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// xorshift64*: the draw per frame (jitter, reorder) needs speed, not secrecy.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: f64) -> bool {
        percent > 0.0 && (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 100.0 < percent
    }
}

/// When a frame that arrived at `now` leaves.
fn release_at(imp: &Impairments, draw: &mut Draw, now: u64) -> u64 {
    if draw.chance(imp.reorder) {
        return now;
    }
    let delay = imp.delay.as_nanos() as u64;
    let jitter = imp.jitter.as_nanos() as u64;
    if jitter == 0 {
        return now + delay;
    }
    // Uniform in delay ± jitter; the jitter never exceeds the delay (checked).
    let offset = draw.next() % (2 * jitter + 1);
    now + delay - jitter + offset
}

/// The delay line's body, run by `linerate lab delay-line --name <name>` in its own process:
/// enters `<name>-dut`, opens its sockets, prints `ready` on stdout and forwards until killed.
pub fn run_delay_line(name: &str) -> Result<std::convert::Infallible, LabError> {
    crate::validate_name(name)?;
    let imp = std::fs::read_to_string(dut::impair_path(name))
        .map(|t| Impairments::from_text(&t))
        .map_err(|e| error(name, format!("no impairments recorded: {e}")))?;
    let ns = dut::netns(name);
    let file = std::fs::File::open(netns_path(&ns))
        .map_err(|e| error(name, format!("opening network namespace {ns}: {e}")))?;
    // This process is single-threaded here, so the whole process enters the namespace.
    nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| error(name, format!("entering network namespace {ns}: {e}")))?;
    let (_, q1) = dut::divert_ends(name);
    let egress = format!("{name}d1");
    let index = |iface: &str| linerate_xdp::ifindex(iface).map_err(|e| error(name, e.to_string()));
    let rx = packet_socket(index(&q1)?, libc::ETH_P_ALL as u16)
        .map_err(|e| error(name, format!("AF_PACKET on {q1}: {e}")))?;
    let tx = packet_socket(index(&egress)?, 0)
        .map_err(|e| error(name, format!("AF_PACKET on {egress}: {e}")))?;
    set_int(&tx, libc::SOL_SOCKET, libc::SO_MARK, MARK_DELAYED as i32)
        .map_err(|e| error(name, format!("SO_MARK: {e}")))?;
    // A deep receive buffer absorbs bursts while the line sleeps; FORCE needs CAP_NET_ADMIN,
    // the plain option is the fallback.
    let rcvbuf = 64 << 20;
    if set_int(&rx, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, rcvbuf).is_err() {
        let _ = set_int(&rx, libc::SOL_SOCKET, libc::SO_RCVBUF, rcvbuf);
    }
    // The kernel stamps each frame as it arrives; without the stamp the read time stands.
    let _ = set_int(&rx, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer argument and changes only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
    realtime();
    println!("ready");
    forward(&imp, &rx, &tx)
}

/// A real-time class, so a wake-up for a release is not queued behind busy threads (a sender
/// spinning, a compiler): the delay is what the user asked, not the scheduler's. SCHED_FIFO
/// first; the line sleeps between frames, and the kernel's RT throttling keeps 5 % of each core
/// for the rest even if it is flooded. A cgroup without a real-time budget (`cpu.rt_runtime_us`
/// 0, as CI runners and containers often have) refuses FIFO even to root, but not
/// SCHED_DEADLINE, whose admission is the machine's: a reservation of 90 % of a core each
/// millisecond (and any idle time beyond, SCHED_FLAG_RECLAIM) runs the line ahead of every
/// fair thread; it sleeps between frames, so the reservation is a ceiling, not a cost (at 40 %
/// a debug build fell behind 50 kpps: a 1 ms delay measured 5.6 ms). Last, the highest nice weight (with plain weight the line fell behind a
/// spinning sender: a 1 ms delay measured 6 ms).
fn realtime() {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: param is a valid sched_param for the call; pid 0 is this process.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        return;
    }
    let fifo = io::Error::last_os_error();
    /// `struct sched_attr` of linux/sched/types.h (not in libc).
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
    }
    const SCHED_DEADLINE: u32 = 6;
    const SCHED_FLAG_RECLAIM: u64 = 0x02;
    let attr = SchedAttr {
        size: size_of::<SchedAttr>() as u32,
        policy: SCHED_DEADLINE,
        flags: SCHED_FLAG_RECLAIM,
        nice: 0,
        priority: 0,
        runtime: 900_000,
        deadline: 1_000_000,
        period: 1_000_000,
    };
    // SAFETY: sched_setattr(2) on this thread (pid 0) reads `attr`, alive for the call, whose
    // size field says how much of it to read.
    if unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &raw const attr, 0) } == 0 {
        eprintln!("delay line: SCHED_FIFO refused ({fifo}); running as SCHED_DEADLINE");
        return;
    }
    let deadline = io::Error::last_os_error();
    // SAFETY: setpriority on this process (who 0) with a plain integer.
    let nice = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -20) };
    eprintln!(
        "delay line: SCHED_FIFO refused ({fifo}), SCHED_DEADLINE too ({deadline}); {}",
        if nice == 0 {
            "running at nice -20".to_string()
        } else {
            format!("nice -20 refused too ({})", io::Error::last_os_error())
        }
    );
}

fn forward(
    imp: &Impairments,
    rx: &OwnedFd,
    tx: &OwnedFd,
) -> Result<std::convert::Infallible, LabError> {
    let mut heap: BinaryHeap<HeldFrame> = BinaryHeap::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut draw = Draw(monotonic_ns() | 1);
    let mut order = 0u64;
    let mut real_to_mono = clock_offset();
    let mut calibrated = monotonic_ns();
    loop {
        let now = monotonic_ns();
        // Send everything due.
        while heap.peek().is_some_and(|f| f.at <= now) {
            let HeldFrame { buf, len, .. } = heap.pop().expect("peeked");
            let frame = &buf[..len];
            // SAFETY: frame is a valid buffer of frame.len() bytes for the duration of the call.
            // A refused send (the tbf queue full: ENOBUFS) is a drop, as on a wire.
            unsafe { libc::send(tx.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            pool.push(buf);
        }
        // Sleep until the next release or an arrival.
        let timeout = heap.peek().map(|f| f.at.saturating_sub(monotonic_ns()));
        let mut pfd = libc::pollfd {
            fd: rx.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = timeout.map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        });
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        // SAFETY: pfd and ts live across the call; a null timeout waits for an arrival.
        unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, std::ptr::null()) };
        // Take every frame waiting, up to a batch, each held from when it reached the DUT's
        // namespace (the kernel's receive stamp), not from when this process woke to read it.
        if monotonic_ns().wrapping_sub(calibrated) > 1_000_000_000 {
            real_to_mono = clock_offset();
            calibrated = monotonic_ns();
        }
        for _ in 0..256 {
            // Buffers keep their full length from birth: refilling 2 KiB of zeros per frame
            // cost a debug build 20 us a frame, all a core has at 50 kpps.
            let mut buf = pool.pop().unwrap_or_else(|| vec![0; FRAME_MAX]);
            let (n, real) = recv_stamped(rx, &mut buf);
            if n <= 0 {
                pool.push(buf);
                break;
            }
            if heap.len() >= MAX_HELD {
                pool.push(buf);
                continue;
            }
            let len = n as usize;
            let read_at = monotonic_ns();
            // A stamp from the future or over 100 ms old is not this frame's arrival (a clock
            // step, a stamp carried from elsewhere): then the time it was read stands.
            let arrived = real
                .map(|r| r.wrapping_sub(real_to_mono))
                .filter(|&a| a <= read_at && read_at - a < 100_000_000)
                .unwrap_or(read_at);
            let at = release_at(imp, &mut draw, arrived);
            order += 1;
            heap.push(HeldFrame {
                at,
                order,
                buf,
                len,
            });
        }
    }
}

/// A held frame: its release time, its arrival order (ties keep order), its bytes. The heap
/// is a max-heap, so the order is reversed: the earliest release is the greatest.
struct HeldFrame {
    at: u64,
    order: u64,
    buf: Vec<u8>,
    /// The frame's length: `buf` keeps `FRAME_MAX` bytes.
    len: usize,
}

impl PartialEq for HeldFrame {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl Eq for HeldFrame {}
impl PartialOrd for HeldFrame {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeldFrame {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        Reverse((self.at, self.order)).cmp(&Reverse((other.at, other.order)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_fall_within_delay_plus_minus_jitter() {
        let imp = Impairments {
            delay: Duration::from_micros(1000),
            jitter: Duration::from_micros(200),
            ..Default::default()
        };
        let mut draw = Draw(42);
        let (mut lo, mut hi) = (u64::MAX, 0);
        for _ in 0..100_000 {
            let d = release_at(&imp, &mut draw, 1_000_000) - 1_000_000;
            lo = lo.min(d);
            hi = hi.max(d);
        }
        assert!(lo >= 800_000 && hi <= 1_200_000, "{lo}..{hi}");
        // The draws reach near both ends.
        assert!(lo < 810_000 && hi > 1_190_000, "{lo}..{hi}");
    }

    #[test]
    fn reorder_sends_its_share_at_once() {
        let imp = Impairments {
            delay: Duration::from_millis(1),
            reorder: 10.0,
            ..Default::default()
        };
        let mut draw = Draw(7);
        let n = 100_000;
        let now = (0..n)
            .filter(|_| release_at(&imp, &mut draw, 5) == 5)
            .count() as f64;
        // Binomial(100000, 0.1): sigma = 94.9; 5 sigma = 474.
        assert!((now - 10_000.0).abs() < 475.0, "{now}");
    }
}
