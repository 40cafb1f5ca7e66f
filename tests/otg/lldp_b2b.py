"""LLDP between two linerate agents back to back (a veth pair), through snappi 1.60.0: the OTG
project's own b2b test (conformance feature/b2b/lldp/test_lldp_neighbors.py) with its config
and its metric and neighbour checks as it has them, then more: tests/otg.rs starts a lab and
`linerate serve` and sets OTG_LOCATION, OTG_TX and OTG_RX. Each agent (lldpd in a namespace of
its own behind a macvlan of its port) hears the other: chassis id of subtype MAC, port id the
port's interface name, TTL the hold time, the other's name as system name; protocols stop and
start, a killed lldpd is named, and organizationally specific TLVs one sends the other's lldpd
hears. Raises on failure."""
import os

import snappi

from devices_common import wait_for, kill_a_daemon_and_see_it_named

TC = {
    "txMac": "00:00:01:01:01:01",
    "rxMac": "00:00:01:01:01:02",
    "holdTime": 120,
    "advInterval": 5,
    "pduCount": 2,
}


def lldp_neighbor_config(api, tc, tx, rx):
    """The conformance test's config, its ports ours (and no layer1: a veth has no speed)."""
    c = api.config()
    ptx = c.ports.add(name="ptx", location=tx)
    prx = c.ports.add(name="prx", location=rx)

    lldp_Tx = c.lldp.add(name="lldp_tx")
    lldp_Rx = c.lldp.add(name="lldp_rx")

    lldp_Tx.hold_time = tc["holdTime"]
    lldp_Tx.advertisement_interval = tc["advInterval"]
    lldp_Tx.connection.port_name = ptx.name
    lldp_Tx.chassis_id.mac_address_subtype.value = tc["txMac"]

    lldp_Rx.hold_time = tc["holdTime"]
    lldp_Rx.advertisement_interval = tc["advInterval"]
    lldp_Rx.connection.port_name = prx.name
    lldp_Rx.chassis_id.mac_address_subtype.value = tc["rxMac"]
    return c


def lldp_metrics(api):
    req = api.metrics_request()
    req.lldp.lldp_names = []
    return {m.name: m for m in api.get_metrics(req).lldp_metrics}


def lldp_neighbors(api):
    req = api.states_request()
    req.lldp_neighbors.lldp_names = []
    return list(api.get_states(req).lldp_neighbors)


def lldp_neigbhors_metrics_ok(api, tc):
    """The conformance test's check, verbatim but for the API call."""
    for m in lldp_metrics(api).values():
        if m.frames_tx < tc["pduCount"] or m.frames_rx < tc["pduCount"]:
            return False
    return True


def lldp_neighbors_ok(api, tc):
    """The conformance test's check, verbatim but for the API call."""
    count = 0
    for n in lldp_neighbors(api):
        for i in ["txMac", "rxMac"]:
            if n.chassis_id_type == "mac_address" and n.chassis_id == tc[i] and n.ttl == tc["holdTime"]:
                count += 1
    return count == 2


def main():
    env = os.environ
    tx, rx = env["OTG_TX"], env["OTG_RX"]
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    api.set_config(lldp_neighbor_config(api, TC, tx, rx))
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)

    wait_for("the conformance test's LLDP metrics", lambda: lldp_neigbhors_metrics_ok(api, TC))
    wait_for("the conformance test's LLDP neighbours", lambda: lldp_neighbors_ok(api, TC))
    heard = {n.lldp_name: n for n in lldp_neighbors(api)}
    assert sorted(heard) == ["lldp_rx", "lldp_tx"], heard
    # Each heard the other: its name, its MAC, its port's interface name.
    ports = {"lldp_tx": tx.split("@")[0], "lldp_rx": rx.split("@")[0]}
    for me, other, mac in (("lldp_tx", "lldp_rx", TC["rxMac"]), ("lldp_rx", "lldp_tx", TC["txMac"])):
        n = heard[me]
        assert n.system_name == other and n.chassis_id == mac, n
        assert n.port_id_type == "interface_name" and n.port_id == ports[other], n
    for m in lldp_metrics(api).values():
        assert m.frames_discard == 0 and m.tlvs_unknown == 0, m

    # Protocols stopped: nothing heard, nothing counted; started again, heard again.
    cs = api.control_state()
    cs.protocol.all.state = cs.protocol.all.STOP
    api.set_control_state(cs)
    assert lldp_neighbors(api) == [] or len(lldp_neighbors(api)) == 0
    assert all(m.frames_tx == 0 for m in lldp_metrics(api).values())
    cs.protocol.all.state = cs.protocol.all.START
    api.set_control_state(cs)
    wait_for("heard again", lambda: lldp_neighbors_ok(api, TC))

    # A daemon that dies is named in the next metrics answer.
    kill_a_daemon_and_see_it_named("lldpd", lambda: lldp_metrics(api))

    # Beside devices on the same ports (the ports' XDP programs then answer for the hosts and
    # drop what is not theirs), the agents still hear each other: the LLDP group and each
    # agent's MAC go to the stack through the port's hosts' table.
    c = lldp_neighbor_config(api, TC, tx, rx)
    for name, port, mac, ip, gw in (("dtx", "ptx", "00:00:02:02:02:01", "1.1.1.1", "1.1.1.2"),
                                    ("drx", "prx", "00:00:02:02:02:02", "1.1.1.2", "1.1.1.1")):
        e = c.devices.add(name=name).ethernets.add(name=f"{name}_eth")
        e.connection.port_name = port
        e.mac = mac
        e.ipv4_addresses.add(name=f"{name}_ip", address=ip, gateway=gw, prefix=24)
    api.set_config(c)
    wait_for("heard beside devices", lambda: lldp_neighbors_ok(api, TC))

    # Organizationally specific TLVs: lldp_tx sends two, lldp_rx's lldpd hears them (as TLVs of
    # OUIs it does not decode itself) and its neighbour's custom_tlvs say so; lldp_tx hears
    # none.
    c = lldp_neighbor_config(api, TC, tx, rx)
    agent = [a for a in c.lldp if a.name == "lldp_tx"][0]
    agent.org_infos.add(oui="334455", subtype=44).information.info = "0aff"
    agent.org_infos.add(oui="00000C", subtype=1).information.info = "6c696e6572617465"
    api.set_config(c)
    want = [(127, "334455", 44, "0aff"), (127, "00000C", 1, "6c696e6572617465")]

    def custom(name):
        return [[(t.custom_type, t.oui, t.oui_subtype, t.information) for t in n.custom_tlvs]
                for n in lldp_neighbors(api) if n.lldp_name == name]

    wait_for("the organizationally specific TLVs heard", lambda: custom("lldp_rx") == [want])
    # lldp_tx hears its neighbour again on lldp_rx's own next LLDPDU, which may come later.
    wait_for("lldp_tx hears lldp_rx again", lambda: len(custom("lldp_tx")) == 1)
    assert custom("lldp_tx") == [[]], custom("lldp_tx")


if __name__ == "__main__":
    main()
    print("lldp b2b: ok")
