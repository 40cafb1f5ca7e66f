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
bench_serve_on_lab "$binary" lrbr --dut bgp
for round in $(seq "$rounds"); do
    LAB=$lab URL=$url V4=$v4 V6=$v6 SERVER=$server .venv/bin/python scripts/lib/bench_routes.py
done | tee /dev/stderr | awk -v v4="$v4" -v v6="$v6" "$bench_awk_med"'
    { adv[NR] = $2; fib[NR] = $4; bgpd[NR] = $6; bird[NR] = $8; serve[NR] = $10 }
    END { printf "median of %d: %d v4 + %d v6 prefixes advertised in %.2f s, in the DUT FIB in %.2f s; RSS bgpd %d MiB, bird %d MiB, serve %d MiB\n",
          NR, v4, v6, med(adv, NR), med(fib, NR), med(bgpd, NR), med(bird, NR), med(serve, NR) }'
