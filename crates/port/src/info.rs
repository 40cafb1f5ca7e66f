/// Link speed as the OS reports it, in Mbit/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSpeed(pub u64);

impl LinkSpeed {
    pub fn mbps(self) -> u64 {
        self.0
    }
}

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
