#!/usr/bin/env bash
# The VM lab: a QEMU guest with Debian's 6.12 kernel and two virtio-net NICs, for what needs a
# real driver (virtio_net: native XDP, ndo_xdp_xmit, AF_XDP pool binding) or a kernel feature
# this host lacks (bonding, 802.1Q, netem). The guest's eth0 and eth1 are taps bridged inside a
# network namespace the script makes and removes (nothing reaches the host's own interfaces), so
# eth0's frames arrive at eth1: the far NIC, whose driver counts them. The guest is a busybox
# initramfs holding linerate (a release build of this checkout), the kernel's modules for the
# NICs, bonding, 802.1Q and netem, and COMMAND; its output comes back on stdout and its exit code
# is the script's. KVM where /dev/kvm runs a guest, TCG where it does not (about 15 s to boot).
#
#   vm.sh [--binary PATH] [--queues N] [--memory MiB] [--timeout S] [--keep-dir DIR] -- COMMAND...
#   vm.sh fetch            download and unpack the guest kernel and busybox only (cached)
#
# COMMAND runs under the guest's /bin/sh (busybox) with linerate and ethtool on PATH, and
# iproute2's ip as /usr/sbin/ip (busybox's sh runs its own `ip` applet for a bare `ip`); /tmp
# is a tmpfs.
# `far_rx` (a shell function in the guest) prints eth1's rx_packets.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    exec sudo -E "$0" "$@"
fi
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$root/target/vm

usage() {
    echo "vm.sh: $1" >&2
    sed -n 's/^#   \(vm.sh .*\)/usage: \1/p' "$0" >&2
    exit 2
}

binary=$root/target/release/linerate
queues=2
memory=1024
timeout=300
keep=
while (($#)); do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --queues) queues=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --keep-dir) keep=$2; shift 2 ;;
        fetch) fetch_only=1; shift ;;
        --) shift; break ;;
        *) usage "unknown argument $1" ;;
    esac
done

# The newest 6.12 kernel the distribution holds, unpacked once into target/vm/kernel.
fetch() {
    mkdir -p "$cache"
    if [[ ! -f $cache/kernel/ready ]]; then
        local pkg
        newest() {
            apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb[0-9]+-amd64-unsigned$' |
                awk '{ print $1 }' | sort -V | tail -1
        }
        pkg=$(newest)
        if [[ -z $pkg ]]; then
            apt-get update -qq >/dev/null 2>&1 || true
            pkg=$(newest)
        fi
        [[ -n $pkg ]] || { echo "vm.sh: no linux-image-6.12.*-amd64-unsigned in apt's lists: run apt-get update" >&2; exit 1; }
        echo "vm.sh: fetching $pkg" >&2
        rm -rf "$cache/kernel" "$cache/deb"
        mkdir -p "$cache/deb" "$cache/kernel"
        (cd "$cache/deb" && apt-get download -q "$pkg" busybox-static >/dev/null 2>&1) ||
            { echo "vm.sh: apt-get download $pkg busybox-static failed" >&2; exit 1; }
        dpkg-deb -x "$cache"/deb/linux-image-*.deb "$cache/kernel/root"
        dpkg-deb -x "$cache"/deb/busybox-static*.deb "$cache/kernel/busybox"
        local release
        release=$(ls "$cache/kernel/root/lib/modules")
        cp "$cache/kernel/root/boot/vmlinuz-$release" "$cache/kernel/vmlinuz"
        mkdir -p "$cache/kernel/modules"
        # In load order: a module after those it needs.
        for m in net/core/failover drivers/net/net_failover drivers/net/virtio_net \
            net/tls/tls drivers/net/bonding/bonding net/llc/llc net/802/stp net/802/garp \
            net/802/mrp net/8021q/8021q net/sched/sch_netem; do
            local f=$cache/kernel/root/lib/modules/$release/kernel/$m.ko.xz
            [[ -f $f ]] || { echo "vm.sh: $m is not in $pkg" >&2; exit 1; }
            xz -dc "$f" > "$cache/kernel/modules/$(basename "$m").ko"
        done
        echo "$release" > "$cache/kernel/release"
        rm -rf "$cache/kernel/root" "$cache/deb"
        touch "$cache/kernel/ready"
    fi
}

fetch
if [[ -n ${fetch_only:-} ]]; then
    echo "vm.sh: guest kernel $(cat "$cache/kernel/release") in $cache/kernel"
    exit 0
fi
(($#)) || usage "no COMMAND to run in the guest"
[[ -x $binary ]] || usage "$binary is not an executable: cargo build --release, or give --binary"
command -v qemu-system-x86_64 >/dev/null || { echo "vm.sh: qemu-system-x86_64 is missing: run ./scripts/setup.sh" >&2; exit 1; }

ns=lrvm$$
work=$(mktemp -d)
qemu_pid=
cleanup() {
    [[ -n $qemu_pid ]] && kill "$qemu_pid" 2>/dev/null || true
    [[ -n $qemu_pid ]] && wait "$qemu_pid" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    if [[ -n $keep ]]; then
        mkdir -p "$keep" && cp -r "$work"/. "$keep"/
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The initramfs: busybox, the modules, linerate and the libraries it links, the command.
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,run,lib/modules} "$rootfs/sys/fs/bpf"
cp "$cache/kernel/busybox/bin/busybox" "$rootfs/bin/busybox"
cp "$cache/kernel/modules/"*.ko "$rootfs/lib/modules/"
strip -o "$rootfs/bin/linerate" "$binary"
# ethtool (the drivers' own counters, `ethtool -S`) and iproute2's ip (it shows an attached XDP
# program, which busybox's does not), ahead of busybox on PATH.
tools=("$binary")
mkdir -p "$rootfs/usr/sbin"
for tool in ethtool ip; do
    if command -v "$tool" >/dev/null; then
        cp "$(command -v "$tool")" "$rootfs/usr/sbin/$tool"
        tools+=("$(command -v "$tool")")
    fi
done
for lib in $(ldd "${tools[@]}" | awk '/=>/ { print $3 } /ld-linux/ { print $1 }' | sort -u); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
done
printf '%s\n' "$@" > "$rootfs/cmd"
cat > "$rootfs/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t bpf bpf /sys/fs/bpf
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
for m in failover net_failover virtio_net tls bonding llc stp garp mrp 8021q sch_netem; do
    insmod /lib/modules/$m.ko || echo "@@vm: insmod $m failed"
done
# Nothing but the command's frames on the NICs: no IPv6 autoconfiguration chatter.
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6
ip link set lo up
for dev in /sys/class/net/eth*; do ip link set "${dev##*/}" up; done
far_rx() { cat /sys/class/net/eth1/statistics/rx_packets; }
# The links come up a moment after the devices.
for _ in $(seq 50); do
    [ "$(cat /sys/class/net/eth1/operstate 2>/dev/null)" = up ] && break
    sleep 0.1
done
echo "@@vm-ready $(uname -r)"
cd /tmp
sh -c ". /cmd" 2>&1 </dev/null &
wait $!
echo "@@vm-exit $?"
poweroff -f
EOF
# `far_rx` for the command's shell too.
sed -i 's|^sh -c ". /cmd"|sh -c "far_rx() { cat /sys/class/net/eth1/statistics/rx_packets; }; . /cmd"|' "$rootfs/init"
chmod +x "$rootfs/init"
(cd "$rootfs" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

# Two taps on a bridge, in a namespace of the lab's own.
ip netns add "$ns"
ip netns exec "$ns" sh -c '
    sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip link add lrvmbr type bridge
    ip link set lrvmbr up
    for t in tap0 tap1; do
        ip tuntap add dev $t mode tap multi_queue
        ip link set $t master lrvmbr
        # Room for bursts while QEMU (emulating, busy) drains the far NIC: under TCG the path
        # between the NICs is where frames go missing at full rate, not a driver.
        ip link set $t txqueuelen 10000 up
    done'

# KVM where it runs a guest: the kernel alone must print its banner within 10 s (here /dev/kvm
# opens, but the guest's first instructions fault). Asked once a host boot.
accel_of() {
    local boot_id mark=$cache/accel
    boot_id=$(cat /proc/sys/kernel/random/boot_id)
    if [[ -f $mark && $(head -1 "$mark") == "$boot_id" ]]; then
        tail -1 "$mark"
        return
    fi
    local accel=tcg
    if [[ -w /dev/kvm ]] && timeout 10 qemu-system-x86_64 -accel kvm -cpu host -m 128 -display none \
        -no-reboot -serial stdio -monitor none -kernel "$cache/kernel/vmlinuz" \
        -append "console=ttyS0 panic=-1" </dev/null 2>/dev/null | grep -qm1 "Linux version"; then
        accel=kvm
    fi
    printf '%s\n%s\n' "$boot_id" "$accel" > "$mark"
    echo "$accel"
}
accel=$(accel_of)
boot() {
    local accel=$1 cpu=max
    [[ $accel == kvm ]] && cpu=host
    local vectors=$((2 * queues + 2))
    ip netns exec "$ns" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp 2 -m "$memory" \
        -display none -no-reboot -serial stdio -monitor none \
        -kernel "$cache/kernel/vmlinuz" -initrd "$work/initrd.gz" \
        -append "console=ttyS0 quiet panic=-1 net.ifnames=0 rdinit=/init" \
        -netdev tap,id=n0,ifname=tap0,script=no,downscript=no,queues="$queues" \
        -device virtio-net-pci,netdev=n0,mq=on,vectors="$vectors",rx_queue_size=1024,tx_queue_size=1024,mac=52:54:00:12:34:01 \
        -netdev tap,id=n1,ifname=tap1,script=no,downscript=no,queues="$queues" \
        -device virtio-net-pci,netdev=n1,mq=on,vectors="$vectors",rx_queue_size=1024,tx_queue_size=1024,mac=52:54:00:12:34:02 \
        > "$work/console" 2>"$work/qemu.err" </dev/null &
    qemu_pid=$!
    local waited=0
    while kill -0 "$qemu_pid" 2>/dev/null; do
        if grep -q '^@@vm-exit' "$work/console" 2>/dev/null; then
            # poweroff -f follows: give it a moment, then end it.
            for _ in $(seq 50); do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.1; done
            break
        fi
        sleep 0.2
        waited=$((waited + 1))
        if ((waited > timeout * 5)); then
            echo "vm.sh: the guest did not finish within ${timeout} s ($accel); its console:" >&2
            tr -d '\r' < "$work/console" | tail -20 >&2
            exit 1
        fi
    done
    kill "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=
}
boot "$accel"
tr -d '\r' < "$work/console" > "$work/console.txt"
# Under TCG the guest kernel has panicked at boot now and then, before init ran (seen: "Oops:
# int3" in sched_clock_cpu while it patched its own code; the next boot came up): one more boot
# then, said on stderr, before the test is failed.
if ! grep -q '^@@vm-ready' "$work/console.txt" && grep -q 'Kernel panic' "$work/console.txt"; then
    echo "vm.sh: the guest kernel panicked while booting ($accel); booting it once more" >&2
    boot "$accel"
    tr -d '\r' < "$work/console" > "$work/console.txt"
fi
if ! grep -q '^@@vm-ready' "$work/console.txt"; then
    echo "vm.sh: the guest did not boot ($accel): $(tail -c 2000 "$work/qemu.err")" >&2
    tail -20 "$work/console.txt" >&2
    exit 1
fi
echo "vm.sh: guest $(sed -n 's/^@@vm-ready //p' "$work/console.txt") under $accel" >&2
grep '^@@vm: ' "$work/console.txt" >&2 || true
# The command's output: what lies between the two markers.
sed -n '/^@@vm-ready/,/^@@vm-exit/{/^@@vm-/d;p}' "$work/console.txt" | grep -v '^\[ *[0-9.]*\] ' || true
rc=$(sed -n 's/^@@vm-exit //p' "$work/console.txt")
[[ -n $rc ]] || { echo "vm.sh: the guest ended before the command did" >&2; exit 1; }
exit "$rc"
