//! A capture file opened for a replay: mapped read-only when it is a regular file (its frames
//! copied out when it is loaded, left in the map when streamed), read whole when it is a pipe.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use linerate_stream::{Capture, CaptureIndex, FileBytes, MAX_CAPTURE_BYTES, MAX_CAPTURE_FRAMES};
use memmap2::{Advice, Mmap};

use crate::FileError;

/// Whether a capture within the load caps is loaded or streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Hold {
    /// Loaded when within `MAX_CAPTURE_FRAMES` and `MAX_CAPTURE_BYTES`, streamed otherwise.
    #[default]
    Auto,
    /// Streamed whatever its size.
    Stream,
}

/// Reads and checks the capture at `path` for a port of `mtu`: refused before anything is sent
/// when it is not a pcap/pcapng file, is damaged or cut short, is not Ethernet, holds a frame
/// cut by the snaplen or over the MTU, or holds more than `MAX_STREAMED_FRAMES`
/// (`CaptureIndex::read` says which). A regular file is mapped; its frames are copied out when
/// it is loaded, left there when streamed. A pipe (`<(zcat t.pcap.gz)`) cannot be mapped: it is
/// read whole and loaded.
pub fn load_capture(path: &Path, mtu: u32, hold: Hold) -> Result<Capture, FileError> {
    let shown = path.display().to_string();
    let failed = |why: String| FileError::Capture {
        path: shown.clone(),
        why,
    };
    let io = |e: std::io::Error| failed(e.to_string());
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        return Err(failed("a directory, not a capture file".into()));
    }
    if !meta.is_file() {
        return read_unmapped(path, mtu, hold).map_err(failed);
    }
    let len = meta.len();
    if len < 4 {
        return Err(failed(format!("{len} bytes: too short for a capture file")));
    }
    let map = map_file(path).map_err(io)?;
    let index = CaptureIndex::read(&map, mtu).map_err(failed)?;
    if hold == Hold::Auto && index.fits_loaded() {
        return Ok(index.load(&map));
    }
    // Guarded only once it is streamed: a loaded capture's frames are copied out above, while
    // nothing would check the guard's mark.
    index
        .stream(Box::new(MappedFile::guard(map)))
        .map_err(failed)
}

/// A capture from a pipe or a device, which has no size to map: read whole (up to the load
/// caps) and loaded.
fn read_unmapped(path: &Path, mtu: u32, hold: Hold) -> Result<Capture, String> {
    if hold == Hold::Stream {
        return Err(
            "not a regular file (a pipe?): streaming maps the file, so write it to a file first"
                .into(),
        );
    }
    // The load caps' frames and their record headers, and one byte to tell a larger one.
    let most = MAX_CAPTURE_BYTES + 64 * MAX_CAPTURE_FRAMES as u64;
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(most + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > most {
        return Err(format!(
            "not a regular file (a pipe?) and larger than the {} MiB linerate loads from one: only a file can be streamed, so write it to a file first",
            most >> 20
        ));
    }
    Capture::parse(&bytes, mtu)
}

/// Maps `path` read-only.
fn map_file(path: &Path) -> std::io::Result<Mmap> {
    let file = File::open(path)?;
    // SAFETY: the map is private and read-only, so nothing here writes through it. Another
    // process that truncates or rewrites the file while it is replayed changes or (truncation)
    // faults what the map reads — tcpreplay's and Wireshark's mmap readers share this; the
    // usage docs say a capture must not be rewritten while it is replayed. A fault inside a
    // streamed capture's map is caught by its guard (truncation.rs, Linux).
    let map = unsafe { Mmap::map(&file)? };
    // The loader reads it once from the start, and a streamed replay in order, lap after lap.
    let _ = map.advise(Advice::Sequential);
    Ok(map)
}

/// A capture file mapped read-only for as long as its frames are streamed, its range
/// registered with the SIGBUS guard (Linux) so that a truncation under the map marks it cut
/// instead of killing the replay.
pub struct MappedFile {
    // Declared before the map: unregistered before the map goes.
    #[cfg(target_os = "linux")]
    guard: Option<crate::truncation::Guard>,
    map: Mmap,
}

impl MappedFile {
    fn guard(map: Mmap) -> Self {
        Self {
            #[cfg(target_os = "linux")]
            guard: crate::truncation::Guard::register(map.as_ptr(), map.len()),
            map,
        }
    }
}

impl fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedFile")
            .field("bytes", &self.map.len())
            .finish_non_exhaustive()
    }
}

impl FileBytes for MappedFile {
    #[inline]
    fn bytes(&self) -> &[u8] {
        &self.map
    }

    #[inline]
    fn cut_short(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self
            .guard
            .as_ref()
            .is_some_and(crate::truncation::Guard::cut);
        #[cfg(not(target_os = "linux"))]
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_stream::Frames;
    use pcap_file::DataLink;
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    use std::time::Duration;

    fn frame(i: u8, len: usize) -> Vec<u8> {
        let mut f = vec![i; len];
        f[12] = 0x08;
        f[13] = 0x00;
        f
    }

    fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ts_resolution: pcap_file::TsResolution::NanoSecond,
            ..PcapHeader::default()
        };
        let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
        for (i, f) in frames.iter().enumerate() {
            w.write_packet(&PcapPacket::new(
                Duration::from_millis(i as u64),
                f.len() as u32,
                f,
            ))
            .unwrap();
        }
        w.into_writer()
    }

    /// The same file loaded and streamed from its map: the same frames and times.
    #[test]
    fn a_file_loads_or_streams_from_its_map() {
        let frames: Vec<_> = (0..7u8)
            .map(|i| frame(i, 60 + 97 * usize::from(i)))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcap");
        std::fs::write(&path, pcap(&frames)).unwrap();
        let loaded = load_capture(&path, 1500, Hold::Auto).unwrap();
        let streamed = load_capture(&path, 1500, Hold::Stream).unwrap();
        assert!(!loaded.streamed() && streamed.streamed());
        assert_eq!(loaded.frames.loaded().unwrap(), &frames[..]);
        assert_eq!(streamed.times_ns, loaded.times_ns);
        let Frames::Streamed(m) = &streamed.frames else {
            unreachable!()
        };
        for (i, f) in frames.iter().enumerate() {
            assert_eq!(m.raw(i), &f[..], "frame {i}");
        }
        assert!(!m.cut_short());
    }

    #[test]
    fn what_is_no_capture_file_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_capture(dir.path(), 1500, Hold::Auto).unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
        let short = dir.path().join("short.pcap");
        std::fs::write(&short, [0xa1, 0xb2]).unwrap();
        let err = load_capture(&short, 1500, Hold::Auto).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "capture {}: 2 bytes: too short for a capture file",
                short.display()
            )
        );
        let gif = dir.path().join("c.gif");
        std::fs::write(&gif, b"GIF89a....").unwrap();
        let err = load_capture(&gif, 1500, Hold::Stream).unwrap_err();
        assert!(err.to_string().contains("not a pcap or pcapng"), "{err}");
        assert!(err.is_usage());
    }

    /// A pipe is read whole and loaded; streaming one is refused, since only a file maps.
    #[cfg(unix)]
    #[test]
    fn a_pipe_is_read_whole_and_never_streamed() {
        use std::os::fd::AsRawFd;
        let frames = vec![frame(1, 60), frame(2, 70)];
        let bytes = pcap(&frames);
        let pipe = |bytes: Vec<u8>| {
            let (reader, mut writer) = std::io::pipe().unwrap();
            let feed = std::thread::spawn(move || {
                let _ = std::io::Write::write_all(&mut writer, &bytes);
            });
            (reader, feed)
        };
        let (reader, feed) = pipe(bytes.clone());
        let path = format!("/dev/fd/{}", reader.as_raw_fd());
        let c = load_capture(Path::new(&path), 1500, Hold::Auto).unwrap();
        feed.join().unwrap();
        assert_eq!(c.frames.loaded().unwrap(), &frames[..]);
        let (reader, feed) = pipe(bytes);
        let path = format!("/dev/fd/{}", reader.as_raw_fd());
        let err = load_capture(Path::new(&path), 1500, Hold::Stream).unwrap_err();
        drop(reader);
        feed.join().unwrap();
        assert!(err.to_string().contains("streaming maps the file"), "{err}");
    }
}
