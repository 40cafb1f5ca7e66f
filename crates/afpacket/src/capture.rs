//! A receive socket for `linerate serve`'s port captures: every frame the interface receives,
//! VLAN tags put back where the stack took them out.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use linerate_port::PortError;

use crate::AfPacketError;

/// How long one [`CaptureSocket::next`] waits, so that its caller sees a stop flag that often.
pub const CAPTURE_WAKE: Duration = Duration::from_millis(100);

/// The socket's receive queue in bytes (the kernel doubles it for its bookkeeping).
pub const CAPTURE_QUEUE: usize = 64 << 20;

/// An AF_PACKET socket bound to one interface for every protocol. It keeps the network
/// namespace it was opened in, whichever thread reads it.
#[derive(Debug)]
pub struct CaptureSocket {
    fd: OwnedFd,
    iface: String,
}

impl CaptureSocket {
    /// Opens the capture of `iface` in the caller's network namespace.
    pub fn open(iface: &str) -> Result<Self, AfPacketError> {
        let io = |what: &str| {
            let context = format!("capture socket on {iface}: {what}");
            move |e| AfPacketError::io(context, e)
        };
        let ifindex =
            linerate_sys::if_index(iface).map_err(|_| PortError::NoSuchInterface(iface.into()))?;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        let fd =
            linerate_sys::raw_socket(libc::AF_PACKET, i32::from(proto)).map_err(|e| {
                match e.raw_os_error() {
                    Some(libc::EPERM | libc::EACCES) => AfPacketError::NotPermitted {
                        iface: iface.into(),
                    },
                    Some(libc::EAFNOSUPPORT) => AfPacketError::NoAfPacket,
                    _ => AfPacketError::io(format!("capture socket on {iface}"), e),
                }
            })?;
        // SAFETY: sockaddr_ll is plain integers; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = proto;
        addr.sll_ifindex = ifindex as i32;
        linerate_sys::bind(&fd, &addr).map_err(io("bind"))?;
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: CAPTURE_WAKE.as_micros() as libc::suseconds_t,
        };
        linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout)
            .map_err(io("SO_RCVTIMEO"))?;
        // The default queue (rmem_default, 208 KiB: some 500 frames as the stack accounts them)
        // overflows within a millisecond at 150 kpps whenever the reading thread is late; a
        // queue of CAPTURE_QUEUE rides out tens of milliseconds, as libpcap's ring does. Its
        // memory is taken only while frames wait. Without CAP_NET_ADMIN the FORCE variant is
        // refused: the ceiling rmem_max allows is taken instead.
        let queue = CAPTURE_QUEUE as libc::c_int;
        if linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &queue).is_err() {
            linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &queue)
                .map_err(io("SO_RCVBUF"))?;
        }
        // The stack takes a VLAN tag out of the frame into the skb (veth offloads it): the
        // auxiliary data gives it back, and the capture puts it back in place, as libpcap does.
        linerate_sys::set_opt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_AUXDATA,
            &1 as &libc::c_int,
        )
        .map_err(io("PACKET_AUXDATA"))?;
        Ok(Self {
            fd,
            iface: iface.into(),
        })
    }

    /// The next frame the interface received, read into `buf` and returned whole (its VLAN tag
    /// restored); `None` when [`CAPTURE_WAKE`] passed without one, a signal broke the wait, or
    /// the frame was one the host sent. Any other error ends the capture.
    pub fn next(&self, buf: &mut [u8]) -> Result<Option<Vec<u8>>, AfPacketError> {
        let got = match linerate_sys::recv_packet(&self.fd, buf) {
            Ok(got) => got,
            Err(e) if is_transient(&e) => return Ok(None),
            Err(e) => return Err(AfPacketError::io(format!("capture on {}", self.iface), e)),
        };
        // What the port received, not what it sent.
        if got.pkttype == libc::PACKET_OUTGOING {
            return Ok(None);
        }
        Ok(Some(restore_vlan(&buf[..got.len], got.vlan)))
    }
}

/// A receive timeout (`EAGAIN`/`EWOULDBLOCK`) or a signal (`EINTR`): try again.
pub fn is_transient(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR))
        || e.raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// `frame` with the 802.1Q tag `(tpid, tci)` put back after the two MAC addresses.
pub fn restore_vlan(frame: &[u8], vlan: Option<(u16, u16)>) -> Vec<u8> {
    match vlan {
        Some((tpid, tci)) if frame.len() >= 12 => {
            let mut out = Vec::with_capacity(frame.len() + 4);
            out.extend_from_slice(&frame[..12]);
            out.extend_from_slice(&tpid.to_be_bytes());
            out.extend_from_slice(&tci.to_be_bytes());
            out.extend_from_slice(&frame[12..]);
            out
        }
        _ => frame.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vlan_tag_goes_back_after_the_addresses() {
        let frame: Vec<u8> = (0..20).collect();
        let out = restore_vlan(&frame, Some((0x8100, 0x2064)));
        assert_eq!(&out[..12], &frame[..12]);
        assert_eq!(&out[12..16], &[0x81, 0x00, 0x20, 0x64]);
        assert_eq!(&out[16..], &frame[12..]);
        assert_eq!(restore_vlan(&frame, None), frame);
    }

    #[test]
    fn only_timeouts_and_signals_are_transient() {
        for errno in [libc::EAGAIN, libc::EWOULDBLOCK, libc::EINTR] {
            assert!(
                is_transient(&io::Error::from_raw_os_error(errno)),
                "{errno}"
            );
        }
        for errno in [libc::ENETDOWN, libc::EBADF, libc::ENOBUFS] {
            assert!(
                !is_transient(&io::Error::from_raw_os_error(errno)),
                "{errno}"
            );
        }
    }

    #[test]
    fn an_unknown_interface_is_named() {
        let e = CaptureSocket::open("lr-no-such-if").unwrap_err();
        assert!(
            matches!(e, AfPacketError::Port(PortError::NoSuchInterface(ref i)) if i == "lr-no-such-if"),
            "{e}"
        );
    }
}
