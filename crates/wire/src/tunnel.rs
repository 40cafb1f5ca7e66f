//! Header tables for tunnels and stacked headers, in the style of `header`: one table of byte
//! ranges per header, offsets relative to the start of that header. The stack builder, its
//! locator and the tests read every offset from here.

/// Numbers that say what comes next: ethertypes, IP protocols, well-known UDP ports.
pub mod next {
    /// IEEE 802.1ad service tag (the outer tag of QinQ).
    pub const ETHERTYPE_QINQ: u16 = 0x88A8;
    pub const ETHERTYPE_ARP: u16 = 0x0806;
    /// MPLS unicast (RFC 3032).
    pub const ETHERTYPE_MPLS: u16 = 0x8847;
    /// Transparent Ethernet bridging: an Ethernet frame inside GRE (RFC 1701, NVGRE RFC 7637).
    pub const ETHERTYPE_TEB: u16 = 0x6558;
    /// IPv4 inside IP (RFC 2003).
    pub const PROTO_IPV4: u8 = 4;
    /// IPv6 inside IP (RFC 4213 §3.5).
    pub const PROTO_IPV6: u8 = 41;
    pub const PROTO_GRE: u8 = 47;
    /// The ethertype of an Ethernet frame whose payload follows its header (IEEE's reserved
    /// 0xFFFF, which the OTG models write too).
    pub const ETHERTYPE_RESERVED: u16 = 0xFFFF;
    /// The IPv4 protocol of a payload that follows the IP header: 61, "any host internal
    /// protocol" (IANA; the OTG models' default).
    pub const PROTO_HOST_INTERNAL: u8 = 61;
    /// IPv6's "no next header" (RFC 8200 §4.7): the payload follows the IPv6 header.
    pub const PROTO_NO_NEXT_HEADER: u8 = 59;
    /// RFC 7348 §5.
    pub const UDP_PORT_VXLAN: u16 = 4789;
    /// 3GPP TS 29.281 §4.4.2.3.
    pub const UDP_PORT_GTPU: u16 = 2152;
}

/// MPLS label stack entry (RFC 3032 §2.1).
pub mod mpls {
    pub mod field {
        use core::ops::Range;
        /// Label (20 bits), traffic class (3), bottom of stack (1), TTL (8).
        pub const ENTRY: Range<usize> = 0..4;
    }
    pub const HEADER_LEN: usize = field::ENTRY.end;
    pub const LABEL_SHIFT: u32 = 12;
    pub const TC_SHIFT: u32 = 9;
    pub const BOTTOM_OF_STACK: u32 = 1 << 8;
    pub const MAX_LABEL: u32 = 0xF_FFFF;
    pub const MAX_TC: u8 = 7;
}

/// GRE (RFC 2784) with the key and sequence options of RFC 2890. The optional words follow the
/// base header in the order checksum, key, sequence, so their offsets depend on which are present.
pub mod gre {
    pub mod field {
        use core::ops::Range;
        /// C (bit 15), K (bit 13), S (bit 12), version in the low three bits (0).
        pub const FLAGS_VER: Range<usize> = 0..2;
        pub const PROTOCOL: Range<usize> = 2..4;
        /// Present when C is set; followed by 16 reserved bits.
        pub const CHECKSUM: Range<usize> = 4..6;
        pub const RESERVED1: Range<usize> = 6..8;
    }
    pub const BASE_LEN: usize = field::PROTOCOL.end;
    /// Each option (checksum + reserved, key, sequence) is one 32-bit word.
    pub const OPTION_LEN: usize = 4;
    pub const FLAG_CHECKSUM: u16 = 0x8000;
    pub const FLAG_KEY: u16 = 0x2000;
    pub const FLAG_SEQ: u16 = 0x1000;
    /// NVGRE (RFC 7637 §3.2): the key's high 24 bits are the VSID, the low 8 the FlowID.
    pub const NVGRE_VSID_SHIFT: u32 = 8;
    pub const MAX_VSID: u32 = 0xFF_FFFF;

    /// Where the key sits: after the checksum word when there is one.
    pub const fn key_offset(checksum: bool) -> usize {
        BASE_LEN + if checksum { OPTION_LEN } else { 0 }
    }

    /// Where the sequence number sits: after the checksum and key words that are present.
    pub const fn seq_offset(checksum: bool, key: bool) -> usize {
        key_offset(checksum) + if key { OPTION_LEN } else { 0 }
    }
}

/// VXLAN (RFC 7348 §5).
pub mod vxlan {
    pub mod field {
        use core::ops::Range;
        pub const FLAGS: usize = 0;
        pub const RESERVED1: Range<usize> = 1..4;
        pub const VNI: Range<usize> = 4..7;
        pub const RESERVED2: usize = 7;
    }
    pub const HEADER_LEN: usize = field::RESERVED2 + 1;
    /// The I flag: the VNI is valid. RFC 7348 requires it set.
    pub const FLAG_VNI: u8 = 0x08;
    pub const MAX_VNI: u32 = 0xFF_FFFF;
}

/// GTPv1-U (3GPP TS 29.281 §5.1). The optional word (sequence number, N-PDU number, next
/// extension header type) is present when any of E, S or PN is set; linerate sets only S.
pub mod gtpu {
    pub mod field {
        use core::ops::Range;
        /// Version (3 bits, 1), PT (1), spare, E, S, PN.
        pub const FLAGS: usize = 0;
        pub const MSG_TYPE: usize = 1;
        /// Bytes after the mandatory eight, optional word included.
        pub const LENGTH: Range<usize> = 2..4;
        pub const TEID: Range<usize> = 4..8;
        pub const SEQ: Range<usize> = 8..10;
        pub const NPDU: usize = 10;
        pub const NEXT_EXT: usize = 11;
    }
    pub const HEADER_LEN: usize = field::TEID.end;
    pub const OPTION_LEN: usize = field::NEXT_EXT + 1 - HEADER_LEN;
    /// Version 1, protocol type GTP.
    pub const FLAGS_V1_PT: u8 = 0x30;
    pub const FLAG_SEQ: u8 = 0x02;
    /// G-PDU: the message carries a user packet.
    pub const MSG_G_PDU: u8 = 0xFF;
}

/// ARP for IPv4 over Ethernet (RFC 826).
pub mod arp {
    pub mod field {
        use core::ops::Range;
        pub const HTYPE: Range<usize> = 0..2;
        pub const PTYPE: Range<usize> = 2..4;
        pub const HLEN: usize = 4;
        pub const PLEN: usize = 5;
        pub const OPER: Range<usize> = 6..8;
        pub const SHA: Range<usize> = 8..14;
        pub const SPA: Range<usize> = 14..18;
        pub const THA: Range<usize> = 18..24;
        pub const TPA: Range<usize> = 24..28;
    }
    pub const HEADER_LEN: usize = field::TPA.end;
    pub const HTYPE_ETHERNET: u16 = 1;
    pub const OP_REQUEST: u16 = 1;
    pub const OP_REPLY: u16 = 2;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lengths_match_the_rfcs() {
        assert_eq!(mpls::HEADER_LEN, 4);
        assert_eq!(gre::BASE_LEN, 4);
        assert_eq!(gre::key_offset(true), 8);
        assert_eq!(gre::seq_offset(true, true), 12);
        assert_eq!(gre::seq_offset(false, true), 8);
        assert_eq!(vxlan::HEADER_LEN, 8);
        assert_eq!(gtpu::HEADER_LEN, 8);
        assert_eq!(gtpu::OPTION_LEN, 4);
        assert_eq!(arp::HEADER_LEN, 28);
    }
}
