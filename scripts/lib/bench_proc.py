"""What the benchmarks' Python rounds read of a process."""


def rss_mib(pid):
    """Process `pid`'s resident memory in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0
