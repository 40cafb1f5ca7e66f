"""serve's dashboard in a real headless Chromium (the distribution's, driven by its chromedriver
through Selenium): the page loads with the token from its address, its table and charts follow
two running flows, its stop button stops one flow (the receiver's count for it stands still
while the other's grows, as snappi's own metrics read it), and a screenshot is kept.

    OTG_LOCATION=https://127.0.0.1:PORT OTG_TOKEN=T OTG_TX=... OTG_RX=... UI_SHOT=out.png \\
        .venv/bin/python tests/otg/ui_dashboard.py
"""
import os
import sys

import snappi
from devices_common import all_counted, held_while_another_runs, wait_for
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By




def main():
    location, token = os.environ["OTG_LOCATION"], os.environ["OTG_TOKEN"]
    api = snappi.api(location=location, verify=False)
    api._transport._session.headers["Authorization"] = f"Bearer {token}"
    c = api.config()
    c.ports.add(name="tx", location=os.environ["OTG_TX"])
    c.ports.add(name="rx", location=os.environ["OTG_RX"])
    for i, name in enumerate(("left", "right")):
        f = c.flows.add(name=name)
        f.tx_rx.port.tx_name, f.tx_rx.port.rx_names = "tx", ["rx"]
        f.metrics.enable = True
        f.metrics.latency.enable = True
        f.size.fixed = 64
        f.rate.pps = 2000
        eth, ip, udp = f.packet.ethernet().ipv4().udp()
        udp.src_port.value = 7000 + i
    api.set_config(c)
    cs = api.control_state()
    cs.traffic.flow_transmit.state = "start"
    api.set_control_state(cs)

    def metrics():
        req = api.metrics_request()
        req.flow.flow_names = []
        return {m.name: m for m in api.get_metrics(req).flow_metrics}

    # The page is served to anyone (it holds no data); every call it makes needs the token.
    import requests
    assert requests.get(f"{location}/ui", verify=False, timeout=10).status_code == 200
    bare = requests.post(f"{location}/monitor/metrics", json={"choice": "flow", "flow": {}},
                         verify=False, timeout=10)
    assert bare.status_code == 401, bare.text
    assert requests.get(f"{location}/ui/x", verify=False, timeout=10).status_code == 401

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors",
                "--disable-dev-shm-usage", "--window-size=1200,1000", "--no-first-run"):
        options.add_argument(arg)
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    browser = webdriver.Chrome(service=service, options=options)
    try:
        browser.get(f"{location}/ui#token={token}")

        def rows():
            # Read in one script: the page replaces its rows each poll.
            got = browser.execute_script("""
                return [...document.querySelectorAll('#flows tbody tr')].map(r => [
                    r.querySelector('td.name').textContent,
                    r.querySelector('td.state').textContent,
                    Number(r.querySelector('td.frames-rx').textContent)]);""")
            return {name: (state, rx) for name, state, rx in got}

        first = wait_for("both flows in the table, arriving",
                         lambda: (lambda r: r if len(r) == 2 and all(n > 0 for _, n in r.values()) else None)(rows()))
        assert all(state == "started" for state, _ in first.values()), first
        # The charts follow the run: samples accumulate and the rx chart's pixels change.
        polls = browser.execute_script("return window.linerate.polls")
        chart = browser.execute_script("return document.getElementById('chart-rx').toDataURL()")
        wait_for("two more polls", lambda: browser.execute_script("return window.linerate.polls") >= polls + 2)
        samples = browser.execute_script("return window.linerate.history['left'].map(s => s.rx)")
        assert len(samples) >= 3 and max(samples) > 1000, samples
        assert browser.execute_script("return document.getElementById('chart-rx').toDataURL()") != chart
        assert browser.execute_script("return window.linerate.lastError") is None

        # The page's stop button for one flow stops that flow, and only it.
        browser.find_element(By.CSS_SELECTOR, "button[data-flow='left'][data-state='stop']").click()
        wait_for("left to read stopped in the page", lambda: rows().get("left", ("",))[0] == "stopped")
        wait_for("left stopped in the API", lambda: metrics()["left"].transmit == "stopped")
        _, later = held_while_another_runs(metrics, "left", "right", 1000)
        assert later["right"].transmit == "started"
        shot = os.environ.get("UI_SHOT")
        if shot:
            browser.save_screenshot(shot)
    finally:
        browser.quit()
        cs = api.control_state()
        cs.traffic.flow_transmit.state = "stop"
        api.set_control_state(cs)
    final = wait_for("the run to end", lambda: all_counted(metrics))
    assert final["right"].frames_tx > final["left"].frames_tx > 0
    print("ui dashboard: ok")


if __name__ == "__main__":
    sys.exit(main())
