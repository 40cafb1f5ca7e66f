//! Capture files that every reader accepts: pcap or pcapng, Ethernet, in the host's byte order
//! (as libpcap writes them: some readers, pypcapfile among them, read nothing else), with
//! nanosecond timestamps, and each frame optionally carrying the FCS the wire carried.
//!
//! The FCS, when asked for, is the frame's CRC-32 appended as the wire carries it, so a frame
//! captured from an OTG flow of `size` 128 is 128 bytes long. pcap has no per-interface FCS
//! field that readers agree on (the link-type's "FCS present" bits make scapy fall back to raw
//! bytes), so a pcap says nothing and readers show the FCS as trailing bytes (Wireshark: "assume
//! packets have FCS"); pcapng says it in the interface's `if_fcslen` option.

use std::borrow::Cow;
use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::{DataLink, Endianness, TsResolution};

/// The file format of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SaveFormat {
    #[default]
    Pcap,
    Pcapng,
}

/// How a capture is written.
#[derive(Debug, Clone, Default)]
pub struct SaveOptions {
    pub format: SaveFormat,
    /// Append each frame's FCS (the frames given are without it, as a socket reads them).
    pub fcs: bool,
    /// The interface the frames came from, named in a pcapng's interface block.
    pub interface: Option<String>,
}

/// The largest record the file declares it holds: Wireshark's and tcpdump's maximum.
pub const SNAPLEN: u32 = 262_144;

/// The Ethernet FCS of `frame` (IEEE 802.3 CRC-32), in the byte order the wire carries it.
pub fn fcs(frame: &[u8]) -> [u8; 4] {
    crc32fast::hash(frame).to_le_bytes()
}

/// Writes `frames` (arrival time, frame without FCS) as one capture file into `out`.
pub fn write_capture<'a, W: Write>(
    out: W,
    frames: impl IntoIterator<Item = (SystemTime, &'a [u8])>,
    options: &SaveOptions,
) -> io::Result<()> {
    let mut frames = frames.into_iter().map(|(at, frame)| {
        let mut record = Vec::with_capacity(frame.len() + 4);
        record.extend_from_slice(frame);
        if options.fcs {
            record.extend_from_slice(&fcs(frame));
        }
        (at.duration_since(UNIX_EPOCH).unwrap_or_default(), record)
    });
    match options.format {
        SaveFormat::Pcap => write_pcap(out, &mut frames),
        SaveFormat::Pcapng => write_pcapng(out, &mut frames, options),
    }
}

/// A pcap header in the host's byte order, Ethernet, nanosecond timestamps.
pub fn pcap_header() -> PcapHeader {
    PcapHeader {
        datalink: DataLink::ETHERNET,
        ts_resolution: TsResolution::NanoSecond,
        snaplen: SNAPLEN,
        endianness: Endianness::native(),
        ..PcapHeader::default()
    }
}

fn write_pcap<W: Write>(
    out: W,
    frames: &mut dyn Iterator<Item = (Duration, Vec<u8>)>,
) -> io::Result<()> {
    let mut w = PcapWriter::with_header(out, pcap_header()).map_err(io::Error::other)?;
    for (ts, data) in frames {
        w.write_packet(&PcapPacket::new(ts, data.len() as u32, &data))
            .map_err(io::Error::other)?;
    }
    w.into_writer().flush()
}

fn write_pcapng<W: Write>(
    out: W,
    frames: &mut dyn Iterator<Item = (Duration, Vec<u8>)>,
    options: &SaveOptions,
) -> io::Result<()> {
    let mut w =
        PcapNgWriter::with_endianness(out, Endianness::native()).map_err(io::Error::other)?;
    // if_tsresol 9: the enhanced packet blocks pcap-file writes count nanoseconds.
    let mut interface_options = vec![InterfaceDescriptionOption::IfTsResol(9)];
    if options.fcs {
        interface_options.push(InterfaceDescriptionOption::IfFcsLen(4));
    }
    if let Some(name) = &options.interface {
        interface_options.push(InterfaceDescriptionOption::IfName(Cow::Borrowed(name)));
    }
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen: SNAPLEN,
        options: interface_options,
    })
    .map_err(io::Error::other)?;
    for (timestamp, data) in frames {
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp,
            original_len: data.len() as u32,
            data: Cow::Owned(data),
            options: vec![],
        })
        .map_err(io::Error::other)?;
    }
    w.into_inner().flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;
    use pcap_file::pcapng::{Block, PcapNgReader};

    fn frames() -> Vec<(SystemTime, Vec<u8>)> {
        (0..3u8)
            .map(|i| {
                let at = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789 + u32::from(i));
                (at, vec![i; 60 + usize::from(i)])
            })
            .collect()
    }

    fn write(options: &SaveOptions) -> Vec<u8> {
        let frames = frames();
        let mut out = Vec::new();
        write_capture(
            &mut out,
            frames.iter().map(|(t, f)| (*t, f.as_slice())),
            options,
        )
        .unwrap();
        out
    }

    #[test]
    fn the_fcs_is_the_ethernet_crc32_as_the_wire_carries_it() {
        // A frame followed by its FCS leaves the CRC-32 residue (IEEE 802.3's magic number,
        // 0xdebb20e3 after the final inversion), whatever the frame.
        for frame in [&b"123456789"[..], &[0u8; 60], &[0xff; 1514]] {
            let mut wire = frame.to_vec();
            wire.extend_from_slice(&fcs(frame));
            assert_eq!(crc32fast::hash(&wire), 0x2144_df1c, "{frame:?}");
        }
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(fcs(b"123456789"), 0xcbf4_3926u32.to_le_bytes());
    }

    #[test]
    fn a_pcap_is_written_in_host_order_with_ns_timestamps() {
        let out = write(&SaveOptions::default());
        let magic = u32::from_ne_bytes(out[..4].try_into().unwrap());
        assert_eq!(magic, 0xa1b2_3c4d, "nanosecond magic in host order");
        let mut r = PcapReader::new(&out[..]).unwrap();
        assert_eq!(r.header().endianness, Endianness::native());
        let mut n = 0;
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            let (at, frame) = &frames()[n];
            assert_eq!(p.timestamp, at.duration_since(UNIX_EPOCH).unwrap());
            assert_eq!(&p.data[..], &frame[..]);
            n += 1;
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn frames_carry_their_fcs_when_asked() {
        let out = write(&SaveOptions {
            fcs: true,
            ..Default::default()
        });
        let mut r = PcapReader::new(&out[..]).unwrap();
        for (_, frame) in frames() {
            let p = r.next_packet().unwrap().unwrap();
            assert_eq!(p.data.len(), frame.len() + 4);
            assert_eq!(p.orig_len as usize, frame.len() + 4);
            assert_eq!(&p.data[frame.len()..], &fcs(&frame));
        }
    }

    #[test]
    fn a_pcapng_says_its_fcs_length_and_ns_resolution() {
        let out = write(&SaveOptions {
            format: SaveFormat::Pcapng,
            fcs: true,
            interface: Some("lr1".into()),
        });
        let mut r = PcapNgReader::new(&out[..]).unwrap();
        assert_eq!(r.section().endianness, Endianness::native());
        let mut packets = Vec::new();
        while let Some(b) = r.next_block() {
            match b.unwrap() {
                Block::InterfaceDescription(i) => {
                    assert_eq!(i.linktype, DataLink::ETHERNET);
                    assert!(i.options.contains(&InterfaceDescriptionOption::IfFcsLen(4)));
                    assert!(
                        i.options
                            .contains(&InterfaceDescriptionOption::IfTsResol(9))
                    );
                    assert!(
                        i.options
                            .contains(&InterfaceDescriptionOption::IfName("lr1".into()))
                    );
                }
                Block::EnhancedPacket(p) => packets.push((p.timestamp, p.data.into_owned())),
                _ => {}
            }
        }
        let want: Vec<_> = frames()
            .into_iter()
            .map(|(at, mut f)| {
                let sum = fcs(&f);
                f.extend_from_slice(&sum);
                (at.duration_since(UNIX_EPOCH).unwrap(), f)
            })
            .collect();
        assert_eq!(packets, want);
    }
}
