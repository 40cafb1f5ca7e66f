pub use linerate_wire::LinkSpeed;

/// What a port knows about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub name: String,
    pub mac: Option<[u8; 6]>,
    pub mtu: u32,
    pub link_speed: Option<LinkSpeed>,
    /// Transmit queues the port offers (1 where the backend has no queues).
    pub queues: u32,
    pub driver: Option<String>,
    /// Backend name as the CLI spells it: `afxdp`, `pcap`, `null`, `bpf`.
    pub backend: &'static str,
}
