//! The packet socket that feeds [`count`] on Linux: a thread per device, in its namespace.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::libc;
use nix::sys::socket::LinkAddr;
use socket2::{Domain, Protocol, SockFilter, Socket, Type};

#[cfg(test)]
use super::{Direction, be16};
use super::{OspfCounts, count, ethernet, ipv4, ipv6, ospf, version};
use crate::RoutingError;

/// Which way a frame a packet socket read went: sent when the kernel says it went out
/// (`PACKET_OUTGOING`) and its source is one of the device's MACs, received when it came in
/// (host, broadcast, multicast, other host) from anyone else. A frame seen twice in one namespace
/// (a veth pair with both ends inside, sibling macvlans on one port) counts once, on its
/// way out, and a frame the socket saw that nobody in the device sent or received counts nowhere.
fn way(pkttype: u8, frame: &[u8], own_macs: &[[u8; 6]]) -> Option<bool> {
    let src = frame.get(ethernet::SRC)?;
    let own = own_macs.iter().any(|mac| mac[..] == *src);
    match pkttype {
        libc::PACKET_OUTGOING if own => Some(true),
        libc::PACKET_HOST
        | libc::PACKET_BROADCAST
        | libc::PACKET_MULTICAST
        | libc::PACKET_OTHERHOST
            if !own =>
        {
            Some(false)
        }
        _ => None,
    }
}

/// A classic BPF instruction as `struct sock_filter` has it: code, jump if true, jump if false,
/// constant.
type Insn = (u16, u8, u8, u32);

/// The socket's filter: IPv4 protocol 89 and IPv6 next header 89, untagged or under one 802.1Q
/// tag (a tag the driver took out of the frame is not in what the filter sees either).
fn ospf_filter() -> [Insn; 17] {
    const LDH: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_ABS) as u16;
    const LDB: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    const TYPE: u32 = ethernet::ETHERTYPE.start as u32;
    const TAG: u32 = ethernet::TAG_LEN as u32;
    const V4_PROTO: u32 = (ethernet::HEADER_LEN + ipv4::PROTOCOL) as u32;
    const V6_NEXT: u32 = (ethernet::HEADER_LEN + ipv6::NEXT_HEADER) as u32;
    const IPV4: u32 = ethernet::IPV4 as u32;
    const IPV6: u32 = ethernet::IPV6 as u32;
    const OSPF: u32 = ospf::PROTOCOL as u32;
    // Jumps count the instructions skipped: 15 keeps the frame, 16 drops it.
    [
        /* 0 */ (LDH, 0, 0, TYPE),
        /* 1 */ (JEQ, 0, 2, IPV4),
        /* 2 */ (LDB, 0, 0, V4_PROTO),
        /* 3 */ (JEQ, 11, 12, OSPF),
        /* 4 */ (JEQ, 0, 2, IPV6),
        /* 5 */ (LDB, 0, 0, V6_NEXT),
        /* 6 */ (JEQ, 8, 9, OSPF),
        /* 7 */ (JEQ, 0, 8, ethernet::VLAN as u32),
        /* 8 */ (LDH, 0, 0, TYPE + TAG),
        /* 9 */ (JEQ, 0, 2, IPV4),
        /* 10 */ (LDB, 0, 0, V4_PROTO + TAG),
        /* 11 */ (JEQ, 3, 4, OSPF),
        /* 12 */ (JEQ, 0, 3, IPV6),
        /* 13 */ (LDB, 0, 0, V6_NEXT + TAG),
        /* 14 */ (JEQ, 0, 1, OSPF),
        /* 15 */ (RET, 0, 0, 0x0004_0000),
        /* 16 */ (RET, 0, 0, 0),
    ]
}

/// How long a read waits before the thread looks at its stop flag.
const READ_TIMEOUT: Duration = Duration::from_millis(100);
/// Room for the LS update floods of a protocol start while the thread is busy.
const RECV_BUFFER: usize = 4 << 20;
/// Any frame up to the largest MTU, tagged.
const FRAME_ROOM: usize = 65536 + ethernet::HEADER_LEN + ethernet::TAG_LEN;

/// A thread counting the OSPF frames on the links of one device's namespace, sent and received.
/// Dropping it stops and joins the thread.
#[derive(Debug)]
pub struct WireCounter {
    /// OSPFv2's and OSPFv3's.
    counts: Arc<Mutex<[OspfCounts; 2]>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl WireCounter {
    /// Opens an AF_PACKET socket for every protocol inside `netns` (it stays in that namespace
    /// after the opening thread leaves it), keeps only OSPF frames with a socket filter, and
    /// counts what it reads on a thread of its own. `own_macs` are the MACs of the device's
    /// interfaces: what they send is `sent`, what anyone else sends them is `received`; the
    /// loopback's frames are not counted.
    pub fn start(netns: &str, own_macs: Vec<[u8; 6]>) -> Result<WireCounter, RoutingError> {
        let what = format!("opening a packet socket for OSPF in network namespace {netns}");
        let socket = linerate_lab::device::within(netns, || Ok(open_socket()))?
            .map_err(|source| RoutingError::Io { what, source })?;
        let counts = Arc::new(Mutex::new([OspfCounts::default(); 2]));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (counts, stop, name) = (counts.clone(), stop.clone(), netns.to_owned());
            std::thread::Builder::new()
                .name(format!("ospf-wire-{netns}"))
                .spawn(move || read_frames(&socket, &own_macs, &counts, &stop, &name))
                .map_err(|source| RoutingError::Io {
                    what: format!("starting the OSPF counter of network namespace {netns}"),
                    source,
                })?
        };
        Ok(WireCounter {
            counts,
            stop,
            thread: Some(thread),
        })
    }

    /// What was counted so far of OSPF `version` (2 or 3).
    pub fn counts(&self, version: u8) -> OspfCounts {
        let i = usize::from(version == 3);
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)[i]
    }

    /// Zeroes the counts (protocols restarted).
    pub fn reset(&self) {
        *self.counts.lock().unwrap_or_else(PoisonError::into_inner) = [OspfCounts::default(); 2];
    }
}

impl Drop for WireCounter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// An AF_PACKET socket for every protocol in the caller's namespace, bound to no interface,
/// with the OSPF filter, a read timeout and a large receive buffer. Frames that arrive before
/// the filter is attached are read too; [`count`] ignores what is not OSPF.
fn open_socket() -> std::io::Result<Socket> {
    let all = i32::from((libc::ETH_P_ALL as u16).to_be());
    let socket = Socket::new(Domain::PACKET, Type::RAW, Some(Protocol::from(all)))?;
    let filter: Vec<SockFilter> = ospf_filter()
        .iter()
        .map(|&(code, jt, jf, k)| SockFilter::new(code, jt, jf, k))
        .collect();
    socket.attach_filter(&filter)?;
    socket.set_read_timeout(Some(READ_TIMEOUT))?;
    socket.set_recv_buffer_size(RECV_BUFFER)?;
    Ok(socket)
}

/// The counter's thread: reads until `stop`, or until the socket fails (said on stderr).
fn read_frames(
    socket: &Socket,
    own_macs: &[[u8; 6]],
    counts: &Mutex<[OspfCounts; 2]>,
    stop: &AtomicBool,
    netns: &str,
) {
    use nix::errno::Errno;
    let mut buf = vec![0u8; FRAME_ROOM];
    while !stop.load(Ordering::Relaxed) {
        match nix::sys::socket::recvfrom::<LinkAddr>(socket.as_raw_fd(), &mut buf) {
            Ok((len, Some(from))) => {
                if from.hatype() == libc::ARPHRD_LOOPBACK {
                    continue;
                }
                let frame = &buf[..len.min(buf.len())];
                if let (Some(sent), Some(v)) =
                    (way(from.pkttype(), frame, own_macs), version(frame))
                {
                    let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
                    count(frame, sent, &mut counts[usize::from(v == 3)]);
                }
            }
            Ok((_, None)) | Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(e) => {
                eprintln!("linerate-routing: the OSPF counter of {netns} stopped: {e}");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tests::*;

    #[test]
    fn a_frame_seen_twice_counts_once() {
        use libc::{PACKET_HOST, PACKET_LOOPBACK, PACKET_MULTICAST, PACKET_OUTGOING};
        let own = [OWN];
        let ours = ethernet(OWN, None, ethernet::IPV4, &[]);
        let theirs = ethernet(PEER, None, ethernet::IPV4, &[]);
        assert_eq!(way(PACKET_OUTGOING, &ours, &own), Some(true));
        assert_eq!(way(PACKET_MULTICAST, &ours, &own), None);
        assert_eq!(way(PACKET_MULTICAST, &theirs, &own), Some(false));
        assert_eq!(way(PACKET_HOST, &theirs, &own), Some(false));
        assert_eq!(way(PACKET_OUTGOING, &theirs, &own), None);
        assert_eq!(way(PACKET_LOOPBACK, &theirs, &own), None);
        assert_eq!(way(PACKET_OUTGOING, &ours[..10], &own), None);
    }

    /// Runs the filter program as the kernel would on `frame`: the bytes it keeps.
    fn run_filter(frame: &[u8]) -> u32 {
        let program = ospf_filter();
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let (code, jt, jf, k) = program[pc];
            let at = k as usize;
            pc += 1;
            match code {
                0x28 => match be16(frame, at..at + 2) {
                    Some(v) => acc = u32::from(v),
                    None => return 0,
                },
                0x30 => match frame.get(at) {
                    Some(&v) => acc = u32::from(v),
                    None => return 0,
                },
                0x15 => pc += usize::from(if acc == k { jt } else { jf }),
                0x06 => return k,
                _ => panic!("unexpected instruction {code:#x}"),
            }
        }
    }

    #[test]
    fn the_socket_filter_keeps_ospf_and_only_ospf() {
        let hello4 = ipv4(89, &ospf_packet(2, 1, &hello_v2()));
        let hello6 = ipv6(89, &ospf_packet(3, 1, &[0; 20]));
        for vlan in [None, Some(9)] {
            let keep = [
                ethernet(OWN, vlan, ethernet::IPV4, &hello4),
                ethernet(OWN, vlan, ethernet::IPV6, &hello6),
            ];
            for frame in &keep {
                assert_ne!(run_filter(frame), 0, "{frame:02x?}");
            }
            let drop = [
                ethernet(OWN, vlan, ethernet::IPV4, &ipv4(17, &[0; 8])),
                ethernet(OWN, vlan, ethernet::IPV6, &ipv6(58, &[0; 8])),
                ethernet(OWN, vlan, 0x0806, &[0; 28]),
                ethernet(OWN, vlan, ethernet::IPV4, &[]),
            ];
            for frame in &drop {
                assert_eq!(run_filter(frame), 0, "{frame:02x?}");
            }
        }
        assert_eq!(run_filter(&[]), 0);
    }

    /// A namespace of a test's own, deleted on drop, pass or fail.
    struct Netns(String);

    impl Drop for Netns {
        fn drop(&mut self) {
            if let Err(e) = linerate_lab::device::del_netns(&self.0) {
                eprintln!("deleting network namespace {}: {e}", self.0);
            }
        }
    }

    fn ip(args: &[&str]) {
        let status = std::process::Command::new("ip").args(args).status();
        assert!(status.is_ok_and(|s| s.success()), "ip {args:?}");
    }

    /// A packet socket in `netns` that sends out of `iface` only.
    fn sender(netns: &str, iface: &str) -> Socket {
        let iface = iface.to_owned();
        linerate_lab::device::within(netns, move || {
            let index = nix::net::if_::if_nametoindex(iface.as_str()).expect("sender's index");
            let fd = linerate_sys::packet_socket(index, 0).expect("a bound packet socket");
            Ok(Socket::from(fd))
        })
        .expect("enter the namespace")
    }

    #[test]
    fn a_counter_in_a_namespace_counts_each_hello_once_each_way() {
        if !linerate_lab::root_or_skip("a_counter_in_a_namespace_counts_each_hello_once_each_way") {
            return;
        }
        let ns = Netns(linerate_lab::unique_name("wire"));
        linerate_lab::device::add_netns(&ns.0).expect("add the namespace");
        ip(&[
            "-n",
            &ns.0,
            "link",
            "add",
            "wa",
            "address",
            "02:00:00:00:00:01",
            "type",
            "veth",
            "peer",
            "name",
            "wb",
            "address",
            "02:00:00:00:00:02",
        ]);
        for end in ["wa", "wb"] {
            ip(&["-n", &ns.0, "link", "set", end, "up"]);
        }
        ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
        let counter = WireCounter::start(&ns.0, vec![OWN]).expect("start the counter");
        let hello = ospf_packet(2, 1, &hello_v2());
        // Ours out of wa, the peer's out of wb into wa; each is seen on both ends, and a UDP
        // frame that the filter drops goes with them.
        sender(&ns.0, "wa")
            .send(&ethernet(OWN, None, ethernet::IPV4, &ipv4(89, &hello)))
            .expect("send ours");
        sender(&ns.0, "wb")
            .send(&ethernet(PEER, None, ethernet::IPV4, &ipv4(89, &hello)))
            .expect("send the peer's");
        sender(&ns.0, "wa")
            .send(&ethernet(OWN, None, ethernet::IPV4, &ipv4(17, &[0; 16])))
            .expect("send a UDP frame");
        let want = |c: &OspfCounts| c.sent.hellos == 1 && c.received.hellos == 1;
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while !want(&counter.counts(2)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Past the point both arrived, a second copy of either would have had time to count.
        std::thread::sleep(Duration::from_millis(200));
        let hello = Direction {
            hellos: 1,
            ..Direction::default()
        };
        assert_eq!(
            counter.counts(2),
            OspfCounts {
                sent: hello,
                received: hello
            }
        );
        counter.reset();
        assert_eq!(counter.counts(2), OspfCounts::default());
        drop(counter);
    }
}
