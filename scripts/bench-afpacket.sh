#!/usr/bin/env bash
# AF_PACKET one worker beside trafgen's TX_RING path on one veth lab, in alternated rounds: every
# round runs `linerate tx --backend afpacket` and trafgen (no -t: its mmap'd TX ring, qdisc bypass
# by default) once each, both on core 0, counted at the lab's XDP sink over the same window; the
# order alternates from round to round. Prints every round, the median rates and the median of
# the per-round ratios linerate / trafgen (the VM's speed drifts between rounds by more than the
# difference measured; a ratio within one round cancels most of that drift).
#
#   bench-afpacket.sh [--size 64] [--duration 3] [--warmup 1] [--rounds 7] [--nice -20] [BINARY]
#
# BINARY defaults to target/release/linerate. trafgen (netsniff-ng, scripts/setup.sh) sends the
# same 60-byte UDP frame (64 B with the FCS) from one process (`--cpus 1`), pinned by taskset and
# by itself to CPU 0; its ring size is its default.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"
cd "$OLDPWD"

size=64
duration=3
warmup=1
rounds=7
niceness=-20
binary=
while (($#)); do
    case $1 in
        --size) size=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --nice) niceness=$2; shift 2 ;;
        -*) bench_unknown "$1" ;;
        *) binary=$(realpath -- "$1"); shift ;;
    esac
done
cd "$(dirname "$0")/.."
binary=${binary:-$PWD/$lr}
command -v trafgen >/dev/null || { echo "bench-afpacket: trafgen is missing (scripts/setup.sh)" >&2; exit 2; }
((size >= 64 && size <= 1518)) || { echo "bench-afpacket: --size must be 64..1518" >&2; exit 2; }
work=$(mktemp -d)
bench_cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$work"
}
bench_lab_up lrafpkt
[[ -x $binary ]] || { echo "bench-afpacket: $binary is not an executable" >&2; exit 2; }

# The frame linerate sends by default, for trafgen: Ethernet to the sink's MAC, IPv4, UDP, zeros
# up to the size without FCS.
receiver_mac=$(ip netns exec "$lab-sink" cat "/sys/class/net/${lab}1/address")
sender_mac=$(cat "/sys/class/net/${lab}0/address")
cat >"$work/frame.cfg" <<CFG
{ eth(da=$receiver_mac, sa=$sender_mac), ipv4(saddr=198.18.0.1, daddr=198.18.0.2, ttl=64),
  udp(sp=1024, dp=9), fill(0x00, $((size - 4 - 42))) }
CFG

run_tool() {
    local long=$((warmup + duration + 60))
    case $1 in
        linerate) sink_measure nice -n "$niceness" "$binary" tx -q -i "${lab}0" --backend afpacket --size "$size" -d "${long}s" --cores 0 ;;
        trafgen) sink_measure nice -n "$niceness" taskset -c 0 trafgen -o "${lab}0" -i "$work/frame.cfg" --cpus 1 -C -Q ;;
    esac
}

echo "lab $lab on $(uname -r), $(nproc) CPUs; $size B, one sender on core 0, nice $niceness; ${duration}s after ${warmup}s warm-up; Mpps at the sink; load at start:$(uptime | sed 's/.*load average://')" >&2
echo "| round | linerate afpacket | trafgen TX_RING | ratio |"
echo "| ---: | ---: | ---: | ---: |"
tools=(linerate trafgen)
for ((r = 1; r <= rounds; r++)); do
    declare -A got=()
    for ((k = 0; k < 2; k++)); do
        t=${tools[(k + r) % 2]}
        got[$t]=$(run_tool "$t")
    done
    ratio=$(awk -v a="${got[linerate]}" -v b="${got[trafgen]}" 'BEGIN { printf "%.4f\n", (b > 0) ? a / b : 0 }')
    echo "${got[linerate]}" >>"$work/linerate"
    echo "${got[trafgen]}" >>"$work/trafgen"
    echo "$ratio" >>"$work/ratio"
    echo "| $r | ${got[linerate]} | ${got[trafgen]} | $ratio |"
    unset got
done
echo "| median | $(median <"$work/linerate") | $(median <"$work/trafgen") | $(median <"$work/ratio") |"
echo "load at end:$(uptime | sed 's/.*load average://')" >&2
