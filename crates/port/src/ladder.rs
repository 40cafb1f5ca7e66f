//! `--backend auto`: the backend a user would pick by hand for an interface, decided from its
//! facts before the run — AF_XDP zero-copy where the driver binds it, else live frames (Linux
//! 5.18+ and a driver that takes redirected XDP frames), else AF_XDP in copy mode, else
//! AF_PACKET — with the one line that says why. Pure logic: the facts are read elsewhere (sysfs,
//! the driver's XDP features, the kernel release), so every decision is tested from recorded
//! facts.

/// `NETDEV_XDP_ACT_*` bits the ladder reads (include/uapi/linux/netdev.h).
pub mod xdp_act {
    /// Native XDP (the driver runs programs itself).
    pub const BASIC: u64 = 1 << 0;
    /// The driver takes redirected frames (`ndo_xdp_xmit`): what live frames need.
    pub const NDO_XMIT: u64 = 1 << 2;
    pub const XSK_ZEROCOPY: u64 = 1 << 3;
}

/// The first kernel with live XDP frames (`BPF_F_TEST_XDP_LIVE_FRAMES`).
pub const LIVE_KERNEL: (u32, u32) = (5, 18);

/// What the ladder reads about an interface and the kernel under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortFacts {
    /// The interface's name, for the reason line.
    pub name: String,
    /// The driver bound to it ("veth", "ice", "mlx5_core", …).
    pub driver: Option<String>,
    /// `NETDEV_XDP_ACT_*` as the driver reports them (Linux 6.3+); `None` where the kernel
    /// does not say.
    pub xdp_features: Option<u64>,
    /// No device behind it (veth, bridge, dummy, …).
    pub virtual_device: bool,
    /// `major.minor` of the running kernel.
    pub kernel: (u32, u32),
    /// The kernel has AF_XDP sockets (`socket(AF_XDP)` opens).
    pub af_xdp: bool,
    /// Queues an AF_XDP socket can bind (`Interface::bindable_queues`): one socket a queue.
    pub queues: u32,
}

/// What a run asks of its port, as far as the ladder weighs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunAsks<'a> {
    /// Transmit workers: on AF_XDP a socket each, on a queue each.
    pub workers: usize,
    /// `--queues` named the AF_XDP queues: the workers bind those, however many the interface
    /// has.
    pub queues_named: bool,
    /// Why live cannot take this run, when it cannot: known before the port opens (more workers
    /// than its program serves, AF_XDP queues named) or said by live itself (a plan it cannot
    /// lay out, a link that drops redirected frames). The ladder then goes on down.
    pub live_refuses: Option<&'a str>,
}

/// A rung of the ladder: what `auto` opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// AF_XDP where the driver binds zero-copy (its bind ladder still reports the mode).
    AfxdpZeroCopy,
    Live,
    AfxdpCopy,
    Afpacket,
}

impl Rung {
    /// The backend this rung opens, as `--backend` names it.
    pub fn backend(self) -> &'static str {
        match self {
            Rung::AfxdpZeroCopy | Rung::AfxdpCopy => "afxdp",
            Rung::Live => "live",
            Rung::Afpacket => "afpacket",
        }
    }
}

/// What `auto` chose and why, in one line for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub rung: Rung,
    pub why: String,
}

/// The report's line: `backend live: lr0 (veth) has no AF_XDP zero-copy; …`.
impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "backend {}: {}", self.rung.backend(), self.why)
    }
}

/// The first rung these facts allow for a run that asks what `run` says.
pub fn choose(facts: &PortFacts, run: &RunAsks<'_>) -> Choice {
    let who = match &facts.driver {
        Some(d) => format!("{} ({d})", facts.name),
        None => facts.name.clone(),
    };
    let (major, minor) = facts.kernel;
    // AF_XDP binds a socket a queue: more workers than the interface has queues (none named)
    // would fail at the run's first bind past them; AF_PACKET's sockets share one.
    let queues = facts.queues.max(1);
    let too_few_queues = (!run.queues_named && run.workers > queues as usize).then(|| {
        format!(
            "{} workers need an AF_XDP queue each and it has {queues}",
            run.workers
        )
    });
    let zero_copy = match facts.xdp_features {
        Some(f) => f & xdp_act::XSK_ZEROCOPY != 0,
        // Before 6.3 the kernel does not say: a NIC may well bind zero-copy, and AF_XDP's own
        // ladder falls back to copy mode (and says so) where it does not.
        None => !facts.virtual_device && facts.af_xdp,
    };
    if zero_copy && facts.af_xdp && too_few_queues.is_none() {
        let why = match facts.xdp_features {
            Some(_) => format!("{who} binds AF_XDP zero-copy, the fastest path"),
            None => format!(
                "{who} is a NIC on a kernel that does not report XDP features (6.3+): AF_XDP tries zero-copy first"
            ),
        };
        return Choice {
            rung: Rung::AfxdpZeroCopy,
            why,
        };
    }
    // Short of queues, a zero-copy NIC is taken as one without: live's workers share the link.
    let no_zc = match &too_few_queues {
        Some(few) if zero_copy && facts.af_xdp => {
            format!("{who} binds AF_XDP zero-copy, but {few}")
        }
        _ => format!("{who} has no AF_XDP zero-copy"),
    };
    let takes_frames = facts
        .xdp_features
        .is_none_or(|f| f & xdp_act::NDO_XMIT != 0);
    // A NIC with native XDP that takes redirected frames only while a program is attached
    // (virtio_net): live lends it one, but its ndo_xdp_xmit drops what its ring cannot hold
    // with no backpressure (measured in a virtio guest: 5,744 of 20,000 left at full rate),
    // where AF_XDP's ring makes the sender wait.
    let lends = facts
        .xdp_features
        .is_some_and(|f| f & xdp_act::NDO_XMIT == 0 && f & xdp_act::BASIC != 0)
        && !facts.virtual_device;
    let not_live = if facts.kernel < LIVE_KERNEL {
        format!("kernel {major}.{minor} has no live frames (5.18+)")
    } else if lends {
        "live (--backend live) would drop the frames its XDP transmit ring cannot hold: its \
         ndo_xdp_xmit has no backpressure"
            .to_owned()
    } else if !takes_frames {
        "its driver does not take redirected XDP frames (no ndo_xdp_xmit) for live".to_owned()
    } else if let Some(why) = run.live_refuses {
        format!("live cannot send this: {why}")
    } else {
        let why = if zero_copy && facts.af_xdp {
            format!("{no_zc}; live frames take any number of workers on one link")
        } else {
            format!(
                "{no_zc}; live frames are several times AF_XDP's copy path there (6.5–9.6× on veth, docs/performance.md)"
            )
        };
        return Choice {
            rung: Rung::Live,
            why,
        };
    };
    match (facts.af_xdp, too_few_queues) {
        (true, None) => Choice {
            rung: Rung::AfxdpCopy,
            why: format!("{no_zc} and {not_live}: AF_XDP in copy mode"),
        },
        (true, Some(_)) if zero_copy => Choice {
            rung: Rung::Afpacket,
            why: format!("{no_zc}, and {not_live}: AF_PACKET"),
        },
        (true, Some(few)) => Choice {
            rung: Rung::Afpacket,
            why: format!("{no_zc}, {not_live}, and {few}: AF_PACKET"),
        },
        (false, _) => Choice {
            rung: Rung::Afpacket,
            why: format!("{no_zc}, {not_live}, and this kernel has no AF_XDP: AF_PACKET"),
        },
    }
}

/// `major.minor` of a kernel release such as `6.18.44-fc`.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded facts: what `linerate ports` reads on each kind of interface.
    fn facts(driver: &str, features: Option<u64>, virtual_device: bool, kernel: &str) -> PortFacts {
        PortFacts {
            name: "eth1".into(),
            driver: Some(driver.into()),
            xdp_features: features,
            virtual_device,
            kernel: kernel_version(kernel).unwrap(),
            af_xdp: true,
            queues: 1,
        }
    }

    /// A plain run: one worker, nothing live refuses.
    const ONE: RunAsks<'static> = RunAsks {
        workers: 1,
        queues_named: false,
        live_refuses: None,
    };

    // veth on 6.18 with its peer's XDP program: BASIC | REDIRECT | NDO_XMIT | RX_SG | NDO_XMIT_SG.
    const VETH: u64 = 0x1 | 0x2 | 0x4 | 0x20 | 0x40;
    // ice: everything, zero-copy included.
    const ICE: u64 = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40;

    #[test]
    fn a_zero_copy_driver_gets_afxdp() {
        let c = choose(&facts("ice", Some(ICE), false, "6.18.0"), &ONE);
        assert_eq!(c.rung, Rung::AfxdpZeroCopy);
        assert!(
            c.why.contains("eth1 (ice) binds AF_XDP zero-copy"),
            "{}",
            c.why
        );
    }

    #[test]
    fn veth_gets_live_and_says_why() {
        let c = choose(&facts("veth", Some(VETH), true, "6.18.44-fc"), &ONE);
        assert_eq!(c.rung, Rung::Live);
        assert!(
            c.why
                .starts_with("eth1 (veth) has no AF_XDP zero-copy; live"),
            "{}",
            c.why
        );
    }

    #[test]
    fn an_old_kernel_gets_afxdp_copy() {
        let c = choose(&facts("veth", None, true, "5.15.0-91-generic"), &ONE);
        assert_eq!(c.rung, Rung::AfxdpCopy);
        assert!(
            c.why.contains("kernel 5.15 has no live frames"),
            "{}",
            c.why
        );
    }

    #[test]
    fn a_nic_on_a_kernel_without_features_tries_zero_copy() {
        let c = choose(&facts("ixgbe", None, false, "6.1.0"), &ONE);
        assert_eq!(c.rung, Rung::AfxdpZeroCopy);
        assert!(c.why.contains("tries zero-copy first"), "{}", c.why);
    }

    #[test]
    fn a_driver_without_xdp_gets_afxdp_copy_then_afpacket() {
        // A dummy or bond: no XDP at all, so nothing takes redirected frames.
        let mut f = facts("dummy", Some(0), true, "6.18.0");
        let c = choose(&f, &ONE);
        assert_eq!(c.rung, Rung::AfxdpCopy);
        assert!(c.why.contains("no ndo_xdp_xmit"), "{}", c.why);
        f.af_xdp = false;
        let c = choose(&f, &ONE);
        assert_eq!(c.rung, Rung::Afpacket);
        assert!(
            c.why.ends_with("this kernel has no AF_XDP: AF_PACKET"),
            "{}",
            c.why
        );
    }

    #[test]
    fn virtio_net_gets_afxdp_copy_and_says_live_would_drop() {
        // virtio_net on 6.12 without a program: BASIC | REDIRECT | RX_SG, no NDO_XMIT.
        let c = choose(
            &facts("virtio_net", Some(0x1 | 0x2 | 0x20), false, "6.12.118"),
            &ONE,
        );
        assert_eq!(c.rung, Rung::AfxdpCopy);
        assert!(
            c.why.contains(
                "eth1 (virtio_net) has no AF_XDP zero-copy and live (--backend live) would drop"
            ),
            "{}",
            c.why
        );
    }

    #[test]
    fn a_plan_live_refuses_goes_down_a_rung() {
        let c = choose(
            &facts("veth", Some(VETH), true, "6.18.0"),
            &RunAsks {
                live_refuses: Some("streamed frames over 2048 B"),
                ..ONE
            },
        );
        assert_eq!(c.rung, Rung::AfxdpCopy);
        assert!(
            c.why
                .contains("live cannot send this: streamed frames over 2048 B"),
            "{}",
            c.why
        );
    }

    /// AF_XDP binds a socket a queue: more workers than the queues go to AF_PACKET, whose
    /// sockets share one, with the counts in the reason; named queues are the user's to fit.
    #[test]
    fn more_workers_than_queues_go_to_afpacket_unless_queues_are_named() {
        let mut ice = facts("ice", Some(ICE), false, "6.18.0");
        ice.queues = 4;
        let four = RunAsks { workers: 4, ..ONE };
        assert_eq!(choose(&ice, &four).rung, Rung::AfxdpZeroCopy);
        // Eight workers on four queues: live frames, whose workers share the link; where live
        // cannot go either, AF_PACKET.
        let eight = RunAsks { workers: 8, ..ONE };
        let c = choose(&ice, &eight);
        assert_eq!(c.rung, Rung::Live);
        assert_eq!(
            c.why,
            "eth1 (ice) binds AF_XDP zero-copy, but 8 workers need an AF_XDP queue each and it has 4; live frames take any number of workers on one link"
        );
        let mut old_kernel = ice.clone();
        old_kernel.kernel = (5, 15);
        let c = choose(&old_kernel, &eight);
        assert_eq!(c.rung, Rung::Afpacket);
        assert_eq!(
            c.why,
            "eth1 (ice) binds AF_XDP zero-copy, but 8 workers need an AF_XDP queue each and it has 4, and kernel 5.15 has no live frames (5.18+): AF_PACKET"
        );
        let named = RunAsks {
            queues_named: true,
            ..eight
        };
        assert_eq!(choose(&ice, &named).rung, Rung::AfxdpZeroCopy);
        // A one-queue veth whose kernel refuses live frames: two workers.
        let veth = facts("veth", Some(VETH), true, "6.18.0");
        let c = choose(
            &veth,
            &RunAsks {
                workers: 2,
                live_refuses: Some("this kernel refused live frames"),
                ..ONE
            },
        );
        assert_eq!(c.rung, Rung::Afpacket);
        assert!(
            c.why.ends_with(
                "live cannot send this: this kernel refused live frames, and 2 workers need an AF_XDP queue each and it has 1: AF_PACKET"
            ),
            "{}",
            c.why
        );
        // Live takes them, one socket or not.
        assert_eq!(
            choose(&veth, &RunAsks { workers: 2, ..ONE }).rung,
            Rung::Live
        );
    }

    #[test]
    fn kernel_releases_parse() {
        assert_eq!(kernel_version("6.18.44-fc\n"), Some((6, 18)));
        assert_eq!(kernel_version("5.18"), Some((5, 18)));
        assert_eq!(kernel_version("5.4.0-150-generic"), Some((5, 4)));
        assert_eq!(kernel_version("garbage"), None);
    }
}
