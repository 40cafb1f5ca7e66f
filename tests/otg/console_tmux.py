"""`linerate console` in a real terminal (tmux, 80×24): the table shows every flow, a key pauses
the selected flow and the receiver's count for it stops growing (read through snappi), another
resumes it, q quits; `--no-tui` prints the same table as text; `--config` opens a test bed of its
own (a serve it starts on loopback), whose flows a key starts, and which it stops as it quits.

    LINERATE_BIN=target/debug/linerate OTG_LOCATION=https://127.0.0.1:PORT OTG_TOKEN=T \\
        OTG_TX=... OTG_RX=... .venv/bin/python tests/otg/console_tmux.py
"""
import os
import subprocess
import sys

import snappi
from devices_common import all_counted, held_while_another_runs, wait_for




def tmux(*args):
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def main():
    binary, location = os.environ["LINERATE_BIN"], os.environ["OTG_LOCATION"]
    token = os.environ["OTG_TOKEN"]
    api = snappi.api(location=location, verify=False)
    api._transport._session.headers["Authorization"] = f"Bearer {token}"
    c = api.config()
    c.ports.add(name="tx", location=os.environ["OTG_TX"])
    c.ports.add(name="rx", location=os.environ["OTG_RX"])
    names = ["c0", "c1", "c2"]
    for i, name in enumerate(names):
        f = c.flows.add(name=name)
        f.tx_rx.port.tx_name, f.tx_rx.port.rx_names = "tx", ["rx"]
        f.metrics.enable = True
        f.size.fixed = 64
        f.rate.pps = 1000
        eth, ip, udp = f.packet.ethernet().ipv4().udp()
        udp.src_port.value = 6000 + i
    api.set_config(c)

    def metrics():
        req = api.metrics_request()
        req.flow.flow_names = []
        return {m.name: m for m in api.get_metrics(req).flow_metrics}

    session = f"linerate-console-{os.getpid()}"
    command = f"{binary} console --location {location} --token {token} --interval 500ms"
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "24", command)
    try:
        def pane():
            return tmux("capture-pane", "-p", "-t", session)

        def row(name):
            for line in pane().splitlines():
                words = line.replace(">", " ").split()
                if words and words[0] == name:
                    return words
            return None

        # The console's own start-all key starts every flow.
        wait_for("the table", lambda: all(row(n) for n in names))
        tmux("send-keys", "-t", session, "a")
        wait_for("every flow started in the table", lambda: all((row(n) or ["", ""])[1] == "started" for n in names))
        wait_for("every flow arriving", lambda: all(m.frames_rx > 300 for m in metrics().values()))
        screen = pane()
        assert "q quit" in screen and "linerate console" in screen, screen
        assert all(len(line) <= 80 for line in screen.splitlines()), screen

        # Down selects c1; p pauses it: the table says so and the receiver's count stands still.
        tmux("send-keys", "-t", session, "Down")
        tmux("send-keys", "-t", session, "p")
        wait_for("c1 paused in the table", lambda: (row("c1") or ["", ""])[1] == "paused")
        assert metrics()["c1"].transmit == "paused"
        _, later = held_while_another_runs(metrics, "c1", "c0", 500)
        assert (row("c0") or ["", ""])[1] == "started"

        # r resumes it; q quits and the terminal is left.
        tmux("send-keys", "-t", session, "r")
        wait_for("c1 counting again", lambda: metrics()["c1"].frames_rx > later["c1"].frames_rx + 300)
        tmux("send-keys", "-t", session, "q")
        wait_for("the console to quit", lambda: subprocess.run(
            ["tmux", "has-session", "-t", session], capture_output=True).returncode != 0)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)

    # A console whose terminal goes away (its tmux session killed: a dropped SSH session) ends,
    # rather than reading the hung-up terminal forever.
    orphan = f"{binary} console --location {location} --token {token} --interval 600ms"
    session = f"linerate-console-gone-{os.getpid()}"
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "24", orphan)
    wait_for("its table", lambda: "c0" in tmux("capture-pane", "-p", "-t", session))
    subprocess.run(["tmux", "kill-session", "-t", session], check=True)
    wait_for("the console to end with its terminal", lambda: subprocess.run(
        ["pgrep", "-f", orphan], capture_output=True).returncode != 0, timeout=10)
    # And with no terminal at all it says to give --no-tui.
    bare = subprocess.run([binary, "console", "--location", location, "--token", token],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert bare.returncode == 2 and "--no-tui" in bare.stderr, bare

    # --no-tui: the same table as text, a block an interval.
    text = subprocess.run(
        ["timeout", "-s", "INT", "2.5", binary, "console", "--no-tui", "--location", location,
         "--token", token, "--interval", "500ms"],
        capture_output=True, text=True).stdout
    blocks = [b for b in text.split("\n\n") if b.strip()]
    assert len(blocks) >= 3, text
    last = blocks[-1].splitlines()
    assert last[0].split()[:2] == ["flow", "state"], text
    assert [line.split()[0] for line in last[1:4]] == names, text
    assert all(line.split()[1] == "started" for line in last[1:4]), text

    cs = api.control_state()
    cs.traffic.flow_transmit.state = "stop"
    api.set_control_state(cs)
    final = wait_for("the run to end", lambda: all_counted(metrics))
    assert all(x.frames_tx > 0 for x in final.values())

    # --config: a test bed of the console's own. The outer server lets the ports go first.
    api.set_config(api.config())
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"console-{os.getpid()}.json")
    with open(path, "w") as f:
        f.write(c.serialize())
    session = f"linerate-console-local-{os.getpid()}"
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "24",
         f"{binary} console --config {path} --interval 500ms; sleep 30")
    try:
        def rows():
            out = {}
            for line in tmux("capture-pane", "-p", "-t", session).splitlines():
                words = line.replace(">", " ").split()
                if words and words[0] in names:
                    out[words[0]] = words
            return out

        wait_for("its table", lambda: len(rows()) == 3)
        tmux("send-keys", "-t", session, "a")
        wait_for("every flow arriving in its table",
                 lambda: (lambda r: r if len(r) == 3 and all(w[1] == "started" and float(w[3]) > 500 for w in r.values()) else None)(rows()))
        local = subprocess.run(["pgrep", "-f", "serve --listen 127.0.0.1:0 --token-file"],
                               capture_output=True, text=True).stdout.split()
        assert len(local) == 1, local
        tmux("send-keys", "-t", session, "q")
        # Its server stopped with it (the session lives on in `sleep`, the console does not).
        wait_for("its server to stop", lambda: subprocess.run(
            ["pgrep", "-f", "serve --listen 127.0.0.1:0 --token-file"], capture_output=True).returncode != 0)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        os.remove(path)
    print("console: ok")


if __name__ == "__main__":
    sys.exit(main())
