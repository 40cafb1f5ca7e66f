//! The TCP stack an end runs on its port: smoltcp's interface over a [`Link`], owning the
//! end's addresses (a whole client range through smoltcp's any-IP mode and a route to it).

use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

use smoltcp::iface::{Config, Interface, Route};
use smoltcp::phy::{ChecksumCapabilities, Device, TxToken};
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, Icmpv6Packet, Icmpv6Repr, IpAddress, IpCidr, IpProtocol, Ipv6Packet, Ipv6Repr,
    NdiscNeighborFlags, NdiscRepr, RawHardwareAddress,
};

use crate::{Addresses, StatefulError};

/// A port the stack sends and receives frames on.
pub trait Link: Device {
    /// Waits up to `timeout` for a frame to arrive.
    fn wait(&mut self, timeout: Duration) -> Result<(), StatefulError>;
    /// The next frame, without taking it: the next `receive` hands up this one.
    fn peek(&mut self) -> Option<&[u8]>;
    /// Sends what the link holds back to send in one batch (none: it sends each at once).
    fn flush(&mut self) {}
    /// What the link has counted.
    fn counters(&self) -> LinkCounters;
}

/// A link's own frame counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkCounters {
    pub rx_frames: u64,
    /// Frames the end was not to see (not its MAC, not its addresses).
    pub rx_ignored: u64,
    /// Frames longer than the buffer (cut, so dropped).
    pub rx_oversize: u64,
    /// Frames the kernel dropped before the end saw them (its receive ring full).
    pub rx_dropped: u64,
    pub tx_frames: u64,
    /// Times the port had no room for the next frame and the end waited for it.
    pub tx_waits: u64,
    /// Frames the port refused (no room after a second's wait, or the link down): TCP sends
    /// them again.
    pub tx_dropped: u64,
}

/// The clock of TCP timestamps (RFC 7323): milliseconds on `CLOCK_MONOTONIC`, which every
/// process of the machine reads alike. A connection's timestamps are then newer than those of
/// any connection before it on the same addresses and ports — of this run or one a moment ago
/// — which is what a server still holding that tuple in TIME-WAIT takes a new SYN by (RFC
/// 6191; the random initial sequence numbers say nothing there).
fn tsval() -> u32 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        (t.tv_sec() as u64 * 1000 + t.tv_nsec() as u64 / 1_000_000) as u32
    })
}

/// What a socket's timestamps come from: [`tsval`] when `on`, else none sent.
pub(crate) fn timestamps(on: bool) -> Option<smoltcp::wire::TcpTimestampGenerator> {
    on.then_some(tsval as fn() -> u32)
}

/// Forgets a connection without a segment, as a kernel forgets a TIME-WAIT cut short (its
/// buckets full, or `tcp_tw_reuse`): `abort` would send the peer, closed already, an RST — one
/// frame more a connection through the device. smoltcp resets a socket silently only on its
/// way to listening, so the socket listens on its own port and closes at once (no tuple, no
/// segment).
pub(crate) fn forget(socket: &mut smoltcp::socket::tcp::Socket) {
    let Some(port) = socket.local_endpoint().map(|e| e.port) else {
        return;
    };
    if socket.listen(port).is_ok() {
        socket.close();
    }
}

/// The stack's clock: microseconds since the run began.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock(Instant);

impl Clock {
    pub(crate) fn start() -> Self {
        Clock(Instant::now())
    }

    pub(crate) fn now(&self) -> smoltcp::time::Instant {
        smoltcp::time::Instant::from_micros(self.0.elapsed().as_micros() as i64)
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}

/// smoltcp's interface for `addrs`: the range's first address on the on-link network, the
/// gateway as the default route, and the rest of the range reached by any-IP.
pub(crate) fn interface<D: Device>(
    device: &mut D,
    addrs: &Addresses,
    clock: &Clock,
    seed: u64,
) -> Result<Interface, StatefulError> {
    addrs.validate()?;
    let mut config = Config::new(EthernetAddress(addrs.mac).into());
    config.random_seed = seed;
    let mut iface = Interface::new(config, device, clock.now());
    let first = IpAddress::from(addrs.range.nth(0));
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(first, addrs.prefix_len));
    });
    let full = |_| StatefulError::Usage("smoltcp's route table is full".into());
    match addrs.gateway {
        Some(IpAddr::V4(gw)) => iface
            .routes_mut()
            .add_default_ipv4_route(gw)
            .map_err(full)?,
        Some(IpAddr::V6(gw)) => iface
            .routes_mut()
            .add_default_ipv6_route(gw)
            .map_err(full)?,
        None => None,
    };
    if addrs.range.len() > 1 {
        // smoltcp takes a packet for an address it does not hold when a route to it goes
        // through one it does.
        iface.set_any_ip(true);
        iface.routes_mut().update(|routes| {
            let _ = routes.push(Route {
                cidr: IpCidr::new(IpAddress::from(addrs.range.network), addrs.range.prefix_len),
                via_router: first,
                preferred_until: None,
                expires_at: None,
            });
        });
    }
    Ok(iface)
}

/// How many of a range's addresses announce themselves.
pub(crate) const ANNOUNCED: u32 = 1024;

/// Each of the first [`ANNOUNCED`] addresses of the range asks for `next_hop` by ARP (or a
/// neighbour solicitation), as that many hosts would each resolve their gateway: the next hop
/// learns them all from the requests at once. smoltcp (a linerate server) sends one ARP request
/// a second, whatever it asks for, so a peer of many on-link clients would otherwise take a
/// second per client to reach them.
pub(crate) fn announce<D: Device>(
    device: &mut D,
    addrs: &Addresses,
    next_hop: IpAddr,
    clock: &Clock,
) {
    let next_hop = match next_hop {
        IpAddr::V4(a) => a,
        IpAddr::V6(target) => {
            for k in 0..addrs.range.len().min(ANNOUNCED) {
                let IpAddr::V6(source) = addrs.range.nth(u64::from(k)) else {
                    return;
                };
                let group = solicited_node(target);
                let ns = Icmpv6Repr::Ndisc(NdiscRepr::NeighborSolicit {
                    target_addr: target,
                    lladdr: Some(RawHardwareAddress::from(EthernetAddress(addrs.mac))),
                });
                if !send_icmpv6(
                    device,
                    addrs.mac,
                    multicast_mac(group),
                    source,
                    group,
                    &ns,
                    clock.now(),
                ) {
                    return;
                }
            }
            return;
        }
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(addrs.mac),
        dst_addr: EthernetAddress::BROADCAST,
        ethertype: EthernetProtocol::Arp,
    };
    for k in 0..addrs.range.len().min(ANNOUNCED) {
        let arp = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: EthernetAddress(addrs.mac),
            source_protocol_addr: match addrs.range.nth(u64::from(k)) {
                IpAddr::V4(a) => a,
                IpAddr::V6(_) => return,
            },
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: next_hop,
        };
        let Some(token) = device.transmit(clock.now()) else {
            return;
        };
        token.consume(eth.buffer_len() + arp.buffer_len(), |buf| {
            let mut frame = EthernetFrame::new_unchecked(buf);
            eth.emit(&mut frame);
            arp.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
        });
    }
}

/// The solicited-node multicast group of `addr` (RFC 4291 §2.7.1): ff02::1:ff and its low 24 bits.
fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    Ipv6Addr::from_bits(0xff02_0000_0000_0000_0000_0001_ff00_0000 | addr.to_bits() & 0xff_ffff)
}

/// The Ethernet address of an IPv6 multicast group: 33:33 and its low 32 bits.
fn multicast_mac(group: Ipv6Addr) -> [u8; 6] {
    let o = group.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// Sends one ICMPv6 message (hop limit 255, as neighbour discovery requires); false when the
/// port had no room.
fn send_icmpv6<D: Device>(
    device: &mut D,
    mac: [u8; 6],
    to_mac: [u8; 6],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    icmp: &Icmpv6Repr,
    now: smoltcp::time::Instant,
) -> bool {
    let eth = EthernetRepr {
        src_addr: EthernetAddress(mac),
        dst_addr: EthernetAddress(to_mac),
        ethertype: EthernetProtocol::Ipv6,
    };
    let ip = Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: icmp.buffer_len(),
        hop_limit: 255,
    };
    let Some(token) = device.transmit(now) else {
        return false;
    };
    token.consume(
        eth.buffer_len() + ip.buffer_len() + icmp.buffer_len(),
        |buf| {
            let mut frame = EthernetFrame::new_unchecked(buf);
            eth.emit(&mut frame);
            let mut packet = Ipv6Packet::new_unchecked(frame.payload_mut());
            ip.emit(&mut packet);
            let mut message = Icmpv6Packet::new_unchecked(packet.payload_mut());
            icmp.emit(&src, &dst, &mut message, &ChecksumCapabilities::default());
        },
    );
    true
}

/// A neighbour solicitation, as far as answering it needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Solicitation {
    /// The address asked for.
    pub(crate) target: Ipv6Addr,
    /// Who asks: its address and its MAC (the frame's source).
    pub(crate) asker: Ipv6Addr,
    pub(crate) asker_mac: [u8; 6],
}

/// A neighbour discovery frame's sender (an IPv6 address's bits) and, for a solicitation, what
/// it asks; None for any other frame.
pub(crate) fn neighbour_discovery(frame: &[u8]) -> Option<(u128, Option<Solicitation>)> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Ipv6 {
        return None;
    }
    let ip = Ipv6Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != IpProtocol::Icmpv6 {
        return None;
    }
    let icmp = Icmpv6Packet::new_checked(ip.payload()).ok()?;
    let ndisc = NdiscRepr::parse(&icmp).ok()?;
    let sender = ip.src_addr().to_bits();
    match ndisc {
        NdiscRepr::NeighborSolicit { target_addr, .. } => Some((
            sender,
            Some(Solicitation {
                target: target_addr,
                asker: ip.src_addr(),
                asker_mac: eth.src_addr().0,
            }),
        )),
        NdiscRepr::NeighborAdvert { .. } => Some((sender, None)),
        _ => None,
    }
}

/// Answers a neighbour solicitation (for an address of this end's) with an advertisement from
/// `mac`, as a host that holds the address does (RFC 4861 §7.2.4): to the asker, solicited,
/// overriding. A solicitation from the unspecified address (duplicate address detection) is
/// left unanswered: no address of this end's is tentative.
pub(crate) fn advertise<D: Device>(
    device: &mut D,
    mac: [u8; 6],
    asked: &Solicitation,
    now: smoltcp::time::Instant,
) {
    if asked.asker.is_unspecified() {
        return;
    }
    let na = Icmpv6Repr::Ndisc(NdiscRepr::NeighborAdvert {
        flags: NdiscNeighborFlags::SOLICITED | NdiscNeighborFlags::OVERRIDE,
        target_addr: asked.target,
        lladdr: Some(RawHardwareAddress::from(EthernetAddress(mac))),
    });
    send_icmpv6(
        device,
        mac,
        asked.asker_mac,
        asked.target,
        asked.asker,
        &na,
        now,
    );
}
