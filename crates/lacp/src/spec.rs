//! A LAG as linerate runs it: its members (interfaces, each `IFACE[@NETNS]`) and its protocol,
//! LACP with the actor's parameters or static.

use std::time::Duration;

use crate::machine::MemberView;

/// One LAG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LagSpec {
    pub name: String,
    /// The members in collecting-distributing (LACP) or with their link up (static) for the LAG
    /// to be up.
    pub min_links: u32,
    pub members: Vec<MemberSpec>,
    pub protocol: Protocol,
}

/// A member port of a LAG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    /// The OTG port's name.
    pub port: String,
    /// Its interface, `IFACE` or `IFACE@NETNS`.
    pub location: String,
    /// The MAC its LACPDUs leave from (the member's ethernet); None: the interface's own.
    pub mac: Option<[u8; 6]>,
    pub lacp: MemberLacp,
}

/// A member's LACP parameters (OTG `Lag.Port.Lacp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberLacp {
    pub port_number: u16,
    pub port_priority: u16,
    pub active: bool,
    /// Seconds between periodic LACPDUs; None: auto (fast while the partner asks for short
    /// timeouts, slow otherwise, as 802.1AX's periodic machine has it).
    pub periodic: Option<Duration>,
    /// The timeout the actor asks its partner to keep (true: short, 3 s; false: long, 90 s).
    pub short_timeout: bool,
}

impl Default for MemberLacp {
    fn default() -> Self {
        Self {
            port_number: 0,
            port_priority: 1,
            active: true,
            periodic: None,
            short_timeout: true,
        }
    }
}

/// How a LAG's members come up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// LACP with the actor's system and key.
    Lacp {
        system_id: [u8; 6],
        system_priority: u16,
        key: u16,
    },
    /// No protocol: a member is up while its link is.
    Static { lag_id: u16 },
}

/// One LAG's state as metrics read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LagView {
    pub name: String,
    pub min_links: u32,
    pub lacp: bool,
    pub members: Vec<MemberView>,
}

impl LagView {
    pub fn members_up(&self) -> usize {
        self.members.iter().filter(|m| m.up).count()
    }

    /// Up with at least `min_links` members in it (and one at least).
    pub fn up(&self) -> bool {
        self.members_up() >= self.min_links.max(1) as usize
    }
}
