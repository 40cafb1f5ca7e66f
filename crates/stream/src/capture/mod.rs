//! Captures (pcap with µs or ns timestamps, pcapng) read once, checked, and compiled into a
//! [`Plan`] whose frames are the capture's in order and whose schedule is the capture's own
//! timing (scaled), a fixed rate, or none (as fast as the port takes them). A capture within the
//! load caps becomes a cycle laid into the port's buffers once; a larger one (or one asked to)
//! is streamed from its mapped file. The file is given as bytes (`linerate-files` maps or reads
//! it): what is here only parses.

use std::sync::Arc;

use linerate_wire::{MacAddr, units};

use crate::error::ReplaySetting;
use crate::mapped::{FileBytes, MappedFrames};
use crate::plan::{Cycle, Plan, Shape, StreamInfo};
use crate::{Pacing, Rate, StreamError};

mod read;

use read::{Loader, read};

/// Most frames a capture may hold: each becomes a slot of every worker's queue (a 2 KiB UMEM
/// chunk on AF_XDP, a 2 KiB entry of the live program's frame map), so 65,536 frames are
/// 128 MiB of port buffers per worker.
pub const MAX_CAPTURE_FRAMES: usize = 65_536;

/// Most bytes of frames a loaded capture may hold (the frames are kept in memory as the plan's
/// pre-built frames, as a stream's are). Larger captures are streamed.
pub const MAX_CAPTURE_BYTES: u64 = crate::spec::MAX_PLAN_BYTES;

/// The file's format, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Classic pcap; `nanos` when its timestamps are in nanoseconds.
    Pcap {
        nanos: bool,
    },
    PcapNg,
}

impl std::fmt::Display for CaptureFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Pcap { nanos: false } => "pcap (µs)",
            Self::Pcap { nanos: true } => "pcap (ns)",
            Self::PcapNg => "pcapng",
        })
    }
}

/// A capture's frames and when each was seen, from the first.
#[derive(Debug)]
pub struct Capture {
    pub format: CaptureFormat,
    /// The frames as captured (no FCS), in file order.
    pub frames: Frames,
    /// Nanoseconds from the first frame, never decreasing (see `reordered`).
    pub times_ns: Vec<u64>,
    /// Frames stamped earlier than the frame before them: they keep file order and are due
    /// with their predecessor.
    pub reordered: u64,
}

/// Where a capture's frames are held.
#[derive(Debug)]
pub enum Frames {
    /// Read into memory, to be laid into the port's buffers once.
    Loaded(Vec<Vec<u8>>),
    /// Left in the mapped file, copied into a buffer as each is sent.
    Streamed(MappedFrames),
}

impl Frames {
    /// The frames, when loaded.
    pub fn loaded(&self) -> Option<&[Vec<u8>]> {
        match self {
            Self::Loaded(frames) => Some(frames),
            Self::Streamed(_) => None,
        }
    }
}

/// How fast a capture replays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// As fast as the port takes the frames.
    Max,
    /// The capture's own gaps divided by this factor (`2x`: twice as fast).
    Times(f64),
}

impl Speed {
    /// Reads `max`, `1x`, `2.5x` or `0.5x` (the `x` may be left out).
    pub fn parse(text: &str) -> Result<Self, StreamError> {
        let fail = || StreamError::Replay {
            setting: ReplaySetting::Speed,
            why: format!(
                "'{text}' is not a speed: write max or a factor of the capture's own timing, e.g. 1x, 2.5x, 0.5x"
            ),
        };
        let t = text.trim();
        if t.eq_ignore_ascii_case("max") {
            return Ok(Self::Max);
        }
        let factor: f64 = t
            .strip_suffix(['x', 'X'])
            .unwrap_or(t)
            .parse()
            .map_err(|_| fail())?;
        if !(factor.is_finite() && (1e-6..=1e9).contains(&factor)) {
            return Err(StreamError::Replay {
                setting: ReplaySetting::Speed,
                why: format!("{text} is out of range: a factor from 0.000001x to 1e9x, or max"),
            });
        }
        Ok(Self::Times(factor))
    }
}

/// What a replay asks of a capture.
#[derive(Debug, Clone)]
pub struct Replay {
    pub speed: Speed,
    /// A fixed rate instead of the capture's timing (the `--rate` forms of a stream).
    pub rate: Option<String>,
    /// Times the capture is sent (None: until stopped).
    pub loops: Option<u64>,
    pub src_mac: Option<MacAddr>,
    pub dst_mac: Option<MacAddr>,
    pub link_mbps: Option<u64>,
}

impl Default for Replay {
    fn default() -> Self {
        Self {
            speed: Speed::Times(1.0),
            rate: None,
            loops: Some(1),
            src_mac: None,
            dst_mac: None,
            link_mbps: None,
        }
    }
}

/// A capture file's frames found and checked, each as where it lies in the file, before they
/// are copied out (loaded) or left there (streamed): the caller, who holds the file, decides.
#[derive(Debug)]
pub struct CaptureIndex {
    format: CaptureFormat,
    loader: Loader,
}

impl CaptureIndex {
    /// Reads and checks every frame of the capture file `file` for a port of `mtu`: refused when
    /// it is not a pcap/pcapng file, is damaged or cut short, is not Ethernet, holds a frame cut
    /// by the snaplen or over the MTU, or holds more than `MAX_STREAMED_FRAMES`. The error is the
    /// reason, without the path.
    pub fn read(file: &[u8], mtu: u32) -> Result<Self, String> {
        let (format, loader) = read(file, mtu)?;
        Ok(Self { format, loader })
    }

    /// Within `MAX_CAPTURE_FRAMES` and `MAX_CAPTURE_BYTES`, the caps of a capture loaded into
    /// the port's buffers.
    pub fn fits_loaded(&self) -> bool {
        self.loader.fits_loaded()
    }

    /// The capture with its frames copied out of `file`, the bytes this index was read from.
    pub fn load(self, file: &[u8]) -> Capture {
        let frames = self.loader.copy_frames(file);
        self.loader
            .into_capture(self.format, Frames::Loaded(frames))
    }

    /// The capture with its frames left in `file`, the bytes this index was read from, copied
    /// out as each is sent.
    pub fn stream(mut self, file: Box<dyn FileBytes>) -> Result<Capture, String> {
        let spans = std::mem::take(&mut self.loader.spans);
        let frames = MappedFrames::new(file, spans, self.loader.max_len, self.loader.bytes)?;
        Ok(self
            .loader
            .into_capture(self.format, Frames::Streamed(frames)))
    }
}

impl Capture {
    /// Parses a whole capture file held in memory, loaded (refused over the load caps); the
    /// error is the reason, without the path.
    pub fn parse(bytes: &[u8], mtu: u32) -> Result<Self, String> {
        let index = CaptureIndex::read(bytes, mtu)?;
        if !index.fits_loaded() {
            return Err(format!(
                "over {MAX_CAPTURE_FRAMES} frames or {} MiB of frames, the most linerate loads into the port's buffers",
                MAX_CAPTURE_BYTES >> 20
            ));
        }
        Ok(index.load(bytes))
    }

    /// Frames in the capture.
    pub fn frame_count(&self) -> u64 {
        self.times_ns.len() as u64
    }

    /// Whether the frames are streamed from the file rather than loaded.
    pub fn streamed(&self) -> bool {
        matches!(self.frames, Frames::Streamed(_))
    }

    /// Bytes of frames, FCS excluded.
    pub fn bytes(&self) -> u64 {
        match &self.frames {
            Frames::Loaded(frames) => frames.iter().map(|f| f.len() as u64).sum(),
            Frames::Streamed(m) => m.bytes(),
        }
    }

    /// From the first frame to the last, in nanoseconds.
    pub fn duration_ns(&self) -> u64 {
        self.times_ns.last().copied().unwrap_or(0)
    }

    /// Compiles the capture into a plan: one cycle of its frames (addresses rewritten as asked)
    /// or the streamed file, sent `loops` times, on the capture's timing scaled by the speed, on
    /// a fixed rate, or as fast as the port goes. A loop starts one mean gap after the previous
    /// one's last frame.
    pub fn plan(self, name: &str, replay: &Replay) -> Result<Plan, StreamError> {
        let n = self.frame_count();
        let pacing = match &replay.rate {
            Some(rate) => {
                let lens: Box<dyn Iterator<Item = usize>> = match &self.frames {
                    Frames::Loaded(frames) => Box::new(frames.iter().map(Vec::len)),
                    Frames::Streamed(m) => Box::new((0..m.len() as usize).map(|i| m.len_of(i))),
                };
                fixed_rate(lens, n as usize, rate, replay.link_mbps)?
            }
            None => match replay.speed {
                Speed::Max => None,
                Speed::Times(factor) => own_timing(&self.times_ns, factor)?,
            },
        };
        drop(self.times_ns);
        let count = match replay.loops {
            Some(l) => Some(n.checked_mul(l).ok_or_else(|| StreamError::Replay {
                setting: ReplaySetting::Loops,
                why: format!("{l} loops of {n} frames do not fit a 64-bit count"),
            })?),
            None => None,
        };
        let shape = match self.frames {
            Frames::Loaded(mut frames) => {
                for f in &mut frames {
                    if let Some(mac) = replay.dst_mac {
                        f[..6].copy_from_slice(&mac);
                    }
                    if let Some(mac) = replay.src_mac {
                        f[6..12].copy_from_slice(&mac);
                    }
                }
                Shape::Cycle {
                    cycle: Cycle {
                        frames,
                        patches: Vec::new(),
                        count,
                        seed: 0,
                        stamp: None,
                    },
                    pacing,
                }
            }
            Frames::Streamed(mut m) => {
                m.dst_mac = replay.dst_mac;
                m.src_mac = replay.src_mac;
                Shape::Streamed {
                    frames: Arc::new(m),
                    pacing,
                    count,
                }
            }
        };
        Ok(Plan {
            shape,
            streams: vec![StreamInfo {
                name: name.to_owned(),
                cached: Vec::new(),
                patched: Vec::new(),
            }],
            first_flow: 0,
        })
    }
}

/// The capture's own schedule, its gaps divided by `factor`; None when every frame has the same
/// time (nothing to keep: as fast as the port goes).
fn own_timing(times_ns: &[u64], factor: f64) -> Result<Option<Pacing>, StreamError> {
    let Some(&last) = times_ns.last() else {
        return Ok(None);
    };
    if last == 0 {
        return Ok(None);
    }
    let mean_gap = last as f64 / (times_ns.len() - 1) as f64;
    let cycle = (last as f64 + mean_gap) * 1000.0 / factor;
    // Picoseconds in 64 bits, with room for loops: a capture spanning months is most likely a
    // bad timestamp, and would wait that long.
    if cycle > MAX_LOOP_PS {
        return Err(StreamError::Replay {
            setting: ReplaySetting::Speed,
            why: format!(
                "the capture spans {:.0} s at this speed, longer than the {} days a loop may last (a frame with a wrong timestamp?): replay it faster, at a fixed rate or at max speed",
                cycle / crate::PS_PER_S,
                MAX_LOOP_PS / crate::PS_PER_S / 86_400.0
            ),
        });
    }
    if cycle < 1.0 {
        return Ok(None);
    }
    let scale = |ns: u64| (ns as f64 * 1000.0 / factor).round() as u64;
    let offsets: Vec<u64> = times_ns.iter().map(|&t| scale(t)).collect();
    let mut pacing = Pacing::from_ps(offsets, cycle.round() as u64);
    pacing.burst = pacing.burst.max(fast_run(&pacing));
    Ok(Some(pacing))
}

/// The longest one loop of a replay may last: 30 days in picoseconds (2.6e18, a seventh of
/// u64), so due times stay exact for loops on end.
const MAX_LOOP_PS: f64 = 30.0 * 86_400.0 * crate::PS_PER_S;

/// The longest run of frames that follow each other faster than twice the schedule's mean
/// rate. The pacer's catch-up bucket (twice the mean rate, `burst` frames deep) would otherwise
/// hold back a capture's own bursts as if they were a worker catching up.
fn fast_run(p: &Pacing) -> u64 {
    let half_gap = p.cycle_ps / p.cycle_frames.max(1) / 2;
    let (mut run, mut most) = (1u64, 1u64);
    for w in p.offsets_ps.windows(2) {
        run = if w[1] - w[0] < half_gap { run + 1 } else { 1 };
        most = most.max(run);
    }
    most
}

/// A fixed rate over the capture's frames: each frame's interval from its own size, as a
/// stream's bit rates are.
fn fixed_rate(
    lens: impl Iterator<Item = usize>,
    frames: usize,
    rate: &str,
    link_mbps: Option<u64>,
) -> Result<Option<Pacing>, StreamError> {
    let parsed = Rate::parse(rate)?;
    if parsed == Rate::Max {
        return Ok(None);
    }
    let invalid = |why: String| StreamError::Rate {
        input: rate.to_owned(),
        why,
    };
    let mut offsets = Vec::with_capacity(frames);
    let (mut t, mut bits) = (0.0f64, 0.0f64);
    for len in lens {
        offsets.push(t.round() as u64);
        let size = len + units::FCS_LEN;
        t += parsed.interval_ps(size, link_mbps).map_err(invalid)?;
        bits += (units::wire_bytes(size) * 8) as f64;
    }
    if t < 1.0 {
        return Err(invalid("too high to schedule (under 1 ps a frame)".into()));
    }
    if t > MAX_LOOP_PS {
        return Err(invalid(format!(
            "too low: one loop of the capture would last {:.0} s, over 30 days",
            t / crate::PS_PER_S
        )));
    }
    if let Some(mbps) = link_mbps
        && bits * crate::PS_PER_S / t > mbps as f64 * 1e6 * 1.000_001
    {
        return Err(invalid(format!(
            "asks for {:.1} Mbit/s on the wire, above the link's {mbps} Mbit/s",
            bits * crate::PS_PER_S / t / 1e6
        )));
    }
    Ok(Some(Pacing::from_ps(offsets, t.round() as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::DataLink;
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    use pcap_file::pcapng::PcapNgWriter;
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
    use std::borrow::Cow;
    use std::time::Duration;

    fn frame(i: u8, len: usize) -> Vec<u8> {
        let mut f = vec![i; len];
        f[12] = 0x08;
        f[13] = 0x00;
        f
    }

    fn pcap(frames: &[(u64, Vec<u8>)], nanos: bool, link: DataLink, snaplen: u32) -> Vec<u8> {
        let header = PcapHeader {
            datalink: link,
            snaplen,
            ts_resolution: if nanos {
                pcap_file::TsResolution::NanoSecond
            } else {
                pcap_file::TsResolution::MicroSecond
            },
            ..PcapHeader::default()
        };
        let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
        for (ns, f) in frames {
            w.write_packet(&PcapPacket::new(
                Duration::from_nanos(*ns),
                f.len() as u32,
                f,
            ))
            .unwrap();
        }
        w.into_writer()
    }

    fn pcapng(frames: &[(u64, Vec<u8>)], resol: Option<u8>) -> Vec<u8> {
        let mut w = PcapNgWriter::new(Vec::new()).unwrap();
        let mut idb = InterfaceDescriptionBlock::new(DataLink::ETHERNET, 65535);
        if let Some(r) = resol {
            idb.options.push(InterfaceDescriptionOption::IfTsResol(r));
        }
        w.write_pcapng_block(idb).unwrap();
        for (units, f) in frames {
            w.write_pcapng_block(EnhancedPacketBlock {
                interface_id: 0,
                // pcap-file stores the raw units through this field.
                timestamp: Duration::from_nanos(*units),
                original_len: f.len() as u32,
                data: Cow::Borrowed(f),
                options: vec![],
            })
            .unwrap();
        }
        w.into_inner()
    }

    /// Issue 27 #20: a record whose captured length exceeds the frame's original length was
    /// accepted; it is damaged.
    #[test]
    fn a_record_longer_than_its_frame_is_refused_as_damaged() {
        // Written by hand: pcap-file's writer refuses such a record.
        let mut file = pcap(&[], false, DataLink::ETHERNET, 65535);
        let f = frame(1, 60);
        for word in [0u32, 0, 60, 59] {
            file.extend_from_slice(&word.to_be_bytes());
        }
        file.extend_from_slice(&f);
        let err = Capture::parse(&file, 1500).unwrap_err().to_string();
        assert!(
            err.contains("frame 1 holds 60 bytes but says the frame on the wire was 59"),
            "{err}"
        );
        assert!(err.contains("damaged"), "{err}");
    }

    #[test]
    fn pcap_in_micro_and_nanoseconds() {
        let frames: Vec<_> = (0..5u8)
            .map(|i| {
                (
                    1_000_000_000 + u64::from(i) * 1_000_000,
                    frame(i, 60 + usize::from(i)),
                )
            })
            .collect();
        for nanos in [false, true] {
            let c = Capture::parse(&pcap(&frames, nanos, DataLink::ETHERNET, 65535), 1500).unwrap();
            assert_eq!(c.format, CaptureFormat::Pcap { nanos });
            assert_eq!(
                c.times_ns,
                vec![0, 1_000_000, 2_000_000, 3_000_000, 4_000_000]
            );
            assert_eq!(
                c.frames.loaded().unwrap(),
                frames.iter().map(|f| f.1.clone()).collect::<Vec<_>>()
            );
        }
        // Nanoseconds survive only where the file holds them.
        let fine = vec![(7, frame(1, 60)), (1_234, frame(2, 60))];
        let ns = Capture::parse(&pcap(&fine, true, DataLink::ETHERNET, 65535), 1500).unwrap();
        assert_eq!(ns.times_ns, vec![0, 1_227]);
    }

    #[test]
    fn pcapng_follows_the_interface_resolution() {
        let frames = vec![(100, frame(1, 60)), (350, frame(2, 70))];
        let us = Capture::parse(&pcapng(&frames, None), 1500).unwrap();
        assert_eq!(us.format, CaptureFormat::PcapNg);
        assert_eq!(us.times_ns, vec![0, 250_000]);
        let ns = Capture::parse(&pcapng(&frames, Some(9)), 1500).unwrap();
        assert_eq!(ns.times_ns, vec![0, 250]);
        let pow2 = Capture::parse(&pcapng(&frames, Some(0x80 | 10)), 1500).unwrap();
        assert_eq!(pow2.times_ns, vec![0, 244_140_625]);
        assert_eq!(ns.frames.loaded().unwrap()[1], frame(2, 70));
    }

    /// A pcapng block by hand: `body` padded to 32 bits between the two lengths.
    fn block(big: bool, type_: u32, body: &[u8]) -> Vec<u8> {
        let word = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut body = body.to_vec();
        body.resize(body.len().div_ceil(4) * 4, 0);
        let len = body.len() as u32 + 12;
        let mut b = word(type_).to_vec();
        b.extend_from_slice(&word(len));
        b.extend_from_slice(&body);
        b.extend_from_slice(&word(len));
        b
    }

    /// A pcapng file by hand: a section header of version `major`.0, an interface block
    /// whose options are `idb_options` as given (no opt_endofopt added), and one enhanced
    /// packet block per (timestamp units, frame), each with the options `epb_options`.
    fn pcapng_by_hand(
        big: bool,
        major: u16,
        idb_options: &[u8],
        frames: &[(u64, Vec<u8>)],
        epb_options: &[u8],
    ) -> Vec<u8> {
        let half = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let word = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut shb = word(0x1a2b_3c4d).to_vec();
        shb.extend_from_slice(&half(major));
        shb.extend_from_slice(&half(0));
        shb.extend_from_slice(&u64::MAX.to_ne_bytes());
        let mut file = block(big, 0x0a0d_0d0a, &shb);
        let mut idb = half(1).to_vec();
        idb.extend_from_slice(&half(0));
        idb.extend_from_slice(&word(65535));
        idb.extend_from_slice(idb_options);
        file.extend(block(big, 1, &idb));
        for (units, f) in frames {
            let mut epb = word(0).to_vec();
            epb.extend_from_slice(&word((units >> 32) as u32));
            epb.extend_from_slice(&word(*units as u32));
            epb.extend_from_slice(&word(f.len() as u32));
            epb.extend_from_slice(&word(f.len() as u32));
            epb.extend_from_slice(f);
            epb.resize(epb.len().div_ceil(4) * 4, 0);
            epb.extend_from_slice(epb_options);
            file.extend(block(big, 6, &epb));
        }
        file
    }

    /// One pcapng option: code, length, value padded to 32 bits.
    fn option(big: bool, code: u16, value: &[u8]) -> Vec<u8> {
        let half = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut o = half(code).to_vec();
        o.extend_from_slice(&half(value.len() as u16));
        o.extend_from_slice(value);
        o.resize(o.len().div_ceil(4) * 4, 0);
        o
    }

    /// Issue 40 #15: "the last option MAY be opt_endofopt" — tcpdump reads an option list
    /// that ends with its block, and so must linerate; a section of another major version is
    /// a format linerate does not know (tcpdump refuses it too).
    #[test]
    fn pcapng_options_may_end_with_their_block_and_only_version_1_is_read() {
        let frames = vec![(100, frame(1, 60)), (350, frame(2, 70))];
        for big in [false, true] {
            let ns_resol = option(big, 9, &[9]);
            let epb_flags = option(big, 2, &[0, 0, 0, 1]);
            let mut ended = ns_resol.clone();
            ended.extend(option(big, 0, &[]));
            for (idb, epb) in [
                (&ns_resol, &[][..]),
                (&ended, &[][..]),
                (&ns_resol, &epb_flags[..]),
            ] {
                let file = pcapng_by_hand(big, 1, idb, &frames, epb);
                let c = Capture::parse(&file, 1500)
                    .unwrap_or_else(|e| panic!("big-endian {big}, {idb:?}/{epb:?}: {e}"));
                assert_eq!(c.format, CaptureFormat::PcapNg);
                assert_eq!(c.times_ns, vec![0, 250], "if_tsresol 9 was read");
                assert_eq!(c.frames.loaded().unwrap()[1], frame(2, 70));
            }
            // An option running past its block is still damage.
            let mut over = ns_resol.clone();
            over[2..4].copy_from_slice(&if big {
                40u16.to_be_bytes()
            } else {
                40u16.to_le_bytes()
            });
            let err =
                Capture::parse(&pcapng_by_hand(big, 1, &over, &frames, &[]), 1500).unwrap_err();
            assert!(err.contains("damaged"), "{err}");

            let err =
                Capture::parse(&pcapng_by_hand(big, 2, &ended, &frames, &[]), 1500).unwrap_err();
            assert!(
                err.contains("pcapng version 2.0") && err.contains("version 1"),
                "{err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
        // A second section of version 2 further on is refused too.
        let mut two = pcapng_by_hand(false, 1, &[], &frames, &[]);
        two.extend(pcapng_by_hand(false, 2, &[], &frames, &[]));
        let err = Capture::parse(&two, 1500).unwrap_err();
        assert!(err.contains("pcapng version 2.0"), "{err}");
    }

    #[test]
    fn bad_captures_say_why() {
        let good = pcap(
            &[(0, frame(1, 60)), (5, frame(2, 60))],
            false,
            DataLink::ETHERNET,
            65535,
        );
        let err = |bytes: &[u8], mtu| Capture::parse(bytes, mtu).unwrap_err();
        assert!(
            err(&good[..good.len() - 7], 1500).contains("truncated"),
            "{}",
            err(&good[..good.len() - 7], 1500)
        );
        assert!(err(b"GIF89a....", 1500).contains("not a pcap or pcapng"));
        assert!(err(&good[..2], 1500).contains("too short"));
        let wifi = pcap(&[(0, frame(1, 60))], false, DataLink::IEEE802_11, 65535);
        assert!(
            err(&wifi, 1500).contains("Ethernet captures only"),
            "{}",
            err(&wifi, 1500)
        );
        // Cut by the snaplen: 100 bytes on the wire, 64 in the file.
        let mut cut = pcap(&[(0, frame(1, 64))], false, DataLink::ETHERNET, 64);
        let orig = cut.len() - 64 - 4;
        cut[orig..orig + 4].copy_from_slice(&100u32.to_be_bytes());
        assert!(
            err(&cut, 1500).contains("cut to 64 of its 100 bytes"),
            "{}",
            err(&cut, 1500)
        );
        let big = pcap(&[(0, frame(1, 1515))], false, DataLink::ETHERNET, 65535);
        assert!(
            err(&big, 1500).contains("over the 1514"),
            "{}",
            err(&big, 1500)
        );
        assert!(Capture::parse(&big, 9000).is_ok());
        let empty = pcap(&[], false, DataLink::ETHERNET, 65535);
        assert!(err(&empty, 1500).contains("no frame"));
    }

    #[test]
    fn a_vlan_tag_adds_its_four_bytes() {
        let mut f = frame(1, 1518);
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        let tagged = pcap(&[(0, f)], false, DataLink::ETHERNET, 65535);
        assert!(Capture::parse(&tagged, 1500).is_ok());
    }

    #[test]
    fn out_of_order_times_keep_file_order() {
        let c = Capture::parse(
            &pcap(
                &[
                    (1000, frame(1, 60)),
                    (3000, frame(2, 60)),
                    (2000, frame(3, 60)),
                    (500, frame(4, 60)),
                ],
                true,
                DataLink::ETHERNET,
                65535,
            ),
            1500,
        )
        .unwrap();
        assert_eq!(c.times_ns, vec![0, 2000, 2000, 2000]);
        assert_eq!(c.reordered, 2);
    }

    #[test]
    fn speed_scales_the_gaps_and_loops_repeat_after_a_mean_gap() {
        let frames: Vec<_> = (0..4u8)
            .map(|i| (u64::from(i) * 1_000_000, frame(i, 60)))
            .collect();
        let c = Capture::parse(&pcap(&frames, true, DataLink::ETHERNET, 65535), 1500).unwrap();
        let plan = c
            .plan(
                "c",
                &Replay {
                    speed: Speed::Times(2.0),
                    loops: Some(3),
                    dst_mac: Some([2, 0, 0, 0, 0, 9]),
                    ..Replay::default()
                },
            )
            .unwrap();
        let Shape::Cycle { cycle, pacing } = &plan.shape else {
            panic!()
        };
        assert_eq!(cycle.count, Some(12));
        assert_eq!(&cycle.frames[2][..6], &[2, 0, 0, 0, 0, 9]);
        assert_eq!(cycle.frames[2][6..], frame(2, 60)[6..]);
        let p = pacing.as_ref().unwrap();
        // 1 ms gaps at 2x: 0.5 ms; the next loop starts a (scaled) mean gap after the last frame.
        assert_eq!(p.due_ps(1), 500_000_000);
        assert_eq!(p.due_ps(3), 1_500_000_000);
        assert_eq!(p.due_ps(4), 2_000_000_000);
        assert_eq!(p.burst, 1);
    }

    #[test]
    fn a_capture_burst_is_not_held_back_by_the_catch_up_limit() {
        // Ten frames 1 µs apart, then one a second later: the mean gap is 100 ms.
        let mut frames: Vec<_> = (0..10u8)
            .map(|i| (u64::from(i) * 1000, frame(i, 60)))
            .collect();
        frames.push((1_000_000_000, frame(10, 60)));
        let c = Capture::parse(&pcap(&frames, true, DataLink::ETHERNET, 65535), 1500).unwrap();
        let p = own_timing(&c.times_ns, 1.0).unwrap().unwrap();
        assert_eq!(p.burst, 10);
    }

    #[test]
    fn a_capture_spanning_months_is_refused_at_its_own_speed() {
        let year = 365 * 86_400 * 1_000_000_000u64;
        let frames = vec![(0, frame(1, 60)), (year, frame(2, 60))];
        let c = || Capture::parse(&pcap(&frames, true, DataLink::ETHERNET, 65535), 1500).unwrap();
        let err = c().plan("c", &Replay::default()).unwrap_err().to_string();
        assert!(err.contains("30 days"), "{err}");
        assert!(
            c().plan(
                "c",
                &Replay {
                    speed: Speed::Max,
                    ..Replay::default()
                }
            )
            .is_ok()
        );
    }

    #[test]
    fn max_and_a_fixed_rate() {
        let frames: Vec<_> = (0..4u8)
            .map(|i| (u64::from(i) * 1_000_000, frame(i, 60)))
            .collect();
        let c = || Capture::parse(&pcap(&frames, true, DataLink::ETHERNET, 65535), 1500).unwrap();
        let plan = c()
            .plan(
                "c",
                &Replay {
                    speed: Speed::Max,
                    loops: None,
                    ..Replay::default()
                },
            )
            .unwrap();
        assert!(plan.requested_pps().is_none());
        assert_eq!(plan.count(), None);
        let plan = c()
            .plan(
                "c",
                &Replay {
                    rate: Some("1k".into()),
                    ..Replay::default()
                },
            )
            .unwrap();
        let pps = plan.requested_pps().unwrap();
        assert!((pps - 1000.0).abs() < 1e-6, "{pps}");
        let slow = Replay {
            rate: Some("0.000001".into()),
            ..Replay::default()
        };
        let err = c().plan("c", &slow).unwrap_err().to_string();
        assert!(err.contains("30 days"), "{err}");
    }

    /// A capture streamed from the file's bytes, as if mapped.
    fn streamed(file: Vec<u8>) -> Capture {
        CaptureIndex::read(&file, 1500)
            .unwrap()
            .stream(Box::new(file))
            .unwrap()
    }

    /// The same file loaded and streamed: the same frames (the streamed ones read from the
    /// file, the addresses rewritten as they are copied out), the same count and schedule; a
    /// pcapng streams too, its frames found between its blocks.
    #[test]
    fn a_streamed_capture_holds_the_loaded_frames() {
        let frames: Vec<_> = (0..7u8)
            .map(|i| (u64::from(i) * 1_000_000, frame(i, 60 + 97 * usize::from(i))))
            .collect();
        for (name, bytes) in [
            ("c.pcap", pcap(&frames, true, DataLink::ETHERNET, 65535)),
            ("c.pcapng", pcapng(&frames, Some(9))),
        ] {
            let loaded = Capture::parse(&bytes, 1500).unwrap();
            let streamed = streamed(bytes);
            assert!(!loaded.streamed() && streamed.streamed(), "{name}");
            assert_eq!(streamed.frame_count(), 7);
            assert_eq!(streamed.bytes(), loaded.bytes());
            assert_eq!(streamed.times_ns, loaded.times_ns);
            let Frames::Streamed(m) = &streamed.frames else {
                unreachable!()
            };
            let want = loaded.frames.loaded().unwrap();
            for (i, f) in want.iter().enumerate() {
                assert_eq!(m.raw(i), &f[..], "{name} frame {i}");
            }
            assert_eq!(m.max_len(), 60 + 97 * 6);
            let replay = Replay {
                speed: Speed::Times(2.0),
                loops: Some(3),
                dst_mac: Some([2, 0, 0, 0, 0, 9]),
                ..Replay::default()
            };
            let want = loaded.plan("c", &replay).unwrap();
            let plan = streamed.plan("c", &replay).unwrap();
            let (
                Shape::Cycle { cycle, pacing: p1 },
                Shape::Streamed {
                    frames,
                    pacing,
                    count,
                },
            ) = (&want.shape, &plan.shape)
            else {
                panic!("shapes: {:?}", plan.shape)
            };
            assert_eq!((*count, cycle.count), (Some(21), Some(21)));
            assert_eq!(pacing, p1);
            let mut buf = vec![0u8; frames.max_len()];
            for (i, f) in cycle.frames.iter().enumerate() {
                let len = frames.copy_into(i, &mut buf);
                assert_eq!(&buf[..len], &f[..], "{name} frame {i} as sent");
            }
            // Worker 1 of 2 sends frames 1, 3, 5, … of 21.
            let share = frames.for_worker(1, 2, *count, Some(20));
            assert_eq!(
                (share.first_seq, share.stride, share.count),
                (1, 2, Some(10))
            );
        }
    }

    #[test]
    fn speeds_parse() {
        assert_eq!(Speed::parse("max").unwrap(), Speed::Max);
        assert_eq!(Speed::parse("2.5x").unwrap(), Speed::Times(2.5));
        assert_eq!(Speed::parse("1").unwrap(), Speed::Times(1.0));
        assert!(Speed::parse("0x").is_err());
        assert!(Speed::parse("fast").is_err());
    }

    /// A streamed capture's parts and differences are the frames as sent: the replay's
    /// addresses over the file's, in whatever part of the frame is asked for.
    #[test]
    fn streamed_frames_copy_parts_and_find_differences_as_sent() {
        let mut a = frame(1, 64);
        a[40] = 9;
        let b = frame(1, 60);
        let c = streamed(pcap(
            &[(0, a.clone()), (1, b.clone())],
            false,
            DataLink::ETHERNET,
            65535,
        ));
        let replay = Replay {
            dst_mac: Some([0xd0; 6]),
            src_mac: Some([0x50; 6]),
            ..Replay::default()
        };
        let Shape::Streamed { frames, .. } = c.plan("p", &replay).unwrap().shape else {
            panic!("not streamed")
        };
        let sent = |f: &[u8]| {
            let mut f = f.to_vec();
            f[..6].fill(0xd0);
            f[6..12].fill(0x50);
            f
        };
        let (a, b) = (sent(&a), sent(&b));
        for (at, n) in [(0, 64), (3, 6), (4, 10), (10, 8), (58, 10), (70, 4)] {
            let mut out = vec![0xee; n];
            assert_eq!(frames.copy_part(0, at, &mut out), 64);
            let end = (at + n).min(64);
            let mut want = vec![0xee; n];
            if at < end {
                want[..end - at].copy_from_slice(&a[at..end]);
            }
            assert_eq!(out, want, "{at}+{n}");
        }
        let mut full = vec![0; 64];
        frames.copy_into(0, &mut full);
        assert_eq!(full, a);
        assert_eq!(frames.copy_into(1, &mut full), 60);
        assert_eq!(full[..60], b[..]);
        // Frame 1 against frame 0: byte 40 only (the addresses agree once rewritten), over the
        // 60 bytes they share, and nothing when that byte is skipped.
        assert_eq!(frames.differs(1, &a, 0..0), Some((40, 41)));
        assert_eq!(frames.differs(1, &a, 38..42), None);
        assert_eq!(frames.differs(0, &a, 0..0), None);
        let mut other = a.clone();
        other[2] = 0;
        other[20] = 0;
        assert_eq!(frames.differs(1, &other, 0..0), Some((2, 41)));
        assert_eq!(frames.differs(1, &other, 0..21), Some((40, 41)));
        assert_eq!(frames.differs(1, &other, 30..50), Some((2, 21)));
    }
}
