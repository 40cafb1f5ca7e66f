#!/usr/bin/env bash
# Prepares a real NIC for a benchmark: each TX queue's IRQ on a core of its own, away from the
# worker cores (or on them with --same), irqbalance stopped so it cannot move them back, and the
# performance governor where cpufreq exists. Everything it changes is written to a state file
# first, so `--restore` puts back exactly that, even after a run that died half-way.
#
#   pin-cores.sh IFACE CORES [--same] [--dry-run]   CORES: worker cores, e.g. 0 or 0,1 or 2-5
#   pin-cores.sh --restore
#
# veth and other virtual interfaces have no IRQs: it says so and exits 0 without changing anything.
set -euo pipefail

STATE_DIR=/run/linerate
STATE=$STATE_DIR/pin-cores.state

log() { printf 'pin-cores: %s\n' "$*" >&2; }
die() {
    log "$*"
    exit 2
}
usage() {
    sed -n 's/^#   \(pin-cores.sh .*\)/usage: \1/p' "$0" >&2
    exit "${1:-2}"
}

# 0,2-4 -> "0 2 3 4"
expand_list() {
    local part lo hi out=()
    IFS=, read -ra parts <<<"$1"
    for part in "${parts[@]}"; do
        if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
            lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
            ((lo <= hi)) || return 1
            for ((c = lo; c <= hi; c++)); do out+=("$c"); done
        elif [[ $part =~ ^[0-9]+$ ]]; then
            out+=("$part")
        else
            return 1
        fi
    done
    ((${#out[@]})) || return 1
    echo "${out[*]}"
}

restore() {
    if [[ ! -f $STATE ]]; then
        log "nothing to restore ($STATE does not exist)"
        return 0
    fi
    local kind key old lines=()
    mapfile -t lines <"$STATE"
    # Undo in reverse order, so a setting changed twice ends at its first value.
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
        IFS=$'\t' read -r kind key old <<<"${lines[i]}"
        case $kind in
        irq)
            if echo "$old" >"/proc/irq/$key/smp_affinity_list" 2>/dev/null; then
                log "IRQ $key back on cores $old"
            else
                log "could not put IRQ $key back on cores $old"
            fi
            ;;
        governor)
            if echo "$old" >"/sys/devices/system/cpu/$key/cpufreq/scaling_governor" 2>/dev/null; then
                log "$key governor back to $old"
            else
                log "could not set the $key governor back to $old"
            fi
            ;;
        irqbalance)
            if systemctl start irqbalance 2>/dev/null; then
                log "irqbalance started again"
            else
                log "could not start irqbalance again"
            fi
            ;;
        esac
    done
    rm -f "$STATE"
}

# Records the old value before the change, so a crash between the two still restores correctly.
remember() {
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$STATE"
}

# The IRQs of IFACE's transmit queues, one "irq name" per line, in queue order.
tx_irqs() {
    local iface=$1 dev=/sys/class/net/$1/device candidates=() irq name
    # Drivers that name their vectors after the interface (ixgbe, i40e, ice, igb, bnxt, ena).
    while read -r irq name; do
        candidates+=("$irq $name")
    done < <(awk -v ifc="$iface" 'NR > 1 && $1 ~ /^[0-9]+:$/ {
        # eth0 must not match eth01: the name has to stand between separators.
        n = index($NF, ifc); if (n == 0) next
        before = substr($NF, n - 1, 1); after = substr($NF, n + length(ifc), 1)
        if ((n == 1 || before !~ /[[:alnum:]]/) && after !~ /[[:alnum:]]/) {
            sub(":", "", $1); print $1, $NF
        }
    }' /proc/interrupts)
    # Others (mlx5, virtio_net) name them after the device: take the PCI function's MSI vectors.
    # virtio_net's device is the virtio device, whose parent is the PCI function.
    if ((${#candidates[@]} == 0)); then
        local msi=""
        for d in "$dev/msi_irqs" "$dev/../msi_irqs"; do
            [[ -d $d ]] && msi=$d && break
        done
        if [[ -n $msi ]]; then
            for irq in $(find "$msi/" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n); do
                name=$(awk -v n="$irq:" '$1 == n { print $NF }' /proc/interrupts)
                [[ -n $name ]] && candidates+=("$irq $name")
            done
        elif [[ -r $dev/irq ]]; then
            candidates+=("$(cat "$dev/irq") legacy")
        fi
    fi
    local picked=()
    for c in "${candidates[@]}"; do
        name=${c#* }
        if [[ ${name,,} =~ (tx|output|comp) ]]; then picked+=("$c"); fi
    done
    # No vector says "tx": drop the ones that clearly are not queues and keep the rest.
    if ((${#picked[@]} == 0)); then
        for c in "${candidates[@]}"; do
            name=${c#* }
            if [[ ! ${name,,} =~ (config|async|ctrl|misc|lsc|other|fw|event|input|-rx) ]]; then
                picked+=("$c")
            fi
        done
    fi
    # One IRQ per TX queue is what the workers use; extra vectors serve queues nobody drives.
    local ntx
    ntx=$(find "/sys/class/net/$iface/queues" -maxdepth 1 -name 'tx-*' | wc -l)
    ((ntx > 0)) || ntx=${#picked[@]}
    ((${#picked[@]} == 0)) || printf '%s\n' "${picked[@]:0:ntx}"
}

pin() {
    local iface=$1 cores_spec=$2 same=$3 dry=$4
    [[ -e /sys/class/net/$iface ]] || die "no interface $iface"
    local driver=""
    if [[ -e /sys/class/net/$iface/device/driver ]]; then
        driver=$(basename "$(readlink "/sys/class/net/$iface/device/driver")")
    fi
    if [[ ! -e /sys/class/net/$iface/device || $driver == veth ]]; then
        log "$iface is virtual (no device): there are no IRQs to pin"
        return 0
    fi
    local workers online
    workers=$(expand_list "$cores_spec") || die "cores must look like 0 or 0,1 or 2-5, not '$cores_spec'"
    online=$(expand_list "$(cat /sys/devices/system/cpu/online)")
    for c in $workers; do
        [[ " $online " == *" $c "* ]] || die "core $c is not online (online: $(cat /sys/devices/system/cpu/online))"
    done

    local targets=()
    if [[ $same == 1 ]]; then
        read -ra targets <<<"$workers"
    else
        for c in $online; do
            [[ " $workers " == *" $c "* ]] || targets+=("$c")
        done
        if ((${#targets[@]} == 0)); then
            log "every online core is a worker core: the IRQs go on the worker cores"
            read -ra targets <<<"$workers"
        fi
    fi

    local irqs=()
    mapfile -t irqs < <(tx_irqs "$iface")
    if ((${#irqs[@]} == 0)); then
        log "$iface (driver ${driver:-unknown}) has no TX IRQs that can be found: nothing to pin"
        return 0
    fi

    if [[ $dry == 0 ]]; then
        [[ ! -f $STATE ]] || die "$STATE exists: a previous pin was not undone; run $0 --restore first"
        mkdir -p "$STATE_DIR"
        : >"$STATE"
        if command -v systemctl >/dev/null && systemctl is-active --quiet irqbalance 2>/dev/null; then
            remember irqbalance service active
            systemctl stop irqbalance
            log "irqbalance stopped"
        elif pgrep -x irqbalance >/dev/null 2>&1; then
            log "irqbalance runs outside systemd: stop it, or it may move the IRQs back"
        fi
    fi

    local i=0 irq name core
    printf 'pin-cores: %s (driver %s), workers on cores %s\n' "$iface" "${driver:-unknown}" "${workers// /,}"
    for entry in "${irqs[@]}"; do
        irq=${entry%% *} name=${entry#* }
        core=${targets[i % ${#targets[@]}]}
        i=$((i + 1))
        if [[ $dry == 1 ]]; then
            printf '  IRQ %s (%s) -> core %s (dry run)\n' "$irq" "$name" "$core"
            continue
        fi
        remember irq "$irq" "$(cat "/proc/irq/$irq/smp_affinity_list")"
        # Managed IRQs (the kernel owns their affinity) refuse the write with EIO; say so, go on.
        if echo "$core" >"/proc/irq/$irq/smp_affinity_list" 2>/dev/null; then
            printf '  IRQ %s (%s) -> core %s\n' "$irq" "$name" "$core"
        else
            printf '  IRQ %s (%s) stays on cores %s (the kernel manages its affinity)\n' \
                "$irq" "$name" "$(cat "/proc/irq/$irq/smp_affinity_list")"
        fi
    done

    local governed=()
    for c in $workers "${targets[@]}"; do
        local dir=/sys/devices/system/cpu/cpu$c/cpufreq
        [[ -w $dir/scaling_governor && " ${governed[*]} " != *" $c "* ]] || continue
        governed+=("$c")
        grep -qw performance "$dir/scaling_available_governors" 2>/dev/null || continue
        local old
        old=$(cat "$dir/scaling_governor")
        [[ $old != performance ]] || continue
        if [[ $dry == 1 ]]; then
            printf '  cpu%s governor %s -> performance (dry run)\n' "$c" "$old"
            continue
        fi
        remember governor "cpu$c" "$old"
        echo performance >"$dir/scaling_governor"
        printf '  cpu%s governor %s -> performance\n' "$c" "$old"
    done
    ((${#governed[@]})) || log "no cpufreq here: the governor is left alone"
    [[ $dry == 1 ]] || log "saved what changed in $STATE; undo with $0 --restore"
}

main() {
    local iface="" cores="" same=0 dry=0 do_restore=0
    for arg in "$@"; do
        case $arg in
        --restore) do_restore=1 ;;
        --same) same=1 ;;
        --dry-run) dry=1 ;;
        -h | --help) usage 0 ;;
        -*) die "unknown option $arg" ;;
        *)
            if [[ -z $iface ]]; then
                iface=$arg
            elif [[ -z $cores ]]; then
                cores=$arg
            else
                die "unexpected argument $arg"
            fi
            ;;
        esac
    done
    if [[ $(id -u) -ne 0 && $dry == 0 ]]; then
        exec sudo -E "$0" "$@"
    fi
    if [[ $do_restore == 1 ]]; then
        [[ -z $iface ]] || die "--restore takes no interface: it undoes what the state file lists"
        restore
        return
    fi
    [[ -n $iface && -n $cores ]] || usage
    pin "$iface" "$cores" "$same" "$dry"
}

main "$@"
