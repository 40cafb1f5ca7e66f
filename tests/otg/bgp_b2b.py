"""BGP between two linerate devices back to back (a veth pair), through snappi 1.60.0, in the
shape of the OTG project's own b2b eBGP test: tests/otg.rs starts a lab and `linerate serve`
and sets OTG_LOCATION, OTG_TX and OTG_RX. Each device advertises IPv4 and IPv6 route ranges
with path attributes over one IPv4 session (drx on a /4, paths carrying drx's AS, as the
conformance test has them); the sessions come up, each learns the other's
ranges as sent (the other daemon's own view), flows between the ranges arrive exactly, a
withdrawn range leaves the peer, protocols stop, and a daemon that dies is named. Raises on
failure."""
import os

import snappi

from devices_common import wait_for, kill_a_daemon_and_see_it_named

ROUTES = 100
FRAMES = 1000


def device(c, name, port, mac, me, prefix, peer, asn, v4_route, v6_route, next_hop4, next_hop6):
    d = c.devices.add(name=name)
    e = d.ethernets.add(name=f"{name}_eth")
    e.connection.port_name = port
    e.mac = mac
    e.mtu = 1500
    ip = e.ipv4_addresses.add(name=f"{name}_ip", address=me, gateway=peer, prefix=prefix)
    d.bgp.router_id = me
    p = d.bgp.ipv4_interfaces.add(ipv4_name=ip.name).peers.add(name=f"{name}_peer")
    p.set(as_number=asn, as_type=p.EBGP, peer_address=peer)
    p.advanced.set(hold_time_interval=3, keep_alive_interval=1)
    p.learned_information_filter.set(unicast_ipv4_prefix=True, unicast_ipv6_prefix=True)
    r4 = p.v4_routes.add(name=f"{name}_rr4")
    r4.set(next_hop_mode=r4.MANUAL, next_hop_address_type=r4.IPV4, next_hop_ipv4_address=next_hop4)
    r4.addresses.add(address=v4_route, prefix=32, count=ROUTES, step=1)
    r4.advanced.set(multi_exit_discriminator=50, origin=r4.advanced.EGP)
    com = r4.communities.add(as_number=1, as_custom=2)
    com.type = com.MANUAL_AS_NUMBER
    seg = r4.as_path.segments.add()
    # As the conformance test has it: both devices' paths carry drx's AS (1112), so drx
    # learns paths with its own AS in them.
    seg.set(as_numbers=[1112, 1113], type=seg.AS_SEQ)
    r6 = p.v6_routes.add(name=f"{name}_rr6")
    r6.set(next_hop_mode=r6.MANUAL, next_hop_address_type=r6.IPV6, next_hop_ipv6_address=next_hop6)
    r6.addresses.add(address=v6_route, prefix=128, count=1, step=1)
    return d


def config(api, tx, rx):
    c = api.config()
    c.ports.port(name="ptx", location=tx).port(name="prx", location=rx)
    device(c, "dtx", "ptx", "02:00:01:01:01:01", "1.1.1.1", 24, "1.1.1.2", 1111,
           "10.10.10.1", "2001:db8:10::1", "1.1.1.3", "2001:db8::3")
    # drx's subnet is 0.0.0.0/4 (the conformance test's), for which the kernel adds no route.
    device(c, "drx", "prx", "02:00:01:01:01:02", "1.1.1.2", 4, "1.1.1.1", 1112,
           "20.20.20.1", "2001:db8:20::1", "1.1.1.4", "2001:db8::4")
    for name, src, dst, v6 in (("ftx_v4", "dtx_rr4", "drx_rr4", False),
                               ("frx_v4", "drx_rr4", "dtx_rr4", False),
                               ("ftx_v6", "dtx_rr6", "drx_rr6", True),
                               ("frx_v6", "drx_rr6", "dtx_rr6", True)):
        f = c.flows.add(name=name)
        f.tx_rx.device.set(tx_names=[src], rx_names=[dst])
        eth = f.packet.ethernet()
        ip = eth.ipv6() if v6 else eth.ipv4()
        ip.tcp()
        f.size.fixed = 128
        f.rate.pps = 2000
        f.duration.fixed_packets.packets = FRAMES
        f.metrics.enable = True
    return c


def sessions(api):
    req = api.metrics_request()
    req.bgpv4.peer_names = []
    return {m.name: m for m in api.get_metrics(req).bgpv4_metrics}


def prefixes(api, peer):
    req = api.states_request()
    req.bgp_prefixes.bgp_peer_names = [peer]
    (state,) = api.get_states(req).bgp_prefixes
    return state


def main():
    env = os.environ
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    said = api.set_config(config(api, env["OTG_TX"], env["OTG_RX"]))
    # snappi's default as_set_mode is taken with a word, not refused: eBGP prepends the local AS.
    assert any("do_not_include_local_as" in w for w in said.warnings), said
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)

    def up():
        s = sessions(api)
        # bgpd counts what it sent when its update group's write runs, which can come after
        # the peer already counts the routes in: both counts are waited for.
        ok = all(m.session_state == "up" and m.routes_received == ROUTES + 1 and
                 m.routes_advertised == ROUTES + 1 for m in s.values())
        return s if ok and len(s) == 2 else None

    for name, m in wait_for("both sessions up with every route", up).items():
        assert m.fsm_state == "established", m
        assert m.opens_sent >= 1 and m.updates_received >= 1, m

    # What drx's daemon learned from dtx, attribute by attribute.
    got = prefixes(api, "drx_peer")
    v4 = {p.ipv4_address: p for p in got.ipv4_unicast_prefixes}
    assert len(v4) == ROUTES, sorted(v4)
    first = v4["10.10.10.1"]
    assert first.prefix_length == 32 and first.ipv4_next_hop == "1.1.1.3", first
    assert first.origin == "egp" and first.multi_exit_discriminator == 50, first
    assert [(c.as_number, c.as_custom) for c in first.communities] == [(1, 2)], first
    assert list(first.as_path.segments[0].as_numbers) == [1111, 1112, 1113], first
    assert "10.10.10.100" in v4 and "10.10.10.101" not in v4
    (v6,) = got.ipv6_unicast_prefixes
    assert (v6.ipv6_address, v6.prefix_length, v6.ipv6_next_hop) == ("2001:db8:10::1", 128, "2001:db8::3"), v6

    api.set_control_state(start_transmit(api))

    def done():
        req = api.metrics_request()
        req.flow.flow_names = []
        m = api.get_metrics(req).flow_metrics
        return m if all(f.transmit == "stopped" and f.frames_rx == f.frames_tx == FRAMES for f in m) else None

    flows = wait_for("every flow's frames", done)
    assert len(flows) == 4, flows

    # A withdrawn range leaves the peer's table; the other stays.
    cs = api.control_state()
    cs.protocol.route.set(names=["dtx_rr4"], state=cs.protocol.route.WITHDRAW)
    api.set_control_state(cs)
    wait_for("dtx_rr4 withdrawn at drx", lambda: not prefixes(api, "drx_peer").ipv4_unicast_prefixes)
    assert len(prefixes(api, "drx_peer").ipv6_unicast_prefixes) == 1
    cs.protocol.route.state = cs.protocol.route.ADVERTISE
    api.set_control_state(cs)
    wait_for("dtx_rr4 back at drx", lambda: len(prefixes(api, "drx_peer").ipv4_unicast_prefixes) == ROUTES)

    # Protocols stopped: every session is down; started again, up.
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.STOP
    api.set_control_state(cs)
    assert all(m.session_state == "down" for m in sessions(api).values())
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)
    wait_for("sessions up again", up)

    # The same config set again: the new devices, with the old ones' MACs on the same ports,
    # come up (the old macvlans are gone before set_config answers) and peer again.
    api.set_config(config(api, env["OTG_TX"], env["OTG_RX"]))
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)
    wait_for("sessions up in the config set again", up)

    # A daemon that dies is named in the next metrics answer.
    kill_a_daemon_and_see_it_named("bgpd", lambda: sessions(api))


def start_transmit(api):
    cs = api.control_state()
    cs.traffic.flow_transmit.state = cs.traffic.flow_transmit.START
    return cs


if __name__ == "__main__":
    main()
    print("bgp b2b: ok")
