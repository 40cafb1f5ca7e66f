//! Tunnelled streams compiled into plans: every frame checked byte by byte and by etherparse.

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use linerate_wire::checksum::{fold, sum};
use linerate_wire::{Rng, signature};

use crate::{Limits, Plan, Shape, SpecFile, StreamError, StreamSpec};

fn tunnelled(encap: &str, vary: &[&str]) -> StreamSpec {
    StreamSpec {
        size: 160,
        encap: Some(encap.parse().unwrap()),
        vary: vary.iter().map(|v| v.parse().unwrap()).collect(),
        signature: true,
        ..StreamSpec::default()
    }
}

fn compile(s: StreamSpec) -> Result<Plan, StreamError> {
    Plan::compile(&[s], &Limits::default())
}

/// Frames `0..n` of a one-stream plan, every per-frame patch applied, as the worker sends them.
fn frames(plan: &Plan, n: u64) -> Vec<Vec<u8>> {
    let Shape::Cycle { cycle, .. } = &plan.shape else {
        panic!("one cycle");
    };
    let mut rng = Rng::new(cycle.seed);
    (0..n)
        .map(|k| {
            let mut f = cycle.frames[(k % cycle.frames.len() as u64) as usize].clone();
            for p in &cycle.patches {
                p.apply(&mut f, k, &mut rng);
            }
            signature::stamp(&mut f, k as u32, 0x1234_5678_9abc + k);
            f
        })
        .collect()
}

/// The inner IPv4/UDP packet of an Ethernet frame starting at `at`: its checksums checked by
/// etherparse; returns the UDP source port.
fn inner_udp_port(frame: &[u8], at: usize) -> u16 {
    let p = SlicedPacket::from_ethernet(&frame[at..]).expect("inner frame");
    let (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Udp(u))) = (p.net, p.transport) else {
        panic!("inner ipv4/udp");
    };
    let header = ip.header().to_header();
    assert_eq!(header.calc_header_checksum(), header.header_checksum);
    let h = u.to_header();
    assert_eq!(
        h.calc_checksum_ipv4(&header, u.payload()).unwrap(),
        h.checksum
    );
    // The inner frame keeps 4 bytes for its FCS after its IP packet.
    assert_eq!(usize::from(header.total_len), frame.len() - at - 14 - 4);
    h.source_port
}

#[test]
fn a_vxlan_flow_varies_its_inner_port_and_keeps_every_checksum() {
    let encap = "ethernet/ipv4:src=192.0.2.1,dst=192.0.2.2/udp/vxlan:vni=100";
    for vary in ["src-port:inc:1000-1003", "src-port:random:1000-1003"] {
        let plan = compile(tunnelled(encap, &[vary])).unwrap();
        for (k, f) in frames(&plan, 8).iter().enumerate() {
            assert_eq!(f.len(), 156);
            // Outer: IPv4 to 192.0.2.2, UDP to 4789 with a zero checksum, VXLAN I flag and VNI.
            assert_eq!(&f[12..14], &[0x08, 0x00]);
            assert_eq!(&f[30..34], &[192, 0, 2, 2]);
            assert_eq!(&f[36..38], &4789u16.to_be_bytes());
            assert_eq!(&f[40..42], &[0, 0]);
            assert_eq!(&f[42..50], &[0x08, 0, 0, 0, 0, 0, 100, 0]);
            let port = inner_udp_port(f, 50);
            assert!((1000..=1003).contains(&port), "{vary}: {port}");
            if vary.contains("inc") {
                assert_eq!(port, 1000 + (k as u16 % 4));
            }
            let sig = signature::parse(f).expect("the signature ends the outer frame");
            assert_eq!((sig.flow, sig.seq), (0, k as u32));
        }
    }
}

/// Sums `covered` with the checksum it holds: a valid one folds to ones.
fn valid(covered: &[u8]) -> bool {
    fold(sum(covered, 0)) == 0xFFFF
}

#[test]
fn an_outer_checksum_over_an_inner_field_is_refilled_in_pre_built_frames() {
    let encap = "ethernet/ipv4/gre:checksum=on,key=5";
    let plan = compile(tunnelled(encap, &["dst-ip:inc:10.0.0.1-10.0.0.4"])).unwrap();
    assert!(plan.streams[0].patched.is_empty());
    for (k, f) in frames(&plan, 8).iter().enumerate() {
        // GRE at 34 with C and K set, its checksum over everything after it.
        assert_eq!(&f[34..38], &[0xa0, 0x00, 0x08, 0x00]);
        assert!(valid(&f[34..]), "frame {k}");
        // No inner Ethernet after plain GRE: the inner IPv4 header follows the key word.
        let inner = &f[46..];
        assert!(valid(&inner[..20]));
        assert_eq!(inner[19], 1 + (k as u8 % 4));
        let p = SlicedPacket::from_ip(inner).unwrap();
        let (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Udp(u))) = (p.net, p.transport) else {
            panic!("inner ipv4/udp");
        };
        let h = u.to_header();
        let want = h
            .calc_checksum_ipv4(&ip.header().to_header(), u.payload())
            .unwrap();
        assert_eq!(want, h.checksum);
    }
    // A field patched in every frame cannot keep the GRE checksum: refused, naming both.
    let err = compile(tunnelled(encap, &["dst-ip:random:10.0.0.1-10.0.0.4"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dst-ip") && err.contains("gre checksum"),
        "{err}"
    );
    // An outer field (the outer IPv4 identification, bytes 18-19) through byte@.
    let plan = compile(tunnelled(encap, &["byte@18/2:inc:7-9"])).unwrap();
    for (k, f) in frames(&plan, 3).iter().enumerate() {
        assert_eq!(&f[18..20], &(7 + k as u16).to_be_bytes());
        assert!(valid(&f[14..34]), "outer IPv4 header of frame {k}");
        assert!(valid(&f[34..]));
    }
}

#[test]
fn mpls_gtpu_qinq_and_ip_in_ip_streams_build_with_the_flow_inside() {
    for (encap, inner_ip_at) in [
        ("ethernet/mpls:label=100/mpls:label=200,tc=5", 22),
        ("ethernet/mpls:label=100/ethernet", 32),
        ("ethernet/vlan:id=10,tpid=0x88a8/vlan:id=20/ipv4", 42),
        ("ethernet/ipv4/udp/gtpv1u:teid=7", 50),
        ("ethernet/ipv6/udp/vxlan:vni=1", 84),
    ] {
        let plan = compile(tunnelled(encap, &["src-port:inc:1-3"])).unwrap();
        for (k, f) in frames(&plan, 3).iter().enumerate() {
            let p =
                SlicedPacket::from_ip(&f[inner_ip_at..]).unwrap_or_else(|e| panic!("{encap}: {e}"));
            let Some(TransportSlice::Udp(u)) = p.transport else {
                panic!("{encap}: inner udp");
            };
            assert_eq!(u.source_port(), 1 + k as u16, "{encap}");
            assert!(signature::parse(f).is_some());
        }
    }
}

#[test]
fn encap_mistakes_are_refused_with_the_header_they_concern() {
    let err = |s: StreamSpec| compile(s).unwrap_err().to_string();
    // The stream's VLAN tag needs its Ethernet header.
    let e = err(StreamSpec {
        vlan: Some(5),
        ..tunnelled("ethernet/mpls", &[])
    });
    assert!(e.contains("vlan") && e.contains("ethernet/mpls"), "{e}");
    // Not a tunnel: UDP carries the payload, not an IP header.
    let e = err(tunnelled("ethernet/ipv4/udp", &[]));
    assert!(
        e.contains("cannot follow udp") && e.contains("vxlan"),
        "{e}"
    );
    // A closing bare ethernet is the stream's own, which VXLAN carries anyway.
    let frames_of = |encap| frames(&compile(tunnelled(encap, &[])).unwrap(), 1);
    assert_eq!(
        frames_of("ethernet/ipv4/udp/vxlan/ethernet"),
        frames_of("ethernet/ipv4/udp/vxlan")
    );
    // Sizes count the outer headers.
    let e = err(StreamSpec {
        size: 96,
        ..tunnelled("ethernet/ipv6/udp/vxlan", &[])
    });
    // 14 + 40 + 8 + 8 outer, 14 + 20 + 8 inner, the inner FCS slot and the FCS.
    assert!(e.contains("below 120"), "{e}");
}

#[test]
fn the_stream_file_carries_the_encap_and_writes_it_back() {
    let file = SpecFile::parse(
        "[[stream]]\nsize = 128\nencap = \"ethernet/ipv4:dst=192.0.2.2/udp/vxlan:vni=100\"\n",
        "t.toml",
    )
    .unwrap();
    let s = &file.streams[0];
    assert_eq!(
        s.encap.as_ref().unwrap().to_string(),
        "ethernet/ipv4:dst=192.0.2.2/udp/vxlan:vni=100"
    );
    let again = SpecFile::parse(&toml::to_string(&file).unwrap(), "again.toml").unwrap();
    assert_eq!(again, file);
    let err = SpecFile::parse(
        "[[stream]]\nencap = \"ethernet/ipv4/udp/vxlan:vnid=1\"\n",
        "t.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("encap") && err.contains("vnid") && err.contains("line 2"),
        "{err}"
    );
}

#[test]
fn ip_and_ethernet_streams_carry_a_raw_payload_and_their_signature() {
    use crate::Proto;
    // IPv4 with no L4 header: protocol 61, the signature at the end of the payload, the
    // header checksum valid in every frame as the destination varies.
    let s = StreamSpec {
        proto: Proto::Ip,
        size: 128,
        signature: true,
        vary: vec!["dst-ip:list:10.0.0.9,10.0.0.1".parse().unwrap()],
        ..StreamSpec::default()
    };
    for (k, f) in frames(&compile(s).unwrap(), 4).iter().enumerate() {
        let p = SlicedPacket::from_ethernet(f).unwrap();
        let Some(NetSlice::Ipv4(ip)) = p.net else {
            panic!("ipv4");
        };
        let h = ip.header().to_header();
        assert_eq!((h.protocol.0, h.total_len), (61, 124 - 14));
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        assert_eq!(h.destination, [[10, 0, 0, 9], [10, 0, 0, 1]][k % 2]);
        assert!(p.transport.is_none());
        assert_eq!(signature::parse(f).unwrap().seq, k as u32);
    }
    // A port is not in such a frame.
    let s = StreamSpec {
        proto: Proto::Ip,
        vary: vec!["src-port:inc:1-4".parse().unwrap()],
        ..StreamSpec::default()
    };
    let err = compile(s).unwrap_err().to_string();
    assert!(err.contains("no L4 header"), "{err}");
    // Ethernet and a VLAN tag, then the payload: varying MACs, no IP at all.
    let s = StreamSpec {
        proto: Proto::Ethernet,
        vlan: Some(5),
        size: 64,
        signature: true,
        vary: vec![
            "src-mac:inc:02:00:00:00:00:01-02:00:00:00:00:03"
                .parse()
                .unwrap(),
        ],
        ..StreamSpec::default()
    };
    for (k, f) in frames(&compile(s).unwrap(), 3).iter().enumerate() {
        let p = SlicedPacket::from_ethernet(f).unwrap();
        assert!(p.net.is_none() && p.transport.is_none());
        assert_eq!(p.vlan_ids()[0].value(), 5);
        assert_eq!(&f[16..18], &[0xff, 0xff]);
        assert_eq!(f[11], 1 + k as u8);
        assert_eq!(signature::parse(f).unwrap().seq, k as u32);
    }
    let s = StreamSpec {
        proto: Proto::Ethernet,
        vary: vec!["dst-ip:inc:10.0.0.1-10.0.0.4".parse().unwrap()],
        ..StreamSpec::default()
    };
    let err = compile(s).unwrap_err().to_string();
    assert!(err.contains("no IP header"), "{err}");
}
