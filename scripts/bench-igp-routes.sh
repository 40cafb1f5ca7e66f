#!/usr/bin/env bash
# IGP route scale: two linerate devices back to back on a lab's veth pair speak IS-IS (level 2,
# point to point) or OSPFv2 (area 0, point to point) through FRR, via `linerate serve` and
# snappi; one advertises N IPv4 /24s as a route range. Per round: the time from set_config's
# answer to the other device's kernel FIB (zebra, in its namespace) holding all N, and the
# resident memory of both devices' daemons and of linerate serve then. Prints every round and
# the medians.
#
#   bench-igp-routes.sh [--igp isis|ospfv2] [--routes 10000] [--rounds 3] [BINARY]
#
# BINARY defaults to target/release/linerate.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"
cd "$OLDPWD"

igp=isis
routes=10000
rounds=3
binary=
while (($#)); do
    case $1 in
        --igp) igp=$2; shift 2 ;;
        --routes) routes=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        -*) bench_unknown "$1" ;;
        *) binary=$1; shift ;;
    esac
done
case $igp in
    isis | ospfv2) ;;
    *) echo "bench-igp-routes: --igp takes isis or ospfv2, not '$igp'" >&2; exit 2 ;;
esac
./scripts/setup.sh
if [[ -z $binary ]]; then
    cargo build --release --quiet
    binary=$lr
fi
lab=lrbi
mkdir -p /run/linerate
exec {lock}>"/run/linerate/bench-$lab.lock"
flock -n "$lock" || { echo "bench-igp-routes: another benchmark is using lab $lab" >&2; exit 2; }
server=
cleanup() {
    [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    "$binary" lab down --name "$lab" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$binary" lab down --name "$lab" >/dev/null 2>&1 || true
"$binary" lab up --name "$lab" --queues 1 >/dev/null
log=$(mktemp)
"$binary" serve --listen 127.0.0.1:0 --cores 0 2>"$log" &
server=$!
for _ in $(seq 100); do grep -q https "$log" && break; sleep 0.1; done
url=$(grep -o 'https://[^ ]*' "$log" | head -1)
for round in $(seq "$rounds"); do
    LAB=$lab URL=$url N=$routes IGP=$igp SERVER=$server .venv/bin/python scripts/lib/bench_igp_routes.py
done | tee /dev/stderr | awk -v n="$routes" -v igp="$igp" '
    { fib[NR] = $2; rxd[NR] = $4; txd[NR] = $6; serve[NR] = $8 }
    function med(a, k,   i, j, t, c) { for (i = 1; i <= k; i++) c[i] = a[i]
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (c[j] < c[i]) { t = c[i]; c[i] = c[j]; c[j] = t }
        return (k % 2) ? c[(k + 1) / 2] : (c[k / 2] + c[k / 2 + 1]) / 2 }
    END { printf "%s, %d routes, median of %d: in the FIB after %.2f s; daemons %d MiB (receiving) and %d MiB (advertising), serve %d MiB\n",
          igp, n, NR, med(fib, NR), med(rxd, NR), med(txd, NR), med(serve, NR) }'
