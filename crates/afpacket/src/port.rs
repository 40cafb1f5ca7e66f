//! `AfPacketPort`: an interface opened for AF_PACKET transmission, and the socket setup that
//! turns a `QueueConfig` into a queue with its TX ring.

use std::io;
use std::os::fd::OwnedFd;

use linerate_port::iface::Interface;
use linerate_port::{Port, PortError, PortInfo, QueueConfig, TxQueue};

use crate::AfPacketError;
use crate::queue::{AfPacketQueue, QueueParts};
pub use crate::ring::TpacketVersion;
use crate::ring::{self, Layout, TxRing};
use crate::sys;

/// How `AfPacketPort` sets up its sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfPacketOptions {
    pub version: TpacketVersion,
    /// `PACKET_QDISC_BYPASS`: hand frames straight to the driver, as trafgen does. Without it,
    /// frames pass the interface's qdisc (which shapes or drops as configured).
    pub qdisc_bypass: bool,
}

impl Default for AfPacketOptions {
    fn default() -> Self {
        Self {
            version: TpacketVersion::default(),
            qdisc_bypass: true,
        }
    }
}

/// Ring frames a queue asks for. A kick sends every marked frame before it returns, and on
/// virtual devices frames complete within it, so a few batches in flight keep the ring fed; a
/// NIC completes from its interrupt, and 512 frames cover a typical TX ring of 512 descriptors
/// while the ring (64 KiB at 64 B) stays in cache.
const RING_FRAMES: u32 = 512;

/// The socket's send buffer per ring frame: each frame in flight holds an skb charged to it,
/// and a full buffer stops a kick early (EAGAIN) while the ring still has frames to send.
const SNDBUF_PER_FRAME: u32 = 2048;

/// An interface opened for AF_PACKET transmission. Sockets are not tied to a queue: the kernel
/// picks the device queue from the sending CPU (XPS), so each worker's socket lands on its own
/// queue when the workers are pinned to distinct cores.
#[derive(Debug)]
pub struct AfPacketPort {
    info: PortInfo,
    ifindex: u32,
    options: AfPacketOptions,
    /// Rings carry a `virtio_net_hdr` so the kernel copies each frame whole (`ring`): on a
    /// virtual Ethernet device (veth, VLAN, bond, dummy), whose forwarding would otherwise copy
    /// the ring page's fragment into a fresh page. A NIC's driver maps the fragment for DMA as it
    /// is, so a physical device keeps the kernel's zero-copy split.
    whole_frames: bool,
}

impl AfPacketPort {
    /// Opens `iface`: checks that it exists and is up, and that this process may open a packet
    /// socket (CAP_NET_RAW), so that a run fails before it starts.
    pub fn open(iface: &str, options: AfPacketOptions) -> Result<AfPacketPort, AfPacketError> {
        let description =
            Interface::read(iface).map_err(|_| PortError::NoSuchInterface(iface.into()))?;
        if !description.up {
            return Err(PortError::InterfaceDown {
                iface: description.name,
            }
            .into());
        }
        sys::packet_socket().map_err(|e| socket_error(iface, e))?;
        Ok(AfPacketPort {
            info: description.port_info("afpacket", description.tx_queues.max(1)),
            ifindex: description.ifindex,
            options,
            whole_frames: description.virtual_device && description.ethernet,
        })
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn options(&self) -> &AfPacketOptions {
        &self.options
    }

    /// The mode a queue reports: ring version and whether frames skip the qdisc.
    pub fn mode(&self) -> String {
        format!(
            "{} {}",
            self.options.version.name(),
            if self.options.qdisc_bypass {
                "qdisc-bypass"
            } else {
                "qdisc"
            }
        )
    }

    /// Opens one queue as the concrete type (see [`Port::open_queue`] for the boxed one).
    pub fn open_packet_queue(&self, config: &QueueConfig) -> Result<AfPacketQueue, AfPacketError> {
        let name = &self.info.name;
        let version = self.options.version;
        // Other link types keep the kernel's own split, whose header length only it knows.
        let vnet = self.whole_frames;
        let prefix = if vnet { ring::VNET_HDR_LEN } else { 0 };
        let min_frame = version
            .data_offset()
            .checked_add(prefix)
            .and_then(|n| n.checked_add(config.slot_size))
            .ok_or_else(|| AfPacketError::Config(format!("slot of {} bytes", config.slot_size)))?;
        let layout =
            Layout::for_frames(config.slots, min_frame, ring::page()).ok_or_else(|| {
                AfPacketError::Config(format!(
                    "no TX ring holds {} frames of {} bytes",
                    config.slots, config.slot_size
                ))
            })?;
        let fd = sys::packet_socket().map_err(|e| socket_error(name, e))?;
        let step = |what: &str, e: io::Error| {
            AfPacketError::io(
                format!("{what} on AF_PACKET {name} queue {}", config.queue_id),
                e,
            )
        };
        sys::set_opt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &version.kernel_value(),
        )
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) => AfPacketError::Config(format!(
                "this kernel has no {} TX ring: use the default ring version",
                version.name()
            )),
            _ => step("PACKET_VERSION", e),
        })?;
        if self.options.qdisc_bypass {
            let on: libc::c_int = 1;
            sys::set_opt(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &on)
                .map_err(|e| step("PACKET_QDISC_BYPASS", e))?;
        }
        if vnet {
            let on: libc::c_int = 1;
            sys::set_opt(&fd, libc::SOL_PACKET, libc::PACKET_VNET_HDR, &on)
                .map_err(|e| step("PACKET_VNET_HDR", e))?;
        }
        set_send_buffer(&fd, config.slots);
        let ring = TxRing::new(&fd, version, layout, vnet).map_err(|e| {
            step(
                &format!(
                    "mapping a TX ring of {} frames of {} bytes",
                    layout.frames, layout.frame_size
                ),
                e,
            )
        })?;
        sys::bind_packet(&fd, self.ifindex).map_err(|e| match e.raw_os_error() {
            Some(libc::ENODEV | libc::ENXIO) => PortError::NoSuchInterface(name.clone()).into(),
            Some(libc::ENETDOWN) => PortError::InterfaceDown {
                iface: name.clone(),
            }
            .into(),
            Some(libc::EPERM | libc::EACCES) => AfPacketError::NotPermitted {
                iface: name.clone(),
            },
            _ => step("binding", e),
        })?;
        Ok(AfPacketQueue::new(QueueParts {
            ring,
            fd,
            max_len: if vnet {
                self.info.mtu.saturating_add(ETH_HLEN)
            } else {
                u32::MAX
            },
            mode: self.mode(),
            iface: name.clone(),
            queue_id: config.queue_id,
        }))
    }
}

impl Port for AfPacketPort {
    fn info(&self) -> &PortInfo {
        &self.info
    }

    fn min_slots(&self) -> u32 {
        RING_FRAMES
    }

    fn open_queue(&self, config: &QueueConfig) -> Result<Box<dyn TxQueue>, PortError> {
        Ok(Box::new(self.open_packet_queue(config)?))
    }
}

/// The Ethernet header the kernel adds to the MTU for a frame's longest length.
const ETH_HLEN: u32 = 14;

fn socket_error(iface: &str, e: io::Error) -> AfPacketError {
    match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => AfPacketError::NotPermitted {
            iface: iface.into(),
        },
        Some(libc::EAFNOSUPPORT) => AfPacketError::NoAfPacket,
        _ => AfPacketError::io(format!("opening an AF_PACKET socket for {iface}"), e),
    }
}

/// Room in the send buffer for every ring frame in flight. SO_SNDBUFFORCE passes the
/// `wmem_max` cap with CAP_NET_ADMIN; without it SO_SNDBUF gets what the cap allows, which only
/// makes kicks stop early more often.
fn set_send_buffer(fd: &OwnedFd, frames: u32) {
    let bytes = frames.saturating_mul(SNDBUF_PER_FRAME).min(i32::MAX as u32) as libc::c_int;
    if sys::set_opt(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &bytes).is_err() {
        let _ = sys::set_opt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_hostile_names_are_no_interface() {
        for name in ["", "..", "a/b", "no-such-if-xyz", "0123456789abcdefg"] {
            assert!(matches!(
                AfPacketPort::open(name, AfPacketOptions::default()),
                Err(AfPacketError::Port(PortError::NoSuchInterface(_)))
            ));
        }
    }

    #[test]
    fn the_mode_names_ring_and_qdisc() {
        let port = AfPacketPort {
            info: Interface::read("lo").unwrap().port_info("afpacket", 1),
            ifindex: 1,
            options: AfPacketOptions::default(),
            whole_frames: false,
        };
        assert_eq!(port.mode(), "tpacket_v2 qdisc-bypass");
        let port = AfPacketPort {
            options: AfPacketOptions {
                version: TpacketVersion::V3,
                qdisc_bypass: false,
            },
            ..port
        };
        assert_eq!(port.mode(), "tpacket_v3 qdisc");
    }
}
