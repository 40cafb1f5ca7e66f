//! The live port: what the kernel and the driver must offer (live frames, ndo_xdp_xmit), probed
//! once at open, and what sysfs says about the interface.

use linerate_xdp::{xdp_act, xdp_features};

use super::program::{load, program, test_run, xdp_ctx};
use crate::LiveError;

/// An interface that can take live XDP frames.
#[derive(Debug, Clone)]
pub struct LivePort {
    iface: String,
    ifindex: u32,
    kernel: String,
    info: linerate_port::PortInfo,
    /// The pass program attached to the interface itself for as long as the port lives, on a
    /// driver that takes redirected frames only while some program is attached (virtio_net
    /// sets up its XDP transmit queues then); None where none was needed.
    lent: Option<std::sync::Arc<linerate_xdp::PassLink>>,
}

impl LivePort {
    /// Checks that the kernel runs live frames (one probe frame, dropped by the probe program)
    /// and, on kernels that report XDP features (6.3+), that the driver of `iface` implements
    /// ndo_xdp_xmit. Nothing is sent.
    pub fn open(iface: &str) -> Result<LivePort, LiveError> {
        let ifindex = ifindex(iface)?;
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        let version = parse_version(&kernel);
        if version.is_some_and(|v| v < (5, 18)) {
            return Err(LiveError::NoLiveFrames { kernel });
        }
        let mut lent = None;
        let object = load(1, None, false)?;
        let probe = program(&object, "live_probe")?;
        let data = [0u8; 64];
        let ctx = xdp_ctx(0, data.len(), ifindex);
        match test_run(probe, &data, &ctx, 1, 0) {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
                return Err(LiveError::NoLiveFrames { kernel });
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
                return Err(refusal(linerate_port::caps::effective(), kernel));
            }
            Err(source) => {
                return Err(LiveError::Run {
                    iface: iface.into(),
                    source,
                });
            }
        }
        if version.is_none_or(|v| v >= (6, 3)) {
            let features = xdp_features(ifindex).map_err(|source| LiveError::Run {
                iface: iface.into(),
                source,
            })?;
            if features & xdp_act::NDO_XMIT == 0 {
                let veth = interface(iface)?.is_veth_like();
                lent = if veth {
                    None
                } else {
                    lend_program(iface, ifindex)?
                };
                if lent.is_none() {
                    return Err(LiveError::NoXdpTransmit {
                        iface: iface.into(),
                        hint: if veth {
                            " (a veth takes XDP frames only while its peer has an XDP program, as the lab's sink)"
                        } else {
                            ""
                        },
                    });
                }
            }
        }
        Ok(LivePort {
            iface: iface.into(),
            ifindex,
            kernel,
            // The frames go out on the CPU that runs the program: "queues" are the CPUs.
            info: interface(iface)?.port_info(
                crate::BACKEND,
                std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            ),
            lent,
        })
    }

    /// Whether the port holds a pass program on the interface so that its driver takes
    /// redirected frames (virtio_net); it goes when the port does.
    pub fn lends_program(&self) -> bool {
        self.lent.is_some()
    }

    /// Frames the driver has dropped from its XDP transmit queues so far, by its own counters
    /// (`ethtool -S`); None where it keeps none that linerate knows.
    pub fn xmit_drops(&self) -> Option<u64> {
        let drops: Vec<u64> = linerate_port::iface::driver_stats(&self.iface)?
            .into_iter()
            .filter(|(name, _)| XMIT_DROPS.contains(&name.as_str()))
            .map(|(_, v)| v)
            .collect();
        (!drops.is_empty()).then(|| drops.iter().sum())
    }

    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// Why frames redirected to the interface now would be dropped: it is administratively
    /// down, or has no carrier (a veth whose peer is down), or is gone. None: it can carry them.
    pub fn not_running(&self) -> Option<String> {
        // Asked of the kernel on a socket, not read from sysfs: a port in another namespace is
        // run from a thread inside it, where sysfs still shows the process's own.
        let Some(flags) = linerate_port::iface::link_flags(&self.iface) else {
            return Some("gone".into());
        };
        if flags & libc::IFF_UP as u32 == 0 {
            return Some("down".into());
        }
        // IFF_RUNNING: operationally up, which a link without carrier is not (SIOCGIFFLAGS
        // carries 16 bits: IFF_LOWER_UP is not among them).
        if flags & libc::IFF_RUNNING as u32 == 0 {
            return Some("without carrier".into());
        }
        None
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Name, MAC and MTU as sysfs tells them; the frames go out on the CPU that runs the
    /// program, so there are no queues to pick (`queues` is the CPU count).
    pub fn info(&self) -> &linerate_port::PortInfo {
        &self.info
    }

    /// The kernel release the probe ran on.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }
}

/// Driver counters of redirected frames dropped for a full XDP transmit ring: virtio_net's
/// (`virtnet_xdp_xmit`; the per-queue `txN_xdp_tx_drops` add up to it).
const XMIT_DROPS: &[&str] = &["tx_xdp_tx_drops"];

/// A pass program attached (driver mode, through a bpf_link) to an interface whose driver
/// offers ndo_xdp_xmit only while a program is attached: virtio_net allocates its XDP transmit
/// queues and sets NETDEV_XDP_ACT_NDO_XMIT in `virtnet_xdp_set` (drivers/net/virtio_net.c,
/// `xdp_features_set_redirect_target`), and clears both when the program goes. None when the
/// driver has no native XDP, another program holds the hook (it would have set the feature
/// already), or the feature does not follow.
fn lend_program(
    iface: &str,
    ifindex: u32,
) -> Result<Option<std::sync::Arc<linerate_xdp::PassLink>>, LiveError> {
    let Ok(link) = linerate_xdp::attach_pass(ifindex, linerate_xdp::AttachMode::Drv) else {
        return Ok(None);
    };
    let features = xdp_features(ifindex).map_err(|source| LiveError::Run {
        iface: iface.into(),
        source,
    })?;
    Ok((features & xdp_act::NDO_XMIT != 0).then(|| std::sync::Arc::new(link)))
}

/// The one Linux interface description (`linerate_port::iface`), as afxdp, the report and
/// `ports` read it.
fn interface(iface: &str) -> Result<linerate_port::iface::Interface, LiveError> {
    linerate_port::iface::Interface::read(iface).map_err(|_| LiveError::UnknownInterface {
        iface: iface.to_owned(),
    })
}

fn ifindex(iface: &str) -> Result<u32, LiveError> {
    let unknown = || LiveError::UnknownInterface {
        iface: iface.to_owned(),
    };
    if iface.is_empty() || iface.len() >= libc::IFNAMSIZ || iface.contains(['/', '\0']) {
        return Err(unknown());
    }
    nix::net::if_::if_nametoindex(iface).map_err(|_| unknown())
}

/// `major.minor` of a kernel release such as `6.18.44-fc`.
fn parse_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    Some((major, minor))
}

/// Why this kernel refuses live frames to a process holding the capabilities they need
/// ([`LiveError::LiveFramesRefused`]'s line), probed on the loopback (nothing is sent: the
/// probe's program drops its frame, and lo takes no redirected frames). None where the
/// kernel runs them, and where the probe fails otherwise (not root: the caller's own run meets
/// that).
pub fn kernel_refuses_live_frames() -> Option<String> {
    match LivePort::open("lo") {
        Err(e @ LiveError::LiveFramesRefused { .. }) => Some(e.to_string()),
        _ => None,
    }
}

/// For a test that sends live frames: false, after saying why, where this kernel refuses them
/// to root (nothing of the test can run there, under CI or not); true anywhere else.
pub fn live_frames_or_skip(test: &str) -> bool {
    match kernel_refuses_live_frames() {
        Some(why) => {
            eprintln!("SKIPPED {test}: {why}");
            false
        }
        None => true,
    }
}

/// What a kernel's "not permitted" to the live probe means: the process lacks the
/// capabilities (`caps`, its effective set; None when unknown), or holds them and the kernel
/// forbids live frames all the same (seen on a 6.18 kernel whose root held every capability
/// but CAP_SYS_RESOURCE).
fn refusal(caps: Option<u64>, kernel: String) -> LiveError {
    use linerate_port::caps::{BPF, NET_ADMIN, SYS_ADMIN, holds};
    match caps {
        Some(c) if [BPF, NET_ADMIN, SYS_ADMIN].iter().all(|&k| holds(c, k)) => {
            LiveError::LiveFramesRefused { kernel }
        }
        _ => LiveError::NotRoot {
            what: "running a BPF program".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_parse() {
        assert_eq!(parse_version("6.18.44-fc-v657"), Some((6, 18)));
        assert_eq!(parse_version("5.4.0-150-generic"), Some((5, 4)));
        assert_eq!(parse_version("5.18"), Some((5, 18)));
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn not_permitted_is_not_root_only_without_the_capabilities() {
        let kernel = || "6.18.44".to_owned();
        let root_but_resource = 0x1ff_ffff_ffff & !(1u64 << 24);
        assert!(matches!(
            refusal(Some(root_but_resource), kernel()),
            LiveError::LiveFramesRefused { .. }
        ));
        let bpf_and_admin = 1u64 << 39 | 1 << 12 | 1 << 21;
        assert!(matches!(
            refusal(Some(bpf_and_admin), kernel()),
            LiveError::LiveFramesRefused { .. }
        ));
        for caps in [None, Some(0), Some(1u64 << 39 | 1 << 12)] {
            assert!(matches!(refusal(caps, kernel()), LiveError::NotRoot { .. }));
        }
    }
}
