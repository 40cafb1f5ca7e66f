"""A test bed of three agents driven through one controller (issue 24), through snappi 1.60.0.

tests/agents.rs builds three "hosts" (network namespaces, each running `linerate agent`), a
controller namespace running `linerate serve --agent-token-file`, and data links h1–h2 and
h2–h3; it runs this script inside the controller's namespace with OTG_LOCATION (the
controller) and AGENT1..AGENT3 (each agent's HOST:PORT) set. The first argument says what to do:

  exact    flows both ways between hosts on different agents: exact per flow, port metrics
  config   set the config of a long run, and return
  start    set the config and start a long run, then return (the test kills something)
  lost     the controller's answer after an agent was killed: names it (argv[2])
  refused  set_config is refused naming the agent (argv[2]) and why (argv[3])
  skew     agents 1 and 3 send toward agent 2, whose ports capture: the first frames of the two
           carry signature stamps within 1 ms of each other (the hosts share one clock here, so
           this checks the start mechanism)
"""
import io
import os
import struct
import sys
import time

import dpkt
import snappi

from devices_common import held_while_another_runs, rerated, wait_for

FRAMES = 20_000


def config(api, env, seconds=None, capture=(), pairs=None):
    a1, a2, a3 = env["AGENT1"], env["AGENT2"], env["AGENT3"]
    c = api.config()
    # h1's d12 — h2's d21 on one link; h2's d23 — h3's d32 on the other.
    ports = {"p1": f"{a1}/d12", "p2": f"{a2}/d21", "p3": f"{a2}/d23", "p4": f"{a3}/d32"}
    for name, location in ports.items():
        c.ports.port(name=name, location=location)
    hosts = {
        "p1": ("10.10.12.1", "10.10.12.2"),
        "p2": ("10.10.12.2", "10.10.12.1"),
        "p3": ("10.10.23.2", "10.10.23.3"),
        "p4": ("10.10.23.3", "10.10.23.2"),
    }
    for port, (addr, gateway) in hosts.items():
        d = c.devices.add(name=f"{port}-dev")
        e = d.ethernets.add(name=f"{port}-eth")
        e.connection.port_name = port
        e.ipv4_addresses.add(name=f"{port}-ip4", address=addr, prefix=24, gateway=gateway)
    for port in capture:
        c.captures.capture(name=f"{port}-cap", port_names=[port])
    for src, dst in pairs or (("p1", "p2"), ("p2", "p1"), ("p3", "p4"), ("p4", "p3")):
        f = c.flows.add(name=f"{src}-{dst}")
        f.tx_rx.device.tx_names = [f"{src}-ip4"]
        f.tx_rx.device.rx_names = [f"{dst}-ip4"]
        f.packet.ethernet().ipv4().udp()
        f.size.fixed = 128
        f.rate.pps = 20_000
        if seconds:
            f.duration.fixed_seconds.seconds = seconds
        else:
            f.duration.fixed_packets.packets = FRAMES
        f.metrics.enable = True
        f.metrics.timestamps = True
    return c


def start(api):
    cs = api.control_state()
    cs.traffic.flow_transmit.state = "start"
    api.set_control_state(cs)


def flow_metrics(api):
    req = api.metrics_request()
    req.flow.flow_names = []
    return api.get_metrics(req).flow_metrics


def wait_stopped(api, timeout=60):
    deadline = time.time() + timeout
    while True:
        fm = flow_metrics(api)
        if all(m.transmit == "stopped" for m in fm):
            return fm
        assert time.time() < deadline, f"flows still running: {fm}"
        time.sleep(0.2)


def exact(api, env):
    api.set_config(config(api, env))
    # Each device's gateway is the host on the other end of its link, on another agent (or on
    # another port of the same one): resolved by ARP across the link, its MAC that port's.
    macs = dict(kv.split("=") for kv in env["PORT_MACS"].split(","))
    peer = {"p1": "p2", "p2": "p1", "p3": "p4", "p4": "p3"}
    req = api.states_request()
    req.ipv4_neighbors.ethernet_names = []
    got = {n.ethernet_name: n.link_layer_address for n in api.get_states(req).ipv4_neighbors}
    want = {f"{p}-eth": macs[peer[p]] for p in peer}
    assert got == want, f"ipv4_neighbors {got}, want {want}"
    cs = api.control_state()
    cs.traffic.flow_transmit.state = "start"
    said = api.set_control_state(cs).warnings
    # Each agent's clock offset is said beside the start.
    for agent in (env["AGENT1"], env["AGENT2"], env["AGENT3"]):
        assert any(agent in w and "offset" in w for w in said), said
    fm = wait_stopped(api)
    for m in fm:
        assert m.frames_tx == FRAMES, f"{m.name}: sent {m.frames_tx}"
        assert m.frames_rx == FRAMES, f"{m.name}: {m.frames_rx} of {m.frames_tx}"
        assert m.loss == 0, f"{m.name}: loss {m.loss}"
    assert {(m.name, m.port_tx, m.port_rx) for m in fm} == {
        ("p1-p2", "p1", "p2"), ("p2-p1", "p2", "p1"), ("p3-p4", "p3", "p4"), ("p4-p3", "p4", "p3"),
    }, fm
    req = api.metrics_request()
    req.port.port_names = []
    pm = {p.name: p for p in api.get_metrics(req).port_metrics}
    assert set(pm) == {"p1", "p2", "p3", "p4"}, pm
    for name, p in pm.items():
        # Each port sends one flow and receives one; ARP answers are the port's own too.
        assert p.frames_tx == FRAMES, f"{name}: frames_tx {p.frames_tx}"
        assert p.frames_rx >= FRAMES, f"{name}: frames_rx {p.frames_rx}"
        assert p.link == "up", f"{name}: link {p.link}"
    # A second run on the same config counts from zero again.
    start(api)
    fm = wait_stopped(api)
    assert all(m.frames_tx == FRAMES and m.frames_rx == FRAMES for m in fm), fm
    agents_pages(api, env)
    steered(api, env)
    print("exact: ok", flush=True)


def scrape(url, token):
    """An agent's /metrics, parsed by the Prometheus project's own OpenMetrics parser."""
    import requests
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    r = requests.get(url + "/metrics", headers={"Authorization": f"Bearer {token}"},
                     verify=False, timeout=10)
    assert r.status_code == 200, r.text
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def agents_pages(api, env):
    """Each agent's own page: its ports' counts equal the controller's port metrics, and the
    flows its receivers count add up to them."""
    with open(env["AGENT_TOKEN_FILE"]) as f:
        token = f.readline().strip()
    req = api.metrics_request()
    req.port.port_names = []
    pm = {p.name: p for p in api.get_metrics(req).port_metrics}
    where = {"p1": ("AGENT1", "d12"), "p2": ("AGENT2", "d21"), "p3": ("AGENT2", "d23"),
             "p4": ("AGENT3", "d32")}
    pages = {}
    for name, (agent, iface) in where.items():
        page = pages.setdefault(agent, scrape("https://" + env[agent], token))
        port = (("port", iface),)
        assert page[("linerate_agent_port_frames_rx_total", port)] == pm[name].frames_rx, (name, page)
        assert page[("linerate_agent_port_frames_tx", port)] == pm[name].frames_tx, (name, page)
        assert page[("linerate_agent_port_link_up", port)] == 1
        flows = [v for (metric, labels), v in page.items()
                 if metric == "linerate_agent_flow_frames_rx_total" and ("port", iface) in labels]
        assert flows == [FRAMES], (name, flows)


def transmit(api, state, names):
    cs = api.control_state()
    cs.traffic.flow_transmit.state = state
    cs.traffic.flow_transmit.flow_names = names
    return api.set_control_state(cs)


def by_name(api):
    return {m.name: m for m in flow_metrics(api)}


def steered(api, env):
    """Flows on agents steered while they run: two of four started, one paused and resumed,
    one re-rated by update_config; every flow exact once the run ends."""
    c = config(api, env, seconds=60)
    api.set_config(c)
    transmit(api, "start", ["p1-p2", "p3-p4"])
    m = wait_for("p1-p2 and p3-p4 to arrive",
                 lambda: (lambda m: m if m["p1-p2"].frames_rx > 5000 and m["p3-p4"].frames_rx > 5000 else None)(by_name(api)))
    assert m["p2-p1"].frames_rx == m["p4-p3"].frames_rx == 0, m
    assert (m["p2-p1"].transmit, m["p1-p2"].transmit) == ("stopped", "started"), m
    transmit(api, "pause", ["p1-p2"])
    held, later = held_while_another_runs(lambda: by_name(api), "p1-p2", "p3-p4", 5_000,
                                          settle=0.5)
    assert held["p1-p2"].transmit == "paused", held

    # p3-p4 from 20 kpps to 40 kpps: the agent that sends it scales its own plan.
    f = c.flows[2]
    assert f.name == "p3-p4"
    at_20k, at_40k = rerated(api, lambda: by_name(api), f, 40_000, settle=0.3)
    # Three agents' workers and a controller share this machine's cores: a rate may fall a few
    # percent behind; the change itself is what is checked, as the ratio of the two.
    assert abs(at_20k - 20_000) < 2_000 and abs(at_40k - 40_000) < 4_000, (at_20k, at_40k)
    assert 1.85 < at_40k / at_20k < 2.15, (at_20k, at_40k)
    transmit(api, "resume", ["p1-p2"])
    wait_for("p1-p2 to count again", lambda: by_name(api)["p1-p2"].frames_rx > later["p1-p2"].frames_rx + 5000)
    transmit(api, "stop", [])
    fm = {m.name: m for m in wait_stopped(api)}
    deadline = time.time() + 5
    while any(m.frames_rx != m.frames_tx for m in fm.values()) and time.time() < deadline:
        time.sleep(0.2)
        fm = by_name(api)
    for name, m in fm.items():
        assert m.frames_rx == m.frames_tx, f"{name}: {m.frames_rx} of {m.frames_tx}"
    assert fm["p3-p4"].frames_tx > fm["p1-p2"].frames_tx > 0, fm
    assert fm["p2-p1"].frames_tx == fm["p4-p3"].frames_tx == 0, fm
    print(f"steered on agents: ok ({at_20k:.0f} then {at_40k:.0f} frames/s)", flush=True)


MAGIC = 0x4C527367


def first_stamps(pcap):
    """Per flow id, the transmit stamp (ns, low 48 bits) of its frame of sequence 0, read from
    the signature: the 18 bytes before the FCS, | tx ns 48 | seq 32 | flow 16 | comp 16 |
    magic 32 |, big-endian (docs/receive.md)."""
    stamps = {}
    for _, frame in dpkt.pcap.Reader(io.BytesIO(pcap)):
        trailer = frame[-22:-4]
        if len(trailer) < 18 or struct.unpack(">I", trailer[14:18])[0] != MAGIC:
            continue
        tx = int.from_bytes(trailer[0:6], "big")
        seq, flow = struct.unpack(">IH", trailer[6:12])
        if seq == 0:
            stamps[flow] = tx
    return stamps


def skew(api, env):
    """Up to three runs: a start is one instant, but a sender the scheduler holds back (another
    process on its core) stamps its first frame late; one run within 1 ms shows the mechanism."""
    pairs = (("p1", "p2"), ("p4", "p3"))
    api.set_config(config(api, env, capture=("p2", "p3"), pairs=pairs))
    spreads = []
    for _ in range(3):
        cs = api.control_state()
        cs.port.capture.state = "start"
        cs.port.capture.port_names = ["p2", "p3"]
        api.set_control_state(cs)
        start(api)
        fm = wait_stopped(api)
        assert all(m.frames_rx == FRAMES for m in fm), fm
        cs = api.control_state()
        cs.port.capture.state = "stop"
        cs.port.capture.port_names = ["p2", "p3"]
        api.set_control_state(cs)
        firsts = {}
        for port, sender in (("p2", "agent 1"), ("p3", "agent 3")):
            req = api.capture_request()
            req.port_name = port
            pcap = api.get_capture(req).read()
            stamps = first_stamps(pcap)
            assert len(stamps) == 1, f"{port}: flows {stamps} (want the one sent toward it)"
            firsts[sender] = next(iter(stamps.values()))
        spread = max(firsts.values()) - min(firsts.values())
        print(f"first frames: {firsts}; spread {spread} ns", flush=True)
        spreads.append(spread)
        if spread < 1_000_000:
            break
    import urllib.request
    agents = urllib.request.urlopen(env["OTG_LOCATION"] + "/linerate/controller/v1/agents")
    print(agents.read().decode(), flush=True)
    assert min(spreads) < 1_000_000, f"the agents started {spreads} ns apart"


def main():
    env = os.environ
    api = snappi.api(location=env["OTG_LOCATION"], verify=False)
    what = sys.argv[1]
    if what == "exact":
        exact(api, env)
    elif what == "skew":
        skew(api, env)
    elif what == "config":
        api.set_config(config(api, env, seconds=60))
        print("configured", flush=True)
    elif what == "start":
        api.set_config(config(api, env, seconds=60))
        start(api)
        time.sleep(1)
        fm = flow_metrics(api)
        assert all(m.transmit == "started" for m in fm), fm
        print("started", flush=True)
    elif what == "lost":
        agent = sys.argv[2]
        deadline = time.time() + 20
        while True:
            try:
                flow_metrics(api)
            except Exception as e:  # snappi raises the OTG error body, as YAML folded at 80
                text = " ".join(str(e).split())
                assert agent in text and "lost" in text, text
                print(text, flush=True)
                break
            assert time.time() < deadline, "the controller never said it lost the agent"
            time.sleep(0.2)
    elif what == "refused":
        agent, why = sys.argv[2], sys.argv[3]
        try:
            api.set_config(config(api, env))
        except Exception as e:
            text = " ".join(str(e).split())
            assert agent in text and why in text and "no agent keeps the config" in text, text
            print(text, flush=True)
        else:
            raise AssertionError("set_config was accepted")
    else:
        raise SystemExit(f"unknown step {what}")


if __name__ == "__main__":
    main()
