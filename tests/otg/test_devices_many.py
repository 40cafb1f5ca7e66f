"""Device flows between several devices (issue 41): snappi-tests' `tests/ip` configs — ten
devices a side, flows naming the devices, `one_to_one` and `mesh` (the schema's default), a
flow with no packet at all — with their checks: exact counts per flow and port, and every
captured frame's MACs, addresses and TCP ports those of one pair, decoded by dpkt. (snappi-tests
sets `eth.port_name`, which no snappi from 0.12 on has; here it is `connection.port_name`.)"""
import io

import dpkt
import pytest

from test_otg import capture, config, run_to_end

COUNT = 10


def devices(c):
    """Ten devices on tx (10.1.i.1, MACs 00:10:10:20:20:10 up) and ten on rx (10.1.i.2, MACs
    00:10:10:20:30:20 down), each the other's gateway, as snappi-tests makes them but for the
    rx MACs' fifth octet: theirs (00:10:10:20:20:20 down) give tx_dev_9 and its gateway
    rx_dev_9 one MAC, which a host does not believe of a neighbour (docs/otg.md)."""
    for side, port, first_mac, step in (("tx", "tx", 0x10, 1), ("rx", "rx", 0x20, -1)):
        for i in range(COUNT):
            d = c.devices.add(name=f"{side}_dev_{i + 1}")
            eth = d.ethernets.add(name=f"{side}_eth_{i + 1}")
            eth.connection.port_name = port
            eth.mac = "00:10:10:20:%s:%02x" % ("20" if side == "tx" else "30", first_mac + step * i)
            ip = eth.ipv4_addresses.add(name=f"{side}_ipv4_{i + 1}")
            ip.address = f"10.1.{i + 1}.{1 if side == 'tx' else 2}"
            ip.gateway = f"10.1.{i + 1}.{2 if side == 'tx' else 1}"
            ip.prefix = 24


def ipv4_frames(api):
    req = api.capture_request()
    req.port_name = "rx"
    out = []
    for _, raw in dpkt.pcap.Reader(io.BytesIO(api.get_capture(req).read())):
        eth = dpkt.ethernet.Ethernet(raw)
        if eth.type == 0x0800:
            out.append(eth)
    return out


def mac(i, side):
    if side == "tx":
        return bytes.fromhex("0010102020") + bytes([0x10 + i])
    return bytes.fromhex("0010102030") + bytes([0x20 - i])


def test_one_to_one_device_flows_go_round_the_pairs_in_step(api, lab):
    c = config(api, lab, capture=True)
    devices(c)
    packets = 2000
    f1, f2 = c.flows.flow(name="TxFlow-1").flow(name="TxFlow-2")
    for f, size in ((f1, 128), (f2, 256)):
        f.tx_rx.device.tx_names = [f"tx_dev_{i + 1}" for i in range(COUNT)]
        f.tx_rx.device.rx_names = [f"rx_dev_{i + 1}" for i in range(COUNT)]
        f.tx_rx.device.mode = f.tx_rx.device.ONE_TO_ONE
        f.size.fixed = size
        f.duration.fixed_packets.packets = packets
        f.rate.pps = 20000
        f.metrics.enable = True
    # f1 has no packet: between devices it is ethernet and IPv4, as ixia-c sends it.
    f2.packet.ethernet().ipv4().tcp()
    tcp = f2.packet[-1]
    tcp.src_port.increment.start, tcp.src_port.increment.step = 5000, 1
    tcp.src_port.increment.count = COUNT
    tcp.dst_port.increment.start, tcp.dst_port.increment.step = 2000, 1
    tcp.dst_port.increment.count = COUNT
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 2 * packets)
    capture(api, "stop")
    for name, size in (("TxFlow-1", 128), ("TxFlow-2", 256)):
        assert (m[name].frames_tx, m[name].frames_rx) == (packets, packets), m[name]
        assert m[name].bytes_rx == packets * size
    req = api.metrics_request()
    req.port.port_names = ["tx", "rx"]
    ports = {p.name: p for p in api.get_metrics(req).port_metrics}
    assert ports["tx"].frames_tx == 2 * packets
    # snappi-tests' capture check: each frame's pair found by its destination MAC, the rest of
    # its addresses and its ports that pair's.
    frames = ipv4_frames(api)
    sizes = {128: [0] * COUNT, 256: [0] * COUNT}
    dst_macs = [mac(i, "rx") for i in range(COUNT)]
    for eth in frames:
        i = dst_macs.index(eth.dst)
        assert eth.src == mac(i, "tx")
        assert eth.data.src == bytes([10, 1, 1 + i, 1]) and eth.data.dst == bytes([10, 1, 1 + i, 2])
        length = len(bytes(eth)) + 4
        assert length in sizes
        sizes[length][i] += 1
        if length == 256:
            assert (eth.data.data.sport, eth.data.data.dport) == (5000 + i, 2000 + i)
        else:
            assert eth.data.p == 61
    # Every pair in turn: each carries a tenth of each flow.
    assert sizes[128] == [packets // COUNT] * COUNT and sizes[256] == [packets // COUNT] * COUNT


def test_mesh_by_ethernet_and_address_names_sends_every_pair_through_its_gateway(api, lab):
    c = config(api, lab, capture=True)
    devices(c)
    f = c.flows.add(name="mesh")
    # Ethernets send, address objects receive; mesh is the schema's default mode.
    f.tx_rx.device.tx_names = ["tx_eth_1", "tx_eth_2", "tx_eth_3"]
    f.tx_rx.device.rx_names = ["rx_ipv4_1", "rx_ipv4_2", "rx_ipv4_3"]
    f.packet.ethernet().ipv4().udp()
    f.size.fixed = 128
    f.duration.fixed_packets.packets = 900
    f.rate.pps = 20000
    f.metrics.enable = True
    api.set_config(c)
    capture(api, "start")
    m = run_to_end(api, 900)["mesh"]
    capture(api, "stop")
    assert (m.frames_tx, m.frames_rx) == (900, 900)
    pairs = {}
    for eth in ipv4_frames(api):
        src, dst = eth.data.src[2] - 1, eth.data.dst[2] - 1
        assert eth.data.src == bytes([10, 1, 1 + src, 1]) and eth.data.dst[3] == 2
        # Off its /24 the sender's next hop is its gateway, rx device `src`.
        assert (eth.src, eth.dst) == (mac(src, "tx"), mac(src, "rx"))
        pairs[(src, dst)] = pairs.get((src, dst), 0) + 1
    assert pairs == {(a, b): 100 for a in range(3) for b in range(3)}


def test_several_devices_that_cannot_pair_are_refused_by_path(api, lab):
    c = config(api, lab)
    devices(c)
    f = c.flows.add(name="uneven")
    f.tx_rx.device.tx_names = ["tx_dev_1", "tx_dev_2", "tx_dev_3"]
    f.tx_rx.device.rx_names = ["rx_dev_1", "rx_dev_2"]
    f.tx_rx.device.mode = f.tx_rx.device.ONE_TO_ONE
    g = c.flows.add(name="two_ports")
    g.tx_rx.device.tx_names = ["tx_dev_1", "rx_dev_2"]
    g.tx_rx.device.rx_names = ["rx_dev_1"]
    with pytest.raises(Exception) as e:
        api.set_config(c)
    text = " ".join(str(e.value).split())
    assert "400" in text, text
    assert "flows[0].tx_rx.device.mode" in text and "3 hosts and rx_names for 2" in text, text
    assert "flows[1].tx_rx.device.tx_names" in text and "give each port its own flow" in text, text
