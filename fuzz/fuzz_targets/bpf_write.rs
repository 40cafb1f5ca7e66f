//! The /dev/bpf write loop against a device whose answers the input scripts (whole writes,
//! writes cut at a record boundary or inside one, ENOBUFS, EINTR, a refused batch mode): the
//! frames the device took must always be the submitted frames in order, each once, and all of
//! them when `send` succeeds.
#![no_main]

use std::io;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use linerate_bpfdev::abi::{bpf_hdr, bpf_wordalign};
use linerate_bpfdev::{BpfDevice, RetryPolicy, Writer};
use linerate_port::{SlotMemory, TxDesc};

struct Device {
    script: Vec<u8>,
    at: usize,
    batch: bool,
    /// Frames taken, in order.
    taken: Vec<Vec<u8>>,
}

impl Device {
    fn next(&mut self) -> u8 {
        let b = self.script.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// Whole records at the start of `buf` and where each ends.
    fn records(buf: &[u8]) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        let mut off = 0;
        while off + bpf_hdr::SIZE <= buf.len() {
            let word = |r: std::ops::Range<usize>| {
                let b = &buf[off + r.start..off + r.end];
                u32::from_ne_bytes(b.try_into().unwrap())
            };
            let caplen = word(bpf_hdr::CAPLEN) as usize;
            let end = off + bpf_hdr::SIZE + caplen;
            if end > buf.len() {
                break;
            }
            let next = off + bpf_wordalign(bpf_hdr::SIZE + caplen);
            out.push((next.min(buf.len()), buf[off + bpf_hdr::SIZE..end].to_vec()));
            off = next;
        }
        out
    }
}

impl BpfDevice for Device {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let op = self.next();
        match op % 8 {
            4 => return Err(io::Error::from_raw_os_error(libc::ENOBUFS)),
            5 => return Err(io::Error::from_raw_os_error(libc::EINTR)),
            6 if self.batch => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
            _ => {}
        }
        if !self.batch {
            self.taken.push(buf.to_vec());
            return Ok(buf.len());
        }
        let records = Self::records(buf);
        let n = match op % 8 {
            // Part of the records: the kernel takes whole ones.
            2 if records.len() > 1 => records[records.len() / 2 - 1].0,
            // Cut inside a record: the writer must call it a short write.
            3 if !buf.is_empty() => buf.len() - 1,
            _ => buf.len(),
        };
        for (end, frame) in records {
            if end <= n {
                self.taken.push(frame);
            }
        }
        Ok(n)
    }

    fn set_batch_write(&mut self, on: bool) -> io::Result<()> {
        if on && self.next() % 4 == 0 {
            return Err(io::Error::from_raw_os_error(libc::ENOTTY));
        }
        self.batch = on;
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    // [frame count][max write][frame lengths…][device script…]
    let [count, max_write, rest @ ..] = data else {
        return;
    };
    let count = usize::from(*count % 64);
    if rest.len() < count {
        return;
    }
    let (lengths, script) = rest.split_at(count);
    const SLOT: u32 = 256;
    let mut memory = SlotMemory::new(count.max(1) as u32, SLOT);
    let mut descs = Vec::new();
    for (i, &len) in lengths.iter().enumerate() {
        let len = u32::from(len).max(1);
        let slot = memory.slot_mut(i as u32);
        for (j, b) in slot.iter_mut().enumerate() {
            *b = (i * 31 + j) as u8;
        }
        descs.push(TxDesc {
            slot: i as u32,
            len,
        });
    }
    let device = Device {
        script: script.to_vec(),
        at: 0,
        batch: false,
        taken: Vec::new(),
    };
    let policy = RetryPolicy {
        first_pause: Duration::ZERO,
        max_pause: Duration::ZERO,
        give_up_after: Duration::from_millis(1),
    };
    let mut writer = Writer::new(device, "fuzz0", 1500, true)
        .with_policy(policy)
        .with_max_write(usize::from(*max_write) * 16);
    let result = writer.send(&memory, &descs);
    let want: Vec<&[u8]> = descs.iter().map(|&d| memory.frame(d)).collect();
    let taken = &writer.device().taken;
    assert!(taken.len() <= want.len(), "more frames taken than sent");
    for (i, (got, want)) in taken.iter().zip(&want).enumerate() {
        assert_eq!(got.as_slice(), *want, "frame {i} differs");
    }
    if result.is_ok() {
        assert_eq!(
            taken.len(),
            want.len(),
            "send succeeded but frames are missing"
        );
    }
});
