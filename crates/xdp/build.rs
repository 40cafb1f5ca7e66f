//! Builds the XDP programs in `bpf/` with clang through libbpf-cargo, when the target is Linux.
//!
//! The objects land in `OUT_DIR` as `<name>.bpf.o` and are embedded by `src/linux.rs`; the live
//! transmitter's object is handed to `linerate-live` from there, so one crate builds BPF.

use std::env;

const PROGRAMS: &[&str] = &[
    "sink", "pass", "live_tx", "rx", "dut_fwd", "impair", "host", "stamp",
];
/// Headers the programs include: a change to one rebuilds them all.
const HEADERS: &[&str] = &["hosts.h"];

fn main() {
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    build_bpf();
}

#[cfg(target_os = "linux")]
fn build_bpf() {
    use libbpf_cargo::SkeletonBuilder;
    use std::path::PathBuf;

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let bpf_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("../../bpf");
    // Debian keeps asm/types.h under the multiarch directory, which clang -target bpf does not
    // search by itself.
    let multiarch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86_64-linux-gnu",
        Ok("aarch64") => "aarch64-linux-gnu",
        Ok("riscv64") => "riscv64-linux-gnu",
        Ok("powerpc64") => "powerpc64le-linux-gnu",
        Ok("s390x") => "s390x-linux-gnu",
        _ => "x86_64-linux-gnu",
    };
    for name in HEADERS {
        println!("cargo:rerun-if-changed={}", bpf_dir.join(name).display());
    }
    for name in PROGRAMS {
        let src = bpf_dir.join(format!("{name}.bpf.c"));
        let obj = out.join(format!("{name}.bpf.o"));
        println!("cargo:rerun-if-changed={}", src.display());
        SkeletonBuilder::new()
            .source(&src)
            .obj(&obj)
            .clang_args([
                "-Wall".to_string(),
                "-Werror".to_string(),
                format!("-I/usr/include/{multiarch}"),
            ])
            .build()
            .unwrap_or_else(|e| {
                panic!(
                    "building {} failed (clang and libbpf headers are needed: scripts/setup.sh installs them): {e:#}",
                    src.display()
                )
            });
    }
}

#[cfg(not(target_os = "linux"))]
fn build_bpf() {
    panic!(
        "the XDP programs are built on a Linux host only; cross-compiling to Linux from elsewhere is not supported"
    );
}
