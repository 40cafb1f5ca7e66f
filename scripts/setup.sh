#!/usr/bin/env bash
# Installs, idempotently, everything linerate needs beyond the Rust toolchain: the C toolchain
# for the XDP programs, libbpf's build dependencies, the independent decoders, checkers and
# peers the tests and benchmarks use (tcpdump, dumpcap, trafgen; iproute2, with which the tests read back
# the lab that linerate builds through netlink), and the
# Rust targets the macOS/BSD port is type-checked for.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    exec sudo -E "$0" "$@"
fi

log() { printf 'setup: %s\n' "$*" >&2; }

# `--for sweep` installs what building linerate and measuring a port take (sweep.sh, the
# benchmarks' own peers aside): the C toolchain for the XDP programs, libbpf's build
# dependencies, iproute2 and ethtool for the lab. Without it, everything the tests need too.
for_sweep=false
case "${1:-}" in
    --for) [[ ${2:-} == sweep ]] || { echo "setup.sh: --for takes sweep" >&2; exit 2; }; for_sweep=true ;;
    --for=sweep) for_sweep=true ;;
    "") ;;
    *) echo "setup.sh: unknown argument $1 (give nothing, or --for sweep)" >&2; exit 2 ;;
esac

if [[ $(uname -s) == Linux ]]; then
    # wireshark-common brings dumpcap, the pcapng writer the replay tests capture with
    # (tcpdump 4.99 writes pcap only). iputils-ping: the hosts tests ping linerate's hosts from a router.
    # frr: the devices' BGP daemon (crates/routing runs its bgpd, one per device, in the device's
    # namespace); its packaged service is never started (policy-rc.d below), nothing listens
    # outside a lab namespace. bird2: the BGP DUT of `lab up --dut bgp` (another implementation
    # than the devices', as a device under test is). chromium and its chromedriver: the real
    # browser serve's dashboard (/ui) is checked in, headless; tmux: the terminal `linerate
    # console` is checked in. qemu-system-x86, cpio, xz-utils: the VM lab (scripts/vm.sh), a guest
    # with Debian's 6.12 kernel and virtio-net NICs, fetched below. nginx-light, nftables,
    # conntrack, curl: the stateful tests' kernel server, the NAT DUT's rules and table, and
    # the kernel client against linerate's server (nginx's service is never started either).
    packages=(clang llvm libelf-dev zlib1g-dev pkg-config make iproute2 ethtool linux-libc-dev
              libc6-dev procps util-linux bpftool)
    if ! $for_sweep; then
        packages+=(tcpdump netsniff-ng wireshark-common iputils-ping frr bird2 lldpd chromium
                   chromium-driver tmux qemu-system-x86 cpio xz-utils nginx-light nftables
                   conntrack curl)
    fi
    missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        # A package's own service (frr's) must not start on this host: linerate starts the
        # daemons it needs inside its namespaces.
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
        # bpftool is a nice-to-have for debugging; do not fail the setup when a release lacks it.
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
            apt-get install -y -qq --no-install-recommends "${missing[@]/bpftool/}" >/dev/null
    fi
    if ! mountpoint -q /sys/fs/bpf 2>/dev/null; then
        mount -t bpf bpf /sys/fs/bpf 2>/dev/null || log "could not mount bpffs at /sys/fs/bpf"
    fi
    # The VM lab's guest kernel and busybox (target/vm, ~110 MB once): root only, as apt-get
    # download and the lab are.
    if ! $for_sweep && [[ $(id -u) -eq 0 && ! -f "$(dirname "$0")/../target/vm/kernel/ready" ]]; then
        "$(dirname "$0")/vm.sh" fetch >/dev/null || log "could not fetch the VM lab's guest kernel (scripts/vm.sh fetch)"
    fi
fi

if $for_sweep; then
    log "ready (for sweep)"
    exit 0
fi
if command -v rustup >/dev/null; then
    for component in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$component" ||
            rustup component add "$component" >/dev/null 2>&1 || log "could not add $component"
    done
    for target in aarch64-apple-darwin x86_64-apple-darwin x86_64-unknown-freebsd; do
        rustup target list --installed 2>/dev/null | grep -qx "$target" ||
            rustup target add "$target" >/dev/null 2>&1 || log "could not add target $target"
    done
fi
# cargo-fuzz (a few minutes to build, once) only where nightly is: scripts/test.sh fuzzes then.
if command -v rustup >/dev/null && rustup toolchain list 2>/dev/null | grep -q '^nightly' &&
    ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz"
    cargo install cargo-fuzz --locked >/dev/null 2>&1 || log "could not install cargo-fuzz"
fi
# action-validator (crates.io) checks .github/workflows/*.yml against the schema. Installed into
# the project's own tools dir (target/tools, ignored by git) so root's and the user's cargo share
# it (one already on PATH, e.g. ~/.cargo/bin, is used instead). A failed install is logged, not fatal: test.sh decides (it fails under CI=true).
tools="$(cd "$(dirname "$0")/.." && pwd)/target/tools"
if [[ ! -x $tools/bin/action-validator ]] && ! command -v action-validator >/dev/null &&
    command -v cargo >/dev/null; then
    log "installing action-validator into $tools (about a minute)"
    cargo install --quiet --locked --root "$tools" action-validator >/dev/null 2>&1 ||
        log "could not install action-validator: the workflow check will be skipped"
fi
# The OTG tests (tests/otg.rs runs tests/otg/*.py) and examples/otg_quickstart.py speak through
# snappi, pinned with the frame decoder and pytest in a virtualenv inside the project (.venv,
# ignored by git): never a global pip. Re-installed only when the requirements change.
root="$(cd "$(dirname "$0")/.." && pwd)"
requirements="$root/tests/otg/requirements.txt"
if command -v python3 >/dev/null; then
    if [[ ! -x $root/.venv/bin/python ]] && ! python3 -m venv "$root/.venv" >/dev/null 2>&1; then
        if [[ $(uname -s) == Linux ]]; then
            apt-get install -y -qq --no-install-recommends python3-venv >/dev/null 2>&1 || true
        fi
        rm -rf "$root/.venv"
        python3 -m venv "$root/.venv" || log "could not make the virtualenv .venv"
    fi
    if [[ -x $root/.venv/bin/python ]] && ! cmp -s "$requirements" "$root/.venv/requirements.txt"; then
        log "installing the OTG client (snappi) into .venv"
        if "$root/.venv/bin/python" -m pip install -q -r "$requirements"; then
            cp "$requirements" "$root/.venv/requirements.txt"
        else
            log "could not install tests/otg/requirements.txt into .venv"
        fi
    fi
else
    log "no python3: the OTG tests will be skipped (they fail under CI=true)"
fi
log "ready"
