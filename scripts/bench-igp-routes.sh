#!/usr/bin/env bash
# IGP route scale: two linerate devices back to back on a lab's veth pair speak IS-IS (level 2,
# point to point) or OSPFv2 (area 0, point to point) through FRR, via `linerate serve` and
# snappi; one advertises N IPv4 /24s as a route range. Per round: set_config's own time, the
# time from its answer to the other device's kernel FIB (zebra, in its namespace) holding all
# N, and the resident memory of both devices' daemons and of linerate serve then. Prints every
# round and the medians.
#
#   bench-igp-routes.sh [--igp isis|ospfv2] [--origin ORIGIN] [--routes 10000] [--rounds 3]
#                       [BINARY]
#
# --origin is an OSPFv2 range's route_origin (inter_area, intra_area, external_type_1 or
# external_type_2): inter- and intra-area ranges are addresses of a link of the device,
# external ones blackhole routes redistributed (docs/routing.md, OSPFv2).
# BINARY defaults to target/release/linerate.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"
cd "$OLDPWD"

igp=isis
routes=10000
rounds=3
origin=
binary=
while (($#)); do
    case $1 in
        --igp) igp=$2; shift 2 ;;
        --routes) routes=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --origin) origin=$2; shift 2 ;;
        -*) bench_unknown "$1" ;;
        *) binary=$1; shift ;;
    esac
done
case $igp in
    isis | ospfv2) ;;
    *) echo "bench-igp-routes: --igp takes isis or ospfv2, not '$igp'" >&2; exit 2 ;;
esac
case $igp/$origin in
    */ | ospfv2/inter_area | ospfv2/intra_area | ospfv2/external_type_1 | ospfv2/external_type_2) ;;
    *) echo "bench-igp-routes: --origin is an OSPFv2 range's (inter_area, intra_area, external_type_1 or external_type_2), not '$origin' with $igp" >&2; exit 2 ;;
esac
./scripts/setup.sh
if [[ -z $binary ]]; then
    cargo build --release --quiet
    binary=$lr
fi
bench_serve_on_lab "$binary" lrbi --queues 1
for round in $(seq "$rounds"); do
    LAB=$lab URL=$url N=$routes IGP=$igp ORIGIN=$origin SERVER=$server .venv/bin/python scripts/lib/bench_igp_routes.py
done | tee /dev/stderr | awk -v n="$routes" -v igp="$igp${origin:+ $origin}" "$bench_awk_med"'
    { fib[NR] = $2; rxd[NR] = $4; txd[NR] = $6; serve[NR] = $8; cfg[NR] = $10 }
    END { printf "%s, %d routes, median of %d: set_config answered in %.2f s, in the FIB %.2f s after; daemons %d MiB (receiving) and %d MiB (advertising), serve %d MiB\n",
          igp, n, NR, med(cfg, NR), med(fib, NR), med(rxd, NR), med(txd, NR), med(serve, NR) }'
