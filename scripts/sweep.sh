#!/usr/bin/env bash
# The main job: build linerate in release mode and sweep frame sizes at max rate with every
# backend this machine has, printing the max-rate table (a column per backend) and writing
# results/sweep-<host>-<date>.{json,csv,svg,txt}.
#
#   sweep.sh [IFACE] [extra `linerate sweep` arguments...]
#
# It runs `linerate sweep --backends all`: live, afxdp and afpacket in one run, interleaved (at
# each size the backends take turns, repetition by repetition, so drift falls on all alike); one
# that cannot send here is skipped with linerate's reason. The table compares them against the
# first (live) and the plot has one labelled series each. Given --backend it sweeps that one
# backend alone, and given --backends LIST those backends.
#
# Without IFACE the sweep runs in a veth lab that linerate creates and removes. With IFACE (a real
# NIC) the TX IRQs are pinned first (scripts/pin-cores.sh, away from the worker cores) and put
# back afterwards, even when the sweep fails or is interrupted. Extra arguments go to
# `linerate sweep` as they are, e.g. `sweep.sh eth1 --cores 2,3 --link-speed 10G --repeat 5`;
# passing --json, --csv or --plot replaces that default output file.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    exec sudo -E "$0" "$@"
fi
cd "$(dirname "$0")/.."

log() { printf 'sweep: %s\n' "$*" >&2; }

iface=""
if [[ $# -gt 0 && $1 != -* ]]; then
    iface=$1
    shift
fi
extra=("$@")

has_flag() {
    local flag=$1 arg
    for arg in "${extra[@]}"; do
        [[ $arg == "$flag" || $arg == "$flag="* ]] && return 0
    done
    return 1
}

# The worker cores as `linerate sweep` will read them (--cores 0,1 / --cores=0,1, repeatable);
# pin-cores.sh needs them to keep the IRQs off those cores. The CLI's default is core 0.
worker_cores() {
    local cores=() i
    for ((i = 0; i < ${#extra[@]}; i++)); do
        case ${extra[i]} in
        --cores) ((i + 1 < ${#extra[@]})) && cores+=("${extra[i + 1]}") ;;
        --cores=*) cores+=("${extra[i]#--cores=}") ;;
        esac
    done
    if ((${#cores[@]})); then
        local IFS=,
        echo "${cores[*]}"
    else
        echo 0
    fi
}

./scripts/setup.sh --for sweep
log "building (release)"
cargo build --release

host=$(hostname -s 2>/dev/null || hostname)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p results
base=results/sweep-$host-$stamp
outputs=()
for kind in json:json csv:csv plot:svg; do
    flag=--${kind%%:*} ext=${kind#*:}
    if ! has_flag "$flag"; then
        outputs+=("$flag" "$base.$ext")
    fi
done

# Files written as root in a user's checkout should belong to that user.
give_back() {
    if [[ -n ${SUDO_UID:-} && -n ${SUDO_GID:-} ]]; then
        chown -R "$SUDO_UID:$SUDO_GID" results/sweep-"$host-$stamp"* 2>/dev/null || true
        chown "$SUDO_UID:$SUDO_GID" results 2>/dev/null || true
    fi
}

pinned=0
cleanup() {
    if ((pinned)); then
        pinned=0
        ./scripts/pin-cores.sh --restore ||
            log "restoring the IRQ pinning failed: run scripts/pin-cores.sh --restore"
    fi
    give_back
}
# EXIT covers failures under `set -e`; INT and TERM exit so that EXIT runs. linerate gets the same
# Ctrl-C and removes its own lab.
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

where=(--lab)
if [[ -n $iface ]]; then
    where=(-i "$iface")
    pinned=1
    ./scripts/pin-cores.sh "$iface" "$(worker_cores)"
fi

backends=()
if ! has_flag --backend && ! has_flag --backends; then
    backends=(--backends all)
fi
target/release/linerate sweep "${where[@]}" "${backends[@]}" "${outputs[@]}" "${extra[@]}" |
    tee -i "$base.txt"
log "results in $base.*"
