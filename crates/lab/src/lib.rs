//! The veth lab: a network namespace `<name>-sink`, a veth pair `<name>0` (root namespace, the
//! sender) ↔ `<name>1` (inside the namespace) and the XDP sink on `<name>1`, pinned so any process
//! can read what arrived; optionally a device under test (netns `<name>-dut`) between the two,
//! with impairments. Traffic never leaves the lab. Linux only in substance: elsewhere only the
//! configuration, the name rules and the plain types exist, and on macOS the feth pair (`feth`).

use std::net::{Ipv4Addr, Ipv6Addr};

pub mod feth;
mod impair;
#[cfg(target_os = "linux")]
mod linux;

pub use impair::{ImpairCounters, Impairment, Impairments};
pub use linerate_xdp::SinkCounters;
#[cfg(target_os = "linux")]
pub use linux::{LabGuard, LabLock, bird, device, root_or_skip, run_delay_line};

/// The longest lab name: `<name>-sink` and `<name>1` must stay within IFNAMSIZ - 1 = 15 chars,
/// and short names keep `ip` output readable.
pub const MAX_NAME_LEN: usize = 8;

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabConfig {
    /// 1..=8 characters of `[a-z0-9]`.
    pub name: String,
    /// Transmit and receive queues on each end of the veth pair (≥ 1).
    pub queues: u32,
}

/// How the device under test forwards, in netns `<name>-dut`, from `<name>d0` (facing the sender)
/// to `<name>d1` (facing the sink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DutKind {
    /// Kernel IPv4 routing between two subnets (ip_forward, an address on each end, neighbours
    /// learnt by ARP as any router learns them): frames are sent to `<name>d0`'s MAC and leave
    /// with the TTL one lower and the sink's MAC.
    Router,
    /// A Linux bridge with both DUT ends as ports: frames pass unchanged.
    Bridge,
    /// `bpf/dut_fwd.bpf.c` on `<name>d0`: XDP redirect through a devmap, the fast DUT. It skips
    /// the egress path (tc, qdiscs), so it takes no impairments.
    Xdp,
    /// The router with no route beyond its two subnets but those it learns: BIRD speaks eBGP
    /// to each test port's address and installs what it learns in the DUT's FIB.
    Bgp,
    /// The router with a NAT: nftables masquerades [`NAT_INSIDE`] (reached on its port toward
    /// the sender, [`NAT_INSIDE_GATEWAY`] its gateway) behind its address toward the sink, and
    /// conntrack keeps every translation. The receive end has no sink: the sink's namespace is
    /// the servers' host (a kernel server, nginx, listens on the receiver's address).
    Nat,
}

/// The NAT DUT's inside network: where stateful clients take their addresses. RFC 6598's shared
/// address space, what a carrier-grade NAT translates; it exists only inside a NAT lab's DUT.
pub const NAT_INSIDE: (Ipv4Addr, u8) = (Ipv4Addr::new(100, 64, 0, 0), 16);
/// What the NAT DUT holds to (`linerate lab nat`): its translations to a port range, and the
/// connections it lets through at once, as a firewall's session limit. Default: neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NatRules {
    /// First and last source port of the translations; None: any free one (the kernel's
    /// choice).
    pub ports: Option<(u16, u16)>,
    /// Connections from the inside tracked at once, at most: a new one past it is dropped
    /// (IPv4's and IPv6's each).
    pub limit: Option<u32>,
    /// IPv6 translated too (NAT66: masqueraded behind the DUT's address toward the servers,
    /// the port range applied), not only routed through the stateful firewall.
    pub nat66: bool,
}

/// The NAT DUT's own address in [`NAT_INSIDE`]: the clients' gateway.
pub const NAT_INSIDE_GATEWAY: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 1);
/// The NAT DUT's servers' network, on its port toward the sink beside the receiver's /30:
/// addresses for emulated servers (`linerate tcp server` on the receiver's interface) that the
/// sink namespace's stack does not hold. RFC 5737's TEST-NET-2; it exists only inside the lab.
pub const NAT_SERVERS: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 51, 100, 0), 24);
/// The NAT DUT's own address in [`NAT_SERVERS`]: the emulated servers' gateway.
pub const NAT_SERVERS_GATEWAY: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
/// The NAT DUT's IPv6 inside network, on its port toward the sender. IPv6 is routed, not
/// translated, unless [`NatRules::nat66`] says so: the DUT is a stateful firewall for it —
/// conntrack tracks every connection, a new one may start only from the inside, an invalid
/// segment is dropped. RFC 3849's documentation prefix; it exists only inside a NAT lab's DUT.
pub const NAT6_INSIDE: (Ipv6Addr, u8) = (Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0, 0), 64);
/// The NAT DUT's own address in [`NAT6_INSIDE`]: the IPv6 clients' gateway.
pub const NAT6_INSIDE_GATEWAY: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0, 1);
/// The NAT DUT's IPv6 servers' network, on its port toward the sink.
pub const NAT6_SERVERS: (Ipv6Addr, u8) = (Ipv6Addr::new(0x2001, 0xdb8, 0xc6, 0, 0, 0, 0, 0), 64);
/// The NAT DUT's own address in [`NAT6_SERVERS`]: the IPv6 servers' gateway.
pub const NAT6_SERVERS_GATEWAY: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc6, 0, 0, 0, 0, 1);

impl DutKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DutKind::Router => "router",
            DutKind::Bridge => "bridge",
            DutKind::Xdp => "xdp",
            DutKind::Bgp => "bgp",
            DutKind::Nat => "nat",
        }
    }

    pub fn parse(text: &str) -> Option<DutKind> {
        match text {
            "router" => Some(DutKind::Router),
            "bridge" => Some(DutKind::Bridge),
            "xdp" => Some(DutKind::Xdp),
            "bgp" => Some(DutKind::Bgp),
            "nat" => Some(DutKind::Nat),
            _ => None,
        }
    }

    /// It routes between two subnets (frames go to its MAC, the hosts' gateways are its).
    pub fn is_router(self) -> bool {
        matches!(self, DutKind::Router | DutKind::Bgp | DutKind::Nat)
    }
}

impl std::fmt::Display for DutKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The device under test of a lab.
#[derive(Debug, Clone, PartialEq)]
pub struct Dut {
    pub kind: DutKind,
    /// `<name>-dut`.
    pub netns: String,
    /// `<name>d0`, peer of the sender.
    pub ingress: String,
    /// `<name>d1`, peer of the receiver: where impairments sit (its egress).
    pub egress: String,
    pub ingress_mac: [u8; 6],
    /// The router's own addresses on `ingress` and `egress`, the gateways of the sender's and
    /// the receiver's subnets (see [`routed_addresses`]); None for the bridge and XDP DUTs.
    pub gateways: Option<(Ipv4Addr, Ipv4Addr)>,
    /// What `linerate lab impair` set last (none when never or cleared).
    pub impairments: Impairments,
    /// Whether the delay line's process runs (false when no delay line is wanted).
    pub delay_line_running: bool,
}

/// A lab that exists on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Lab {
    pub name: String,
    /// `<name>0`, in the root namespace: where traffic is sent.
    pub sender: String,
    /// `<name>1`, inside [`Lab::netns`]: where the sink counts.
    pub receiver: String,
    /// `<name>-sink`.
    pub netns: String,
    pub sender_mac: [u8; 6],
    pub receiver_mac: [u8; 6],
    pub sender_ip: Ipv4Addr,
    pub receiver_ip: Ipv4Addr,
    pub queues: u32,
    /// The device under test between sender and receiver; None for the direct pair.
    pub dut: Option<Dut>,
}

impl Lab {
    /// The destination MAC frames sent on [`Lab::sender`] must carry to reach the sink: the
    /// router DUT's ingress, else the receiver.
    pub fn dst_mac(&self) -> [u8; 6] {
        match &self.dut {
            Some(dut) if dut.kind.is_router() => dut.ingress_mac,
            _ => self.receiver_mac,
        }
    }
}

/// Errors while building, finding, reading or removing a lab.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("bad lab name {name:?}: {reason}")]
    InvalidName { name: String, reason: &'static str },

    #[error("bad queue count {queues}: a lab has 1 to {max} queues per end")]
    InvalidQueues { queues: u32, max: u32 },

    #[error("a lab named {name} exists already: remove it first")]
    Exists { name: String },

    #[error("lab {name} is incomplete ({missing} is missing): remove it first")]
    Incomplete { name: String, missing: String },

    #[error("no lab named {name}: create it first")]
    NotFound { name: String },

    #[error(
        "{parts} exist(s) but linerate did not make them (no lab marker): left alone; pick another lab name than {name}"
    )]
    NotOurs { name: String, parts: String },

    #[error(
        "lab {name} is being built, used or removed by another linerate process: wait for it or pick another lab name"
    )]
    Busy { name: String },

    #[error("bad {impairment} {value:?}: {reason}")]
    InvalidImpairment {
        impairment: Impairment,
        value: String,
        reason: String,
    },

    #[error(
        "lab {name} has no device under test to impair: make the lab again with a router or bridge DUT"
    )]
    NoDut { name: String },

    #[error(
        "lab {name}'s xdp DUT redirects frames past the egress path (tc, qdiscs), where impairments sit: make the lab again with a router or bridge DUT"
    )]
    XdpDutImpair { name: String },

    #[error("lab {name} has no NAT DUT: make the lab again with --dut nat")]
    NotNat { name: String },

    #[error("the delay line of lab {name}: {reason}")]
    DelayLine { name: String, reason: String },

    #[error("{what}: permission denied: run as root")]
    NotRoot { what: String },

    /// The kernel refused a netlink request (`reason` holds its words and, when it lacks a
    /// feature, what to do).
    #[error("{what}: {reason}")]
    Netlink { what: String, reason: String },

    #[error("`{command}` failed: {stderr}")]
    Command { command: String, stderr: String },

    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },

    #[error(transparent)]
    Xdp(#[from] linerate_xdp::XdpError),
}

impl LabError {
    /// True when the user can fix it by changing what they asked for (names, privileges,
    /// leftovers): exit code 2.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Command { .. }
            | Self::Netlink { .. }
            | Self::Io { .. }
            | Self::DelayLine { .. } => false,
            Self::Xdp(e) => e.is_usage(),
            _ => true,
        }
    }
}

impl LabConfig {
    /// Checks the name and the queue count.
    pub fn validate(&self) -> Result<(), LabError> {
        validate_name(&self.name)?;
        if self.queues == 0 || self.queues > MAX_QUEUES {
            return Err(LabError::InvalidQueues {
                queues: self.queues,
                max: MAX_QUEUES,
            });
        }
        Ok(())
    }
}

/// The kernel's limit on a device's tx and rx queues (`numtxqueues`, `numrxqueues`).
pub const MAX_QUEUES: u32 = 4096;

/// A lab name is 1..=8 characters of `[a-z0-9]`.
pub fn validate_name(name: &str) -> Result<(), LabError> {
    let bad = |reason| {
        Err(LabError::InvalidName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad("it is longer than 8 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return bad("only a-z and 0-9 are allowed");
    }
    Ok(())
}

/// The lab's addresses, a /30 from the RFC 2544 benchmarking range 198.18.0.0/15 picked by name:
/// block k = FNV-1a-32(name) mod 32768, sender = 198.18.0.0 + 4k + 1, receiver = + 2. The same
/// name always gets the same pair; two names rarely share one (and a clash only duplicates a
/// connected route: frames still go out the interface they are sent on).
pub fn addresses(name: &str) -> (Ipv4Addr, Ipv4Addr) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + 4 * (fnv1a(name) % (1 << 15));
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

fn fnv1a(name: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// A router lab's four addresses, each side a /30 of its own on the two halves of the RFC 2544
/// range (RFC 2544 appendix C puts 198.18 on one side of a DUT and 198.19 on the other):
/// block k = FNV-1a-32(name) mod 16384, (sender 198.18.0.0 + 4k + 1, the router's ingress
/// + 2, the router's egress 198.19.0.0 + 4k + 1, the receiver + 2).
pub fn routed_addresses(name: &str) -> (Ipv4Addr, Ipv4Addr, Ipv4Addr, Ipv4Addr) {
    let a = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + 4 * (fnv1a(name) % (1 << 14));
    let b = a + (1 << 16);
    (
        Ipv4Addr::from(a + 1),
        Ipv4Addr::from(a + 2),
        Ipv4Addr::from(b + 1),
        Ipv4Addr::from(b + 2),
    )
}

/// A BGP lab's IPv6 addresses, a /64 each side from RFC 5180's benchmarking range 2001:2::/48:
/// block k = FNV-1a-32(name) mod 32768, (the sending device 2001:2:0:k::1, the DUT's ingress
/// ::2; the DUT's egress 2001:2:0:(k + 32768)::1, the receiving device ::2), the roles of
/// [`routed_addresses`]. Only the BGP DUT's links carry IPv6 (its sessions for IPv6 ranges).
pub fn routed_addresses6(name: &str) -> (Ipv6Addr, Ipv6Addr, Ipv6Addr, Ipv6Addr) {
    let k = (fnv1a(name) % (1 << 15)) as u16;
    let net = |block: u16, host: u16| Ipv6Addr::new(0x2001, 2, 0, block, 0, 0, 0, host);
    (
        net(k, 1),
        net(k, 2),
        net(k + (1 << 15), 1),
        net(k + (1 << 15), 2),
    )
}

/// A BGP lab's backup subnet on the receive side: a second /30 on the DUT's egress
/// (`<name>d1`), for a second device on the receiving port — the next-best egress of the
/// convergence benchmark (docs/convergence.md). Block k as in [`routed_addresses`], moved half
/// of 198.19.0.0/16 along: (the DUT's address there, the device's).
pub fn backup_addresses(name: &str) -> (Ipv4Addr, Ipv4Addr) {
    let k = 4 * (fnv1a(name) % (1 << 14));
    let c = u32::from(Ipv4Addr::new(198, 19, 0, 0)) + (k + (1 << 15)) % (1 << 16);
    (Ipv4Addr::from(c + 1), Ipv4Addr::from(c + 2))
}

/// A short lab name that no other test running now uses: up to 4 characters of `prefix` (kept to
/// `[a-z0-9]`) and 4 base-36 characters from the process id, a counter and the clock.
pub fn unique_name(prefix: &str) -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: AtomicU32 = AtomicU32::new(0);

    let mut name: String = prefix
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .take(MAX_NAME_LEN - 4)
        .collect();
    // One base per process (pid and clock separate processes), plus a counter: names of one
    // process are distinct for 36^4 calls.
    static BASE: OnceLock<u64> = OnceLock::new();
    let base = *BASE.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        (u64::from(std::process::id()) ^ nanos).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32
    });
    let mut x = (base + u64::from(COUNTER.fetch_add(1, Ordering::Relaxed))) % 36u64.pow(4);
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    for _ in 0..4 {
        name.push(char::from(DIGITS[(x % 36) as usize]));
        x /= 36;
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(validate_name("lr").is_ok());
        assert!(validate_name("abcd1234").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("abcd12345").is_err());
        assert!(validate_name("Lr").is_err());
        assert!(validate_name("l-r").is_err());
        let config = LabConfig {
            name: "lr".into(),
            queues: 0,
        };
        assert!(matches!(
            config.validate(),
            Err(LabError::InvalidQueues { .. })
        ));
    }

    #[test]
    fn addresses_are_a_30_in_the_benchmark_range() {
        for name in ["lr", "a", "zzzzzzzz", "t0k3"] {
            let (s, r) = addresses(name);
            assert_eq!(addresses(name), (s, r), "deterministic");
            let s = u32::from(s);
            assert_eq!(s % 4, 1);
            assert_eq!(u32::from(r), s + 1);
            assert_eq!(s >> 17, u32::from(Ipv4Addr::new(198, 18, 0, 0)) >> 17);
        }
    }

    #[test]
    fn ipv6_subnets_are_two_64s_of_the_benchmark_range() {
        for name in ["lr", "a", "zzzzzzzz", "t0k3"] {
            let (west, ingress, egress, east) = routed_addresses6(name);
            let net = |a: Ipv6Addr| u128::from(a) >> 64;
            assert_eq!(
                (net(west), net(egress)),
                (net(ingress), net(east)),
                "{name}"
            );
            assert_ne!(net(west), net(egress));
            for a in [west, ingress, egress, east] {
                assert_eq!(
                    u128::from(a) >> 80,
                    0x2001_0002_0000,
                    "inside 2001:2::/48: {a}"
                );
            }
            assert_eq!(
                (u128::from(west) as u16, u128::from(ingress) as u16),
                (1, 2)
            );
        }
    }

    #[test]
    fn unique_names_are_valid_and_distinct() {
        let names: Vec<String> = (0..50).map(|_| unique_name("test")).collect();
        for n in &names {
            validate_name(n).unwrap();
            assert!(n.starts_with("test"));
        }
        let set: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(set.len(), names.len());
        assert!(validate_name(&unique_name("Very-Long_Prefix")).is_ok());
        assert!(validate_name(&unique_name("")).is_ok());
    }
}
