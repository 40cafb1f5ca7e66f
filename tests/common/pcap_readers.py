"""Counts the frames of capture files with three readers linerate did not write (dpkt, scapy,
pypcapfile; tcpdump is run by the Rust side) and prints one JSON object per file:
{"dpkt": [len, ...], "scapy": [len, ...], "scapy_layers": [...], "pypcapfile": [len, ...]}.
pypcapfile reads pcap only; for a pcapng it reports null."""
import json
import sys
import warnings

warnings.filterwarnings("ignore")


def dpkt_lens(path):
    import dpkt

    with open(path, "rb") as f:
        magic = f.read(4)
        f.seek(0)
        reader = dpkt.pcapng.Reader(f) if magic == b"\x0a\x0d\x0d\x0a" else dpkt.pcap.Reader(f)
        return [len(buf) for _, buf in reader]


def scapy_frames(path):
    from scapy.all import rdpcap

    packets = rdpcap(path)
    return [len(p) for p in packets], [p.summary() for p in packets]


def pypcapfile_lens(path):
    from pcapfile import savefile

    with open(path, "rb") as f:
        if f.read(4) == b"\x0a\x0d\x0d\x0a":
            return None
        f.seek(0)
        capture = savefile.load_savefile(f, layers=0, verbose=False)
        return [p.packet_len for p in capture.packets]


for path in sys.argv[1:]:
    lens, layers = scapy_frames(path)
    print(json.dumps({
        "dpkt": dpkt_lens(path),
        "scapy": lens,
        "scapy_layers": layers,
        "pypcapfile": pypcapfile_lens(path),
    }))
