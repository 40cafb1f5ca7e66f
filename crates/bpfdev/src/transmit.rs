//! The portable core of the port: batch record packing, the write loop (partial writes,
//! `ENOBUFS` back-off, clear errors) and the fall-back from batch to single writes. It talks to
//! the device only through [`BpfDevice`], so it runs — and is tested — on every OS.

use std::io;
use std::thread;
use std::time::{Duration, Instant};

use linerate_port::{PortError, SlotMemory, TxDesc};

use crate::abi::{bpf_hdr, record_len};
use crate::error::BpfError;

/// What the write loop needs of a `/dev/bpf` descriptor.
pub trait BpfDevice {
    /// One `write(2)`: a whole frame in single mode, whole records in batch mode.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// `BIOCSBATCHWRITE`. The default refuses, as every kernel but macOS 14.4+ does.
    fn set_batch_write(&mut self, on: bool) -> io::Result<()> {
        let _ = on;
        Err(io::Error::from_raw_os_error(libc::ENOTTY))
    }
}

/// How frames reach the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// One frame per `write()`: every kernel.
    Single,
    /// Many `bpf_hdr`-framed records per `write()` (`BIOCSBATCHWRITE`, macOS 14.4+).
    Batch,
}

impl WriteMode {
    /// The queue's mode string in reports.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Single => "bpf single write",
            Self::Batch => "bpf batch write",
        }
    }
}

/// How long to wait when the interface answers `ENOBUFS` (its transmit queue is full). The
/// frame is kept and written again; only after `give_up_after` of unbroken `ENOBUFS` does the
/// write fail, with an error that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub first_pause: Duration,
    pub max_pause: Duration,
    pub give_up_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            first_pause: Duration::from_micros(10),
            max_pause: Duration::from_millis(1),
            give_up_after: Duration::from_secs(5),
        }
    }
}

/// Counters of one writer, published as the queue's stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Successful `write()` calls.
    pub writes: u64,
    /// Frames the device accepted.
    pub frames: u64,
    /// `ENOBUFS`/`EAGAIN` answers that were waited out and retried.
    pub enobufs_retries: u64,
    /// Times a refused batch write made the writer fall back to single writes.
    pub batch_fallbacks: u64,
}

/// Appends one batch-write record to `buf`: a `bpf_hdr` (zero timestamp, `bh_caplen` =
/// `bh_datalen` = frame length, `bh_hdrlen` = 20, native byte order), the frame, and zero
/// padding up to `BPF_WORDALIGN`.
pub fn push_record(buf: &mut Vec<u8>, frame: &[u8]) {
    let start = buf.len();
    buf.resize(start + record_len(frame.len()), 0);
    let record = &mut buf[start..];
    let len = frame.len() as u32;
    record[bpf_hdr::CAPLEN].copy_from_slice(&len.to_ne_bytes());
    record[bpf_hdr::DATALEN].copy_from_slice(&len.to_ne_bytes());
    record[bpf_hdr::HDRLEN].copy_from_slice(&(bpf_hdr::SIZE as u16).to_ne_bytes());
    record[bpf_hdr::SIZE..bpf_hdr::SIZE + frame.len()].copy_from_slice(frame);
}

/// What became of one batch write.
enum BatchOutcome {
    Sent,
    /// The kernel refused the batch format before any batch had gone through.
    Refused {
        records_done: usize,
    },
}

/// Writes frames to one device, in the best mode it accepts.
#[derive(Debug)]
pub struct Writer<D> {
    dev: D,
    iface: String,
    mtu: u32,
    mode: WriteMode,
    policy: RetryPolicy,
    max_write: usize,
    /// A batch write has gone through: from now on a refusal is an error, not a fall-back cue.
    batch_proven: bool,
    buf: Vec<u8>,
    /// End offset of each record in `buf`.
    ends: Vec<usize>,
    stats: WriteStats,
}

/// Bytes one batch write carries at most, unless the device says otherwise.
pub const DEFAULT_MAX_WRITE: usize = 256 * 1024;

impl<D: BpfDevice> Writer<D> {
    /// Takes over a configured device. With `want_batch`, asks for `BIOCSBATCHWRITE` and falls
    /// back to single writes when the kernel refuses it.
    pub fn new(mut dev: D, iface: &str, mtu: u32, want_batch: bool) -> Self {
        let mode = if want_batch && dev.set_batch_write(true).is_ok() {
            WriteMode::Batch
        } else {
            WriteMode::Single
        };
        Self {
            dev,
            iface: iface.to_owned(),
            mtu,
            mode,
            policy: RetryPolicy::default(),
            max_write: DEFAULT_MAX_WRITE,
            batch_proven: false,
            buf: Vec::new(),
            ends: Vec::new(),
            stats: WriteStats::default(),
        }
    }

    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Caps the bytes of one batch write (a lone record larger than this still goes alone).
    pub fn with_max_write(mut self, max_write: usize) -> Self {
        self.max_write = max_write.max(1);
        self
    }

    /// Sizes the batch buffer for `frames` frames of up to `frame_len` bytes, so that the hot
    /// path never allocates.
    pub fn reserve(&mut self, frames: usize, frame_len: usize) {
        let bytes = (frames * record_len(frame_len)).min(self.max_write.max(record_len(frame_len)));
        self.buf.reserve(bytes);
        self.ends.reserve(frames);
    }

    pub fn mode(&self) -> WriteMode {
        self.mode
    }

    pub fn stats(&self) -> WriteStats {
        self.stats
    }

    pub fn device(&self) -> &D {
        &self.dev
    }

    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    /// Writes the frames `descs` name, in order, each exactly once, or says why not.
    pub fn send(&mut self, memory: &SlotMemory, descs: &[TxDesc]) -> Result<(), BpfError> {
        let mut next = 0;
        while next < descs.len() {
            match self.mode {
                WriteMode::Single => {
                    self.write_single(memory.frame(descs[next]))?;
                    next += 1;
                }
                WriteMode::Batch => {
                    let start = next;
                    self.buf.clear();
                    self.ends.clear();
                    while let Some(&desc) = descs.get(next) {
                        let frame = memory.frame(desc);
                        if !self.ends.is_empty()
                            && self.buf.len() + record_len(frame.len()) > self.max_write
                        {
                            break;
                        }
                        push_record(&mut self.buf, frame);
                        self.ends.push(self.buf.len());
                        next += 1;
                    }
                    if let BatchOutcome::Refused { records_done } = self.write_records()? {
                        self.fall_back()?;
                        next = start + records_done;
                    }
                }
            }
        }
        Ok(())
    }

    fn fall_back(&mut self) -> Result<(), BpfError> {
        // The kernel must stop reading records before plain frames arrive.
        self.dev
            .set_batch_write(false)
            .or_else(|e| match e.raw_os_error() {
                Some(libc::ENOTTY | libc::EINVAL) => Ok(()),
                _ => Err(e),
            })
            .map_err(|source| BpfError::Ioctl {
                iface: self.iface.clone(),
                request: "BIOCSBATCHWRITE 0",
                source,
            })?;
        self.mode = WriteMode::Single;
        self.stats.batch_fallbacks += 1;
        Ok(())
    }

    fn write_single(&mut self, frame: &[u8]) -> Result<(), BpfError> {
        let mut backoff = Backoff::new(self.policy);
        loop {
            match self.dev.write(frame) {
                Ok(n) if n == frame.len() => {
                    self.stats.writes += 1;
                    self.stats.frames += 1;
                    return Ok(());
                }
                Ok(n) => {
                    return Err(BpfError::ShortWrite {
                        iface: self.iface.clone(),
                        wrote: n,
                        expected: frame.len(),
                    });
                }
                Err(e) => match Errno::of(&e) {
                    Errno::Interrupted => {}
                    Errno::NoBuffers => {
                        backoff.wait(&self.iface)?;
                        self.stats.enobufs_retries += 1;
                    }
                    _ => return Err(self.fatal(e, frame.len())),
                },
            }
        }
    }

    /// Writes `self.buf`, record-aligned, resuming after partial writes.
    fn write_records(&mut self) -> Result<BatchOutcome, BpfError> {
        let mut backoff = Backoff::new(self.policy);
        let mut off = 0;
        let mut done = 0;
        while off < self.buf.len() {
            match self.dev.write(&self.buf[off..]) {
                Ok(n) => {
                    let end = off + n;
                    while done < self.ends.len() && self.ends[done] <= end {
                        done += 1;
                    }
                    let boundary = done.checked_sub(1).map_or(0, |i| self.ends[i]);
                    if n == 0 || boundary != end {
                        return Err(BpfError::ShortWrite {
                            iface: self.iface.clone(),
                            wrote: n,
                            expected: self.buf.len() - off,
                        });
                    }
                    self.stats.writes += 1;
                    self.batch_proven = true;
                    backoff = Backoff::new(self.policy);
                    off = end;
                }
                Err(e) => match Errno::of(&e) {
                    Errno::Interrupted => {}
                    Errno::NoBuffers => {
                        backoff.wait(&self.iface)?;
                        self.stats.enobufs_retries += 1;
                    }
                    Errno::Refused if !self.batch_proven => {
                        self.stats.frames += done as u64;
                        return Ok(BatchOutcome::Refused { records_done: done });
                    }
                    _ => {
                        let len = self.largest_unsent_frame(done);
                        return Err(self.fatal(e, len));
                    }
                },
            }
        }
        self.stats.frames += self.ends.len() as u64;
        Ok(BatchOutcome::Sent)
    }

    fn largest_unsent_frame(&self, done: usize) -> usize {
        let mut start = done.checked_sub(1).map_or(0, |i| self.ends[i]);
        let mut largest = 0;
        for &end in &self.ends[done..] {
            let caplen = &self.buf[start + bpf_hdr::CAPLEN.start..start + bpf_hdr::CAPLEN.end];
            largest = largest.max(u32::from_ne_bytes(caplen.try_into().unwrap_or_default()));
            start = end;
        }
        largest as usize
    }

    fn fatal(&self, source: io::Error, frame_len: usize) -> BpfError {
        let iface = self.iface.clone();
        match Errno::of(&source) {
            Errno::NetDown => PortError::InterfaceDown { iface }.into(),
            Errno::TooBig => BpfError::FrameTooLarge {
                iface,
                len: frame_len,
                mtu: self.mtu,
            },
            _ => BpfError::Write { iface, source },
        }
    }
}

/// The errno classes the write loop acts on.
enum Errno {
    Interrupted,
    NoBuffers,
    NetDown,
    TooBig,
    /// The kernel does not understand what it was asked (a batch it cannot parse).
    Refused,
    Other,
}

impl Errno {
    fn of(e: &io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::EINTR) => Self::Interrupted,
            Some(libc::ENOBUFS | libc::EAGAIN) => Self::NoBuffers,
            Some(libc::ENETDOWN) => Self::NetDown,
            Some(libc::EMSGSIZE) => Self::TooBig,
            Some(libc::EINVAL | libc::ENOTSUP | libc::ENOTTY) => Self::Refused,
            Some(n) if n == libc::EOPNOTSUPP => Self::Refused,
            _ => Self::Other,
        }
    }
}

/// Exponential pauses while `ENOBUFS` lasts.
struct Backoff {
    policy: RetryPolicy,
    pause: Duration,
    started: Option<Instant>,
}

impl Backoff {
    fn new(policy: RetryPolicy) -> Self {
        Self {
            policy,
            pause: policy.first_pause,
            started: None,
        }
    }

    fn wait(&mut self, iface: &str) -> Result<(), BpfError> {
        let started = *self.started.get_or_insert_with(Instant::now);
        let waited = started.elapsed();
        if waited >= self.policy.give_up_after {
            return Err(BpfError::NoBuffers {
                iface: iface.to_owned(),
                waited,
            });
        }
        if self.pause.is_zero() {
            thread::yield_now();
        } else {
            thread::sleep(self.pause);
        }
        self.pause = (self.pause * 2).min(self.policy.max_pause);
        Ok(())
    }
}
