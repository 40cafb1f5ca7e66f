"""snappi against `linerate serve` on a lab: tests/otg.rs starts both and sets
OTG_LOCATION (https://127.0.0.1:PORT), OTG_TX (the lab's sender) and OTG_RX (its receive end,
IFACE@NETNS)."""
import os

import pytest
import snappi


@pytest.fixture
def api():
    return snappi.api(location=os.environ["OTG_LOCATION"], verify=False)


@pytest.fixture
def lab():
    return os.environ["OTG_TX"], os.environ["OTG_RX"]
