//! The hosts' XDP code in the kernel (BPF_PROG_RUN, no interface needed): each answer decoded by
//! etherparse, an independent decoder, with its checksums recomputed there. Needs root; with
//! CI=true a non-root run fails instead of skipping.
#![cfg(target_os = "linux")]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use etherparse::{
    ArpHardwareId, ArpOperation, ArpPacket, EtherType, Icmpv4Type, Icmpv6Type, IpNumber, LinkSlice,
    NetSlice, PacketBuilder, SlicedPacket, TransportSlice, VlanSlice,
};
use libbpf_rs::ProgramInput;
use libbpf_rs::libbpf_sys::{XDP_DROP, XDP_PASS, XDP_TX};
use linerate_hosts::{Host, HostCounters, HostProgram, Ipv4Iface, Ipv6Iface, MacAddr, frames};

const HOST_MAC: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const PEER_MAC: MacAddr = [0x02, 0, 0, 0, 0, 0x01];
const HOST_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 10);
const PEER_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const HOST_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0x10);
const PEER_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 1);

fn root_or_skip() -> bool {
    linerate_lab::root_or_skip("hosts program tests (loading BPF)")
}

fn host(vlan: Option<u16>) -> Host {
    Host {
        name: "h1".into(),
        mac: HOST_MAC,
        vlan,
        ipv4: Some(Ipv4Iface {
            addr: HOST_V4,
            prefix: 24,
            gateway: Some(PEER_V4),
        }),
        ipv6: Some(Ipv6Iface {
            addr: HOST_V6,
            prefix: 64,
            gateway: Some(PEER_V6),
        }),
    }
}

fn program(vlan: Option<u16>) -> HostProgram {
    let program = HostProgram::load().unwrap();
    program.table().add(&host(vlan)).unwrap();
    program
}

/// Runs one frame through the program; its verdict and the frame as the program left it.
fn run(program: &mut HostProgram, frame: &[u8]) -> (u32, Vec<u8>) {
    let mut out = vec![0u8; 4096];
    let input = ProgramInput {
        data_in: Some(frame),
        data_out: Some(&mut out),
        repeat: 1,
        ..ProgramInput::default()
    };
    let output = program.program().test_run(input).expect("BPF_PROG_RUN");
    let data = output.data.expect("the frame comes back").to_vec();
    (output.return_value, data)
}

fn tag(vlan: Option<u16>, mut frame: Vec<u8>) -> Vec<u8> {
    if let Some(v) = vlan {
        let mut t = vec![0x81, 0x00];
        t.extend_from_slice(&v.to_be_bytes());
        frame.splice(12..12, t);
    }
    frame
}

fn eth_of(p: &SlicedPacket<'_>) -> (MacAddr, MacAddr) {
    let Some(LinkSlice::Ethernet2(eth)) = &p.link else {
        panic!("{:?}", p.link)
    };
    (eth.source(), eth.destination())
}

fn vlan_of(p: &SlicedPacket<'_>) -> Option<u16> {
    match p.vlan() {
        Some(VlanSlice::SingleVlan(v)) => Some(v.vlan_identifier().value()),
        None => None,
        other => panic!("{other:?}"),
    }
}

fn arp_request(vlan: Option<u16>, target: Ipv4Addr) -> Vec<u8> {
    frames::arp_request(PEER_MAC, vlan, PEER_V4, target)
}

fn counters(program: &HostProgram) -> HostCounters {
    program.table().counters().unwrap()
}

#[test]
fn an_arp_request_for_a_host_gets_its_reply_and_teaches_the_sender() {
    if !root_or_skip() {
        return;
    }
    for vlan in [None, Some(100)] {
        let mut program = program(vlan);
        let (verdict, reply) = run(&mut program, &arp_request(vlan, HOST_V4));
        assert_eq!(verdict, XDP_TX);
        let p = SlicedPacket::from_ethernet(&reply).unwrap();
        assert_eq!(eth_of(&p), (HOST_MAC, PEER_MAC));
        assert_eq!(vlan_of(&p), vlan);
        let Some(NetSlice::Arp(arp)) = &p.net else {
            panic!("{:?}", p.net)
        };
        assert_eq!(arp.operation(), ArpOperation::REPLY);
        assert_eq!(arp.sender_hw_addr(), HOST_MAC);
        assert_eq!(arp.sender_protocol_addr(), HOST_V4.octets());
        assert_eq!(arp.target_hw_addr(), PEER_MAC);
        assert_eq!(arp.target_protocol_addr(), PEER_V4.octets());
        let t = program.table();
        assert_eq!(t.neighbour(PEER_V4.into(), vlan).unwrap(), Some(PEER_MAC));
        assert_eq!(
            t.neighbour(PEER_V4.into(), Some(vlan.unwrap_or(0) + 1))
                .unwrap(),
            None
        );
        let c = counters(&program);
        assert_eq!((c.arp_replies, c.learned, c.dropped), (1, 1, 0));

        // Another VLAN, another address: nobody's; dropped by host.bpf.c, counted.
        let (verdict, _) = run(&mut program, &arp_request(Some(7), HOST_V4));
        assert_eq!(verdict, XDP_DROP);
        let (verdict, _) = run(
            &mut program,
            &arp_request(vlan, Ipv4Addr::new(198, 18, 0, 11)),
        );
        assert_eq!(verdict, XDP_DROP);
        assert_eq!(counters(&program).dropped, 2);
        assert_eq!(counters(&program).arp_replies, 1);
    }
}

#[test]
fn an_arp_reply_to_a_host_is_learned() {
    if !root_or_skip() {
        return;
    }
    let mut program = program(None);
    let gw_mac = [0x02, 0xaa, 0, 0, 0, 1];
    let arp = ArpPacket::new(
        ArpHardwareId::ETHERNET,
        EtherType::IPV4,
        ArpOperation::REPLY,
        &gw_mac,
        &PEER_V4.octets(),
        &HOST_MAC,
        &HOST_V4.octets(),
    )
    .unwrap();
    let mut frame = Vec::new();
    PacketBuilder::ethernet2(gw_mac, HOST_MAC)
        .arp(arp)
        .write_to_vec(&mut frame)
        .unwrap();
    assert_eq!(run(&mut program, &frame).0, XDP_DROP);
    let neighbours = program.table().neighbours().unwrap();
    assert_eq!(neighbours.len(), 1);
    assert_eq!(
        (neighbours[0].addr, neighbours[0].vlan, neighbours[0].mac),
        (IpAddr::V4(PEER_V4), None, gw_mac)
    );
    let c = counters(&program);
    assert_eq!((c.arp_replies, c.learned, c.dropped), (0, 1, 0));
}

#[test]
fn a_ping_to_a_host_gets_an_echo_reply_with_valid_checksums() {
    if !root_or_skip() {
        return;
    }
    for vlan in [None, Some(4094)] {
        let mut program = program(vlan);
        let payload: Vec<u8> = (0..56u8).collect();
        let mut frame = Vec::new();
        PacketBuilder::ethernet2(PEER_MAC, HOST_MAC)
            .ipv4(PEER_V4.octets(), HOST_V4.octets(), 17)
            .icmpv4_echo_request(0x1234, 7)
            .write_to_vec(&mut frame, &payload)
            .unwrap();
        let (verdict, reply) = run(&mut program, &tag(vlan, frame));
        assert_eq!(verdict, XDP_TX);
        let p = SlicedPacket::from_ethernet(&reply).unwrap();
        assert_eq!(eth_of(&p), (HOST_MAC, PEER_MAC));
        assert_eq!(vlan_of(&p), vlan);
        let Some(NetSlice::Ipv4(ip)) = &p.net else {
            panic!("{:?}", p.net)
        };
        let h = ip.header().to_header();
        assert_eq!(
            (h.source, h.destination, h.time_to_live),
            (HOST_V4.octets(), PEER_V4.octets(), 64)
        );
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        let Some(TransportSlice::Icmpv4(icmp)) = &p.transport else {
            panic!("{:?}", p.transport)
        };
        let Icmpv4Type::EchoReply(echo) = icmp.icmp_type() else {
            panic!("{:?}", icmp.icmp_type())
        };
        assert_eq!((echo.id, echo.seq), (0x1234, 7));
        assert_eq!(icmp.payload(), &payload[..]);
        assert_eq!(
            icmp.checksum(),
            icmp.icmp_type().calc_checksum(icmp.payload())
        );
        assert_eq!(counters(&program).echo_replies, 1);
    }
}

fn ipv6_icmp(src: Ipv6Addr, dst: Ipv6Addr, hop: u8, t: Icmpv6Type, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    PacketBuilder::ethernet2(PEER_MAC, HOST_MAC)
        .ipv6(src.octets(), dst.octets(), hop)
        .icmpv6(t)
        .write_to_vec(&mut frame, payload)
        .unwrap();
    frame
}

/// Checks an NA as RFC 4861 §4.4 has it, and returns its flags word.
fn check_na(
    reply: &[u8],
    vlan: Option<u16>,
    dst_mac: MacAddr,
    dst: Ipv6Addr,
    target: Ipv6Addr,
) -> u8 {
    let p = SlicedPacket::from_ethernet(reply).unwrap();
    assert_eq!(eth_of(&p), (HOST_MAC, dst_mac));
    assert_eq!(vlan_of(&p), vlan);
    let Some(NetSlice::Ipv6(ip)) = &p.net else {
        panic!("{:?}", p.net)
    };
    let h = ip.header();
    assert_eq!((h.source_addr(), h.destination_addr()), (target, dst));
    assert_eq!(
        (h.hop_limit(), h.payload_length(), h.next_header()),
        (255, 32, IpNumber::IPV6_ICMP)
    );
    let Some(TransportSlice::Icmpv6(icmp)) = &p.transport else {
        panic!("{:?}", p.transport)
    };
    let Icmpv6Type::NeighborAdvertisement(na) = icmp.icmp_type() else {
        panic!("{:?}", icmp.icmp_type())
    };
    assert!(!na.router);
    let payload = icmp.payload();
    assert_eq!(payload[..16], target.octets());
    // The Target Link-Layer Address option, the host's MAC.
    assert_eq!(payload[16..], [2, 1, 2, 0, 0, 0, 0, 0x10]);
    let want = icmp
        .icmp_type()
        .calc_checksum(h.source(), h.destination(), payload)
        .unwrap();
    assert_eq!(icmp.checksum(), want, "the NA's checksum");
    assert_eq!(reply.len(), 14 + vlan.map_or(0, |_| 4) + 40 + 32);
    u8::from(na.solicited) << 1 | u8::from(na.r#override)
}

#[test]
fn a_solicitation_for_a_host_gets_an_advertisement_with_a_valid_checksum() {
    if !root_or_skip() {
        return;
    }
    for vlan in [None, Some(100)] {
        let mut program = program(vlan);
        let ns = frames::neighbour_solicitation(PEER_MAC, vlan, PEER_V6, HOST_V6);
        let (verdict, reply) = run(&mut program, &ns);
        assert_eq!(verdict, XDP_TX);
        assert_eq!(
            check_na(&reply, vlan, PEER_MAC, PEER_V6, HOST_V6),
            0b11,
            "S and O"
        );
        assert_eq!(
            program.table().neighbour(PEER_V6.into(), vlan).unwrap(),
            Some(PEER_MAC)
        );

        // The host's link-local address is answered too.
        let ll = host(vlan).link_local();
        let (verdict, reply) = run(
            &mut program,
            &frames::neighbour_solicitation(PEER_MAC, vlan, PEER_V6, ll),
        );
        assert_eq!(verdict, XDP_TX);
        check_na(&reply, vlan, PEER_MAC, PEER_V6, ll);
        let c = counters(&program);
        assert_eq!((c.nd_replies, c.learned), (2, 2));
    }
}

#[test]
fn duplicate_address_detection_is_answered_to_all_nodes_in_a_longer_frame() {
    if !root_or_skip() {
        return;
    }
    let mut program = program(None);
    // From ::, without a source link-layer option: 24 bytes of ICMPv6 grow to the NA's 32.
    let ns = ipv6_icmp(
        Ipv6Addr::UNSPECIFIED,
        "ff02::1:ff00:10".parse().unwrap(),
        255,
        Icmpv6Type::NeighborSolicitation,
        &HOST_V6.octets(),
    );
    let (verdict, reply) = run(&mut program, &ns);
    assert_eq!(verdict, XDP_TX);
    let flags = check_na(
        &reply,
        None,
        [0x33, 0x33, 0, 0, 0, 1],
        "ff02::1".parse().unwrap(),
        HOST_V6,
    );
    assert_eq!(flags, 0b01, "O only: not solicited");
    assert!(
        program.table().neighbours().unwrap().is_empty(),
        ":: is nobody"
    );
}

#[test]
fn a_solicitation_that_a_router_may_have_forwarded_is_not_answered() {
    if !root_or_skip() {
        return;
    }
    let mut program = program(None);
    let mut ns = frames::neighbour_solicitation(PEER_MAC, None, PEER_V6, HOST_V6);
    ns[14 + 7] = 254;
    assert_eq!(run(&mut program, &ns).0, XDP_DROP);
    assert_eq!(counters(&program).nd_replies, 0);
    assert_eq!(counters(&program).dropped, 1);
}

#[test]
fn an_ipv6_ping_to_a_host_gets_an_echo_reply() {
    if !root_or_skip() {
        return;
    }
    let mut program = program(None);
    let payload = [0xabu8; 40];
    let frame = ipv6_icmp(
        PEER_V6,
        HOST_V6,
        64,
        Icmpv6Type::EchoRequest(etherparse::IcmpEchoHeader { id: 9, seq: 3 }),
        &payload,
    );
    let (verdict, reply) = run(&mut program, &frame);
    assert_eq!(verdict, XDP_TX);
    let p = SlicedPacket::from_ethernet(&reply).unwrap();
    assert_eq!(eth_of(&p), (HOST_MAC, PEER_MAC));
    let Some(NetSlice::Ipv6(ip)) = &p.net else {
        panic!()
    };
    let h = ip.header();
    assert_eq!(
        (h.source_addr(), h.destination_addr(), h.hop_limit()),
        (HOST_V6, PEER_V6, 64)
    );
    let Some(TransportSlice::Icmpv6(icmp)) = &p.transport else {
        panic!()
    };
    assert_eq!(
        icmp.icmp_type(),
        Icmpv6Type::EchoReply(etherparse::IcmpEchoHeader { id: 9, seq: 3 })
    );
    let want = icmp
        .icmp_type()
        .calc_checksum(h.source(), h.destination(), icmp.payload())
        .unwrap();
    assert_eq!(icmp.checksum(), want);
    assert_eq!(counters(&program).echo_replies, 1);
}

#[test]
fn an_advertisement_to_a_host_is_learned_and_one_claiming_a_host_is_not() {
    if !root_or_skip() {
        return;
    }
    let mut program = program(None);
    let router = [0x02, 0xbb, 0, 0, 0, 1];
    let na = |target: Ipv6Addr, dst: Ipv6Addr| {
        let mut payload = target.octets().to_vec();
        payload.extend_from_slice(&[2, 1]);
        payload.extend_from_slice(&router);
        // RFC 4861 §7.1.2: one sent to a group is not solicited.
        let header = etherparse::icmpv6::NeighborAdvertisementHeader {
            router: true,
            solicited: !dst.is_multicast(),
            r#override: true,
        };
        ipv6_icmp(
            PEER_V6,
            dst,
            255,
            Icmpv6Type::NeighborAdvertisement(header),
            &payload,
        )
    };
    assert_eq!(run(&mut program, &na(PEER_V6, HOST_V6)).0, XDP_DROP);
    assert_eq!(
        program.table().neighbour(PEER_V6.into(), None).unwrap(),
        Some(router)
    );
    let other: Ipv6Addr = "2001:2::99".parse().unwrap();
    // To all nodes: learned, and left for others (host.bpf.c drops it, counted).
    assert_eq!(
        run(&mut program, &na(other, "ff02::1".parse().unwrap())).0,
        XDP_DROP
    );
    assert_eq!(
        program.table().neighbour(other.into(), None).unwrap(),
        Some(router)
    );
    assert_eq!(counters(&program).dropped, 1);
    // Someone claiming the host's address teaches nothing.
    run(&mut program, &na(HOST_V6, "ff02::1".parse().unwrap()));
    assert_eq!(
        program.table().neighbour(HOST_V6.into(), None).unwrap(),
        None
    );
    assert_eq!(counters(&program).learned, 2);
}

#[test]
fn test_traffic_is_dropped_and_counted() {
    if !root_or_skip() {
        return;
    }
    let mut program = program(None);
    let mut frame = Vec::new();
    PacketBuilder::ethernet2(PEER_MAC, HOST_MAC)
        .ipv4(PEER_V4.octets(), HOST_V4.octets(), 64)
        .udp(1024, 5001)
        .write_to_vec(&mut frame, &[0; 18])
        .unwrap();
    assert_eq!(run(&mut program, &frame).0, XDP_DROP);
    assert_eq!(
        counters(&program),
        HostCounters {
            dropped: 1,
            ..HostCounters::default()
        }
    );
}

#[test]
fn the_receiver_answers_for_its_hosts_and_counts_the_rest() {
    if !root_or_skip() {
        return;
    }
    let mut rx = linerate_rx::Receiver::load(linerate_rx::RxConfig::default()).unwrap();
    let table = rx.hosts().unwrap();
    // Without hosts, an ARP request goes on to the stack behind the port (a lab's receive end
    // holds the receiver's address and answers), counted nowhere.
    let frame = arp_request(None, HOST_V4);
    let run_rx = |rx: &mut linerate_rx::Receiver| {
        let input = ProgramInput {
            data_in: Some(&frame),
            repeat: 1,
            ..ProgramInput::default()
        };
        rx.program().test_run(input).unwrap().return_value
    };
    assert_eq!(run_rx(&mut rx), XDP_PASS);
    assert_eq!(rx.read().unwrap().global.other_frames, 0);
    table.add(&host(None)).unwrap();
    assert_eq!(run_rx(&mut rx), XDP_TX);
    assert_eq!(
        rx.read().unwrap().global.other_frames,
        0,
        "answered: not other"
    );
    assert_eq!(table.counters().unwrap().arp_replies, 1);
}

#[test]
fn a_removed_or_cleared_host_is_answered_no_more() {
    if !root_or_skip() {
        return;
    }
    let mut program = program(None);
    let request = arp_request(None, HOST_V4);
    assert_eq!(run(&mut program, &request).0, XDP_TX);
    program.table().remove(&host(None)).unwrap();
    assert_eq!(run(&mut program, &request).0, XDP_DROP);
    // Removing twice is no error.
    program.table().remove(&host(None)).unwrap();

    program.table().add(&host(None)).unwrap();
    assert_eq!(run(&mut program, &request).0, XDP_TX);
    assert_eq!(program.table().neighbours().unwrap().len(), 1);
    program.table().clear().unwrap();
    assert!(program.table().neighbours().unwrap().is_empty());
    let ns = frames::neighbour_solicitation(PEER_MAC, None, PEER_V6, HOST_V6);
    assert_eq!(run(&mut program, &request).0, XDP_DROP);
    assert_eq!(run(&mut program, &ns).0, XDP_DROP);
    assert_eq!(counters(&program).arp_replies, 2, "counters stay");
}

/// MACs no neighbour can answer with (RFC 1812 §3.3.2): broadcast, IPv4 and IPv6 multicast,
/// all zeros, and the host's own.
const BOGUS: [MacAddr; 5] = [
    [0xff; 6],
    [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01],
    [0x33, 0x33, 0x00, 0x00, 0x00, 0x01],
    [0; 6],
    HOST_MAC,
];

/// An ARP reply to the host from PEER_V4 claiming `mac` (the Ethernet source says the same).
fn arp_reply_from(mac: MacAddr) -> Vec<u8> {
    let arp = ArpPacket::new(
        ArpHardwareId::ETHERNET,
        EtherType::IPV4,
        ArpOperation::REPLY,
        &mac,
        &PEER_V4.octets(),
        &HOST_MAC,
        &HOST_V4.octets(),
    )
    .unwrap();
    let mut frame = Vec::new();
    PacketBuilder::ethernet2(mac, HOST_MAC)
        .arp(arp)
        .write_to_vec(&mut frame)
        .unwrap();
    frame
}

/// A solicited advertisement to the host for PEER_V6 whose target link-layer option is `mac`.
fn na_from(mac: MacAddr) -> Vec<u8> {
    let mut payload = PEER_V6.octets().to_vec();
    payload.extend_from_slice(&[2, 1]);
    payload.extend_from_slice(&mac);
    let header = etherparse::icmpv6::NeighborAdvertisementHeader {
        router: true,
        solicited: true,
        r#override: true,
    };
    ipv6_icmp(
        PEER_V6,
        HOST_V6,
        255,
        Icmpv6Type::NeighborAdvertisement(header),
        &payload,
    )
}

#[test]
fn an_answer_with_a_group_zero_or_own_mac_teaches_nothing_and_replaces_no_neighbour() {
    if !root_or_skip() {
        return;
    }
    let gw_mac = [0x02, 0xaa, 0, 0, 0, 1];
    for bogus in BOGUS {
        let mut program = program(None);
        assert_eq!(run(&mut program, &arp_reply_from(bogus)).0, XDP_DROP);
        assert_eq!(run(&mut program, &na_from(bogus)).0, XDP_DROP);
        let t = program.table();
        assert_eq!(
            t.neighbour(PEER_V4.into(), None).unwrap(),
            None,
            "{bogus:02x?}"
        );
        assert_eq!(
            t.neighbour(PEER_V6.into(), None).unwrap(),
            None,
            "{bogus:02x?}"
        );
        assert!(t.neighbours().unwrap().is_empty(), "{bogus:02x?}");
        assert_eq!(counters(&program).learned, 0, "{bogus:02x?}");

        // A neighbour learned stays when a spoofer answers after it with such a MAC.
        run(&mut program, &arp_reply_from(gw_mac));
        run(&mut program, &na_from(gw_mac));
        run(&mut program, &arp_reply_from(bogus));
        run(&mut program, &na_from(bogus));
        let t = program.table();
        assert_eq!(t.neighbour(PEER_V4.into(), None).unwrap(), Some(gw_mac));
        assert_eq!(t.neighbour(PEER_V6.into(), None).unwrap(), Some(gw_mac));
        assert_eq!(counters(&program).learned, 2, "{bogus:02x?}");
    }
}
