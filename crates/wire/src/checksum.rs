//! The Internet checksum (RFC 1071), its incremental update (RFC 1624) and the pseudo-headers
//! that UDP, TCP and ICMPv6 fold into theirs.

use crate::header::{at, get_be, ipv4, ipv6};
use crate::{L4Proto, Layout};

/// Ones-complement sum of big-endian 16-bit words, carries not yet folded; an odd trailing byte
/// is padded with zero. Chain calls through `initial` to sum discontiguous pieces whose
/// boundaries fall on even offsets.
pub fn sum(data: &[u8], initial: u32) -> u32 {
    // u64 so that no buffer of any length can overflow before the final fold.
    let mut acc = u64::from(initial);
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    while acc > u64::from(u32::MAX) {
        acc = (acc & 0xFFFF_FFFF) + (acc >> 32);
    }
    acc as u32
}

/// Folds carries back into 16 bits; not inverted.
#[inline]
pub fn fold(mut sum: u32) -> u16 {
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum as u16
}

/// The value to store in an IPv4 header's checksum field. Whatever the field holds now is ignored.
pub fn ipv4_header(header: &[u8]) -> u16 {
    let c = ipv4::field::CHECKSUM;
    !fold(sum(&header[c.end..], sum(&header[..c.start], 0)))
}

/// UDP/TCP/ICMPv6-style checksum over an IPv4 pseudo-header; `l4`'s checksum field must be zero.
pub fn l4_ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> u16 {
    !fold(sum(l4, pseudo_v4(src, dst, proto, l4.len())))
}

/// The same over an IPv6 pseudo-header (RFC 8200 §8.1).
pub fn l4_ipv6(src: [u8; 16], dst: [u8; 16], next: u8, l4: &[u8]) -> u16 {
    !fold(sum(l4, pseudo_v6(src, dst, next, l4.len())))
}

fn pseudo_v4(src: [u8; 4], dst: [u8; 4], proto: u8, len: usize) -> u32 {
    sum(&src, sum(&dst, u32::from(proto) + len as u32))
}

fn pseudo_v6(src: [u8; 16], dst: [u8; 16], next: u8, len: usize) -> u32 {
    let len = len as u32;
    sum(
        &src,
        sum(&dst, u32::from(next) + (len >> 16) + (len & 0xFFFF)),
    )
}

/// RFC 1624 eqn. 3 for one 16-bit word: HC' = ~(~HC + ~m + m').
#[inline]
pub fn update(hc: u16, old_word: u16, new_word: u16) -> u16 {
    !fold(u32::from(!hc) + u32::from(!old_word) + u32::from(new_word))
}

/// UDP sends a computed zero as 0xFFFF because zero on the wire means "no checksum".
#[inline]
pub(crate) fn udp_fixup(c: u16) -> u16 {
    if c == 0 { 0xFFFF } else { c }
}

/// The L4 checksum of a frame computed from scratch, ignoring the value in its field.
fn l4_computed(frame: &[u8], layout: &Layout) -> u16 {
    let l4 = &frame[layout.l4_offset..layout.len - layout.inner_fcs];
    let ip = &frame[layout.ip_offset..];
    let initial = if layout.ipv6 {
        let src = ip[ipv6::field::SRC_ADDR].try_into().expect("16 bytes");
        let dst = ip[ipv6::field::DST_ADDR].try_into().expect("16 bytes");
        pseudo_v6(src, dst, layout.l4.ip_proto(), l4.len())
    } else if layout.l4 == L4Proto::Icmpv4 {
        0
    } else {
        let src = ip[ipv4::field::SRC_ADDR].try_into().expect("4 bytes");
        let dst = ip[ipv4::field::DST_ADDR].try_into().expect("4 bytes");
        pseudo_v4(src, dst, layout.l4.ip_proto(), l4.len())
    };
    // The checksum field splits the sum at an even offset, so the two halves chain.
    let f = layout.l4.checksum_field();
    let c = !fold(sum(&l4[f.end..], sum(&l4[..f.start], initial)));
    if layout.l4 == L4Proto::Udp {
        udp_fixup(c)
    } else {
        c
    }
}

/// Guards against a hand-made layout that does not describe this buffer, so nothing here panics.
fn frame_fits(frame: &[u8], layout: &Layout) -> bool {
    if layout.ethernet_only {
        return frame.len() == layout.len && layout.payload_offset <= layout.len;
    }
    let ip_len = if layout.ipv6 {
        ipv6::HEADER_LEN
    } else {
        ipv4::HEADER_LEN
    };
    frame.len() == layout.len
        && layout.ip_offset + ip_len <= layout.l4_offset
        && layout.l4_offset + layout.l4.header_len() <= layout.payload_offset
        && layout.payload_offset + layout.inner_fcs <= layout.len
}

/// Computes and stores every checksum of a frame laid out as `layout`, from scratch.
/// Returns false (and writes nothing) when `frame` does not match `layout`.
pub fn fill_frame(frame: &mut [u8], layout: &Layout) -> bool {
    if !frame_fits(frame, layout) {
        return false;
    }
    if !layout.ipv6 && !layout.ethernet_only {
        let r = at(layout.ip_offset, 0..ipv4::HEADER_LEN);
        let c = ipv4_header(&frame[r]);
        frame[at(layout.ip_offset, ipv4::field::CHECKSUM)].copy_from_slice(&c.to_be_bytes());
    }
    if layout.l4 != L4Proto::None && !layout.ethernet_only {
        let c = l4_computed(frame, layout);
        frame[at(layout.l4_offset, layout.l4.checksum_field())].copy_from_slice(&c.to_be_bytes());
    }
    true
}

/// Verifies every checksum of a built frame from scratch (IPv4 header and L4) against the exact
/// bytes the builder would store; for tests and for `linerate` self-checks.
pub fn verify_frame(frame: &[u8], layout: &Layout) -> bool {
    if !frame_fits(frame, layout) {
        return false;
    }
    if !layout.ipv6 && !layout.ethernet_only {
        let r = at(layout.ip_offset, 0..ipv4::HEADER_LEN);
        let stored = get_be(frame, at(layout.ip_offset, ipv4::field::CHECKSUM)) as u16;
        if ipv4_header(&frame[r]) != stored {
            return false;
        }
    }
    if layout.l4 == L4Proto::None {
        return true;
    }
    let stored = get_be(frame, at(layout.l4_offset, layout.l4.checksum_field())) as u16;
    l4_computed(frame, layout) == stored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::unhex;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to 2ddf0, which folds to ddf2.
        let data = unhex("0001 f203 f4f5 f6f7");
        assert_eq!(sum(&data, 0), 0x2_ddf0);
        assert_eq!(fold(sum(&data, 0)), 0xddf2);
        // An odd trailing byte is the high byte of a zero-padded word.
        assert_eq!(sum(&[0xab], 0), 0xab00);
    }

    #[test]
    fn ipv4_header_known_vector() {
        // A header captured off the wire (checksum b861), with its field zeroed and not.
        let h = unhex("4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7");
        assert_eq!(ipv4_header(&h), 0xb861);
        let mut z = h.clone();
        z[ipv4::field::CHECKSUM].fill(0);
        assert_eq!(ipv4_header(&z), 0xb861);
    }

    #[test]
    fn update_agrees_with_recompute_for_every_word_value() {
        let mut h = unhex("4500 0073 0000 4000 4011 0000 c0a8 0001 c0a8 00c7");
        let hc = ipv4_header(&h);
        let r = ipv4::field::IDENT;
        let old = u16::from_be_bytes([h[r.start], h[r.start + 1]]);
        for new in 0..=u16::MAX {
            h[r.clone()].copy_from_slice(&new.to_be_bytes());
            assert_eq!(update(hc, old, new), ipv4_header(&h), "id {new:#x}");
        }
    }

    #[test]
    fn pseudo_header_checksums_chain_like_one_buffer() {
        let l4 = unhex("0400 1389 000a 0000 abcd");
        let (s, d) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let mut flat = vec![];
        flat.extend_from_slice(&s);
        flat.extend_from_slice(&d);
        flat.extend_from_slice(&[0, ipv4::PROTO_UDP, 0, l4.len() as u8]);
        flat.extend_from_slice(&l4);
        assert_eq!(l4_ipv4(s, d, ipv4::PROTO_UDP, &l4), !fold(sum(&flat, 0)));

        let (s6, d6) = ([0x20; 16], [0x30; 16]);
        let mut flat6 = vec![];
        flat6.extend_from_slice(&s6);
        flat6.extend_from_slice(&d6);
        flat6.extend_from_slice(&(l4.len() as u32).to_be_bytes());
        flat6.extend_from_slice(&[0, 0, 0, ipv4::PROTO_UDP]);
        flat6.extend_from_slice(&l4);
        assert_eq!(l4_ipv6(s6, d6, ipv4::PROTO_UDP, &l4), !fold(sum(&flat6, 0)));
    }

    #[test]
    fn verify_rejects_a_flipped_bit_and_a_wrong_layout() {
        let s = crate::testutil::spec(
            None,
            crate::testutil::v4(),
            crate::testutil::tcp(),
            crate::Payload::Increment,
        );
        let f = crate::testutil::build(&s, 100).unwrap();
        assert!(verify_frame(&f.bytes, &f.layout));
        for i in 14..f.bytes.len() {
            let mut b = f.bytes.clone();
            b[i] ^= 0x10;
            assert!(!verify_frame(&b, &f.layout), "flip at {i} not caught");
        }
        assert!(!verify_frame(&f.bytes[..90], &f.layout));
        let mut bogus = f.layout;
        bogus.l4_offset = 90;
        assert!(!verify_frame(&f.bytes, &bogus));
    }
}
