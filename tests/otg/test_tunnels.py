"""Issue 25's "done when": a snappi flow in VXLAN with inner IPv4/UDP and an incrementing inner
source port, captured at the receiving port, every frame decoded as configured by scapy and
pypcapfile (not by linerate)."""
from test_otg import capture, config, flow, run_to_end


def test_a_vxlan_flow_with_an_incrementing_inner_port_decodes_as_configured(api, lab, tmp_path):
    c = config(api, lab, capture=True)
    f = flow(c, "vxlan", size=128)
    f.rate.pps = 2000
    f.duration.fixed_packets.packets = 30
    f.packet.ethernet().ipv4().udp().vxlan().ethernet().ipv4().udp()
    _, outer_ip, _, vxlan, inner_eth, inner_ip, inner_udp = f.packet
    outer_ip.src.value, outer_ip.dst.value = "192.0.2.1", "192.0.2.2"
    vxlan.vni.value = 100
    inner_eth.src.value, inner_eth.dst.value = "02:00:00:00:01:01", "02:00:00:00:01:02"
    inner_ip.src.value, inner_ip.dst.value = "10.1.1.1", "10.1.1.2"
    inner_udp.src_port.increment.start = 5000
    inner_udp.src_port.increment.step = 1
    inner_udp.src_port.increment.count = 10
    inner_udp.dst_port.value = 7
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 30)["vxlan"]
    capture(api, "stop")
    assert m.frames_tx == 30 and m.frames_rx == 30
    req = api.capture_request()
    req.port_name = "rx"
    path = tmp_path / "vxlan.pcap"
    path.write_bytes(api.get_capture(req).read())

    from scapy.all import IP, UDP, VXLAN, Ether, rdpcap

    frames = [p for p in rdpcap(str(path)) if p.haslayer(VXLAN)]
    assert len(frames) == 30
    for i, p in enumerate(frames):
        assert len(p) == 128
        assert (p[IP].src, p[IP].dst, p[UDP].dport) == ("192.0.2.1", "192.0.2.2", 4789)
        assert p[VXLAN].vni == 100 and p[VXLAN].flags == 0x08
        inner = p[VXLAN].payload
        assert isinstance(inner, Ether) and inner.src == "02:00:00:00:01:01"
        assert (inner[IP].src, inner[IP].dst) == ("10.1.1.1", "10.1.1.2")
        assert (inner[UDP].sport, inner[UDP].dport) == (5000 + i % 10, 7)
        # The inner frame keeps 4 bytes for its FCS (as ixia-c sizes it): its IP packet is
        # the frame less the outer headers, both FCSs and the inner Ethernet header.
        assert inner[IP].len == 128 - 4 - 14 - 20 - 8 - 8 - 14 - 4
        assert inner[UDP].len == inner[IP].len - 20
        # Inner checksums as scapy computes them.
        again = Ether(bytes(inner))
        del again[IP].chksum, again[UDP].chksum
        again = Ether(bytes(again))
        assert again[IP].chksum == inner[IP].chksum
        assert again[UDP].chksum == inner[UDP].chksum

    from pcapfile import savefile

    with open(path, "rb") as fh:
        cap = savefile.load_savefile(fh, layers=0, verbose=False)
    vx = [p for p in cap.packets if p.raw()[36:38] == (4789).to_bytes(2, "big")]
    assert len(vx) == 30 and all(p.packet_len == 128 for p in vx)
    assert [int.from_bytes(p.raw()[84:86], "big") for p in vx] == [5000 + i % 10 for i in range(30)]


def test_vxlan_vni_values_over_ipv6_as_the_conformance_repo_sends_them(api, lab, tmp_path):
    # conformance's feature/b2b/packet/vxlan/test_vxlan_inner_ipv4.py: a VNI list on the outer
    # header, over IPv6 (whose UDP checksum covers the VNI), TCP inside.
    c = config(api, lab, capture=True)
    f = flow(c, "vni", size=256)
    f.rate.pps = 2000
    f.duration.fixed_packets.packets = 20
    eth1, ip6, udp, vxlan, eth2, ip, tcp = (
        f.packet.ethernet().ipv6().udp().vxlan().ethernet().ipv4().tcp()
    )
    eth1.src.value, eth1.dst.value = "00:00:01:01:01:01", "00:00:01:01:01:02"
    ip6.src.value, ip6.dst.value = "::1", "::2"
    udp.src_port.value, udp.dst_port.value = 4789, 4789
    vnis = [1000, 1001, 1002, 1003, 1004]
    vxlan.vni.values = vnis
    ip.src.value, ip.dst.value = "1.1.1.3", "1.1.1.4"
    tcp.src_port.value, tcp.dst_port.value = 80, 80
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 20)["vni"]
    capture(api, "stop")
    assert m.frames_tx == 20 and m.frames_rx == 20
    req = api.capture_request()
    req.port_name = "rx"
    path = tmp_path / "vni.pcap"
    path.write_bytes(api.get_capture(req).read())

    from scapy.all import IP, IPv6, TCP, UDP, VXLAN, Ether, rdpcap
    from scapy.layers.inet6 import in6_chksum

    frames = [p for p in rdpcap(str(path)) if p.haslayer(VXLAN)]
    assert len(frames) == 20
    for i, p in enumerate(frames):
        assert len(p) == 256
        assert p[VXLAN].vni == vnis[i % 5] and p[VXLAN].flags == 0x08
        assert p[TCP].sport == 80
        # The outer UDP checksum with scapy's pseudo-header sum over the bytes its length
        # names, as sent (scapy's own rebuild would leave the inner frame's FCS slot out).
        segment = bytearray(bytes(p[UDP])[: p[UDP].len])
        segment[6:8] = b"\0\0"
        assert in6_chksum(17, p[IPv6], bytes(segment)) == p[UDP].chksum, f"frame {i}"
        assert p[IPv6].plen == 256 - 14 - 40 - 4
        # The conformance test's inner length: less the inner frame's FCS slot too.
        assert p[IP].len == 256 - 14 - 4 - 40 - 8 - 8 - 14 - 4
        assert p[TCP].dataofs == 5
