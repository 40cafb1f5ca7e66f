#!/usr/bin/env bash
# The receive side's cost end to end (issue 13): 64 B frames on a veth lab, one worker, each
# backend plain and with the signature stamped and the receive program counting per flow
# (`--rx`, which takes the lab's receive end from the sink for the run). The variants run back to
# back in each round, so the VM's drift hits them alike; the ratios are medians of per-round
# ratios. Live also runs signed without the receiver (the lab's sink counts), which splits its
# cost between the stamping and the receive program. With --old BIN, live without signature and
# live with the receiver also run from that binary in every round (the sender's and the receive
# program's hot paths before a change against after it).
# Mpps at the receive end (what the sink, or the receiver, counted over the sender's time),
# median (min–max) of --repeat rounds, as a Markdown table; the load average before and after
# on stderr.
#
#   bench-rx.sh [--duration 2] [--repeat 9] [--core 1] [--old BIN]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"

duration=2
repeat=9
core=1
old=
while (($#)); do
    case $1 in
        --duration) duration=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --core) core=$2; shift 2 ;;
        --old) old=$2; shift 2 ;;
        *) bench_unknown "$1" ;;
    esac
done

out=$(mktemp -d)
bench_cleanup() { rm -rf "$out"; }
bench_lab_up lrrx

run() { # variant name, binary, extra args…
    local name=$1 bin=$2
    shift 2
    "$bin" tx -q --json -i "${lab}0" -d "${duration}s" --cores "$core" "$@" |
        jq -r '.sink.packets / .elapsed_s / 1e6' >>"$out/$name"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for _ in $(seq "$repeat"); do
    run live "$lr" --backend live
    run live-sig "$lr" --backend live --signature
    run live-rx "$lr" --backend live --rx
    run afxdp "$lr" --backend afxdp
    run afxdp-rx "$lr" --backend afxdp --rx
    if [[ -n $old ]]; then
        run live-old "$old" --backend live
        run live-rx-old "$old" --backend live --rx
    fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# "median (min–max)" of a file of figures.
stat() { sort -g "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f (%.3f–%.3f)", m, v[1], v[NR] }'; }
# Median over rounds of a / b.
ratio() { paste "$1" "$2" | awk '{ print $1 / $2 }' | median; }

echo "lab $lab, $(uname -r), $(nproc) CPUs, one worker on core $core, ${duration} s runs of 64 B frames; median (min–max) of $repeat rounds, Mpps at the receive end; load average $load_before before, $load_after after" >&2
echo "| backend | plain | signature + receiver | with / plain (median of per-round ratios) | target |"
echo "| --- | ---: | ---: | ---: | ---: |"
printf '| live | %s | %s | %.2f | ≥ 0.70 |\n' "$(stat "$out/live")" "$(stat "$out/live-rx")" "$(ratio "$out/live-rx" "$out/live")"
printf '| afxdp | %s | %s | %.2f | ≥ 0.90 |\n' "$(stat "$out/afxdp")" "$(stat "$out/afxdp-rx")" "$(ratio "$out/afxdp-rx" "$out/afxdp")"
printf 'live signed, counted by the sink (the stamping alone): %s Mpps, %.2f of plain\n' "$(stat "$out/live-sig")" "$(ratio "$out/live-sig" "$out/live")"
if [[ -n $old ]]; then
    printf 'live without signature, this build / %s: %.2f (median of per-round ratios; %s vs %s Mpps)\n' \
        "$old" "$(ratio "$out/live" "$out/live-old")" "$(stat "$out/live")" "$(stat "$out/live-old")"
    printf 'live with the receiver, this build / %s: %.2f (median of per-round ratios; %s vs %s Mpps)\n' \
        "$old" "$(ratio "$out/live-rx" "$out/live-rx-old")" "$(stat "$out/live-rx")" "$(stat "$out/live-rx-old")"
fi
