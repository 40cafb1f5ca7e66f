# shellcheck shell=bash
# What the bench-*.sh scripts share. Sourced first thing, with the script's arguments:
#   . "$(dirname "$0")/lib/bench.sh" "$@"
# It re-runs the script under sudo when not root and moves to the repository root. Then:
#   bench_lab_up NAME [DUT]  installs what is missing, builds linerate (release) and brings up a
#                       fresh lab NAME with 2 queue pairs (and the DUT, if given), taken down on
#                       exit; sets $lab. Refuses
#                       (exit 2) while another benchmark holds the same lab name.
#   bench_serve_on_lab BINARY NAME ARGS…
#                       holds the lab name NAME as bench_lab_up does, brings up `lab up --name
#                       NAME ARGS…` and starts `BINARY serve` on a free loopback port on core 0;
#                       sets $lab, $server (its pid) and $url. The exit stops serve and takes
#                       the lab down.
#   bench_awk_med       an awk function med(a, n): the median of a[1..n], to put before a
#                       program that prints medians of several columns.
#   bench_cleanup       override to add to the exit cleanup (runs before the lab goes down).
#   bench_unknown ARG   one line naming the bad argument, the script's usage line, exit 2.
#   median              the median of the numbers on stdin.
#   sink_packets        what $lab's sink has counted; now: the time in s (ns digits).
#   sink_measure CMD…   runs CMD in the background, reads the sink over $duration s after
#                       $warmup s, stops CMD, prints the Mpps the sink counted.

if [[ $(id -u) -ne 0 ]]; then
    exec sudo -E "$0" "$@"
fi
cd "$(dirname "$0")/.." || exit 2

lr=target/release/linerate
lab=

bench_cleanup() { :; }

bench_lab_up() {
    lab=$1
    # Held for the script's life: a second bench on the same lab name would take this one's lab
    # down as it cleared leftovers, and both would measure nonsense.
    mkdir -p /run/linerate
    exec {bench_lock}>"/run/linerate/bench-$lab.lock"
    flock -n "$bench_lock" || { echo "$(basename "$0" .sh): another benchmark is using lab $lab: wait for it to end" >&2; exit 2; }
    ./scripts/setup.sh
    cargo build --release --quiet
    trap 'bench_cleanup; "$lr" lab down --name "$lab" >/dev/null 2>&1 || true' EXIT
    trap 'exit 130' INT TERM
    "$lr" lab down --name "$lab" >/dev/null 2>&1 || true
    "$lr" lab up --name "$lab" --queues 2 ${2:+--dut "$2"} >/dev/null
}

bench_serve_on_lab() {
    bench_binary=$1 lab=$2
    shift 2
    mkdir -p /run/linerate
    exec {bench_lock}>"/run/linerate/bench-$lab.lock"
    flock -n "$bench_lock" || { echo "$(basename "$0" .sh): another benchmark is using lab $lab" >&2; exit 2; }
    server=
    trap bench_serve_down EXIT
    trap 'exit 130' INT TERM
    "$bench_binary" lab down --name "$lab" >/dev/null 2>&1 || true
    "$bench_binary" lab up --name "$lab" "$@" >/dev/null
    local log
    log=$(mktemp)
    "$bench_binary" serve --listen 127.0.0.1:0 --cores 0 2>"$log" &
    server=$!
    for _ in $(seq 100); do grep -q https "$log" && break; sleep 0.1; done
    url=$(grep -o 'https://[^ ]*' "$log" | head -1)
    rm -f "$log"
}

bench_serve_down() {
    if [[ -n $server ]]; then
        kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    fi
    "$bench_binary" lab down --name "$lab" >/dev/null 2>&1 || true
}

# shellcheck disable=SC2034 # used by the scripts that source this file
bench_awk_med='
    function med(a, n,   i, j, t, c) { for (i = 1; i <= n; i++) c[i] = a[i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (c[j] < c[i]) { t = c[i]; c[i] = c[j]; c[j] = t }
        return n % 2 ? c[(n + 1) / 2] : (c[n / 2] + c[n / 2 + 1]) / 2 }'

bench_unknown() {
    echo "$(basename "$0" .sh): unknown argument $1" >&2
    sed -n 's/^#   \(bench-.*\)/usage: \1/p' "$0" >&2
    exit 2
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

sink_packets() { "$lr" lab status --name "$lab" --json | sed -n 's/.*"sink_packets": \([0-9]*\).*/\1/p'; }
now() { date +%s.%N; }

# One reading, "time packets", the time taken halfway through the sink's read (slow when busy).
sink_reading() {
    local a b c
    a=$(now); c=$(sink_packets); b=$(now)
    echo "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.6f", (a + b) / 2 }') ${c:-0}"
}

sink_measure() {
    "$@" >/dev/null 2>&1 &
    local pid=$!
    sleep "$warmup"
    local r1 r2
    r1=$(sink_reading)
    sleep "$duration"
    r2=$(sink_reading)
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    awk -v r1="$r1" -v r2="$r2" 'BEGIN {
        split(r1, a, " "); split(r2, b, " "); printf "%.3f\n", (b[2] - a[2]) / (b[1] - a[1]) / 1e6 }'
}
