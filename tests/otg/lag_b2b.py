"""Two LAGs back to back (a veth pair), LACP spoken by linerate itself, through snappi 1.60.0:
the OTG project's own b2b test (conformance feature/b2b/lag/lag_lacp_partner_test.go) with its
config and its checks as it has them, then more: tests/otg.rs starts a lab and `linerate
serve` and sets OTG_LOCATION, OTG_TX, OTG_RX and LINERATE_SERVER_PID. The flow over the LAGs
is counted exactly; LACP stopped on one member takes its partner out of sync (expired, then
defaulted) and both LAGs down; protocols stopped and started; a member's link taken down
and up (port.link); a static LAG's flow counted
exactly; a bad LAG refused naming its field; and once the config is replaced, no LACP thread
or Slow Protocols socket is left. Raises on failure."""
import os
import socket
import struct
import time

import requests
import snappi
import urllib3

from devices_common import flow_metrics_ok, wait_for

TC = {
    "txMac": "00:00:01:01:01:01",
    "rxMac": "00:00:01:01:01:02",
    "txSystemId": "01:01:01:01:01:01",
    "rxSystemId": "02:02:02:02:02:02",
    "pktRate": 50,
    "pktCount": 100,
    "pktSize": 128,
    "txIp": "1.1.1.1",
    "rxIp": "1.1.1.2",
    "txUdpPort": 5000,
    "rxUdpPort": 6000,
}


def lag_lacp_partner_config(api, tc, tx, rx):
    """The conformance test's config, its ports ours."""
    c = api.config()
    ptx = c.ports.add(name="ptx", location=tx)
    prx = c.ports.add(name="prx", location=rx)
    c.layer1.add(name="ly", port_names=[ptx.name, prx.name], speed="speed_1_gbps")

    lag_tx = c.lags.add(name="lagTx")
    lag_rx = c.lags.add(name="lagRx")
    for lag, port, system, mac in ((lag_tx, ptx, tc["txSystemId"], tc["txMac"]),
                                   (lag_rx, prx, tc["rxSystemId"], tc["rxMac"])):
        lag.min_links = 1
        lag.protocol.lacp.actor_system_priority = 1
        lag.protocol.lacp.actor_key = 1
        lag.protocol.lacp.actor_system_id = system
        lp = lag.ports.add(port_name=port.name)
        lp.lacp.actor_port_number = 1
        lp.lacp.actor_port_priority = 1
        lp.lacp.actor_activity = lp.lacp.ACTIVE
        lp.lacp.lacpdu_periodic_time_interval = 0
        lp.lacp.lacpdu_timeout = 0
        lp.ethernet.name = f"{lag.name}PortEth"
        lp.ethernet.mac = mac
        lp.ethernet.mtu = 1500

    f1 = c.flows.add(name="f1")
    f1.tx_rx.port.tx_name = lag_tx.name
    f1.tx_rx.port.rx_names = [lag_rx.name]
    f1.duration.fixed_packets.packets = tc["pktCount"]
    f1.rate.pps = tc["pktRate"]
    f1.size.fixed = tc["pktSize"]
    f1.metrics.enable = True
    eth, ip, udp = f1.packet.ethernet().ipv4().udp()
    eth.src.value, eth.dst.value = tc["txMac"], tc["rxMac"]
    ip.src.value, ip.dst.value = tc["txIp"], tc["rxIp"]
    udp.src_port.value, udp.dst_port.value = tc["txUdpPort"], tc["rxUdpPort"]
    return c


def lacp_metrics(api):
    req = api.metrics_request()
    req.lacp.lag_names = []
    return {m.lag_member_port_name: m for m in api.get_metrics(req).lacp_metrics}


def lag_metrics(api):
    req = api.metrics_request()
    req.lag.lag_names = []
    return {m.name: m for m in api.get_metrics(req).lag_metrics}


def lag_lacp_partner_lacp_metrics_ok(api, tc):
    """The conformance test's check, verbatim but for the API call."""
    count = 0
    for m in lacp_metrics(api).values():
        if m.system_id == tc["txSystemId"] and m.partner_id == tc["rxSystemId"]:
            count += 1
        if m.system_id == tc["rxSystemId"] and m.partner_id == tc["txSystemId"]:
            count += 1
    return count == 2


def lag_lacp_partner_lag_metrics_ok(api, tc):
    """The conformance test's check, verbatim but for the API call."""
    min_count = tc["pktCount"]
    for m in lag_metrics(api).values():
        if m.oper_status != "up":
            return False
        if m.name == "lagTx" and m.frames_tx < min_count:
            return False
        if m.name == "lagRx" and m.frames_rx < min_count:
            return False
    return True


def control(api, **kw):
    cs = api.control_state()
    if "all" in kw:
        cs.protocol.all.state = kw["all"]
    elif "lacp_admin" in kw:
        ports, state = kw["lacp_admin"]
        cs.protocol.lacp.admin.lag_member_names = ports
        cs.protocol.lacp.admin.state = state
    elif "link" in kw:
        ports, state = kw["link"]
        cs.port.link.port_names = ports
        cs.port.link.state = state
    elif "transmit" in kw:
        cs.traffic.flow_transmit.state = kw["transmit"]
    api.set_control_state(cs)


def lacp_threads(pid):
    """The names of the server's LACP threads."""
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                name = f.read().strip()
        except FileNotFoundError:
            continue
        if name.startswith("lacp "):
            out.append(name)
    return out


def slow_protocol_sockets(pid):
    """The server's own packet sockets of the Slow Protocols EtherType (its namespace's table
    lists every process's: another server's LAGs, of a test running beside this one, are
    not its)."""
    fd_dir = f"/proc/{pid}/fd"
    inodes = set()
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    with open(f"/proc/{pid}/net/packet") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return [r for r in rows if len(r) > 8 and r[3] == "8809" and r[8] in inodes]


def in_lag(m):
    return (m.synchronization == "in_sync" and m.collecting and m.distributing
            and m.aggregatable)


def marker_answer(iface, transaction, wait=3.0):
    """Sends a Marker PDU (IEEE 802.1AX-2014 §6.5.3.3) out `iface` (the partner LAG's member
    is on its other end) and reads back the Marker Response that comes in, decoded here:
    (its source MAC, TLV length, requester port, system and transaction id), or None."""
    me = bytes.fromhex("020000009901")
    frame = (bytes.fromhex("0180c2000002") + me + b"\x88\x09" + bytes([2, 1, 1, 16])
             + struct.pack(">H6sI", 9, me, transaction) + bytes(2 + 2 + 90))
    assert len(frame) == 124
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x8809)) as s:
        s.bind((iface, 0))
        s.settimeout(0.2)
        s.send(frame)
        deadline = time.time() + wait
        while time.time() < deadline:
            try:
                f = s.recv(2048)
            except socket.timeout:
                continue
            # Subtype Marker, TLV Marker Response Information: ours by its transaction id.
            if len(f) >= 30 and f[14] == 2 and f[16] == 2:
                port, system, tid = struct.unpack(">H6sI", f[18:30])
                if tid == transaction:
                    return f[6:12].hex(":"), f[17], port, system.hex(":"), tid
    return None


def main():
    env = os.environ
    tx, rx = env["OTG_TX"], env["OTG_RX"]
    pid = env["LINERATE_SERVER_PID"]
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    urllib3.disable_warnings()

    # The conformance test, its config and checks as it has them.
    api.set_config(lag_lacp_partner_config(api, TC, tx, rx))
    control(api, all="start")
    wait_for("the conformance test's LACP metrics",
             lambda: lag_lacp_partner_lacp_metrics_ok(api, TC), timeout=30)
    control(api, transmit="start")
    wait_for("the conformance test's LAG metrics",
             lambda: lag_lacp_partner_lag_metrics_ok(api, TC), timeout=30)

    # More: the flow counted exactly, at the receiver, and the LAGs' counts are their
    # members' exactly.
    wait_for("the flow's 100 frames, every one counted", lambda: flow_metrics_ok(api, TC))
    lags = lag_metrics(api)
    assert lags["lagTx"].frames_tx == TC["pktCount"], lags["lagTx"]
    assert lags["lagRx"].frames_rx == TC["pktCount"], lags["lagRx"]
    assert lags["lagTx"].frames_rx == 0 and lags["lagRx"].frames_tx == 0, lags
    assert lags["lagTx"].bytes_tx == TC["pktCount"] * TC["pktSize"], lags["lagTx"]
    assert lags["lagRx"].bytes_rx == TC["pktCount"] * TC["pktSize"], lags["lagRx"]
    assert all(m.member_ports_up == 1 for m in lags.values()), lags
    lacp = lacp_metrics(api)
    assert sorted(lacp) == ["prx", "ptx"], lacp
    for port, lag, me, other in (("ptx", "lagTx", "txSystemId", "rxSystemId"),
                                 ("prx", "lagRx", "rxSystemId", "txSystemId")):
        m = lacp[port]
        assert m.lag_name == lag and in_lag(m), m
        assert (m.activity, m.timeout) == ("active", "short"), m
        assert (m.system_id, m.partner_id) == (TC[me], TC[other]), m
        assert (m.oper_key, m.partner_key, m.port_num, m.partner_port_num) == (1, 1, 1, 1), m
        assert m.lacp_packets_rx >= 1 and m.lacp_packets_tx >= 1 and m.lacp_rx_errors == 0, m
    # Short timeouts asked by both: fast periodic, a PDU a second each way.
    before = lacp_metrics(api)
    time.sleep(3.0)
    after = lacp_metrics(api)
    for port in ("ptx", "prx"):
        sent = after[port].lacp_packets_tx - before[port].lacp_packets_tx
        assert 2 <= sent <= 4, (port, sent)
        assert after["ptx" if port == "prx" else "prx"].lacp_packets_rx >= before[
            "ptx" if port == "prx" else "prx"].lacp_packets_rx + 2
    # A LACP socket per member, each on its own thread per LAG, in the server's namespace for
    # the sender's end.
    assert sorted(lacp_threads(pid)) == ["lacp lagRx", "lacp lagTx"], lacp_threads(pid)
    assert len(slow_protocol_sockets(pid)) == 1, slow_protocol_sockets(pid)

    # LACP stopped on ptx alone: silent, out of its LAG at once; prx hears nothing and after
    # the short timeout (3 s) is expired: its partner out of sync, its LAG down; 3 s later
    # defaulted: the partner forgotten, prx out of sync itself.
    control(api, lacp_admin=(["ptx"], "down"))
    m = lacp_metrics(api)["ptx"]
    assert m.synchronization == "out_sync" and not m.collecting, m
    stopped_at = m.lacp_packets_tx
    wait_for("prx out of the LAG (its partner expired)",
             lambda: not lacp_metrics(api)["prx"].collecting, timeout=6)
    lags = lag_metrics(api)
    assert [lags[n].oper_status for n in ("lagTx", "lagRx")] == ["down", "down"], lags
    assert lags["lagRx"].member_ports_up == 0, lags
    wait_for("prx defaulted: out of sync, no partner",
             lambda: (lambda m: m.synchronization == "out_sync"
                      and m.partner_id == "00:00:00:00:00:00")(lacp_metrics(api)["prx"]),
             timeout=6)
    assert lacp_metrics(api)["ptx"].lacp_packets_tx == stopped_at, "a stopped member is silent"
    control(api, lacp_admin=(["ptx"], "up"))
    wait_for("both back in their LAGs", lambda: all(in_lag(m) for m in lacp_metrics(api).values()),
             timeout=10)
    assert all(m.oper_status == "up" for m in lag_metrics(api).values())

    # The Marker Responder: a Marker PDU sent to prx (from ptx's wire) is answered from prx's
    # MAC with the requester's port, system and transaction id.
    answer = marker_answer(tx.split("@")[0], 0x1234ABCD)
    assert answer == (TC["rxMac"], 16, 9, "02:00:00:00:99:01", 0x1234ABCD), answer

    # Protocols stopped: both LAGs down; started: both up again.
    control(api, all="stop")
    wait_for("both LAGs down", lambda: all(
        m.oper_status == "down" and m.member_ports_up == 0 for m in lag_metrics(api).values()),
        timeout=10)
    assert not any(m.collecting for m in lacp_metrics(api).values())
    control(api, all="start")
    wait_for("both LAGs up again", lambda: all(
        m.oper_status == "up" for m in lag_metrics(api).values()), timeout=10)

    # ptx's link taken down (its veth: prx loses its carrier with it): both members out of
    # their LAGs at once, their LACP silent; brought back up, both LAGs up again.
    control(api, link=(["ptx"], "down"))
    try:
        lags = lag_metrics(api)
        assert all(m.oper_status == "down" and m.member_ports_up == 0 for m in lags.values()), lags
        ports = {m.name: m.link for m in api.get_metrics(api.metrics_request()).port_metrics}
        assert ports == {"ptx": "down", "prx": "down"}, ports
        before = lacp_metrics(api)
        time.sleep(1.5)
        after = lacp_metrics(api)
        for port in ("ptx", "prx"):
            assert after[port].lacp_packets_tx == before[port].lacp_packets_tx, (port, after)
            assert not after[port].collecting and after[port].partner_id == "00:00:00:00:00:00"
    finally:
        control(api, link=(["ptx"], "up"))
    wait_for("both LAGs up after the link came back", lambda: all(
        m.oper_status == "up" for m in lag_metrics(api).values()), timeout=10)

    # A bad LAG is refused naming its field, and the config that worked stays.
    c = lag_lacp_partner_config(api, TC, tx, rx)
    c.lags[1].ports[0].port_name = "nope"
    try:
        api.set_config(c)
    except Exception as e:  # snappi raises the server's 400
        said = str(e)
        assert "lags[1].ports[0].port_name: no port is named" in said and "nope" in said, e
        assert "LAG" in said.split("rx_names[0]:")[1], e
    else:
        raise AssertionError("a LAG naming a missing port was accepted")
    # snappi checks a MAC itself: the body goes to the server as a client that does not.
    body = lag_lacp_partner_config(api, TC, tx, rx).serialize(snappi.Config.DICT)
    body["lags"][0]["protocol"]["lacp"]["actor_system_id"] = "01:01:01:01:01"
    answer = requests.post(f"{env['OTG_LOCATION']}/config", json=body, verify=False, timeout=30)
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"] == [
        "lags[0].protocol.lacp.actor_system_id: '01:01:01:01:01' is not a MAC (six hex bytes, "
        "01:02:03:04:05:06)"], answer.text
    assert sorted(lag_metrics(api)) == ["lagRx", "lagTx"]

    # Static LAGs: no PDUs, members up with their links, a flow counted exactly.
    c = lag_lacp_partner_config(api, TC, tx, rx)
    for lag in c.lags:
        lag.protocol.static.lag_id = 7
    c.flows[0].duration.fixed_packets.packets = 1000
    c.flows[0].rate.pps = 1000
    api.set_config(c)
    wait_for("static LAGs up", lambda: all(
        m.oper_status == "up" and m.member_ports_up == 1 for m in lag_metrics(api).values()))
    control(api, transmit="start")
    wait_for("the static LAGs' flow, every frame counted",
             lambda: flow_metrics_ok(api, dict(TC, pktCount=1000)))
    lags = lag_metrics(api)
    assert lags["lagTx"].frames_tx == 1000 and lags["lagRx"].frames_rx == 1000, lags
    # A static LAG speaks no Slow Protocols: no Marker Response.
    assert marker_answer(tx.split("@")[0], 0x55, wait=1.0) is None
    try:
        lacp_metrics(api)
    except Exception as e:
        assert "no LACP LAG" in str(e), e
    else:
        raise AssertionError("lacp metrics of static LAGs answered")

    # The config replaced: every LACP thread and its sockets gone.
    c = api.config()
    c.ports.add(name="ptx", location=tx)
    api.set_config(c)
    assert lacp_threads(pid) == [], lacp_threads(pid)
    assert slow_protocol_sockets(pid) == [], slow_protocol_sockets(pid)


if __name__ == "__main__":
    main()
    print("lag b2b: ok")
