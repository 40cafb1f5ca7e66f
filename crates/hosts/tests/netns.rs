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
        err.is_usage() && err.to_string().contains("program is attached to"),
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

/// A neighbour on the link answering ARP and ND for an address nobody else holds with a MAC no
/// neighbour can have (RFC 1812 §3.3.2): the address is not resolved, and the error names what
/// it answered.
#[test]
fn an_answer_with_a_group_zero_or_own_mac_is_not_resolved_and_is_named() {
    if !linerate_lab::root_or_skip(
        "an_answer_with_a_group_zero_or_own_mac_is_not_resolved_and_is_named",
    ) {
        return;
    }
    let net = Net::up();
    let hosts = hosts();
    let program = attach(&net, &hosts);
    let wire = wire::Wire::open(&net);
    let own = hosts[0].mac;
    for bogus in [
        [0xff; 6],
        [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01],
        [0x33, 0x33, 0x00, 0x00, 0x00, 0x01],
        [0; 6],
        own,
    ] {
        for target in [IpAddr::from(wire::LONE_V4), IpAddr::from(wire::LONE_V6)] {
            let stop = std::sync::atomic::AtomicBool::new(false);
            let got = std::thread::scope(|scope| {
                scope.spawn(|| wire.answer_as(None, bogus, &stop));
                let got = resolve(
                    &net.port,
                    Some(&net.ns),
                    program.table(),
                    &hosts,
                    &[(0, target)],
                    Duration::from_millis(700),
                );
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                got
            });
            let err = match got {
                Ok(macs) => panic!("{target} resolved to {:02x?}", macs),
                Err(e) => e,
            };
            let text = err.to_string();
            assert!(
                matches!(&err, HostError::BogusNeighbour { addr, mac, .. } if *addr == target && *mac == bogus),
                "{target}: {err:?}"
            );
            assert!(
                text.contains(&fmt_mac(&bogus)) && text.contains(&target.to_string()),
                "{text}"
            );
            assert!(!text.contains('\n') && !err.is_usage(), "{text}");
            assert_eq!(program.table().neighbour(target, None).unwrap(), None);
        }
    }
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
    /// Untagged addresses on h1's subnets that the peer's kernel does not hold: only the
    /// neighbour played here answers for them.
    pub const LONE_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 77);
    pub const LONE_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0x77);
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
                let index = linerate_sys::if_index(&peer).unwrap();
                let fd = linerate_sys::packet_socket(index, ETH_P_ALL.to_be()).unwrap();
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

        /// Answers ARP requests for LONE_V4 and solicitations for LONE_V6 on `vlan` (None:
        /// untagged) with `mac`, in the ARP sender and the target link-layer option as in the
        /// Ethernet source, until `stop`.
        pub fn answer_as(&self, vlan: Option<u16>, mac: MacAddr, stop: &AtomicBool) {
            while !stop.load(Ordering::Relaxed) {
                let Some((frame, tag)) = self.recv() else {
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
                    && a.target_protocol_addr() == LONE_V4.octets()
                {
                    let reply = ArpPacket::new(
                        ArpHardwareId::ETHERNET,
                        EtherType::IPV4,
                        ArpOperation::REPLY,
                        &mac,
                        &LONE_V4.octets(),
                        a.sender_hw_addr(),
                        a.sender_protocol_addr(),
                    )
                    .unwrap();
                    let dst: MacAddr = a.sender_hw_addr().try_into().unwrap();
                    let mut out = Vec::new();
                    PacketBuilder::ethernet2(mac, dst)
                        .arp(reply)
                        .write_to_vec(&mut out)
                        .unwrap();
                    self.send(&tagged(vlan, out));
                }
                if let (Some(NetSlice::Ipv6(ip)), Some(TransportSlice::Icmpv6(i))) =
                    (&p.net, &p.transport)
                    && i.icmp_type() == Icmpv6Type::NeighborSolicitation
                    && i.payload()[..16] == LONE_V6.octets()
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
                    let mut payload = LONE_V6.octets().to_vec();
                    payload.extend_from_slice(&[2, 1]);
                    payload.extend_from_slice(&mac);
                    let na = etherparse::icmpv6::NeighborAdvertisementHeader {
                        router: false,
                        solicited: true,
                        r#override: true,
                    };
                    let mut out = Vec::new();
                    PacketBuilder::ethernet2(mac, src)
                        .ipv6(LONE_V6.octets(), ip.header().source(), 255)
                        .icmpv6(Icmpv6Type::NeighborAdvertisement(na))
                        .write_to_vec(&mut out, &payload)
                        .unwrap();
                    self.send(&tagged(vlan, out));
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

/// tcpdump in the peer's namespace, writing what arrives on the peer's end from `mac` (the
/// hosts' answers) to a file until it has `count` frames; killed and its file removed on drop.
struct Capture {
    child: std::process::Child,
    file: std::path::PathBuf,
    /// Kept open: tcpdump's last words at exit would die of SIGPIPE on a closed pipe.
    _stderr: std::process::ChildStderr,
}

impl Capture {
    fn start(net: &Net, mac: &MacAddr, count: usize) -> Capture {
        use std::io::Read;
        let file = std::env::temp_dir().join(format!("{}.pcap", net.peer));
        let mut child = Command::new("ip")
            .args(["netns", "exec", &net.peer_ns, "tcpdump", "-i", &net.peer])
            .args(["-Q", "in", "-U", "-n", "-c", &count.to_string(), "-w"])
            .arg(&file)
            .args(["ether", "src", &fmt_mac(mac)])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("tcpdump is installed (scripts/setup.sh)");
        let mut stderr = child.stderr.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("listening on") {
            let n = stderr.read(&mut buf).unwrap();
            assert!(n > 0, "tcpdump ended: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        Capture {
            child,
            file,
            _stderr: stderr,
        }
    }

    /// Waits for tcpdump to have its frames (up to 10 s), then decodes them with `tcpdump -r`,
    /// one line per frame.
    fn frames(mut self) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "tcpdump never saw its frames");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(status.success(), "tcpdump: {status}");
        let out = Command::new("tcpdump")
            .arg("-r")
            .arg(&self.file)
            .args(["-nn", "-vv", "-e"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut frames: Vec<String> = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            match frames.last_mut() {
                Some(last) if line.starts_with(char::is_whitespace) => {
                    last.push(' ');
                    last.push_str(line.trim());
                }
                _ => frames.push(line.to_owned()),
            }
        }
        frames
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Crafted requests, as a neighbour (or a spoofer) on the link sends them.
mod craft {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use etherparse::{
        ArpHardwareId, ArpOperation, ArpPacket, EtherType, Icmpv6Type, PacketBuilder,
    };
    use linerate_hosts::MacAddr;

    pub fn arp_request(src_mac: MacAddr, sha: MacAddr, spa: Ipv4Addr, tpa: Ipv4Addr) -> Vec<u8> {
        let arp = ArpPacket::new(
            ArpHardwareId::ETHERNET,
            EtherType::IPV4,
            ArpOperation::REQUEST,
            &sha,
            &spa.octets(),
            &[0; 6],
            &tpa.octets(),
        )
        .unwrap();
        let mut out = Vec::new();
        PacketBuilder::ethernet2(src_mac, [0xff; 6])
            .arp(arp)
            .write_to_vec(&mut out)
            .unwrap();
        out
    }

    pub fn echo4(
        src_mac: MacAddr,
        dst_mac: MacAddr,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        id: u16,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ethernet2(src_mac, dst_mac)
            .ipv4(src.octets(), dst.octets(), 64)
            .icmpv4_echo_request(id, 1)
            .write_to_vec(&mut out, &[0x5a; 37])
            .unwrap();
        out
    }

    pub fn echo6(src_mac: MacAddr, dst_mac: MacAddr, src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ethernet2(src_mac, dst_mac)
            .ipv6(src.octets(), dst.octets(), 64)
            .icmpv6_echo_request(1, 1)
            .write_to_vec(&mut out, &[0x5a; 37])
            .unwrap();
        out
    }

    /// The solicited-node group of `target` (RFC 4291 §2.7.1) and its MAC.
    pub fn solicited_node(target: Ipv6Addr) -> (Ipv6Addr, MacAddr) {
        let t = target.octets();
        let mut g = [0u8; 16];
        g[..2].copy_from_slice(&[0xff, 0x02]);
        g[11..].copy_from_slice(&[1, 0xff, t[13], t[14], t[15]]);
        (g.into(), [0x33, 0x33, 0xff, t[13], t[14], t[15]])
    }

    /// An NS for `target` from `src` to `dst` (at `dst_mac`), its options after the target.
    pub fn ns(
        src_mac: MacAddr,
        dst_mac: MacAddr,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        target: Ipv6Addr,
        options: &[u8],
    ) -> Vec<u8> {
        let mut payload = target.octets().to_vec();
        payload.extend_from_slice(options);
        let mut out = Vec::new();
        PacketBuilder::ethernet2(src_mac, dst_mac)
            .ipv6(src.octets(), dst.octets(), 255)
            .icmpv6(Icmpv6Type::NeighborSolicitation)
            .write_to_vec(&mut out, &payload)
            .unwrap();
        out
    }

    /// The Source Link-Layer Address option carrying `mac`.
    pub fn slla(mac: MacAddr) -> Vec<u8> {
        let mut o = vec![1, 1];
        o.extend_from_slice(&mac);
        o
    }

    /// `frame` with the 16-bit word at `at` changed: a checksum that no longer holds.
    pub fn corrupt(mut frame: Vec<u8>, at: usize) -> Vec<u8> {
        frame[at] ^= 0x5a;
        frame
    }
}

/// Issue 40 #6: requests RFC 1122 (§3.2.1.2, §3.2.1.3, §3.3.6) and RFC 4861 (§7.1.1) say to
/// discard, sent from a packet socket on the peer's end: none gets an answer (tcpdump behind the
/// peer sees only the valid requests' answers, in order, the last one sent last) and each is
/// counted as ignored. Requests claiming another host's address are answered, but no neighbour
/// is learned for a host's own address; only the two honest senders are learned.
#[test]
fn requests_the_rfcs_discard_get_no_answer_and_teach_nothing() {
    if !linerate_lab::root_or_skip("requests_the_rfcs_discard_get_no_answer_and_teach_nothing") {
        return;
    }
    let net = Net::up();
    let mut hosts = hosts();
    // A second untagged host beside h1, whose addresses a spoofer claims.
    let h3 = Host {
        name: "h3".into(),
        mac: [0x02, 0x4c, 0x52, 0, 0, 0x30],
        vlan: None,
        ipv4: Some(Ipv4Iface {
            addr: Ipv4Addr::new(198, 18, 0, 11),
            prefix: 24,
            gateway: None,
        }),
        ipv6: Some(Ipv6Iface {
            addr: "2001:2::11".parse().unwrap(),
            prefix: 64,
            gateway: None,
        }),
    };
    hosts.push(h3.clone());
    let program = attach(&net, &hosts);
    let h1 = &hosts[0];
    let (mac, v4, v6) = (h1.mac, h1.ipv4.unwrap().addr, h1.ipv6.unwrap().addr);
    let (h3_v4, h3_v6) = (h3.ipv4.unwrap().addr, h3.ipv6.unwrap().addr);
    let me = wire::MAC;
    let (my_v4, my_v6) = (wire::LONE_V4, wire::LONE_V6);
    let group4 = [0x01, 0x00, 0x5e, 0, 0, 9];
    let group6 = [0x33, 0x33, 0, 0, 0, 1];
    let (sn, sn_mac) = craft::solicited_node(v6);
    let all_nodes: std::net::Ipv6Addr = "ff02::1".parse().unwrap();
    let unspecified = std::net::Ipv6Addr::UNSPECIFIED;
    // Offsets of the checksums: IPv4 header, ICMP after it, ICMPv6 after a 40-byte header.
    let (ip4_sum, icmp4_sum, icmp6_sum) = (14 + 10, 14 + 20 + 2, 14 + 40 + 2);
    let ns = |src: std::net::Ipv6Addr, opts: &[u8]| craft::ns(me, sn_mac, src, sn, v6, opts);

    let discarded = [
        craft::corrupt(craft::echo4(me, mac, my_v4, v4, 7), icmp4_sum),
        craft::corrupt(craft::echo4(me, mac, my_v4, v4, 7), ip4_sum),
        craft::echo4(me, mac, Ipv4Addr::BROADCAST, v4, 7),
        craft::echo4(me, mac, Ipv4Addr::new(224, 0, 0, 9), v4, 7),
        // h1's subnet's broadcast.
        craft::echo4(me, mac, Ipv4Addr::new(198, 18, 0, 255), v4, 7),
        craft::echo4(group4, mac, my_v4, v4, 7),
        // A host's unicast address in a link-layer broadcast (RFC 1122 §3.3.6).
        craft::echo4(me, [0xff; 6], my_v4, v4, 7),
        craft::arp_request(group4, group4, my_v4, v4),
        craft::arp_request(me, me, Ipv4Addr::new(224, 0, 0, 9), v4),
        craft::corrupt(craft::echo6(me, mac, my_v6, v6), icmp6_sum),
        craft::echo6(me, mac, all_nodes, v6),
        craft::echo6(group6, mac, my_v6, v6),
        craft::corrupt(ns(my_v6, &craft::slla(me)), icmp6_sum),
        // An option of length 0, which would loop a parser forever.
        ns(my_v6, &[1, 0, 0, 0, 0, 0, 0, 0]),
        // DAD carrying a source link-layer address; DAD to a unicast address.
        ns(unspecified, &craft::slla(me)),
        craft::ns(me, mac, unspecified, v6, v6, &[]),
        ns(all_nodes, &craft::slla(me)),
    ];
    // Each answered, in this order; the last one sent last.
    let answered = [
        craft::arp_request(me, me, my_v4, v4),
        // A spoofer claiming h3's address: answered, not learned.
        craft::arp_request(me, me, h3_v4, v4),
        craft::echo4(me, mac, my_v4, v4, 1),
        craft::echo6(me, mac, my_v6, v6),
        ns(my_v6, &craft::slla(me)),
        ns(h3_v6, &craft::slla(me)),
        ns(unspecified, &[]),
        craft::echo4(me, mac, my_v4, v4, 2),
    ];
    let capture = Capture::start(&net, &mac, answered.len());
    let wire = wire::Wire::open(&net);
    for frame in discarded.iter().chain(&answered) {
        wire.send(frame);
    }
    let frames = capture.frames();
    assert_eq!(frames.len(), answered.len(), "{frames:#?}");
    let to_me = format!("> {}", fmt_mac(&me));
    let want = [
        (
            to_me.as_str(),
            format!("Reply {v4} is-at {}", fmt_mac(&mac)),
        ),
        (
            to_me.as_str(),
            format!("Reply {v4} is-at {}", fmt_mac(&mac)),
        ),
        (
            to_me.as_str(),
            format!("{v4} > {my_v4}: ICMP echo reply, id 1"),
        ),
        (
            to_me.as_str(),
            format!("{v6} > {my_v6}: [icmp6 sum ok] ICMP6, echo reply"),
        ),
        (
            to_me.as_str(),
            format!("{v6} > {my_v6}: [icmp6 sum ok] ICMP6, neighbor advertisement"),
        ),
        (
            to_me.as_str(),
            format!("{v6} > {h3_v6}: [icmp6 sum ok] ICMP6, neighbor advertisement"),
        ),
        (
            "> 33:33:00:00:00:01",
            format!("{v6} > ff02::1: [icmp6 sum ok] ICMP6, neighbor advertisement"),
        ),
        (
            to_me.as_str(),
            format!("{v4} > {my_v4}: ICMP echo reply, id 2"),
        ),
    ];
    for (line, (dst, what)) in frames.iter().zip(&want) {
        assert!(
            line.contains(dst) && line.contains(what.as_str()),
            "want {dst} … {what}:\n{line}"
        );
        assert!(!line.contains("bad") && !line.contains("wrong"), "{line}");
    }
    let c = program.table().counters().unwrap();
    assert_eq!(c.ignored, discarded.len() as u64, "{c:?}");
    assert_eq!(
        (c.arp_replies, c.echo_replies, c.nd_replies),
        (2, 3, 3),
        "{c:?}"
    );
    // Only the honest sender, in both families; nothing for h3's addresses.
    let learned: Vec<(IpAddr, MacAddr)> = program
        .table()
        .neighbours()
        .unwrap()
        .into_iter()
        .map(|n| (n.addr, n.mac))
        .collect();
    assert_eq!(learned, vec![(my_v4.into(), me), (my_v6.into(), me)]);
}
