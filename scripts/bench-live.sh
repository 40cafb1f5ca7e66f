#!/usr/bin/env bash
# The live backend at 64 B on a veth lab: one and two workers, the default stream (the seed: 10
# pre-built frames) and the same with one random 16-bit field. The four variants run back to back
# in each round, so the VM's drift (its rate swings ±25 % from one second to the next) hits them
# alike, and the two ratios (field cost, two workers over one) are medians of per-round ratios.
# Each run lasts --duration, as a sweep's do: with a count instead, two workers split it evenly
# and the run lasts as long as the slower one, so a vCPU that is slower for a while (this VM's
# are, by up to 20 %) would idle the other and be charged to whatever variant ran then.
# Mpps at the sink (sink packets over the sender's time), median (min–max) of --repeat rounds, as
# a Markdown table.
#
#   bench-live.sh [--duration 1] [--repeat 15]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"

duration=1
repeat=15
while (($#)); do
    case $1 in
        --duration) duration=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        *) bench_unknown "$1" ;;
    esac
done

out=$(mktemp -d)
bench_cleanup() { rm -rf "$out"; }
bench_lab_up lrlive

vary=(--vary src-port:random:1-65535)
run() { # cores, variant name, extra args…
    local cores=$1 name=$2
    shift 2
    "$lr" tx -q --json -i "${lab}0" --backend live -d "${duration}s" --cores "$cores" "$@" |
        jq -r '.sink.packets / .elapsed_s / 1e6' >>"$out/$cores-$name"
}

for _ in $(seq "$repeat"); do
    for cores in 0 0,1; do
        run "$cores" fixed
        run "$cores" random "${vary[@]}"
    done
done

# "median (min–max)" of a file of figures.
stat() { sort -g "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f)", m, v[1], v[NR] }'; }
# Median over rounds of a / b - 1 in % (third argument 1), or of a / b (0).
ratio() { paste "$1" "$2" | awk -v pct="$3" '{ print pct ? ($1 / $2 - 1) * 100 : $1 / $2 }' | median; }

echo "lab $lab, $(uname -r), $(nproc) CPUs, ${duration} s runs of 64 B frames; median (min–max) of $repeat rounds, Mpps at the sink" >&2
echo "| workers | default stream (10 pre-built frames) | one random 16-bit field | field cost (median of per-round ratios) |"
echo "| ---: | ---: | ---: | ---: |"
for cores in 0 0,1; do
    workers=$(tr ',' '\n' <<<"$cores" | wc -l)
    printf '| %d | %s | %s | %+.1f %% |\n' "$workers" "$(stat "$out/$cores-fixed")" "$(stat "$out/$cores-random")" "$(ratio "$out/$cores-random" "$out/$cores-fixed" 1)"
done
printf 'two workers / one, default stream: %.2f× (median of per-round ratios)\n' "$(ratio "$out/0,1-fixed" "$out/0-fixed" 0)"
