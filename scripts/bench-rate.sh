#!/usr/bin/env bash
# Rate accuracy on a veth lab: for each asked rate, one and two workers, the rate achieved at the
# sink (median of --repeat runs) and the pacing lateness p99 the report gives. 90 % of the
# measured max rate is the last row. Prints a Markdown table.
#
#   bench-rate.sh [--duration 5] [--repeat 3] [--backend afxdp]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"

duration=5
repeat=3
backend=afxdp
while (($#)); do
    case $1 in
        --duration) duration=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --backend) backend=$2; shift 2 ;;
        *) bench_unknown "$1" ;;
    esac
done

bench_lab_up lrrate

# One run: prints "achieved_pps late_p99_ns" from the JSON report (achieved at the sink).
run() {
    "$lr" tx -q --json -i "${lab}0" --backend "$backend" --cores "$1" -d "${duration}s" ${2:+--rate "$2"} |
        python3 -c 'import json,sys; r=json.load(sys.stdin); p=r.get("pacing") or {}; print(r["sink"]["packets"]/r["elapsed_s"], p.get("late_p99_ns", 0))'
}

echo "lab $lab, backend $backend, $(uname -r), $(nproc) CPUs; median of $repeat × ${duration}s, counted at the sink" >&2
echo "| workers | asked (pps) | achieved (pps) | error | lateness p99 |"
echo "| ---: | ---: | ---: | ---: | ---: |"
for cores in 0 0,1; do
    workers=$(tr ',' '\n' <<<"$cores" | wc -l)
    max=$(for _ in $(seq "$repeat"); do run "$cores" "" | cut -d' ' -f1; done | median)
    ninety=$(awk -v m="$max" 'BEGIN { printf "%d", m * 0.9 }')
    for rate in 1000 10000 100000 500000 "$ninety"; do
        results=$(for _ in $(seq "$repeat"); do run "$cores" "$rate"; done)
        achieved=$(cut -d' ' -f1 <<<"$results" | median)
        late=$(cut -d' ' -f2 <<<"$results" | median)
        awk -v w="$workers" -v a="$rate" -v g="$achieved" -v l="$late" -v m="$max" -v n="$ninety" 'BEGIN {
            label = (a == n) ? sprintf("%d (90 %% of max %d)", a, m) : sprintf("%d", a)
            printf "| %d | %s | %.0f | %+.2f %% | %.1f µs |\n", w, label, g, (g - a) / a * 100, l / 1000 }'
    done
done
