//! A capture file's bytes read into frames: pcap (µs or ns) and pcapng (every interface's
//! timestamp resolution and offset), each frame checked against the port's MTU and the
//! Ethernet link type, and where it lies in the file kept rather than copied.

use pcap_file::DataLink;
use pcap_file::pcap::PcapParser;

use super::{Capture, CaptureFormat, Frames, MAX_CAPTURE_BYTES, MAX_CAPTURE_FRAMES};
use std::borrow::Cow;

use linerate_wire::units;

use crate::mapped::{self, MAX_STREAMED_FRAMES};

/// Reads and checks every frame of a capture file held in memory.
pub(super) fn read(bytes: &[u8], mtu: u32) -> Result<(CaptureFormat, Loader), String> {
    let magic = bytes
        .get(..4)
        .ok_or_else(|| format!("{} bytes: too short for a capture file", bytes.len()))?;
    let mut loader = Loader::new(mtu, bytes);
    let format = match u32::from_be_bytes(magic.try_into().expect("4 bytes")) {
        0xa1b2_c3d4 | 0xd4c3_b2a1 => {
            loader.pcap(bytes)?;
            CaptureFormat::Pcap { nanos: false }
        }
        0xa1b2_3c4d | 0x4d3c_b2a1 => {
            loader.pcap(bytes)?;
            CaptureFormat::Pcap { nanos: true }
        }
        0x0a0d_0d0a => {
            loader.pcapng(bytes)?;
            CaptureFormat::PcapNg
        }
        _ => {
            return Err(format!(
                "not a pcap or pcapng file (it starts with {:02x} {:02x} {:02x} {:02x})",
                magic[0], magic[1], magic[2], magic[3]
            ));
        }
    };
    if loader.spans.is_empty() {
        return Err("the capture holds no frame".into());
    }
    Ok((format, loader))
}

/// One pcapng interface: how its timestamps count and what it captured.
struct Interface {
    linktype: DataLink,
    snaplen: u32,
    /// Timestamp units per second, as a power: 10^-n (`pow2` false) or 2^-n.
    resol: u8,
    pow2: bool,
    offset_s: u64,
}

impl Interface {
    fn ns(&self, units: u64) -> u64 {
        let units = u128::from(units);
        let n = u32::from(self.resol);
        let ns = if self.pow2 {
            (units * 1_000_000_000) >> n.min(127)
        } else if n <= 9 {
            units * 10u128.pow(9 - n)
        } else {
            units / 10u128.pow((n - 9).min(38))
        };
        (ns + u128::from(self.offset_s) * 1_000_000_000).min(u128::from(u64::MAX)) as u64
    }
}

/// Frames as they are read, checked one by one: where each lies in the file and when it was
/// seen.
#[derive(Debug)]
pub(super) struct Loader {
    pub(super) mtu: u32,
    /// Address of the file's first byte, which the parsers' frames borrow from.
    pub(super) base: usize,
    pub(super) spans: Vec<u64>,
    pub(super) times: Vec<u64>,
    pub(super) first: Option<u64>,
    pub(super) bytes: u64,
    pub(super) max_len: usize,
    pub(super) reordered: u64,
}

impl Loader {
    fn new(mtu: u32, file: &[u8]) -> Self {
        Self {
            mtu,
            base: file.as_ptr() as usize,
            spans: Vec::new(),
            times: Vec::new(),
            first: None,
            bytes: 0,
            max_len: 0,
            reordered: 0,
        }
    }

    /// Within the caps of a capture loaded into the port's buffers.
    pub(super) fn fits_loaded(&self) -> bool {
        self.spans.len() <= MAX_CAPTURE_FRAMES && self.bytes <= MAX_CAPTURE_BYTES
    }

    /// The frames copied out of `file` (the bytes the loader read).
    pub(super) fn copy_frames(&self, file: &[u8]) -> Vec<Vec<u8>> {
        self.spans
            .iter()
            .map(|&s| {
                let (at, len) = mapped::unpack(s);
                file[at..at + len].to_vec()
            })
            .collect()
    }

    pub(super) fn into_capture(self, format: CaptureFormat, frames: Frames) -> Capture {
        Capture {
            format,
            frames,
            times_ns: self.times,
            reordered: self.reordered,
        }
    }

    fn pcap(&mut self, bytes: &[u8]) -> Result<(), String> {
        let (mut rest, parser) = PcapParser::new(bytes).map_err(|e| damaged("header", &e))?;
        let header = parser.header();
        ethernet_only(header.datalink)?;
        let nanos = header.ts_resolution == pcap_file::TsResolution::NanoSecond;
        while !rest.is_empty() {
            let k = self.spans.len() + 1;
            let (next, raw) = parser
                .next_raw_packet(rest)
                .map_err(|e| damaged(&format!("frame {k}"), &e))?;
            rest = next;
            let frac = u64::from(raw.ts_frac);
            let ns = u64::from(raw.ts_sec) * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
            self.frame(raw.data, raw.orig_len, header.snaplen, ns)?;
        }
        Ok(())
    }

    /// Reads the blocks itself rather than through pcap-file, whose parser wants every option
    /// list closed by opt_endofopt (the format makes it optional, tcpdump reads lists without)
    /// and takes a section of any version.
    fn pcapng(&mut self, bytes: &[u8]) -> Result<(), String> {
        let mut order = Order { big: true };
        let mut rest = bytes;
        let mut interfaces: Vec<Interface> = Vec::new();
        let mut sections = 0;
        while !rest.is_empty() {
            let k = self.spans.len() + 1;
            let what = if sections == 0 {
                "section header".to_owned()
            } else {
                format!("the block after frame {}", k - 1)
            };
            let damaged = |why: &str| format!("{what} cannot be read ({why}): the file is damaged");
            let (type_, body, next) = pcapng_block(rest, &mut order, &what)?;
            rest = next;
            match type_ {
                PCAPNG_SHB => {
                    let (Some(major), Some(minor)) = (order.u16(body, 4), order.u16(body, 6))
                    else {
                        return Err(damaged("a section header shorter than its fields"));
                    };
                    sections += 1;
                    if major != 1 {
                        return Err(format!(
                            "section {sections} is pcapng version {major}.{minor}: linerate reads version 1 only, as tcpdump does; write the capture again as pcapng 1 or pcap"
                        ));
                    }
                    interfaces.clear();
                }
                PCAPNG_IDB => {
                    let (Some(linktype), Some(snaplen)) = (order.u16(body, 0), order.u32(body, 4))
                    else {
                        return Err(damaged("an interface block shorter than its fields"));
                    };
                    let linktype = DataLink::from(u32::from(linktype));
                    ethernet_only(linktype)?;
                    let mut i = Interface {
                        linktype,
                        snaplen,
                        resol: 6,
                        pow2: false,
                        offset_s: 0,
                    };
                    for (code, value) in pcapng_options(&body[8..], order).map_err(damaged)? {
                        match (code, value.len()) {
                            (PCAPNG_IF_TSRESOL, 1) => {
                                (i.resol, i.pow2) = (value[0] & 0x7f, value[0] & 0x80 != 0);
                            }
                            (PCAPNG_IF_TSOFFSET, 8) => {
                                i.offset_s = order.u64(value, 0).expect("8 bytes");
                            }
                            _ => {}
                        }
                    }
                    interfaces.push(i);
                }
                PCAPNG_EPB => {
                    let field = |at| order.u32(body, at);
                    let (Some(id), Some(hi), Some(lo), Some(caplen), Some(orig_len)) =
                        (field(0), field(4), field(8), field(12), field(16))
                    else {
                        return Err(damaged("a packet block shorter than its fields"));
                    };
                    let data = body
                        .get(20..20 + caplen as usize)
                        .ok_or_else(|| damaged("a frame runs past its block"))?;
                    let i = interfaces.get(id as usize).ok_or_else(|| {
                        format!(
                            "frame {k} names interface {id} that no interface block describes: the file is damaged"
                        )
                    })?;
                    debug_assert_eq!(i.linktype, DataLink::ETHERNET);
                    let ns = i.ns(u64::from(hi) << 32 | u64::from(lo));
                    self.frame(Cow::Borrowed(data), orig_len, i.snaplen, ns)?;
                }
                PCAPNG_PB | PCAPNG_SPB => {
                    return Err(format!(
                        "frame {k} is in a {} block, which linerate does not replay (rewrite the file with editcap, which writes enhanced packet blocks)",
                        if type_ == PCAPNG_PB {
                            "packet (obsolete)"
                        } else {
                            "simple packet (no timestamp)"
                        }
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Checks one frame and keeps it.
    fn frame(
        &mut self,
        data: Cow<'_, [u8]>,
        orig_len: u32,
        snaplen: u32,
        ns: u64,
    ) -> Result<(), String> {
        let k = self.spans.len() + 1;
        let len = data.len();
        if (len as u64) < u64::from(orig_len) {
            return Err(format!(
                "frame {k} was captured cut to {len} of its {orig_len} bytes (snaplen {snaplen}): replaying it would send a different frame; capture with -s 0"
            ));
        }
        // A record cannot hold more of a frame than the frame had: the lengths are corrupt, and
        // which of the two is right cannot be told.
        if len as u64 > u64::from(orig_len) {
            return Err(format!(
                "frame {k} holds {len} bytes but says the frame on the wire was {orig_len}: the file is damaged"
            ));
        }
        if snaplen != 0 && len as u64 > u64::from(snaplen) {
            return Err(format!(
                "frame {k} holds {len} bytes, more than the file's snaplen {snaplen}: the file is damaged"
            ));
        }
        if len < 14 {
            return Err(format!(
                "frame {k} is {len} bytes, shorter than an Ethernet header"
            ));
        }
        let tags = vlan_tags(&data);
        let max = units::max_frame_size(self.mtu, tags) - units::FCS_LEN;
        if len > max {
            return Err(format!(
                "frame {k} is {len} bytes, over the {max} an MTU of {} carries{}: raise the MTU (the interface's, or the port's own for pcap and null)",
                self.mtu,
                if tags > 0 { " with its VLAN tags" } else { "" }
            ));
        }
        if self.spans.len() == MAX_STREAMED_FRAMES {
            return Err(format!(
                "over {MAX_STREAMED_FRAMES} frames, the most linerate streams (8 bytes of index each): cut it (editcap -c, tcpdump -c)"
            ));
        }
        // The parsers hand out slices of the file; a copy (never made for these formats) would
        // have no place in it.
        let Cow::Borrowed(slice) = data else {
            return Err(format!("frame {k} could not be located in the file"));
        };
        let at = (slice.as_ptr() as usize)
            .checked_sub(self.base)
            .ok_or_else(|| format!("frame {k} could not be located in the file"))?;
        let span = mapped::pack(at, len).ok_or_else(|| {
            format!("frame {k} lies at byte {at}: linerate indexes files up to 16 TiB")
        })?;
        if self.spans.try_reserve(1).is_err() || self.times.try_reserve(1).is_err() {
            return Err(format!("no memory to index frame {k}"));
        }
        let first = *self.first.get_or_insert(ns);
        let mut t = ns.saturating_sub(first);
        if ns < first || self.times.last().is_some_and(|&prev| t < prev) {
            self.reordered += 1;
            t = t.max(self.times.last().copied().unwrap_or(0));
        }
        self.bytes += len as u64;
        self.max_len = self.max_len.max(len);
        self.spans.push(span);
        self.times.push(t);
        Ok(())
    }
}

/// 802.1Q / 802.1ad tags at the front of a frame (at most two).
fn vlan_tags(frame: &[u8]) -> usize {
    let mut tags = 0;
    while tags < 2 {
        let at = 12 + tags * units::VLAN_TAG_LEN;
        match frame.get(at..at + 2) {
            Some([0x81, 0x00] | [0x88, 0xa8]) => tags += 1,
            _ => break,
        }
    }
    tags
}

fn ethernet_only(linktype: DataLink) -> Result<(), String> {
    if linktype == DataLink::ETHERNET {
        return Ok(());
    }
    Err(format!(
        "link type {linktype:?} ({}): linerate replays Ethernet captures only (link type 1, EN10MB)",
        u32::from(linktype)
    ))
}

const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
const PCAPNG_IDB: u32 = 1;
const PCAPNG_PB: u32 = 2;
const PCAPNG_SPB: u32 = 3;
const PCAPNG_EPB: u32 = 6;
const PCAPNG_IF_TSRESOL: u16 = 9;
const PCAPNG_IF_TSOFFSET: u16 = 14;

/// The byte order of a pcapng section, which its header's byte-order magic tells.
#[derive(Debug, Clone, Copy)]
struct Order {
    big: bool,
}

impl Order {
    fn bytes<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
        b.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let w = Self::bytes(b, at)?;
        Some(if self.big {
            u16::from_be_bytes(w)
        } else {
            u16::from_le_bytes(w)
        })
    }

    fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let w = Self::bytes(b, at)?;
        Some(if self.big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        })
    }

    fn u64(self, b: &[u8], at: usize) -> Option<u64> {
        let w = Self::bytes(b, at)?;
        Some(if self.big {
            u64::from_be_bytes(w)
        } else {
            u64::from_le_bytes(w)
        })
    }
}

/// The pcapng block at the start of `rest` (`what` in errors): its type, its body (a slice
/// of the file, which the loader's spans rely on) and the bytes after it. A section header sets
/// `order` first, from its byte-order magic; its type reads the same either way.
fn pcapng_block<'a>(
    rest: &'a [u8],
    order: &mut Order,
    what: &str,
) -> Result<(u32, &'a [u8], &'a [u8]), String> {
    let damaged = |why: String| format!("{what} cannot be read ({why}): the file is damaged");
    if rest.len() < 12 {
        return Err(format!("the file ends inside {what}: it is truncated"));
    }
    if rest[..4] == PCAPNG_SHB.to_be_bytes() {
        order.big = match rest[8..12] {
            [0x1a, 0x2b, 0x3c, 0x4d] => true,
            [0x4d, 0x3c, 0x2b, 0x1a] => false,
            _ => {
                return Err(damaged(
                    "a section header without its byte-order magic".into(),
                ));
            }
        };
    }
    let type_ = order.u32(rest, 0).expect("12 bytes");
    let len = order.u32(rest, 4).expect("12 bytes") as usize;
    if len < 12 || !len.is_multiple_of(4) {
        return Err(damaged(format!("a block {len} bytes long")));
    }
    if rest.len() < len {
        return Err(format!("the file ends inside {what}: it is truncated"));
    }
    if order.u32(rest, len - 4) != Some(len as u32) {
        return Err(damaged("a block whose two lengths differ".into()));
    }
    Ok((type_, &rest[8..len - 4], &rest[len..]))
}

/// A block's options as (code, value), up to opt_endofopt or the end of the block, whichever
/// comes first: "the last option MAY be opt_endofopt", so a reader must not wait for it.
fn pcapng_options(mut b: &[u8], order: Order) -> Result<Vec<(u16, &[u8])>, &'static str> {
    let mut out = Vec::new();
    while let (Some(code), Some(len)) = (order.u16(b, 0), order.u16(b, 2)) {
        if code == 0 {
            break;
        }
        let len = usize::from(len);
        let value = b.get(4..4 + len).ok_or("an option runs past its block")?;
        out.push((code, value));
        // The block is a whole number of words: the last option's padding is there too.
        b = b.get(4 + len.div_ceil(4) * 4..).unwrap_or_default();
    }
    Ok(out)
}

fn damaged(what: &str, e: &pcap_file::PcapError) -> String {
    match e {
        pcap_file::PcapError::IncompleteBuffer => {
            format!("the file ends inside {what}: it is truncated")
        }
        other => format!("{what} cannot be read ({other}): the file is damaged"),
    }
}
