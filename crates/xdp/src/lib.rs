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
pub use linux::{PassLink, PinnedSink, Sink, attach_pass, ifindex, live_tx_object, load_object};

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
