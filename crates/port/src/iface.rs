//! What a Linux interface is, read once from sysfs: the one description the AF_XDP and live
//! backends, the report's host facts and `linerate ports` share, so that "virtual", "queues" and
//! "speed" mean the same thing everywhere.

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

use crate::{LinkSpeed, PortError, PortInfo};

/// Where the kernel lists its network interfaces.
pub const SYSFS_NET: &str = "/sys/class/net";

/// One network interface as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub ifindex: u32,
    pub mac: Option<[u8; 6]>,
    pub mtu: u32,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// The driver bound to the device, or for a virtual device the one ethtool names ("veth").
    pub driver: Option<String>,
    /// No device behind it (veth, bridge, tun, dummy, …): the kernel made it up. The one rule:
    /// the interface has no `device` link in sysfs.
    pub virtual_device: bool,
    /// Linked to another interface (`iflink` ≠ `ifindex`): a veth's peer, a VLAN's parent.
    pub has_link: bool,
    /// An Ethernet-type link (`type` is `ARPHRD_ETHER`: NICs, veth, VLANs, bonds, dummies).
    pub ethernet: bool,
    pub tx_queues: u32,
    pub rx_queues: u32,
    /// The negotiated speed; `None` when unknown or for a virtual device, whose reported speed
    /// (veth says 10000) bounds nothing and would make a line rate lie.
    pub speed: Option<LinkSpeed>,
    /// `NETDEV_XDP_ACT_*` flags the driver reports (Linux 6.3+). Sysfs does not hold them:
    /// `None` until `linerate_xdp::interface` asks the kernel.
    pub xdp_features: Option<u64>,
}

impl Interface {
    /// Reads `name` from the live sysfs, asking ethtool for the driver of a virtual device.
    /// On a thread that entered another network namespace (a port named `IFACE@NETNS`), sysfs
    /// still shows the process's own: the kernel is asked through the thread's sockets instead.
    pub fn read(name: &str) -> Result<Self, PortError> {
        if in_other_netns() {
            return Self::read_by_ioctl(name);
        }
        let mut iface = Self::read_in(Path::new(SYSFS_NET), name)?;
        if iface.driver.is_none() {
            iface.driver = ethtool_driver(name);
        }
        Ok(iface)
    }

    /// Reads `name` under `root` (a directory laid out as `/sys/class/net`), sysfs only.
    pub fn read_in(root: &Path, name: &str) -> Result<Self, PortError> {
        let unknown = || PortError::NoSuchInterface(name.into());
        // A name that could escape the directory or that the kernel cannot hold is no interface.
        if name.is_empty()
            || name.len() >= libc::IFNAMSIZ
            || name.contains(['/', '\0'])
            || name == "."
            || name == ".."
        {
            return Err(unknown());
        }
        let dir: PathBuf = root.join(name);
        let read = |file: &str| -> Option<String> {
            fs::read_to_string(dir.join(file))
                .ok()
                .map(|s| s.trim().to_owned())
        };
        let ifindex: u32 = read("ifindex")
            .and_then(|s| s.parse().ok())
            .filter(|&i| i > 0)
            .ok_or_else(unknown)?;
        let mtu = read("mtu")
            .and_then(|s| s.parse().ok())
            .ok_or_else(unknown)?;
        let flags = read("flags")
            .and_then(|s| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0);
        let virtual_device = fs::symlink_metadata(dir.join("device")).is_err();
        let driver = fs::read_link(dir.join("device/driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        let speed = read("speed")
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|&mbps| mbps > 0 && !virtual_device)
            .map(|mbps| LinkSpeed::from_mbps(mbps as u64));
        let has_link = read("iflink")
            .and_then(|s| s.parse::<u32>().ok())
            .is_some_and(|link| link != ifindex);
        let ethernet = read("type").is_some_and(|t| t == libc::ARPHRD_ETHER.to_string());
        let (tx_queues, rx_queues) = count_queues(&dir);
        Ok(Self {
            name: name.into(),
            ifindex,
            mac: read("address").and_then(|s| linerate_wire::parse_mac(&s).ok()),
            mtu,
            up: flags & libc::IFF_UP as u32 != 0,
            driver,
            virtual_device,
            has_link,
            ethernet,
            tx_queues,
            rx_queues,
            speed,
            xdp_features: None,
        })
    }

    /// Every interface under `root`, sorted by name.
    pub fn list_in(root: &Path) -> Result<Vec<Self>, PortError> {
        let entries =
            fs::read_dir(root).map_err(|e| PortError::io(root.display().to_string(), e))?;
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names
            .iter()
            .filter_map(|n| Self::read_in(root, n).ok())
            .collect())
    }

    /// A veth (or another virtual device with a peer).
    pub fn is_veth_like(&self) -> bool {
        self.virtual_device && self.has_link
    }

    /// Queues a queue-bound socket (AF_XDP) can use: the kernel wants the id below both the real
    /// TX and the real RX count, so the smaller of the two, and at least one.
    pub fn bindable_queues(&self) -> u32 {
        match (self.tx_queues, self.rx_queues) {
            (0, _) => 1,
            (tx, 0) => tx,
            (tx, rx) => tx.min(rx),
        }
    }

    /// The facts a port of `backend` reports, with its queue count.
    pub fn port_info(&self, backend: &'static str, queues: u32) -> PortInfo {
        PortInfo {
            name: self.name.clone(),
            mac: self.mac,
            mtu: self.mtu,
            link_speed: self.speed,
            queues,
            driver: self.driver.clone(),
            backend,
        }
    }
}

/// `queues/tx-*` and `queues/rx-*` entries.
/// This thread's network namespace is not the process's (it entered another with setns).
fn in_other_netns() -> bool {
    let ns = |p: &str| fs::read_link(p).ok();
    let (thread, process) = (ns("/proc/thread-self/ns/net"), ns("/proc/self/ns/net"));
    thread.is_some() && process.is_some() && thread != process
}

impl Interface {
    /// The facts sysfs gives, from the kernel's ioctls on a socket of this thread's namespace:
    /// index, MAC, MTU, flags, and from ethtool the driver, whether a bus is behind it, and the
    /// channel counts.
    fn read_by_ioctl(name: &str) -> Result<Self, PortError> {
        let unknown = || PortError::NoSuchInterface(name.into());
        let c_name = CString::new(name).map_err(|_| unknown())?;
        if name.is_empty() || c_name.as_bytes().len() >= libc::IFNAMSIZ {
            return Err(unknown());
        }
        // SAFETY: if_nametoindex reads the NUL-terminated name and nothing else.
        let ifindex = unsafe { libc::if_nametoindex(c_name.as_ptr()) };
        if ifindex == 0 {
            return Err(unknown());
        }
        // SAFETY: ifreq is plain C data; the kernel fills the union member each request names.
        let hwaddr =
            ifreq(name, libc::SIOCGIFHWADDR, |_| {}).map(|r| unsafe { r.ifr_ifru.ifru_hwaddr });
        let mac = hwaddr.map(|a| {
            let d = a.sa_data;
            [d[0], d[1], d[2], d[3], d[4], d[5]].map(|b| b as u8)
        });
        // The address family is the link type, as sysfs's `type`.
        let ethernet = hwaddr.is_some_and(|a| a.sa_family == libc::ARPHRD_ETHER);
        // SAFETY: as above; SIOCGIFMTU fills ifru_mtu.
        let mtu = ifreq(name, libc::SIOCGIFMTU, |_| {})
            .map(|r| unsafe { r.ifr_ifru.ifru_mtu } as u32)
            .ok_or_else(unknown)?;
        // SAFETY: as above; SIOCGIFFLAGS fills ifru_flags.
        let flags = ifreq(name, libc::SIOCGIFFLAGS, |_| {})
            .map_or(0, |r| unsafe { r.ifr_ifru.ifru_flags } as u16 as u32);
        let info = drvinfo(name);
        let driver = info
            .as_ref()
            .map(|i| cstr(&i.driver))
            .filter(|d| !d.is_empty());
        // No bus behind it: what sysfs shows as no `device` link.
        let virtual_device = info.as_ref().is_none_or(|i| cstr(&i.bus_info).is_empty());
        let (tx_queues, rx_queues) = channels(name);
        Ok(Self {
            name: name.into(),
            ifindex,
            mac,
            mtu,
            up: flags & libc::IFF_UP as u32 != 0,
            has_link: driver.as_deref() == Some("veth"),
            ethernet,
            driver,
            virtual_device,
            tx_queues,
            rx_queues,
            // The negotiated speed of a device in another namespace is not asked: % rates there
            // need --link-speed.
            speed: None,
            xdp_features: None,
        })
    }
}

/// `SIOCGIFFLAGS` of `name` in this thread's namespace, its low 16 bits (`IFF_UP`,
/// `IFF_RUNNING` when operationally up, …); None when there is no such interface.
pub fn link_flags(name: &str) -> Option<u32> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return None;
    }
    // SAFETY: SIOCGIFFLAGS fills ifru_flags, a plain short.
    ifreq(name, libc::SIOCGIFFLAGS, |_| {}).map(|r| unsafe { r.ifr_ifru.ifru_flags } as u16 as u32)
}

/// Runs ioctl `request` on `name` with an `ifreq` that `fill` may prepare; the filled ifreq.
fn ifreq(
    name: &str,
    request: libc::c_ulong,
    fill: impl FnOnce(&mut libc::ifreq),
) -> Option<libc::ifreq> {
    // SAFETY: ifreq is plain C data for which all-zero bytes are a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in ifr.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = src as libc::c_char;
    }
    fill(&mut ifr);
    // SAFETY: socket() takes no pointers.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: ifr names the interface (NUL-terminated: callers keep names under IFNAMSIZ) and
    // any pointer `fill` put in it points at live, writable memory the kernel fills.
    let rc = unsafe { libc::ioctl(fd, request as _, &mut ifr) };
    // SAFETY: fd is ours and closed once.
    unsafe { libc::close(fd) };
    (rc >= 0).then_some(ifr)
}

fn cstr(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// `struct ethtool_channels` from linux/ethtool.h (not in libc).
#[repr(C)]
#[derive(Default)]
struct EthtoolChannels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

const ETHTOOL_GCHANNELS: u32 = 0x0000_003c;

/// TX and RX queues from `ETHTOOL_GCHANNELS` (combined channels count for both); (0, 0) when
/// the driver does not say, which [`Interface::bindable_queues`] takes as one.
fn channels(name: &str) -> (u32, u32) {
    let mut ch = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..EthtoolChannels::default()
    };
    let asked = ifreq(name, libc::SIOCETHTOOL, |ifr| {
        ifr.ifr_ifru.ifru_data = (&mut ch as *mut EthtoolChannels).cast();
    });
    match asked {
        Some(_) => (
            ch.tx_count + ch.combined_count,
            ch.rx_count + ch.combined_count,
        ),
        None => (0, 0),
    }
}

fn count_queues(dir: &Path) -> (u32, u32) {
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
    (tx, rx)
}

const ETHTOOL_GSTRINGS: u32 = 0x0000_001b;
const ETHTOOL_GSTATS: u32 = 0x0000_001d;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;

/// The driver's own counters (`ethtool -S`): name and value, in the driver's order; None when
/// it has none or does not answer. virtio_net's `tx_xdp_tx_drops` is where frames redirected
/// into a full XDP transmit ring go: ndo_xdp_xmit drops them and tells the sender nothing.
pub fn driver_stats(name: &str) -> Option<Vec<(String, u64)>> {
    let n = drvinfo(name)?.n_stats as usize;
    if n == 0 {
        return None;
    }
    // struct ethtool_gstrings { u32 cmd, string_set, len; u8 data[len * 32] }, in u64s so the
    // buffer is aligned for the kernel's copy.
    let mut strings = vec![0u64; (12 + n * ETH_GSTRING_LEN).div_ceil(8)];
    let head = [ETHTOOL_GSTRINGS, ETH_SS_STATS, n as u32];
    write_u32s(&mut strings, &head);
    ifreq(name, libc::SIOCETHTOOL, |ifr| {
        ifr.ifr_ifru.ifru_data = strings.as_mut_ptr().cast();
    })?;
    // struct ethtool_stats { u32 cmd, n_stats; u64 data[n_stats] }.
    let mut stats = vec![0u64; 1 + n];
    write_u32s(&mut stats, &[ETHTOOL_GSTATS, n as u32]);
    ifreq(name, libc::SIOCETHTOOL, |ifr| {
        ifr.ifr_ifru.ifru_data = stats.as_mut_ptr().cast();
    })?;
    let bytes: Vec<u8> = strings.iter().flat_map(|w| w.to_ne_bytes()).collect();
    // The driver may have answered with fewer than it said (a count that changed between calls).
    let answered = u32::from_ne_bytes(bytes[8..12].try_into().ok()?) as usize;
    let names = bytes[12..]
        .chunks(ETH_GSTRING_LEN)
        .take(answered.min(n))
        .map(cstr);
    Some(names.zip(stats[1..].iter().copied()).collect())
}

fn write_u32s(buf: &mut [u64], words: &[u32]) {
    for (i, w) in words.iter().enumerate() {
        let (at, half) = (i / 2, i % 2);
        let mut b = buf[at].to_ne_bytes();
        b[half * 4..half * 4 + 4].copy_from_slice(&w.to_ne_bytes());
        buf[at] = u64::from_ne_bytes(b);
    }
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

/// `ETHTOOL_GDRVINFO` of `name`, when the driver answers.
fn drvinfo(name: &str) -> Option<EthtoolDrvinfo> {
    if name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return None;
    }
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
    ifreq(name, libc::SIOCETHTOOL, |ifr| {
        ifr.ifr_ifru.ifru_data = (&mut info as *mut EthtoolDrvinfo).cast();
    })?;
    Some(info)
}

/// The driver name through `SIOCETHTOOL`/`ETHTOOL_GDRVINFO` ("veth" for a veth pair): virtual
/// devices have no `device/driver` link.
fn ethtool_driver(name: &str) -> Option<String> {
    drvinfo(name)
        .map(|i| cstr(&i.driver))
        .filter(|d| !d.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/sys/class/net` entry.
    struct Fake<'a> {
        name: &'a str,
        ifindex: u32,
        iflink: u32,
        speed: &'a str,
        driver: Option<&'a str>,
        queues: (u32, u32),
    }

    fn make(root: &Path, f: &Fake<'_>) {
        let dir = root.join(f.name);
        fs::create_dir_all(dir.join("queues")).unwrap();
        let write =
            |file: &str, text: &str| fs::write(dir.join(file), format!("{text}\n")).unwrap();
        write("ifindex", &f.ifindex.to_string());
        write("iflink", &f.iflink.to_string());
        write("mtu", "1500");
        write("flags", "0x1003");
        write("address", "02:00:0a:ff:10:01");
        write("speed", f.speed);
        write("type", "1");
        if let Some(driver) = f.driver {
            let device = root.join(format!("devices/{}", f.name));
            fs::create_dir_all(&device).unwrap();
            fs::create_dir_all(root.join(format!("drivers/{driver}"))).unwrap();
            std::os::unix::fs::symlink(
                root.join(format!("drivers/{driver}")),
                device.join("driver"),
            )
            .unwrap();
            std::os::unix::fs::symlink(&device, dir.join("device")).unwrap();
        }
        for q in 0..f.queues.0 {
            fs::create_dir(dir.join(format!("queues/tx-{q}"))).unwrap();
        }
        for q in 0..f.queues.1 {
            fs::create_dir(dir.join(format!("queues/rx-{q}"))).unwrap();
        }
    }

    #[test]
    fn a_nic_has_a_driver_a_speed_and_queues() {
        let root = tempfile::tempdir().unwrap();
        let f = Fake {
            name: "eth7",
            ifindex: 7,
            iflink: 7,
            speed: "25000",
            driver: Some("ice"),
            queues: (8, 4),
        };
        make(root.path(), &f);
        let i = Interface::read_in(root.path(), "eth7").unwrap();
        assert_eq!(i.ifindex, 7);
        assert_eq!(i.driver.as_deref(), Some("ice"));
        assert!(!i.virtual_device && !i.has_link && !i.is_veth_like());
        assert_eq!(i.speed.map(LinkSpeed::mbps), Some(25_000));
        assert_eq!((i.tx_queues, i.rx_queues, i.bindable_queues()), (8, 4, 4));
        assert_eq!(i.mac, Some([0x02, 0, 0x0a, 0xff, 0x10, 0x01]));
        assert!(i.up);
        let info = i.port_info("afxdp", i.bindable_queues());
        assert_eq!((info.mtu, info.queues, info.backend), (1500, 4, "afxdp"));
    }

    #[test]
    fn a_veth_is_virtual_and_its_speed_is_ignored() {
        let root = tempfile::tempdir().unwrap();
        let f = Fake {
            name: "lr0",
            ifindex: 12,
            iflink: 11,
            speed: "10000",
            driver: None,
            queues: (2, 0),
        };
        make(root.path(), &f);
        let i = Interface::read_in(root.path(), "lr0").unwrap();
        assert!(i.virtual_device && i.has_link && i.is_veth_like() && i.ethernet);
        assert_eq!(i.speed, None);
        assert_eq!(i.driver, None);
        assert_eq!(i.bindable_queues(), 2);
        let listed = Interface::list_in(root.path()).unwrap();
        assert_eq!(
            listed.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
            ["lr0"]
        );
    }

    #[test]
    fn unknown_and_hostile_names_are_no_interface() {
        let root = tempfile::tempdir().unwrap();
        for name in ["", "..", ".", "a/b", "no-such-if-xyz", "0123456789abcdefg"] {
            assert!(matches!(
                Interface::read_in(root.path(), name),
                Err(PortError::NoSuchInterface(_))
            ));
        }
    }

    #[test]
    fn loopback_is_found_in_the_real_sysfs() {
        let lo = Interface::read("lo").unwrap();
        assert!(lo.ifindex > 0 && lo.mtu > 0 && lo.virtual_device);
        // ARPHRD_LOOPBACK, not Ethernet.
        assert!(!lo.ethernet);
        assert_eq!(lo.speed, None);
    }
}
