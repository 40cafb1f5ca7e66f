#!/usr/bin/env bash
# RFC 2544 on the lab's devices under test: for each DUT (the kernel router, the XDP
# forwarder, and the router behind a 20 Mbit/s tbf with a 1000-frame queue: a device the sender
# can overrun), `linerate rfc2544 all` with MLRsearch, then the throughput alone with the classic
# binary search beside it, each timed; the results go to results/rfc2544-<dut>-<search>.{json,csv,svg}
# and the times to results/rfc2544-times.txt. Long (tens of minutes): not for CI.
# docs/rfc2544.md has a run's figures and what they mean.
#
#   [DUTS="router xdp router-tbf"] [SIZES=64,512,1518] [LINERATE=binary] rfc2544-lab.sh [ARGS...]
#
# ARGS, when given, replace the default `linerate rfc2544` arguments below.
#
# The defaults are shortened from RFC 2544's (60 s trials, 2 s drain, 20 latency trials, 50
# back-to-back searches, seven sizes) so the three DUTs and both searches fit in about half an
# hour; `SIZES=64,128,256,512,1024,1280,1518 rfc2544-lab.sh --trial 60s` is the full method.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    exec sudo -E "$0" "$@"
fi
cd "$(dirname "$0")/.."

log() { printf 'rfc2544-lab: %s\n' "$*" >&2; }

bin=${LINERATE:-target/release/linerate}
if [[ -z ${LINERATE:-} ]]; then
    log "building (release)"
    cargo build --release --bin linerate
fi

# Arguments given replace these defaults (clap refuses a flag given twice); the sizes always
# come from SIZES.
if (($#)); then
    args=("$@")
else
    args=(--trial 5s --initial-trial 1s --drain 1s --latency-trials 5 --b2b-trials 2)
fi
args=(--sizes "${SIZES:-64,512,1518}" "${args[@]}")
mkdir -p results
name="r2544$$"
name=${name:0:8}
cleanup() { "$bin" lab down --name "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT

for dut in ${DUTS:-router xdp router-tbf}; do
    cleanup
    "$bin" lab up --name "$name" --dut "${dut%-tbf}" --queues 2 >/dev/null
    if [[ $dut == *-tbf ]]; then
        "$bin" lab impair --name "$name" --rate 20Mbps --limit 1000 >/dev/null
    fi
    for search in mlr binary; do
        test=all
        [[ $search == binary ]] && test=throughput
        out=results/rfc2544-$dut-$search
        log "$dut DUT, $test with $search search"
        start=$(date +%s.%N)
        "$bin" rfc2544 "$test" -i "${name}0" --rx --search "$search" "${args[@]}" \
            --json "$out.json" --csv "$out.csv" --plot "$out.svg" -q | tee "$out.txt"
        end=$(date +%s.%N)
        printf '%s %s %s: %.0f s wall\n' "$dut" "$search" "$test" "$(echo "$end - $start" | bc)" \
            | tee -a results/rfc2544-times.txt
    done
    cleanup
done
