#!/usr/bin/env bash
# Concurrent connections held: linerate's client opens N connections to linerate's server (one
# GET each, keep-alive), and every connection then sits idle for --think before its second
# GET. They open at --cps (a million SYNs at once would only meet the NAT's SYN backlog and come
# back in waves of retransmissions). While they sit, the script reads each process's resident memory and the CPU time it
# spent over --sample seconds: memory a connection (client and server) and CPU a second with
# nothing to do. Every connection must end cleanly and the DUT's conntrack must track N
# connections while they sit, or the figure is not printed. The connections go through the
# lab's NAT DUT with its translation off (see below): conntrack tracks each, as a firewall does.
#
#   bench-tcp-hold.sh [--connections 10000,20000] [--think 40s] [--sample 10] [--cps 20000]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"

counts=10000,20000
think=40s
sample=10
cps=20000
while (($#)); do
    case $1 in
        --connections) counts=$2; shift 2 ;;
        --think) think=$2; shift 2 ;;
        --sample) sample=$2; shift 2 ;;
        --cps) cps=$2; shift 2 ;;
        *) bench_unknown "$1" ;;
    esac
done

work=$(mktemp -d)
bench_cleanup() {
    [[ -n ${srv:-} ]] && kill -INT "$srv" 2>/dev/null || true
    [[ -n ${cli:-} ]] && kill -INT "$cli" 2>/dev/null || true
    wait 2>/dev/null || true
    [[ -n ${host_ct_max:-} ]] && sysctl -qw net.netfilter.nf_conntrack_max="$host_ct_max"
    [[ -n ${host_ct_buckets:-} ]] && echo "$host_ct_buckets" >/sys/module/nf_conntrack/parameters/hashsize
    rm -rf "$work"
}
bench_lab_up lrhold nat
status=$("$lr" lab status --name "$lab" --json)
field() { sed -n "s/.*\"$1\": \"\([^\"]*\)\".*/\1/p" <<<"$status" | head -1; }
netns=$(field netns)
dut_ns=$lab-dut
cli_if=$(field sender) cli_ns=
srv_if=${lab}1 srv_ns=$netns
server=198.51.100.2 server_net=198.51.100.2/24 server_gw=198.51.100.1 # linerate_lab::NAT_SERVERS
clients=100.64.1.0/24 client_gw=100.64.0.1/16
# The NAT's table must hold every connection (and the last run's, cleared between runs). A
# namespace's limit is bounded by the host's (262,144 here): both are raised for the run and
# the host's is put back after.
host_ct_max=$(sysctl -n net.netfilter.nf_conntrack_max)
sysctl -qw net.netfilter.nf_conntrack_max=2000000
ip netns exec "$dut_ns" sysctl -qw net.netfilter.nf_conntrack_max=2000000 2>/dev/null || true
# Not translated: the DUT's conntrack still tracks every connection (a stateful firewall, its
# rules dropping what no connection knows), but a NAT's port search costs the kernel more than
# the ends themselves at these counts — masquerade, one address to the server's one port, holds
# 64,512 at most, and a pool of addresses spent most of the client's core in
# nf_conntrack_tuple_taken past 500,000. The server reaches the clients through its gateway.
ip netns exec "$dut_ns" nft insert rule ip linerate_nat postrouting ip saddr 100.64.0.0/16 accept
# A bucket a connection, so a lookup stays one or two entries long.
host_ct_buckets=$(cat /sys/module/nf_conntrack/parameters/hashsize)
echo 1048576 >/sys/module/nf_conntrack/parameters/hashsize

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
# utime + stime in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# First GETs answered, from the client's last line a second.
answered() { sed -n 's/.*responses \([0-9]*\).*/\1/p' "$work/client.log" | tail -1; }
held_by_nat() {
    ip netns exec "$dut_ns" conntrack -C 2>/dev/null || echo 0
}

IFS=, read -ra ns <<<"$counts"
for n in "${ns[@]}"; do
    ip netns exec "$dut_ns" conntrack -F >/dev/null 2>&1 || true
    # Send buffers of 4 KiB: a 1 KiB response fits, and a million slots fit in memory.
    taskset -c 1 "$lr" tcp server -i "$srv_if" ${srv_ns:+--netns "$srv_ns"} --address "$server_net" \
        --gateway "$server_gw" --concurrent "$n" --send-buffer 4096 --response-bytes 1024 \
        --timeout 600s >"$work/server.log" 2>&1 &
    srv=$!
    sleep 1
    for _ in $(seq 300); do
        grep -q listening "$work/server.log" && break
        kill -0 "$srv" 2>/dev/null || break
        sleep 0.2
    done
    if ! kill -0 "$srv" 2>/dev/null; then
        echo "$n connections: the server did not start: $(tail -1 "$work/server.log")" >&2
        exit 1
    fi
    srv_base=$(rss_kib "$srv")
    taskset -c 0 "$lr" tcp client -i "$cli_if" ${cli_ns:+--netns "$cli_ns"} --src "$clients" \
        ${client_gw:+--gateway "$client_gw"} --server "$server:80" -n "$n" --concurrent "$n" \
        --rate "$cps" --requests 2 --think "$think" --timeout 60s --window 4096 --response-bytes 1024 \
        --json >"$work/client.json" 2>"$work/client.log" &
    cli=$!
    # Every connection open and idle once every first GET is answered.
    for _ in $(seq 1200); do
        a=$(answered); ((${a:-0} >= n)) && break
        kill -0 "$cli" 2>/dev/null || break
        sleep 0.5
    done
    sleep 2
    for p in "$cli" "$srv"; do
        if ! kill -0 "$p" 2>/dev/null; then
            echo "$n connections: a process ended before the sample: $(tail -1 "$work/server.log"); $(tail -1 "$work/client.log")" >&2
            exit 1
        fi
    done
    c0=$(cpu_ticks "$cli") s0=$(cpu_ticks "$srv")
    sleep "$sample"
    c1=$(cpu_ticks "$cli") s1=$(cpu_ticks "$srv")
    cli_rss=$(rss_kib "$cli") srv_rss=$(rss_kib "$srv")
    held=$(held_by_nat)
    idle=$(answered)
    wait "$cli" || true
    cli=
    kill -INT "$srv"; wait "$srv" || true
    srv=
    clean=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["counters"]; print("yes" if c["closed"]==c["attempted"]==int(sys.argv[2]) and c["responses"]==2*c["attempted"] else "no: %s" % c)' "$work/client.json" "$n")
    if [[ $clean != yes || $held -lt $n || $idle -lt $n ]]; then
        echo "$n connections: not all held or not all clean (conntrack $held, answered before the sample $idle; $clean)"
        continue
    fi
    awk -v n="$n" -v cr="$cli_rss" -v sr="$srv_rss" -v sb="$srv_base" -v c="$((c1 - c0))" \
        -v s="$((s1 - s0))" -v hz="$hz" -v t="$sample" -v held="$held" 'BEGIN {
        printf "%d connections held (conntrack %s): client %.0f MiB, %.2f KiB a connection, %.1f %% of a core idle; server %.0f MiB, %.2f KiB a connection (its slots are made at start: %.0f MiB before the first), %.1f %% of a core idle\n",
            n, held, cr / 1024, cr / n, 100 * c / hz / t, sr / 1024, sr / n, sb / 1024, 100 * s / hz / t }'
done
