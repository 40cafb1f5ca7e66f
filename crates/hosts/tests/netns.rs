//! Emulated hosts against a real kernel: a veth pair between two network namespaces, the host
//! program on one end, kernel addresses on the other. The kernel must ping the hosts and learn
//! them as neighbours the ordinary way (not permanent entries), and the hosts must resolve the
//! kernel's addresses. The VLAN host meets a neighbour played on a packet socket, which needs no
//! 802.1Q in the kernel. Needs root; with CI=true a non-root run fails.
#![cfg(target_os = "linux")]

use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;
use std::time::{Duration, Instant};

use etherparse::{ArpOperation, Icmpv4Type, Icmpv6Type, NetSlice, SlicedPacket, TransportSlice};
use linerate_hosts::{
    Host, HostError, HostProgram, Ipv4Iface, Ipv6Iface, MacAddr, answer_mode, frames, resolve,
};
use linerate_xdp::AttachMode;

const VLAN: u16 = 100;

/// Two namespaces joined by a veth pair: `port` in `ns` (the hosts' side), `peer` in `peer_ns`
/// with addresses. Removed on drop, also when a test panics.
struct Net {
    ns: String,
    peer_ns: String,
    port: String,
    peer: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ip_out(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(out.status.success(), "ip {}", args.join(" "));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Net {
    fn up() -> Net {
        let name = linerate_lab::unique_name("hst");
        let net = Net {
            ns: format!("{name}a"),
            peer_ns: format!("{name}b"),
            port: format!("{name}p"),
            peer: format!("{name}q"),
        };
        ip(&["netns", "add", &net.ns]);
        ip(&["netns", "add", &net.peer_ns]);
        #[rustfmt::skip]
        ip(&["link", "add", &net.port, "netns", &net.ns, "type", "veth", "peer", "name", &net.peer, "netns", &net.peer_ns]);
        let (ns, pns) = (net.ns.as_str(), net.peer_ns.as_str());
        ip(&["-n", ns, "link", "set", &net.port, "up"]);
        ip(&["-n", pns, "link", "set", &net.peer, "up"]);
        ip(&["-n", pns, "addr", "add", "198.18.0.1/24", "dev", &net.peer]);
        ip(&[
            "-n",
            pns,
            "addr",
            "add",
            "2001:2::1/64",
            "dev",
            &net.peer,
            "nodad",
        ]);
        net
    }

    fn peer_mac(&self) -> MacAddr {
        let out = ip_out(&["-n", &self.peer_ns, "-br", "link", "show", &self.peer]);
        let mac = out
            .split_whitespace()
            .nth(2)
            .expect("ip -br link: name state mac");
        let octets: Vec<u8> = mac
            .split(':')
            .map(|o| u8::from_str_radix(o, 16).unwrap())
            .collect();
        octets.try_into().unwrap()
    }

    /// The peer kernel's neighbour entry for `addr`: (lladdr, state), if any.
    fn neighbour(&self, addr: IpAddr) -> Option<(String, String)> {
        let out = ip_out(&["-n", &self.peer_ns, "neigh", "show", &addr.to_string()]);
        let line = out.lines().next()?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let lladdr = words.iter().position(|w| *w == "lladdr")?;
        Some((words[lladdr + 1].to_owned(), words.last()?.to_string()))
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // Deleting a namespace deletes the interfaces in it, the veth pair's both ends with it.
        for ns in [&self.ns, &self.peer_ns] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn hosts() -> Vec<Host> {
    vec![
        Host {
            name: "h1".into(),
            mac: [0x02, 0x4c, 0x52, 0, 0, 0x10],
            vlan: None,
            ipv4: Some(Ipv4Iface {
                addr: Ipv4Addr::new(198, 18, 0, 10),
                prefix: 24,
                gateway: Some(Ipv4Addr::new(198, 18, 0, 1)),
            }),
            ipv6: Some(Ipv6Iface {
                addr: "2001:2::10".parse().unwrap(),
                prefix: 64,
                gateway: Some("2001:2::1".parse().unwrap()),
            }),
        },
        Host {
            name: "h2".into(),
            mac: [0x02, 0x4c, 0x52, 0, 0, 0x20],
            vlan: Some(VLAN),
            ipv4: Some(Ipv4Iface {
                addr: Ipv4Addr::new(198, 18, 100, 10),
                prefix: 24,
                gateway: Some(Ipv4Addr::new(198, 18, 100, 1)),
            }),
            ipv6: Some(Ipv6Iface {
                addr: "2001:2:100::10".parse().unwrap(),
                prefix: 64,
                gateway: None,
            }),
        },
    ]
}

fn attach(net: &Net, hosts: &[Host]) -> HostProgram {
    let program = HostProgram::attach(&net.port, Some(&net.ns)).unwrap();
    for h in hosts {
        program.table().add(h).unwrap();
    }
    program
}

fn fmt_mac(m: &MacAddr) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Echo requests from the peer namespace's kernel to `dst` (a ping socket; the kernel resolves
/// `dst` first, by ARP or ND): how many of `count` came back.
fn ping(net: &Net, dst: IpAddr, count: u16) -> u16 {
    linerate_xdp::in_netns(Some(&net.peer_ns), || Ok(ping::here(dst, count))).unwrap()
}

/// Pings from the peer's kernel to h1's addresses; each must come back, and the kernel must hold
/// the host's MAC as a learned neighbour.
fn kernel_pings(net: &Net, program: &HostProgram, h: &Host) {
    for dst in [h.ipv4.unwrap().addr.into(), h.ipv6.unwrap().addr.into()] {
        assert_eq!(ping(net, dst, 3), 3, "pings to {dst} of {}", h.name);
        let (lladdr, state) = net
            .neighbour(dst)
            .unwrap_or_else(|| panic!("the peer has no neighbour entry for {dst}"));
        assert_eq!(lladdr, fmt_mac(&h.mac), "{dst}");
        assert!(
            ["REACHABLE", "STALE", "DELAY", "PROBE"].contains(&state.as_str()),
            "{dst}: {state}"
        );
    }
    let c = program.table().counters().unwrap();
    assert_eq!(c.echo_replies, 6, "{c:?}");
    assert!(c.arp_replies >= 1 && c.nd_replies >= 1, "{c:?}");
    // The kernel's requests taught the host the peer's addresses.
    let peer = net.peer_mac();
    for addr in ["198.18.0.1", "2001:2::1"] {
        let mac = program
            .table()
            .neighbour(addr.parse().unwrap(), None)
            .unwrap();
        assert_eq!(mac, Some(peer), "{addr}");
    }
}

#[test]
fn the_kernel_pings_the_hosts_and_learns_them_as_neighbours() {
    if !linerate_lab::root_or_skip("the_kernel_pings_the_hosts_and_learns_them_as_neighbours") {
        return;
    }
    let net = Net::up();
    let hosts = hosts();
    // A plain veth peer takes no XDP frames: the answers go the generic way.
    assert_eq!(
        answer_mode(&net.port, Some(&net.ns)).unwrap(),
        AttachMode::Skb
    );
    let program = attach(&net, &hosts);
    kernel_pings(&net, &program, &hosts[0]);
}

#[test]
fn the_hosts_answer_from_the_driver_when_the_peer_takes_xdp_frames() {
    if !linerate_lab::root_or_skip(
        "the_hosts_answer_from_the_driver_when_the_peer_takes_xdp_frames",
    ) {
        return;
    }
    let net = Net::up();
    let hosts = hosts();
    // A receiver on the peer that passes what it does not count: the peer's kernel still sees
    // everything, and its veth now takes XDP frames.
    let config = linerate_rx::RxConfig {
        pass: true,
        ..linerate_rx::RxConfig::default()
    };
    let _rx = linerate_rx::Receiver::attach(&net.peer, Some(&net.peer_ns), AttachMode::Drv, config)
        .unwrap();
    assert_eq!(
        answer_mode(&net.port, Some(&net.ns)).unwrap(),
        AttachMode::Drv
    );
    let program = attach(&net, &hosts);
    kernel_pings(&net, &program, &hosts[0]);
}

#[test]
fn the_hosts_resolve_the_kernels_addresses_and_name_one_nobody_has() {
    if !linerate_lab::root_or_skip(
        "the_hosts_resolve_the_kernels_addresses_and_name_one_nobody_has",
    ) {
        return;
    }
    let net = Net::up();
    let hosts = hosts();
    let program = attach(&net, &hosts);
    let peer = net.peer_mac();
    let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
    let targets = [
        (0, hosts[0].next_hop(ip("203.0.113.7")).unwrap()),
        (0, hosts[0].next_hop(ip("2001:db8::7")).unwrap()),
        (0, hosts[0].next_hop(ip("198.18.0.1")).unwrap()),
    ];
    assert_eq!(targets[0].1, ip("198.18.0.1"));
    assert_eq!(targets[1].1, ip("2001:2::1"));
    let macs = resolve(
        &net.port,
        Some(&net.ns),
        program.table(),
        &hosts,
        &targets,
        Duration::from_secs(3),
    )
    .unwrap();
    assert_eq!(macs, vec![peer; 3]);
    // The kernel learned the host from its requests, as a router learns a host that asks.
    let h = &hosts[0];
    for addr in [h.ipv4.unwrap().addr.into(), h.ipv6.unwrap().addr.into()] {
        let (lladdr, _) = net
            .neighbour(addr)
            .expect("the peer learned the host from its request");
        assert_eq!(lladdr, fmt_mac(&h.mac));
    }

    for missing in [ip("198.18.0.99"), ip("2001:2::99")] {
        let started = Instant::now();
        let err = resolve(
            &net.port,
            Some(&net.ns),
            program.table(),
            &hosts,
            &[(0, ip("198.18.0.1")), (0, missing)],
            Duration::from_secs(1),
        )
        .unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_secs(1) && elapsed < Duration::from_millis(1500),
            "{elapsed:?}"
        );
        match &err {
            HostError::Unresolved { addr, iface, tries } => {
                assert_eq!((*addr, iface.as_str()), (missing, net.port.as_str()));
                assert_eq!(*tries, 2, "sent at 0 and after RETRY (500 ms) within 1 s");
            }
            other => panic!("{other}"),
        }
        assert!(!err.is_usage());
        assert!(err.to_string().contains(&missing.to_string()), "{err}");
    }
}

#[test]
fn an_unknown_port_or_namespace_is_a_usage_error() {
    if !linerate_lab::root_or_skip("an_unknown_port_or_namespace_is_a_usage_error") {
        return;
    }
    let net = Net::up();
    let hosts = hosts();
    let program = attach(&net, &hosts);
    let target = [(0, "198.18.0.1".parse().unwrap())];
    let t = Duration::from_millis(100);
    for (iface, ns) in [
        ("nosuchport0", Some(net.ns.as_str())),
        (net.port.as_str(), Some("nosuchns0")),
    ] {
        let err = resolve(iface, ns, program.table(), &hosts, &target, t).unwrap_err();
        assert!(err.is_usage(), "{err}");
    }
    let err = resolve(
        &net.port,
        Some(&net.ns),
        program.table(),
        &hosts,
        &[(2, target[0].1)],
        t,
    )
    .unwrap_err();
    assert!(
        matches!(err, HostError::NoSuchHost { index: 2, hosts: 2 }),
        "{err}"
    );
    let err = HostProgram::attach(&net.port, Some(&net.ns)).unwrap_err();
    assert!(
        err.is_usage() && err.to_string().contains("already attached"),
        "{err}"
    );
}

/// A ping through the kernel's ICMP sockets (`SOCK_DGRAM`, IPPROTO_ICMP/ICMPV6: the kernel
/// fills the identifier and the checksum), allowed for root by `net.ipv4.ping_group_range`.
mod ping {
    use std::net::IpAddr;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    pub fn here(dst: IpAddr, count: u16) -> u16 {
        std::fs::write("/proc/sys/net/ipv4/ping_group_range", "0 0").expect("ping_group_range");
        let (family, proto, request, reply) = match dst {
            IpAddr::V4(_) => (libc::AF_INET, libc::IPPROTO_ICMP, 8u8, 0u8),
            IpAddr::V6(_) => (libc::AF_INET6, libc::IPPROTO_ICMPV6, 128, 129),
        };
        // SAFETY: socket() takes no pointers; the fd is checked and then owned.
        let fd = unsafe { libc::socket(family, libc::SOCK_DGRAM, proto) };
        assert!(fd >= 0, "ping socket: {}", std::io::Error::last_os_error());
        // SAFETY: fd is fresh and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let timeout = libc::timeval {
            tv_sec: 1,
            tv_usec: 0,
        };
        // SAFETY: timeout is a live timeval and the length passed is its size.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&raw const timeout).cast(),
                size_of::<libc::timeval>() as u32,
            )
        };
        assert_eq!(rc, 0);
        let mut answered = 0;
        for seq in 1..=count {
            let mut msg = vec![request, 0, 0, 0, 0, 0];
            msg.extend_from_slice(&seq.to_be_bytes());
            msg.extend_from_slice(&[0x5a; 56]);
            send_to(&fd, &msg, dst);
            let mut buf = [0u8; 256];
            // SAFETY: buf is live and writable for its length.
            let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n >= 8 && buf[0] == reply && buf[6..8] == seq.to_be_bytes() {
                answered += 1;
            }
        }
        answered
    }

    fn send_to(fd: &OwnedFd, msg: &[u8], dst: IpAddr) {
        let rc = match dst {
            IpAddr::V4(a) => {
                // SAFETY: sockaddr_in is plain integers; zeroes are valid.
                let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                sa.sin_family = libc::AF_INET as u16;
                sa.sin_addr.s_addr = u32::from_ne_bytes(a.octets());
                // SAFETY: msg and sa are live for the call, with their true lengths.
                unsafe {
                    libc::sendto(
                        fd.as_raw_fd(),
                        msg.as_ptr().cast(),
                        msg.len(),
                        0,
                        (&raw const sa).cast(),
                        size_of::<libc::sockaddr_in>() as u32,
                    )
                }
            }
            IpAddr::V6(a) => {
                // SAFETY: sockaddr_in6 is plain integers; zeroes are valid.
                let mut sa: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
                sa.sin6_family = libc::AF_INET6 as u16;
                sa.sin6_addr.s6_addr = a.octets();
                // SAFETY: msg and sa are live for the call, with their true lengths.
                unsafe {
                    libc::sendto(
                        fd.as_raw_fd(),
                        msg.as_ptr().cast(),
                        msg.len(),
                        0,
                        (&raw const sa).cast(),
                        size_of::<libc::sockaddr_in6>() as u32,
                    )
                }
            }
        };
        assert_eq!(
            rc,
            msg.len() as isize,
            "{}",
            std::io::Error::last_os_error()
        );
    }
}

/// A VLAN host, against a neighbour played in user space on the peer's end (this kernel may
/// have no 802.1Q; a packet socket sees the tag either way): tagged requests get tagged answers
/// from the host's MAC, other VLANs get none, and the host resolves the neighbour on its VLAN.
#[test]
fn a_vlan_host_answers_and_resolves_on_its_vlan() {
    if !linerate_lab::root_or_skip("a_vlan_host_answers_and_resolves_on_its_vlan") {
        return;
    }
    let net = Net::up();
    let hosts = hosts();
    let program = attach(&net, &hosts);
    let h2 = &hosts[1];
    let (h2_v4, h2_v6) = (h2.ipv4.unwrap().addr, h2.ipv6.unwrap().addr);
    let wire = wire::Wire::open(&net);
    let vlan = Some(VLAN);

    wire.send(&frames::arp_request(wire::MAC, vlan, wire::V4, h2_v4));
    let reply = wire.expect(
        VLAN,
        |p| matches!(&p.net, Some(NetSlice::Arp(a)) if a.operation() == ArpOperation::REPLY),
    );
    let reply = SlicedPacket::from_ethernet(&reply).unwrap();
    let Some(NetSlice::Arp(arp)) = &reply.net else {
        unreachable!()
    };
    assert_eq!(
        (arp.sender_hw_addr(), arp.sender_protocol_addr()),
        (&h2.mac[..], &h2_v4.octets()[..])
    );
    assert_eq!(arp.target_hw_addr(), wire::MAC);

    wire.send(&frames::neighbour_solicitation(
        wire::MAC,
        vlan,
        wire::V6,
        h2_v6,
    ));
    let na = wire.expect(VLAN, |p| {
        matches!(&p.transport, Some(TransportSlice::Icmpv6(i)) if matches!(i.icmp_type(), Icmpv6Type::NeighborAdvertisement(_)))
    });
    let na = SlicedPacket::from_ethernet(&na).unwrap();
    assert_eq!(
        na.link
            .as_ref()
            .unwrap()
            .to_header()
            .unwrap()
            .ethernet2()
            .unwrap()
            .source,
        h2.mac
    );

    for dst in [IpAddr::V4(h2_v4), IpAddr::V6(h2_v6)] {
        wire.send(&wire::echo_request(vlan, dst, h2.mac));
        wire.expect(VLAN, |p| match &p.transport {
            Some(TransportSlice::Icmpv4(i)) => matches!(i.icmp_type(), Icmpv4Type::EchoReply(_)),
            Some(TransportSlice::Icmpv6(i)) => matches!(i.icmp_type(), Icmpv6Type::EchoReply(_)),
            _ => false,
        });
    }
    let c = program.table().counters().unwrap();
    assert_eq!(
        (c.arp_replies, c.nd_replies, c.echo_replies),
        (1, 1, 2),
        "{c:?}"
    );

    // The host is on VLAN 100 only: untagged and VLAN 101 requests for its address go unanswered.
    wire.send(&frames::arp_request(wire::MAC, None, wire::V4, h2_v4));
    wire.send(&frames::arp_request(
        wire::MAC,
        Some(VLAN + 1),
        wire::V4,
        h2_v4,
    ));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(program.table().counters().unwrap().arp_replies, 1);

    let stop = std::sync::atomic::AtomicBool::new(false);
    let macs = std::thread::scope(|scope| {
        scope.spawn(|| wire.answer(VLAN, &stop));
        let macs = resolve(
            &net.port,
            Some(&net.ns),
            program.table(),
            &hosts,
            &[
                (1, h2.next_hop("203.0.113.1".parse().unwrap()).unwrap()),
                (1, wire::V6.into()),
            ],
            Duration::from_secs(3),
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        macs
    });
    assert_eq!(macs.unwrap(), vec![wire::MAC; 2]);
    assert_eq!(
        program.table().neighbour(wire::V4.into(), None).unwrap(),
        None,
        "learned on VLAN 100 only"
    );
}

/// A neighbour in user space: a packet socket on the peer's end of the veth pair.
mod wire {
    use std::fs::File;
    use std::io::Write;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    use std::os::fd::OwnedFd;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use etherparse::{
        ArpHardwareId, ArpOperation, ArpPacket, EtherType, Icmpv6Type, NetSlice, PacketBuilder,
        SlicedPacket, TransportSlice,
    };
    use linerate_hosts::MacAddr;

    use super::Net;

    pub const MAC: MacAddr = [0x02, 0x4c, 0x52, 0, 0, 0x99];
    pub const V4: Ipv4Addr = Ipv4Addr::new(198, 18, 100, 1);
    pub const V6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0x100, 0, 0, 0, 0, 1);
    const ETH_P_ALL: u16 = 0x0003;

    pub struct Wire {
        fd: OwnedFd,
        out: File,
    }

    /// A frame received: its bytes without the tag, kept alive for the slices over them.
    pub struct Frame {
        bytes: Vec<u8>,
    }

    impl Wire {
        pub fn open(net: &Net) -> Wire {
            let peer = net.peer.clone();
            let fd = linerate_xdp::in_netns(Some(&net.peer_ns), move || {
                let fd = linerate_sys::raw_socket(libc::AF_PACKET, i32::from(ETH_P_ALL.to_be()))
                    .unwrap();
                let addr = libc::sockaddr_ll {
                    sll_family: libc::AF_PACKET as u16,
                    sll_protocol: ETH_P_ALL.to_be(),
                    sll_ifindex: linerate_sys::if_index(&peer).unwrap() as i32,
                    sll_hatype: 0,
                    sll_pkttype: 0,
                    sll_halen: 0,
                    sll_addr: [0; 8],
                };
                linerate_sys::bind(&fd, &addr).unwrap();
                linerate_sys::set_opt(&fd, libc::SOL_PACKET, libc::PACKET_AUXDATA, &1i32).unwrap();
                let timeout = libc::timeval {
                    tv_sec: 0,
                    tv_usec: 20_000,
                };
                linerate_sys::set_opt(&fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout).unwrap();
                Ok(fd)
            })
            .unwrap();
            let out = File::from(fd.try_clone().unwrap());
            Wire { fd, out }
        }

        pub fn send(&self, frame: &[u8]) {
            (&self.out).write_all(frame).unwrap();
        }

        /// The next frame that arrives (not one this socket sent), with its VLAN (None: untagged).
        fn recv(&self) -> Option<(Frame, Option<u16>)> {
            let mut buf = vec![0u8; 2048];
            let got = linerate_sys::recv_packet(&self.fd, &mut buf).ok()?;
            if got.pkttype == libc::PACKET_OUTGOING {
                return None;
            }
            buf.truncate(got.len);
            // The stack takes the tag out (to the aux data); where it does not, it is inline.
            let mut vlan = got.vlan.map(|(_, tci)| tci & 0x0fff);
            if vlan.is_none() && buf.len() >= 18 && buf[12..14] == [0x81, 0x00] {
                vlan = Some(u16::from_be_bytes([buf[14], buf[15]]) & 0x0fff);
                buf.drain(12..16);
            }
            Some((Frame { bytes: buf }, vlan))
        }

        /// Waits up to a second for a frame on `vlan` that `want` accepts; its untagged bytes.
        pub fn expect(&self, vlan: u16, want: impl Fn(&SlicedPacket<'_>) -> bool) -> Vec<u8> {
            let deadline = Instant::now() + Duration::from_secs(1);
            while Instant::now() < deadline {
                let Some((frame, tag)) = self.recv() else {
                    continue;
                };
                if tag == Some(vlan)
                    && SlicedPacket::from_ethernet(&frame.bytes).is_ok_and(|p| want(&p))
                {
                    return frame.bytes;
                }
            }
            panic!("nothing expected arrived on VLAN {vlan}");
        }

        /// Answers ARP requests for V4 and solicitations for V6 on `vlan` until `stop`.
        pub fn answer(&self, vlan: u16, stop: &AtomicBool) {
            while !stop.load(Ordering::Relaxed) {
                let Some((frame, Some(tag))) = self.recv() else {
                    continue;
                };
                let Ok(p) = SlicedPacket::from_ethernet(&frame.bytes) else {
                    continue;
                };
                if tag != vlan {
                    continue;
                }
                if let Some(NetSlice::Arp(a)) = &p.net
                    && a.operation() == ArpOperation::REQUEST
                    && a.target_protocol_addr() == V4.octets()
                {
                    let reply = ArpPacket::new(
                        ArpHardwareId::ETHERNET,
                        EtherType::IPV4,
                        ArpOperation::REPLY,
                        &MAC,
                        &V4.octets(),
                        a.sender_hw_addr(),
                        a.sender_protocol_addr(),
                    )
                    .unwrap();
                    let dst: MacAddr = a.sender_hw_addr().try_into().unwrap();
                    let mut out = Vec::new();
                    PacketBuilder::ethernet2(MAC, dst)
                        .arp(reply)
                        .write_to_vec(&mut out)
                        .unwrap();
                    self.send(&tagged(Some(vlan), out));
                }
                if let (Some(NetSlice::Ipv6(ip)), Some(TransportSlice::Icmpv6(i))) =
                    (&p.net, &p.transport)
                    && i.icmp_type() == Icmpv6Type::NeighborSolicitation
                    && i.payload()[..16] == V6.octets()
                {
                    let src = p
                        .link
                        .as_ref()
                        .unwrap()
                        .to_header()
                        .unwrap()
                        .ethernet2()
                        .unwrap()
                        .source;
                    let mut payload = V6.octets().to_vec();
                    payload.extend_from_slice(&[2, 1]);
                    payload.extend_from_slice(&MAC);
                    let na = etherparse::icmpv6::NeighborAdvertisementHeader {
                        router: true,
                        solicited: true,
                        r#override: true,
                    };
                    let mut out = Vec::new();
                    PacketBuilder::ethernet2(MAC, src)
                        .ipv6(V6.octets(), ip.header().source(), 255)
                        .icmpv6(Icmpv6Type::NeighborAdvertisement(na))
                        .write_to_vec(&mut out, &payload)
                        .unwrap();
                    self.send(&tagged(Some(vlan), out));
                }
            }
        }
    }

    /// An echo request from the neighbour to `dst` (whose MAC is `mac`).
    pub fn echo_request(vlan: Option<u16>, dst: IpAddr, mac: MacAddr) -> Vec<u8> {
        let mut out = Vec::new();
        let eth = PacketBuilder::ethernet2(MAC, mac);
        let payload = [0x5a; 32];
        match dst {
            IpAddr::V4(d) => eth
                .ipv4(V4.octets(), d.octets(), 64)
                .icmpv4_echo_request(1, 1)
                .write_to_vec(&mut out, &payload)
                .unwrap(),
            IpAddr::V6(d) => eth
                .ipv6(V6.octets(), d.octets(), 64)
                .icmpv6_echo_request(1, 1)
                .write_to_vec(&mut out, &payload)
                .unwrap(),
        }
        tagged(vlan, out)
    }

    pub fn tagged(vlan: Option<u16>, mut frame: Vec<u8>) -> Vec<u8> {
        if let Some(v) = vlan {
            let mut t = vec![0x81, 0x00];
            t.extend_from_slice(&v.to_be_bytes());
            frame.splice(12..12, t);
        }
        frame
    }
}
