"""Flows steered while they run, through snappi: ten flows of which two are started, one paused
and resumed, one given a new rate by update_config; the others stay stopped. Counted at the
receiver: per flow, every frame sent arrived; the paused flow's count stands still while it is
paused; the re-rated flow's rate, read from the receiver's own first/last timestamps, is the one
asked before and after."""

from devices_common import all_counted, held_while_another_runs, rerated, wait_for
from test_otg import config, flow, flow_metrics


def control(api, state, names):
    cs = api.control_state()
    cs.traffic.flow_transmit.state = state
    cs.traffic.flow_transmit.flow_names = list(names)
    return api.set_control_state(cs)


def by_name(api):
    return {m.name: m for m in flow_metrics(api)}


def test_two_of_ten_flows_started_one_paused_and_resumed_one_re_rated(api, lab):
    c = config(api, lab)
    names = [f"c{i}" for i in range(10)]
    for i, name in enumerate(names):
        f = flow(c, name, size=64)
        f.rate.pps = 1000
        f.metrics.timestamps = True
        eth, ip, udp = f.packet.ethernet().ipv4().udp()
        udp.src_port.value = 5000 + i
    api.set_config(c)

    control(api, "start", ["c0", "c1"])

    def both_arrive():
        m = by_name(api)
        return m if m["c0"].frames_rx > 200 and m["c1"].frames_rx > 200 else None

    m = wait_for("c0 and c1 to arrive", both_arrive)
    assert (m["c0"].transmit, m["c1"].transmit) == ("started", "started")
    for name in names[2:]:
        assert (m[name].transmit, m[name].frames_rx) == ("stopped", 0), name

    # Paused: its count stands still while c0 goes on; its state says so.
    control(api, "pause", ["c1"])
    held, later = held_while_another_runs(lambda: by_name(api), "c1", "c0", 500)
    assert held["c1"].transmit == later["c1"].transmit == "paused"

    # c0 at 1 kpps, then at 4 kpps from update_config, each read over a second of arrivals.
    at_1k, at_4k = rerated(api, lambda: by_name(api), c.flows[0], 4000, settle=0.2)
    assert abs(at_1k - 1000) < 20, at_1k
    assert abs(at_4k - 4000) < 80, at_4k
    # get_config says the new rate.
    assert api.get_config().flows[0].rate.pps == 4000

    # Resumed: c1 counts again, on from where it was.
    control(api, "resume", ["c1"])
    wait_for("c1 to count again", lambda: by_name(api)["c1"].frames_rx > later["c1"].frames_rx + 200)

    # Stopping c0 and c1 stops the run: every flow sent what arrived, the others nothing.
    control(api, "stop", ["c0", "c1"])
    m = wait_for("the run to end with every frame counted", lambda: all_counted(lambda: by_name(api)))
    assert m["c0"].frames_tx > m["c1"].frames_tx > 0
    assert all((m[n].frames_tx, m[n].frames_rx) == (0, 0) for n in names[2:])
    assert all(x.loss == 0 for x in m.values())


def test_pause_before_a_start_and_a_resume_of_a_flow_that_runs_are_answered_plainly(api, lab):
    c = config(api, lab)
    for name in ("a", "b"):
        f = flow(c, name, size=64)
        f.rate.pps = 500
        f.packet.ethernet().ipv4().udp()
    api.set_config(c)
    try:
        control(api, "pause", ["a"])
        raise AssertionError("a pause with nothing running was taken")
    except Exception as e:
        assert "409" in str(e) and "start it" in str(e), e
    control(api, "start", [])
    wait_for("both to arrive", lambda: all(x.frames_rx > 50 for x in by_name(api).values()))
    said = control(api, "resume", ["a"])
    assert any("not paused" in w for w in said.warnings), said
    control(api, "stop", [])
    m = wait_for("both to stop", lambda: all_counted(lambda: by_name(api)))
    assert m["a"].frames_tx > 50 and m["b"].frames_tx > 50


def test_a_flow_of_another_port_started_later_joins_the_run(api, lab):
    # Two ports each sending: the second port's only flow is stopped when the run starts, and
    # a later start of it in the same run must still send (its worker waits for it).
    c = config(api, lab)
    there = flow(c, "there", size=64)
    back = flow(c, "back", size=64)
    back.tx_rx.port.tx_name, back.tx_rx.port.rx_names = "rx", ["tx"]
    for f in (there, back):
        f.rate.pps = 1000
    api.set_config(c)

    control(api, "start", ["there"])
    wait_for("'there' to arrive", lambda: by_name(api)["there"].frames_rx > 200)
    control(api, "start", ["back"])

    def back_arrives():
        m = by_name(api)
        return m if m["back"].frames_rx > 200 else None

    m = wait_for("'back' to arrive in the same run", back_arrives)
    assert m["there"].transmit == m["back"].transmit == "started"

    control(api, "stop", ["there", "back"])
    m = wait_for("the run to end with every frame counted", lambda: all_counted(lambda: by_name(api)))
    assert m["back"].frames_tx > 0 and m["there"].frames_tx > m["back"].frames_tx
    assert all(x.loss == 0 for x in m.values())
