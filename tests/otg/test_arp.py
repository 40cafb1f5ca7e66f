"""A snappi flow of ARP: a gratuitous-ARP storm whose sender and target protocol addresses
count together, captured at the receiving port and decoded field by field by scapy; the
signature rides in the padding, so the flow's metrics count every frame."""
from test_otg import capture, config, flow, run_to_end


def test_a_gratuitous_arp_storm_decodes_as_configured(api, lab, tmp_path):
    c = config(api, lab, capture=True)
    f = flow(c, "garp", size=64)
    f.rate.pps = 2000
    f.duration.fixed_packets.packets = 40
    f.packet.ethernet().arp()
    eth, arp = f.packet
    eth.src.value, eth.dst.value = "02:00:00:00:02:01", "ff:ff:ff:ff:ff:ff"
    arp.operation.value = 1
    arp.sender_hardware_addr.value = "02:00:00:00:02:01"
    for addr in (arp.sender_protocol_addr, arp.target_protocol_addr):
        addr.increment.start = "10.9.0.1"
        addr.increment.step = "0.0.0.1"
        addr.increment.count = 16
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 40)["garp"]
    capture(api, "stop")
    assert m.frames_tx == 40 and m.frames_rx == 40
    req = api.capture_request()
    req.port_name = "rx"
    path = tmp_path / "garp.pcap"
    path.write_bytes(api.get_capture(req).read())

    from scapy.all import ARP, rdpcap

    frames = [p for p in rdpcap(str(path)) if p.haslayer(ARP) and p.src == "02:00:00:00:02:01"]
    assert len(frames) == 40
    for i, p in enumerate(frames):
        assert len(p) == 64
        a = p[ARP]
        assert (a.hwtype, a.ptype, a.hwlen, a.plen, a.op) == (1, 0x0800, 6, 4, 1)
        ip = "10.9.0.%d" % (1 + i % 16)
        assert (a.hwsrc, a.psrc, a.pdst) == ("02:00:00:00:02:01", ip, ip)
        assert a.hwdst == "00:00:00:00:00:00"
