use std::fs;

use linerate_port::iface::Interface;

pub(super) fn uname() -> Option<super::Uname> {
    super::libc_uname()
}

/// The distribution's name reads better in a result than "Linux"; the kernel has its own field.
pub(super) fn os_name() -> Option<String> {
    let release = fs::read_to_string("/etc/os-release").ok()?;
    release.lines().find_map(|line| {
        line.strip_prefix("PRETTY_NAME=")
            .map(|v| v.trim_matches('"').to_string())
    })
}

pub(super) fn kernel_release() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/osrelease").ok()
}

pub(super) fn cpu_model() -> Option<String> {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").ok()?;
    // x86 says "model name"; arm64 kernels often give only "CPU part", so fall back to the DT model.
    cpuinfo
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == "model name").then(|| value.trim().to_string())
        })
        .or_else(|| {
            fs::read_to_string("/sys/firmware/devicetree/base/model")
                .ok()
                .map(|m| m.trim_end_matches('\0').to_string())
        })
}

pub(super) fn interface_driver(interface: &str) -> Option<String> {
    Interface::read(interface).ok()?.driver
}

pub(super) fn interface_link_speed_mbps(interface: &str) -> Option<u64> {
    Interface::read(interface).ok()?.speed.map(|s| s.mbps())
}
