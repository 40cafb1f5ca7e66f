#!/usr/bin/env bash
# `linerate replay --speed max` beside `tcpreplay --topspeed --preload-pcap` on one veth lab, in
# alternated rounds: every round replays the same capture of 64-byte frames with linerate's live
# and AF_XDP backends and with tcpreplay, once each, one sender on core 0, counted at the lab's
# XDP sink over the same window; the order rotates from round to round. Prints every round, the
# median rates and the median of the per-round ratios linerate / tcpreplay (the VM's speed drifts
# between rounds by more than the differences measured; a ratio within one round cancels most of
# that drift).
#
#   bench-replay.sh [--frames 1000] [--duration 3] [--warmup 1] [--rounds 5] [--nice -20] [BINARY]
#
# BINARY defaults to target/release/linerate. The capture is written by `linerate tx --pcap`:
# FRAMES 60-byte UDP frames (64 B with the FCS) to the sink's MAC, source ports counting, so
# every frame differs. tcpreplay (Debian's, scripts/setup.sh does not install it: apt-get install
# tcpreplay) loops it forever (`--loop 0`) from memory, pinned by taskset to CPU 0.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"
cd "$OLDPWD"

frames=1000
duration=3
warmup=1
rounds=5
niceness=-20
binary=
while (($#)); do
    case $1 in
        --frames) frames=$2; shift 2 ;;
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
command -v tcpreplay >/dev/null || { echo "bench-replay: tcpreplay is missing (apt-get install tcpreplay)" >&2; exit 2; }
work=$(mktemp -d)
bench_cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$work"
}
bench_lab_up lrreplay
[[ -x $binary ]] || { echo "bench-replay: $binary is not an executable" >&2; exit 2; }

receiver_mac=$(ip netns exec "$lab-sink" cat "/sys/class/net/${lab}1/address")
capture=$work/64B.pcap
"$binary" tx -q --pcap "$capture" -n "$frames" --size 64 --dst-mac "$receiver_mac" \
    --vary "src-port:inc:1-$frames" >/dev/null 2>&1

run_tool() {
    local long=$((warmup + duration + 60))
    case $1 in
        live | afxdp) sink_measure nice -n "$niceness" "$binary" replay "$capture" -q -i "${lab}0" \
            --backend "$1" --speed max --loop inf -d "${long}s" --cores 0 ;;
        tcpreplay) sink_measure nice -n "$niceness" taskset -c 0 tcpreplay -q --topspeed --preload-pcap \
            --loop 0 -i "${lab}0" "$capture" ;;
    esac
}

echo "lab $lab on $(uname -r), $(nproc) CPUs; $frames frames of 64 B, one sender on core 0, nice $niceness; ${duration}s after ${warmup}s warm-up; Mpps at the sink; load at start:$(uptime | sed 's/.*load average://')" >&2
echo "| round | linerate replay live | linerate replay afxdp | tcpreplay --topspeed | live ÷ tcpreplay | afxdp ÷ tcpreplay |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
tools=(live afxdp tcpreplay)
for ((r = 1; r <= rounds; r++)); do
    declare -A got=()
    for ((k = 0; k < 3; k++)); do
        t=${tools[(k + r) % 3]}
        got[$t]=$(run_tool "$t")
    done
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b > 0) ? a / b : 0 }'; }
    live_ratio=$(ratio "${got[live]}" "${got[tcpreplay]}")
    afxdp_ratio=$(ratio "${got[afxdp]}" "${got[tcpreplay]}")
    for t in "${tools[@]}"; do echo "${got[$t]}" >>"$work/$t"; done
    echo "$live_ratio" >>"$work/live_ratio"
    echo "$afxdp_ratio" >>"$work/afxdp_ratio"
    echo "| $r | ${got[live]} | ${got[afxdp]} | ${got[tcpreplay]} | $live_ratio | $afxdp_ratio |"
    unset got
done
echo "| median | $(median <"$work/live") | $(median <"$work/afxdp") | $(median <"$work/tcpreplay") | $(median <"$work/live_ratio") | $(median <"$work/afxdp_ratio") |"
echo "load at end:$(uptime | sed 's/.*load average://')" >&2
