//! This process's capabilities (linux/capability.h), as /proc/self/status shows them: what a
//! backend needs, and what tells "not root" from "root, and the kernel still says no".

pub const NET_ADMIN: u32 = 12;
pub const NET_RAW: u32 = 13;
pub const SYS_ADMIN: u32 = 21;
pub const BPF: u32 = 39;

/// The effective set; None where there is none (not Linux) or it cannot be read.
pub fn effective() -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    from_status(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// The `CapEff:` line of a /proc/PID/status text.
pub fn from_status(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

/// Whether the set `caps` holds `cap`; CAP_SYS_ADMIN stands for CAP_BPF, as on kernels before
/// 5.8.
pub fn holds(caps: u64, cap: u32) -> bool {
    caps & (1u64 << cap) != 0 || (cap == BPF && caps & (1u64 << SYS_ADMIN) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_capabilities_are_read_from_proc_status() {
        let status = "Name:\tlinerate\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(from_status(status), Some(0x1ff_ffff_ffff));
        assert_eq!(from_status("CapEff:\t0000000000000000\n"), Some(0));
        assert_eq!(from_status("Name: x\n"), None);
    }

    #[test]
    fn cap_sys_admin_stands_for_cap_bpf_alone() {
        let admin = 1u64 << SYS_ADMIN;
        assert!(holds(admin, BPF));
        assert!(!holds(admin, NET_RAW));
        assert!(holds(1u64 << BPF, BPF));
        assert!(!holds(0, BPF));
    }
}
