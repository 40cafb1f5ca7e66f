//! The frames a host sends to resolve a neighbour: an ARP request (RFC 826) or a neighbour
//! solicitation (RFC 4861 §4.3) to the target's solicited-node group, tagged with the host's
//! VLAN. Built with etherparse, once per target; [`crate::resolve`] sends them again as they are.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use etherparse::{ArpHardwareId, ArpOperation, ArpPacket, EtherType, Icmpv6Type, PacketBuilder};

use crate::{Host, HostError, MacAddr};

/// Ethernet's shortest frame without its FCS: short frames are padded up to it, as a NIC does.
const MIN_FRAME: usize = 60;
const BROADCAST: MacAddr = [0xff; 6];
/// The Source Link-Layer Address option (RFC 4861 §4.6.1): type 1, 1 unit of 8 bytes.
const OPT_SLLA: [u8; 2] = [1, 1];

/// The frame `host` sends to learn the MAC of `target`.
pub fn request(host: &Host, target: IpAddr) -> Result<Vec<u8>, HostError> {
    match (host.source_for(target)?, target) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => Ok(arp_request(host.mac, host.vlan, src, dst)),
        (IpAddr::V6(src), IpAddr::V6(dst)) => {
            Ok(neighbour_solicitation(host.mac, host.vlan, src, dst))
        }
        _ => unreachable!("source_for answers in the target's family"),
    }
}

/// An ARP request from `mac`/`src` for `target`, broadcast.
pub fn arp_request(mac: MacAddr, vlan: Option<u16>, src: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let arp = ArpPacket::new(
        ArpHardwareId::ETHERNET,
        EtherType::IPV4,
        ArpOperation::REQUEST,
        &mac,
        &src.octets(),
        &[0; 6],
        &target.octets(),
    )
    .expect("Ethernet and IPv4 address lengths fit ARP's one-byte length fields");
    let mut frame = Vec::with_capacity(MIN_FRAME);
    PacketBuilder::ethernet2(mac, BROADCAST)
        .arp(arp)
        .write_to_vec(&mut frame)
        .expect("writing to a Vec cannot fail");
    frame.resize(frame.len().max(MIN_FRAME), 0);
    tag(frame, vlan)
}

/// A neighbour solicitation from `mac`/`src` for `target`, to its solicited-node group
/// ff02::1:ffXX:XXXX (its last 24 bits), with the sender's link-layer address.
pub fn neighbour_solicitation(
    mac: MacAddr,
    vlan: Option<u16>,
    src: Ipv6Addr,
    target: Ipv6Addr,
) -> Vec<u8> {
    let t = target.octets();
    let group = Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(t[13]),
        u16::from_be_bytes([t[14], t[15]]),
    );
    let g = group.octets();
    let group_mac = [0x33, 0x33, g[12], g[13], g[14], g[15]];
    let mut payload = Vec::with_capacity(24);
    payload.extend_from_slice(&t);
    payload.extend_from_slice(&OPT_SLLA);
    payload.extend_from_slice(&mac);
    let mut frame = Vec::new();
    // Hop limit 255: a receiver drops ND messages that a router could have forwarded.
    PacketBuilder::ethernet2(mac, group_mac)
        .ipv6(src.octets(), g, 255)
        .icmpv6(Icmpv6Type::NeighborSolicitation)
        .write_to_vec(&mut frame, &payload)
        .expect("an NS fits any buffer etherparse grows");
    tag(frame, vlan)
}

/// Inserts an 802.1Q tag for `vlan` after the MAC addresses (none for an untagged host).
fn tag(mut frame: Vec<u8>, vlan: Option<u16>) -> Vec<u8> {
    if let Some(vid) = vlan {
        let mut tag = [0u8; 4];
        tag[..2].copy_from_slice(&0x8100u16.to_be_bytes());
        tag[2..].copy_from_slice(&(vid & 0x0fff).to_be_bytes());
        frame.splice(12..12, tag);
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ipv4Iface, Ipv6Iface};
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

    const MAC: MacAddr = [0x02, 0, 0, 0, 0, 0x10];

    fn host(vlan: Option<u16>) -> Host {
        Host {
            name: "h".into(),
            mac: MAC,
            vlan,
            ipv4: Some(Ipv4Iface {
                addr: "198.18.0.10".parse().unwrap(),
                prefix: 24,
                gateway: None,
            }),
            ipv6: Some(Ipv6Iface {
                addr: "2001:2::10".parse().unwrap(),
                prefix: 64,
                gateway: None,
            }),
        }
    }

    #[test]
    fn an_arp_request_asks_for_the_target_from_the_host() {
        let frame = request(&host(None), "198.18.0.1".parse().unwrap()).unwrap();
        assert_eq!(frame.len(), MIN_FRAME);
        let p = SlicedPacket::from_ethernet(&frame).unwrap();
        let eth = p.link.unwrap().to_header().unwrap();
        let eth = eth.ethernet2().unwrap();
        assert_eq!((eth.source, eth.destination), (MAC, BROADCAST));
        let Some(NetSlice::Arp(arp)) = p.net else {
            panic!("{:?}", p.net)
        };
        assert_eq!(arp.operation(), ArpOperation::REQUEST);
        assert_eq!(arp.sender_hw_addr(), MAC);
        assert_eq!(arp.sender_protocol_addr(), [198, 18, 0, 10]);
        assert_eq!(arp.target_protocol_addr(), [198, 18, 0, 1]);
    }

    #[test]
    fn a_solicitation_goes_to_the_solicited_node_group_with_a_valid_checksum() {
        let frame = request(&host(Some(100)), "2001:2::abcd:1234".parse().unwrap()).unwrap();
        let p = SlicedPacket::from_ethernet(&frame).unwrap();
        let Some(etherparse::VlanSlice::SingleVlan(vlan)) = p.vlan() else {
            panic!("{:?}", p.vlan())
        };
        assert_eq!(vlan.vlan_identifier().value(), 100);
        let eth = p.link.as_ref().unwrap().to_header().unwrap();
        assert_eq!(
            eth.ethernet2().unwrap().destination,
            [0x33, 0x33, 0xff, 0xcd, 0x12, 0x34]
        );
        let Some(NetSlice::Ipv6(ip)) = &p.net else {
            panic!("{:?}", p.net)
        };
        let h = ip.header();
        assert_eq!(h.hop_limit(), 255);
        assert_eq!(h.source_addr(), "2001:2::10".parse::<Ipv6Addr>().unwrap());
        assert_eq!(
            h.destination_addr(),
            "ff02::1:ffcd:1234".parse::<Ipv6Addr>().unwrap()
        );
        let Some(TransportSlice::Icmpv6(icmp)) = &p.transport else {
            panic!("{:?}", p.transport)
        };
        assert_eq!(icmp.icmp_type(), Icmpv6Type::NeighborSolicitation);
        let want = icmp
            .icmp_type()
            .calc_checksum(h.source(), h.destination(), icmp.payload())
            .unwrap();
        assert_eq!(icmp.checksum(), want);
        let payload = icmp.payload();
        assert_eq!(
            payload[..16],
            "2001:2::abcd:1234".parse::<Ipv6Addr>().unwrap().octets()
        );
        assert_eq!(payload[16..], [1, 1, 2, 0, 0, 0, 0, 0x10]);
    }

    #[test]
    fn a_link_local_target_is_asked_from_the_link_local_address() {
        let frame = request(&host(None), "fe80::1".parse().unwrap()).unwrap();
        let p = SlicedPacket::from_ethernet(&frame).unwrap();
        let Some(NetSlice::Ipv6(ip)) = &p.net else {
            panic!()
        };
        assert_eq!(ip.header().source_addr(), host(None).link_local());
    }

    #[test]
    fn a_host_without_the_family_cannot_ask() {
        let mut h = host(None);
        h.ipv4 = None;
        assert!(matches!(
            request(&h, "198.18.0.1".parse().unwrap()),
            Err(HostError::NoAddress { .. })
        ));
    }
}
