//! The kernel ABI of `/dev/bpf` this crate relies on: ioctl numbers, the batch-write record
//! header and the read filter, all computed here from the BSD ioctl encoding so that they can be
//! checked on every platform, and asserted against the `libc` crate where it has them.
//!
//! Sources: `bsd/net/bpf.h` (xnu, public ioctls 102–121), `bsd/net/bpf_private.h` (xnu 2025, the
//! private ioctls 139–145, which moved there from `bpf.h`), `sys/net/bpf.h` (FreeBSD).

/// `<sys/ioccom.h>`: the parameter is copied out of the kernel.
const IOC_OUT: u32 = 0x4000_0000;
/// `<sys/ioccom.h>`: the parameter is copied into the kernel.
const IOC_IN: u32 = 0x8000_0000;
/// `<sys/ioccom.h>`: parameters are at most 8191 bytes.
const IOCPARM_MASK: u32 = 0x1fff;

/// `_IOC(inout, group, num, len)` of `<sys/ioccom.h>` (identical on xnu and FreeBSD).
pub const fn ioc(inout: u32, group: u8, num: u8, len: usize) -> u32 {
    inout | (((len as u32) & IOCPARM_MASK) << 16) | ((group as u32) << 8) | num as u32
}
/// `_IOW(group, num, type)`.
pub const fn iow(group: u8, num: u8, len: usize) -> u32 {
    ioc(IOC_IN, group, num, len)
}
/// `_IOR(group, num, type)`.
pub const fn ior(group: u8, num: u8, len: usize) -> u32 {
    ioc(IOC_OUT, group, num, len)
}
/// `_IOWR(group, num, type)`.
pub const fn iowr(group: u8, num: u8, len: usize) -> u32 {
    ioc(IOC_IN | IOC_OUT, group, num, len)
}

/// `sizeof(int)` and `sizeof(u_int)`.
const INT: usize = 4;
/// `sizeof(struct ifreq)`: `IFNAMSIZ` (16) plus a 16-byte union, on xnu and 64-bit FreeBSD.
pub const IFREQ_SIZE: usize = 32;

/// `_IOWR('B', 102, u_int)`: kernel buffer length; must come before `BIOCSETIF`.
pub const BIOCSBLEN: u32 = iowr(b'B', 102, INT);
/// `_IOW('B', 103, struct bpf_program)`: the read filter.
pub const BIOCSETF: u32 = iow(b'B', 103, size_of::<BpfProgram>());
/// `_IOR('B', 106, u_int)`: the link type of the attached interface.
pub const BIOCGDLT: u32 = ior(b'B', 106, INT);
/// `_IOW('B', 109, struct timeval)`: a blocked read returns after this long (64-bit timeval).
pub const BIOCSRTIMEOUT: u32 = iow(b'B', 109, 16);
/// `_IOR('B', 111, struct bpf_stat)`: frames the filter saw and frames the buffer dropped.
pub const BIOCGSTATS: u32 = ior(b'B', 111, 2 * INT);
/// `_IOW('B', 112, u_int)`: 1 = return each frame at once; 0 = when the buffer fills or times out.
pub const BIOCIMMEDIATE: u32 = iow(b'B', 112, INT);
/// `_IOW('B', 108, struct ifreq)`: attach to an interface.
pub const BIOCSETIF: u32 = iow(b'B', 108, IFREQ_SIZE);
/// `_IOW('B', 117, u_int)`: 1 = frames carry their own source MAC (no rewrite).
pub const BIOCSHDRCMPLT: u32 = iow(b'B', 117, INT);
/// `_IOW('B', 119, u_int)`: xnu `BIOCSSEESENT` (0 = do not see sent frames). FreeBSD names the
/// same number `BIOCSDIRECTION` and keeps `BIOCSSEESENT` as an alias; there 0 is `BPF_D_IN`.
pub const BIOCSSEESENT: u32 = iow(b'B', 119, INT);
/// FreeBSD `BIOCSDIRECTION`: the same request number as `BIOCSSEESENT`.
pub const BIOCSDIRECTION_FREEBSD: u32 = BIOCSSEESENT;
/// FreeBSD `enum bpf_direction`: `BPF_D_IN` (see incoming frames only).
pub const BPF_D_IN: u32 = 0;
/// xnu private `_IOW('B', 140, u_int)`: largest frame a write may carry (frames above the MTU).
pub const BIOCSWRITEMAX: u32 = iow(b'B', 140, INT);
/// xnu private `_IOR('B', 142, int)`.
pub const BIOCGBATCHWRITE: u32 = ior(b'B', 142, INT);
/// xnu private `_IOW('B', 143, int)` (macOS 14.4+): one `write()` carries many records.
pub const BIOCSBATCHWRITE: u32 = iow(b'B', 143, INT);

/// `DLT_EN10MB`: Ethernet, the only link type linerate writes.
pub const DLT_EN10MB: u32 = 1;

/// `struct bpf_insn` of `<net/bpf.h>`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfInsn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// `struct bpf_program` of `<net/bpf.h>`.
#[repr(C)]
#[derive(Debug)]
pub struct BpfProgram {
    pub bf_len: u32,
    pub bf_insns: *const BpfInsn,
}

/// `BPF_RET | BPF_K`: return the constant `k` (the number of bytes to capture).
pub const BPF_RET_K: u16 = 0x06;

/// The read filter every linerate descriptor carries: `ret #0`, capture nothing, so that the
/// kernel never copies traffic into a buffer nobody reads.
pub const REJECT_ALL: [BpfInsn; 1] = [BpfInsn {
    code: BPF_RET_K,
    jt: 0,
    jf: 0,
    k: 0,
}];

/// `BPF_ALIGNMENT` of xnu: `sizeof(int32_t)`. (FreeBSD uses `sizeof(long)`, but FreeBSD has no
/// batch writes, so only the xnu value frames records.)
pub const BPF_ALIGNMENT: usize = 4;

/// `BPF_WORDALIGN(x)` of xnu.
pub const fn bpf_wordalign(x: usize) -> usize {
    (x + (BPF_ALIGNMENT - 1)) & !(BPF_ALIGNMENT - 1)
}

/// The `struct bpf_hdr` that starts each batch-write record, as 64-bit xnu lays it out
/// (`BPF_TIMEVAL` is `timeval32` under `__LP64__`): one table of byte ranges, read by the
/// encoder and the tests alike.
pub mod bpf_hdr {
    use std::ops::Range;

    /// `bh_tstamp.tv_sec` (`int32_t`), left zero on write.
    pub const TSTAMP_SEC: Range<usize> = 0..4;
    /// `bh_tstamp.tv_usec` (`int32_t`), left zero on write.
    pub const TSTAMP_USEC: Range<usize> = 4..8;
    /// `bh_caplen` (`bpf_u_int32`): bytes of frame that follow the header.
    pub const CAPLEN: Range<usize> = 8..12;
    /// `bh_datalen` (`bpf_u_int32`): the frame length, equal to `bh_caplen` on write.
    pub const DATALEN: Range<usize> = 12..16;
    /// `bh_hdrlen` (`u_short`): where the frame starts, from the start of the record.
    pub const HDRLEN: Range<usize> = 16..18;
    /// `sizeof(struct bpf_hdr)`: 18 bytes of fields padded to 4-byte alignment.
    pub const SIZE: usize = 20;
}

/// Bytes one frame of `frame_len` bytes takes in a batch write: header, frame, padding to
/// `BPF_WORDALIGN`.
pub const fn record_len(frame_len: usize) -> usize {
    bpf_wordalign(bpf_hdr::SIZE + frame_len)
}

const _: () = assert!(bpf_hdr::SIZE == bpf_wordalign(bpf_hdr::HDRLEN.end));
const _: () = assert!(size_of::<BpfInsn>() == 8);

// The request numbers against `libc`, where `libc` has them.
#[cfg(any(target_os = "macos", target_os = "freebsd"))]
mod against_libc {
    use super::*;
    use libc::c_ulong;

    const _: () = assert!(BIOCSBLEN as c_ulong == libc::BIOCSBLEN);
    const _: () = assert!(BIOCSETF as c_ulong == libc::BIOCSETF);
    const _: () = assert!(BIOCGDLT as c_ulong == libc::BIOCGDLT);
    const _: () = assert!(BIOCSETIF as c_ulong == libc::BIOCSETIF);
    const _: () = assert!(BIOCSHDRCMPLT as c_ulong == libc::BIOCSHDRCMPLT);
    const _: () = assert!(BIOCSRTIMEOUT as c_ulong == libc::BIOCSRTIMEOUT);
    const _: () = assert!(size_of::<libc::timeval>() == 16);
    const _: () = assert!(size_of::<libc::ifreq>() == IFREQ_SIZE);
    const _: () = assert!(size_of::<BpfProgram>() == 16);

    #[cfg(target_os = "freebsd")]
    const _: () = {
        assert!(BIOCSSEESENT as c_ulong == libc::BIOCSSEESENT);
        assert!(size_of::<libc::bpf_program>() == size_of::<BpfProgram>());
        assert!(size_of::<libc::bpf_insn>() == size_of::<BpfInsn>());
    };

    // libc describes xnu's `struct bpf_hdr` for macOS only (FreeBSD's has a 16-byte timeval and
    // is never used for writes).
    #[cfg(target_os = "macos")]
    const _: () = {
        assert!(size_of::<libc::bpf_hdr>() == bpf_hdr::SIZE);
        assert!(align_of::<libc::bpf_hdr>() == BPF_ALIGNMENT);
        assert!(std::mem::offset_of!(libc::bpf_hdr, bh_caplen) == bpf_hdr::CAPLEN.start);
        assert!(std::mem::offset_of!(libc::bpf_hdr, bh_datalen) == bpf_hdr::DATALEN.start);
        assert!(std::mem::offset_of!(libc::bpf_hdr, bh_hdrlen) == bpf_hdr::HDRLEN.start);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every number below was computed by hand from the encoding
    /// `IOC_IN 0x80000000 | len << 16 | 'B' (0x42) << 8 | num`, and cross-checked against the
    /// `libc` crate (public ones) and libpcap/xnu test users of the private ones.
    #[test]
    fn ioctl_numbers_match_the_headers() {
        assert_eq!(BIOCSBLEN, 0xc004_4266);
        assert_eq!(BIOCSETF, 0x8010_4267); // 64-bit: sizeof(struct bpf_program) == 16
        assert_eq!(BIOCGDLT, 0x4004_426a);
        assert_eq!(BIOCSETIF, 0x8020_426c);
        assert_eq!(BIOCSHDRCMPLT, 0x8004_4275);
        assert_eq!(BIOCSSEESENT, 0x8004_4277);
        assert_eq!(BIOCSRTIMEOUT, 0x8010_426d);
        assert_eq!(BIOCGSTATS, 0x4008_426f);
        assert_eq!(BIOCIMMEDIATE, 0x8004_4270);
        assert_eq!(BIOCSWRITEMAX, 0x8004_428c);
        assert_eq!(BIOCGBATCHWRITE, 0x4004_428e);
        assert_eq!(BIOCSBATCHWRITE, 0x8004_428f);
    }

    #[test]
    fn wordalign_rounds_up_to_four() {
        assert_eq!(
            [0, 1, 3, 4, 5, 18, 20, 80].map(bpf_wordalign),
            [0, 4, 4, 4, 8, 20, 20, 80]
        );
        assert_eq!(record_len(60), 80);
        assert_eq!(record_len(61), 84);
        assert_eq!(record_len(1514), 1536);
    }
}
