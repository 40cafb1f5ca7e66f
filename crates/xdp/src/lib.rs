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
    PassLink, PinnedSink, Sink, attach_pass, ifindex, interface, live_tx_object, load_object,
    xdp_features,
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

/// What the sink has counted, summed over CPUs. `bytes` counts each frame as the XDP program sees
/// it (`data_end - data`): the Ethernet frame without its FCS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
