//! LACPDUs (IEEE 802.1AX-2014 §6.4.2): a Slow Protocols frame to 01:80:c2:00:00:02, EtherType
//! 0x8809, subtype 1, version 1, then the Actor, Partner and Collector TLVs, the Terminator and
//! 50 reserved bytes. [`Pdu::emit`] writes a whole frame (without FCS), [`Pdu::parse`] reads
//! one back; every offset comes from [`field`].

/// The Slow Protocols group address every LACPDU is sent to.
pub const SLOW_PROTOCOLS_MAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x02];
/// The Slow Protocols EtherType.
pub const ETHERTYPE: u16 = 0x8809;
/// The LACP subtype of a Slow Protocols frame.
pub const SUBTYPE_LACP: u8 = 1;
/// The Marker protocol's subtype (802.1AX-2014 §6.5.3).
pub const SUBTYPE_MARKER: u8 = 2;
/// The version this codec writes (and the lowest it reads).
pub const VERSION: u8 = 1;
/// A LACPDU's frame without FCS: 14 bytes of Ethernet header and 110 of LACPDU.
pub const FRAME_LEN: usize = 124;

/// Byte ranges of the frame's fields, from its first byte (the destination MAC).
pub mod field {
    use std::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const SUBTYPE: usize = 14;
    pub const VERSION: usize = 15;
    /// The Actor Information TLV; the Partner's follows it with the same layout.
    pub const ACTOR: usize = 16;
    pub const PARTNER: usize = 36;
    pub const COLLECTOR: usize = 56;
    pub const TERMINATOR: usize = 72;

    /// Inside an Actor or Partner TLV, from its type byte.
    pub mod info {
        use std::ops::Range;
        pub const TYPE: usize = 0;
        pub const LENGTH: usize = 1;
        pub const SYSTEM_PRIORITY: Range<usize> = 2..4;
        pub const SYSTEM: Range<usize> = 4..10;
        pub const KEY: Range<usize> = 10..12;
        pub const PORT_PRIORITY: Range<usize> = 12..14;
        pub const PORT: Range<usize> = 14..16;
        pub const STATE: usize = 16;
        /// Type, length, 14 bytes of information, state, 3 reserved.
        pub const LEN: u8 = 20;
    }

    /// Inside the Collector TLV.
    pub mod collector {
        use std::ops::Range;
        pub const MAX_DELAY: Range<usize> = 2..4;
        pub const LEN: u8 = 16;
    }
}

/// TLV types.
const TLV_ACTOR: u8 = 1;
const TLV_PARTNER: u8 = 2;
const TLV_COLLECTOR: u8 = 3;

/// The port state octet's bits (802.1AX §6.4.2.3).
pub mod state {
    pub const ACTIVITY: u8 = 1 << 0;
    pub const TIMEOUT: u8 = 1 << 1;
    pub const AGGREGATION: u8 = 1 << 2;
    pub const SYNCHRONIZATION: u8 = 1 << 3;
    pub const COLLECTING: u8 = 1 << 4;
    pub const DISTRIBUTING: u8 = 1 << 5;
    pub const DEFAULTED: u8 = 1 << 6;
    pub const EXPIRED: u8 = 1 << 7;
}

/// One side's information: who the port is and what state it is in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Info {
    pub system_priority: u16,
    pub system: [u8; 6],
    pub key: u16,
    pub port_priority: u16,
    pub port: u16,
    pub state: u8,
}

impl Info {
    fn emit(&self, tlv_type: u8, at: &mut [u8]) {
        use field::info::*;
        at[TYPE] = tlv_type;
        at[LENGTH] = LEN;
        at[SYSTEM_PRIORITY].copy_from_slice(&self.system_priority.to_be_bytes());
        at[SYSTEM].copy_from_slice(&self.system);
        at[KEY].copy_from_slice(&self.key.to_be_bytes());
        at[PORT_PRIORITY].copy_from_slice(&self.port_priority.to_be_bytes());
        at[PORT].copy_from_slice(&self.port.to_be_bytes());
        at[STATE] = self.state;
    }

    fn parse(tlv_type: u8, at: &[u8]) -> Result<Self, PduError> {
        use field::info::*;
        if at[TYPE] != tlv_type || at[LENGTH] != LEN {
            return Err(PduError::Tlv {
                expected: tlv_type,
                found: at[TYPE],
                length: at[LENGTH],
            });
        }
        let be = |r: std::ops::Range<usize>| u16::from_be_bytes([at[r.start], at[r.start + 1]]);
        let mut system = [0; 6];
        system.copy_from_slice(&at[SYSTEM]);
        Ok(Self {
            system_priority: be(SYSTEM_PRIORITY),
            system,
            key: be(KEY),
            port_priority: be(PORT_PRIORITY),
            port: be(PORT),
            state: at[STATE],
        })
    }

    /// Whether the state octet has `bit`.
    pub fn has(&self, bit: u8) -> bool {
        self.state & bit != 0
    }

    /// Who the port is, its state aside: what a partner's view of it must match.
    pub fn same_port(&self, other: &Info) -> bool {
        (
            self.system_priority,
            self.system,
            self.key,
            self.port_priority,
            self.port,
        ) == (
            other.system_priority,
            other.system,
            other.key,
            other.port_priority,
            other.port,
        )
    }
}

/// A LACPDU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pdu {
    pub actor: Info,
    pub partner: Info,
    /// Tens of microseconds (802.1AX's CollectorMaxDelay).
    pub collector_max_delay: u16,
}

/// Why a Slow Protocols frame is not a LACPDU this codec reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PduError {
    #[error("{0} bytes: a LACPDU frame has 124 at least")]
    Short(usize),
    #[error("EtherType {0:#06x} is not Slow Protocols (0x8809)")]
    NotSlowProtocols(u16),
    #[error("subtype {0} is not LACP (1)")]
    NotLacp(u8),
    #[error("version {0}: LACP has 1 and up")]
    Version(u8),
    #[error("TLV type {found} with length {length} where type {expected} was due")]
    Tlv { expected: u8, found: u8, length: u8 },
}

impl Pdu {
    /// The whole frame from `src`, to the Slow Protocols group, without FCS.
    pub fn emit(&self, src: [u8; 6]) -> [u8; FRAME_LEN] {
        let mut f = [0u8; FRAME_LEN];
        f[field::DST].copy_from_slice(&SLOW_PROTOCOLS_MAC);
        f[field::SRC].copy_from_slice(&src);
        f[field::ETHERTYPE].copy_from_slice(&ETHERTYPE.to_be_bytes());
        f[field::SUBTYPE] = SUBTYPE_LACP;
        f[field::VERSION] = VERSION;
        self.actor.emit(TLV_ACTOR, &mut f[field::ACTOR..]);
        self.partner.emit(TLV_PARTNER, &mut f[field::PARTNER..]);
        let c = &mut f[field::COLLECTOR..];
        c[0] = TLV_COLLECTOR;
        c[1] = field::collector::LEN;
        c[field::collector::MAX_DELAY].copy_from_slice(&self.collector_max_delay.to_be_bytes());
        // The Terminator TLV (type 0, length 0) and the reserved bytes are zeros already.
        f
    }

    /// A frame read back (its Ethernet header first). Versions above 1 are read as version 1
    /// (802.1AX §6.4.2.3: a newer version's extra TLVs follow the ones version 1 defines).
    pub fn parse(frame: &[u8]) -> Result<Self, PduError> {
        if frame.len() < FRAME_LEN {
            return Err(PduError::Short(frame.len()));
        }
        let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
        if ethertype != ETHERTYPE {
            return Err(PduError::NotSlowProtocols(ethertype));
        }
        if frame[field::SUBTYPE] != SUBTYPE_LACP {
            return Err(PduError::NotLacp(frame[field::SUBTYPE]));
        }
        if frame[field::VERSION] < VERSION {
            return Err(PduError::Version(frame[field::VERSION]));
        }
        let actor = Info::parse(TLV_ACTOR, &frame[field::ACTOR..])?;
        let partner = Info::parse(TLV_PARTNER, &frame[field::PARTNER..])?;
        let c = &frame[field::COLLECTOR..];
        if c[0] != TLV_COLLECTOR || c[1] != field::collector::LEN {
            return Err(PduError::Tlv {
                expected: TLV_COLLECTOR,
                found: c[0],
                length: c[1],
            });
        }
        let max_delay = field::collector::MAX_DELAY;
        Ok(Self {
            actor,
            partner,
            collector_max_delay: u16::from_be_bytes([c[max_delay.start], c[max_delay.start + 1]]),
        })
    }
}

/// The Marker protocol's TLV types: a Marker PDU carries the requester's information, its
/// response the same information back (802.1AX-2014 §6.5.3.3).
const TLV_MARKER_INFO: u8 = 1;
const TLV_MARKER_RESPONSE: u8 = 2;
/// The Marker Information TLV's length: type, length, Requester_Port (2), Requester_System (6),
/// Requester_Transaction_ID (4) and 2 bytes of pad.
const MARKER_TLV_LEN: u8 = 16;

/// The Marker Responder (802.1AX-2014 §6.5.4.2): a Marker PDU received (`frame`, its Ethernet
/// header first) is answered by a Marker Response PDU from `src` carrying the requester's
/// port, system and transaction id back, so the requester knows every frame it sent on the
/// link before the marker has arrived. None: `frame` is not a Marker PDU this reads (a
/// response, a short frame, another subtype).
pub fn marker_response(frame: &[u8], src: [u8; 6]) -> Option<[u8; FRAME_LEN]> {
    if frame.len() < FRAME_LEN
        || frame[field::ETHERTYPE] != ETHERTYPE.to_be_bytes()
        || frame[field::SUBTYPE] != SUBTYPE_MARKER
        || frame[field::VERSION] < VERSION
    {
        return None;
    }
    let tlv = field::ACTOR;
    if frame[tlv] != TLV_MARKER_INFO || frame[tlv + 1] != MARKER_TLV_LEN {
        return None;
    }
    let mut f = [0u8; FRAME_LEN];
    f[field::DST].copy_from_slice(&SLOW_PROTOCOLS_MAC);
    f[field::SRC].copy_from_slice(&src);
    f[field::ETHERTYPE].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f[field::SUBTYPE] = SUBTYPE_MARKER;
    f[field::VERSION] = VERSION;
    f[tlv] = TLV_MARKER_RESPONSE;
    f[tlv + 1] = MARKER_TLV_LEN;
    // Requester_Port, Requester_System and Requester_Transaction_ID, as they came; the pad,
    // the Terminator TLV and the reserved bytes stay zero.
    f[tlv + 2..tlv + 14].copy_from_slice(&frame[tlv + 2..tlv + 14]);
    Some(f)
}

#[cfg(test)]
mod tests;
