//! Shared by the root tests: the root guard, a raw frame sender and a counter wait.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use linerate_lab::{Lab, SinkCounters};

pub use linerate_lab::root_or_skip;

/// An AF_PACKET socket bound to one interface of the caller's namespace, for raw Ethernet frames.
pub struct RawSender {
    fd: std::os::fd::OwnedFd,
}

impl RawSender {
    pub fn bind(iface: &str) -> RawSender {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let ifindex = linerate_xdp::ifindex(iface).expect("sender interface");
        // SAFETY: plain socket(2); the result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        assert!(
            raw >= 0,
            "socket(AF_PACKET): {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: raw is a fresh fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_ll is plain integers; all zeroes is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = ifindex as i32;
        // Protocol 0: this socket receives nothing, it only sends.
        // SAFETY: addr is a valid sockaddr_ll and the length passed is its size.
        let ret = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(
            ret,
            0,
            "bind(AF_PACKET, {iface}): {}",
            std::io::Error::last_os_error()
        );
        RawSender { fd }
    }

    pub fn send(&self, frame: &[u8]) {
        use std::os::fd::AsRawFd;
        // SAFETY: frame is a valid buffer of frame.len() bytes for the duration of the call.
        let sent =
            unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        assert_eq!(
            sent,
            frame.len() as isize,
            "send: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// An Ethernet frame from the lab's sender to its receiver, `len` bytes without FCS, EtherType
/// 0x88b5 (local experimental), the payload counting up.
pub fn frame(lab: &Lab, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&lab.receiver_mac);
    f.extend_from_slice(&lab.sender_mac);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.extend((0..len - 14).map(|i| i as u8));
    f
}

/// Sends `count` copies of `frame`, in batches that wait for the sink to count them, so no
/// batch outruns the veth ring; returns the counters expected afterwards.
pub fn send_counted(lab: &Lab, sender: &RawSender, frame: &[u8], count: u64) -> SinkCounters {
    let mut expected = lab.sink_counters().expect("counters");
    let mut left = count;
    while left > 0 {
        let batch = left.min(64);
        for _ in 0..batch {
            sender.send(frame);
        }
        left -= batch;
        expected.packets += batch;
        expected.bytes += batch * frame.len() as u64;
        wait_for(lab, expected);
    }
    expected
}

/// Waits until the sink's packet count reaches `expected` (5 s at most), then returns what it
/// counted.
pub fn wait_for(lab: &Lab, expected: SinkCounters) -> SinkCounters {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = lab.sink_counters().expect("counters");
        if now.packets >= expected.packets || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
