use std::ffi::CString;

pub(super) fn uname() -> Option<super::Uname> {
    super::libc_uname()
}

fn sysctl_string(name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    let mut len: libc::size_t = 0;
    // SAFETY: a null buffer with a valid length pointer asks only for the size.
    let rc = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            std::ptr::null_mut(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` has `len` writable bytes and the kernel writes at most `len`, updating it.
    let rc = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    buf.truncate(len);
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

#[cfg(target_os = "macos")]
pub(super) fn os_name() -> Option<String> {
    sysctl_string("kern.osproductversion").map(|v| format!("macOS {v}"))
}

#[cfg(target_os = "freebsd")]
pub(super) fn os_name() -> Option<String> {
    sysctl_string("kern.ostype")
}

pub(super) fn kernel_release() -> Option<String> {
    sysctl_string("kern.osrelease")
}

pub(super) fn cpu_model() -> Option<String> {
    // Intel Macs and Apple silicon both answer brand_string; FreeBSD names the CPU in hw.model.
    sysctl_string("machdep.cpu.brand_string").or_else(|| sysctl_string("hw.model"))
}

pub(super) fn interface_driver(_interface: &str) -> Option<String> {
    None
}

pub(super) fn interface_link_speed_mbps(_interface: &str) -> Option<u64> {
    None
}
