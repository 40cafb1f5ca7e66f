"""One round of scripts/bench-routes.sh: set a config whose one device advertises V4 IPv4 /24s
and V6 IPv6 /64s to the lab's BGP DUT, then time the device's own count and the DUT's FIB.
Prints `advertised S fib S bgpd MiB bird MiB serve MiB`."""
import json
import os
import subprocess
import time

import snappi

from bench_proc import rss_mib

lab, url = os.environ["LAB"], os.environ["URL"]
v4, v6 = int(os.environ["V4"]), int(os.environ["V6"])


def fib_count():
    """Both families in the DUT's kernel FIB, as BIRD installed them."""
    total = 0
    for family in ("-4", "-6"):
        out = subprocess.run(["ip", "-n", f"{lab}-dut", family, "route", "show", "proto", "bird"],
                             check=True, capture_output=True, text=True).stdout
        total += out.count("\n")
    return total


status = json.loads(subprocess.run(["target/release/linerate", "lab", "status", "--name", lab,
                                   "--json"], check=True, capture_output=True, text=True).stdout)
sender = f"{lab}0"
west = status["sender_ip"]
gw = west.rsplit(".", 1)[0] + "." + str(int(west.rsplit(".", 1)[1]) + 1)
# IPv6 ranges go over an IPv6 session: their next hop is the device's address on the DUT's
# IPv6 subnet (`lab up --dut bgp` gives both ends one).
west6, gw6 = status["dut"]["ipv6"][0], status["dut"]["ipv6"][1]
api = snappi.api(location=url, verify=False)
c = api.config()
c.ports.port(name="p", location=sender)
d = c.devices.add(name="d")
e = d.ethernets.add(name="e")
e.connection.port_name = "p"
e.mac = "02:00:00:00:0c:01"
ip = e.ipv4_addresses.add(name="ip", address=west, prefix=30, gateway=gw)
d.bgp.router_id = west
p = d.bgp.ipv4_interfaces.add(ipv4_name="ip").peers.add(name="peer")
p.set(as_number=65201, as_type=p.EBGP, peer_address=gw)
p.v4_routes.add(name="r4").addresses.add(address="100.0.0.0", prefix=24, count=v4, step=1)
if v6:
    e.ipv6_addresses.add(name="ip6", address=west6, prefix=64, gateway=gw6)
    p6 = d.bgp.ipv6_interfaces.add(ipv6_name="ip6").peers.add(name="peer6")
    p6.set(as_number=65201, as_type=p6.EBGP, peer_address=gw6)
    p6.v6_routes.add(name="r6").addresses.add(address="2001:db8::", prefix=64, count=v6, step=1)
api.set_config(c)
start = time.time()
advertised = fib = None
while fib is None and time.time() - start < 600:
    if advertised is None:
        req = api.metrics_request()
        req.bgpv4.peer_names = []
        (m,) = api.get_metrics(req).bgpv4_metrics
        sent = m.routes_advertised
        if v6:
            req = api.metrics_request()
            req.bgpv6.peer_names = []
            sent += sum(x.routes_advertised for x in api.get_metrics(req).bgpv6_metrics)
        if sent == v4 + v6:
            advertised = time.time() - start
    if fib_count() == v4 + v6:
        fib = time.time() - start
    time.sleep(0.1)
bgpd = int(open(next(f"/run/linerate/routing/{n}/bgpd.pid" for n in os.listdir("/run/linerate/routing"))).read())
bird = int(open(f"/run/linerate/labs/{lab}.bird.pid").read())
if advertised is None or fib is None:
    raise SystemExit(f"bench-routes: after 600 s the device advertised {sent} "
                     f"and the DUT holds {fib_count()} of {v4 + v6} prefixes")
print(f"advertised {advertised:.2f} fib {fib:.2f} bgpd {rss_mib(bgpd)} bird {rss_mib(bird)} serve {rss_mib(int(os.environ['SERVER']))}")
# The next round starts from nothing: an empty config stops the daemon and the DUT withdraws.
api.set_config(api.config())
while fib_count():
    time.sleep(0.1)
