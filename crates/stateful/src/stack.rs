//! The TCP stack an end runs on its port: smoltcp's interface over a [`Link`], owning the
//! end's addresses (a whole client range through smoltcp's any-IP mode and a route to it).

use std::time::{Duration, Instant};

use smoltcp::iface::{Config, Interface, Route};
use smoltcp::phy::Device;
use smoltcp::phy::TxToken;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, IpAddress, IpCidr,
};

use crate::{Addresses, StatefulError};

/// A port the stack sends and receives frames on.
pub trait Link: Device {
    /// Waits up to `timeout` for a frame to arrive.
    fn wait(&mut self, timeout: Duration) -> Result<(), StatefulError>;
    /// The next frame, without taking it: the next `receive` hands up this one.
    fn peek(&mut self) -> Option<&[u8]>;
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
    pub tx_frames: u64,
    /// Frames the port refused (its queue full): TCP sends them again.
    pub tx_dropped: u64,
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
    let first = addrs.range.nth(0);
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(IpAddress::Ipv4(first), addrs.prefix_len));
    });
    if let Some(gw) = addrs.gateway {
        iface
            .routes_mut()
            .add_default_ipv4_route(gw)
            .map_err(|_| StatefulError::Usage("smoltcp's route table is full".into()))?;
    }
    if addrs.range.len() > 1 {
        // smoltcp takes a packet for an address it does not hold when a route to it goes
        // through one it does.
        iface.set_any_ip(true);
        iface.routes_mut().update(|routes| {
            let _ = routes.push(Route {
                cidr: IpCidr::new(IpAddress::Ipv4(addrs.range.network), addrs.range.prefix_len),
                via_router: IpAddress::Ipv4(first),
                preferred_until: None,
                expires_at: None,
            });
        });
    }
    Ok(iface)
}

/// How many of a range's addresses announce themselves.
pub(crate) const ANNOUNCED: u32 = 1024;

/// Each of the first [`ANNOUNCED`] addresses of the range asks for `next_hop` by ARP, as that
/// many hosts would each resolve their gateway: the next hop learns them all from the requests
/// at once. smoltcp (a linerate server) sends one ARP request a second, whatever it asks for,
/// so a peer of many on-link clients would otherwise take a second per client to reach them.
pub(crate) fn announce<D: Device>(
    device: &mut D,
    addrs: &Addresses,
    next_hop: std::net::Ipv4Addr,
    clock: &Clock,
) {
    let eth = EthernetRepr {
        src_addr: EthernetAddress(addrs.mac),
        dst_addr: EthernetAddress::BROADCAST,
        ethertype: EthernetProtocol::Arp,
    };
    for k in 0..addrs.range.len().min(ANNOUNCED) {
        let arp = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: EthernetAddress(addrs.mac),
            source_protocol_addr: addrs.range.nth(u64::from(k)),
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
