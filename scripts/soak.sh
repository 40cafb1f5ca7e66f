#!/usr/bin/env bash
# A long run of each backend with the receive side on (issue 27): `tx --rx` at a stated rate for
# N minutes on a fresh veth lab, the sender's RSS sampled each minute, and at the end three counts
# that must agree exactly — what the sender completed, what the receive program counted for the
# flow, and what the kernel counted on the receive link (`ip -s link`, read inside the lab's
# namespace before and after). Not in CI: a soak takes as long as it is told to.
# One Markdown row per backend on stdout (RSS in KiB: first sample, max, last); exit 1 when any
# count differs or a run fails.
#
#   soak.sh [--minutes 60] [--rate 100k] [--backends 'afxdp live afpacket'] [--lab lrsoak] [--core 1]
#
# Backends run one after the other on one lab; run several scripts with different --lab names
# to soak backends side by side.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"

minutes=60
rate=100k
backends="afxdp live afpacket"
name=lrsoak
core=1
while (($#)); do
    case $1 in
        --minutes) minutes=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --backends) backends=$2; shift 2 ;;
        --lab) name=$2; shift 2 ;;
        --core) core=$2; shift 2 ;;
        *) bench_unknown "$1" ;;
    esac
done

out=$(mktemp -d)
pid=
bench_cleanup() {
    [[ -n $pid ]] && kill -INT "$pid" 2>/dev/null
    rm -rf "$out"
}
bench_lab_up "$name"

# What the kernel counted arriving on the lab's receive link.
link_rx() { ip -n "$lab-sink" -s -j link show dev "${lab}1" | jq '.[0].stats64.rx.packets'; }

echo "| backend | minutes | rate | sent | received (rx) | ip -s link | RSS KiB first / max / last | verdict |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
failed=0
for backend in $backends; do
    before=$(link_rx)
    "$lr" tx -q --json -i "${lab}0" --rx --backend "$backend" --cores "$core" \
        --rate "$rate" -d "$((minutes * 60))s" >"$out/$backend.json" 2>"$out/$backend.err" &
    pid=$!
    : >"$out/$backend.rss"
    while kill -0 "$pid" 2>/dev/null; do
        ps -o rss= -p "$pid" >>"$out/$backend.rss" 2>/dev/null || true
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    done
    rc=0
    wait "$pid" || rc=$?
    pid=
    after=$(link_rx)
    if ((rc != 0)); then
        echo "| $backend | $minutes | $rate | run failed (rc $rc): $(head -c 200 "$out/$backend.err") | | | | FAIL |"
        failed=1
        continue
    fi
    sent=$(jq '.completed' "$out/$backend.json")
    received=$(jq '[.rx.flows[].rx_frames] | add' "$out/$backend.json")
    link=$((after - before))
    rss=$(awk 'NF { v[++n] = $1; if ($1 > m) m = $1 } END { printf "%d / %d / %d", v[1], m, v[n] }' "$out/$backend.rss")
    verdict=ok
    if [[ $sent != "$received" || $sent != "$link" ]]; then
        verdict=FAIL
        failed=1
    fi
    echo "| $backend | $minutes | $rate | $sent | $received | $link | $rss | $verdict |"
done
exit "$failed"
