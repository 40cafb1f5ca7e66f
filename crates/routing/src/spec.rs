//! What a device's control plane is: its links, its BGP peers and the routes it advertises.
//! Plain data, checked by [`Device::validate`]; the OTG mapping and the CLI build it.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use crate::RoutingError;

/// One device that speaks a routing protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// What errors, metrics and states call it.
    pub name: String,
    /// Its interfaces: one per port it sits on.
    pub links: Vec<Link>,
    pub bgp: Bgp,
}

/// A device's interface on a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The port: `IFACE` or `IFACE@NETNS`.
    pub port: String,
    pub mac: [u8; 6],
    /// Its addresses with their prefix lengths.
    pub addrs: Vec<(IpAddr, u8)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bgp {
    pub router_id: Ipv4Addr,
    pub peers: Vec<Peer>,
}

/// OTG's `as_type`: a peer in the device's own AS or in another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerKind {
    Ebgp,
    Ibgp,
}

/// One BGP session and what the device advertises over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub name: String,
    /// The neighbour's address, on one of the device's subnets.
    pub address: IpAddr,
    /// The device's AS on this session (OTG's `as_number`); the neighbour's is whatever it
    /// says in its OPEN: another for eBGP, the same for iBGP.
    pub local_as: u32,
    pub kind: PeerKind,
    /// Seconds; None: FRR's defaults (60 and 180, RFC 4271's suggestion).
    pub keepalive: Option<u16>,
    pub hold: Option<u16>,
    /// TCP-MD5 (RFC 2385) key.
    pub md5: Option<String>,
    pub routes: Vec<RouteRange>,
}

/// A named set of prefixes with the path attributes they are advertised with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RouteRange {
    pub name: String,
    pub blocks: Vec<Block>,
    /// None: the device's own address on the session (next-hop-self).
    pub next_hop: Option<IpAddr>,
    pub med: Option<u32>,
    pub origin: Option<Origin>,
    /// Sent to iBGP peers only (RFC 4271 §5.1.5).
    pub local_pref: Option<u32>,
    /// `AS:VALUE` standard communities (RFC 1997).
    pub communities: Vec<(u16, u16)>,
    /// AS numbers put before the device's own (an AS_SEQUENCE).
    pub as_path: Vec<u32>,
    /// Advertised now (a withdrawn range is kept, to be advertised again by name).
    pub advertised: bool,
}

/// `count` prefixes from `first`, each `step` prefix-sized blocks after the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub first: IpNet,
    pub count: u32,
    pub step: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Igp,
    Egp,
    Incomplete,
}

impl Block {
    /// Every prefix of the block, or why the block runs past its family's address space.
    pub fn prefixes(&self) -> Result<Vec<IpNet>, RoutingError> {
        let bits = u32::from(self.first.max_prefix_len() - self.first.prefix_len());
        let size: u128 = 1u128 << bits;
        let base: u128 = match self.first.network() {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        };
        let top: u128 = match self.first {
            IpNet::V4(_) => u128::from(u32::MAX),
            IpNet::V6(_) => u128::MAX,
        };
        let span = size
            .checked_mul(u128::from(self.step.max(1)))
            .and_then(|s| s.checked_mul(u128::from(self.count.saturating_sub(1))));
        let last = span.and_then(|s| base.checked_add(s));
        if self.count == 0
            || last.is_none_or(|l| l > top || l.checked_add(size - 1).is_none_or(|e| e > top))
        {
            return Err(RoutingError::Invalid(format!(
                "{} prefixes from {} every {} run past the address space",
                self.count, self.first, self.step
            )));
        }
        let step = size * u128::from(self.step.max(1));
        let prefix = self.first.prefix_len();
        Ok((0..u128::from(self.count))
            .map(|i| {
                let n = base + i * step;
                match self.first {
                    IpNet::V4(_) => IpNet::new(IpAddr::V4(Ipv4Addr::from(n as u32)), prefix),
                    IpNet::V6(_) => IpNet::new(IpAddr::V6(n.into()), prefix),
                }
                .expect("the prefix length is the block's")
            })
            .collect())
    }
}

impl RouteRange {
    /// Every prefix of every block, in order.
    pub fn prefixes(&self) -> Result<Vec<IpNet>, RoutingError> {
        let mut all = Vec::new();
        for b in &self.blocks {
            all.extend(b.prefixes()?);
        }
        Ok(all)
    }
}

impl Device {
    /// Refuses what cannot run, naming the device and the field: an AS of 0, a peer off every
    /// subnet of the device, a range past its address space, names used twice.
    pub fn validate(&self) -> Result<(), RoutingError> {
        let bad = |why: String| {
            Err(RoutingError::Invalid(format!(
                "device {}: {why}",
                self.name
            )))
        };
        if self.links.is_empty() {
            return bad("a device with BGP needs an interface with an address".into());
        }
        if self.bgp.peers.is_empty() {
            return bad("bgp has no peer".into());
        }
        let mut names: Vec<&str> = Vec::new();
        for p in &self.bgp.peers {
            if p.local_as == 0 {
                return bad(format!(
                    "peer {}: as_number 0 is reserved (RFC 7607)",
                    p.name
                ));
            }
            let on_subnet = self.links.iter().flat_map(|l| &l.addrs).any(|(a, len)| {
                IpNet::new(*a, *len).is_ok_and(|n| n.contains(&p.address) && *a != p.address)
            });
            if !on_subnet {
                return bad(format!(
                    "peer {}: {} is on none of the device's subnets (linerate's BGP sessions are single-hop)",
                    p.name, p.address
                ));
            }
            if let (Some(k), Some(h)) = (p.keepalive, p.hold)
                && h != 0
                && (h < 3 || k >= h)
            {
                return bad(format!(
                    "peer {}: hold time {h} s must be 0 or at least 3 s and above the keepalive {k} s",
                    p.name
                ));
            }
            for r in &p.routes {
                if names.contains(&r.name.as_str()) {
                    return bad(format!("route range name '{}' is used twice", r.name));
                }
                names.push(&r.name);
                r.prefixes().map_err(|e| {
                    RoutingError::Invalid(format!(
                        "device {}: route range {}: {e}",
                        self.name, r.name
                    ))
                })?;
            }
        }
        Ok(())
    }
}
