"""Devices on LAGs, as OpenConfig's featureprofiles aggregate tests configure them: two LAGs of
two members each over two veth pairs (member i of one wired to member i of the other), LACP
spoken by linerate itself, a device on each LAG (its ethernet's connection a `lag_name`) with
an address, a MAC of its own and an eBGP session to the other over the LAGs, through snappi
1.60.0. tests/otg.rs makes the pairs, starts `linerate serve` and sets OTG_LOCATION, OTG_TX,
OTG_RX, OTG_TX2, OTG_RX2 and LINERATE_SERVER_PID.

The members aggregate, the session comes up over the LAGs with each device's ranges learned
(the other daemon's view), four flows between the ranges go two on each member (the hash of
their names) and are counted exactly per flow and per member port, the devices' hosts answered
ARP on both members, and with LACP stopped on a member the next start puts every flow on the
other members while the session stays up. Raises on failure."""
import os

import snappi

from devices_common import wait_for, our_devices

SYSTEMS = {"lagTx": "01:01:01:01:01:01", "lagRx": "02:02:02:02:02:02"}
FRAMES = 1000
ROUTES = 10


def config(api, tx, tx2, rx, rx2):
    c = api.config()
    for n, loc in (("ptx1", tx), ("ptx2", tx2), ("prx1", rx), ("prx2", rx2)):
        c.ports.add(name=n, location=loc)
    for lag_name, members, mac in (("lagTx", ("ptx1", "ptx2"), "00:00:01:01:01:0"),
                                   ("lagRx", ("prx1", "prx2"), "00:00:02:02:02:0")):
        lag = c.lags.add(name=lag_name)
        lag.protocol.lacp.actor_system_id = SYSTEMS[lag_name]
        lag.protocol.lacp.actor_system_priority = 1
        lag.protocol.lacp.actor_key = 7
        for i, port in enumerate(members, start=1):
            lp = lag.ports.add(port_name=port)
            lp.lacp.actor_port_number = i
            lp.ethernet.name = f"{port}Eth"
            lp.ethernet.mac = f"{mac}{i}"
    for name, lag, mac, me, peer, asn, route in (
            ("dtx", "lagTx", "02:00:00:00:01:01", "192.0.2.1", "192.0.2.2", 65001, "10.10.10.0"),
            ("drx", "lagRx", "02:00:00:00:02:01", "192.0.2.2", "192.0.2.1", 65002, "20.20.20.0")):
        d = c.devices.add(name=name)
        e = d.ethernets.add(name=f"{name}Eth")
        e.connection.lag_name = lag
        e.mac = mac
        ip = e.ipv4_addresses.add(name=f"{name}Ip", address=me, gateway=peer, prefix=24)
        d.bgp.router_id = me
        p = d.bgp.ipv4_interfaces.add(ipv4_name=ip.name).peers.add(name=f"{name}Peer")
        p.set(as_number=asn, as_type=p.EBGP, peer_address=peer)
        p.advanced.set(hold_time_interval=3, keep_alive_interval=1)
        r = p.v4_routes.add(name=f"{name}Routes")
        r.addresses.add(address=route, prefix=24, count=ROUTES, step=1)
    for i in range(4):
        f = c.flows.add(name=f"f{i}")
        f.tx_rx.device.set(tx_names=["dtxRoutes"], rx_names=["drxRoutes"])
        f.packet.ethernet().ipv4().udp()
        f.duration.fixed_packets.packets = FRAMES
        f.rate.pps = 1000
        f.size.fixed = 128
        f.metrics.enable = True
    return c


def metrics(api, **ask):
    req = api.metrics_request()
    for key, names in ask.items():
        getattr(req, key).set(**names)
    return api.get_metrics(req)


def lacp(api):
    return {m.lag_member_port_name: m for m in metrics(api, lacp={"lag_names": []}).lacp_metrics}


def sessions(api):
    return {m.name: m for m in metrics(api, bgpv4={"peer_names": []}).bgpv4_metrics}


def ports(api):
    return {m.name: m for m in api.get_metrics(api.metrics_request()).port_metrics}


def flows(api):
    return {m.name: m for m in metrics(api, flow={"flow_names": []}).flow_metrics}


def in_lag(m):
    return m.synchronization == "in_sync" and m.collecting and m.distributing


def up(api):
    s = sessions(api)
    return len(s) == 2 and all(m.session_state == "up" and m.routes_received == ROUTES
                               for m in s.values())


def counted_on(api, per_port):
    """Waits for the run that just started to end with every flow exact; then each port's
    frames sent or received are as `per_port` says (in frames; the others idle). The devices'
    BGP frames are never among them: each receiver takes its link with its hosts' MACs already
    passed to the stack, even as the test bed opens again over the members at a start."""
    wait_for("every flow's frames counted", lambda: all(
        m.transmit == "stopped" and m.frames_tx == FRAMES and m.frames_rx == FRAMES
        for m in flows(api).values()), timeout=30)
    p = ports(api)
    for name in ("ptx1", "ptx2"):
        assert p[name].frames_tx == per_port.get(name, 0) and p[name].frames_rx == 0, p[name]
    for name in ("prx1", "prx2"):
        assert p[name].frames_rx == per_port.get(name, 0) and p[name].frames_tx == 0, p[name]


def main():
    env = os.environ
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    api.set_config(config(api, env["OTG_TX"], env["OTG_TX2"], env["OTG_RX"], env["OTG_RX2"]))
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)

    wait_for("four members in their LAGs", lambda: len(lacp(api)) == 4 and all(
        in_lag(m) for m in lacp(api).values()), timeout=15)
    wait_for("the session up over the LAGs with every route", lambda: up(api), timeout=30)
    # Each device's daemon has a link on each member of its LAG.
    assert len(our_devices()) == 2, our_devices()

    # Every device host on every member resolved its gateway: the other device's host on the
    # member at the other end of its link answered with the device's MAC.
    req = api.states_request()
    req.ipv4_neighbors.ethernet_names = []
    got = {(n.ethernet_name, n.ipv4_address): n.link_layer_address
           for n in api.get_states(req).ipv4_neighbors}
    assert got.get(("dtxEth", "192.0.2.2")) == "02:00:00:00:02:01", got
    assert got.get(("drxEth", "192.0.2.1")) == "02:00:00:00:01:01", got

    go = api.control_state()
    go.traffic.flow_transmit.state = go.traffic.flow_transmit.START
    api.set_control_state(go)
    # The hash of the names puts f0 and f2 on the second members, f1 and f3 on the first.
    counted_on(api, {"ptx1": 2 * FRAMES, "ptx2": 2 * FRAMES,
                     "prx1": 2 * FRAMES, "prx2": 2 * FRAMES})

    # LACP stopped on ptx2: its partner prx2 expires within 3 s, and the next start puts every
    # flow on ptx1 and prx1 (the test bed opened again over them); the session stays up.
    cs = api.control_state()
    cs.protocol.lacp.admin.lag_member_names = ["ptx2"]
    cs.protocol.lacp.admin.state = "down"
    api.set_control_state(cs)
    wait_for("prx2 out of lagRx", lambda: not lacp(api)["prx2"].collecting, timeout=6)
    api.set_control_state(go)
    counted_on(api, {"ptx1": 4 * FRAMES, "prx1": 4 * FRAMES})
    assert up(api), sessions(api)
    cs.protocol.lacp.admin.state = "up"
    api.set_control_state(cs)
    wait_for("all four back", lambda: all(in_lag(m) for m in lacp(api).values()), timeout=10)


if __name__ == "__main__":
    main()
    print("lag devices: ok")
