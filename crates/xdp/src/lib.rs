//! XDP programs (the sink, a pass-through) built from `bpf/` and their loaders on libbpf-rs.
//! The sink counts and drops what reaches an interface; the pass-through sits on a queue for
//! drivers that refuse zero-copy AF_XDP TX without a program. Programs attach through a bpf_link,
//! so they die with the process unless pinned. On systems other than Linux only the plain data
//! types below exist.

mod error;
#[cfg(target_os = "linux")]
mod linux;

pub use error::XdpError;
#[cfg(target_os = "linux")]
pub use linux::{
    LinkSwap, PassLink, PinnedSink, ReceiveEnd, ReceiveEndLock, Sink, XdpLink, attach_object,
    attach_pass, dut_fwd_object, host_object, ifindex, impair_object, in_netns, in_netns_file,
    interface, link_running, live_tx_object, load_object, load_object_checked, pass_object, pin_fd,
    rx_object, stamp_object, unpin, unpin_link, xdp_features,
};

/// `NETDEV_XDP_ACT_*` (include/uapi/linux/netdev.h): what a driver's XDP can do, as
/// [`xdp_features`] reports it.
pub mod xdp_act {
    pub const BASIC: u64 = 1 << 0;
    pub const REDIRECT: u64 = 1 << 1;
    /// The driver takes redirected frames (`ndo_xdp_xmit`): what the live backend needs.
    pub const NDO_XMIT: u64 = 1 << 2;
    pub const XSK_ZEROCOPY: u64 = 1 << 3;
}

/// What holds a lab's receive end, as the holder wrote it into the end's lock file once it had
/// the lock: what kind of command, and its process id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    pub kind: HolderKind,
    pub pid: u32,
}

/// The kinds of command that hold a lab's receive end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HolderKind {
    /// A run that counts its own frames there (`tx --rx`, `rfc2544`, `serve`): another sender's
    /// frames would spoil its counts.
    Run,
    /// `linerate rx`: counts whatever any sender sends there, so a plain `tx` may send to it.
    Receiver,
    /// `linerate sink`: reads the lab's own sink, which stays on the link.
    Sink,
}

impl HolderKind {
    fn word(self) -> &'static str {
        match self {
            HolderKind::Run => "run",
            HolderKind::Receiver => "rx",
            HolderKind::Sink => "sink",
        }
    }
}

impl Holder {
    /// The holder as the lock file holds it: `<pid> <kind>`.
    pub fn line(&self) -> String {
        format!("{} {}\n", self.pid, self.kind.word())
    }

    /// The holder from its lock file's text; None when it says nothing (yet) or not this.
    pub fn parse(text: &str) -> Option<Holder> {
        let mut words = text.split_whitespace();
        let pid = words.next()?.parse().ok()?;
        let kind = match words.next()? {
            "run" => HolderKind::Run,
            "rx" => HolderKind::Receiver,
            "sink" => HolderKind::Sink,
            _ => return None,
        };
        Some(Holder { kind, pid })
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            HolderKind::Run => write!(f, "a `tx --rx`, `rfc2544` or `serve` run, pid {}", self.pid),
            HolderKind::Receiver => write!(f, "`linerate rx`, pid {}", self.pid),
            HolderKind::Sink => write!(f, "`linerate sink`, pid {}", self.pid),
        }
    }
}

/// What the sink has counted, summed over CPUs. `bytes` counts each frame as the XDP program sees
/// it (`data_end - data`): the Ethernet frame without its FCS. Laid out as `struct sink_counters`
/// of `bpf/sink.bpf.c`, which the loader checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SinkCounters {
    pub packets: u64,
    pub bytes: u64,
}

impl SinkCounters {
    /// Counters gained since `earlier` (saturating, for a reader that started after the sink).
    pub fn since(self, earlier: SinkCounters) -> SinkCounters {
        SinkCounters {
            packets: self.packets.saturating_sub(earlier.packets),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}

/// What the Rust side expects of one map of a BPF object: the sizes of the types it reads and
/// writes the map's keys and values as. Checked when the object loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapAbi {
    /// The map's name; a name starting with `.` (`.rodata`, `.bss`) matches the object's section
    /// map, which libbpf names `<object prefix>.rodata`.
    pub name: &'static str,
    pub key_size: usize,
    pub value_size: usize,
}

impl MapAbi {
    /// A map keyed by `K` holding `V`s.
    pub const fn of<K, V>(name: &'static str) -> Self {
        Self {
            name,
            key_size: size_of::<K>(),
            value_size: size_of::<V>(),
        }
    }

    /// The object's read-only data (its `const volatile` globals) as one `V`.
    pub const fn rodata<V>() -> Self {
        Self::sized(".rodata", size_of::<u32>(), size_of::<V>())
    }

    /// A map whose value is a byte image of `value_size` bytes (keyed by a `u32`, as arrays are).
    pub const fn sized(name: &'static str, key_size: usize, value_size: usize) -> Self {
        Self {
            name,
            key_size,
            value_size,
        }
    }

    fn matches(&self, map: &str) -> bool {
        if self.name.starts_with('.') {
            map.ends_with(self.name)
        } else {
            map == self.name
        }
    }
}

/// Checks an object's maps (name, key size, value size, as libbpf reads them from the object)
/// against what the Rust side expects of them.
pub fn check_abi(
    program: &'static str,
    maps: &[(String, u32, u32)],
    expected: &[MapAbi],
) -> Result<(), XdpError> {
    for want in expected {
        let (name, key, value) =
            maps.iter()
                .find(|(name, ..)| want.matches(name))
                .ok_or(XdpError::AbiMissingMap {
                    program,
                    map: want.name,
                })?;
        for (what, object, rust) in [
            ("key", *key as usize, want.key_size),
            ("value", *value as usize, want.value_size),
        ] {
            if object != rust {
                return Err(XdpError::Abi {
                    program,
                    map: name.clone(),
                    what,
                    object,
                    rust,
                });
            }
        }
    }
    Ok(())
}

/// Where the kernel runs an XDP program: in the driver (`Drv`, native XDP) or on the generic
/// skb path (`Skb`), which every interface supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachMode {
    Drv,
    Skb,
}

impl std::fmt::Display for AttachMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AttachMode::Drv => "drv",
            AttachMode::Skb => "skb",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_reads_back_as_it_was_written() {
        for kind in [HolderKind::Run, HolderKind::Receiver, HolderKind::Sink] {
            let h = Holder { kind, pid: 4242 };
            assert_eq!(Holder::parse(&h.line()), Some(h));
            assert!(h.to_string().contains("pid 4242"), "{h}");
        }
        assert_eq!(Holder::parse(""), None);
        assert_eq!(Holder::parse("12"), None);
        assert_eq!(Holder::parse("x rx"), None);
        assert_eq!(Holder::parse("12 what"), None);
    }

    #[test]
    fn the_abi_check_names_the_map_and_both_sizes() {
        let maps = [
            ("sink_counters".to_string(), 4, 16),
            ("live_tx.rodata".to_string(), 4, 200),
        ];
        let sink = MapAbi::of::<u32, SinkCounters>("sink_counters");
        assert_eq!((sink.key_size, sink.value_size), (4, 16));
        check_abi("sink", &maps, &[sink, MapAbi::rodata::<[u8; 200]>()]).unwrap();

        let err = check_abi(
            "sink",
            &maps,
            &[MapAbi::of::<u32, [u64; 3]>("sink_counters")],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("sink_counters") && err.contains("16") && err.contains("24"),
            "{err}"
        );
        let err = check_abi(
            "sink",
            &maps,
            &[MapAbi::of::<u64, SinkCounters>("sink_counters")],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("key") && err.contains('8') && err.contains('4'),
            "{err}"
        );
        let err = check_abi("live_tx", &maps, &[MapAbi::rodata::<[u8; 100]>()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("live_tx.rodata") && err.contains("100"),
            "{err}"
        );
        let err = check_abi("sink", &maps, &[MapAbi::of::<u32, u32>("counters")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no map counters"), "{err}");
    }
}
