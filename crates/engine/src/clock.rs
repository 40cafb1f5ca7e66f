//! The clock the signature's transmit stamps are read from: the same one the receive program
//! reads (`bpf_ktime_get_ns` is CLOCK_MONOTONIC, `bpf_ktime_get_tai_ns` CLOCK_TAI).

/// Nanoseconds on CLOCK_MONOTONIC, or on CLOCK_TAI when `tai` (two hosts that PTP keeps together).
#[inline]
pub fn now_ns(tai: bool) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we own; both clock ids exist on every
    // kernel linerate runs on (CLOCK_TAI since 2.6.26), so it cannot fail.
    unsafe { libc::clock_gettime(clock_id(tai), &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_os = "linux")]
fn clock_id(tai: bool) -> libc::clockid_t {
    if tai {
        libc::CLOCK_TAI
    } else {
        libc::CLOCK_MONOTONIC
    }
}

/// Only Linux has CLOCK_TAI; the CLI refuses `--clock tai` elsewhere.
#[cfg(not(target_os = "linux"))]
fn clock_id(_tai: bool) -> libc::clockid_t {
    libc::CLOCK_MONOTONIC
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_clock_moves_forward() {
        let a = super::now_ns(false);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = super::now_ns(false);
        assert!(b >= a + 2_000_000, "{a} {b}");
    }
}
