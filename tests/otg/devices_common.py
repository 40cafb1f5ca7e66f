"""What the device scripts (bgp_b2b.py, bgp_router.py, isis_b2b.py) share: waiting for a
condition, and killing a device's daemon to see it named."""
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


def kill_a_daemon_and_see_it_named(daemon, ask):
    """SIGKILLs `daemon` of the first device under /run/linerate/routing; the next `ask()` (a
    metrics request) must fail naming it."""
    for d in os.listdir("/run/linerate/routing"):
        with open(f"/run/linerate/routing/{d}/{daemon}.pid") as pid:
            os.kill(int(pid.read()), 9)
        break
    try:
        ask()
    except Exception as e:  # snappi raises the server's 500
        assert f"{daemon} exited" in str(e), e
    else:
        raise AssertionError("metrics answered with a dead daemon")
