//! The port a stateful end runs on, on Linux: an AF_PACKET socket bound to the interface (in
//! the namespace it lives in), frames read where the kernel left them in a TPACKET_V2 receive
//! ring and written into a batch sent by one `sendmmsg` (when it is full, and each time the
//! end has visited its connections or is about to wait). The host's own frames on a shared
//! interface are skipped (`PACKET_IGNORE_OUTGOING`, and [`Addresses::accepts`] for what it
//! receives).

use std::os::fd::OwnedFd;
use std::time::Duration;

use linerate_afpacket::{RxFrame, RxRing};
use smoltcp::phy::{Device, DeviceCapabilities, Medium};

use crate::stack::{Link, LinkCounters};
use crate::{Addresses, StatefulError};

/// The largest frame read whole: a 1500-byte MTU's, VLAN tag and all. A larger one (a device
/// that hands up GRO aggregates) is counted as oversize and dropped.
const FRAME: usize = 1522;

/// Frames of the receive ring: 4,096 of 2 KiB, the 8 MiB a socket's receive buffer held before.
const RING_FRAMES: u32 = 4096;

/// An AF_PACKET socket on one interface.
#[derive(Debug)]
pub struct PacketLink {
    fd: OwnedFd,
    addresses: Addresses,
    ring: RxRing,
    /// Whether the ring's front frame is the end's, peeked and not yet handed up.
    held: bool,
    /// Whether the ring's front frame was handed up: it goes back to the kernel before the
    /// next is read.
    handed: bool,
    tx: TxBatch,
    counters: LinkCounters,
    /// Frames the kernel dropped with the receive ring full, as read so far.
    ring_drops: std::cell::Cell<u64>,
}

/// Frames written and not yet sent, one `FRAME` of room each.
#[derive(Debug)]
struct TxBatch {
    buf: Vec<u8>,
    lens: Vec<usize>,
    /// The tags each frame gets after its MAC addresses, on a VLAN: 802.1Q's (TPID and TCI),
    /// or on stacked VLANs 802.1ad's outer and 802.1Q's inner; `tag_len` bytes of it.
    tag: [u8; 8],
    tag_len: usize,
}

/// The tags of an end's frames: none, one 802.1Q tag, or a service tag (TPID 0x88a8, or the
/// outer TPID asked) with an 802.1Q one inside it.
fn tags(addresses: &Addresses) -> ([u8; 8], usize) {
    let mut tag = [0u8; 8];
    match (addresses.vlan, addresses.inner_vlan) {
        (Some(outer), Some(inner)) => {
            tag[..2].copy_from_slice(&addresses.outer_tpid.to_be_bytes());
            tag[2..4].copy_from_slice(&outer.to_be_bytes());
            tag[4..6].copy_from_slice(&[0x81, 0x00]);
            tag[6..8].copy_from_slice(&inner.to_be_bytes());
            (tag, 8)
        }
        (Some(id), None) => {
            tag[..2].copy_from_slice(&[0x81, 0x00]);
            tag[2..4].copy_from_slice(&id.to_be_bytes());
            (tag, 4)
        }
        _ => (tag, 0),
    }
}

impl PacketLink {
    /// Opens `iface` in network namespace `netns` (None: this one) for an end with `addresses`.
    pub fn open(
        iface: &str,
        netns: Option<&str>,
        addresses: Addresses,
    ) -> Result<PacketLink, StatefulError> {
        let fd = match netns {
            None => socket(iface)?,
            Some(ns) => {
                let path = std::path::Path::new("/run/netns").join(ns);
                let file = std::fs::File::open(&path).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        StatefulError::Usage(format!(
                            "no network namespace {ns} (ip netns list shows those there are)"
                        ))
                    } else {
                        StatefulError::Io {
                            what: format!("opening {}", path.display()),
                            source: e,
                        }
                    }
                })?;
                std::thread::scope(|s| {
                    s.spawn(|| {
                        linerate_sys::enter_netns(&file).map_err(StatefulError::io(format!(
                            "entering network namespace {ns}"
                        )))?;
                        socket(iface)
                    })
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })?
            }
        };
        let (tag, tag_len) = tags(&addresses);
        let ring = RxRing::new(&fd, RING_FRAMES, FRAME as u32)
            .map_err(StatefulError::io("mapping a receive ring"))?;
        Ok(PacketLink {
            fd,
            addresses,
            ring,
            held: false,
            handed: false,
            tx: TxBatch {
                buf: vec![0; FRAME * linerate_sys::SEND_BATCH],
                lens: Vec::with_capacity(linerate_sys::SEND_BATCH),
                tag,
                tag_len,
            },
            counters: LinkCounters::default(),
            ring_drops: std::cell::Cell::new(0),
        })
    }

    /// Finds the next frame that is the end's at the ring's front; false when none waits. The
    /// frame handed up last goes back to the kernel first, and every frame passed over.
    fn next_frame(&mut self) -> bool {
        if self.held {
            return true;
        }
        if std::mem::take(&mut self.handed) {
            self.ring.release();
        }
        loop {
            let Some(f) = self.ring.front() else {
                return false;
            };
            if f.len > FRAME || f.bytes.len() < f.len {
                self.counters.rx_oversize += 1;
            } else {
                let ours = match tags_in_bytes(&self.addresses, &f) {
                    None => false,
                    Some(0) => self.addresses.accepts(f.bytes),
                    // Tags still in the bytes come out (in the ring) before the addresses
                    // are looked at.
                    Some(tags) => {
                        for _ in 0..tags {
                            self.ring.strip_tag();
                        }
                        let f = self.ring.front();
                        f.is_some_and(|f| self.addresses.accepts(f.bytes))
                    }
                };
                if ours {
                    self.counters.rx_frames += 1;
                    self.held = true;
                    return true;
                }
                self.counters.rx_ignored += 1;
            }
            self.ring.release();
        }
    }
}

/// When `f` carries the end's tags, how many of them are still in its bytes, to come out before
/// its addresses are read; None when it does not. The kernel takes an outer tag of TPID 0x8100 or 0x88a8 off and says it; the
/// inner one, and an outer one of 0x9100 (no VLAN TPID to the kernel), stay in the bytes.
fn tags_in_bytes(a: &Addresses, f: &RxFrame<'_>) -> Option<usize> {
    let ours = match (a.vlan, a.inner_vlan) {
        (vlan, None) => return (f.vlan == vlan).then_some(0),
        (Some(outer), Some(inner)) if a.outer_tpid == 0x9100 => {
            f.vlan.is_none()
                && tag_is(f.bytes, 12, 0x9100, outer)
                && tag_is(f.bytes, 16, 0x8100, inner)
        }
        (Some(outer), Some(inner)) => {
            f.vlan == Some(outer)
                && f.vlan_tpid.is_none_or(|t| t == a.outer_tpid)
                && tag_is(f.bytes, 12, 0x8100, inner)
        }
        (None, Some(_)) => false,
    };
    ours.then_some(if f.vlan.is_none() { 2 } else { 1 })
}

/// Whether `bytes` holds a tag of `tpid` and VLAN `id` at `at`.
fn tag_is(bytes: &[u8], at: usize, tpid: u16, id: u16) -> bool {
    bytes.len() >= at + 6
        && bytes[at..at + 2] == tpid.to_be_bytes()
        && u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]) & 0x0fff == id
}

impl TxBatch {
    /// Sends every frame written, in as few calls as the kernel allows. A full send buffer
    /// (frames still on their way through a veth peer's backlog are charged to the socket) is
    /// waited out, up to [`FULL_FOR`]: a frame dropped here would cost its connection a
    /// retransmission timeout, a lost SYN a whole second. A frame the port refuses outright
    /// (the link down, too long) is counted dropped and the rest go on.
    fn flush(&mut self, fd: &OwnedFd, counters: &mut LinkCounters) {
        if self.lens.is_empty() {
            return;
        }
        let mut frames = [&[][..]; linerate_sys::SEND_BATCH];
        for (i, &len) in self.lens.iter().enumerate() {
            frames[i] = &self.buf[i * FRAME..i * FRAME + len];
        }
        let n = self.lens.len();
        let mut at = 0;
        let mut waited = Duration::ZERO;
        while at < n {
            match linerate_sys::send_frames(fd, &frames[at..n]) {
                // sendmmsg says an error rather than none sent; were it none, no loop on it.
                Ok(0) => {
                    counters.tx_dropped += (n - at) as u64;
                    break;
                }
                Ok(sent) => {
                    counters.tx_frames += sent as u64;
                    at += sent;
                }
                Err(e) if is_full(&e) && waited < FULL_FOR => {
                    counters.tx_waits += 1;
                    let started = std::time::Instant::now();
                    // The send buffer full (EAGAIN): it drains as the peer takes frames. The
                    // device's queue full (ENOBUFS, a veth peer's backlog; the frame was not
                    // delivered): it drains as soon as softirqs run, a moment later.
                    if linerate_sys::wait_writable(fd, FULL_FOR - waited).unwrap_or(false) {
                        std::thread::sleep(Duration::from_micros(20));
                    }
                    waited += started.elapsed();
                }
                Err(e) if is_full(&e) => {
                    counters.tx_dropped += (n - at) as u64;
                    break;
                }
                Err(_) => {
                    counters.tx_dropped += 1;
                    at += 1;
                }
            }
        }
        self.lens.clear();
    }
}

/// The longest a batch waits for the port to take it before its frames are dropped.
const FULL_FOR: Duration = Duration::from_secs(1);

/// Whether a send failed for want of room (the socket's send buffer or the device's queue).
fn is_full(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOBUFS))
}

fn socket(iface: &str) -> Result<OwnedFd, StatefulError> {
    let ifindex = linerate_sys::if_index(iface).map_err(|_| {
        StatefulError::Usage(format!(
            "no interface {iface} (ip link shows those there are)"
        ))
    })?;
    let proto = (libc::ETH_P_ALL as u16).to_be();
    let fd = linerate_sys::raw_socket(libc::AF_PACKET, i32::from(proto)).map_err(|e| {
        match e.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => StatefulError::Usage(format!(
                "a packet socket on {iface} needs root or CAP_NET_RAW: run it with sudo"
            )),
            _ => StatefulError::Io {
                what: format!("packet socket on {iface}"),
                source: e,
            },
        }
    })?;
    let on: libc::c_int = 1;
    linerate_sys::set_opt(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &on)
        .map_err(StatefulError::io("PACKET_IGNORE_OUTGOING"))?;
    let buf: libc::c_int = 8 << 20;
    if linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &buf).is_err() {
        let _ = linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &buf);
    }
    // A frame stays charged to the socket until the peer has taken it: over a veth, until the
    // other namespace's stack has processed it. The default 208 KiB is some 70 full frames,
    // about one batch; 4 MiB leaves a busy peer room for dozens.
    let buf: libc::c_int = 4 << 20;
    if linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &buf).is_err() {
        let _ = linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &buf);
    }
    // SAFETY: sockaddr_ll is plain integers; all-zero is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = proto;
    addr.sll_ifindex = ifindex as i32;
    linerate_sys::bind(&fd, &addr).map_err(StatefulError::io(format!("binding to {iface}")))?;
    Ok(fd)
}

/// The frame at the ring's front.
#[derive(Debug)]
pub struct Rx<'a>(&'a [u8]);

/// Room for one frame in the batch to send.
#[derive(Debug)]
pub struct Tx<'a> {
    fd: &'a OwnedFd,
    batch: &'a mut TxBatch,
    counters: &'a mut LinkCounters,
}

impl smoltcp::phy::RxToken for Rx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0)
    }
}

impl smoltcp::phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        if self.batch.lens.len() == linerate_sys::SEND_BATCH {
            self.batch.flush(self.fd, self.counters);
        }
        let at = self.batch.lens.len() * FRAME;
        let n = self.batch.tag_len;
        if n == 0 {
            let len = len.min(FRAME);
            let r = f(&mut self.batch.buf[at..at + len]);
            self.batch.lens.push(len);
            return r;
        }
        // The stack writes the untagged frame `n` bytes in; its MACs move to the front and the
        // tags go between them and the EtherType.
        let len = len.min(FRAME - n);
        let frame = &mut self.batch.buf[at..at + n + len];
        let r = f(&mut frame[n..]);
        frame.copy_within(n..n + 12, 0);
        frame[12..12 + n].copy_from_slice(&self.batch.tag[..n]);
        self.batch.lens.push(len + n);
        r
    }
}

impl Device for PacketLink {
    type RxToken<'a> = Rx<'a>;
    type TxToken<'a> = Tx<'a>;

    fn receive(
        &mut self,
        _: smoltcp::time::Instant,
    ) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        if !self.next_frame() {
            return None;
        }
        self.held = false;
        self.handed = true;
        let frame = self.ring.front()?;
        Some((
            Rx(frame.bytes),
            Tx {
                fd: &self.fd,
                batch: &mut self.tx,
                counters: &mut self.counters,
            },
        ))
    }

    fn transmit(&mut self, _: smoltcp::time::Instant) -> Option<Self::TxToken<'_>> {
        Some(Tx {
            fd: &self.fd,
            batch: &mut self.tx,
            counters: &mut self.counters,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = 1514;
        caps
    }
}

impl Link for PacketLink {
    fn wait(&mut self, timeout: Duration) -> Result<(), StatefulError> {
        self.flush();
        // The frame handed up goes back first: the socket polls readable while the frame
        // before the kernel's head is still ours.
        if std::mem::take(&mut self.handed) {
            self.ring.release();
        }
        if self.held || self.ring.front().is_some() {
            return Ok(());
        }
        linerate_sys::wait_readable(&self.fd, timeout)
            .map(|_| ())
            .map_err(StatefulError::io("waiting for a frame"))
    }

    fn peek(&mut self) -> Option<&[u8]> {
        if !self.next_frame() {
            return None;
        }
        self.ring.front().map(|f| f.bytes)
    }

    fn flush(&mut self) {
        self.tx.flush(&self.fd, &mut self.counters);
    }

    fn counters(&self) -> LinkCounters {
        // The kernel's count restarts at each read: the dropped are added up here.
        let mut stats = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        if linerate_sys::get_opt(
            &self.fd,
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut stats,
        )
        .is_ok()
        {
            self.ring_drops
                .set(self.ring_drops.get() + u64::from(stats.tp_drops));
        }
        LinkCounters {
            rx_dropped: self.ring_drops.get(),
            ..self.counters
        }
    }
}
