//! The real device, macOS and FreeBSD only: open a free `/dev/bpf*`, attach it to an interface,
//! make it a write-only Ethernet descriptor, and read the port facts from `getifaddrs`.

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::Mutex;

use linerate_port::{LinkSpeed, Port, PortError, PortInfo, QueueConfig, TxQueue};

use crate::abi::{self, BpfInsn, BpfProgram};
use crate::error::BpfError;
use crate::queue::BpfQueue;
use crate::transmit::{BpfDevice, WriteMode, Writer};

/// Numbered devices tried after `/dev/bpf` (macOS creates the next node on demand).
const MAX_DEVICES: u32 = 256;
/// Ethernet header bytes the kernel allows on top of the MTU in a write.
const ETHER_HDR_LEN: u32 = 14;

/// How to open the port.
#[derive(Debug, Clone)]
pub struct BpfOptions {
    /// Ask for `BIOCSBATCHWRITE` (macOS 14.4+); single writes when off or refused.
    pub batch_write: bool,
    /// `BIOCSBLEN`: the kernel buffer, which also caps the bytes of one batch write here.
    pub buffer_len: u32,
}

impl Default for BpfOptions {
    fn default() -> Self {
        Self {
            batch_write: cfg!(target_os = "macos"),
            buffer_len: 256 * 1024,
        }
    }
}

/// One open, configured `/dev/bpf*` descriptor.
#[derive(Debug)]
pub struct BpfFd {
    file: File,
    path: String,
    iface: String,
    buffer_len: u32,
}

impl BpfDevice for BpfFd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // `File::write` is exactly one write(2).
        self.file.write(buf)
    }

    #[cfg(target_os = "macos")]
    fn set_batch_write(&mut self, on: bool) -> io::Result<()> {
        let mut value = i32::from(on);
        ioctl(&self.file, abi::BIOCSBATCHWRITE, &mut value)
    }
}

impl BpfFd {
    /// Opens the first free device and configures it for `iface`.
    pub fn open(iface: &str, buffer_len: u32) -> Result<Self, BpfError> {
        let (file, path) = open_free_device()?;
        let mut dev = Self {
            file,
            path,
            iface: iface.to_owned(),
            buffer_len,
        };
        dev.configure()?;
        Ok(dev)
    }

    /// The device node this descriptor came from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The kernel buffer length the device accepted.
    pub fn buffer_len(&self) -> u32 {
        self.buffer_len
    }

    fn fail(&self, request: &'static str) -> impl Fn(io::Error) -> BpfError + '_ {
        move |source| BpfError::Ioctl {
            iface: self.iface.clone(),
            request,
            source,
        }
    }

    fn configure(&mut self) -> Result<(), BpfError> {
        self.attach()?;
        self.configure_writes()
    }

    /// Buffer, interface and link type: what reading and writing descriptors share.
    fn attach(&mut self) -> Result<(), BpfError> {
        // BIOCSBLEN only counts before BIOCSETIF; the kernel answers what it granted.
        let mut blen = self.buffer_len;
        ioctl(&self.file, abi::BIOCSBLEN, &mut blen).map_err(self.fail("BIOCSBLEN"))?;
        self.buffer_len = blen;

        let mut req = IfReq::new(&self.iface)
            .ok_or_else(|| PortError::NoSuchInterface(self.iface.clone()))?;
        ioctl(&self.file, abi::BIOCSETIF, &mut req).map_err(|source| {
            let iface = self.iface.clone();
            match source.raw_os_error() {
                Some(libc::ENXIO) => PortError::NoSuchInterface(iface).into(),
                Some(libc::ENETDOWN) => PortError::InterfaceDown { iface }.into(),
                _ => BpfError::Ioctl {
                    iface,
                    request: "BIOCSETIF",
                    source,
                },
            }
        })?;

        let mut dlt = 0u32;
        ioctl(&self.file, abi::BIOCGDLT, &mut dlt).map_err(self.fail("BIOCGDLT"))?;
        if dlt != abi::DLT_EN10MB {
            return Err(BpfError::NotEthernet {
                iface: self.iface.clone(),
                dlt,
            });
        }
        Ok(())
    }

    fn configure_writes(&mut self) -> Result<(), BpfError> {
        // Without it the kernel overwrites the source MAC of every frame.
        let mut one = 1u32;
        ioctl(&self.file, abi::BIOCSHDRCMPLT, &mut one).map_err(self.fail("BIOCSHDRCMPLT"))?;

        // Do not see our own frames: xnu BIOCSSEESENT 0, FreeBSD BIOCSDIRECTION BPF_D_IN (the
        // same request number and value).
        #[cfg(target_os = "macos")]
        let (request, mut direction) = ("BIOCSSEESENT", 0u32);
        #[cfg(target_os = "freebsd")]
        let (request, mut direction) = ("BIOCSDIRECTION", abi::BPF_D_IN);
        ioctl(&self.file, abi::BIOCSSEESENT, &mut direction).map_err(self.fail(request))?;

        self.reject_all_reads()
    }

    fn reject_all_reads(&self) -> Result<(), BpfError> {
        let insns: [BpfInsn; 1] = abi::REJECT_ALL;
        let mut program = BpfProgram {
            bf_len: insns.len() as u32,
            bf_insns: insns.as_ptr(),
        };
        // The kernel copies `bf_len` instructions from `bf_insns` during the call; `insns`
        // outlives it.
        ioctl(&self.file, abi::BIOCSETF, &mut program).map_err(self.fail("BIOCSETF"))
    }

    /// `BIOCSWRITEMAX` (macOS): let writes carry frames of up to `len` bytes beyond the MTU.
    /// Elsewhere, or on a kernel without it, frames above the MTU fail with `EMSGSIZE`.
    #[cfg(target_os = "macos")]
    fn allow_frames_up_to(&mut self, len: u32) -> io::Result<()> {
        let mut len = len;
        ioctl(&self.file, abi::BIOCSWRITEMAX, &mut len)
    }

    #[cfg(not(target_os = "macos"))]
    fn allow_frames_up_to(&mut self, _len: u32) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::ENOTTY))
    }
}

/// A `/dev/bpf` descriptor that reads (macOS): attached to the far end of a lab, keeping the
/// frames `keep` asks for ([`crate::capture::Keep`]), immediate mode off so that one `read()`
/// returns a buffer full of records, or what arrived within the read timeout.
#[cfg(target_os = "macos")]
#[derive(Debug)]
pub struct BpfReader {
    dev: BpfFd,
    buf: Vec<u8>,
}

#[cfg(target_os = "macos")]
impl BpfReader {
    /// Opens the first free device on `iface` with a kernel buffer of `buffer_len` bytes (the
    /// kernel may grant less; reads use what it granted) and a read timeout.
    pub fn open(
        iface: &str,
        buffer_len: u32,
        timeout: std::time::Duration,
        keep: crate::capture::Keep,
    ) -> Result<Self, BpfError> {
        let (file, path) = open_free_device()?;
        let mut dev = BpfFd {
            file,
            path,
            iface: iface.to_owned(),
            buffer_len,
        };
        dev.attach()?;
        let mut off = 0u32;
        ioctl(&dev.file, abi::BIOCIMMEDIATE, &mut off).map_err(dev.fail("BIOCIMMEDIATE"))?;
        let mut tv = libc::timeval {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_usec: timeout.subsec_micros() as libc::suseconds_t,
        };
        ioctl(&dev.file, abi::BIOCSRTIMEOUT, &mut tv).map_err(dev.fail("BIOCSRTIMEOUT"))?;
        // Only what arrives: the host's own replies leaving this end (ICMP, ARP) are not counted.
        let mut seesent = 0u32;
        ioctl(&dev.file, abi::BIOCSSEESENT, &mut seesent).map_err(dev.fail("BIOCSSEESENT"))?;
        let insns = keep.program();
        let mut program = BpfProgram {
            bf_len: insns.len() as u32,
            bf_insns: insns.as_ptr(),
        };
        // The kernel copies the instructions during the call; `insns` outlives it.
        ioctl(&dev.file, abi::BIOCSETF, &mut program).map_err(dev.fail("BIOCSETF"))?;
        let buf = vec![0; dev.buffer_len as usize];
        Ok(Self { dev, buf })
    }

    /// The device node and the kernel buffer length granted.
    pub fn path(&self) -> &str {
        &self.dev.path
    }

    pub fn buffer_len(&self) -> u32 {
        self.dev.buffer_len
    }

    /// One `read()`: the records that arrived (parse them with [`crate::capture::records`]),
    /// empty when the timeout passed with nothing. xnu insists on reads of exactly the buffer
    /// length.
    pub fn read(&mut self) -> Result<&[u8], BpfError> {
        loop {
            match std::io::Read::read(&mut &self.dev.file, &mut self.buf) {
                Ok(n) => return Ok(&self.buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(&[]),
                Err(source) => {
                    return Err(BpfError::Read {
                        iface: self.dev.iface.clone(),
                        source,
                    });
                }
            }
        }
    }

    /// `BIOCGSTATS`: frames the kernel passed to the filter, and frames dropped because the
    /// buffer was full (the receiver fell behind: those were never counted).
    pub fn kernel_stats(&self) -> Result<(u32, u32), BpfError> {
        let mut stat = [0u32; 2];
        ioctl(&self.dev.file, abi::BIOCGSTATS, &mut stat).map_err(self.dev.fail("BIOCGSTATS"))?;
        Ok((stat[0], stat[1]))
    }
}

/// `struct ifreq` as BIOCSETIF reads it: the name, then a union the call ignores.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    _union: [u8; abi::IFREQ_SIZE - libc::IFNAMSIZ],
}

impl IfReq {
    fn new(iface: &str) -> Option<Self> {
        let bytes = iface.as_bytes();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return None;
        }
        let mut name = [0u8; libc::IFNAMSIZ];
        name[..bytes.len()].copy_from_slice(bytes);
        Some(Self {
            name,
            _union: [0; abi::IFREQ_SIZE - libc::IFNAMSIZ],
        })
    }
}

/// One ioctl whose parameter the kernel copies in and/or out by value.
///
/// BSD kernels copy exactly `IOCPARM_LEN(request)` bytes between `arg` and the kernel, so the
/// call is sound whenever that length equals `size_of::<T>()` — checked here before the call.
fn ioctl<T>(file: &File, request: u32, arg: &mut T) -> io::Result<()> {
    let len = ((request >> 16) & 0x1fff) as usize;
    if len != size_of::<T>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "ioctl {request:#x} wants {len} bytes, got {}",
                size_of::<T>()
            ),
        ));
    }
    // SAFETY: `arg` is a live, exclusive reference to `len` bytes (checked above), which is all
    // the kernel reads or writes for this request; the descriptor is open for the whole call.
    let rc = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            request as libc::c_ulong,
            (arg as *mut T).cast::<libc::c_void>(),
        )
    };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `/dev/bpf` (FreeBSD clones a fresh descriptor on each open), else the first `/dev/bpfN` that
/// is not busy (macOS).
fn open_free_device() -> Result<(File, String), BpfError> {
    let paths = std::iter::once("/dev/bpf".to_owned())
        .chain((0..MAX_DEVICES).map(|n| format!("/dev/bpf{n}")));
    for (i, path) in paths.enumerate() {
        match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => return Ok((file, path)),
            Err(e) => match e.raw_os_error() {
                Some(libc::EBUSY) => {}
                // No cloning node: try the numbered ones. No numbered node: none after it.
                Some(libc::ENOENT) if i == 0 => {}
                Some(libc::ENOENT) => break,
                Some(libc::EACCES | libc::EPERM) => {
                    return Err(BpfError::PermissionDenied { path });
                }
                _ => {
                    return Err(BpfError::Ioctl {
                        iface: path,
                        request: "open",
                        source: e,
                    });
                }
            },
        }
    }
    Err(BpfError::NoFreeDevice {
        tried: MAX_DEVICES - 1,
    })
}

/// What `getifaddrs` says about one interface.
#[derive(Debug)]
struct Link {
    mac: Option<[u8; 6]>,
    mtu: u32,
    speed: Option<LinkSpeed>,
    up: bool,
}

fn link(iface: &str) -> Result<Link, BpfError> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs stores a list head in `head`, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(BpfError::Ioctl {
            iface: iface.to_owned(),
            request: "getifaddrs",
            source: io::Error::last_os_error(),
        });
    }
    let mut found = None;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned; it lives until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_name.is_null() || ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
        // SAFETY: ifa_addr is non-null and starts with a sockaddr header.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        if name.to_bytes() != iface.as_bytes() || family != libc::AF_LINK {
            continue;
        }
        found = Some(link_of(ifa));
        break;
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed exactly once; no reference
    // into the list outlives this point (`link_of` copied what it needed).
    unsafe { libc::freeifaddrs(head) };
    found.ok_or_else(|| PortError::NoSuchInterface(iface.to_owned()).into())
}

/// The link-layer facts of an `AF_LINK` entry.
fn link_of(ifa: &libc::ifaddrs) -> Link {
    let dl = ifa.ifa_addr.cast::<libc::sockaddr_dl>().cast_const();
    // SAFETY: an AF_LINK address is a sockaddr_dl whose `sdl_data` holds `sdl_nlen` name bytes
    // followed by `sdl_alen` address bytes, all inside the `sdl_len` bytes the kernel filled.
    let mac = unsafe {
        let nlen = usize::from((*dl).sdl_nlen);
        let alen = usize::from((*dl).sdl_alen);
        (alen == 6 && usize::from((*dl).sdl_len) >= 8 + nlen + alen).then(|| {
            let data = (&raw const (*dl).sdl_data).cast::<u8>();
            std::ptr::read_unaligned(data.add(nlen).cast::<[u8; 6]>())
        })
    };
    let (mtu, baud) = if ifa.ifa_data.is_null() {
        (0, 0)
    } else {
        // SAFETY: for AF_LINK entries ifa_data points to the interface's `struct if_data`.
        let data = unsafe { std::ptr::read_unaligned(ifa.ifa_data.cast::<libc::if_data>()) };
        (data.ifi_mtu, data.ifi_baudrate)
    };
    #[allow(clippy::unnecessary_cast, reason = "u32 on macOS, u64 on FreeBSD")]
    let baud = baud as u64;
    // macOS's if_data has a 32-bit baud rate that saturates above ~4.29 Gbit/s: unknown then.
    let saturated = cfg!(target_os = "macos") && baud >= u64::from(u32::MAX);
    Link {
        mac,
        mtu,
        speed: (baud > 0 && !saturated).then_some(LinkSpeed::from_mbps(baud / 1_000_000)),
        up: ifa.ifa_flags & libc::IFF_UP as libc::c_uint != 0,
    }
}

/// An interface opened through `/dev/bpf`.
#[derive(Debug)]
pub struct BpfPort {
    info: PortInfo,
    options: BpfOptions,
    mode: WriteMode,
    /// The descriptor opened to probe the interface, handed to the first queue.
    spare: Mutex<Option<Writer<BpfFd>>>,
    opened: Mutex<Vec<u32>>,
}

/// Opens `iface` with the default options (batch writes on macOS when the kernel has them).
pub fn open(iface: &str) -> Result<BpfPort, BpfError> {
    open_with(iface, &BpfOptions::default())
}

/// Opens `iface`: checks it exists, is up and is Ethernet, and probes the write mode.
pub fn open_with(iface: &str, options: &BpfOptions) -> Result<BpfPort, BpfError> {
    let link = link(iface)?;
    if !link.up {
        return Err(PortError::InterfaceDown {
            iface: iface.to_owned(),
        }
        .into());
    }
    let writer = new_writer(iface, link.mtu, options)?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    Ok(BpfPort {
        info: PortInfo {
            name: iface.to_owned(),
            mac: link.mac,
            mtu: link.mtu,
            link_speed: link.speed,
            // No hardware queues: this many workers may each open a descriptor of their own.
            queues: workers,
            driver: None,
            backend: "bpf",
        },
        options: options.clone(),
        mode: writer.mode(),
        spare: Mutex::new(Some(writer)),
        opened: Mutex::new(Vec::new()),
    })
}

fn new_writer(iface: &str, mtu: u32, options: &BpfOptions) -> Result<Writer<BpfFd>, BpfError> {
    let dev = BpfFd::open(iface, options.buffer_len)?;
    let max_write = dev.buffer_len() as usize;
    Ok(Writer::new(dev, iface, mtu, options.batch_write).with_max_write(max_write))
}

impl BpfPort {
    /// The mode the probe descriptor got; every queue asks for the same.
    pub fn mode(&self) -> WriteMode {
        self.mode
    }
}

impl Port for BpfPort {
    fn info(&self) -> &PortInfo {
        &self.info
    }

    fn open_queue(&self, config: &QueueConfig) -> Result<Box<dyn TxQueue>, PortError> {
        let iface = &self.info.name;
        if config.queue_id >= self.info.queues {
            return Err(PortError::NoSuchQueue {
                iface: iface.clone(),
                queue: config.queue_id,
                available: self.info.queues,
            });
        }
        {
            let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
            if opened.contains(&config.queue_id) {
                return Err(PortError::QueueInUse {
                    iface: iface.clone(),
                    queue: config.queue_id,
                });
            }
            opened.push(config.queue_id);
        }
        let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).take();
        let mut writer = match spare {
            Some(writer) => writer,
            None => new_writer(iface, self.info.mtu, &self.options)?,
        };
        if config.slot_size > self.info.mtu + ETHER_HDR_LEN {
            // Best effort: without it, an oversized frame fails with a clear EMSGSIZE error.
            let _ = writer.device_mut().allow_frames_up_to(config.slot_size);
        }
        Ok(Box::new(BpfQueue::new(config, writer)))
    }
}
