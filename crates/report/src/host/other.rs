pub(super) fn uname() -> Option<super::Uname> {
    None
}

pub(super) fn os_name() -> Option<String> {
    Some(std::env::consts::OS.to_string())
}

pub(super) fn kernel_release() -> Option<String> {
    None
}

pub(super) fn cpu_model() -> Option<String> {
    None
}

pub(super) fn interface_driver(_interface: &str) -> Option<String> {
    None
}

pub(super) fn interface_link_speed_mbps(_interface: &str) -> Option<u64> {
    None
}
