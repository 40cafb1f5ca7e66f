#!/usr/bin/env bash
# AF_XDP one worker on one veth lab, in alternated rounds: every round runs each linerate binary
# given (and xdpsock, when --xdpsock names it) once, each pinned to core 0 and counted at the
# lab's XDP sink over the same window; the order rotates from round to round. Prints every round
# and, per tool, the median rate and the median of its per-round ratios to the reference (xdpsock
# when given, else the first binary): this VM's speed drifts between rounds by more than the
# differences measured, and a ratio within one round cancels most of that drift. Each figure is
# given twice: packets per second of wall time, and per second of CPU time the sender got.
#
#   bench-afxdp.sh [--size 64] [--duration 3] [--warmup 1] [--rounds 7] [--nice -20] [--xdpsock PATH] [--preload LIB] [--backend afxdp] [BINARY ...]
#
# BINARY defaults to target/release/linerate. xdpsock is bpf-examples' AF_XDP-example, run as
# `xdpsock -t -c -i IFACE -q 0 -s SIZE -Q` (copy mode, its defaults otherwise); --preload sets
# LD_PRELOAD for it (a shim that lets its setrlimit(RLIMIT_MEMLOCK) succeed without
# CAP_SYS_RESOURCE). Every tool runs at the same --nice (default -20), which ranks it above
# other jobs of the script's session (not above other sessions' jobs: autogroups).
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
# The linerate backend the binaries run (live compares old and new live-frame builds the same way).
backend=afxdp
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
        --backend) backend=$2; shift 2 ;;
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

# CPU time (s) of process $1, its ended threads included, and of core 0's ksoftirqd: the sender's
# own work with the sink's softirq wherever it ran (in the sender's syscalls, charged to it as
# system time, or deferred to ksoftirqd). Clock ticks: 1 % resolution over 1 s.
ksoftirqd=$(pgrep -x ksoftirqd/0 || true)
tick=$(getconf CLK_TCK)
cpu_s() {
    cat /proc/"$1"/stat ${ksoftirqd:+/proc/$ksoftirqd/stat} 2>/dev/null |
        sed 's/.*) //' | awk -v hz="$tick" '{ s += $12 + $13 } END { printf "%.2f\n", s / hz }'
}
# One reading: "time packets cpu_ns", the time taken halfway through the sink's read, which is
# slow when the machine is busy.
reading() {
    local a b c
    a=$(now); c=$(sink_packets); b=$(now)
    echo "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.6f", (a + b) / 2 }') ${c:-0} $(cpu_s "$1")"
}

# Runs "$@" in the background, reads the sink and its CPU time over a window after the warm-up,
# stops it. Prints "Mpps Mpps-per-busy-core": packets over wall time, and over the CPU time the
# sender (and ksoftirqd/0) got, which other jobs sharing core 0 take much less from.
measure() {
    # Not in a session of its own (setsid): with autogroups on, a fresh session's group got half
    # of core 0 beside the compile jobs, where the script's own got all of it.
    "$@" >/dev/null 2>&1 &
    local pid=$!
    sleep "$warmup"
    local r1 r2
    r1=$(reading "$pid")
    sleep "$duration"
    r2=$(reading "$pid")
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    awk -v r1="$r1" -v r2="$r2" 'BEGIN {
        split(r1, a, " "); split(r2, b, " "); p = b[2] - a[2]; cpu = b[3] - a[3]
        printf "%.3f %.3f\n", p / (b[1] - a[1]) / 1e6, (cpu > 0) ? p / cpu / 1e6 : 0 }'
}

tools=("${binaries[@]}")
[[ -z $xdpsock ]] || tools+=(xdpsock)
reference=$((${#tools[@]} - 1))
[[ -n $xdpsock ]] || reference=0
run_tool() {
    # Stopped by the window's end; the duration only has to outlast slow reads of the sink.
    local long=$((warmup + duration + 60))
    if [[ $1 == xdpsock ]]; then
        measure nice -n "$niceness" env ${preload:+LD_PRELOAD="$preload"} taskset -c 0 "$xdpsock" -t -c -i "${lab}0" -q 0 -s "$size" -Q
    else
        measure nice -n "$niceness" "$1" tx -q -i "${lab}0" --backend "$backend" --size "$size" -d "${long}s" --cores 0
    fi
}

echo "lab $lab on $(uname -r), $(nproc) CPUs ($(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1)); $size B, one worker on core 0, nice $niceness; ${duration}s after ${warmup}s warm-up; each cell: Mpps at the sink / Mpps per busy core; load at start:$(uptime | sed 's/.*load average://')" >&2
header="| round |"
rule="| ---: |"
for t in "${tools[@]}"; do header+=" ${t##*/} |"; rule+=" ---: |"; done
echo "$header"
echo "$rule"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f\n", (b > 0) ? a / b : 0 }'; }
for ((r = 1; r <= rounds; r++)); do
    declare -A got=()
    for ((k = 0; k < ${#tools[@]}; k++)); do
        i=$(((k + r - 1) % ${#tools[@]}))
        got[$i]=$(run_tool "${tools[i]}")
    done
    row="| $r |"
    read -r ref_rate ref_core <<<"${got[$reference]}"
    for ((i = 0; i < ${#tools[@]}; i++)); do
        read -r rate core <<<"${got[$i]}"
        row+=" $rate / $core |"
        echo "$rate" >>"$work/rate.$i"
        echo "$core" >>"$work/core.$i"
        ratio "$rate" "$ref_rate" >>"$work/rate-ratio.$i"
        ratio "$core" "$ref_core" >>"$work/core-ratio.$i"
    done
    echo "$row"
    unset got
done
for what in "median Mpps:rate" "median of per-round ratios to ${tools[reference]##*/}:rate-ratio" \
    "median Mpps per busy core:core" "median of per-round ratios per busy core:core-ratio"; do
    row="| ${what%:*} |"
    for ((i = 0; i < ${#tools[@]}; i++)); do row+=" $(median <"$work/${what##*:}.$i") |"; done
    echo "$row"
done
echo "load at end:$(uptime | sed 's/.*load average://')" >&2
