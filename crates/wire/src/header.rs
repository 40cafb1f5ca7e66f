//! One table per header: every offset used by the builder, the field locator, the checksum code
//! and the tests comes from here. Offsets are relative to the start of their header.

use core::ops::Range;

/// Reads a big-endian unsigned integer of up to 8 bytes.
#[inline]
pub(crate) fn get_be(buf: &[u8], r: Range<usize>) -> u64 {
    buf[r]
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Writes the low `r.len()` bytes of `value` big-endian.
#[inline]
pub(crate) fn set_be(buf: &mut [u8], r: Range<usize>, value: u64) {
    let bytes = &mut buf[r];
    let n = bytes.len();
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (value >> (8 * (n - 1 - i))) as u8;
    }
}

/// Shifts a header-relative range to a frame offset.
#[inline]
pub(crate) const fn at(base: usize, r: Range<usize>) -> Range<usize> {
    base + r.start..base + r.end
}

/// Ethernet II.
pub mod ethernet {
    pub mod field {
        use core::ops::Range;
        pub const DST: Range<usize> = 0..6;
        pub const SRC: Range<usize> = 6..12;
        pub const ETHERTYPE: Range<usize> = 12..14;
    }
    pub const HEADER_LEN: usize = field::ETHERTYPE.end;
    pub const ETHERTYPE_IPV4: u16 = 0x0800;
    pub const ETHERTYPE_IPV6: u16 = 0x86DD;
    pub const ETHERTYPE_VLAN: u16 = 0x8100;
}

/// IEEE 802.1Q tag, counted from its TPID (which sits where the outer ethertype would).
pub mod vlan {
    pub mod field {
        use core::ops::Range;
        pub const TPID: Range<usize> = 0..2;
        /// PCP (3 bits), DEI (1 bit), VID (12 bits).
        pub const TCI: Range<usize> = 2..4;
        pub const ETHERTYPE: Range<usize> = 4..6;
    }
    pub const TAG_LEN: usize = field::ETHERTYPE.start;
    pub const VID_MASK: u16 = 0x0FFF;
    pub const PCP_SHIFT: u32 = 13;
    pub const MAX_VID: u16 = 4095;
    pub const MAX_PCP: u8 = 7;
}

/// IPv4 without options.
pub mod ipv4 {
    pub mod field {
        use core::ops::Range;
        pub const VER_IHL: usize = 0;
        pub const DSCP_ECN: usize = 1;
        pub const LENGTH: Range<usize> = 2..4;
        pub const IDENT: Range<usize> = 4..6;
        pub const FLG_OFF: Range<usize> = 6..8;
        pub const TTL: usize = 8;
        pub const PROTOCOL: usize = 9;
        pub const CHECKSUM: Range<usize> = 10..12;
        pub const SRC_ADDR: Range<usize> = 12..16;
        pub const DST_ADDR: Range<usize> = 16..20;
    }
    pub const HEADER_LEN: usize = field::DST_ADDR.end;
    /// Version 4, IHL 5 words.
    pub const VER_IHL: u8 = 0x45;
    /// Don't fragment: a generator's frames are never meant to be split.
    pub const FLAG_DF: u16 = 0x4000;
    pub const DSCP_SHIFT: u32 = 2;
    pub const MAX_DSCP: u8 = 63;
    pub const PROTO_ICMP: u8 = 1;
    pub const PROTO_TCP: u8 = 6;
    pub const PROTO_UDP: u8 = 17;
    pub const PROTO_ICMPV6: u8 = 58;
}

/// IPv6 without extension headers.
pub mod ipv6 {
    pub mod field {
        use core::ops::Range;
        /// Version (4 bits), traffic class (8), flow label (20).
        pub const VER_TC_FLOW: Range<usize> = 0..4;
        pub const LENGTH: Range<usize> = 4..6;
        pub const NXT_HDR: usize = 6;
        pub const HOP_LIMIT: usize = 7;
        pub const SRC_ADDR: Range<usize> = 8..24;
        pub const DST_ADDR: Range<usize> = 24..40;
    }
    pub const HEADER_LEN: usize = field::DST_ADDR.end;
    pub const VERSION_SHIFT: u32 = 28;
    pub const MAX_FLOW_LABEL: u32 = 0xF_FFFF;
    /// The variable part of an address is its low 64 bits: the interface id.
    pub const ADDR_LOW: usize = 8;
}

pub mod udp {
    pub mod field {
        use core::ops::Range;
        pub const SRC_PORT: Range<usize> = 0..2;
        pub const DST_PORT: Range<usize> = 2..4;
        pub const LENGTH: Range<usize> = 4..6;
        pub const CHECKSUM: Range<usize> = 6..8;
    }
    pub const HEADER_LEN: usize = field::CHECKSUM.end;
}

/// TCP without options.
pub mod tcp {
    pub mod field {
        use core::ops::Range;
        pub const SRC_PORT: Range<usize> = 0..2;
        pub const DST_PORT: Range<usize> = 2..4;
        pub const SEQ_NUM: Range<usize> = 4..8;
        pub const ACK_NUM: Range<usize> = 8..12;
        /// Data offset in the high nibble.
        pub const DATA_OFF: usize = 12;
        pub const FLAGS: usize = 13;
        pub const WIN_SIZE: Range<usize> = 14..16;
        pub const CHECKSUM: Range<usize> = 16..18;
        pub const URGENT: Range<usize> = 18..20;
    }
    pub const HEADER_LEN: usize = field::URGENT.end;
    /// Five 32-bit words, no options.
    pub const DATA_OFF_5: u8 = 5 << 4;
}

/// ICMPv4 and ICMPv6 echo share one layout.
pub mod icmp {
    pub mod field {
        use core::ops::Range;
        pub const TYPE: usize = 0;
        pub const CODE: usize = 1;
        pub const CHECKSUM: Range<usize> = 2..4;
        pub const ECHO_IDENT: Range<usize> = 4..6;
        pub const ECHO_SEQNO: Range<usize> = 6..8;
    }
    pub const HEADER_LEN: usize = field::ECHO_SEQNO.end;
    pub const V4_ECHO_REQUEST: u8 = 8;
    pub const V6_ECHO_REQUEST: u8 = 128;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lengths_match_the_rfcs() {
        assert_eq!(ethernet::HEADER_LEN, 14);
        assert_eq!(vlan::TAG_LEN, 4);
        assert_eq!(ipv4::HEADER_LEN, 20);
        assert_eq!(ipv6::HEADER_LEN, 40);
        assert_eq!(udp::HEADER_LEN, 8);
        assert_eq!(tcp::HEADER_LEN, 20);
        assert_eq!(icmp::HEADER_LEN, 8);
    }

    #[test]
    fn be_round_trip() {
        let mut b = [0u8; 8];
        set_be(&mut b, 1..7, 0x0102_0304_0506);
        assert_eq!(b, [0, 1, 2, 3, 4, 5, 6, 0]);
        assert_eq!(get_be(&b, 1..7), 0x0102_0304_0506);
    }
}
