"""What the device scripts (bgp_b2b.py, bgp_router.py, isis_b2b.py, ospfv2_b2b.py, …) share:
waiting for a condition, the device namespaces of the server under test, killing a device's
daemon to see it named, and the conformance tests' flow check."""
import os
import time


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
    test (LINERATE_SERVER_PID, which tests/otg.rs sets; every one without it): another
    linerate's devices on this machine are not ours to read or kill."""
    server = os.environ.get("LINERATE_SERVER_PID")
    out = []
    for d in sorted(os.listdir("/run/linerate/routing")):
        try:
            with open(f"/run/linerate/routing/{d}/owner") as owner:
                if server is None or owner.read().strip() == server:
                    out.append(d)
        except FileNotFoundError:
            pass
    return out


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
