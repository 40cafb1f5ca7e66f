#!/usr/bin/env bash
# The gaps a receiver sees, MoonGen's way (IMC 2015, its rate-control table): the share of
# inter-arrival times within ±64/±128/±256/±512 ns of the asked gap and the share back to back
# (under a quarter of it), for each backend × pacing × rate, one worker pinned to core 0. The gaps
# are stamped at the far end of a veth pair by the tests' own XDP program (crates/probe, `gap-probe`:
# bpf_ktime_get_ns per frame, no code shared with linerate's receiver). Each cell is the median of
# --rounds runs; the first --skip arrivals of a run are left out. `auto` rows say what auto chose
# on this machine and the send cost it measured (the run's report: pacing.spacing, send_ns). A
# last row sends --gaps poisson and prints the Kolmogorov–Smirnov D and p against the exponential
# at the rate.
#
#   bench-gaps.sh [--rounds 3] [--frames 200000] [--skip 1000] [--rates 100k,500k,1M] [--backends afxdp,afpacket,live] [--json FILE]
#
# veth delivers in the sender's context: a gap here is the sender's, with no NIC batching on
# top (docs/performance.md, "The gaps a receiver sees").
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"

rounds=3
frames=200000
skip=1000
rates=100k,500k,1M
backends=afxdp,afpacket,live
json_out=
while (($#)); do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --frames) frames=$2; shift 2 ;;
        --skip) skip=$2; shift 2 ;;
        --rates) rates=$2; shift 2 ;;
        --backends) backends=$2; shift 2 ;;
        --json) json_out=$2; shift 2 ;;
        -*) bench_unknown "$1" ;;
        *) bench_unknown "$1" ;;
    esac
done

./scripts/setup.sh
cargo build --release --quiet -p linerate -p linerate-probe
probe=target/release/gap-probe

ns=lrgap$$
a=${ns}a
b=${ns}b
work=$(mktemp -d)
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    ip link del "$a" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ip netns add "$ns"
ip link add "$a" type veth peer name "$b" netns "$ns"
ip link set "$a" up
ip -n "$ns" link set "$b" up
mac=$(ip -n "$ns" -o link show "$b" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')

# pps of a rate word (100k, 1M, 2.5M).
pps_of() {
    awk -v r="$1" 'BEGIN { m = 1; u = substr(r, length(r));
        if (u == "k") m = 1e3; else if (u == "M") m = 1e6;
        if (m > 1) r = substr(r, 1, length(r) - 1); printf "%.0f", r * m }'
}

# One run: the probe's JSON on stdout, or "refused: <linerate's line>".
one_run() {
    local backend=$1 pacing=$2 rate=$3 gaps=$4 target_ns=$5 frames=${6:-$frames}
    local ready=$work/ready out=$work/probe.json
    : > "$ready"
    "$probe" -i "$b" --netns "$ns" --target-ns "$target_ns" --frames "$frames" --skip "$skip" \
        --idle 1 --json ${gaps:+--poisson} > "$out" 2> "$ready" &
    local pid=$!
    for _ in $(seq 100); do grep -q attached "$ready" && break; sleep 0.05; done
    local err
    if ! err=$("$lr" tx -q --json -i "$a" --dst-mac "$mac" -n "$frames" --backend "$backend" \
        --pacing "$pacing" --rate "$rate" ${gaps:+--gaps "$gaps"} --cores 0 2>&1 >"$work/tx.json"); then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        echo "refused: ${err#linerate: }"
        return
    fi
    wait "$pid"
    # The sender's own word on its pacing, appended to the probe's JSON line.
    printf '%s "chose":"%s","send_ns":%s\n' "$(cat "$out")" \
        "$(grep -o '"spacing": *"[a-z]*"' "$work/tx.json" | head -1 | cut -d'"' -f4)" \
        "$(grep -o '"send_ns": *[0-9]*' "$work/tx.json" | head -1 | cut -d: -f2 | tr -d ' ')"
}

field() { sed -n "s/.*\"$1\":\([-0-9.e]*\).*/\1/p"; }

printf '%-9s %-8s %-6s %7s %7s %7s %7s %7s %9s %11s  %s\n' \
    backend pacing rate '±64' '±128' '±256' '±512' 'b2b' 'median' 'mean pps' 'sender (send cost)'
rows=()
IFS=, read -ra rate_list <<< "$rates"
IFS=, read -ra backend_list <<< "$backends"
for backend in "${backend_list[@]}"; do
    for pacing in sliced precise auto; do
        for rate in "${rate_list[@]}"; do
            pps=$(pps_of "$rate")
            target=$(awk -v p="$pps" 'BEGIN { printf "%.3f", 1e9 / p }')
            declare -A col=()
            refused=
            for k in within_64ns within_128ns within_256ns within_512ns back_to_back median_ns rate_pps send_ns; do col[$k]=; done
            chose=
            for _ in $(seq "$rounds"); do
                r=$(one_run "$backend" "$pacing" "$rate" "" "$target")
                if [[ $r == refused:* ]]; then refused=$r; break; fi
                for k in "${!col[@]}"; do col[$k]+="$(field "$k" <<< "$r") "; done
                chose+="$(sed -n 's/.*"chose":"\([a-z]*\)".*/\1/p' <<< "$r") "
            done
            if [[ -n $refused ]]; then
                printf '%-9s %-8s %-6s %s\n' "$backend" "$pacing" "$rate" "$refused"
                rows+=("{\"backend\":\"$backend\",\"pacing\":\"$pacing\",\"rate\":\"$rate\",\"refused\":true}")
                continue
            fi
            med() { tr ' ' '\n' <<< "${col[$1]}" | grep . | median; }
            pct() { awk -v v="$(med "$1")" 'BEGIN { printf "%.1f%%", v * 100 }'; }
            printf '%-9s %-8s %-6s %7s %7s %7s %7s %7s %7sns %11.0f  %s (%s ns)\n' "$backend" "$pacing" "$rate" \
                "$(pct within_64ns)" "$(pct within_128ns)" "$(pct within_256ns)" "$(pct within_512ns)" \
                "$(pct back_to_back)" "$(med median_ns)" "$(med rate_pps)" "${chose% }" "$(med send_ns)"
            rows+=("{\"backend\":\"$backend\",\"pacing\":\"$pacing\",\"chose\":\"${chose% }\",\"send_ns\":$(med send_ns),\"rate\":\"$rate\",\"within_64ns\":$(med within_64ns),\"within_128ns\":$(med within_128ns),\"within_256ns\":$(med within_256ns),\"within_512ns\":$(med within_512ns),\"back_to_back\":$(med back_to_back),\"median_ns\":$(med median_ns),\"rate_pps\":$(med rate_pps)}")
            unset col
        done
    done
done

# Poisson: exponential gaps at a rate low enough for veth's own per-frame cost (~0.3 µs) to be
# small beside the gaps it would cut short.
for backend in "${backend_list[@]}"; do
    [[ $backend == live ]] && continue
    r=$(one_run "$backend" auto 10k poisson 100000 20000)
    if [[ $r == refused:* ]]; then
        printf '%-9s poisson  10k    %s\n' "$backend" "$r"
        continue
    fi
    printf '%-9s poisson  10k    KS D %s, p %s (exponential at 10 kpps), mean %s pps\n' "$backend" \
        "$(field ks_d <<< "$r")" "$(field ks_p <<< "$r")" "$(field rate_pps <<< "$r" | awk '{ printf "%.0f", $1 }')"
    rows+=("{\"backend\":\"$backend\",\"gaps\":\"poisson\",\"rate\":\"10k\",\"ks_d\":$(field ks_d <<< "$r"),\"ks_p\":$(field ks_p <<< "$r")}")
done

if [[ -n $json_out ]]; then
    (IFS=,; echo "[${rows[*]}]") > "$json_out"
fi
