#!/usr/bin/env bash
# Route scale: one linerate device advertises N IPv4 /24s (and M IPv6 /64s) by eBGP to the lab's
# BGP DUT (`lab up --dut bgp`, BIRD), through `linerate serve` and snappi. Per round: the time
# from set_config's answer to the device's bgpd counting every prefix as advertised, and to the
# DUT's kernel FIB holding every one (`ip -n <lab>-dut route`), and the resident memory of the
# device's bgpd, of BIRD and of linerate serve then. Prints every round and the medians.
#
#   bench-routes.sh [--v4 100000] [--v6 10000] [--rounds 3] [BINARY]
#
# The IPv6 ranges go over an IPv6 session on the BGP DUT's IPv6 subnet (`lab status --json`,
# dut.ipv6); both families are counted in the DUT's kernel FIB.
#
# BINARY defaults to target/release/linerate.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"
cd "$OLDPWD"

v4=100000
v6=10000
rounds=3
binary=
while (($#)); do
    case $1 in
        --v4) v4=$2; shift 2 ;;
        --v6) v6=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        -*) bench_unknown "$1" ;;
        *) binary=$1; shift ;;
    esac
done
./scripts/setup.sh
if [[ -z $binary ]]; then
    cargo build --release --quiet
    binary=$lr
fi
lab=lrbr
mkdir -p /run/linerate
exec {lock}>"/run/linerate/bench-$lab.lock"
flock -n "$lock" || { echo "bench-routes: another benchmark is using lab $lab" >&2; exit 2; }
server=
cleanup() {
    [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    "$binary" lab down --name "$lab" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$binary" lab down --name "$lab" >/dev/null 2>&1 || true
"$binary" lab up --name "$lab" --dut bgp >/dev/null
log=$(mktemp)
"$binary" serve --listen 127.0.0.1:0 --cores 0 2>"$log" &
server=$!
for _ in $(seq 100); do grep -q https "$log" && break; sleep 0.1; done
url=$(grep -o 'https://[^ ]*' "$log" | head -1)
for round in $(seq "$rounds"); do
    LAB=$lab URL=$url V4=$v4 V6=$v6 SERVER=$server .venv/bin/python scripts/lib/bench_routes.py
done | tee /dev/stderr | awk -v v4="$v4" -v v6="$v6" '
    { adv[NR] = $2; fib[NR] = $4; bgpd[NR] = $6; bird[NR] = $8; serve[NR] = $10 }
    function med(a, n,   i, j, t, c) { for (i = 1; i <= n; i++) c[i] = a[i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (c[j] < c[i]) { t = c[i]; c[i] = c[j]; c[j] = t }
        return n % 2 ? c[(n + 1) / 2] : (c[n / 2] + c[n / 2 + 1]) / 2 }
    END { printf "median of %d: %d v4 + %d v6 prefixes advertised in %.2f s, in the DUT FIB in %.2f s; RSS bgpd %d MiB, bird %d MiB, serve %d MiB\n",
          NR, v4, v6, med(adv, NR), med(fib, NR), med(bgpd, NR), med(bird, NR), med(serve, NR) }'
rm -f "$log"
