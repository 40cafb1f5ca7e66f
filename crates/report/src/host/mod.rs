//! Facts about the machine a sweep ran on, for the result's context.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::result::Context;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as platform;

#[cfg(any(target_os = "macos", target_os = "freebsd"))]
mod bsd;
#[cfg(any(target_os = "macos", target_os = "freebsd"))]
use bsd as platform;

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")))]
use other as platform;

/// The operating system, kernel, CPU and name of this machine. Fields that cannot be read are
/// `"unknown"` rather than an error: a missing CPU name must not cost a sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostInfo {
    pub os: String,
    pub kernel: String,
    pub cpu_model: String,
    pub hostname: String,
}

impl HostInfo {
    pub fn collect() -> Self {
        let known = |s: Option<String>| {
            s.map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "unknown".to_string())
        };
        let uname = platform::uname();
        Self {
            os: known(platform::os_name().or_else(|| uname.as_ref().map(|u| u.sysname.clone()))),
            kernel: known(
                platform::kernel_release().or_else(|| uname.as_ref().map(|u| u.release.clone())),
            ),
            cpu_model: known(platform::cpu_model()),
            hostname: known(uname.map(|u| u.nodename)),
        }
    }
}

/// The driver bound to `interface`, where the OS tells it (Linux: sysfs, or ethtool for a
/// virtual device such as veth).
pub fn interface_driver(interface: &str) -> Option<String> {
    platform::interface_driver(interface)
}

/// The negotiated link speed of `interface` in Mbps, or `None` for virtual devices such as veth,
/// whose reported speed is made up.
pub fn interface_link_speed_mbps(interface: &str) -> Option<u64> {
    platform::interface_link_speed_mbps(interface)
}

#[derive(Debug, Clone)]
#[cfg_attr(
    not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")),
    allow(dead_code)
)]
struct Uname {
    sysname: String,
    release: String,
    nodename: String,
}

#[cfg(unix)]
fn libc_uname() -> Option<Uname> {
    use std::ffi::CStr;
    // SAFETY: utsname is plain old data of C char arrays, so all zeroes is a valid value.
    let mut buf: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `buf` is a valid, writable utsname for the duration of the call.
    if unsafe { libc::uname(&mut buf) } != 0 {
        return None;
    }
    let field = |chars: &[libc::c_char]| {
        // SAFETY: uname NUL-terminates each field within its array, and the array lives in `buf`.
        unsafe { CStr::from_ptr(chars.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    Some(Uname {
        sysname: field(&buf.sysname),
        release: field(&buf.release),
        nodename: field(&buf.nodename),
    })
}

impl Context {
    /// A context with this machine's facts and the current date filled in; the caller sets what
    /// only the run knows (driver, link speed, cores, queues, duration, repeat, warm-up).
    pub fn collect(linerate_version: &str, backend: &str, mode: &str, interface: &str) -> Self {
        let host = HostInfo::collect();
        Self {
            linerate_version: linerate_version.to_string(),
            backend: backend.to_string(),
            mode: mode.to_string(),
            interface: interface.to_string(),
            driver: None,
            link_speed_mbps: None,
            os: host.os,
            kernel: host.kernel,
            cpu_model: host.cpu_model,
            cores: Vec::new(),
            queues: Vec::new(),
            date: rfc3339_utc(SystemTime::now()),
            hostname: host.hostname,
            duration_s: 0.0,
            repeat: 0,
            warmup_s: 0.0,
            backend_choice: None,
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ`, computed by hand so the crate needs no date library.
pub fn rfc3339_utc(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian, day 0 = 1970-01-01).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_of_known_instants() {
        let at = |secs| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_709_210_096), "2024-02-29T12:34:56Z");
        assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn collect_fills_the_host_fields() {
        let context = Context::collect("0.1.0", "afxdp", "copy", "lr0");
        assert!(!context.os.is_empty() && !context.kernel.is_empty());
        assert!(!context.hostname.is_empty() && !context.cpu_model.is_empty());
        assert_eq!(context.date.len(), 20, "{}", context.date);
        #[cfg(target_os = "linux")]
        {
            assert_ne!(context.kernel, "unknown");
            assert_ne!(context.hostname, "unknown");
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn loopback_has_no_driver_and_no_link_speed() {
        assert_eq!(interface_driver("lo"), None);
        assert_eq!(interface_link_speed_mbps("lo"), None);
    }
}
