"""OSPFv2 between two linerate devices back to back (a veth pair), through snappi 1.60.0: the
OTG project's own b2b test (conformance feature/b2b/ospfv2/test_ospfv2_p2p_lsa.py) with its
config, its metric, LSA and flow checks as it has them, then more: tests/otg.rs starts a lab and
`linerate serve` and sets OTG_LOCATION, OTG_TX and OTG_RX. Each device is an OSPFv2 router on a
point-to-point interface with an inter-area range; both reach Full, each learns the other's
router LSA (the point-to-point and the stub link) and summary LSA, zebra installs the peer's
range in the device's own FIB (read with `ip route` in its namespace), flows between the ranges
arrive exactly, a withdrawn range leaves the peer's database and FIB, protocols stop and start
(the adjacency's flap counted), and a killed ospfd is named. Raises on failure."""
import os
import time

import snappi

from devices_common import wait_for, kill_a_daemon_and_see_it_named, our_devices, flow_metrics_ok, device_route

TC = {
    "pktRate": 50,
    "pktCount": 100,
    "pktSize": 128,
    "txMac": "00:00:01:01:01:01",
    "txIp": "1.1.1.1",
    "txGateway": "1.1.1.2",
    "txPrefix": 24,
    "rxMac": "00:00:01:01:01:02",
    "rxIp": "1.1.1.2",
    "rxGateway": "1.1.1.1",
    "rxPrefix": 24,
    "txRouterName": "dtx_ospfv2",
    "rxRouterName": "drx_ospfv2",
    "txRouteCount": 1,
    "rxRouteCount": 1,
    "txAdvRouteV4": "10.10.10.1",
    "rxAdvRouteV4": "20.20.20.1",
}


def ospfv2_p2p_lsa_config(api, tc, tx, rx):
    """The conformance test's config, its ports ours (and no layer1: a veth has no speed)."""
    c = api.config()
    ptx = c.ports.add(name="ptx", location=tx)
    prx = c.ports.add(name="prx", location=rx)

    dtx = c.devices.add(name="dtx")
    drx = c.devices.add(name="drx")

    dtx_eth = dtx.ethernets.add(name="dtx_eth")
    dtx_eth.connection.port_name = ptx.name
    dtx_eth.mac = tc["txMac"]
    dtx_eth.mtu = 1500

    dtx_ip = dtx_eth.ipv4_addresses.add(name="dtx_ip")
    dtx_ip.address = tc["txIp"]
    dtx_ip.gateway = tc["txGateway"]
    dtx_ip.prefix = tc["txPrefix"]

    dtx.ospfv2.name = tc["txRouterName"]
    dtx.ospfv2.store_lsa = True

    dtx_ospfv2_int = dtx.ospfv2.interfaces.add(name="dtx_ospfv2_int")
    dtx_ospfv2_int.ipv4_name = dtx_ip.name
    dtx_ospfv2_int.network_type.choice = dtx_ospfv2_int.network_type.POINT_TO_POINT
    dtx_ospfv2_int.advanced.routing_metric = 2

    dtx_ospfv2_rr4 = dtx.ospfv2.v4_routes.add(name="dtx_ospfv2_rr4")
    dtx_ospfv2_rr4.metric = 10
    dtx_ospfv2_rr4.addresses.add(
        address=tc["txAdvRouteV4"], prefix=32, count=tc["txRouteCount"], step=1
    )

    drx_eth = drx.ethernets.add(name="drx_eth")
    drx_eth.connection.port_name = prx.name
    drx_eth.mac = tc["rxMac"]
    drx_eth.mtu = 1500

    drx_ip = drx_eth.ipv4_addresses.add(name="drx_ip")
    drx_ip.address = tc["rxIp"]
    drx_ip.gateway = tc["rxGateway"]
    drx_ip.prefix = tc["rxPrefix"]

    drx.ospfv2.name = tc["rxRouterName"]
    drx.ospfv2.store_lsa = True

    drx_ospfv2_int = drx.ospfv2.interfaces.add(name="drx_ospfv2_int")
    drx_ospfv2_int.ipv4_name = drx_ip.name
    drx_ospfv2_int.network_type.choice = drx_ospfv2_int.network_type.POINT_TO_POINT
    drx_ospfv2_int.advanced.routing_metric = 2

    drx_ospfv2_rr4 = drx.ospfv2.v4_routes.add(name="drx_ospfv2_rr4")
    drx_ospfv2_rr4.metric = 10
    drx_ospfv2_rr4.addresses.add(
        address=tc["rxAdvRouteV4"], prefix=32, count=tc["rxRouteCount"], step=1
    )

    for i in range(0, 2):
        f = c.flows.add()
        f.duration.fixed_packets.packets = tc["pktCount"]
        f.rate.pps = tc["pktRate"]
        f.size.fixed = tc["pktSize"]
        f.metrics.enable = True

    ftx_v4 = c.flows[0]
    ftx_v4.name = "ftx_v4"
    ftx_v4.tx_rx.device.tx_names = [dtx_ospfv2_rr4.name]
    ftx_v4.tx_rx.device.rx_names = [drx_ospfv2_rr4.name]

    ftx_v4_eth, ftx_v4_ip, ftx_v4_tcp = ftx_v4.packet.ethernet().ipv4().tcp()
    ftx_v4_eth.src.value = dtx_eth.mac
    ftx_v4_ip.src.value = tc["txAdvRouteV4"]
    ftx_v4_ip.dst.value = tc["rxAdvRouteV4"]
    ftx_v4_tcp.src_port.value = 5000
    ftx_v4_tcp.dst_port.value = 6000

    frx_v4 = c.flows[1]
    frx_v4.name = "frx_v4"
    frx_v4.tx_rx.device.tx_names = [drx_ospfv2_rr4.name]
    frx_v4.tx_rx.device.rx_names = [dtx_ospfv2_rr4.name]

    frx_v4_eth, frx_v4_ip, frx_v4_tcp = frx_v4.packet.ethernet().ipv4().tcp()
    frx_v4_eth.src.value = drx_eth.mac
    frx_v4_ip.src.value = tc["rxAdvRouteV4"]
    frx_v4_ip.dst.value = tc["txAdvRouteV4"]
    frx_v4_tcp.src_port.value = 5000
    frx_v4_tcp.dst_port.value = 6000
    return c


def ospfv2_metrics(api):
    req = api.metrics_request()
    req.ospfv2.router_names = []
    return {m.name: m for m in api.get_metrics(req).ospfv2_metrics}


def ospfv2_lsas(api):
    req = api.states_request()
    req.ospfv2_lsas.router_names = []
    return {s.router_name: s for s in api.get_states(req).ospfv2_lsas}


def ospfv2_metrics_ok(api, tc):
    """The conformance test's check, verbatim but for the API call."""
    for m in ospfv2_metrics(api).values():
        if m.full_state_count < 1 or m.lsa_sent < 2 or m.lsa_received < 2:
            return False
    return True


def ospfv2_lsas_ok(api, tc):
    """The conformance test's check, verbatim but for the API call."""
    lsa_count = 0
    adv_router_id = ""
    nw_summary_lsa_id = ""
    router_lsa_id = ""
    router_lsa_link_id = ""
    router_lsa_link_data = ""
    for m in ospfv2_lsas(api).values():
        if m.router_name == tc["txRouterName"]:
            adv_router_id = tc["rxIp"]
            nw_summary_lsa_id = tc["rxAdvRouteV4"]
            router_lsa_id = tc["rxIp"]
            router_lsa_link_id = tc["txIp"]
            router_lsa_link_data = tc["rxIp"]
        if m.router_name == tc["rxRouterName"]:
            adv_router_id = tc["txIp"]
            nw_summary_lsa_id = tc["txAdvRouteV4"]
            router_lsa_id = tc["txIp"]
            router_lsa_link_id = tc["rxIp"]
            router_lsa_link_data = tc["txIp"]
        if (
            len(m.network_summary_lsas) == 1
            and m.network_summary_lsas[0].metric == 10
            and m.network_summary_lsas[0].header.advertising_router_id == adv_router_id
            and m.network_summary_lsas[0].header.lsa_id == nw_summary_lsa_id
        ):
            lsa_count += 1
        if (
            len(m.router_lsas) == 1
            and m.router_lsas[0].header.advertising_router_id == adv_router_id
            and m.router_lsas[0].header.lsa_id == router_lsa_id
            and len(m.router_lsas[0].links) == 2
        ):
            has_stub = False
            has_p2p = False
            for link in m.router_lsas[0].links:
                if link.type == "stub" and link.metric == 2:
                    has_stub = True
                if (link.type == "point_to_point"
                        and link.id == router_lsa_link_id
                        and link.data == router_lsa_link_data
                        and link.metric == 2):
                    has_p2p = True
            if has_stub and has_p2p:
                lsa_count += 1
    return lsa_count == 4


def device_fib(prefix):
    """Every device namespace's kernel route to `prefix` (zebra installs what ospfd computed)."""
    out = {}
    for ns in our_devices():
        out[ns] = device_route(ns, prefix)
    return out


def routed(prefix, via):
    return any(f"via {via}" in r and "proto ospf" in r for r in device_fib(prefix).values())


def main():
    env = os.environ
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    api.set_config(ospfv2_p2p_lsa_config(api, TC, env["OTG_TX"], env["OTG_RX"]))
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)

    wait_for("the conformance test's OSPFv2 metrics", lambda: ospfv2_metrics_ok(api, TC))
    wait_for("the conformance test's OSPFv2 LSAs", lambda: ospfv2_lsas_ok(api, TC))
    m = ospfv2_metrics(api)
    for name in (TC["txRouterName"], TC["rxRouterName"]):
        x = m[name]
        # Counted on the wire: what one router sent the other received (a veth loses
        # nothing), every LSA of an update either a router or a summary LSA here.
        assert x.full_state_count == 1 and x.down_state_count == 0, x
        assert x.hellos_sent > 0 and x.dbd_sent > 0 and x.ls_update_sent > 0, x
        assert x.router_lsa_sent >= 1 and x.summary_lsa_sent >= 1, x
        assert x.lsa_sent == x.router_lsa_sent + x.summary_lsa_sent, x
        assert x.external_lsa_sent == x.nssa_lsa_sent == x.network_lsa_sent == 0, x
    # Each device's FIB routes the other's range via the other (zebra installed ospfd's route).
    wait_for("dtx's FIB routes 20.20.20.1 via drx", lambda: routed("20.20.20.1", "1.1.1.2"),
             timeout=10)
    wait_for("drx's FIB routes 10.10.10.1 via dtx", lambda: routed("10.10.10.1", "1.1.1.1"),
             timeout=10)

    cs = api.control_state()
    cs.traffic.flow_transmit.state = cs.traffic.flow_transmit.START
    api.set_control_state(cs)
    wait_for("the conformance test's flow metrics", lambda: flow_metrics_ok(api, TC))

    # A withdrawn range leaves the peer's database and FIB; advertised again, it comes back.
    def drx_summaries():
        return [l.header.lsa_id for l in ospfv2_lsas(api)[TC["rxRouterName"]].network_summary_lsas]

    cs = api.control_state()
    cs.protocol.route.set(names=["dtx_ospfv2_rr4"], state=cs.protocol.route.WITHDRAW)
    api.set_control_state(cs)
    wait_for("dtx_ospfv2_rr4 withdrawn at drx", lambda: drx_summaries() == [])
    wait_for("drx's FIB without 10.10.10.1", lambda: not routed("10.10.10.1", "1.1.1.1"),
             timeout=10)
    cs.protocol.route.state = cs.protocol.route.ADVERTISE
    api.set_control_state(cs)
    wait_for("dtx_ospfv2_rr4 back at drx", lambda: drx_summaries() == ["10.10.10.1"])

    # Protocols stopped: no neighbour, every interface down; started again, Full again, and
    # each router counts the adjacency it lost.
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.STOP
    api.set_control_state(cs)
    m = ospfv2_metrics(api)
    assert all(x.full_state_count == 0 and x.down_state_count == 1 for x in m.values()), m
    assert all(len(s.router_lsas) == 0 for s in ospfv2_lsas(api).values())
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)
    wait_for("Full again", lambda: ospfv2_lsas_ok(api, TC))
    wait_for("the lost adjacency counted",
             lambda: all(x.sessions_flap >= 1 and x.full_state_count == 1
                         for x in ospfv2_metrics(api).values()))

    # A daemon that dies is named in the next metrics answer.
    kill_a_daemon_and_see_it_named("ospfd", lambda: ospfv2_metrics(api))

    # MD5 authentication (RFC 2328 D.3): the same key on both ends, Full again; keys that
    # differ, hellos arrive (counted on the wire) and no adjacency forms.
    def with_keys(tx_key, rx_key):
        c = ospfv2_p2p_lsa_config(api, TC, env["OTG_TX"], env["OTG_RX"])
        for d, key in zip(c.devices, (tx_key, rx_key)):
            # Hellos every second: a first hello lost in the start-up race (its peer's ospfd
            # not yet in the group) is sent again at once, not 10 s later.
            d.ospfv2.interfaces[0].advanced.hello_interval = 1
            d.ospfv2.interfaces[0].advanced.dead_interval = 4
            auth = d.ospfv2.interfaces[0].authentication
            auth.choice = auth.MD5S
            auth.md5s.add(key_id=1, key=key)
        api.set_config(c)

    with_keys("linerate", "linerate")
    wait_for("Full with MD5 keys", lambda: ospfv2_metrics_ok(api, TC))
    with_keys("linerate", "another")
    wait_for("hellos heard with the other key",
             lambda: all(x.hellos_received > 0 for x in ospfv2_metrics(api).values()))
    time.sleep(3)
    m = ospfv2_metrics(api)
    assert all(x.full_state_count == 0 for x in m.values()), m


if __name__ == "__main__":
    main()
    print("ospfv2 b2b: ok")
