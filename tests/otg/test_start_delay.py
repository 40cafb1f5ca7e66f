"""Per-flow start delay (`duration.fixed_packets.delay`, issue 41), as otg-examples'
scapy2otg.py uses it to play a request/response exchange: flows both ways, each starting
a fixed time after the run's start. Checked on the wire: the capture holds each flow's frames
in the order of their delays, and the transmit time each frame carries in its signature (the
trailer of docs/receive.md, decoded here) starts no earlier than its flow's delay."""
import io

import dpkt

from test_otg import capture, config, flow, run_to_end

MAGIC = b"LRsg"


def tx_ns(raw):
    """The transmit time in a frame's signature: 48 bits, 14 bytes before its magic."""
    at = raw.rfind(MAGIC)
    assert at >= 14, raw.hex()
    return int.from_bytes(raw[at - 14:at - 8], "big")


def test_flows_start_after_their_delays_in_that_order(api, lab):
    c = config(api, lab, capture=True)
    # Delays far apart beside the flows' 1 ms each, so that a late start of flow 0 (which
    # makes the gaps seen shorter, never longer) stays well inside the margin below.
    delays_us = [0, 20000, 40000]
    for i, d in enumerate(delays_us):
        f = flow(c, f"request{i}", size=128)
        eth, ip, udp = f.packet.ethernet().ipv4().udp()
        udp.src_port.value = 1024 + i
        # 10 frames in 1 ms: each flow ends long before the next one's delay is up.
        f.rate.pps = 10000
        f.duration.fixed_packets.packets = 10
        f.duration.fixed_packets.delay.microseconds = d
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 30)
    capture(api, "stop")
    assert all((m[f"request{i}"].frames_tx, m[f"request{i}"].frames_rx) == (10, 10) for i in range(3))
    req = api.capture_request()
    req.port_name = "rx"
    ours = []
    for _, raw in dpkt.pcap.Reader(io.BytesIO(api.get_capture(req).read())):
        eth = dpkt.ethernet.Ethernet(raw)
        if eth.type == 0x0800 and isinstance(eth.data.data, dpkt.udp.UDP):
            ours.append((eth.data.data.sport - 1024, tx_ns(raw)))
    assert [i for i, _ in ours] == [0] * 10 + [1] * 10 + [2] * 10
    # Each flow's start as its frames tell it: frame k is due k × 100 µs after it, and the
    # least late frame tells it best (a frame leaves late, or up to 20 µs early when sliced).
    def since_first(t):
        """ns after the first frame's stamp, signed (the stamps wrap every 2^48 ns)."""
        rel = (t - ours[0][1]) % (1 << 48)
        return rel - (1 << 48) if rel >= 1 << 47 else rel

    def start(i):
        return min(since_first(ours[10 * i + k][1]) - k * 100_000 for k in range(10))

    for i, d in enumerate(delays_us):
        gap_us = (start(i) - start(0)) / 1000
        assert d - 1000 <= gap_us, (i, gap_us)


def test_a_delay_in_bytes_needs_the_link_speed(api, lab):
    import pytest

    c = config(api, lab)
    f = flow(c, "f", size=128)
    f.packet.ethernet().ipv4().udp()
    f.duration.fixed_packets.delay.bytes = 1000
    with pytest.raises(Exception) as e:
        api.set_config(c)
    assert "flows[0].duration.fixed_packets.delay.bytes" in str(e.value), str(e.value)
    c = config(api, lab, speed="speed_1_gbps")
    f = flow(c, "f", size=128)
    f.packet.ethernet().ipv4().udp()
    f.rate.pps = 1000
    f.duration.fixed_packets.packets = 5
    # 125,000 bytes at 1 Gb/s: 1 ms.
    f.duration.fixed_packets.delay.bytes = 125000
    api.set_config(c)
    assert run_to_end(api, 5)["f"].frames_rx == 5
