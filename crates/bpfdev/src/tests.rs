//! The portable core against stand-ins for `/dev/bpf`: a `SOCK_SEQPACKET` socketpair (each
//! `write()` arrives as one message, so the bytes of every write can be checked exactly) and
//! scripted fakes for the kernel's answers.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use linerate_port::{PortError, QueueConfig, SlotMemory, TxDesc, TxQueue};

use crate::abi::record_len;
use crate::transmit::{BpfDevice, RetryPolicy, WriteMode, Writer, push_record};
use crate::{BpfError, BpfQueue};

const IFACE: &str = "en7";

fn no_pause() -> RetryPolicy {
    RetryPolicy {
        first_pause: Duration::ZERO,
        max_pause: Duration::ZERO,
        give_up_after: Duration::from_secs(5),
    }
}

/// Frames of the given lengths, each filled with a byte pattern of its own.
fn frames(lens: &[u32]) -> (SlotMemory, Vec<TxDesc>) {
    let mut memory = SlotMemory::new(lens.len() as u32, 2048);
    let mut descs = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        let slot = memory.slot_mut(i as u32);
        for (j, b) in slot[..len as usize].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(0x40) ^ j as u8;
        }
        descs.push(TxDesc {
            slot: i as u32,
            len,
        });
    }
    (memory, descs)
}

/// The writing end of a socketpair standing in for `/dev/bpf`.
struct SeqPacket {
    fd: OwnedFd,
    batch: bool,
}

impl BpfDevice for SeqPacket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes and the descriptor is open.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
    fn set_batch_write(&mut self, on: bool) -> io::Result<()> {
        if self.batch || !on {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(libc::ENOTTY))
        }
    }
}

/// A `/dev/bpf` stand-in and the reader of every message written to it.
fn seqpacket(batch: bool) -> (SeqPacket, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, fds.as_mut_ptr()) };
    assert_eq!(rc, 0, "socketpair: {}", io::Error::last_os_error());
    // SAFETY: socketpair succeeded, so both descriptors are open and owned by nobody else.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    (SeqPacket { fd: a, batch }, b)
}

/// Every message waiting on the reader, one per `write()`.
fn messages(reader: &OwnedFd) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes and the descriptor is open.
        let n = unsafe {
            libc::recv(
                reader.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            assert_eq!(e.raw_os_error(), Some(libc::EAGAIN), "recv: {e}");
            return out;
        }
        out.push(buf[..n as usize].to_vec());
    }
}

/// One record, spelled out byte by byte (little-endian, as on every Mac).
#[cfg(target_endian = "little")]
fn record_bytes(frame: &[u8]) -> Vec<u8> {
    let len = frame.len() as u32;
    let mut r = Vec::new();
    r.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]); // bh_tstamp: tv_sec, tv_usec
    r.extend_from_slice(&len.to_le_bytes()); // bh_caplen
    r.extend_from_slice(&len.to_le_bytes()); // bh_datalen
    r.extend_from_slice(&[20, 0]); // bh_hdrlen
    r.extend_from_slice(&[0, 0]); // padding of struct bpf_hdr to 20 bytes
    r.extend_from_slice(frame);
    while r.len() % 4 != 0 {
        r.push(0); // BPF_WORDALIGN
    }
    r
}

#[test]
fn single_writes_carry_exactly_one_frame_each() {
    let (dev, reader) = seqpacket(false);
    let mut writer = Writer::new(dev, IFACE, 1500, true);
    assert_eq!(writer.mode(), WriteMode::Single, "the ioctl was refused");
    let (memory, descs) = frames(&[60, 61, 1514]);
    writer.send(&memory, &descs).unwrap();

    let got = messages(&reader);
    assert_eq!(got.len(), 3);
    for (msg, desc) in got.iter().zip(&descs) {
        assert_eq!(msg.as_slice(), memory.frame(*desc));
    }
    assert_eq!(writer.stats().writes, 3);
    assert_eq!(writer.stats().frames, 3);
}

#[cfg(target_endian = "little")]
#[test]
fn batch_write_frames_records_byte_for_byte() {
    let (dev, reader) = seqpacket(true);
    let mut writer = Writer::new(dev, IFACE, 1500, true);
    assert_eq!(writer.mode(), WriteMode::Batch);
    let (memory, descs) = frames(&[4, 5, 7]);
    writer.send(&memory, &descs).unwrap();

    let got = messages(&reader);
    assert_eq!(got.len(), 1, "one write for the whole batch");
    let f0 = [0x00, 0x01, 0x02, 0x03];
    let f1 = [0x40, 0x41, 0x42, 0x43, 0x44];
    let f2 = [0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86];
    #[rustfmt::skip]
    let want: Vec<u8> = [
        // record 0: 20-byte header, 4-byte frame, no padding (24)
        &[0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 20, 0, 0, 0][..], &f0[..],
        // record 1: header, 5-byte frame, 3 bytes of padding (28)
        &[0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 20, 0, 0, 0][..], &f1[..], &[0, 0, 0][..],
        // record 2: header, 7-byte frame, 1 byte of padding (28)
        &[0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 20, 0, 0, 0][..], &f2[..], &[0][..],
    ]
    .concat();
    assert_eq!(memory.frame(descs[2]), &f2);
    assert_eq!(got[0], want);
    assert_eq!(want.len(), 24 + 28 + 28);
    assert_eq!(writer.stats().writes, 1);
    assert_eq!(writer.stats().frames, 3);
}

#[cfg(target_endian = "little")]
#[test]
fn batch_writes_split_at_max_write_on_record_boundaries() {
    let (dev, reader) = seqpacket(true);
    // 60-byte frames take 80-byte records: two fit in 200 bytes, the third starts a new write.
    let mut writer = Writer::new(dev, IFACE, 1500, true).with_max_write(200);
    let (memory, descs) = frames(&[60, 60, 60, 60, 60]);
    writer.send(&memory, &descs).unwrap();

    let got = messages(&reader);
    let lens: Vec<usize> = got.iter().map(Vec::len).collect();
    assert_eq!(lens, [160, 160, 80]);
    let want: Vec<u8> = descs
        .iter()
        .flat_map(|d| record_bytes(memory.frame(*d)))
        .collect();
    assert_eq!(got.concat(), want);
}

#[test]
fn push_record_matches_the_header_table() {
    let mut buf = Vec::new();
    push_record(&mut buf, &[0xaa; 61]);
    assert_eq!(buf.len(), record_len(61));
    assert_eq!(buf.len(), 84);
    assert_eq!(&buf[crate::abi::bpf_hdr::CAPLEN], &61u32.to_ne_bytes());
    assert_eq!(&buf[crate::abi::bpf_hdr::DATALEN], &61u32.to_ne_bytes());
    assert_eq!(&buf[crate::abi::bpf_hdr::HDRLEN], &20u16.to_ne_bytes());
    assert_eq!(&buf[81..], &[0, 0, 0]);
}

/// A device that answers from a script, then accepts everything; it keeps what it accepted.
#[derive(Default)]
struct Scripted {
    answers: VecDeque<io::Result<Option<usize>>>,
    batch: Option<io::Result<()>>,
    accepted: Vec<Vec<u8>>,
    batch_calls: Vec<bool>,
    calls: usize,
}

impl Scripted {
    fn errno(mut self, errno: i32, times: usize) -> Self {
        for _ in 0..times {
            self.answers
                .push_back(Err(io::Error::from_raw_os_error(errno)));
        }
        self
    }
    /// Accept only the first `n` bytes of the next write.
    fn take(mut self, n: usize) -> Self {
        self.answers.push_back(Ok(Some(n)));
        self
    }
    fn batch(mut self, answer: io::Result<()>) -> Self {
        self.batch = Some(answer);
        self
    }
}

impl BpfDevice for Scripted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.calls += 1;
        let n = match self.answers.pop_front() {
            Some(Err(e)) => return Err(e),
            Some(Ok(Some(n))) => n.min(buf.len()),
            Some(Ok(None)) | None => buf.len(),
        };
        self.accepted.push(buf[..n].to_vec());
        Ok(n)
    }
    fn set_batch_write(&mut self, on: bool) -> io::Result<()> {
        self.batch_calls.push(on);
        match &self.batch {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(0))),
            None => Err(io::Error::from_raw_os_error(libc::ENOTTY)),
        }
    }
}

#[test]
fn enobufs_is_waited_out_and_loses_no_frame_single() {
    let dev = Scripted::default().errno(libc::ENOBUFS, 7);
    let mut writer = Writer::new(dev, IFACE, 1500, false).with_policy(no_pause());
    let (memory, descs) = frames(&[60, 70, 80]);
    writer.send(&memory, &descs).unwrap();

    let accepted = &writer.device().accepted;
    assert_eq!(accepted.len(), 3, "each frame exactly once");
    for (got, desc) in accepted.iter().zip(&descs) {
        assert_eq!(got.as_slice(), memory.frame(*desc));
    }
    assert_eq!(writer.stats().enobufs_retries, 7);
    assert_eq!(writer.device().calls, 10);
}

#[test]
fn enobufs_is_waited_out_and_loses_no_frame_batch() {
    let dev = Scripted::default()
        .batch(Ok(()))
        .errno(libc::ENOBUFS, 3)
        .errno(libc::EINTR, 1)
        .errno(libc::EAGAIN, 2);
    let mut writer = Writer::new(dev, IFACE, 1500, true).with_policy(no_pause());
    assert_eq!(writer.mode(), WriteMode::Batch);
    let (memory, descs) = frames(&[60, 61]);
    writer.send(&memory, &descs).unwrap();

    let mut want = Vec::new();
    for d in &descs {
        push_record(&mut want, memory.frame(*d));
    }
    assert_eq!(writer.device().accepted, vec![want]);
    assert_eq!(writer.stats().enobufs_retries, 5);
    assert_eq!(writer.stats().frames, 2);
}

#[test]
fn enobufs_that_never_ends_is_an_error_not_a_silent_drop() {
    let dev = Scripted::default().errno(libc::ENOBUFS, 1);
    let policy = RetryPolicy {
        give_up_after: Duration::ZERO,
        ..no_pause()
    };
    let mut writer = Writer::new(dev, IFACE, 1500, false).with_policy(policy);
    let (memory, descs) = frames(&[60]);
    let err = writer.send(&memory, &descs).unwrap_err();
    assert!(matches!(err, BpfError::NoBuffers { .. }), "{err}");
    assert!(err.to_string().contains("en7"), "{err}");
}

#[test]
fn partial_batch_writes_resume_at_the_next_record() {
    // The kernel takes two 80-byte records, then one, then the rest.
    let dev = Scripted::default().batch(Ok(())).take(160).take(80);
    let mut writer = Writer::new(dev, IFACE, 1500, true);
    let (memory, descs) = frames(&[60, 60, 60, 60, 60]);
    writer.send(&memory, &descs).unwrap();

    let accepted = &writer.device().accepted;
    let lens: Vec<usize> = accepted.iter().map(Vec::len).collect();
    assert_eq!(lens, [160, 80, 160]);
    let mut want = Vec::new();
    for d in &descs {
        push_record(&mut want, memory.frame(*d));
    }
    assert_eq!(accepted.concat(), want, "every record once, in order");
    assert_eq!(writer.stats().frames, 5);
}

#[test]
fn a_write_ending_inside_a_frame_is_reported() {
    let dev = Scripted::default().batch(Ok(())).take(100);
    let mut writer = Writer::new(dev, IFACE, 1500, true);
    let (memory, descs) = frames(&[60, 60]);
    let err = writer.send(&memory, &descs).unwrap_err();
    assert!(
        matches!(
            err,
            BpfError::ShortWrite {
                wrote: 100,
                expected: 160,
                ..
            }
        ),
        "{err}"
    );

    let dev = Scripted::default().take(59);
    let mut writer = Writer::new(dev, IFACE, 1500, false);
    let err = writer.send(&memory, &descs).unwrap_err();
    assert!(
        matches!(
            err,
            BpfError::ShortWrite {
                wrote: 59,
                expected: 60,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn refused_batch_ioctl_falls_back_to_single_writes() {
    let dev = Scripted::default().batch(Err(io::Error::from_raw_os_error(libc::EINVAL)));
    let mut writer = Writer::new(dev, IFACE, 1500, true);
    assert_eq!(writer.mode(), WriteMode::Single);
    assert_eq!(writer.mode().describe(), "bpf single write");
    let (memory, descs) = frames(&[60, 61]);
    writer.send(&memory, &descs).unwrap();
    let want: Vec<&[u8]> = descs.iter().map(|d| memory.frame(*d)).collect();
    assert_eq!(writer.device().accepted, want);
}

#[test]
fn refused_first_batch_write_falls_back_and_resends_every_frame_singly() {
    let dev = Scripted::default().batch(Ok(())).errno(libc::EINVAL, 1);
    let mut writer = Writer::new(dev, IFACE, 1500, true);
    assert_eq!(writer.mode(), WriteMode::Batch);
    let (memory, descs) = frames(&[60, 61, 62]);
    writer.send(&memory, &descs).unwrap();

    assert_eq!(writer.mode(), WriteMode::Single);
    assert_eq!(
        writer.device().batch_calls,
        [true, false],
        "batch mode switched off"
    );
    let want: Vec<&[u8]> = descs.iter().map(|d| memory.frame(*d)).collect();
    assert_eq!(
        writer.device().accepted,
        want,
        "each frame once, as a plain frame"
    );
    assert_eq!(writer.stats().batch_fallbacks, 1);
    assert_eq!(writer.stats().frames, 3);
}

#[test]
fn einval_after_a_batch_went_through_is_an_error() {
    let dev = Scripted::default()
        .batch(Ok(()))
        .take(80)
        .errno(libc::EINVAL, 1);
    let mut writer = Writer::new(dev, IFACE, 1500, true);
    let (memory, descs) = frames(&[60, 60]);
    let err = writer.send(&memory, &descs).unwrap_err();
    assert!(matches!(err, BpfError::Write { .. }), "{err}");
    assert_eq!(writer.mode(), WriteMode::Batch);
}

#[test]
fn netdown_and_msgsize_become_clear_errors() {
    let (memory, descs) = frames(&[60, 1600]);

    let dev = Scripted::default().errno(libc::ENETDOWN, 1);
    let err = Writer::new(dev, IFACE, 1500, false)
        .send(&memory, &descs)
        .unwrap_err();
    assert!(
        matches!(err, BpfError::Port(PortError::InterfaceDown { .. })),
        "{err}"
    );
    // The advice is the system's own (`ifconfig` where this backend runs).
    let up = if cfg!(target_os = "linux") {
        "ip link set en7 up"
    } else {
        "sudo ifconfig en7 up"
    };
    assert!(err.to_string().contains(up), "{err}");

    let dev = Scripted::default().batch(Ok(())).errno(libc::EMSGSIZE, 1);
    let err = Writer::new(dev, IFACE, 1500, true)
        .send(&memory, &descs)
        .unwrap_err();
    assert!(
        matches!(
            err,
            BpfError::FrameTooLarge {
                len: 1600,
                mtu: 1500,
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(PortError::from(err), PortError::Io { .. }));
}

#[test]
fn queue_writes_on_submit_and_completes_at_once() {
    let (dev, reader) = seqpacket(true);
    let config = QueueConfig {
        queue_id: 0,
        slots: 4,
        slot_size: 128,
        batch: 2,
    };
    let mut queue = BpfQueue::new(&config, Writer::new(dev, IFACE, 1500, true));
    assert_eq!(queue.mode(), "bpf batch write");
    assert_eq!(queue.reserve(64), 2);
    for slot in 0..2 {
        queue.slot_mut(slot)[..60].fill(slot as u8 + 1);
    }
    let descs = [TxDesc { slot: 0, len: 60 }, TxDesc { slot: 1, len: 60 }];
    queue.submit(&descs).unwrap();
    assert_eq!(queue.reap().unwrap(), 2);
    assert_eq!(queue.drain(Duration::ZERO).unwrap(), 0);

    let got = messages(&reader);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].len(), 160);
    assert_eq!(&got[0][20..80], &[1; 60]);
    assert_eq!(&got[0][100..160], &[2; 60]);
    let stats = queue.stats();
    assert!(stats.extra.contains(&("bpf_writes", 1)), "{stats:?}");

    let err = queue.submit(&[TxDesc { slot: 0, len: 129 }]).unwrap_err();
    assert!(matches!(err, PortError::FrameTooLarge { .. }));
    // A slot beyond the queue's is an error, as on AF_XDP, and nothing of the batch is written.
    let bad = [TxDesc { slot: 1, len: 60 }, TxDesc { slot: 4, len: 60 }];
    let err = queue.submit(&bad).unwrap_err();
    assert!(
        matches!(
            err,
            PortError::BadDescriptor {
                slot: 4,
                slots: 4,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(messages(&reader).len(), 0);
}
