"""Decodes every frame of a pcap with scapy and prints, as one JSON list, each frame's layers
with their fields and, for every checksum, the frame's value and the one scapy computes.

Usage: stack_decode.py FILE.pcap. Run by crates/wire/tests/stack_scapy.rs; scapy is the
independent decoder, so nothing here knows how linerate builds a frame.
"""

import json
import sys

from scapy.all import IP, UDP, Ether, IPv6, PcapReader, load_contrib, raw
from scapy.layers.inet6 import in6_chksum
from scapy.layers.inet import in4_chksum
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


def udp_over_wire_bytes(udp):
    """A UDP checksum over the bytes its length field names, as they are in the frame.

    scapy's own recomputation leaves out an inner frame's trailer (an inner Ethernet frame's FCS
    slot, which scapy reads as padding) from the outer UDP's length, so the UDP layers that
    carry a tunnel are summed here from the frame's bytes with scapy's pseudo-header sum.
    """
    segment = bytearray(raw(udp)[: udp.len])
    segment[6:8] = b"\0\0"
    under = udp.underlayer
    if isinstance(under, IPv6):
        c = in6_chksum(17, under, bytes(segment))
    else:
        c = in4_chksum(17, under, bytes(segment))
    return c or 0xFFFF


def describe(pkt):
    frame = []
    for ours, theirs in zip(layers(pkt), layers(recomputed(pkt))):
        entry = {
            "layer": type(ours).__name__,
            "fields": {k: value(v) for k, v in ours.fields.items()},
        }
        name = checksum_field(ours)
        if name is not None:
            scapy = getattr(theirs, name)
            if isinstance(ours, UDP) and ours.chksum and isinstance(ours.underlayer, (IP, IPv6)):
                scapy = udp_over_wire_bytes(ours)
            entry["checksum"] = {"frame": getattr(ours, name), "scapy": scapy}
        frame.append(entry)
    return frame


def main():
    with PcapReader(sys.argv[1]) as reader:
        frames = [describe(pkt) for pkt in reader]
    json.dump(frames, sys.stdout)


if __name__ == "__main__":
    main()
