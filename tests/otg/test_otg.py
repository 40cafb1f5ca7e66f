"""The issue's cases, through snappi 1.60.0: exact counts, patterns checked frame by frame in a
capture (decoded by dpkt, not by linerate), rates, latency, two flows, and refusals."""
import io
import ipaddress
import os
import time

import dpkt
import pytest
import requests


def config(api, lab, capture=False, speed=None):
    c = api.config()
    tx = c.ports.add(name="tx", location=lab[0])
    rx = c.ports.add(name="rx", location=lab[1])
    if capture:
        c.captures.add(name="cap", port_names=[rx.name])
    if speed:
        l1 = c.layer1.add(name="l1", port_names=[tx.name, rx.name])
        l1.speed = speed
    return c


def flow(c, name, size=128):
    f = c.flows.add(name=name)
    f.tx_rx.port.tx_name = "tx"
    f.tx_rx.port.rx_names = ["rx"]
    f.metrics.enable = True
    f.size.fixed = size
    return f


def transmit(api, state):
    cs = api.control_state()
    cs.traffic.flow_transmit.state = state
    api.set_control_state(cs)


def capture(api, state):
    cs = api.control_state()
    cs.port.capture.state = state
    cs.port.capture.port_names = ["rx"]
    api.set_control_state(cs)


def flow_metrics(api, names=()):
    req = api.metrics_request()
    req.flow.flow_names = list(names)
    return api.get_metrics(req).flow_metrics


def run_to_end(api, want_rx, timeout=20):
    """Starts, waits for every flow to stop, then for the receiver to count what was sent."""
    transmit(api, "start")
    deadline = time.time() + timeout
    while time.time() < deadline:
        fm = flow_metrics(api)
        if all(m.transmit == "stopped" for m in fm):
            break
        time.sleep(0.05)
    while time.time() < deadline:
        fm = flow_metrics(api)
        rx = sum(m.frames_rx for m in fm)
        if rx >= want_rx or rx >= sum(m.frames_tx for m in fm):
            break
        time.sleep(0.05)
    return {m.name: m for m in fm}


def frames_of(api):
    req = api.capture_request()
    req.port_name = "rx"
    pcap = api.get_capture(req)
    out = []
    for _, raw in dpkt.pcap.Reader(io.BytesIO(pcap.read())):
        eth = dpkt.ethernet.Ethernet(raw)
        if isinstance(eth.data, (dpkt.ip.IP, dpkt.ip6.IP6)):
            out.append(eth)
    return out


def checksums_hold(raw):
    """Every IP and L4 checksum of a frame as scapy computes it afresh."""
    from scapy.all import Ether

    got = Ether(raw)
    summed = [l for l in got.layers() if any(f.name == "chksum" for f in l.fields_desc)]
    fresh = got.copy()
    for layer in summed:
        del fresh[layer].chksum
    fresh = Ether(bytes(fresh))
    return bool(summed) and all(got[l].chksum == fresh[l].chksum for l in summed)


def test_b2b_udp_10000_frames_at_10kpps_arrive_exactly(api, lab):
    c = config(api, lab)
    f = flow(c, "f1", size=64)
    f.rate.pps = 10000
    f.duration.fixed_packets.packets = 10000
    eth, ip, udp = f.packet.ethernet().ipv4().udp()
    api.set_config(c)
    m = run_to_end(api, 10000)["f1"]
    assert (m.frames_tx, m.frames_rx, m.transmit) == (10000, 10000, "stopped")
    assert m.bytes_tx == m.bytes_rx == 10000 * 64
    assert m.loss == 0
    req = api.metrics_request()
    req.port.port_names = ["tx", "rx"]
    ports = {p.name: p for p in api.get_metrics(req).port_metrics}
    assert ports["tx"].frames_tx == 10000 and ports["rx"].frames_rx == 10000
    assert ports["tx"].transmit == "stopped"


def test_udp_ports_and_ipv4_patterns_frame_by_frame(api, lab):
    c = config(api, lab, capture=True)
    f = flow(c, "pat")
    f.rate.pps = 2000
    f.duration.fixed_packets.packets = 40
    eth, ip, udp = f.packet.ethernet().ipv4().udp()
    # Not evenly spaced, a value repeated: a list (pre-built frames), not a counter.
    ip.src.values = ["10.0.0.9", "10.0.0.1", "10.0.0.4", "10.0.0.1"]
    ip.dst.increment.start = "10.1.0.10"
    ip.dst.increment.step = "0.0.0.2"
    ip.dst.increment.count = 4
    udp.src_port.values = [5010, 5015, 5020, 5025, 5030]
    udp.dst_port.decrement.start = 6030
    udp.dst_port.decrement.step = 5
    udp.dst_port.decrement.count = 5
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 40)["pat"]
    capture(api, "stop")
    assert m.frames_rx == 40
    frames = frames_of(api)
    assert len(frames) == 40
    for i, eth in enumerate(frames):
        ip, udp = eth.data, eth.data.data
        assert isinstance(udp, dpkt.udp.UDP)
        assert str(ipaddress.ip_address(ip.src)) == ["10.0.0.9", "10.0.0.1", "10.0.0.4", "10.0.0.1"][i % 4]
        assert checksums_hold(bytes(eth)), f"frame {i}"
        assert ipaddress.ip_address(ip.dst) == ipaddress.ip_address("10.1.0.10") + 2 * (i % 4)
        assert udp.sport == 5010 + 5 * (i % 5)
        assert udp.dport == 6030 - 5 * (i % 5)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_captured_frames_are_the_flow_size_with_their_fcs_in_every_reader(api, lab, tmp_path, fmt):
    # Issue 25: a capture of a 128-byte flow showed 124-byte frames (no FCS), big-endian
    # (pypcapfile read none of them), and pcapng was refused.
    import struct
    import zlib

    c = config(api, lab, capture=True)
    c.captures[0].format = fmt
    f = flow(c, "cap128", size=128)
    f.rate.pps = 2000
    f.duration.fixed_packets.packets = 21
    f.packet.ethernet().ipv4().udp()
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 21)["cap128"]
    capture(api, "stop")
    assert m.frames_rx == 21
    req = api.capture_request()
    req.port_name = "rx"
    data = api.get_capture(req).read()
    path = tmp_path / ("cap." + fmt)
    path.write_bytes(data)
    if fmt == "pcap":
        assert struct.unpack("=I", data[:4])[0] == 0xA1B23C4D, "a nanosecond pcap in host order"
        reader = dpkt.pcap.Reader(io.BytesIO(data))
    else:
        reader = dpkt.pcapng.Reader(io.BytesIO(data))
    frames = [raw for _, raw in reader if dpkt.ethernet.Ethernet(raw).type == 0x0800]
    assert len(frames) == 21
    for raw in frames:
        assert len(raw) == 128
        # The FCS as the wire carries it: the frame's CRC-32, least significant byte first.
        assert struct.unpack("<I", raw[-4:])[0] == zlib.crc32(raw[:-4]) & 0xFFFFFFFF
    from scapy.all import UDP, rdpcap

    ours = [p for p in rdpcap(str(path)) if p.haslayer(UDP)]
    assert len(ours) == 21 and all(len(p) == 128 for p in ours)
    if fmt == "pcap":
        from pcapfile import savefile

        with open(path, "rb") as fh:
            cap = savefile.load_savefile(fh, layers=0, verbose=False)
        assert sum(1 for p in cap.packets if p.packet_len == 128) == 21


def test_ipv6_tcp_and_vlan_frame_by_frame(api, lab):
    c = config(api, lab, capture=True)
    f = flow(c, "v6")
    f.rate.pps = 2000
    f.duration.fixed_packets.packets = 12
    eth, vlan, ip, tcp = f.packet.ethernet().vlan().ipv6().tcp()
    vlan.id.value = 100
    vlan.priority.value = 3
    ip.src.increment.start = "2001:db8::1"
    ip.src.increment.step = "::1"
    ip.src.increment.count = 4
    ip.dst.value = "2001:db8::ff"
    tcp.dst_port.increment.start = 80
    tcp.dst_port.increment.count = 3
    tcp.ctl_syn.value = 1
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 12)["v6"]
    capture(api, "stop")
    assert m.frames_rx == 12
    frames = frames_of(api)
    assert len(frames) == 12
    for i, eth in enumerate(frames):
        assert eth.vlan_tags[0].id == 100 and eth.vlan_tags[0].pri == 3
        ip, tcp = eth.data, eth.data.data
        assert isinstance(ip, dpkt.ip6.IP6) and isinstance(tcp, dpkt.tcp.TCP)
        assert ipaddress.ip_address(ip.src) == ipaddress.ip_address("2001:db8::1") + (i % 4)
        assert ipaddress.ip_address(ip.dst) == ipaddress.ip_address("2001:db8::ff")
        assert tcp.dport == 80 + (i % 3) and tcp.flags == dpkt.tcp.TH_SYN


def test_rate_as_percentage_for_fixed_seconds_with_latency(api, lab):
    c = config(api, lab, speed="speed_1_gbps")
    f = flow(c, "pct", size=64)
    # 0.5 % of 1 Gbit/s at 64 B (84 B on the wire): 7440.5 frames/s.
    f.rate.percentage = 0.5
    f.duration.fixed_seconds.seconds = 1
    f.metrics.latency.enable = True
    f.metrics.latency.mode = "cut_through"
    f.metrics.timestamps = True
    f.packet.ethernet().ipv4().udp()
    api.set_config(c)
    m = run_to_end(api, 7000)["pct"]
    want = 1e9 * 0.005 / (84 * 8)
    lat, ts = m.latency, m.timestamps
    span = ts.last_timestamp_ns - ts.first_timestamp_ns
    facts = (m.frames_tx, m.frames_rx, span, lat.minimum_ns, lat.average_ns, lat.maximum_ns)
    # The pacer never sends ahead of the asked rate and the run ends at 1 s, give or take the
    # stop's own latency (a CI run ended at 1.0099 s: 7515 frames, 1.0 % over by 0.1 frame),
    # so 2 % above holds on any machine. On a loaded 2-core machine it can fall behind (7152 of
    # 7440 seen), so the lower bound is loose; either way far from a misread unit (0.5 % of
    # 10 Gbit/s, or 0.5 frames/s).
    assert 0.5 * want <= m.frames_tx <= 1.02 * want, facts
    assert 0.5e9 <= span <= 1.01e9, facts
    assert m.frames_rx == m.frames_tx, facts
    assert 0 < lat.minimum_ns <= lat.average_ns <= lat.maximum_ns < 1e9, facts


def test_two_flows_on_one_port_and_port_metrics_are_their_sum(api, lab):
    c = config(api, lab)
    for name, n, pps in (("a", 3000, 6000), ("b", 2000, 4000)):
        f = flow(c, name)
        f.rate.pps = pps
        f.duration.fixed_packets.packets = n
        eth, ip, udp = f.packet.ethernet().ipv4().udp()
        udp.src_port.value = 1000 if name == "a" else 2000
        if name == "b":
            # Sizes 64, 96, 128, 64, …: the flow's bytes follow its schedule.
            f.size.increment.start = 64
            f.size.increment.end = 128
            f.size.increment.step = 32
    api.set_config(c)
    fm = run_to_end(api, 5000)
    assert (fm["a"].frames_tx, fm["a"].frames_rx) == (3000, 3000)
    assert (fm["b"].frames_tx, fm["b"].frames_rx) == (2000, 2000)
    req = api.metrics_request()
    req.port.port_names = []
    ports = {p.name: p for p in api.get_metrics(req).port_metrics}
    assert ports["tx"].frames_tx == fm["a"].frames_tx + fm["b"].frames_tx
    assert ports["rx"].frames_rx == fm["a"].frames_rx + fm["b"].frames_rx
    # The engine counts the port's bytes; the flows' come from their size schedules; the
    # receiver counts what arrived.
    assert ports["tx"].bytes_tx == fm["a"].bytes_tx + fm["b"].bytes_tx
    assert fm["b"].bytes_tx == fm["b"].bytes_rx == 666 * (64 + 96 + 128) + 64 + 96
    assert ports["rx"].bytes_rx == fm["a"].bytes_rx + fm["b"].bytes_rx


def scrape():
    """GET /metrics, parsed by the Prometheus project's own OpenMetrics parser: {(name, labels): value}."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    r = requests.get(os.environ["OTG_LOCATION"] + "/metrics", verify=False, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/openmetrics-text"), r.headers
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_prometheus_scrape_reads_what_get_metrics_reads(api, lab):
    c = config(api, lab)
    for name, n in (("a", 3000), ("b\"q", 2000)):
        f = flow(c, name, size=64 if name == "a" else 100)
        f.rate.pps = 10000
        f.duration.fixed_packets.packets = n
        eth, ip, udp = f.packet.ethernet().ipv4().udp()
        udp.src_port.value = 1000 if name == "a" else 2000
    api.set_config(c)
    fm = run_to_end(api, 5000)
    req = api.metrics_request()
    req.port.port_names = []
    ports = {p.name: p for p in api.get_metrics(req).port_metrics}
    got = scrape()
    for name, n, size in (("a", 3000, 64), ("b\"q", 2000, 100)):
        labels = tuple(sorted({"flow": name, "port_tx": "tx", "port_rx": "rx"}.items()))
        m = fm[name]
        assert (m.frames_tx, m.frames_rx) == (n, n)
        assert got[("linerate_flow_frames_tx_total", labels)] == m.frames_tx
        assert got[("linerate_flow_frames_rx_total", labels)] == m.frames_rx
        assert got[("linerate_flow_bytes_tx_total", labels)] == m.bytes_tx == n * size
        assert got[("linerate_flow_bytes_rx_total", labels)] == m.bytes_rx == n * size
        assert got[("linerate_flow_transmitting", labels)] == 0
    for name, p in ports.items():
        labels = tuple(sorted({"port": name, "location": p.location}.items()))
        assert got[("linerate_port_frames_tx_total", labels)] == p.frames_tx
        assert got[("linerate_port_frames_rx_total", labels)] == p.frames_rx
        assert got[("linerate_port_link_up", labels)] == 1
    tx = tuple(sorted({"port": "tx", "location": ports["tx"].location}.items()))
    assert got[("linerate_port_frames_tx_total", tx)] == 5000


def test_refusals_are_4xx_with_the_path_and_the_server_goes_on(api, lab):
    c = config(api, lab)
    d = c.devices.add(name="d1")
    eth = d.ethernets.add(name="e1", mac="00:00:01:01:01:01")
    eth.connection.port_name = "tx"
    ip = eth.ipv4_addresses.add(name="ip1", address="1.1.1.1", gateway="1.1.1.2")
    bgp = d.bgp
    bgp.router_id = "1.1.1.1"
    with pytest.raises(Exception) as e:
        api.set_config(c)
    assert "devices" in str(e.value) and "400" in str(e.value)
    location = os.environ["OTG_LOCATION"]
    r = requests.post(location + "/config", data="{\"ports\": [", verify=False,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    body = r.json()
    assert body["code"] == 400 and body["kind"] == "validation"
    assert "malformed JSON" in body["errors"][0]
    c = config(api, lab)
    f = c.flows.add(name="f")
    f.tx_rx.port.tx_name = "nope"
    f.packet.ethernet().ipv4().udp()
    with pytest.raises(Exception) as e:
        api.set_config(c)
    assert "flows[0].tx_rx.port.tx_name" in str(e.value) and "'nope'" in str(e.value)
    # A size below the headers, and one too small for the signature metrics need.
    for headers, size, minimum in (("udp", 60, "64"), ("tcp", 90, "96")):
        c = config(api, lab)
        f = flow(c, "small", size=size)
        f.packet.ethernet()
        f.packet.ipv6() if headers == "tcp" else f.packet.ipv4()
        f.packet.tcp() if headers == "tcp" else f.packet.udp()
        with pytest.raises(Exception) as e:
            api.set_config(c)
        assert "400" in str(e.value) and str(size) in str(e.value) and minimum in str(e.value), str(e.value)
    # The server answers the next request normally.
    assert api.get_version().api_spec_version == "1.60.0"
    c = config(api, lab)
    f = flow(c, "ok", size=64)
    f.duration.fixed_packets.packets = 10
    f.packet.ethernet().ipv4().udp()
    api.set_config(c)
    assert run_to_end(api, 10)["ok"].frames_rx == 10


def test_metrics_are_live_while_transmitting_and_set_config_waits_for_stop(api, lab):
    c = config(api, lab)
    f = flow(c, "live", size=64)
    f.rate.pps = 5000
    f.duration.continuous.gap = 12
    f.packet.ethernet().ipv4().udp()
    api.set_config(c)
    transmit(api, "start")
    time.sleep(1.3)
    first = flow_metrics(api)[0]
    assert first.transmit == "started" and first.frames_rx > 0
    with pytest.raises(Exception) as e:
        api.set_config(c)
    assert "409" in str(e.value) and "stop it" in str(e.value)
    time.sleep(1.0)
    second = flow_metrics(api)[0]
    assert second.frames_rx > first.frames_rx and second.frames_tx >= first.frames_tx > 0
    transmit(api, "stop")
    deadline = time.time() + 5
    while time.time() < deadline:
        m = flow_metrics(api)[0]
        if m.frames_rx == m.frames_tx:
            break
        time.sleep(0.05)
    assert m.transmit == "stopped" and m.frames_rx == m.frames_tx > second.frames_rx
    with pytest.raises(Exception) as e:
        transmit(api, "pause")
    assert "pause" in str(e.value)


def port_links(api):
    req = api.metrics_request()
    req.port.port_names = ["tx", "rx"]
    return {p.name: p.link for p in api.get_metrics(req).port_metrics}


def test_a_link_set_down_reads_down_and_stops_a_capture_with_its_error(api, lab):
    # Last in the file: it takes the receive end down, and brings it back up.
    import subprocess
    iface, netns = lab[1].split("@")
    c = config(api, lab, capture=True)
    api.set_config(c)
    assert port_links(api) == {"tx": "up", "rx": "up"}
    capture(api, "start")
    subprocess.run(["ip", "-n", netns, "link", "set", iface, "down"], check=True)
    try:
        # The receive end is down; its veth peer (the sender) has lost its carrier.
        assert port_links(api) == {"tx": "down", "rx": "down"}
        # The socket's error (ENETDOWN) stops the capture; get_capture answers with it.
        deadline = time.time() + 5
        while True:
            try:
                frames_of(api)
            except Exception as e:
                text = str(e)
                break
            assert time.time() < deadline, "the capture went on silently"
            time.sleep(0.05)
        assert "500" in text and "capture on " + lab[1] in text and "stopped" in text, text
    finally:
        subprocess.run(["ip", "-n", netns, "link", "set", iface, "up"], check=True)
    deadline = time.time() + 5
    while port_links(api) != {"tx": "up", "rx": "up"}:
        assert time.time() < deadline, port_links(api)
        time.sleep(0.05)


def test_flows_without_an_l4_header_ipv4_raw_and_ethernet_only(api, lab):
    # The conformance repo's ip_neighbors flow is ethernet and ipv4 with nothing after; a
    # switch test's is ethernet and custom bytes. Both carry the signature and are counted.
    c = config(api, lab, capture=True)
    f = flow(c, "ip", size=128)
    f.rate.pps = 2000
    f.duration.fixed_packets.packets = 10
    eth, ip = f.packet.ethernet().ipv4()
    ip.src.value, ip.dst.value = "1.1.1.1", "1.1.1.2"
    g = flow(c, "l2", size=64)
    g.rate.pps = 2000
    g.duration.fixed_packets.packets = 6
    eth, custom = g.packet.ethernet().custom()
    eth.src.values = ["02:00:00:00:00:07", "02:00:00:00:00:01", "02:00:00:00:00:04"]
    custom.bytes = "abcd"
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 16)
    capture(api, "stop")
    assert (m["ip"].frames_tx, m["ip"].frames_rx) == (10, 10)
    assert (m["l2"].frames_tx, m["l2"].frames_rx) == (6, 6)
    req = api.capture_request()
    req.port_name = "rx"
    raws = [raw for _, raw in dpkt.pcap.Reader(io.BytesIO(api.get_capture(req).read()))]
    ips = [dpkt.ethernet.Ethernet(r) for r in raws if dpkt.ethernet.Ethernet(r).type == 0x0800]
    assert len(ips) == 10
    for eth in ips:
        ip = eth.data
        assert (ip.p, ip.len) == (61, 128 - 14 - 4)
        assert (ipaddress.ip_address(ip.src), ipaddress.ip_address(ip.dst)) == (
            ipaddress.ip_address("1.1.1.1"),
            ipaddress.ip_address("1.1.1.2"),
        )
        assert checksums_hold(bytes(eth))
    l2 = [r for r in raws if r[12:14] == b"\xff\xff"]
    assert len(l2) == 6
    srcs = ["02:00:00:00:00:07", "02:00:00:00:00:01", "02:00:00:00:00:04"]
    for i, r in enumerate(l2):
        assert len(r) == 64
        assert r[6:12] == bytes.fromhex(srcs[i % 3].replace(":", ""))
        assert r[14:16] == b"\xab\xcd"
