"""IS-IS between two linerate devices back to back (a veth pair), through snappi 1.60.0, in the
shape of the OTG project's own b2b test (conformance feature/b2b/isis, point-to-point, level
1-2): tests/otg.rs starts a lab and `linerate serve` and sets OTG_LOCATION, OTG_TX and OTG_RX.
Each device advertises an IPv4 and an IPv6 route range; both levels' adjacencies come up, each
device learns the other's two LSPs (isisd's own database) with the ranges in them and installs
the routes in its own FIB (zebra, read with `ip route` in the device's namespace), flows between
the ranges arrive exactly, a withdrawn range leaves the peer's LSP, protocols stop and start,
and a killed isisd is named. Raises on failure."""
import os

import snappi

from devices_common import wait_for, kill_a_daemon_and_see_it_named, our_devices, device_route

FRAMES = 100
SYSTEM_IDS = {"dtx": "640000000001", "drx": "650000000001"}


def device(c, name, port, mac, ip4, gw4, ip6, gw6, route4, route6):
    d = c.devices.add(name=name)
    e = d.ethernets.add(name=f"{name}_eth")
    e.connection.port_name = port
    e.mac = mac
    e.mtu = 1500
    e.ipv4_addresses.add(name=f"{name}_ip", address=ip4, gateway=gw4, prefix=24)
    e.ipv6_addresses.add(name=f"{name}_ipv6", address=ip6, gateway=gw6, prefix=64)
    d.isis.system_id = SYSTEM_IDS[name]
    d.isis.name = f"{name}_isis"
    d.isis.advanced.area_addresses = ["490001"]
    d.isis.advanced.lsp_refresh_rate = 900
    d.isis.advanced.enable_attached_bit = False
    d.isis.basic.ipv4_te_router_id = ip4
    d.isis.basic.hostname = d.isis.name
    d.isis.basic.learned_lsp_filter = True
    i = d.isis.interfaces.add(eth_name=e.name, name=f"{name}_isis_int")
    i.network_type = i.POINT_TO_POINT
    i.level_type = i.LEVEL_1_2
    i.l2_settings.dead_interval = 30
    i.l2_settings.hello_interval = 10
    i.l2_settings.priority = 0
    i.advanced.auto_adjust_supported_protocols = True
    r4 = d.isis.v4_routes.add(name=f"{name}_isis_rr4")
    r4.link_metric = 10
    r4.addresses.add(address=route4, prefix=32, count=1, step=1)
    r6 = d.isis.v6_routes.add(name=f"{name}_isis_rr6")
    r6.addresses.add(address=route6, prefix=128, count=1, step=1)
    return d


def config(api, tx, rx):
    c = api.config()
    c.ports.port(name="ptx", location=tx).port(name="prx", location=rx)
    device(c, "dtx", "ptx", "00:00:01:01:01:01", "1.1.1.1", "1.1.1.2", "1100::1", "1100::2",
           "10.10.10.1", "2001:db8:10::1")
    device(c, "drx", "prx", "00:00:01:01:01:02", "1.1.1.2", "1.1.1.1", "1100::2", "1100::1",
           "20.20.20.1", "2001:db8:20::1")
    for name, src, dst, v6 in (("ftx_v4", "dtx", "drx", False), ("frx_v4", "drx", "dtx", False),
                               ("ftx_v6", "dtx", "drx", True), ("frx_v6", "drx", "dtx", True)):
        f = c.flows.add(name=name)
        family = "rr6" if v6 else "rr4"
        f.tx_rx.device.set(tx_names=[f"{src}_isis_{family}"], rx_names=[f"{dst}_isis_{family}"])
        headers = f.packet.ethernet()
        _, _, tcp = (headers.ipv6() if v6 else headers.ipv4()).tcp()
        tcp.src_port.value, tcp.dst_port.value = 5000, 6000
        f.size.fixed = 128
        f.rate.pps = 50
        f.duration.fixed_packets.packets = FRAMES
        f.metrics.enable = True
    return c


def metrics(api):
    req = api.metrics_request()
    req.isis.router_names = []
    return {m.name: m for m in api.get_metrics(req).isis_metrics}


def lsps(api):
    req = api.states_request()
    req.isis_lsps.isis_router_names = []
    return {s.isis_router_name: list(s.lsps) for s in api.get_states(req).isis_lsps}


def device_fib(prefix):
    """Every device namespace's kernel route to `prefix` (zebra installs what isisd computed)."""
    out = {}
    for ns in our_devices():
        out[ns] = device_route(ns, prefix)
    return out


def main():
    env = os.environ
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    api.set_config(config(api, env["OTG_TX"], env["OTG_RX"]))
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)

    def adjacent():
        m = metrics(api)
        ok = len(m) == 2 and all(x.l1_sessions_up == 1 and x.l2_sessions_up == 1 and
                                 x.l1_database_size == 2 and x.l2_database_size == 2
                                 for x in m.values())
        return m if ok else None

    # isisd counts a PDU once it has processed it, which can come after the LSP is already in
    # the database: the counts are waited for, not read at the first adjacent answer.
    def counted():
        m = adjacent()
        ok = m and all(x.l1_point_to_point_hellos_sent > 0 and
                       x.l2_point_to_point_hellos_received > 0 and
                       x.l1_lsp_received >= 1 and x.l2_lsp_received >= 1 for x in m.values())
        return m if ok else None

    for name, m in wait_for("both levels adjacent, both LSPs in each database and counted",
                            counted).items():
        assert m.l1_broadcast_hellos_sent == 0, m

    def learned():
        got = lsps(api)
        ids = sorted((router, l.lsp_id, l.pdu_type) for router, ls in got.items() for l in ls)
        want = sorted((f"{me}_isis", SYSTEM_IDS[other] + "-00-00", level)
                      for me, other in (("dtx", "drx"), ("drx", "dtx"))
                      for level in ("level_1", "level_2"))
        if ids != want:
            return None
        # The ranges reach the peer's LSPs once the originator regenerated them.
        for router, ls in got.items():
            for l in ls:
                if not l.tlvs.extended_ipv4_reachability_tlvs or not l.tlvs.ipv6_reachability_tlvs:
                    return None
        return got

    got = wait_for("each device's two learned LSPs with the ranges", learned)
    (l1,) = [l for l in got["drx_isis"] if l.pdu_type == "level_1"]
    assert l1.tlvs.hostname_tlvs[0].hostname == "dtx_isis", l1
    assert not l1.flags.attached_default, "enable_attached_bit false: no ATT bit"
    assert [n.system_id for n in l1.tlvs.extended_is_reachability_tlvs[0].neighbors] == \
        [SYSTEM_IDS["drx"]], l1
    v4 = {(p.ipv4_address, p.prefix_length): p.metric
          for t in l1.tlvs.extended_ipv4_reachability_tlvs for p in t.prefixes}
    assert v4[("10.10.10.1", 32)] == 10, v4
    v6 = {(p.ipv6_address, p.prefix_length)
          for t in l1.tlvs.ipv6_reachability_tlvs for p in t.prefixes}
    assert ("2001:db8:10::1", 128) in v6, v6
    # The peer's own FIB: zebra installed the route isisd computed, via dtx.
    wait_for("drx's FIB routes 10.10.10.1 via dtx",
             lambda: any("via 1.1.1.1" in r and "proto isis" in r
                         for r in device_fib("10.10.10.1").values()), timeout=10)

    cs = api.control_state()
    cs.traffic.flow_transmit.state = cs.traffic.flow_transmit.START
    api.set_control_state(cs)

    def done():
        req = api.metrics_request()
        req.flow.flow_names = []
        m = api.get_metrics(req).flow_metrics
        ok = all(f.transmit == "stopped" and f.frames_tx == f.frames_rx == FRAMES for f in m)
        return m if ok else None

    assert len(wait_for("every flow's frames", done)) == 4

    # A withdrawn range leaves dtx's LSPs at drx; advertised again, it comes back.
    def drx_sees(prefix):
        return any(p.ipv4_address == prefix
                   for l in lsps(api)["drx_isis"]
                   for t in l.tlvs.extended_ipv4_reachability_tlvs for p in t.prefixes)

    cs = api.control_state()
    cs.protocol.route.set(names=["dtx_isis_rr4"], state=cs.protocol.route.WITHDRAW)
    api.set_control_state(cs)
    wait_for("dtx_isis_rr4 withdrawn at drx", lambda: not drx_sees("10.10.10.1"))
    cs.protocol.route.state = cs.protocol.route.ADVERTISE
    api.set_control_state(cs)
    wait_for("dtx_isis_rr4 back at drx", lambda: drx_sees("10.10.10.1"))

    # Protocols stopped: no adjacency, empty counters; started again, adjacent again.
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.STOP
    api.set_control_state(cs)
    assert all(m.l1_sessions_up == 0 and m.l2_sessions_up == 0 for m in metrics(api).values())
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)
    wait_for("adjacent again", adjacent)

    # A daemon that dies is named in the next metrics answer.
    kill_a_daemon_and_see_it_named("isisd", lambda: metrics(api))


if __name__ == "__main__":
    main()
    print("isis b2b: ok")
