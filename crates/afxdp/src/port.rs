//! `XskPort`: an interface opened for AF_XDP, and the bind ladder that turns a `QueueConfig` into
//! a bound `XskQueue` (zero-copy → copy, EBUSY retried, pass-through program where needed).

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use linerate_port::{Port, PortError, PortInfo, QueueConfig, TxQueue};
use linerate_xdp::xdp_act;

use crate::AfXdpError;
use crate::iface::Interface;
use crate::queue::{QueueParts, XskQueue};
use crate::socket::{RingSizes, SetupError, XskSocket};
use crate::sys;
use crate::umem::Umem;

/// Which AF_XDP bind mode to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XdpMode {
    /// Zero-copy when the driver offers it, else copy.
    #[default]
    Auto,
    /// Zero-copy or fail.
    ZeroCopy,
    /// Copy mode (works on every interface, veth included).
    Copy,
}

/// Where to attach the pass-through XDP program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttachMode {
    /// Only when zero-copy TX needs a program on the queue, in driver mode.
    #[default]
    Auto,
    /// Always, in driver (native) mode; fail if the driver has no native XDP.
    Drv,
    /// Always, on the generic skb path. It cannot enable zero-copy, so with `XdpMode::Auto` the
    /// zero-copy rung runs without a program.
    Skb,
}

/// How `XskPort` binds its queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XskOptions {
    pub mode: XdpMode,
    pub attach: AttachMode,
    /// Frames per kick in copy mode (`XDP_MAX_TX_SKB_BUDGET`, clamped by the kernel to
    /// 32..=TX ring size); a queue uses the larger of this and its `QueueConfig::batch`.
    pub batch: u32,
    /// Bind with `XDP_USE_NEED_WAKEUP` and kick only when the ring asks; off: kick every submit.
    pub need_wakeup: bool,
}

impl Default for XskOptions {
    fn default() -> Self {
        Self {
            mode: XdpMode::Auto,
            attach: AttachMode::Auto,
            batch: 64,
            need_wakeup: true,
        }
    }
}

/// How long a bind answering EBUSY (queue held, or just released) is retried.
const BIND_RETRY: Duration = Duration::from_secs(1);

/// Slots a copy-mode queue asks for. The kernel copies each frame into an skb within the kick
/// that sends it, and the slot comes back when that skb is freed: at once on veth, at the NIC's
/// TX clean-up on hardware. Every slot more is UMEM the copy reads from a colder line: on the lab
/// 64 to 256 slots send alike and 4096 a third less per busy core (docs/performance.md); 256
/// leave a NIC's interrupt coalescing some room.
const COPY_SLOTS: u32 = 256;

/// Slots a zero-copy queue asks for: the NIC reads frames by DMA and completes them later, from
/// its interrupt, so a full TX ring (2048) plus as many awaiting reaping are in flight.
const ZERO_COPY_SLOTS: u32 = 4096;

/// Drivers that refuse zero-copy TX until an XDP program runs on the interface.
const NEEDS_PROGRAM_FOR_ZEROCOPY: &[&str] = &["i40e", "ixgbe", "virtio_net"];

/// The pass-through program on the port's interface, shared by its queues; detached when the
/// port and the last queue are gone (and by the kernel if the process dies: it is a bpf_link).
pub(crate) struct PassProgram {
    // The Mutex only makes the link Sync for sharing through Arc; it is never locked.
    _link: Mutex<linerate_xdp::PassLink>,
    mode: linerate_xdp::AttachMode,
}

impl fmt::Debug for PassProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PassProgram({})", self.mode)
    }
}

/// An interface opened for AF_XDP transmission.
#[derive(Debug)]
pub struct XskPort {
    iface: Interface,
    options: XskOptions,
    /// The slots a queue asks for: chosen at open for the bind mode the queues will get.
    min_slots: u32,
    pass: Mutex<Option<Arc<PassProgram>>>,
}

impl XskPort {
    /// Opens `iface`: checks that it exists and is up, and reads what the report needs.
    pub fn open(iface: &str, options: XskOptions) -> Result<XskPort, AfXdpError> {
        let iface = Interface::lookup(iface)?;
        if !iface.up {
            return Err(PortError::InterfaceDown {
                iface: iface.info.name,
            }
            .into());
        }
        // The slot count is fixed before a queue is bound (it sizes the UMEM the bind registers),
        // so `Auto` goes by what the driver says it can do: a wrong guess only costs speed.
        let min_slots = min_slots(options.mode, || linerate_xdp::xdp_features(iface.ifindex));
        Ok(XskPort {
            iface,
            options,
            min_slots,
            pass: Mutex::new(None),
        })
    }

    pub fn ifindex(&self) -> u32 {
        self.iface.ifindex
    }

    pub fn options(&self) -> &XskOptions {
        &self.options
    }

    /// Opens one queue as the concrete type (see [`Port::open_queue`] for the boxed one).
    pub fn open_xsk_queue(&self, config: &QueueConfig) -> Result<XskQueue, AfXdpError> {
        let name = &self.iface.info.name;
        if config.queue_id >= self.iface.info.queues {
            return Err(PortError::NoSuchQueue {
                iface: name.clone(),
                queue: config.queue_id,
                available: self.iface.info.queues,
            }
            .into());
        }
        if config.slots == 0 {
            return Err(AfXdpError::Config("a queue needs at least one slot".into()));
        }
        let chunk = chunk_size(config.slot_size)?;
        let umem = Umem::new(config.slots, chunk).map_err(|e| {
            AfXdpError::io(
                format!("mapping a UMEM of {} slots of {chunk} bytes", config.slots),
                e,
            )
        })?;
        let binder = Binder {
            port: self,
            umem: &umem,
            sizes: RingSizes::for_slots(config.slots),
            budget: config.batch.max(self.options.batch),
            queue_id: config.queue_id,
            wakeup: if self.options.need_wakeup {
                libc::XDP_USE_NEED_WAKEUP
            } else {
                0
            },
        };

        let mut pass = match self.options.attach {
            AttachMode::Auto => None,
            AttachMode::Drv => Some(self.pass_program(linerate_xdp::AttachMode::Drv)?),
            AttachMode::Skb => Some(self.pass_program(linerate_xdp::AttachMode::Skb)?),
        };
        let (socket, zero_copy) = match self.options.mode {
            XdpMode::Copy => (binder.bind_copy()?, false),
            XdpMode::ZeroCopy => (binder.bind_zero_copy(&mut pass)?, true),
            XdpMode::Auto => match binder.bind_zero_copy(&mut pass) {
                Ok(socket) => (socket, true),
                Err(AfXdpError::NoZeroCopy { .. }) => (binder.bind_copy()?, false),
                Err(e) => return Err(e),
            },
        };
        // Trust the kernel's word over the flags we asked for.
        let zero_copy = socket.zero_copy().unwrap_or(zero_copy);
        if self.options.attach == AttachMode::Auto && !zero_copy && pass.is_some() {
            // Attached for a zero-copy attempt that then failed: do not leave it behind.
            pass = None;
            self.release_unused_pass();
        }
        let mut mode = String::from(if zero_copy { "zerocopy" } else { "copy" });
        if let Some(pass) = &pass {
            mode.push_str(&format!(" ({} pass program)", pass.mode));
        }
        Ok(XskQueue::new(QueueParts {
            socket,
            umem,
            pass,
            slots: config.slots,
            chunk,
            need_wakeup: self.options.need_wakeup,
            mode,
            iface: name.clone(),
            queue_id: config.queue_id,
        }))
    }

    /// Detaches the pass-through program when no queue uses it.
    fn release_unused_pass(&self) {
        let mut slot = self.pass.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_some_and(|p| Arc::strong_count(p) == 1) {
            *slot = None;
        }
    }

    /// The port's pass-through program, attached on first use.
    fn pass_program(&self, mode: linerate_xdp::AttachMode) -> Result<Arc<PassProgram>, AfXdpError> {
        let mut slot = self.pass.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pass) = slot.as_ref() {
            return Ok(pass.clone());
        }
        let link = linerate_xdp::attach_pass(self.iface.ifindex, mode).map_err(|source| {
            AfXdpError::PassProgram {
                iface: self.iface.info.name.clone(),
                source,
            }
        })?;
        let pass = Arc::new(PassProgram {
            _link: Mutex::new(link),
            mode,
        });
        *slot = Some(pass.clone());
        Ok(pass)
    }
}

impl Port for XskPort {
    fn info(&self) -> &PortInfo {
        &self.iface.info
    }

    /// Few slots in copy mode, a zero-copy ring's worth otherwise (see `COPY_SLOTS`).
    fn min_slots(&self) -> u32 {
        self.min_slots
    }

    fn open_queue(&self, config: &QueueConfig) -> Result<Box<dyn TxQueue>, PortError> {
        Ok(Box::new(self.open_xsk_queue(config)?))
    }
}

/// The slots a queue of `mode` asks for. `features` (the driver's `NETDEV_XDP_ACT_*`) decides
/// for `Auto`. A kernel that cannot tell (an error, or 0: before 6.3 nothing is reported) gets
/// the zero-copy count, as every queue did before the modes were told apart.
fn min_slots(mode: XdpMode, features: impl FnOnce() -> io::Result<u64>) -> u32 {
    let zero_copy = match mode {
        XdpMode::Copy => false,
        XdpMode::ZeroCopy => true,
        XdpMode::Auto => match features() {
            Ok(0) | Err(_) => true,
            Ok(f) => f & xdp_act::XSK_ZEROCOPY != 0,
        },
    };
    if zero_copy {
        ZERO_COPY_SLOTS
    } else {
        COPY_SLOTS
    }
}

/// AF_XDP aligned mode wants a power-of-two chunk of 2048 bytes up to one page.
fn chunk_size(slot_size: u32) -> Result<u32, AfXdpError> {
    let page = sys::page_size() as u32;
    let chunk = slot_size
        .max(2048)
        .checked_next_power_of_two()
        .unwrap_or(u32::MAX);
    if chunk > page {
        return Err(AfXdpError::SlotTooLarge {
            slot_size,
            max: page,
        });
    }
    Ok(chunk)
}

/// One queue's trip down the bind ladder.
struct Binder<'a> {
    port: &'a XskPort,
    umem: &'a Umem,
    sizes: RingSizes,
    budget: u32,
    queue_id: u32,
    wakeup: u16,
}

impl Binder<'_> {
    fn name(&self) -> &str {
        &self.port.iface.info.name
    }

    fn bind_copy(&self) -> Result<XskSocket, AfXdpError> {
        self.bind(libc::XDP_COPY)?
            .map_err(|e| self.bind_error("copy", e))
    }

    /// Zero-copy, with the pass-through program attached (in driver mode) when the driver
    /// refuses zero-copy TX without one. `NoZeroCopy` when the driver cannot do it at all.
    fn bind_zero_copy(&self, pass: &mut Option<Arc<PassProgram>>) -> Result<XskSocket, AfXdpError> {
        let may_attach = pass.is_none() && self.port.options.attach == AttachMode::Auto;
        let driver = self.port.iface.info.driver.clone().unwrap_or_default();
        let no_zero_copy = || AfXdpError::NoZeroCopy {
            iface: self.name().to_owned(),
            driver: if driver.is_empty() {
                "the driver".into()
            } else {
                driver.clone()
            },
        };
        let mut socket = match self.bind(libc::XDP_ZEROCOPY)? {
            Ok(socket) => Some(socket),
            Err(e) if is_unsupported(&e) => None,
            Err(e) => return Err(self.bind_error("zero-copy", e)),
        };
        if socket.is_none() {
            if !(may_attach && NEEDS_PROGRAM_FOR_ZEROCOPY.contains(&driver.as_str())) {
                return Err(no_zero_copy());
            }
            *pass = Some(self.port.pass_program(linerate_xdp::AttachMode::Drv)?);
            socket = match self.bind(libc::XDP_ZEROCOPY)? {
                Ok(socket) => Some(socket),
                Err(e) if is_unsupported(&e) => return Err(no_zero_copy()),
                Err(e) => return Err(self.bind_error("zero-copy", e)),
            };
        }
        let socket = socket.expect("bound above");
        // Bound is not enough: some drivers accept the bind and refuse the wakeup (EINVAL or
        // ENXIO from ndo_xsk_wakeup) until a program runs. The first kick after bind always
        // reaches the driver, with an empty ring, so it sends nothing.
        if probe_kick(&socket) {
            return Ok(socket);
        }
        if may_attach && pass.is_none() {
            *pass = Some(self.port.pass_program(linerate_xdp::AttachMode::Drv)?);
            if probe_kick(&socket) {
                return Ok(socket);
            }
        }
        Err(no_zero_copy())
    }

    /// Sets up a fresh socket and binds it, retrying while the queue answers EBUSY. The outer
    /// error is final; the inner one is the bind's errno, for the ladder to judge.
    fn bind(&self, mode: u16) -> Result<io::Result<XskSocket>, AfXdpError> {
        let deadline = Instant::now() + BIND_RETRY;
        let mut backoff = Duration::from_millis(1);
        loop {
            // A fresh socket per attempt: a failed bind may leave the old one half set up.
            let socket = XskSocket::new(self.umem, self.sizes, self.budget)
                .map_err(|e| self.setup_error(e))?;
            match socket.bind(self.port.iface.ifindex, self.queue_id, mode | self.wakeup) {
                Ok(()) => return Ok(Ok(socket)),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    if Instant::now() >= deadline {
                        return Err(PortError::QueueInUse {
                            iface: self.name().to_owned(),
                            queue: self.queue_id,
                        }
                        .into());
                    }
                    drop(socket);
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_millis(100));
                }
                Err(e) => return Ok(Err(e)),
            }
        }
    }

    fn setup_error(&self, e: SetupError) -> AfXdpError {
        match e.source.raw_os_error() {
            Some(libc::EAFNOSUPPORT) => AfXdpError::NoAfXdp,
            Some(libc::EPERM | libc::EACCES) => PortError::NotPermitted {
                what: format!("AF_XDP on {} ({})", self.name(), e.step),
            }
            .into(),
            // ENOBUFS is what the kernel answers when the UMEM exceeds RLIMIT_MEMLOCK and the
            // process lacks CAP_IPC_LOCK (xdp_umem_account_pages); ENOMEM on older kernels.
            Some(libc::ENOMEM | libc::ENOBUFS) if e.step == "XDP_UMEM_REG" => AfXdpError::io(
                format!(
                    "registering the UMEM for {} queue {} (locked memory: needs CAP_IPC_LOCK, \
                     which root has unless it was dropped, or a higher RLIMIT_MEMLOCK, `ulimit -l`)",
                    self.name(),
                    self.queue_id
                ),
                e.source,
            ),
            _ => AfXdpError::io(
                format!("{} for {} queue {}", e.step, self.name(), self.queue_id),
                e.source,
            ),
        }
    }

    fn bind_error(&self, mode: &str, e: io::Error) -> AfXdpError {
        match e.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => PortError::NotPermitted {
                what: format!("binding AF_XDP to {}", self.name()),
            }
            .into(),
            Some(libc::ENODEV) => PortError::NoSuchInterface(self.name().to_owned()).into(),
            Some(libc::ENETDOWN) => PortError::InterfaceDown {
                iface: self.name().to_owned(),
            }
            .into(),
            _ => AfXdpError::io(
                format!(
                    "binding AF_XDP ({mode} mode) to {} queue {}",
                    self.name(),
                    self.queue_id
                ),
                e,
            ),
        }
    }
}

/// What a driver answers when it cannot bind zero-copy: EOPNOTSUPP (no ndo_xsk_wakeup, e.g.
/// veth), ENOTSUPP (524, kernel-internal, leaks from some drivers) or EINVAL.
fn is_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::EINVAL | 524)
    )
}

/// True when a kick on a freshly bound socket succeeds (or is merely busy).
fn probe_kick(socket: &XskSocket) -> bool {
    sys::kick(&socket.fd).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_bind_mode() {
        let never = || -> io::Result<u64> { panic!("only Auto asks the driver") };
        assert_eq!(min_slots(XdpMode::Copy, never), COPY_SLOTS);
        assert_eq!(min_slots(XdpMode::ZeroCopy, never), ZERO_COPY_SLOTS);
        // veth: basic XDP, redirect, ndo_xmit, no zero-copy.
        assert_eq!(min_slots(XdpMode::Auto, || Ok(0b111)), COPY_SLOTS);
        assert_eq!(
            min_slots(XdpMode::Auto, || Ok(0b111 | xdp_act::XSK_ZEROCOPY)),
            ZERO_COPY_SLOTS
        );
        // A kernel that reports nothing keeps the old count.
        assert_eq!(min_slots(XdpMode::Auto, || Ok(0)), ZERO_COPY_SLOTS);
        let refused = || Err(io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(min_slots(XdpMode::Auto, refused), ZERO_COPY_SLOTS);
    }

    #[test]
    fn chunks_are_powers_of_two_from_2048_to_a_page() {
        assert_eq!(chunk_size(60).unwrap(), 2048);
        assert_eq!(chunk_size(2048).unwrap(), 2048);
        assert_eq!(chunk_size(1518).unwrap(), 2048);
        let page = sys::page_size() as u32;
        if page == 4096 {
            assert_eq!(chunk_size(2049).unwrap(), 4096);
            assert!(matches!(
                chunk_size(4097),
                Err(AfXdpError::SlotTooLarge { .. })
            ));
            assert!(matches!(
                chunk_size(9000),
                Err(AfXdpError::SlotTooLarge { max: 4096, .. })
            ));
        }
    }
}
