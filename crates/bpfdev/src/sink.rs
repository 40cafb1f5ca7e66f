//! A bpf receiver that counts on a thread of its own while the sender runs: the thread reads,
//! [`CaptureCounts`] absorbs, and the totals are published for whoever asks (a sweep between
//! trials, `tx` after its drain). Portable: the capture is a trait, the `/dev/bpf` reader on
//! macOS, a recorded-buffer double in the tests.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::BpfError;
use crate::capture::CaptureCounts;

/// What the counting thread reads from.
pub trait Capture: Send + 'static {
    /// One read: the records that arrived, empty when its timeout passed with nothing. It must
    /// return within a bounded time (a read timeout) so the thread sees a stop.
    fn read(&mut self) -> Result<&[u8], BpfError>;
    /// Frames the kernel dropped since the capture opened, because the reader fell behind.
    fn drops(&self) -> Result<u64, BpfError>;
}

/// The two clocks read just after each read, in ns: monotonic (the transmit stamps' clock) and
/// wall (the `bpf_hdr` stamps' clock). See [`crate::capture::arrival`].
pub type Clocks = fn() -> (u64, u64);

/// Both clocks of this host.
pub fn host_clocks() -> (u64, u64) {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (monotonic_ns(), wall)
}

/// Now on `CLOCK_MONOTONIC`, in ns: the clock the engine stamps the signature with.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    /// Published after each read, so a reader of the totals never waits on the lock.
    frames: AtomicU64,
    bytes: AtomicU64,
    drops: AtomicU64,
    counts: Mutex<CaptureCounts>,
    /// Why the thread ended early, until someone is told.
    failed: Mutex<Option<BpfError>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The data is plain counters: a panic elsewhere leaves them as valid as they were.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A receiver counting on its own thread until dropped or [`CaptureThread::finish`]ed.
#[derive(Debug)]
pub struct CaptureThread {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl CaptureThread {
    /// Starts counting what `capture` reads into `counts`. The capture is open (its filter
    /// attached) before this is called, so nothing sent after it returns goes uncounted.
    pub fn spawn<C: Capture>(mut capture: C, counts: CaptureCounts, clocks: Clocks) -> Self {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            frames: AtomicU64::new(counts.frames),
            bytes: AtomicU64::new(counts.bytes),
            drops: AtomicU64::new(0),
            counts: Mutex::new(counts),
            failed: Mutex::new(None),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let result = (|| {
                while !s.stop.load(Ordering::Relaxed) {
                    let buf = capture.read()?;
                    let (mono, wall) = clocks();
                    let mut counts = lock(&s.counts);
                    let absorbed = counts.absorb_stamped(buf, mono, wall);
                    s.frames.store(counts.frames, Ordering::Release);
                    s.bytes.store(counts.bytes, Ordering::Release);
                    drop(counts);
                    absorbed?;
                    s.drops.store(capture.drops()?, Ordering::Release);
                }
                Ok::<(), BpfError>(())
            })();
            if let Err(e) = result {
                *lock(&s.failed) = Some(e);
            }
        });
        Self {
            shared,
            thread: Some(thread),
        }
    }

    fn failure(&self) -> Result<(), BpfError> {
        match lock(&self.shared.failed).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Frames and bytes counted so far; the thread's error if it stopped on one.
    pub fn frames_bytes(&self) -> Result<(u64, u64), BpfError> {
        self.failure()?;
        Ok((
            self.shared.frames.load(Ordering::Acquire),
            self.shared.bytes.load(Ordering::Acquire),
        ))
    }

    /// Frames the kernel dropped before the thread could read them, as of its last read.
    pub fn drops(&self) -> u64 {
        self.shared.drops.load(Ordering::Acquire)
    }

    /// Looks at the counts as they are (the thread waits meanwhile: keep it short).
    pub fn with_counts<T>(&self, f: impl FnOnce(&CaptureCounts) -> T) -> Result<T, BpfError> {
        self.failure()?;
        Ok(f(&lock(&self.shared.counts)))
    }

    /// Stops the thread (within one read timeout) and returns the counts.
    pub fn finish(mut self) -> Result<CaptureCounts, BpfError> {
        self.stop();
        self.failure()?;
        let counts = std::mem::replace(&mut *lock(&self.shared.counts), CaptureCounts::new(0, 0));
        Ok(counts)
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // A panic in the thread already printed itself; the counts stay as they were.
            let _ = t.join();
        }
    }
}

impl Drop for CaptureThread {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(target_os = "macos")]
impl Capture for crate::BpfReader {
    fn read(&mut self) -> Result<&[u8], BpfError> {
        crate::BpfReader::read(self)
    }

    fn drops(&self) -> Result<u64, BpfError> {
        Ok(u64::from(self.kernel_stats()?.1))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::capture::RecordError;

    /// Reads handed over by the test one at a time, as a kernel would return them; an empty read
    /// (the timeout) when none is waiting.
    struct Recorded {
        reads: mpsc::Receiver<Result<Vec<u8>, BpfError>>,
        current: Vec<u8>,
        /// Each non-empty read is said to have cost the kernel one dropped frame.
        drops: u64,
    }

    impl Capture for Recorded {
        fn read(&mut self) -> Result<&[u8], BpfError> {
            match self.reads.recv_timeout(Duration::from_millis(5)) {
                Ok(Ok(buf)) => {
                    self.current = buf;
                    self.drops += 1;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => self.current.clear(),
            }
            Ok(&self.current)
        }

        fn drops(&self) -> Result<u64, BpfError> {
            Ok(self.drops)
        }
    }

    /// One record of a `len`-byte frame of zeros (xnu layout: 18-byte header, padded to 4),
    /// stamped `sec`.
    fn record(out: &mut Vec<u8>, len: usize, sec: u32) {
        let start = out.len();
        out.extend_from_slice(&sec.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(&18u16.to_le_bytes());
        out.resize(start + 18 + len, 0);
        while !(out.len() - start).is_multiple_of(4) {
            out.push(0);
        }
    }

    fn clocks() -> (u64, u64) {
        (5_000_000_000, 1_000_000_000_000)
    }

    fn wait_for(t: &CaptureThread, frames: u64) -> (u64, u64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let got = t.frames_bytes().unwrap();
            if got.0 >= frames || std::time::Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn counts_every_read_while_running_and_hands_back_the_totals() {
        let (tx, rx) = mpsc::channel();
        let t = CaptureThread::spawn(
            Recorded {
                reads: rx,
                current: Vec::new(),
                drops: 0,
            },
            CaptureCounts::new(4, 0),
            clocks,
        );
        assert_eq!(t.frames_bytes().unwrap(), (0, 0));
        let (mut sent, mut bytes) = (0, 0);
        for n in [1usize, 7, 300] {
            let mut buf = Vec::new();
            for i in 0..n {
                record(&mut buf, 60 + i % 3, 1);
                bytes += 60 + i as u64 % 3;
            }
            tx.send(Ok(buf)).unwrap();
            sent += n as u64;
            assert_eq!(wait_for(&t, sent), (sent, bytes));
        }
        assert_eq!(t.frames_bytes().unwrap(), (308, bytes));
        assert_eq!(t.with_counts(|c| c.global.other_frames).unwrap(), 308);
        let counts = t.finish().unwrap();
        assert_eq!((counts.frames, counts.bytes), (308, bytes));
    }

    #[test]
    fn a_failed_read_or_a_malformed_buffer_is_reported_with_what_came_before() {
        for bad in [
            Err(BpfError::Record(RecordError::ShortHeader {
                at: 0,
                left: 1,
                need: 18,
            })),
            Ok(vec![1, 2, 3]),
        ] {
            let (tx, rx) = mpsc::channel();
            let t = CaptureThread::spawn(
                Recorded {
                    reads: rx,
                    current: Vec::new(),
                    drops: 0,
                },
                CaptureCounts::new(1, 0),
                clocks,
            );
            let mut buf = Vec::new();
            record(&mut buf, 60, 1);
            tx.send(Ok(buf)).unwrap();
            assert_eq!(wait_for(&t, 1).0, 1);
            tx.send(bad).unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            let err = loop {
                match t.frames_bytes() {
                    Err(e) => break e,
                    Ok(_) if std::time::Instant::now() > deadline => panic!("no error"),
                    Ok(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            };
            assert!(
                matches!(err, BpfError::Record(RecordError::ShortHeader { .. })),
                "{err}"
            );
            // Told once; what was counted before stays.
            assert_eq!(t.finish().unwrap().frames, 1);
        }
    }

    #[test]
    fn drops_are_published_after_each_read() {
        let (tx, rx) = mpsc::channel();
        let t = CaptureThread::spawn(
            Recorded {
                reads: rx,
                current: Vec::new(),
                drops: 0,
            },
            CaptureCounts::new(1, 0),
            clocks,
        );
        for _ in 0..3 {
            let mut buf = Vec::new();
            record(&mut buf, 60, 1);
            tx.send(Ok(buf)).unwrap();
        }
        wait_for(&t, 3);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while t.drops() < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(t.drops(), 3);
    }
}
