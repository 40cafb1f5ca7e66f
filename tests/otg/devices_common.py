"""What the snappi scripts (bgp_b2b.py, isis_b2b.py, agents.py, console_tmux.py, …) share:
waiting for a condition, the device namespaces of the server under test, killing a device's
daemon to see it named, the conformance tests' flow check, and the checks of flows steered
while they run (a held flow's count standing still, a rate before and after update_config, a
run ended with every frame counted)."""
import os
import subprocess
import time


def all_counted(metrics):
    """metrics() (flow name → metric) once every flow is stopped and every frame it sent was
    counted, else None."""
    m = metrics()
    done = all(x.transmit == "stopped" and x.frames_rx == x.frames_tx for x in m.values())
    return m if done else None


def held_while_another_runs(metrics, held, running, more_than, settle=0.3):
    """Two readings of metrics() a second apart, `settle` s after a flow was held: `held`'s
    received count stands still while `running`'s grows by more than `more_than`. Both readings."""
    time.sleep(settle)
    first = metrics()
    time.sleep(1.0)
    later = metrics()
    assert later[held].frames_rx == first[held].frames_rx, (first[held], later[held])
    assert later[running].frames_rx > first[running].frames_rx + more_than, (
        first[running], later[running])
    return first, later


def received_rate(a, b):
    """Frames a second a flow's receiver saw between two of its metrics (its own timestamps)."""
    span_ns = b.timestamps.last_timestamp_ns - a.timestamps.last_timestamp_ns
    return (b.frames_rx - a.frames_rx) * 1e9 / span_ns


def rerated(api, metrics, flow, pps, settle):
    """Flow `flow` (a snappi Flow of the config set) given `pps` by update_config: its received
    rate over a second before, and over a second from `settle` s after."""
    before = metrics()[flow.name]
    time.sleep(1.0)
    was = received_rate(before, metrics()[flow.name])
    update = api.config_update()
    update.flows.property_names = [update.flows.RATE]
    flow.rate.pps = pps
    update.flows.flows.append(flow)
    api.update_config(update)
    time.sleep(settle)
    start = metrics()[flow.name]
    time.sleep(1.0)
    return was, received_rate(start, metrics()[flow.name])


def wait_for(what, fn, timeout=30, every=0.2):
    """fn()'s first truthy answer within `timeout` seconds, or an AssertionError with the last."""
    deadline = time.time() + timeout
    got = None
    while time.time() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout} s (last: {got!r})")


def our_devices():
    """The device namespaces (and directories) under /run/linerate/routing of the server under
    test (LINERATE_SERVER_PID, which tests/otg.rs sets, or the agents' pids, comma-separated,
    which tests/agents.rs sets; every one without it): another linerate's devices on this
    machine are not ours to read or kill."""
    servers = os.environ.get("LINERATE_SERVER_PID")
    servers = None if servers is None else servers.split(",")
    out = []
    for d in sorted(os.listdir("/run/linerate/routing")):
        if d.startswith("."):  # being made: its name is not its namespace's yet
            continue
        try:
            with open(f"/run/linerate/routing/{d}/owner") as owner:
                if servers is None or owner.read().strip() in servers:
                    out.append(d)
        except FileNotFoundError:
            pass
    return out


def device_route(ns, prefix, *family):
    """`ip [FAMILY] route show PREFIX` in device namespace `ns` (what zebra installed), entered
    through one of its daemons: the namespace's name is mounted where its server made it (an
    agent started by `ip netns exec` mounts it in a mount namespace of its own), while a
    daemon's /proc entry is everyone's."""
    d = f"/run/linerate/routing/{ns}"
    for name in sorted(os.listdir(d)):
        if name.endswith(".pid"):
            with open(f"{d}/{name}") as f:
                pid = f.read().strip()
            r = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "ip", *family, "route",
                                "show", prefix], capture_output=True, text=True)
            return r.stdout.strip()
    return ""


def kill_a_daemon_and_see_it_named(daemon, ask):
    """SIGKILLs `daemon` of the server's first device; the next `ask()` (a metrics request)
    must fail naming it."""
    for d in our_devices():
        with open(f"/run/linerate/routing/{d}/{daemon}.pid") as pid:
            os.kill(int(pid.read()), 9)
        break
    try:
        ask()
    except Exception as e:  # snappi raises the server's 500
        assert f"{daemon} exited" in str(e), e
    else:
        raise AssertionError("metrics answered with a dead daemon")


def flow_metrics_ok(api, tc):
    """The conformance b2b tests' flow check: every flow stopped, tc["pktCount"] frames sent and
    as many received."""
    req = api.metrics_request()
    req.flow.flow_names = []
    for m in api.get_metrics(req).flow_metrics:
        if (m.transmit != m.STOPPED or m.frames_tx != tc["pktCount"]
                or m.frames_rx != tc["pktCount"]):
            return False
    return True
