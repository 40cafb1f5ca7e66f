"""OSPFv3 between two linerate devices back to back (a veth pair), through snappi 1.60.0: the
OTG project's own b2b test (conformance feature/b2b/ospfv3/test_ospfv3_p2p_lsa.py) with its
config, its metric, LSA and flow checks as it has them, then more: tests/otg.rs starts a lab and
`linerate serve` and sets OTG_LOCATION, OTG_TX and OTG_RX. Each device is an OSPFv3 router
(ospf6d) on a point-to-point interface with an inter-area range; both reach Full, each learns
the other's router, link and inter-area-prefix LSAs, zebra installs the peer's range in the
device's own FIB, flows between the ranges arrive exactly, a withdrawn range leaves the peer's
database and FIB, protocols stop and start (the flap counted), and a killed ospf6d is named.
Raises on failure."""
import os

import snappi

from devices_common import wait_for, kill_a_daemon_and_see_it_named, our_devices, flow_metrics_ok, device_route

TC = {
    "pktRate": 50,
    "pktCount": 100,
    "pktSize": 128,
    "txMac": "00:00:01:01:01:01",
    "txIpV6": "::1:1:1:1",
    "txGateway": "::1:1:1:2",
    "txPrefix": 64,
    "rxMac": "00:00:01:01:01:02",
    "rxIpV6": "::1:1:1:2",
    "rxGateway": "::1:1:1:1",
    "rxPrefix": 64,
    "txRouterName": "dtx_ospfv3",
    "rxRouterName": "drx_ospfv3",
    "txRouterId": "5.5.5.5",
    "rxRouterId": "7.7.7.7",
    "txRouteCount": 1,
    "rxRouteCount": 1,
    "txAdvRouteV6": "4:4:4:0:0:0:0:1",
    "txAddrPrefix": "4:4:4:0:0:0:0:0",
    "rxAdvRouteV6": "6:6:6:0:0:0:0:1",
    "rxAddrPrefix": "6:6:6:0:0:0:0:0",
    "txMetric": 10,
    "rxMetric": 9,
    "txLinkMetric": 20,
    "rxLinkMetric": 19,
}


def ospfv3_p2p_lsa_config(api, tc, tx, rx):
    """The conformance test's config, its ports ours (and no layer1: a veth has no speed)."""
    c = api.config()
    ptx = c.ports.add(name="ptx", location=tx)
    prx = c.ports.add(name="prx", location=rx)


    # transmit
    dtx = c.devices.add(name="dtx")
    drx = c.devices.add(name="drx")

    dtx_eth = dtx.ethernets.add(name="dtx_eth")
    dtx_eth.connection.port_name = ptx.name
    dtx_eth.mac = tc["txMac"]
    dtx_eth.mtu = 1500

    dtx_ipv6 = dtx_eth.ipv6_addresses.add(name="dtx_ipv6")
    dtx_ipv6.address = tc["txIpV6"]
    dtx_ipv6.gateway = tc["txGateway"]
    dtx_ipv6.prefix = tc["txPrefix"]

    dtx_ospfv3 = dtx.ospfv3
    dtx_ospfv3.router_id.custom = tc["txRouterId"]
    
    dtx_ospfv3_instance = dtx_ospfv3.instances.add(name=tc["txRouterName"])
    dtx_ospfv3_instance.store_lsa = True

    dtx_ospfv3_int = dtx_ospfv3_instance.interfaces.add(name="dtx_ospfv3_int")
    dtx_ospfv3_int.ipv6_name = dtx_ipv6.name

    dtx_ospfv3_int.network_type.choice = dtx_ospfv3_int.network_type.POINT_TO_POINT
    dtx_ospfv3_int.advanced.link_metric = tc["txLinkMetric"]

    dtx_ospfv3_rr6 = dtx_ospfv3_instance.v6_routes.add(name="dtx_ospfv3_rr6")
    dtx_ospfv3_rr6.metric = tc["txMetric"]
    dtx_ospfv3_rr6.addresses.add(
        address=tc["txAdvRouteV6"], prefix=64, count=tc["txRouteCount"], step=1
    )

    # receive
    drx_eth = drx.ethernets.add(name="drx_eth")
    drx_eth.connection.port_name = prx.name
    drx_eth.mac = tc["rxMac"]
    drx_eth.mtu = 1500

    drx_ipv6 = drx_eth.ipv6_addresses.add(name="drx_ipv6")
    drx_ipv6.address = tc["rxIpV6"]
    drx_ipv6.gateway = tc["rxGateway"]
    drx_ipv6.prefix = tc["rxPrefix"]

    drx_ospfv3 = drx.ospfv3
    drx_ospfv3.router_id.custom = tc["rxRouterId"]

    drx_ospfv3_instance = drx_ospfv3.instances.add(name=tc["rxRouterName"])
    drx_ospfv3_instance.store_lsa = True

    drx_ospfv3_int = drx_ospfv3_instance.interfaces.add(name="drx_ospfv3_int")
    drx_ospfv3_int.ipv6_name = drx_ipv6.name

    drx_ospfv3_int.network_type.choice = drx_ospfv3_int.network_type.POINT_TO_POINT
    drx_ospfv3_int.advanced.link_metric = tc["rxLinkMetric"]

    drx_ospfv3_rr6 = drx_ospfv3_instance.v6_routes.add(name="drx_ospfv3_rr6")
    drx_ospfv3_rr6.metric = tc["rxMetric"]
    drx_ospfv3_rr6.addresses.add(
        address=tc["rxAdvRouteV6"], prefix=64, count=tc["rxRouteCount"], step=1
    )

    # traffic
    for i in range(0, 2):
        f = c.flows.add()
        f.duration.fixed_packets.packets = tc["pktCount"]
        f.rate.pps = tc["pktRate"]
        f.size.fixed = tc["pktSize"]
        f.metrics.enable = True

    ftx_v6 = c.flows[0]
    ftx_v6.name = "ftx_v6"
    ftx_v6.tx_rx.device.tx_names = [dtx_ospfv3_rr6.name]
    ftx_v6.tx_rx.device.rx_names = [drx_ospfv3_rr6.name]

    ftx_v6_eth, ftx_v6_ipv6, ftx_v6_tcp = ftx_v6.packet.ethernet().ipv6().tcp()
    ftx_v6_eth.src.value = dtx_eth.mac
    ftx_v6_ipv6.src.value = tc["txAdvRouteV6"]
    ftx_v6_ipv6.dst.value = tc["rxAdvRouteV6"]
    ftx_v6_tcp.src_port.value = 5000
    ftx_v6_tcp.dst_port.value = 6000

    frx_v6 = c.flows[1]
    frx_v6.name = "frx_v6"
    frx_v6.tx_rx.device.tx_names = [drx_ospfv3_rr6.name]
    frx_v6.tx_rx.device.rx_names = [dtx_ospfv3_rr6.name]

    frx_v6_eth, frx_v6_ip, frx_v6_tcp = frx_v6.packet.ethernet().ipv6().tcp()
    frx_v6_eth.src.value = drx_eth.mac
    frx_v6_ip.src.value = tc["rxAdvRouteV6"]
    frx_v6_ip.dst.value = tc["txAdvRouteV6"]
    frx_v6_tcp.src_port.value = 5000
    frx_v6_tcp.dst_port.value = 6000

    return c


def ospfv3_metrics(api):
    req = api.metrics_request()
    req.ospfv3.router_names = []
    return {m.name: m for m in api.get_metrics(req).ospfv3_metrics}


def ospfv3_lsas(api):
    req = api.states_request()
    req.ospfv3_lsas.router_names = []
    return {s.router_name: s for s in api.get_states(req).ospfv3_lsas}


def ospfv3_metrics_ok(api, tc):
    """The conformance test's check, verbatim but for the API call."""
    for m in ospfv3_metrics(api).values():
        if m.full_state_count < 1 or m.lsa_sent < 3 or m.lsa_received < 3:
            return False
    return True


def ospfv3_lsas_ok(api, tc):
    """The conformance test's check, verbatim but for the API call."""
    lsa_count = 0
    adv_router_id = ""
    addr_prefix = ""
    metric = 0
    router_lsa_nbr_id = ""
    router_lsa_link_metric = 0
    router_lsa_link_type = "point_to_point"
    for m in ospfv3_lsas(api).values():
        if m.router_name == tc["txRouterName"]:
            adv_router_id = tc["rxRouterId"]
            addr_prefix = tc["rxAddrPrefix"]
            router_lsa_nbr_id = tc["txRouterId"]
            metric = tc["rxMetric"]
            router_lsa_link_metric = tc["rxLinkMetric"]
        if m.router_name == tc["rxRouterName"]:
            adv_router_id = tc["txRouterId"]
            addr_prefix = tc["txAddrPrefix"]
            router_lsa_nbr_id = tc["rxRouterId"]
            metric = tc["txMetric"]
            router_lsa_link_metric = tc["txLinkMetric"]
        # validate lsas
        if (
            len(m.inter_area_prefix_lsas) == 1
            and m.inter_area_prefix_lsas[0].address_prefix == addr_prefix
            and m.inter_area_prefix_lsas[0].header.advertising_router_id == adv_router_id
            and m.inter_area_prefix_lsas[0].metric == metric
        ):
            lsa_count += 1
        if (
            len(m.link_lsas) == 1
            and m.link_lsas[0].header.advertising_router_id == adv_router_id
        ):
            lsa_count += 1
        if (
            len(m.router_lsas) == 1
            and m.router_lsas[0].header.advertising_router_id == adv_router_id
            and m.router_lsas[0].neighbor_router_id == router_lsa_nbr_id
            and len(m.router_lsas[0].links) == 1
            and m.router_lsas[0].links[0].type == router_lsa_link_type
            and m.router_lsas[0].links[0].metric == router_lsa_link_metric
        ):
            lsa_count += 1
    return lsa_count == 6


def routed(prefix):
    """Whether some device of ours routes `prefix` by OSPF (zebra installed ospf6d's route,
    via the peer's link-local address)."""
    for ns in our_devices():
        r = device_route(ns, prefix, "-6")
        if "via fe80::" in r and "proto ospf" in r:
            return True
    return False


def main():
    env = os.environ
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    api.set_config(ospfv3_p2p_lsa_config(api, TC, env["OTG_TX"], env["OTG_RX"]))
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)

    wait_for("the conformance test's OSPFv3 metrics", lambda: ospfv3_metrics_ok(api, TC))
    wait_for("the conformance test's OSPFv3 LSAs", lambda: ospfv3_lsas_ok(api, TC))
    for name, x in ospfv3_metrics(api).items():
        # Counted on the wire, each way: the router, link, intra- and inter-area-prefix LSAs.
        assert x.full_state_count == 1 and x.down_state_count == 0, x
        assert x.hellos_sent > 0 and x.dbd_sent > 0 and x.ls_update_sent > 0, x
        for kind in ("router", "link", "inter_area_prefix", "intra_area_prefix"):
            assert getattr(x, f"{kind}_lsa_sent") >= 1, (kind, x)
            assert getattr(x, f"{kind}_lsa_received") >= 1, (kind, x)
        assert x.external_lsa_sent == x.nssa_lsa_sent == x.network_lsa_sent == 0, x
    wait_for("a FIB routes 6:6:6::/64", lambda: routed("6:6:6::/64"), timeout=10)
    wait_for("a FIB routes 4:4:4::/64", lambda: routed("4:4:4::/64"), timeout=10)

    cs = api.control_state()
    cs.traffic.flow_transmit.state = cs.traffic.flow_transmit.START
    api.set_control_state(cs)
    wait_for("the conformance test's flow metrics", lambda: flow_metrics_ok(api, TC))

    # A withdrawn range leaves the peer's database and FIB; advertised again, it comes back.
    def drx_prefixes():
        return [l.address_prefix
                for l in ospfv3_lsas(api)[TC["rxRouterName"]].inter_area_prefix_lsas]

    cs = api.control_state()
    cs.protocol.route.set(names=["dtx_ospfv3_rr6"], state=cs.protocol.route.WITHDRAW)
    api.set_control_state(cs)
    wait_for("dtx_ospfv3_rr6 withdrawn at drx", lambda: drx_prefixes() == [])
    wait_for("no FIB routes 4:4:4::/64", lambda: not routed("4:4:4::/64"), timeout=10)
    cs.protocol.route.state = cs.protocol.route.ADVERTISE
    api.set_control_state(cs)
    wait_for("dtx_ospfv3_rr6 back at drx", lambda: drx_prefixes() == ["4:4:4:0:0:0:0:0"])

    # Protocols stopped: no neighbour, every interface down; started again, Full again, and
    # each router counts the adjacency it lost.
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.STOP
    api.set_control_state(cs)
    m = ospfv3_metrics(api)
    assert all(x.full_state_count == 0 and x.down_state_count == 1 for x in m.values()), m
    assert all(len(s.router_lsas) == 0 for s in ospfv3_lsas(api).values())
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)
    wait_for("Full again", lambda: ospfv3_lsas_ok(api, TC))
    wait_for("the lost adjacency counted",
             lambda: all(x.sessions_flap >= 1 and x.full_state_count == 1
                         for x in ospfv3_metrics(api).values()))

    # A daemon that dies is named in the next metrics answer.
    kill_a_daemon_and_see_it_named("ospf6d", lambda: ospfv3_metrics(api))


if __name__ == "__main__":
    main()
    print("ospfv3 b2b: ok")
