//! The signature: an 18-byte trailer at the end of a frame's payload that lets a receiver tell
//! our frames from stray traffic and measure, per flow, loss, order and latency.
//!
//! It sits at the *end* of the buffer (just before the FCS the NIC appends), as Ostinato's does,
//! so a receiver finds it without parsing headers (VLAN, IPv4/IPv6, UDP/TCP all look the same from
//! the tail) and size modes move it with the frame's end. 18 bytes is exactly the UDP payload of a
//! 64-byte IPv4 frame, the headline size.
//!
//! ```text
//! offset  0        6        10     12     14           18
//!         | tx ns  |  seq   | flow | comp |   magic    |
//!         | 48 bit | 32 bit | 16   | 16   |   32 bit   |   all big-endian
//! ```
//!
//! - **tx ns**: the low 48 bits of the transmit time in nanoseconds (CLOCK_MONOTONIC, or TAI
//!   between PTP-synced hosts). 2^48 ns is 78 hours: the receiver takes the difference modulo
//!   2^48, so only latencies below 39 hours are meaningful, which is all of them.
//! - **seq**: the flow's frame index modulo 2^32 (worker w of W stamps w, w+W, …).
//! - **flow**: the flow id (the stream's index).
//! - **comp**: a compensation word. The trailer's nine 16-bit words always sum (ones' complement)
//!   to the same value as when the frame was built with zeros in seq, ts and comp, so the L4
//!   checksum computed then stays valid: stamping writes 12 bytes and never touches the checksum
//!   field, whatever the L4 protocol and wherever the trailer falls (an odd offset swaps the
//!   bytes of the trailer's contribution, and a constant stays constant when swapped).
//! - **magic**: [`MAGIC`], last, so a receiver checks it first.

use crate::{Layout, checksum};

/// Bytes of the trailer.
pub const LEN: usize = 18;
/// Marks our frames ("LRsg").
pub const MAGIC: u32 = 0x4c52_7367;
/// Bits of the transmit timestamp.
pub const TS_BITS: u32 = 48;
/// Mask of the transmit timestamp.
pub const TS_MASK: u64 = (1 << TS_BITS) - 1;

/// Field offsets inside the trailer.
pub mod field {
    use core::ops::Range;
    pub const TX_NS: Range<usize> = 0..6;
    pub const SEQ: Range<usize> = 6..10;
    pub const FLOW: Range<usize> = 10..12;
    pub const COMP: Range<usize> = 12..14;
    pub const MAGIC: Range<usize> = 14..18;
}

/// What a trailer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    pub flow: u16,
    pub seq: u32,
    /// Low 48 bits of the transmit time in ns.
    pub tx_ns: u64,
}

/// Where the trailer starts in a buffer of `len` bytes (no FCS), if it fits.
#[inline]
pub fn offset(len: usize) -> Option<usize> {
    len.checked_sub(LEN)
}

/// Whether a frame laid out as `layout` has room for the trailer in its payload.
pub fn fits(layout: &Layout) -> bool {
    layout.len >= layout.payload_offset + LEN
}

/// Writes the constant part of the trailer into a template (flow and magic; seq, ts and comp
/// zero) before its checksums are computed. `buf` is the whole buffer; the trailer is its last
/// [`LEN`] bytes, which must lie in the payload (see [`fits`]). Returns false when the buffer is
/// shorter than a trailer.
pub fn write_template(buf: &mut [u8], flow: u16) -> bool {
    let Some(at) = offset(buf.len()) else {
        return false;
    };
    let t = &mut buf[at..];
    t[..field::FLOW.start].fill(0);
    t[field::FLOW].copy_from_slice(&flow.to_be_bytes());
    t[field::COMP].fill(0);
    t[field::MAGIC].copy_from_slice(&MAGIC.to_be_bytes());
    true
}

/// Stamps `seq` and `tx_ns` into a trailer written by [`write_template`] (at the end of `buf`)
/// and sets the compensation word, keeping every checksum of the frame valid. The hot path: a
/// few adds and three stores.
#[inline]
pub fn stamp(buf: &mut [u8], seq: u32, tx_ns: u64) {
    let Some(at) = offset(buf.len()) else {
        return;
    };
    let t = &mut buf[at..at + LEN];
    let ts = tx_ns & TS_MASK;
    t[field::TX_NS].copy_from_slice(&ts.to_be_bytes()[2..]);
    t[field::SEQ].copy_from_slice(&seq.to_be_bytes());
    t[field::COMP].copy_from_slice(&compensation(seq, ts).to_be_bytes());
}

/// The word that makes seq, ts and itself sum to ones' complement zero (0xFFFF): the same
/// contribution as the template's zeros, so the frame's checksums do not change.
#[inline]
pub fn compensation(seq: u32, ts48: u64) -> u16 {
    let words = (ts48 >> 32) as u32
        + ((ts48 >> 16) & 0xffff) as u32
        + (ts48 & 0xffff) as u32
        + (seq >> 16)
        + (seq & 0xffff);
    !checksum::fold(words)
}

/// Reads a trailer from the end of `buf`, if it carries our magic.
pub fn parse(buf: &[u8]) -> Option<Signature> {
    let t = &buf[offset(buf.len())?..];
    let be =
        |r: core::ops::Range<usize>| t[r].iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    if be(field::MAGIC) != u64::from(MAGIC) {
        return None;
    }
    Some(Signature {
        flow: be(field::FLOW) as u16,
        seq: be(field::SEQ) as u32,
        tx_ns: be(field::TX_NS),
    })
}

/// Latency in ns from a 48-bit transmit stamp and a full receive time on the same clock, or
/// None when the stamp lies in the receiver's future (clocks apart by more than the latency).
#[inline]
pub fn latency(tx_ns48: u64, rx_ns: u64) -> Option<u64> {
    let d = rx_ns.wrapping_sub(tx_ns48) & TS_MASK;
    (d < 1 << (TS_BITS - 1)).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Built, build, spec, tcp, udp, v4, v6};
    use crate::{Payload, VlanTag};
    use etherparse::{SlicedPacket, TransportSlice};

    /// Checks the L4 checksum with etherparse (an independent implementation).
    fn l4_ok(f: &Built) -> bool {
        let p = SlicedPacket::from_ethernet(&f.bytes).expect("frame parses");
        let net = p.net.expect("ip");
        match (net, p.transport.expect("l4")) {
            (etherparse::NetSlice::Ipv4(ip), TransportSlice::Udp(u)) => {
                let h = u.to_header();
                h.calc_checksum_ipv4(&ip.header().to_header(), u.payload())
                    .unwrap()
                    == h.checksum
            }
            (etherparse::NetSlice::Ipv6(ip), TransportSlice::Udp(u)) => {
                let h = u.to_header();
                h.calc_checksum_ipv6(&ip.header().to_header(), u.payload())
                    .unwrap()
                    == h.checksum
            }
            (etherparse::NetSlice::Ipv4(ip), TransportSlice::Tcp(t)) => {
                let h = t.to_header();
                h.calc_checksum_ipv4(&ip.header().to_header(), t.payload())
                    .unwrap()
                    == h.checksum
            }
            (etherparse::NetSlice::Ipv6(ip), TransportSlice::Tcp(t)) => {
                let h = t.to_header();
                h.calc_checksum_ipv6(&ip.header().to_header(), t.payload())
                    .unwrap()
                    == h.checksum
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn signed_frame(len: usize, ipv6: bool, use_tcp: bool, vlan: bool) -> Option<Built> {
        let s = spec(
            vlan.then_some(VlanTag { id: 7, pcp: 0 }),
            if ipv6 { v6() } else { v4() },
            if use_tcp { tcp() } else { udp() },
            Payload::Increment,
        );
        let mut f = build(&s, len + crate::units::FCS_LEN).ok()?;
        if !fits(&f.layout) {
            return None;
        }
        assert!(write_template(&mut f.bytes, 0x1234));
        assert!(checksum::fill_frame(&mut f.bytes, &f.layout));
        Some(f)
    }

    #[test]
    fn a_64_byte_ipv4_udp_frame_holds_it_exactly() {
        let f = signed_frame(60, false, false, false).unwrap();
        assert_eq!(f.layout.len - f.layout.payload_offset, LEN);
        assert!(l4_ok(&f));
    }

    #[test]
    fn stamping_keeps_every_checksum_valid_at_odd_and_even_offsets() {
        let stamps = [
            (0u32, 0u64),
            (1, 1),
            (u32::MAX, TS_MASK),
            (0xffff, 0xffff_0000_ffff),
            (0x8000_0001, 0x0000_ffff_ffff),
            (12345, 987_654_321_012),
        ];
        for ipv6 in [false, true] {
            for use_tcp in [false, true] {
                for vlan in [false, true] {
                    for len in [60, 61, 62, 80, 81, 97, 128, 1513] {
                        let Some(mut f) = signed_frame(len, ipv6, use_tcp, vlan) else {
                            // The smallest sizes: headers take the room (the caller refuses).
                            assert!(len < 100, "{len} should fit");
                            continue;
                        };
                        for &(seq, ts) in &stamps {
                            stamp(&mut f.bytes, seq, ts);
                            assert!(
                                l4_ok(&f),
                                "v6 {ipv6} tcp {use_tcp} vlan {vlan} len {len} seq {seq} ts {ts}"
                            );
                            assert!(checksum::verify_frame(&f.bytes, &f.layout));
                            let s = parse(&f.bytes).unwrap();
                            assert_eq!(
                                s,
                                Signature {
                                    flow: 0x1234,
                                    seq,
                                    tx_ns: ts & TS_MASK
                                }
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn stray_frames_and_short_buffers_have_no_signature() {
        let s = spec(None, v4(), udp(), Payload::Increment);
        let f = build(&s, 64).unwrap();
        assert_eq!(parse(&f.bytes), None);
        assert_eq!(parse(&[0u8; 10]), None);
        let mut short = [0u8; 10];
        assert!(!write_template(&mut short, 1));
    }

    #[test]
    fn latency_wraps_at_48_bits_and_refuses_the_future() {
        assert_eq!(latency(100, 1_100), Some(1_000));
        // Sent just before the 48-bit wrap, received just after.
        let rx = (5u64 << TS_BITS) + 50;
        assert_eq!(latency(TS_MASK - 49, rx), Some(100));
        assert_eq!(latency(2_000, 1_000), None);
    }
}
