"""snappi's README quickstart (snappi 1.60.0), run against `linerate serve` on a lab.

    sudo linerate lab up --name lr
    sudo linerate serve &                      # https://127.0.0.1:8443, self-signed
    .venv/bin/python examples/otg_quickstart.py

Changes from the README: the ports are the lab's (lr0 sends, lr1 in netns lr-sink receives;
OTG_TX / OTG_RX / OTG_LOCATION override), the flow names its receive port so frames_rx is
counted, and traffic is started with set_control_state (snappi 1.60's call; the README's
set_transmit_state is from older releases).
"""
import datetime
import os
import time

import snappi


def main():
    # Create a new API handle to make API calls against OTG
    # with HTTP as default transport protocol
    api = snappi.api(location=os.environ.get("OTG_LOCATION", "https://127.0.0.1:8443"), verify=False)

    # Create a new traffic configuration that will be set on OTG
    config = api.config()

    # Add test ports to the configuration
    ptx = config.ports.add(name="ptx", location=os.environ.get("OTG_TX", "lr0"))
    prx = config.ports.add(name="prx", location=os.environ.get("OTG_RX", "lr1@lr-sink"))

    # Configure a flow and set previously created test port as one of endpoints
    flow = config.flows.add(name="flow")
    flow.tx_rx.port.tx_name = ptx.name
    flow.tx_rx.port.rx_names = [prx.name]
    # and enable tracking flow metrics
    flow.metrics.enable = True

    # Configure number of packets to transmit for previously configured flow
    flow.duration.fixed_packets.packets = 100
    # and fixed byte size of all packets in the flow
    flow.size.fixed = 128

    # Configure protocol headers for all packets in the flow
    eth, ip, udp, cus = flow.packet.ethernet().ipv4().udp().custom()

    eth.src.value = "00:11:22:33:44:55"
    eth.dst.value = "00:11:22:33:44:66"

    ip.src.value = "10.1.1.1"
    ip.dst.value = "20.1.1.1"

    # Configure repeating patterns for source and destination UDP ports
    udp.src_port.values = [5010, 5015, 5020, 5025, 5030]
    udp.dst_port.increment.start = 6010
    udp.dst_port.increment.step = 5
    udp.dst_port.increment.count = 5

    # Configure custom bytes (hex string) in payload
    cus.bytes = "".join([hex(c)[2:] for c in b"..QUICKSTART SNAPPI.."])

    # Optionally, print JSON representation of config
    print("Configuration: ", config.serialize(encoding=config.JSON))

    # Push traffic configuration constructed so far to OTG
    api.set_config(config)

    # Start transmitting the packets from configured flow
    cs = api.control_state()
    cs.traffic.flow_transmit.state = cs.traffic.flow_transmit.START
    api.set_control_state(cs)

    # Fetch metrics for configured flow
    req = api.metrics_request()
    req.flow.flow_names = [flow.name]
    # and keep polling until either expectation is met or deadline exceeds
    start = datetime.datetime.now()
    while True:
        metrics = api.get_metrics(req)
        if (datetime.datetime.now() - start).seconds > 10:
            raise Exception("deadline exceeded")
        # print YAML representation of flow metrics
        print(metrics)
        m = metrics.flow_metrics[0]
        if m.transmit == m.STOPPED and m.frames_rx == m.frames_tx:
            break
        time.sleep(0.1)


if __name__ == "__main__":
    main()
