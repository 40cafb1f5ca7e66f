"""One round of scripts/bench-igp-routes.sh: two linerate devices back to back on a lab's veth
pair (LAB0 and LAB1@LAB-sink) speak IS-IS (level 2, point to point) or OSPFv2 (area 0, point to
point); one advertises N IPv4 /24s as a route range, the other advertises none. Times, from
set_config's answer, the receiving device's kernel FIB (zebra's routes in its namespace, protocol
isis or ospf) holding all N, and reads the resident memory of both devices' protocol daemons and
of linerate serve then. ORIGIN (OSPFv2 only) is the range's route_origin, inter_area by default.
set_config's own time is the routes going into the daemons (staticd, through vtysh) and the
daemons starting. Prints `fib S rx_daemon MiB tx_daemon MiB serve MiB set_config S`."""
import json
import os
import subprocess
import time

import snappi

from bench_proc import rss_mib

lab, url, n, igp = os.environ["LAB"], os.environ["URL"], int(os.environ["N"]), os.environ["IGP"]
server = os.environ["SERVER"]
origin = os.environ.get("ORIGIN") or "inter_area"
# Linux's route protocol numbers for FRR's daemons (rtnetlink.h: RTPROT_ISIS, RTPROT_OSPF).
PROTO = {"isis": ("isis", "187"), "ospfv2": ("ospf", "188")}[igp]
DAEMON = {"isis": "isisd", "ospfv2": "ospfd"}[igp]


def ours():
    """This server's device directories (and namespaces) under /run/linerate/routing."""
    out = []
    for d in sorted(os.listdir("/run/linerate/routing")):
        try:
            with open(f"/run/linerate/routing/{d}/owner") as owner:
                if owner.read().strip() == server:
                    out.append(d)
        except FileNotFoundError:
            pass
    return out


def learned(ns):
    """IPv4 routes the IGP's zebra installed in namespace `ns`."""
    out = subprocess.run(["ip", "-n", ns, "-j", "-4", "route", "show"], capture_output=True,
                         text=True).stdout or "[]"
    return sum(1 for r in json.loads(out) if str(r.get("protocol")) in PROTO)


def device(c, name, port, mac, ip, gw, system_id, routes):
    d = c.devices.add(name=name)
    e = d.ethernets.add(name=f"{name}_eth")
    e.connection.port_name = port
    e.mac = mac
    a = e.ipv4_addresses.add(name=f"{name}_ip", address=ip, gateway=gw, prefix=24)
    if igp == "isis":
        d.isis.system_id = system_id
        d.isis.name = f"{name}_isis"
        d.isis.advanced.area_addresses = ["490001"]
        i = d.isis.interfaces.add(eth_name=e.name, name=f"{name}_isis_int")
        i.network_type = i.POINT_TO_POINT
        i.level_type = i.LEVEL_2
        if routes:
            r = d.isis.v4_routes.add(name=f"{name}_rr")
            r.addresses.add(address="100.0.0.0", prefix=24, count=routes, step=1)
    else:
        d.ospfv2.name = f"{name}_ospf"
        i = d.ospfv2.interfaces.add(name=f"{name}_ospf_int")
        i.ipv4_name = a.name
        i.network_type.choice = i.network_type.POINT_TO_POINT
        if routes:
            r = d.ospfv2.v4_routes.add(name=f"{name}_rr")
            r.metric = 10
            r.route_origin.choice = origin
            r.addresses.add(address="100.0.0.0", prefix=24, count=routes, step=1)


api = snappi.api(location=url, verify=False)
c = api.config()
c.ports.port(name="ptx", location=f"{lab}0").port(name="prx", location=f"{lab}1@{lab}-sink")
device(c, "dtx", "ptx", "02:00:00:00:0d:01", "1.1.1.1", "1.1.1.2", "640000000001", n)
device(c, "drx", "prx", "02:00:00:00:0d:02", "1.1.1.2", "1.1.1.1", "650000000001", 0)
asked = time.time()
api.set_config(c)
start = time.time()
fib = None
namespaces = ours()
while fib is None and time.time() - start < 600:
    if max((learned(ns) for ns in namespaces), default=0) >= n:
        fib = time.time() - start
    else:
        time.sleep(0.1)
if fib is None:
    raise SystemExit(f"bench-igp-routes: after 600 s the receiving device holds "
                     f"{max(learned(ns) for ns in namespaces)} of {n} prefixes")
counts = {ns: learned(ns) for ns in namespaces}
rx_ns = max(counts, key=counts.get)
tx_ns = next(ns for ns in namespaces if ns != rx_ns)


def daemon_mib(ns):
    with open(f"/run/linerate/routing/{ns}/{DAEMON}.pid") as f:
        return rss_mib(int(f.read()))


print(f"fib {fib:.2f} rx_daemon {daemon_mib(rx_ns)} tx_daemon {daemon_mib(tx_ns)} "
      f"serve {rss_mib(int(server))} set_config {start - asked:.2f}", flush=True)
# The next round starts from no config: the devices and their daemons go.
api.set_config(api.config())
