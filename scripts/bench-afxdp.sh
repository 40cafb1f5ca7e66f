#!/usr/bin/env bash
# AF_XDP one worker on one veth lab, in alternated rounds: every round runs each linerate binary
# given (and xdpsock, when --xdpsock names it) once, each pinned to core 0 and counted at the
# lab's XDP sink over the same window; the order rotates from round to round. Prints every round
# and, per tool, the median rate and the median of its per-round ratios to the reference (xdpsock
# when given, else the first binary): this VM's speed drifts between rounds by more than the
# differences measured, and a ratio within one round cancels most of that drift.
#
#   bench-afxdp.sh [--size 64] [--duration 3] [--warmup 1] [--rounds 7] [--nice -20] [--xdpsock PATH] [--preload LIB] [BINARY ...]
#
# BINARY defaults to target/release/linerate. xdpsock is bpf-examples' AF_XDP-example, run as
# `xdpsock -t -c -i IFACE -q 0 -s SIZE -Q` (copy mode, its defaults otherwise); --preload sets
# LD_PRELOAD for it (a shim that lets its setrlimit(RLIMIT_MEMLOCK) succeed without
# CAP_SYS_RESOURCE). Every tool runs at the same --nice (default -20), so that compile jobs
# sharing the machine take less of core 0 from whichever tool is measured.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"
# Paths on the command line are the caller's: the library moved to the repository root.
cd "$OLDPWD"

size=64
duration=3
warmup=1
rounds=7
niceness=-20
xdpsock=
preload=
binaries=()
while (($#)); do
    case $1 in
        --size) size=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --nice) niceness=$2; shift 2 ;;
        --xdpsock) xdpsock=$(realpath -- "$2"); shift 2 ;;
        --preload) preload=$(realpath -- "$2"); shift 2 ;;
        -*) bench_unknown "$1" ;;
        *) binaries+=("$(realpath -- "$1")"); shift ;;
    esac
done
cd "$(dirname "$0")/.."
((${#binaries[@]})) || binaries=("$PWD/$lr")
for b in "${binaries[@]}" ${xdpsock:+"$xdpsock"}; do
    [[ -x $b ]] || { echo "bench-afxdp: $b is not an executable" >&2; exit 2; }
done
work=$(mktemp -d)
bench_cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$work"
}
bench_lab_up lrafxdp

sink_packets() { "$lr" lab status --name "$lab" --json | sed -n 's/.*"sink_packets": \([0-9]*\).*/\1/p'; }
now() { date +%s.%N; }

# Runs "$@" in the background, counts at the sink over a window after the warm-up, stops it.
measure() {
    "$@" >/dev/null 2>&1 &
    local pid=$!
    sleep "$warmup"
    local t1 c1 t2 c2
    t1=$(now); c1=$(sink_packets)
    sleep "$duration"
    t2=$(now); c2=$(sink_packets)
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    awk -v a="$c1" -v b="$c2" -v s="$t1" -v e="$t2" 'BEGIN { printf "%.3f\n", (b - a) / (e - s) / 1e6 }'
}

tools=("${binaries[@]}")
[[ -z $xdpsock ]] || tools+=(xdpsock)
reference=$((${#tools[@]} - 1))
[[ -n $xdpsock ]] || reference=0
run_tool() {
    local long=$((warmup + duration + 5))
    if [[ $1 == xdpsock ]]; then
        measure nice -n "$niceness" env ${preload:+LD_PRELOAD="$preload"} taskset -c 0 "$xdpsock" -t -c -i "${lab}0" -q 0 -s "$size" -Q
    else
        measure nice -n "$niceness" "$1" tx -q -i "${lab}0" --size "$size" -d "${long}s" --cores 0
    fi
}

echo "lab $lab on $(uname -r), $(nproc) CPUs ($(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1)); $size B, one worker on core 0, nice $niceness; Mpps at the sink, ${duration}s after ${warmup}s warm-up; load at start:$(uptime | sed 's/.*load average://')" >&2
header="| round |"
rule="| ---: |"
for t in "${tools[@]}"; do header+=" ${t##*/} |"; rule+=" ---: |"; done
echo "$header"
echo "$rule"
for ((r = 1; r <= rounds; r++)); do
    declare -A got=()
    for ((k = 0; k < ${#tools[@]}; k++)); do
        i=$(((k + r - 1) % ${#tools[@]}))
        got[$i]=$(run_tool "${tools[i]}")
    done
    row="| $r |"
    for ((i = 0; i < ${#tools[@]}; i++)); do
        row+=" ${got[$i]} |"
        echo "${got[$i]}" >>"$work/rate.$i"
        awk -v a="${got[$i]}" -v b="${got[$reference]}" 'BEGIN { printf "%.4f\n", (b > 0) ? a / b : 0 }' >>"$work/ratio.$i"
    done
    echo "$row"
    unset got
done
row="| median |"
ratios="| ratio to ${tools[reference]##*/} (median of rounds) |"
for ((i = 0; i < ${#tools[@]}; i++)); do
    row+=" $(median <"$work/rate.$i") |"
    ratios+=" $(median <"$work/ratio.$i") |"
done
echo "$row"
echo "$ratios"
echo "load at end:$(uptime | sed 's/.*load average://')" >&2
