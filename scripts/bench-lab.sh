#!/usr/bin/env bash
# Side-by-side benchmark on one veth lab, in one run: linerate (AF_XDP and live backends, one and
# two workers) and trafgen (netsniff-ng, the named peer), each counted at the lab's XDP sink over
# the same steady-state window. Prints a Markdown table of median Mpps per frame size.
#
#   bench-lab.sh [--sizes 64,512,1518] [--duration 5] [--repeat 3] [--warmup 1]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"

sizes=64,128,256,512,1024,1280,1518
duration=5
repeat=3
warmup=1
while (($#)); do
    case $1 in
        --sizes) sizes=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        *) bench_unknown "$1" ;;
    esac
done

work=$(mktemp -d)
bench_cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$work"
}
bench_lab_up lrbench
peer_mac=$("$lr" lab status --name "$lab" --json | sed -n 's/.*"receiver_mac": "\(.*\)".*/\1/p')


# Runs "$@" in the background, counts at the sink over a window after the warm-up, stops it.
measure() {
    "$@" >/dev/null 2>&1 &
    local pid=$!
    sleep "$warmup"
    local t1 c1 t2 c2
    t1=$(now); c1=$(sink_packets)
    sleep "$duration"
    t2=$(now); c2=$(sink_packets)
    # trafgen's parent waits for its forked workers: stop them first, then everything left.
    pkill -INT -P "$pid" 2>/dev/null || true
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    pkill -KILL -P "$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    awk -v a="$c1" -v b="$c2" -v s="$t1" -v e="$t2" 'BEGIN { printf "%.3f\n", (b - a) / (e - s) / 1e6 }'
}

tools=("linerate afxdp 1w" "linerate afxdp 2w" "linerate live 1w" "linerate live 2w" "trafgen 1w" "trafgen 2w")
run_tool() {
    local tool=$1 size=$2 long=$((warmup + duration + 5))
    case $tool in
        "linerate afxdp 1w") measure "$lr" tx -q -i "${lab}0" --backend afxdp --size "$size" -d "${long}s" --cores 0 ;;
        "linerate afxdp 2w") measure "$lr" tx -q -i "${lab}0" --backend afxdp --size "$size" -d "${long}s" --cores 0,1 ;;
        "linerate live 1w") measure "$lr" tx -q -i "${lab}0" --backend live --size "$size" -d "${long}s" --cores 0 ;;
        "linerate live 2w") measure "$lr" tx -q -i "${lab}0" --backend live --size "$size" -d "${long}s" --cores 0,1 ;;
        "trafgen 1w") measure trafgen -o "${lab}0" -i "$work/$size.cfg" -P 1 -Q -C ;;
        "trafgen 2w") measure trafgen -o "${lab}0" -i "$work/$size.cfg" -P 2 -Q -C ;;
    esac
}

header="| size |"
rule="| ---: |"
for t in "${tools[@]}"; do header+=" $t |"; rule+=" ---: |"; done
echo "lab $lab on $(uname -r), $(nproc) CPUs ($(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1)); Mpps at the sink, median of $repeat × ${duration}s after ${warmup}s warm-up" >&2
echo "$header"
echo "$rule"
IFS=, read -ra size_list <<<"$sizes"
for size in "${size_list[@]}"; do
    # trafgen sends the very frame linerate builds: written to pcap, turned into a trafgen config.
    "$lr" tx -q --pcap "$work/$size.pcap" -n 1 --size "$size" --dst-mac "$peer_mac" --vary ip-id:list:0 >/dev/null
    netsniff-ng --in "$work/$size.pcap" --out "$work/$size.cfg" >/dev/null 2>&1
    row="| $size |"
    for t in "${tools[@]}"; do
        m=$(for _ in $(seq "$repeat"); do run_tool "$t" "$size"; done | median)
        row+=" $m |"
        echo "  $size B $t: $m Mpps" >&2
    done
    echo "$row"
done
