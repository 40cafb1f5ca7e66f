use std::fs::File;
use std::io::BufWriter;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapPacket, PcapWriter};

use crate::{Port, PortError, PortInfo, QueueConfig, SlotMemory, TxDesc, TxQueue};

type Writer = PcapWriter<SharedFile>;

// The snaplen the file declares must hold the largest frame a plan builds (`MAX_FRAME_SIZE`,
// 65553 with the FCS), which 65535 did not.
const _: () = assert!(linerate_wire::MAX_FRAME_SIZE <= crate::savefile::SNAPLEN as usize);

/// The file under the pcap writer, reachable from outside it so `drain` can flush and report a
/// failed flush instead of losing it in a `Drop`.
#[derive(Debug, Clone)]
struct SharedFile(Arc<Mutex<BufWriter<File>>>);

impl std::io::Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lock()?.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.lock()?.flush()
    }
}

impl SharedFile {
    fn lock(&self) -> std::io::Result<std::sync::MutexGuard<'_, BufWriter<File>>> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("a pcap writer thread panicked"))
    }
}

/// Writes every submitted frame to one pcap file (Ethernet, nanosecond timestamps). All queues
/// share the file; frames of one batch stay together.
#[derive(Debug)]
pub struct PcapPort {
    info: PortInfo,
    path: PathBuf,
    file: SharedFile,
    writer: Arc<Mutex<Writer>>,
}

impl PcapPort {
    /// Creates (truncates) the file now, so an unwritable path fails before any worker starts.
    pub fn create(path: &Path, queues: u32) -> Result<Self, PortError> {
        let fail = |source| PortError::PcapFile {
            path: path.to_owned(),
            source,
        };
        // Never through a symbolic link: one planted in /tmp by another user would redirect the
        // write (O_NOFOLLOW refuses it with ELOOP before anything is truncated).
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| {
                fail(if e.raw_os_error() == Some(libc::ELOOP) {
                    std::io::Error::other(
                        "it is a symbolic link, and linerate does not write through one: name the file itself",
                    )
                } else {
                    e
                })
            })?;
        // Host byte order, as libpcap writes: some readers (pypcapfile) read nothing else.
        let header = crate::savefile::pcap_header();
        let file = SharedFile(Arc::new(Mutex::new(BufWriter::with_capacity(
            1 << 20,
            file,
        ))));
        let writer =
            PcapWriter::with_header(file.clone(), header).map_err(|e| fail(io_cause(e)))?;
        Ok(Self {
            info: PortInfo {
                name: path.display().to_string(),
                mac: None,
                mtu: 1500,
                link_speed: None,
                queues,
                driver: None,
                backend: "pcap",
            },
            path: path.to_owned(),
            file,
            writer: Arc::new(Mutex::new(writer)),
        })
    }
}

impl PcapPort {
    /// The MTU frames are checked against (a file has no link of its own).
    pub fn set_mtu(&mut self, mtu: u32) {
        self.info.mtu = mtu;
    }
}

impl Port for PcapPort {
    fn info(&self) -> &PortInfo {
        &self.info
    }

    /// Frames complete the moment they are submitted: a few batches of slots are plenty.
    fn min_slots(&self) -> u32 {
        256
    }

    fn open_queue(&self, config: &QueueConfig) -> Result<Box<dyn TxQueue>, PortError> {
        if config.slot_size > crate::savefile::SNAPLEN {
            return Err(PortError::FrameTooLarge {
                len: config.slot_size,
                slot_size: crate::savefile::SNAPLEN,
            });
        }
        Ok(Box::new(PcapQueue {
            memory: SlotMemory::new(config.slots, config.slot_size),
            writer: Arc::clone(&self.writer),
            file: self.file.clone(),
            path: self.path.clone(),
            completed: 0,
        }))
    }
}

/// One writer of the shared pcap file.
#[derive(Debug)]
pub struct PcapQueue {
    memory: SlotMemory,
    writer: Arc<Mutex<Writer>>,
    file: SharedFile,
    path: PathBuf,
    completed: u32,
}

/// The I/O error under a pcap writer's error: its own text ("Error reading bytes") hides the
/// cause (no space left, a broken pipe).
fn io_cause(e: pcap_file::PcapError) -> std::io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        e => std::io::Error::other(e.to_string()),
    }
}

impl PcapQueue {
    /// A failure while writing (disk full, I/O error) is the system's, not a usage error.
    fn write_error(&self, source: std::io::Error) -> PortError {
        PortError::io(format!("write pcap file {}", self.path.display()), source)
    }
}

impl TxQueue for PcapQueue {
    fn slots(&self) -> u32 {
        self.memory.slots()
    }
    fn slot_size(&self) -> u32 {
        self.memory.slot_size()
    }
    fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        self.memory.slot_mut(slot)
    }
    fn reserve(&mut self, want: u32) -> u32 {
        want
    }
    fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        let mut writer = self
            .writer
            .lock()
            .map_err(|_| self.write_error(std::io::Error::other("another writer panicked")))?;
        for desc in descs {
            let data = self.memory.try_frame(*desc)?;
            let packet = PcapPacket::new(now, data.len() as u32, data);
            writer
                .write_packet(&packet)
                .map_err(|e| self.write_error(io_cause(e)))?;
        }
        drop(writer);
        self.completed += descs.len() as u32;
        Ok(())
    }
    fn reap(&mut self) -> Result<u32, PortError> {
        Ok(std::mem::take(&mut self.completed))
    }
    fn drain(&mut self, _timeout: Duration) -> Result<u32, PortError> {
        use std::io::Write;
        // Hold the packet writer so no other queue is half-way through a record.
        let writer = self
            .writer
            .lock()
            .map_err(|_| self.write_error(std::io::Error::other("another writer panicked")))?;
        self.file.clone().flush().map_err(|e| self.write_error(e))?;
        drop(writer);
        self.reap()
    }
    fn mode(&self) -> String {
        "file".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::TsResolution;
    use pcap_file::pcap::PcapReader;

    #[test]
    fn writes_submitted_frames_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.pcap");
        let port = PcapPort::create(&path, 1).unwrap();
        let config = QueueConfig {
            queue_id: 0,
            slots: 4,
            slot_size: 128,
            batch: 4,
        };
        let mut queue = port.open_queue(&config).unwrap();
        for slot in 0..4 {
            queue.slot_mut(slot).fill(slot as u8 + 1);
        }
        assert_eq!(queue.reserve(3), 3);
        let descs = [
            TxDesc { slot: 2, len: 60 },
            TxDesc { slot: 0, len: 61 },
            TxDesc { slot: 3, len: 100 },
        ];
        queue.submit(&descs).unwrap();
        assert_eq!(queue.drain(Duration::from_secs(1)).unwrap(), 3);
        drop(queue);
        drop(port);

        let mut reader = PcapReader::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(reader.header().ts_resolution, TsResolution::NanoSecond);
        // Host order, as libpcap writes: pypcapfile reads no other (issue 25).
        assert_eq!(reader.header().endianness, pcap_file::Endianness::native());
        let mut seen = Vec::new();
        while let Some(packet) = reader.next_packet() {
            let packet = packet.unwrap();
            seen.push((packet.data[0], packet.data.len()));
        }
        assert_eq!(seen, vec![(3, 60), (1, 61), (4, 100)]);
    }

    fn queue(port: &PcapPort, slots: u32, slot_size: u32) -> Box<dyn TxQueue> {
        let config = QueueConfig {
            queue_id: 0,
            slots,
            slot_size,
            batch: slots,
        };
        port.open_queue(&config).unwrap()
    }

    #[test]
    fn the_largest_frame_a_plan_builds_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.pcap");
        let port = PcapPort::create(&path, 1).unwrap();
        let len = linerate_wire::units::buffer_len(linerate_wire::MAX_FRAME_SIZE) as u32;
        let mut queue = queue(&port, 1, len.next_multiple_of(64));
        queue.slot_mut(0).fill(7);
        queue.submit(&[TxDesc { slot: 0, len }]).unwrap();
        queue.drain(Duration::from_secs(1)).unwrap();
        drop((queue, port));
        let mut reader = PcapReader::new(File::open(&path).unwrap()).unwrap();
        let packet = reader.next_packet().unwrap().unwrap();
        assert_eq!(packet.data.len(), len as usize);
    }

    #[test]
    fn a_full_disk_says_so() {
        let port = PcapPort::create(Path::new("/dev/full"), 1).unwrap();
        let mut queue = queue(&port, 1, 65536);
        // More than the writer's buffer, so a submit reaches the device.
        let err = (0..32)
            .map(|_| {
                queue.submit(&[TxDesc {
                    slot: 0,
                    len: 65536,
                }])
            })
            .find_map(Result::err)
            .or_else(|| queue.drain(Duration::from_secs(1)).err())
            .expect("/dev/full refuses writes");
        assert!(!err.is_usage());
        let text = err.to_string();
        assert!(text.contains("No space left on device"), "{text}");
    }

    #[test]
    fn a_descriptor_beyond_the_slots_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let port = PcapPort::create(&dir.path().join("x.pcap"), 1).unwrap();
        let mut queue = queue(&port, 2, 128);
        let err = queue.submit(&[TxDesc { slot: 2, len: 60 }]).unwrap_err();
        assert!(
            matches!(
                err,
                PortError::BadDescriptor {
                    slot: 2,
                    slots: 2,
                    ..
                }
            ),
            "{err}"
        );
        let err = queue.submit(&[TxDesc { slot: 0, len: 129 }]).unwrap_err();
        assert!(matches!(err, PortError::FrameTooLarge { .. }), "{err}");
    }

    #[test]
    fn unwritable_path_is_a_usage_error() {
        let err = PcapPort::create(Path::new("/nonexistent-dir/x.pcap"), 1).unwrap_err();
        assert!(err.is_usage());
        assert!(err.to_string().contains("/nonexistent-dir/x.pcap"));
    }
}
