"""Two LAGs of two members each, over two veth pairs (member i of one wired to member i of the
other), LACP spoken by linerate itself, through snappi 1.60.0: tests/otg.rs makes the pairs,
starts `linerate serve` and sets OTG_LOCATION, OTG_TX, OTG_RX, OTG_TX2 and OTG_RX2. The members
aggregate by partner, four flows go two on each member (the hash of their names) and are
counted exactly per flow, per port and per LAG, and LACP stopped on one member takes down the
LAG that needs both members while its partner LAG stays up on one: flows started then all go
on the members left in (the down LAG named in the answer's warnings), as they do when a
member's link goes down. Raises on failure."""
import os

import snappi

from devices_common import wait_for

SYSTEMS = {"lagTx": "01:01:01:01:01:01", "lagRx": "02:02:02:02:02:02"}
FRAMES = 1000


def config(api, tx, tx2, rx, rx2):
    c = api.config()
    ports = {n: c.ports.add(name=n, location=loc)
             for n, loc in (("ptx1", tx), ("ptx2", tx2), ("prx1", rx), ("prx2", rx2))}
    for lag_name, members, min_links, mac in (("lagTx", ("ptx1", "ptx2"), 2, "00:00:01:01:01:0"),
                                              ("lagRx", ("prx1", "prx2"), 1, "00:00:02:02:02:0")):
        lag = c.lags.add(name=lag_name)
        lag.min_links = min_links
        lag.protocol.lacp.actor_system_id = SYSTEMS[lag_name]
        lag.protocol.lacp.actor_system_priority = 1
        lag.protocol.lacp.actor_key = 7
        for i, port in enumerate(members, start=1):
            lp = lag.ports.add(port_name=ports[port].name)
            lp.lacp.actor_port_number = i
            lp.ethernet.name = f"{port}Eth"
            lp.ethernet.mac = f"{mac}{i}"
    for i in range(4):
        f = c.flows.add(name=f"f{i}")
        f.tx_rx.port.tx_name = "lagTx"
        f.tx_rx.port.rx_names = ["lagRx"]
        f.duration.fixed_packets.packets = FRAMES
        f.rate.pps = 1000
        f.size.fixed = 128
        f.metrics.enable = True
        f.packet.ethernet().ipv4().udp()
    return c


def lacp(api):
    req = api.metrics_request()
    req.lacp.lag_names = []
    return {m.lag_member_port_name: m for m in api.get_metrics(req).lacp_metrics}


def lags(api):
    req = api.metrics_request()
    req.lag.lag_names = []
    return {m.name: m for m in api.get_metrics(req).lag_metrics}


def ports(api):
    return {m.name: m for m in api.get_metrics(api.metrics_request()).port_metrics}


def flows(api):
    req = api.metrics_request()
    req.flow.flow_names = []
    return {m.name: m for m in api.get_metrics(req).flow_metrics}


def in_lag(m):
    return m.synchronization == "in_sync" and m.collecting and m.distributing


def moved_to(api, tx, rx):
    """Waits for the run that just started to end, every flow exact, all of them sent on `tx`
    and received on `rx`, the other members idle."""
    wait_for(f"every flow's frames counted over {tx} and {rx}", lambda: all(
        m.transmit == "stopped" and m.frames_tx == FRAMES and m.frames_rx == FRAMES
        for m in flows(api).values()), timeout=30)
    p = ports(api)
    assert p[tx].frames_tx == 4 * FRAMES and p[rx].frames_rx == 4 * FRAMES, p
    idle = {"ptx1", "ptx2", "prx1", "prx2"} - {tx, rx}
    assert all(p[n].frames_tx == 0 and p[n].frames_rx == 0 for n in idle if n in p), p


def main():
    env = os.environ
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    api.set_config(config(api, env["OTG_TX"], env["OTG_TX2"], env["OTG_RX"], env["OTG_RX2"]))

    wait_for("four members in their LAGs", lambda: len(lacp(api)) == 4 and all(
        in_lag(m) for m in lacp(api).values()), timeout=15)
    for port, m in lacp(api).items():
        other = "lagRx" if m.lag_name == "lagTx" else "lagTx"
        assert (m.system_id, m.partner_id) == (SYSTEMS[m.lag_name], SYSTEMS[other]), m
        assert (m.oper_key, m.partner_key) == (7, 7), m
        assert m.port_num == int(port[-1]) and m.partner_port_num == m.port_num, m
    assert all(m.oper_status == "up" and m.member_ports_up == 2 for m in lags(api).values())

    cs = api.control_state()
    cs.traffic.flow_transmit.state = cs.traffic.flow_transmit.START
    api.set_control_state(cs)
    wait_for("every flow's frames counted", lambda: all(
        m.transmit == "stopped" and m.frames_tx == FRAMES and m.frames_rx == FRAMES
        for m in flows(api).values()), timeout=30)
    # The hash of the names puts f0 and f2 on the second members, f1 and f3 on the first.
    p = ports(api)
    for name in ("ptx1", "ptx2"):
        assert p[name].frames_tx == 2 * FRAMES and p[name].frames_rx == 0, p[name]
    for name in ("prx1", "prx2"):
        assert p[name].frames_rx == 2 * FRAMES and p[name].frames_tx == 0, p[name]
    g = lags(api)
    assert g["lagTx"].frames_tx == 4 * FRAMES and g["lagRx"].frames_rx == 4 * FRAMES, g

    # LACP stopped on ptx2: lagTx (min_links 2) is down at once with one member up; prx2's
    # partner expires within 3 s and lagRx (min_links 1) stays up on prx1.
    cs = api.control_state()
    cs.protocol.lacp.admin.lag_member_names = ["ptx2"]
    cs.protocol.lacp.admin.state = "down"
    api.set_control_state(cs)
    g = lags(api)
    assert (g["lagTx"].oper_status, g["lagTx"].member_ports_up) == ("down", 1), g
    wait_for("prx2 out of lagRx", lambda: not lacp(api)["prx2"].collecting, timeout=6)
    g = lags(api)
    assert (g["lagRx"].oper_status, g["lagRx"].member_ports_up) == ("up", 1), g
    assert in_lag(lacp(api)["ptx1"]) and in_lag(lacp(api)["prx1"])
    # Started now, every flow goes on the members still in their LAGs, ptx1 and prx1 (the
    # test bed opened again over them); lagTx, down by its min_links, is said once.
    go = api.control_state()
    go.traffic.flow_transmit.state = go.traffic.flow_transmit.START
    said = api.set_control_state(go).warnings
    lag_tx_down = ("LAG 'lagTx' is down (1 of its members in it, min_links 2): its flows are "
                   "sent on the members in it")
    assert [w for w in said if "LAG" in w] == [lag_tx_down], said
    moved_to(api, "ptx1", "prx1")
    cs.protocol.lacp.admin.state = "up"
    api.set_control_state(cs)
    wait_for("all four back", lambda: all(
        m.oper_status == "up" and m.member_ports_up == 2 for m in lags(api).values()), timeout=10)

    # ptx1's link down takes prx1's carrier with it (a veth pair): both members out, and the
    # next start puts every flow on ptx2 and prx2.
    link = api.control_state()
    link.port.link.port_names = ["ptx1"]
    link.port.link.state = "down"
    api.set_control_state(link)
    wait_for("ptx1 and prx1 out", lambda: not in_lag(lacp(api)["ptx1"])
             and not in_lag(lacp(api)["prx1"]), timeout=6)
    said = api.set_control_state(go).warnings
    assert [w for w in said if "LAG" in w] == [lag_tx_down], said
    moved_to(api, "ptx2", "prx2")
    link.port.link.state = "up"
    api.set_control_state(link)
    wait_for("all four back again", lambda: all(
        m.oper_status == "up" and m.member_ports_up == 2 for m in lags(api).values()), timeout=10)


if __name__ == "__main__":
    main()
    print("lag members: ok")
