#!/usr/bin/env bash
# Connections a second through the lab's NAT DUT (nftables masquerade, conntrack), a new
# connection per request, 1 KiB responses, three pairs alternated --rounds times: linerate's
# client (`linerate tcp client`, core 0) to nginx-light (one worker) in the servers' namespace;
# wrk (-t1 -c64, "Connection: close", core 0) to the same nginx; and linerate's client to
# linerate's server (`linerate tcp server` on the receiver's interface, core 1, --time-wait 0).
# conntrack is flushed between runs (so no run meets the last one's translations). Prints each
# run and the medians. --vs OLD runs both linerate pairs again with another build of linerate
# (client and server alike), alternated with this one's in each round, for an old-against-new
# figure from one run. --ipv6 adds a pair: both ends linerate's over IPv6, through the DUT's
# IPv6 firewall (routed, not translated; conntrack tracks each connection).
#
#   bench-tcp.sh [--rounds 3] [--connections 30000] [--seconds 10] [--bytes 1024] [--concurrent 256]
#                [--vs OLD_BINARY] [--ipv6]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
. "$(dirname "$0")/lib/bench.sh" "$@"

rounds=3
connections=30000
seconds=10
bytes=1024
concurrent=256
old=
ipv6=0
while (($#)); do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --bytes) bytes=$2; shift 2 ;;
        --concurrent) concurrent=$2; shift 2 ;;
        --vs) old=$2; shift 2 ;;
        --ipv6) ipv6=1; shift ;;
        *) bench_unknown "$1" ;;
    esac
done

[[ -z $old || -x $old ]] || { echo "bench-tcp: --vs $old: not an executable (give a linerate binary)" >&2; exit 2; }

command -v wrk >/dev/null || {
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null
    rm -f /usr/sbin/policy-rc.d
}

work=$(mktemp -d)
chmod 755 "$work"  # nginx's worker reads the files as another user
bench_cleanup() {
    [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    sleep 0.2
    rm -rf "$work"
}
bench_lab_up lrtcp nat
status=$("$lr" lab status --name "$lab" --json)
field() { sed -n "s/.*\"$1\": \"\\([^\"]*\\)\".*/\\1/p" <<<"$status" | head -1; }
server=$(field receiver_ip)
sender=$(field sender)
netns=$(field netns)
dut_ns=$lab-dut
ingress=$(ip -n "$dut_ns" -4 -o addr show dev "${lab}d0" | awk '$4 !~ /^100\.64\./ { sub(/\/.*/, "", $4); print $4; exit }')

mkdir -p "$work/www" "$work/t"
python3 -c "import sys; sys.stdout.buffer.write(bytes(i % 251 for i in range($bytes)))" >"$work/www/$bytes"
cat >"$work/nginx.conf" <<CONF
daemon off; worker_processes 1; pid $work/nginx.pid; error_log $work/error.log;
events { worker_connections 8192; }
http { access_log off; default_type application/octet-stream;
  client_body_temp_path $work/t; proxy_temp_path $work/t; fastcgi_temp_path $work/t;
  uwsgi_temp_path $work/t; scgi_temp_path $work/t;
  server { listen $server:80 backlog=4096; root $work/www; } }
CONF
# The servers' host keeps no TIME-WAIT: conntrack is flushed between runs, so the NAT hands out
# its ports afresh, and a SYN that met the last run's TIME-WAIT on the same 4-tuple would be
# taken for an old segment (both clients alike).
ip netns exec "$netns" sysctl -qw net.ipv4.tcp_max_tw_buckets=0
ip netns exec "$netns" nginx -c "$work/nginx.conf" &
for _ in $(seq 100); do [[ -f $work/nginx.pid ]] && break; sleep 0.05; done
# wrk runs on the sender's end in the root namespace: its one route to the server is the lab's.
ip route replace "$server/32" via "$ingress" dev "$sender"

flush() {
    for family in ipv4 ipv6; do
        ip netns exec "$dut_ns" conntrack -F -f "$family" >/dev/null 2>&1 || true
    done
    sleep 1
}
# linerate's client (BINARY, default this build's) on core 0 to SERVER:80: its connections a
# second, or "unclean: …" for a run in which a connection did not end cleanly (it still reports;
# its rate is not taken).
lr_client() {
    local out
    out=$(taskset -c 0 "${2:-$lr}" tcp client -i "$sender" --src "${client_src:-100.64.1.0/24}" \
        --gateway "${client_gw:-100.64.0.1/16}" \
        --server "$1:80" -n "$connections" --response-bytes "$bytes" --concurrent "$concurrent" \
        --src-ports 10000-60000 --json 2>/dev/null) || true
    python3 -c 'import json,sys; r=json.load(sys.stdin); c=r["counters"]; print(round(r["cps"]) if c["closed"]==c["attempted"] else "unclean: %s" % c)' <<<"$out"
}
lr_cps=() wrk_cps=() both_cps=() old_cps=() old_both_cps=() both6_cps=()
emulated=198.51.100.2 emulated_gw=198.51.100.1   # linerate_lab::NAT_SERVERS
# Both ends BINARY's: linerate's server on core 1, its client on core 0.
both_ends() {
    taskset -c 1 "$1" tcp server -i "${lab}1" --netns "$netns" --address "$emulated/24" \
        --gateway "$emulated_gw" --time-wait 0 --concurrent 1024 --response-bytes "$bytes" \
        >/dev/null 2>&1 &
    local srv=$!
    sleep 0.5
    lr_client "$emulated" "$1"
    kill -INT "$srv"; wait "$srv" || true
}
# Both ends this build's over IPv6 (linerate_lab::NAT6_INSIDE and NAT6_SERVERS), cores as above.
both_ends6() {
    taskset -c 1 "$lr" tcp server -i "${lab}1" --netns "$netns" --address 2001:db8:c6::2/64 \
        --gateway 2001:db8:c6::1 --time-wait 0 --concurrent 1024 --response-bytes "$bytes" \
        >/dev/null 2>&1 &
    local srv=$!
    sleep 0.5
    client_src=2001:db8:64:0:1::/120 client_gw=2001:db8:64::1/64 lr_client "[2001:db8:c6::2]"
    kill -INT "$srv"; wait "$srv" || true
}
for round in $(seq "$rounds"); do
    flush
    cps=$(lr_client "$server")
    [[ $cps == unclean* ]] || lr_cps+=("$cps")
    flush
    both=$(both_ends "$lr")
    [[ $both == unclean* ]] || both_cps+=("$both")
    flush
    if [[ -n $old ]]; then
        ocps=$(lr_client "$server" "$old")
        [[ $ocps == unclean* ]] || old_cps+=("$ocps")
        flush
        oboth=$(both_ends "$old")
        [[ $oboth == unclean* ]] || old_both_cps+=("$oboth")
        flush
        echo "round $round, $old: linerate -> nginx $ocps, linerate -> linerate $oboth connections/s"
    fi
    w=$(taskset -c 0 wrk -t1 -c64 -d"${seconds}s" -H "Connection: close" "http://$server/$bytes" 2>&1)
    wcps=$(awk '/Requests\/sec/ { printf "%d", $2 }' <<<"$w")
    errors=$(awk '/Socket errors|Non-2xx/ { print }' <<<"$w")
    wrk_cps+=("$wcps")
    echo "round $round: linerate -> nginx $cps, wrk -> nginx $wcps ${errors:+($errors) }, linerate -> linerate $both connections/s"
    if ((ipv6)); then
        flush
        both6=$(both_ends6)
        [[ $both6 == unclean* ]] || both6_cps+=("$both6")
        echo "round $round: linerate -> linerate over IPv6 $both6 connections/s"
    fi
done
lr_med=$(printf '%s\n' "${lr_cps[@]}" | median)
wrk_med=$(printf '%s\n' "${wrk_cps[@]}" | median)
both_med=$(printf '%s\n' "${both_cps[@]}" | median)
echo "median of $rounds: linerate -> nginx $lr_med, wrk -> nginx $wrk_med, linerate -> linerate $both_med connections/s"
if ((ipv6)); then
    echo "median of $rounds over IPv6: linerate -> linerate $(printf '%s\n' "${both6_cps[@]}" | median) connections/s"
fi
if [[ -n $old ]]; then
    echo "median of $rounds, $old: linerate -> nginx $(printf '%s\n' "${old_cps[@]}" | median), linerate -> linerate $(printf '%s\n' "${old_both_cps[@]}" | median) connections/s"
fi
echo "ratios to wrk + nginx: $(awk -v a="$lr_med" -v b="$wrk_med" -v c="$both_med" 'BEGIN { printf "%.2f (linerate client), %.2f (linerate both ends)", a / b, c / b }')"
