//! Frame units and wire-rate arithmetic: the one place that says what a frame costs on the link.
//!
//! A *frame size* counts the 4-byte FCS, as Ostinato, RFC 2544 and every max-rate table do; a
//! *buffer length* is what a port hands the NIC (the frame without its FCS, which the NIC appends).
//! On the link each frame also costs its preamble, SFD and inter-frame gap.

use std::fmt;
use std::str::FromStr;

use crate::header::{ethernet, vlan};
use crate::quantity;

/// The frame check sequence the NIC appends to every buffer.
pub const FCS_LEN: usize = 4;
/// Smallest Ethernet frame, FCS included.
pub const MIN_FRAME_SIZE: usize = 64;
/// One 802.1Q tag.
pub const VLAN_TAG_LEN: usize = vlan::TAG_LEN;
/// What a frame costs on the link beyond its own bytes: preamble 7 + SFD 1 + inter-frame gap 12.
pub const WIRE_OVERHEAD: usize = 20;
/// What a buffer (no FCS) costs on the link beyond its own bytes: the FCS and [`WIRE_OVERHEAD`].
pub const BUFFER_WIRE_OVERHEAD: usize = FCS_LEN + WIRE_OVERHEAD;
/// Bytes an MTU does not count in an untagged frame: the Ethernet header and the FCS.
pub const MTU_OVERHEAD: usize = ethernet::HEADER_LEN + FCS_LEN;
/// Largest IP packet a 16-bit IPv4 total length (or IPv6 payload length) can describe.
pub const MAX_IP_PACKET: usize = 65535;
/// Largest frame (FCS included) whose IPv4 total length still fits 16 bits behind an untagged
/// Ethernet header.
pub const MAX_FRAME_SIZE: usize = MAX_IP_PACKET + MTU_OVERHEAD;

/// The largest frame (FCS included) an interface with `mtu` carries, with `vlan_tags` 802.1Q tags.
pub const fn max_frame_size(mtu: u32, vlan_tags: usize) -> usize {
    mtu as usize + MTU_OVERHEAD + vlan_tags * VLAN_TAG_LEN
}

/// The buffer a port hands the NIC for a frame of `frame_size` bytes (FCS included).
pub const fn buffer_len(frame_size: usize) -> usize {
    frame_size.saturating_sub(FCS_LEN)
}

/// Bytes on the link for a frame of `frame_size` bytes (FCS included).
pub const fn wire_bytes(frame_size: usize) -> usize {
    frame_size + WIRE_OVERHEAD
}

/// Bits on the link for `frames` buffers totalling `buffer_bytes` (no FCS): what counters hold.
pub const fn wire_bits_of_buffers(buffer_bytes: u64, frames: u64) -> u64 {
    (buffer_bytes + frames * BUFFER_WIRE_OVERHEAD as u64) * 8
}

/// Megabits per second on the wire for `kpps` thousand frames per second of `size`-byte frames.
pub fn wire_mbps(size: usize, kpps: f64) -> f64 {
    wire_bytes(size) as f64 * kpps * 8.0 / 1000.0
}

/// Frames per second a link of `link_mbps` carries at most for `size`-byte frames.
pub fn line_rate_pps(size: usize, link_mbps: u64) -> f64 {
    link_mbps as f64 * 1e6 / (wire_bytes(size) as f64 * 8.0)
}

/// A link speed: what the OS reports (Mbit/s) or what a person types (`10G`, `2.5G`, `100M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkSpeed {
    mbps: u64,
}

impl LinkSpeed {
    pub const fn from_mbps(mbps: u64) -> Self {
        Self { mbps }
    }

    pub const fn mbps(self) -> u64 {
        self.mbps
    }

    /// Frames per second this link carries at most for `size`-byte frames.
    pub fn line_rate_pps(self, size: usize) -> f64 {
        line_rate_pps(size, self.mbps)
    }
}

/// A link speed that is not one of the spellings [`LinkSpeed`] reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("link speed `{input}` not understood: use 1G, 2.5G, 10G, 25G, 40G, 100G or <n>M")]
pub struct ParseLinkSpeedError {
    pub input: String,
}

impl FromStr for LinkSpeed {
    type Err = ParseLinkSpeedError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let bad = || ParseLinkSpeedError {
            input: input.to_string(),
        };
        // The bandwidth grammar (10G, 10g, 10Gb/s, 10GbE, 100M), in whole Mbit/s: a link
        // speed names its prefix, M or G.
        let bps = quantity::parse_bandwidth(input).map_err(|_| bad())?;
        let prefixed =
            quantity::split(input).is_some_and(|(_, unit)| unit.starts_with(['m', 'M', 'g', 'G']));
        let mbps = bps / 1e6;
        if !prefixed || mbps < 1.0 || mbps.fract() != 0.0 || mbps > 1e9 {
            return Err(bad());
        }
        Ok(Self { mbps: mbps as u64 })
    }
}

impl fmt::Display for LinkSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mbps.is_multiple_of(1000) {
            write!(f, "{}G", self.mbps / 1000)
        } else if self.mbps > 1000 && self.mbps.is_multiple_of(100) {
            write!(f, "{}G", self.mbps as f64 / 1000.0)
        } else {
            write!(f, "{}M", self.mbps)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    /// Hand-computed: pps = link_bps / ((size + 20) · 8), rounded to 0.01.
    const LINE_RATE_TABLE: &[(usize, u64, f64)] = &[
        (64, 1_000, 1_488_095.24),
        (64, 10_000, 14_880_952.38),
        (64, 25_000, 37_202_380.95),
        (64, 40_000, 59_523_809.52),
        (64, 100_000, 148_809_523.81),
        (128, 10_000, 8_445_945.95),
        (256, 10_000, 4_528_985.51),
        (512, 1_000, 234_962.41),
        (1024, 10_000, 1_197_318.01),
        (1280, 40_000, 3_846_153.85),
        (1518, 1_000, 81_274.38),
        (1518, 10_000, 812_743.82),
        (1518, 25_000, 2_031_859.56),
        (1518, 40_000, 3_250_975.29),
        (1518, 100_000, 8_127_438.23),
        (64, 2_500, 3_720_238.10),
    ];

    #[test]
    fn line_rate_matches_the_hand_computed_table() {
        for &(size, mbps, pps) in LINE_RATE_TABLE {
            let got = line_rate_pps(size, mbps);
            assert!(
                close(got, pps, 0.006),
                "{size} B at {mbps} Mbps: {got} != {pps}"
            );
            assert_eq!(LinkSpeed::from_mbps(mbps).line_rate_pps(size), got);
        }
    }

    #[test]
    fn mbps_counts_the_twenty_byte_overhead() {
        // 64 B at 14 880.952 Kpps fills 10 GbE exactly: 84 · 8 · 14 880.952 / 1000.
        assert!(close(wire_mbps(64, 14_880.952_38), 10_000.0, 0.001));
        assert!(close(wire_mbps(64, 1_000.0), 672.0, 1e-9));
        assert!(close(wire_mbps(1518, 81.274_38), 1_000.0, 0.001));
        assert!(close(wire_mbps(1024, 500.0), 4_176.0, 1e-9));
        for &(size, mbps, pps) in LINE_RATE_TABLE {
            assert!(close(wire_mbps(size, pps / 1000.0), mbps as f64, 0.01));
        }
    }

    #[test]
    fn sizes_follow_the_standards() {
        // A 1500-byte MTU carries 1518-byte frames, 1522 with one tag (IEEE 802.3, 802.1Q).
        assert_eq!(max_frame_size(1500, 0), 1518);
        assert_eq!(max_frame_size(1500, 1), 1522);
        assert_eq!(MAX_FRAME_SIZE, 65553);
        // `--size 64` is a 60-byte buffer; on the link it costs 84 bytes.
        assert_eq!(buffer_len(64), 60);
        assert_eq!(buffer_len(2), 0);
        assert_eq!(wire_bytes(64), 84);
        assert_eq!(wire_bits_of_buffers(60, 1), 84 * 8);
        assert_eq!(wire_bits_of_buffers(600, 10), 840 * 8);
    }

    #[test]
    fn link_speeds_parse_to_mbps() {
        for (text, mbps) in [
            ("1G", 1_000),
            ("2.5G", 2_500),
            ("10G", 10_000),
            ("25g", 25_000),
            ("40G", 40_000),
            ("100G", 100_000),
            ("100M", 100),
            ("10Gb/s", 10_000),
            ("10GbE", 10_000),
            ("5000M", 5_000),
        ] {
            assert_eq!(text.parse::<LinkSpeed>().unwrap().mbps(), mbps, "{text}");
        }
        for bad in ["", "10", "G", "fast", "-1G", "0M", "1.5M", "10T"] {
            let err = bad.parse::<LinkSpeed>().unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn link_speeds_display_as_typed() {
        for text in ["1G", "2.5G", "10G", "100G", "100M"] {
            assert_eq!(text.parse::<LinkSpeed>().unwrap().to_string(), text);
        }
    }
}
