#!/usr/bin/env bash
# All of linerate's checks, as CI runs them: format, lints (warnings are errors), every test
# (root tests included: they build their own veth lab and remove it), and the macOS/BSD port
# type-checked for its targets.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    exec sudo -E "$0" "$@"
fi
cd "$(dirname "$0")/.."
./scripts/setup.sh

step() { printf '\n==> %s\n' "$*" >&2; }

step "cargo fmt --check"
cargo fmt --all --check
# The fuzz crate is outside the workspace (it builds on nightly only), so --all does not see it.
(cd fuzz && cargo fmt --check)

step "cargo clippy (linux)"
cargo clippy --workspace --all-targets --locked -- -D warnings

for target in aarch64-apple-darwin x86_64-apple-darwin x86_64-unknown-freebsd; do
    if rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        step "cargo clippy --target $target"
        cargo clippy --workspace --lib --bins --locked --target "$target" -- -D warnings
        if [[ $target == *-apple-darwin ]]; then
            # The macOS root tests (tests/macos.rs) and the unit tests of the crates they drive:
            # they run only on a Mac (the workflow's macOS job); here they must at least compile.
            # (--all-targets would need a C cross-compiler for the benches' criterion.)
            step "cargo clippy --tests --target $target (macOS tests)"
            cargo clippy -p linerate -p linerate-cli -p linerate-bpfdev -p linerate-lab --tests --locked \
                --target "$target" -- -D warnings
        fi
    else
        printf '\n!!!!!!!! SKIPPED: rust target %s is not installed and could not be added !!!!!!!!\n\n' "$target" >&2
        # CI promises the macOS/BSD port is type-checked: a skip there is a failure.
        if [[ ${CI:-} == true ]]; then exit 1; fi
    fi
done

step "action-validator .github/workflows/*.yml"
validator=target/tools/bin/action-validator
[[ -x $validator ]] || validator=$(command -v action-validator || true)
if [[ -n $validator ]]; then
    "$validator" .github/workflows/*.yml
else
    printf '\n!!!!!!!! SKIPPED: action-validator is not installed (scripts/setup.sh installs it) !!!!!!!!\n\n' >&2
    # CI promises the workflow validates: a skip there is a failure.
    if [[ ${CI:-} == true ]]; then exit 1; fi
fi

step "cargo test"
# One test at a time: the root tests measure rates and exact counts on a 2-core machine, where a
# neighbour test's traffic would be noise in the measurement.
cargo test --workspace --locked -- --test-threads=1 "$@"

# Each fuzz target briefly (fuzz/README.md: run one for 5 minutes or more before landing a
# parser change). Only where a nightly toolchain and cargo-fuzz are installed (setup.sh adds
# cargo-fuzz when nightly is there); a stable-only machine skips it.
if cargo +nightly --version >/dev/null 2>&1 && cargo +nightly fuzz --version >/dev/null 2>&1; then
    for target in $(cd fuzz && cargo +nightly fuzz list); do
        step "cargo +nightly fuzz run $target (20 s)"
        seeds=()
        [[ $target == stream_file ]] && seeds=(../examples)
        mkdir -p "fuzz/corpus/$target"
        (cd fuzz && cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
            -max_total_time=20 -rss_limit_mb=2048)
    done
else
    printf '\nskipped: fuzzing needs a nightly toolchain and cargo-fuzz\n' >&2
fi
