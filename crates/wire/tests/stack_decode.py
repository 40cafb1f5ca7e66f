"""Decodes every frame of a pcap with scapy and prints, as one JSON list, each frame's layers
with their fields and, for every checksum, the frame's value and the one scapy computes.

Usage: stack_decode.py FILE.pcap. Run by crates/wire/tests/stack_scapy.rs; scapy is the
independent decoder, so nothing here knows how linerate builds a frame.
"""

import json
import sys

from scapy.all import Ether, PcapReader, load_contrib, raw
from scapy.fields import FlagValue
from scapy.layers.vxlan import VXLAN  # noqa: F401 (binds UDP 4789)

load_contrib("mpls")
load_contrib("gtp")

CHECKSUM_FIELDS = ("chksum", "cksum")


def value(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, FlagValue):
        return int(v)
    if isinstance(v, (int, str)) or v is None:
        return v
    return str(v)


def layers(pkt):
    out = []
    layer = pkt
    while layer:
        out.append(layer)
        layer = layer.payload
    return out


def checksum_field(layer):
    return next((f for f in CHECKSUM_FIELDS if f in layer.fields), None)


def recomputed(pkt):
    """The same frame with every checksum left for scapy to compute, inner layers first."""
    copy = pkt.copy()
    for layer in layers(copy):
        name = checksum_field(layer)
        if name is None or (layer.name == "GRE" and not layer.chksum_present):
            continue
        setattr(layer, name, None)
    return Ether(raw(copy))


def describe(pkt):
    frame = []
    for ours, theirs in zip(layers(pkt), layers(recomputed(pkt))):
        entry = {
            "layer": type(ours).__name__,
            "fields": {k: value(v) for k, v in ours.fields.items()},
        }
        name = checksum_field(ours)
        if name is not None:
            entry["checksum"] = {"frame": getattr(ours, name), "scapy": getattr(theirs, name)}
        frame.append(entry)
    return frame


def main():
    with PcapReader(sys.argv[1]) as reader:
        frames = [describe(pkt) for pkt in reader]
    json.dump(frames, sys.stdout)


if __name__ == "__main__":
    main()
