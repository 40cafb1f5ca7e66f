#!/usr/bin/env bash
# `linerate replay --speed max` beside `tcpreplay --topspeed` on one veth lab, in alternated
# rounds: every round replays the same capture of 64-byte frames with each tool once, one sender
# on core 0, counted at the lab's XDP sink over the same window; the order rotates from round to
# round. Prints every round, the median rates and the median of the per-round ratios linerate /
# tcpreplay (the VM's speed drifts between rounds by more than the differences measured; a ratio
# within one round cancels most of that drift).
#
#   bench-replay.sh [--frames 1000] [--duration 3] [--warmup 1] [--rounds 5] [--nice -20] [--tools "live afxdp tcpreplay"] [BINARY]
#
# Tools: live, afxdp, afpacket (the capture loaded into the port's buffers), live-stream,
# afxdp-stream, afpacket-stream (`replay --from-file`: copied from the mapped file batch by batch),
# tcpreplay (`--preload-pcap`: from memory) and tcpreplay-file (read from the file as it sends).
# A loaded tool is compared with tcpreplay, a streamed one with tcpreplay-file when both run.
#
# BINARY defaults to target/release/linerate. The capture is written by `linerate tx --pcap`:
# FRAMES 60-byte UDP frames (64 B with the FCS) to the sink's MAC, source ports and addresses
# counting, so frames differ. tcpreplay (Debian's, scripts/setup.sh does not install it: apt-get install
# tcpreplay) loops it forever (`--loop 0`), pinned by taskset to CPU 0.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"
cd "$OLDPWD"

frames=1000
duration=3
warmup=1
rounds=5
niceness=-20
tools="live afxdp tcpreplay"
binary=
while (($#)); do
    case $1 in
        --frames) frames=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --nice) niceness=$2; shift 2 ;;
        --tools) tools=$2; shift 2 ;;
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
    --vary "src-port:inc:1-$((frames < 65535 ? frames : 65535))" --vary "src-ip:inc:10.0.0.1-10.0.255.254" \
    >/dev/null

run_tool() {
    local long=$((warmup + duration + 60)) stream=()
    [[ $1 == *-stream ]] && stream=(--from-file)
    case $1 in
        live* | afxdp* | afpacket*) sink_measure nice -n "$niceness" "$binary" replay "$capture" -q \
            -i "${lab}0" --backend "${1%-stream}" "${stream[@]}" --speed max --loop inf -d "${long}s" \
            --cores 0 ;;
        tcpreplay) sink_measure nice -n "$niceness" taskset -c 0 tcpreplay -q --topspeed --preload-pcap \
            --loop 0 -i "${lab}0" "$capture" ;;
        tcpreplay-file) sink_measure nice -n "$niceness" taskset -c 0 tcpreplay -q --topspeed \
            --loop 0 -i "${lab}0" "$capture" ;;
        *) echo "bench-replay: unknown tool $1 (see the usage line)" >&2; exit 2 ;;
    esac
}

read -ra list <<<"$tools"
# Each linerate tool and the tcpreplay it is compared with (a streamed one with tcpreplay-file
# when that runs).
declare -A against=()
for t in "${list[@]}"; do
    [[ $t == tcpreplay* ]] && continue
    if [[ $t == *-stream && " ${list[*]} " == *" tcpreplay-file "* ]]; then
        against[$t]=tcpreplay-file
    elif [[ " ${list[*]} " == *" tcpreplay "* ]]; then
        against[$t]=tcpreplay
    elif [[ " ${list[*]} " == *" tcpreplay-file "* ]]; then
        against[$t]=tcpreplay-file
    fi
done
compared=()
for t in "${list[@]}"; do [[ -n ${against[$t]:-} ]] && compared+=("$t"); done

echo "lab $lab on $(uname -r), $(nproc) CPUs; $frames frames of 64 B, one sender on core 0, nice $niceness; ${duration}s after ${warmup}s warm-up; Mpps at the sink; load at start:$(uptime | sed 's/.*load average://')" >&2
header="| round |" rule="| ---: |"
for t in "${list[@]}"; do header+=" $t |"; rule+=" ---: |"; done
for t in "${compared[@]}"; do header+=" $t ÷ ${against[$t]} |"; rule+=" ---: |"; done
echo "$header"
echo "$rule"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b > 0) ? a / b : 0 }'; }
n=${#list[@]}
for ((r = 1; r <= rounds; r++)); do
    declare -A got=()
    for ((k = 0; k < n; k++)); do
        t=${list[(k + r) % n]}
        got[$t]=$(run_tool "$t")
    done
    line="| $r |"
    for t in "${list[@]}"; do
        echo "${got[$t]}" >>"$work/$t"
        line+=" ${got[$t]} |"
    done
    for t in "${compared[@]}"; do
        x=$(ratio "${got[$t]}" "${got[${against[$t]}]}")
        echo "$x" >>"$work/$t.ratio"
        line+=" $x |"
    done
    echo "$line"
    unset got
done
line="| median |"
for t in "${list[@]}"; do line+=" $(median <"$work/$t") |"; done
for t in "${compared[@]}"; do line+=" $(median <"$work/$t.ratio") |"; done
echo "$line"
echo "load at end:$(uptime | sed 's/.*load average://')" >&2
