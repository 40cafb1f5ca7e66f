# shellcheck shell=bash
# What the bench-*.sh scripts share. Sourced first thing, with the script's arguments:
#   . "$(dirname "$0")/lib/bench.sh" "$@"
# It re-runs the script under sudo when not root and moves to the repository root. Then:
#   bench_lab_up NAME   installs what is missing, builds linerate (release) and brings up a fresh
#                       lab NAME with 2 queue pairs, taken down on exit; sets $lab.
#   bench_cleanup       override to add to the exit cleanup (runs before the lab goes down).
#   bench_unknown ARG   one line naming the bad argument, the script's usage line, exit 2.
#   median              the median of the numbers on stdin.

if [[ $(id -u) -ne 0 ]]; then
    exec sudo -E "$0" "$@"
fi
cd "$(dirname "$0")/.." || exit 2

lr=target/release/linerate
lab=

bench_cleanup() { :; }

bench_lab_up() {
    lab=$1
    ./scripts/setup.sh
    cargo build --release --quiet
    trap 'bench_cleanup; "$lr" lab down --name "$lab" >/dev/null 2>&1 || true' EXIT
    trap 'exit 130' INT TERM
    "$lr" lab down --name "$lab" >/dev/null 2>&1 || true
    "$lr" lab up --name "$lab" --queues 2 >/dev/null
}

bench_unknown() {
    echo "$(basename "$0" .sh): unknown argument $1" >&2
    sed -n 's/^#   \(bench-.*\)/usage: \1/p' "$0" >&2
    exit 2
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
