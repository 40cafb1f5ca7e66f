//! What an interface is: index, MTU, MAC, driver, speed, queue count, up or down — from sysfs,
//! plus the ethtool driver-info ioctl for virtual devices that have no `device/driver` link.

use std::ffi::CString;
use std::fs;
use std::path::PathBuf;

use linerate_port::{LinkSpeed, PortInfo};

use crate::AfXdpError;

/// The facts `XskPort::open` gathers once.
#[derive(Debug, Clone)]
pub(crate) struct Interface {
    pub(crate) ifindex: u32,
    pub(crate) up: bool,
    pub(crate) info: PortInfo,
}

impl Interface {
    pub(crate) fn lookup(name: &str) -> Result<Self, AfXdpError> {
        // A name that could escape /sys/class/net or that the kernel cannot hold is no interface.
        if name.is_empty()
            || name.len() >= libc::IFNAMSIZ
            || name.contains(['/', '\0'])
            || name == "."
            || name == ".."
        {
            return Err(AfXdpError::NoSuchInterface(name.into()));
        }
        let cname = CString::new(name).map_err(|_| AfXdpError::NoSuchInterface(name.into()))?;
        // SAFETY: cname is a valid NUL-terminated string that outlives the call.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(AfXdpError::NoSuchInterface(name.into()));
        }
        let dir = PathBuf::from("/sys/class/net").join(name);
        let read = |file: &str| -> Option<String> {
            fs::read_to_string(dir.join(file))
                .ok()
                .map(|s| s.trim().to_owned())
        };
        let mtu = read("mtu")
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| AfXdpError::NoSuchInterface(name.into()))?;
        let flags = read("flags")
            .and_then(|s| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0);
        let mac = read("address").and_then(|s| parse_mac(&s));
        let driver = fs::read_link(dir.join("device/driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .or_else(|| ethtool_driver(&cname));
        // veth reports a nominal 10000 Mb/s that bounds nothing: a line rate from it would lie.
        let link_speed = read("speed")
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|&mbps| mbps > 0 && driver.as_deref() != Some("veth"))
            .map(|mbps| LinkSpeed::from_mbps(mbps as u64));
        let queues = count_queues(&dir);
        Ok(Self {
            ifindex,
            up: flags & libc::IFF_UP as u32 != 0,
            info: PortInfo {
                name: name.into(),
                mac,
                mtu,
                link_speed,
                queues,
                driver,
                backend: "afxdp",
            },
        })
    }
}

/// Queues an AF_XDP socket can bind: the kernel wants the id below both the real TX and the
/// real RX queue count, so the smaller of the two (`queues/tx-*`, `queues/rx-*`).
fn count_queues(dir: &std::path::Path) -> u32 {
    let (mut tx, mut rx) = (0u32, 0u32);
    if let Ok(entries) = fs::read_dir(dir.join("queues")) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("tx-") {
                tx += 1;
            } else if name.starts_with("rx-") {
                rx += 1;
            }
        }
    }
    match (tx, rx) {
        (0, _) => 1,
        (tx, 0) => tx,
        (tx, rx) => tx.min(rx),
    }
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for byte in &mut mac {
        *byte = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// `struct ethtool_drvinfo` from linux/ethtool.h (not in libc).
#[repr(C)]
struct EthtoolDrvinfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

const ETHTOOL_GDRVINFO: u32 = 0x0000_0003;

/// The driver name through `SIOCETHTOOL`/`ETHTOOL_GDRVINFO` ("veth" for a veth pair).
fn ethtool_driver(name: &CString) -> Option<String> {
    let mut info = EthtoolDrvinfo {
        cmd: ETHTOOL_GDRVINFO,
        driver: [0; 32],
        version: [0; 32],
        fw_version: [0; 32],
        bus_info: [0; 32],
        erom_version: [0; 32],
        reserved2: [0; 12],
        n_priv_flags: 0,
        n_stats: 0,
        testinfo_len: 0,
        eedump_len: 0,
        regdump_len: 0,
    };
    // SAFETY: ifreq is plain C data for which all-zero bytes are a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in ifr.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_data = (&mut info as *mut EthtoolDrvinfo).cast();
    // SAFETY: socket() takes no pointers.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: ifr names the interface (NUL-terminated: the name is shorter than IFNAMSIZ) and
    // points at a live, writable ethtool_drvinfo that the kernel fills.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL as _, &mut ifr) };
    // SAFETY: fd is ours and closed once.
    unsafe { libc::close(fd) };
    if rc < 0 {
        return None;
    }
    let end = info.driver.iter().position(|&b| b == 0).unwrap_or(32);
    let driver = String::from_utf8_lossy(&info.driver[..end]).into_owned();
    (!driver.is_empty()).then_some(driver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_macs() {
        assert_eq!(
            parse_mac("02:00:0a:ff:10:01"),
            Some([0x02, 0, 0x0a, 0xff, 0x10, 0x01])
        );
        assert_eq!(parse_mac("02:00:0a:ff:10"), None);
        assert_eq!(parse_mac("02:00:0a:ff:10:01:02"), None);
        assert_eq!(parse_mac("zz:00:0a:ff:10:01"), None);
    }

    #[test]
    fn unknown_and_hostile_names_are_no_interface() {
        for name in ["", "..", "a/b", "no-such-if-xyz", "0123456789abcdefg"] {
            assert!(matches!(
                Interface::lookup(name),
                Err(AfXdpError::NoSuchInterface(_))
            ));
        }
    }

    #[test]
    fn loopback_is_found() {
        let lo = Interface::lookup("lo").unwrap();
        assert_eq!(lo.info.name, "lo");
        assert!(lo.ifindex > 0);
        assert!(lo.info.mtu > 0);
        assert!(lo.info.queues >= 1);
    }
}
