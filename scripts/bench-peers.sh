#!/usr/bin/env bash
# linerate beside the peers a user would pick instead (issue 26), in one run on one veth lab, 64 B:
#   live, 1 worker          vs xdp-trafficgen -t 1
#   live, 2 workers         vs xdp-trafficgen -t 2
#   the same two with the peer's own frame (--ipv6 --size 66: one IPv6 UDP frame of 62 B,
#   repeated), beside linerate's default (ten IPv4 frames whose IP ids differ, 60 B)
#   AF_XDP copy, 1 worker   vs xdpsock -S (one process, queue 0, CPU 0)
#   AF_XDP copy, 2 workers  vs xdpsock -S twice (queues 0 and 1, CPUs 0 and 1)
#   AF_PACKET, 1 worker     vs trafgen TX_RING and a plain sendmmsg×64 sender with qdisc bypass
#   live --rx (signature + receive program) vs plain live, one worker
#   afxdp --rx vs plain afxdp, one worker
# Every round runs each variant once. The pairs run in an order that rotates from round to round,
# and within a pair the order alternates, so the VM's drift (more than the differences measured)
# hits both sides of a ratio alike. Each sender runs at --nice and is counted at the lab's XDP sink
# over --duration s after --warmup s (lib/bench.sh's sink_measure), except the --rx pairs:
# --rx takes the lab's receive end from the sink, so both of their sides run for --duration and
# are counted by what linerate's report says arrived (`.sink.packets / .elapsed_s`, as
# bench-rx.sh).
# Prints every round on stderr, then Markdown: median (min–max) Mpps per variant and, per pair, the
# median (min–max) of the per-round ratios beside the issue's goal.
#
#   bench-peers.sh [--rounds 5] [--duration 3] [--warmup 1] [--nice -20] [--xdp-trafficgen PATH] [--xdpsock PATH] [--trafgen PATH] [BINARY]
#
# Peers (../shared/PEERS.md, docs/peers.md): xdp-trafficgen (default
# /tmp/peers/xdp-tools/xdp-trafficgen/xdp-trafficgen, or $XDP_TRAFFICGEN) pins its thread i to
# CPU i and sends IPv6 UDP frames of 62 B (it clamps 64 to 66 with the FCS: its smallest); xdpsock
# (default /tmp/peers/bpf-examples/AF_XDP-example/xdpsock, or $XDPSOCK: the wrapper build-peers.sh
# makes, which preloads the memlock shim) runs as `xdpsock -t -S -i IFACE -q Q -s 64 -Q` (skb mode,
# so copy mode, as linerate binds on veth), under taskset; trafgen (netsniff-ng, or $TRAFGEN) sends
# linerate's default 60-byte frame from its TX_RING (no -t, --cpus 1, pinned to CPU 0);
# scripts/peers/sendmmsg.c, built here with cc, sends the same frame in sendmmsg batches of 64 on
# CPU 0. A peer that is missing is skipped with a note. BINARY defaults to target/release/linerate.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"
# Paths on the command line are the caller's: the library moved to the repository root.
cd "$OLDPWD"

rounds=5
duration=3
warmup=1
niceness=-20
xdp_trafficgen=${XDP_TRAFFICGEN:-/tmp/peers/xdp-tools/xdp-trafficgen/xdp-trafficgen}
xdpsock=${XDPSOCK:-/tmp/peers/bpf-examples/AF_XDP-example/xdpsock}
trafgen=${TRAFGEN:-$(command -v trafgen || echo trafgen)}
binary=
while (($#)); do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --nice) niceness=$2; shift 2 ;;
        --xdp-trafficgen) xdp_trafficgen=$(realpath -- "$2"); shift 2 ;;
        --xdpsock) xdpsock=$(realpath -- "$2"); shift 2 ;;
        --trafgen) trafgen=$(realpath -- "$2"); shift 2 ;;
        -*) bench_unknown "$1" ;;
        *) binary=$(realpath -- "$1"); shift ;;
    esac
done
cd "$(dirname "$0")/.."
binary=${binary:-$PWD/$lr}
work=$(mktemp -d)
rates=$work/rates
mkdir "$rates"
bench_cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$work"
}
bench_lab_up lrpeers
[[ -x $binary ]] || { echo "bench-peers: $binary is not an executable" >&2; exit 2; }

# Which peers can run; the others' variants are skipped.
declare -A have=([linerate]=1)
peer() { # tool, path, how to get it
    if [[ -x $2 ]]; then have[$1]=1; else echo "bench-peers: no $1 at $2 ($3): skipped" >&2; fi
}
peer xdp-trafficgen "$xdp_trafficgen" ../shared/peers/build-peers.sh
peer xdpsock "$xdpsock" ../shared/peers/build-peers.sh
peer trafgen "$trafgen" "apt-get install netsniff-ng"
if cc -O2 -Wall -o "$work/sendmmsg" scripts/peers/sendmmsg.c; then
    have[sendmmsg]=1
else
    echo "bench-peers: scripts/peers/sendmmsg.c did not build: skipped" >&2
fi

receiver_mac=$(ip netns exec "$lab-sink" cat "/sys/class/net/${lab}1/address")
sender_mac=$(cat "/sys/class/net/${lab}0/address")
# linerate's default frame, for trafgen: Ethernet to the sink's MAC, IPv4, UDP, zeros to 60 B.
cat >"$work/frame.cfg" <<CFG
{ eth(da=$receiver_mac, sa=$sender_mac), ipv4(saddr=198.18.0.1, daddr=198.18.0.2, ttl=64),
  udp(sp=1024, dp=9), fill(0x00, 18) }
CFG
# Two xdpsock processes, one a queue and a CPU, stopped together: sink_measure signals one pid.
# A background job starts with SIGINT ignored, which bash cannot trap: env gives it back first.
# The second starts once the first has attached libxdp's XSK program, which it then shares: at
# the same instant both would attach one and the second would fail (EBUSY).
cat >"$work/xdpsock2" <<SH
#!/bin/bash
trap 'kill -INT \$a \$b 2>/dev/null; wait' INT TERM
taskset -c 0 "$xdpsock" -t -S -i ${lab}0 -q 0 -s 64 -Q & a=\$!
sleep 0.3
taskset -c 1 "$xdpsock" -t -S -i ${lab}0 -q 1 -s 64 -Q & b=\$!
wait
SH
# trafgen forks its workers, which outlive a signal to the pid sink_measure knows: this runs a
# command in a process group of its own (job control) and stops the whole group.
cat >"$work/group" <<'SH'
#!/bin/bash
set -m
"$@" & p=$!
trap 'kill -TERM -- -$p 2>/dev/null; wait' INT TERM
wait
SH
chmod +x "$work/xdpsock2" "$work/group"

# Long enough to outlast warm-up and window; sink_measure stops the sender when it has read.
long=$((warmup + duration + 60))
nice_run() { sink_measure nice -n "$niceness" "$@"; }
lr_tx() { nice_run "$binary" tx -q -i "${lab}0" -d "${long}s" "$@"; }
lr_report() { # figures from linerate's own report, for the pair whose receiver replaces the sink
    nice -n "$niceness" "$binary" tx -q --json -i "${lab}0" -d "${duration}s" "$@" 2>"$work/report.err" |
        jq -r '.sink.packets / .elapsed_s / 1e6 | . * 1000 | round / 1000'
    # Its warnings (another sender sharing the lab, for one) name the variant they are about.
    sed "s/^/bench-peers: tx $* — /" "$work/report.err" >&2
}
run_variant() {
    case $1 in
        live1) lr_tx --backend live --cores 0 ;;
        live2) lr_tx --backend live --cores 0,1 ;;
        live1-v6) lr_tx --backend live --cores 0 --ipv6 --size 66 ;;
        live2-v6) lr_tx --backend live --cores 0,1 --ipv6 --size 66 ;;
        xtg1) nice_run "$xdp_trafficgen" udp -m "$receiver_mac" -s 64 -t 1 "${lab}0" ;;
        xtg2) nice_run "$xdp_trafficgen" udp -m "$receiver_mac" -s 64 -t 2 "${lab}0" ;;
        afxdp1) lr_tx --backend afxdp --cores 0 ;;
        afxdp2) lr_tx --backend afxdp --cores 0,1 ;;
        xdpsock1) nice_run taskset -c 0 "$xdpsock" -t -S -i "${lab}0" -q 0 -s 64 -Q ;;
        xdpsock2) nice_run env --default-signal=INT "$work/xdpsock2" ;;
        afpacket) lr_tx --backend afpacket --cores 0 ;;
        trafgen) nice_run env --default-signal=INT "$work/group" taskset -c 0 "$trafgen" -o "${lab}0" -i "$work/frame.cfg" --cpus 1 -C -Q ;;
        sendmmsg) nice_run "$work/sendmmsg" "${lab}0" "$receiver_mac" 0 "$long" ;;
        live-plain) lr_report --backend live --cores 0 ;;
        live-rx) lr_report --backend live --cores 0 --rx ;;
        afxdp-plain) lr_report --backend afxdp --cores 0 ;;
        afxdp-rx) lr_report --backend afxdp --cores 0 --rx ;;
    esac
}
# The tool behind each variant, to skip those whose peer is missing.
declare -A tool_of=([xtg1]=xdp-trafficgen [xtg2]=xdp-trafficgen [xdpsock1]=xdpsock [xdpsock2]=xdpsock
    [trafgen]=trafgen [sendmmsg]=sendmmsg)
runs() { [[ -n ${have[${tool_of[$1]:-linerate}]:-} ]]; }
# Waits (up to 3 s) until the sink counts nothing new over 0.2 s: no sender of the variant before
# may still be sending into the next one's window.
sink_quiet() {
    local a b
    b=$(sink_packets)
    for _ in $(seq 15); do
        sleep 0.2
        a=$b b=$(sink_packets)
        [[ $a != "$b" ]] || return 0
    done
    echo "bench-peers: the sink still counts before the next variant" >&2
}

groups=("live1 live1-v6 xtg1" "live2 live2-v6 xtg2" "afxdp1 xdpsock1" "afxdp2 xdpsock2" "afpacket trafgen sendmmsg" "live-plain live-rx" "afxdp-plain afxdp-rx")
echo "lab $lab on $(uname -r), $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'); 64 B; nice $niceness; ${duration}s after ${warmup}s warm-up; $rounds rounds; $(date -u '+%F %T UTC'); load at start:$(uptime | sed 's/.*load average://')" >&2
for ((r = 0; r < rounds; r++)); do
    line="round $((r + 1)):"
    for ((g = 0; g < ${#groups[@]}; g++)); do
        read -ra vs <<<"${groups[(g + r) % ${#groups[@]}]}"
        if ((r % 2)); then
            for ((i = 0, j = ${#vs[@]} - 1; i < j; i++, j--)); do t=${vs[i]}; vs[i]=${vs[j]}; vs[j]=$t; done
        fi
        for v in "${vs[@]}"; do
            runs "$v" || continue
            sink_quiet
            got=$(run_variant "$v")
            echo "$got" >>"$rates/$v"
            line+=" $v $got"
        done
    done
    echo "$line" >&2
done
echo "load at end:$(uptime | sed 's/.*load average://')" >&2

# "median (min–max)" of a file of figures, or — when the variant did not run.
stat() { [[ -s $rates/$1 ]] || { echo —; return; }; sort -g "$rates/$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f)", m, v[1], v[NR] }'; }
# The per-round ratios a / b, their median (min–max), or — when either side did not run.
ratios() {
    [[ -s $rates/$1 && -s $rates/$2 ]] || { echo —; return; }
    paste "$rates/$1" "$rates/$2" | awk '{ print ($2 + 0 > 0) ? $1 / $2 : 0 }' >"$work/ratio"
    printf '%.2f (%.2f–%.2f)' "$(median <"$work/ratio")" "$(sort -g "$work/ratio" | head -1)" "$(sort -g "$work/ratio" | tail -1)"
}
echo "| variant | Mpps at the sink, median (min–max) of $rounds |"
echo "| --- | ---: |"
declare -A label=([live1]="linerate live, 1 worker" [xtg1]="xdp-trafficgen -t 1"
    [live2]="linerate live, 2 workers" [xtg2]="xdp-trafficgen -t 2"
    [live1-v6]="linerate live, 1 worker, the peer's frame" [live2-v6]="linerate live, 2 workers, the peer's frame"
    [afxdp1]="linerate afxdp (copy), 1 worker" [xdpsock1]="xdpsock -S, 1 process"
    [afxdp2]="linerate afxdp (copy), 2 workers" [xdpsock2]="xdpsock -S, 2 processes"
    [afpacket]="linerate afpacket, 1 worker" [trafgen]="trafgen TX_RING" [sendmmsg]="sendmmsg×64 + qdisc bypass"
    [live-plain]="linerate live, 1 worker (its report)" [live-rx]="linerate live --rx, 1 worker (its report)"
    [afxdp-plain]="linerate afxdp, 1 worker (its report)" [afxdp-rx]="linerate afxdp --rx, 1 worker (its report)")
for g in "${groups[@]}"; do
    for v in $g; do echo "| ${label[$v]} | $(stat "$v") |"; done
done
echo
echo "| pair | ratio, median (min–max) of per-round ratios | goal |"
echo "| --- | ---: | ---: |"
echo "| live 1 worker / xdp-trafficgen -t 1 | $(ratios live1 xtg1) | stays > 1 |"
echo "| live 2 workers / xdp-trafficgen -t 2 | $(ratios live2 xtg2) | ≥ 1.00 |"
echo "| the peer's frame: live 1 worker / xdp-trafficgen -t 1 | $(ratios live1-v6 xtg1) | stays > 1 |"
echo "| the peer's frame: live 2 workers / xdp-trafficgen -t 2 | $(ratios live2-v6 xtg2) | ≥ 1.00 |"
echo "| live 2 workers / live 1 worker | $(ratios live2 live1) | |"
echo "| xdp-trafficgen -t 2 / -t 1 | $(ratios xtg2 xtg1) | |"
echo "| afxdp 1 worker / xdpsock 1 | $(ratios afxdp1 xdpsock1) | ≥ 1.05 |"
echo "| afxdp 2 workers / xdpsock 2 | $(ratios afxdp2 xdpsock2) | ≥ 1.05 |"
echo "| afpacket / trafgen TX_RING | $(ratios afpacket trafgen) | ≥ 1.00 |"
echo "| afpacket / sendmmsg×64 | $(ratios afpacket sendmmsg) | ≥ 1.00 |"
echo "| live --rx / plain live | $(ratios live-rx live-plain) | ≥ 0.70 |"
echo "| afxdp --rx / plain afxdp | $(ratios afxdp-rx afxdp-plain) | ≥ 0.90 |"
