//! The port a stateful end runs on, on Linux: an AF_PACKET socket bound to the interface (in
//! the namespace it lives in), frames read and written one at a time into buffers made once.
//! The host's own frames on a shared interface are skipped (`PACKET_IGNORE_OUTGOING`, and
//! [`Addresses::accepts`] for what it receives).

use std::os::fd::OwnedFd;
use std::time::Duration;

use smoltcp::phy::{Device, DeviceCapabilities, Medium};

use crate::stack::{Link, LinkCounters};
use crate::{Addresses, StatefulError};

/// The largest frame read whole: a 1500-byte MTU's, VLAN tag and all. A larger one (a device
/// that hands up GRO aggregates) is counted as oversize and dropped.
const FRAME: usize = 1522;

/// An AF_PACKET socket on one interface.
#[derive(Debug)]
pub struct PacketLink {
    fd: OwnedFd,
    addresses: Addresses,
    rx: Vec<u8>,
    rx_len: usize,
    /// Whether `rx` holds a frame read (by a peek) and not yet handed up.
    held: bool,
    tx: Vec<u8>,
    counters: LinkCounters,
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
        Ok(PacketLink {
            fd,
            addresses,
            rx: vec![0; FRAME],
            rx_len: 0,
            held: false,
            tx: vec![0; FRAME],
            counters: LinkCounters::default(),
        })
    }

    /// Reads frames until one is the end's; false when none waits.
    fn next_frame(&mut self) -> bool {
        if self.held {
            return true;
        }
        loop {
            match linerate_sys::recv_frame(&self.fd, &mut self.rx) {
                Ok(n) if n > self.rx.len() => self.counters.rx_oversize += 1,
                Ok(n) if self.addresses.accepts(&self.rx[..n]) => {
                    self.counters.rx_frames += 1;
                    self.rx_len = n;
                    self.held = true;
                    return true;
                }
                Ok(_) => self.counters.rx_ignored += 1,
                Err(_) => return false,
            }
        }
    }
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
    // SAFETY: sockaddr_ll is plain integers; all-zero is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = proto;
    addr.sll_ifindex = ifindex as i32;
    linerate_sys::bind(&fd, &addr).map_err(StatefulError::io(format!("binding to {iface}")))?;
    Ok(fd)
}

/// The frame just read.
#[derive(Debug)]
pub struct Rx<'a>(&'a [u8]);

/// Room for one frame to send.
#[derive(Debug)]
pub struct Tx<'a> {
    fd: &'a OwnedFd,
    buf: &'a mut [u8],
    counters: &'a mut LinkCounters,
}

impl smoltcp::phy::RxToken for Rx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0)
    }
}

impl smoltcp::phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let frame = &mut self.buf[..len];
        let r = f(frame);
        match linerate_sys::send_frame(self.fd, frame) {
            Ok(_) => self.counters.tx_frames += 1,
            Err(_) => self.counters.tx_dropped += 1,
        }
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
        Some((
            Rx(&self.rx[..self.rx_len]),
            Tx {
                fd: &self.fd,
                buf: &mut self.tx,
                counters: &mut self.counters,
            },
        ))
    }

    fn transmit(&mut self, _: smoltcp::time::Instant) -> Option<Self::TxToken<'_>> {
        Some(Tx {
            fd: &self.fd,
            buf: &mut self.tx,
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
        if self.held {
            return Ok(());
        }
        linerate_sys::wait_readable(&self.fd, timeout)
            .map(|_| ())
            .map_err(StatefulError::io("waiting for a frame"))
    }

    fn peek(&mut self) -> Option<&[u8]> {
        self.next_frame().then(|| &self.rx[..self.rx_len])
    }

    fn counters(&self) -> LinkCounters {
        self.counters
    }
}
