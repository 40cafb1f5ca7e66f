"""Two OTG devices through a router linerate never configured (issue 23), through snappi 1.60.0:
tests/otg.rs starts a router lab and `linerate serve`, and sets
OTG_LOCATION, OTG_WEST_PORT / OTG_EAST_PORT (port locations), OTG_WEST / OTG_EAST (ADDR/LEN of
each device, with OTG_WEST_GW / OTG_EAST_GW its gateway) and OTG_ROUTER_MACS (the router's MAC on
the west side, then on the east side). A flow each way by device endpoints; raises on failure.
"""
import ipaddress
import os
import time

import snappi

FRAMES = 10_000


def config(api, env, west_gw=None, west_prefix=None, flows=True):
    c = api.config()
    c.ports.port(name="west", location=env["OTG_WEST_PORT"]).port(
        name="east", location=env["OTG_EAST_PORT"]
    )
    for side in ("west", "east"):
        addr, prefix = env[f"OTG_{side.upper()}"].split("/")
        gateway = env[f"OTG_{side.upper()}_GW"]
        if side == "west" and west_gw:
            gateway, prefix = west_gw, west_prefix
        d = c.devices.add(name=f"{side}-dev")
        e = d.ethernets.add(name=f"{side}-eth")
        e.connection.port_name = side
        ip = e.ipv4_addresses.add(
            name=f"{side}-ip4", address=addr, prefix=int(prefix), gateway=gateway,
        )
        ip.gateway_mac.choice = "auto"
    for src, dst in (("west", "east"), ("east", "west")) if flows else ():
        f = c.flows.add(name=f"{src}-{dst}")
        f.tx_rx.device.tx_names = [f"{src}-ip4"]
        f.tx_rx.device.rx_names = [f"{dst}-ip4"]
        f.packet.ethernet().ipv4().udp()
        f.size.fixed = 128
        f.rate.pps = 20_000
        f.duration.fixed_packets.packets = FRAMES
        f.metrics.enable = True
    return c


def main():
    env = os.environ
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    west_mac, east_mac = env["OTG_ROUTER_MACS"].split(",")
    want = {
        "west-eth": (env["OTG_WEST_GW"], west_mac),
        "east-eth": (env["OTG_EAST_GW"], east_mac),
    }
    # set_config resolves each device's gateway, flows or none: the router's MAC on its side.
    for flows in (False, True):
        api.set_config(config(api, env, flows=flows))
        req = api.states_request()
        req.ipv4_neighbors.ethernet_names = []
        neighbors = {
            n.ethernet_name: (n.ipv4_address, n.link_layer_address)
            for n in api.get_states(req).ipv4_neighbors
        }
        assert neighbors == want, f"ipv4_neighbors {neighbors}, want {want} (flows: {flows})"

    cs = api.control_state()
    cs.traffic.flow_transmit.state = "start"
    api.set_control_state(cs)
    deadline = time.time() + 30
    while True:
        req = api.metrics_request()
        req.flow.flow_names = []
        fm = api.get_metrics(req).flow_metrics
        if all(m.transmit == "stopped" for m in fm):
            break
        assert time.time() < deadline, f"flows still running: {fm}"
        time.sleep(0.2)
    for m in fm:
        assert m.frames_tx == FRAMES, f"{m.name}: sent {m.frames_tx}"
        assert m.frames_rx == m.frames_tx, f"{m.name}: {m.frames_rx} of {m.frames_tx}"
        assert m.loss == 0, f"{m.name}: loss {m.loss}"
    assert {(m.name, m.port_tx, m.port_rx) for m in fm} == {
        ("west-east", "west", "east"),
        ("east-west", "east", "west"),
    }, fm

    req = api.metrics_request()
    req.port.port_names = []
    pm = {m.name: m for m in api.get_metrics(req).port_metrics}
    assert set(pm) == {"west", "east"}, pm
    for m in pm.values():
        assert m.frames_tx == FRAMES, f"port {m.name}: sent {m.frames_tx}"
        # Each port counts the flow toward it, and what else reached it (the router's ARP).
        assert m.frames_rx >= FRAMES, f"port {m.name}: received {m.frames_rx}"
        assert m.link == "up", m

    # A gateway nobody answers for (the /30's broadcast, inside a /29): set_config fails
    # naming it, and the config that worked stays set.
    west = ipaddress.ip_interface(env["OTG_WEST"])
    silent = str(west.network.broadcast_address)
    try:
        api.set_config(config(api, env, west_gw=silent, west_prefix=29))
    except Exception as e:  # snappi raises its own type per status
        assert "400" in str(e) and silent in str(e), str(e)
    else:
        raise AssertionError(f"set_config with the silent gateway {silent} succeeded")
    assert api.get_config().devices[0].ethernets[0].ipv4_addresses[0].gateway == env["OTG_WEST_GW"]
    print("devices through the router: ok")


if __name__ == "__main__":
    main()
