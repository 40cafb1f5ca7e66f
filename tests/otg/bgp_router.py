"""Two linerate devices advertise 1,000 prefixes each by eBGP to the lab's routing DUT (BIRD,
`lab up --dut bgp`), through snappi 1.60.0: tests/otg.rs starts the lab and `linerate serve`
and sets OTG_LOCATION, OTG_WEST_PORT / OTG_EAST_PORT, OTG_WEST / OTG_EAST (ADDR/LEN),
OTG_WEST_GW / OTG_EAST_GW and OTG_DUT_NETNS. The DUT installs every prefix in its FIB (counted
there), a flow each way to every prefix of the other side arrives exactly, and once the east
range is withdrawn the DUT's FIB loses it and the west flow is no longer forwarded. Raises on
failure."""
import os
import subprocess

import snappi

from devices_common import wait_for as wait_for_within


def wait_for(what, fn, timeout=40):
    """The shared wait, with longer to run: the DUT installs 2,000 prefixes."""
    return wait_for_within(what, fn, timeout)


ROUTES = 1000
FRAMES = 2 * ROUTES


def fib(netns):
    """The routes BIRD installed in the DUT's kernel: the DUT's own view."""
    out = subprocess.run(["ip", "-n", netns, "-4", "route", "show", "proto", "bird"],
                         check=True, capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line]


def config(api, env):
    c = api.config()
    c.ports.port(name="west", location=env["OTG_WEST_PORT"]).port(
        name="east", location=env["OTG_EAST_PORT"])
    for n, (side, asn, first) in enumerate((("west", 65101, "100.64.0.0"), ("east", 65102, "100.72.0.0"))):
        addr, prefix = env[f"OTG_{side.upper()}"].split("/")
        gw = env[f"OTG_{side.upper()}_GW"]
        d = c.devices.add(name=side)
        e = d.ethernets.add(name=f"{side}_eth")
        e.connection.port_name = side
        e.mac = f"02:00:00:00:0b:0{n + 1}"
        ip = e.ipv4_addresses.add(name=f"{side}_ip", address=addr, prefix=int(prefix), gateway=gw)
        d.bgp.router_id = addr
        p = d.bgp.ipv4_interfaces.add(ipv4_name=ip.name).peers.add(name=f"{side}_peer")
        p.set(as_number=asn, as_type=p.EBGP, peer_address=gw)
        p.advanced.set(hold_time_interval=3, keep_alive_interval=1)
        r = p.v4_routes.add(name=f"{side}_routes")
        r.addresses.add(address=first, prefix=24, count=ROUTES, step=1)
    for src, dst in (("west", "east"), ("east", "west")):
        f = c.flows.add(name=f"{src}_to_{dst}")
        f.tx_rx.device.set(tx_names=[f"{src}_routes"], rx_names=[f"{dst}_routes"])
        f.packet.ethernet().ipv4().udp()
        f.size.fixed = 128
        f.rate.pps = 20_000
        f.duration.fixed_packets.packets = FRAMES
        f.metrics.enable = True
    return c


def received(api):
    req = api.metrics_request()
    req.bgpv4.peer_names = []
    return {m.name: m for m in api.get_metrics(req).bgpv4_metrics}


def transmit(api):
    cs = api.control_state()
    cs.traffic.flow_transmit.state = cs.traffic.flow_transmit.START
    api.set_control_state(cs)

    def done():
        req = api.metrics_request()
        req.flow.flow_names = []
        m = {f.name: f for f in api.get_metrics(req).flow_metrics}
        return m if all(f.transmit == "stopped" and f.frames_tx == FRAMES for f in m.values()) else None

    return wait_for("every flow sent", done)


def main():
    env = os.environ
    netns = env["OTG_DUT_NETNS"]
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    api.set_config(config(api, env))
    wait_for("both sessions up, each with the other side's routes",
             lambda: all(m.session_state == "up" and m.routes_received == ROUTES
                         for m in received(api).values()) and len(received(api)) == 2)
    installed = wait_for("every prefix in the DUT's FIB", lambda: (r := fib(netns)) and len(r) == 2 * ROUTES and r)
    assert "100.64.0.0/24" in installed and "100.75.231.0/24" in installed, installed[:3]

    flows = transmit(api)
    for name, f in flows.items():
        assert f.frames_rx == FRAMES, (name, f)

    cs = api.control_state()
    cs.protocol.route.set(names=["east_routes"], state=cs.protocol.route.WITHDRAW)
    api.set_control_state(cs)
    wait_for("the east range gone from the DUT's FIB", lambda: len(fib(netns)) == ROUTES)
    wait_for("west no longer told of it", lambda: received(api)["west_peer"].routes_received == 0)

    flows = transmit(api)
    assert flows["west_to_east"].frames_rx == 0, flows["west_to_east"]
    assert flows["east_to_west"].frames_rx == FRAMES, flows["east_to_west"]


if __name__ == "__main__":
    main()
    print("bgp router: ok")
