//! The receive half of `/dev/bpf`, portable: the read filter that keeps linerate's frames, the
//! parser of what one `read()` returns (`bpf_hdr`-framed records, each padded to
//! `BPF_WORDALIGN`), and the counter that feeds each signed frame to the receive side's shared
//! analysis (`linerate_rx::FlowState`). Only opening the device is macOS code (`sys`).
//!
//! The record layout is xnu's (64-bit: a 20-byte `bpf_hdr` with a 32-bit timeval); FreeBSD's
//! header is larger (a 16-byte timeval), so this parser is for macOS reads only.

use linerate_rx::{FlowState, FlowStats, RxFlow, RxGlobal, RxTotals, hist};
use linerate_wire::signature;

use crate::abi::{BPF_RET_K, BpfInsn, bpf_hdr, bpf_wordalign};

/// `BPF_LD | BPF_W | BPF_LEN`: A = the frame's length.
pub const BPF_LD_W_LEN: u16 = 0x80;
/// `BPF_ALU | BPF_SUB | BPF_K`: A -= k.
pub const BPF_ALU_SUB_K: u16 = 0x14;
/// `BPF_MISC | BPF_TAX`: X = A.
pub const BPF_MISC_TAX: u16 = 0x07;
/// `BPF_LD | BPF_W | BPF_IND`: A = the big-endian word at X + k (out of bounds: `ret #0`).
pub const BPF_LD_W_IND: u16 = 0x40;
/// `BPF_JMP | BPF_JEQ | BPF_K`: A == k ? jt : jf.
pub const BPF_JMP_JEQ_K: u16 = 0x15;

/// Bytes a kept frame may capture: all of it (the signature is at its end, and classic BPF
/// truncates from the end), up to the largest frame bpf hands over.
pub const SNAPLEN: u32 = 0xffff;

/// The receiver's read filter: keep a frame whose last four bytes are the signature's magic,
/// whole; drop the rest in the kernel, so stray traffic never costs a copy. A frame shorter than
/// four bytes makes `len - 4` wrap, the load falls outside the frame and the kernel returns 0.
pub const SIGNED_ONLY: [BpfInsn; 7] = [
    insn(BPF_LD_W_LEN, 0, 0, 0),
    insn(BPF_ALU_SUB_K, 0, 0, 4),
    insn(BPF_MISC_TAX, 0, 0, 0),
    insn(BPF_LD_W_IND, 0, 0, 0),
    insn(BPF_JMP_JEQ_K, 0, 1, signature::MAGIC),
    insn(BPF_RET_K, 0, 0, SNAPLEN),
    insn(BPF_RET_K, 0, 0, 0),
];

/// The read filter of a receiver that counts everything (as the Linux sink does): every frame,
/// whole, so signed ones are still analysed and the rest counted as `other`.
pub const ALL_FRAMES: [BpfInsn; 1] = [insn(BPF_RET_K, 0, 0, SNAPLEN)];

/// `BPF_LD | BPF_W | BPF_ABS`: A = the big-endian word at k.
pub const BPF_LD_W_ABS: u16 = 0x20;
/// `BPF_LD | BPF_H | BPF_ABS`: A = the big-endian half-word at k.
pub const BPF_LD_H_ABS: u16 = 0x28;

/// The read filter of a lab's receiver: every frame addressed to `mac` (the receiving end's own
/// address), whole. On a Mac the host's stack talks on the lab's interfaces too (IPv6 neighbour
/// discovery, mDNS, all multicast or broadcast); a sweep's frames are unicast to the receiver,
/// so this counts exactly what the sender sent, signed or not.
pub fn to_mac(mac: [u8; 6]) -> [BpfInsn; 6] {
    [
        insn(BPF_LD_W_ABS, 0, 0, 0),
        insn(
            BPF_JMP_JEQ_K,
            0,
            3,
            u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]]),
        ),
        insn(BPF_LD_H_ABS, 0, 0, 4),
        insn(
            BPF_JMP_JEQ_K,
            0,
            1,
            u32::from(u16::from_be_bytes([mac[4], mac[5]])),
        ),
        insn(BPF_RET_K, 0, 0, SNAPLEN),
        insn(BPF_RET_K, 0, 0, 0),
    ]
}

/// Which frames a receiver keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// [`SIGNED_ONLY`]: strays cost nothing.
    Signed,
    /// [`ALL_FRAMES`].
    All,
    /// [`to_mac`]: frames unicast to this address.
    To([u8; 6]),
}

impl Keep {
    pub fn program(self) -> Vec<BpfInsn> {
        match self {
            Keep::Signed => SIGNED_ONLY.to_vec(),
            Keep::All => ALL_FRAMES.to_vec(),
            Keep::To(mac) => to_mac(mac).to_vec(),
        }
    }
}

const fn insn(code: u16, jt: u8, jf: u8, k: u32) -> BpfInsn {
    BpfInsn { code, jt, jf, k }
}

/// One captured frame and its `bpf_hdr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// `bh_tstamp` (wall clock, µs resolution): informative only, the signature's stamps are on
    /// the monotonic clock.
    pub sec: u32,
    pub usec: u32,
    /// The frame's length on the wire (no FCS).
    pub datalen: u32,
    /// The bytes captured: `datalen` bytes unless the frame was cut (`caplen < datalen`).
    pub data: &'a [u8],
}

impl Record<'_> {
    /// Whether the whole frame was captured (the signature, at its end, only then).
    pub fn is_whole(&self) -> bool {
        self.data.len() as u64 == u64::from(self.datalen)
    }
}

/// A read buffer that does not hold whole records: the kernel never returns one, so the buffer
/// was cut or is not bpf's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("bpf read: {left} bytes at offset {at} are too few for a {need}-byte record header")]
    ShortHeader { at: usize, left: usize, need: usize },
    #[error("bpf read: record at offset {at} has bh_hdrlen {hdrlen}, less than the header")]
    BadHdrLen { at: usize, hdrlen: usize },
    #[error("bpf read: record at offset {at} claims {caplen} bytes, only {left} follow")]
    ShortFrame {
        at: usize,
        caplen: usize,
        left: usize,
    },
}

/// The records of one `read()`: each starts at a `BPF_WORDALIGN`ed offset, its frame at
/// `bh_hdrlen` past that (which the kernel may pad beyond the header's 18 bytes).
#[derive(Debug, Clone)]
pub struct Records<'a> {
    buf: &'a [u8],
    at: usize,
}

/// Iterates over the records of `buf`, the bytes one `read()` returned. Stops at the first
/// malformed record, after yielding its error.
pub fn records(buf: &[u8]) -> Records<'_> {
    Records { buf, at: 0 }
}

fn u32_at(buf: &[u8], range: std::ops::Range<usize>) -> u32 {
    u32::from_ne_bytes(buf[range].try_into().expect("4-byte field"))
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        let at = self.at;
        let left = self.buf.len().checked_sub(at).filter(|&n| n > 0)?;
        // Any error ends the iteration: nothing after a bad record can be framed.
        self.at = self.buf.len();
        if left < bpf_hdr::HDRLEN.end {
            return Some(Err(RecordError::ShortHeader {
                at,
                left,
                need: bpf_hdr::HDRLEN.end,
            }));
        }
        let h = &self.buf[at..];
        let caplen = u32_at(h, bpf_hdr::CAPLEN) as usize;
        let datalen = u32_at(h, bpf_hdr::DATALEN);
        let hdrlen =
            u16::from_ne_bytes([h[bpf_hdr::HDRLEN.start], h[bpf_hdr::HDRLEN.start + 1]]) as usize;
        if hdrlen < bpf_hdr::HDRLEN.end {
            return Some(Err(RecordError::BadHdrLen { at, hdrlen }));
        }
        let Some(data) = h.get(hdrlen..).and_then(|d| d.get(..caplen)) else {
            return Some(Err(RecordError::ShortFrame {
                at,
                caplen,
                left: left.saturating_sub(hdrlen),
            }));
        };
        // The last record's padding may be absent: the next offset then lies past the end.
        self.at = at.saturating_add(bpf_wordalign(hdrlen + caplen));
        Some(Ok(Record {
            sec: u32_at(h, bpf_hdr::TSTAMP_SEC),
            usec: u32_at(h, bpf_hdr::TSTAMP_USEC),
            datalen,
            data,
        }))
    }
}

/// When `record` arrived on the monotonic clock, from its wall-clock stamp and both clocks read
/// after the `read()` that returned it: `mono_ns − (wall_ns − stamp)`. A record without a stamp
/// (`BIOCSNOTSTAMP`), or one stamped after `wall_ns` (the wall clock was stepped back), arrived
/// by `mono_ns`, which is all that is known.
pub fn arrival(record: &Record<'_>, mono_ns: u64, wall_ns: u64) -> u64 {
    let stamp = u64::from(record.sec) * 1_000_000_000 + u64::from(record.usec) * 1_000;
    if stamp == 0 || stamp > wall_ns {
        return mono_ns;
    }
    mono_ns.saturating_sub(wall_ns - stamp)
}

/// What a bpf receiver has counted: every frame the filter kept, and per flow what the
/// signature says, in the same structures as the Linux receiver's (`linerate_rx`).
#[derive(Debug, Clone)]
pub struct CaptureCounts {
    /// Frames and bytes (wire length, no FCS) read, whole or cut.
    pub frames: u64,
    pub bytes: u64,
    /// Frames captured shorter than they were (`caplen < datalen`): counted, not analysed.
    pub cut: u64,
    /// Per flow id, indexed by it.
    pub flows: Vec<RxFlow>,
    /// Latency histograms of the first flows, `hist::BUCKETS` each, or none.
    pub hists: Vec<Vec<u64>>,
    pub global: RxGlobal,
    /// Time every frame's latency, not one frame a departure stamp (as `linerate_rx`).
    pub every_frame: bool,
}

impl CaptureCounts {
    /// Room for `flows` flow ids (more are counted as untracked) and histograms for the first
    /// `hist_flows` of them.
    pub fn new(flows: usize, hist_flows: usize) -> Self {
        Self {
            frames: 0,
            bytes: 0,
            cut: 0,
            flows: vec![RxFlow::default(); flows],
            hists: vec![vec![0; hist::BUCKETS]; hist_flows.min(flows)],
            global: RxGlobal::default(),
            every_frame: false,
        }
    }

    /// Accounts every record of one `read()`, all arrived by `now` (ns on the transmit stamps'
    /// clock). With immediate mode off a record waits in the kernel buffer until the read, so
    /// latency includes up to one read timeout of buffering.
    pub fn absorb(&mut self, buf: &[u8], now: u64) -> Result<u64, RecordError> {
        let mut n = 0;
        for record in records(buf) {
            self.observe(&record?, now);
            n += 1;
        }
        Ok(n)
    }

    /// Accounts every record of one `read()`, each at the time its `bpf_hdr` stamp says (the
    /// wall clock, µs) moved onto the monotonic clock of the transmit stamps: `mono_ns` and
    /// `wall_ns` are both clocks read once just after the `read()`. Latency then no longer
    /// includes the time a record waited in the kernel buffer.
    pub fn absorb_stamped(
        &mut self,
        buf: &[u8],
        mono_ns: u64,
        wall_ns: u64,
    ) -> Result<u64, RecordError> {
        let mut n = 0;
        for record in records(buf) {
            let record = record?;
            self.observe(&record, arrival(&record, mono_ns, wall_ns));
            n += 1;
        }
        Ok(n)
    }

    /// Accounts one record.
    pub fn observe(&mut self, record: &Record<'_>, now: u64) {
        let len = u64::from(record.datalen);
        self.frames += 1;
        self.bytes += len;
        if !record.is_whole() {
            self.cut += 1;
            return;
        }
        let Some(sig) = signature::parse(record.data) else {
            self.global.other_frames += 1;
            self.global.other_bytes += len;
            return;
        };
        let id = usize::from(sig.flow);
        let Some(flow) = self.flows.get_mut(id) else {
            self.global.untracked_frames += 1;
            self.global.untracked_bytes += len;
            return;
        };
        let mut state = FlowState {
            flow,
            hist: self.hists.get_mut(id).map(Vec::as_mut_slice),
        };
        if !state.observe(sig, len, self.every_frame, || now) {
            self.global.future += 1;
        }
    }

    /// The flows that arrived, as the Linux receiver reports them (one "CPU": a bpf reader is
    /// one thread, so every flow's order is judged whole).
    pub fn totals(&self) -> RxTotals {
        let flows = self
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.frames > 0)
            .map(|(id, f)| {
                let hist = self.hists.get(id).map(std::slice::from_ref);
                FlowStats::merge(id as u16, std::slice::from_ref(f), hist)
            })
            .collect();
        RxTotals {
            flows,
            global: self.global,
        }
    }

    /// Frames that carried the signature of a tracked flow.
    pub fn signed_frames(&self) -> u64 {
        self.flows.iter().map(|f| f.frames).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One record as xnu's `bpf_catchpacket` lays it out on arm64/x86_64 (little-endian): the
    /// offsets are written out here, not taken from `abi::bpf_hdr`, so the table is checked too.
    /// For Ethernet xnu picks `bh_hdrlen = BPF_WORDALIGN(18 + 14) - 14 = 18`, so that the IP
    /// header lands aligned; the record is then padded to a multiple of 4.
    fn record(out: &mut Vec<u8>, hdrlen: u16, datalen: u32, data: &[u8], pad: bool) {
        let start = out.len();
        out.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        out.extend_from_slice(&123_456u32.to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&datalen.to_le_bytes());
        out.extend_from_slice(&hdrlen.to_le_bytes());
        out.resize(start + usize::from(hdrlen), 0xee);
        out.extend_from_slice(data);
        if pad {
            while !(out.len() - start).is_multiple_of(4) {
                out.push(0xee);
            }
        }
    }

    /// A frame of `len` bytes (no FCS) ending in a signature of `flow`/`seq`, stamped at `tx_ns`.
    fn signed(len: usize, flow: u16, seq: u32, tx_ns: u64) -> Vec<u8> {
        let mut f: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let t = len - signature::LEN;
        f[t..t + 6].copy_from_slice(&tx_ns.to_be_bytes()[2..]);
        f[t + 6..t + 10].copy_from_slice(&seq.to_be_bytes());
        f[t + 10..t + 12].copy_from_slice(&flow.to_be_bytes());
        f[t + 14..t + 18].copy_from_slice(&[0x4c, 0x52, 0x73, 0x67]);
        f
    }

    #[test]
    fn several_records_per_read_with_alignment_padding() {
        // 60 + 18 = 78 → 2 bytes of padding; 61 + 18 = 79 → 1; 64 + 18 = 82 → 2.
        let frames = [
            signed(60, 0, 0, 1),
            signed(61, 1, 0, 1),
            signed(64, 0, 1, 1),
        ];
        let mut buf = Vec::new();
        for f in &frames {
            record(&mut buf, 18, f.len() as u32, f, true);
        }
        assert_eq!(buf.len(), 80 + 80 + 84);
        let got: Vec<_> = records(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 3);
        for (r, f) in got.iter().zip(&frames) {
            assert_eq!(r.data, &f[..]);
            assert_eq!(r.datalen as usize, f.len());
            assert_eq!((r.sec, r.usec), (1_700_000_000, 123_456));
            assert!(r.is_whole());
        }
    }

    #[test]
    fn a_larger_hdrlen_moves_the_frame_and_the_last_record_may_lack_padding() {
        let a = signed(61, 0, 0, 1);
        let b = signed(63, 0, 1, 1);
        let mut buf = Vec::new();
        record(&mut buf, 20, 61, &a, true);
        record(&mut buf, 18, 63, &b, false);
        assert_eq!(buf.len(), 84 + 81);
        let got: Vec<_> = records(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got.iter().map(|r| r.data).collect::<Vec<_>>(),
            [&a[..], &b[..]]
        );
    }

    #[test]
    fn truncated_reads_are_errors_after_the_whole_records() {
        let f = signed(60, 0, 0, 1);
        let mut buf = Vec::new();
        record(&mut buf, 18, 60, &f, true);
        record(&mut buf, 18, 60, &f, true);
        let whole = buf.len();
        // Cut inside the second record's frame, then inside its header.
        let cut_frame: Vec<_> = records(&buf[..whole - 10]).collect();
        assert_eq!(cut_frame.len(), 2);
        assert!(cut_frame[0].is_ok());
        assert_eq!(
            cut_frame[1],
            Err(RecordError::ShortFrame {
                at: 80,
                caplen: 60,
                left: 52
            })
        );
        let cut_header: Vec<_> = records(&buf[..80 + 10]).collect();
        assert_eq!(
            cut_header[1],
            Err(RecordError::ShortHeader {
                at: 80,
                left: 10,
                need: 18
            })
        );
        // A header whose bh_hdrlen points inside itself.
        let mut bad = Vec::new();
        record(&mut bad, 18, 60, &f, true);
        bad[16..18].copy_from_slice(&4u16.to_le_bytes());
        assert_eq!(
            records(&bad).collect::<Vec<_>>(),
            [Err(RecordError::BadHdrLen { at: 0, hdrlen: 4 })]
        );
        assert_eq!(records(&[]).count(), 0);
    }

    #[test]
    fn counts_flows_strays_cut_and_untracked_frames() {
        let now = 1_000_000;
        let mut buf = Vec::new();
        // Flow 0: seq 0, 1, 3 (one gap), then 1 again (a duplicate); 10 µs of latency.
        for seq in [0, 1, 3, 1] {
            record(&mut buf, 18, 64, &signed(64, 0, seq, now - 10_000), true);
        }
        // Flow 1: one 1518-byte frame (1514 without FCS).
        record(&mut buf, 18, 1514, &signed(1514, 1, 7, now - 20_000), true);
        // Flow 5 is beyond a 2-flow table.
        record(&mut buf, 18, 64, &signed(64, 5, 0, now), true);
        // No magic: a stray frame.
        record(&mut buf, 18, 70, &[0u8; 70], true);
        // Cut by the capture (caplen 100 of 1514): counted, not analysed.
        let long = signed(1514, 0, 4, now);
        record(&mut buf, 18, 1514, &long[..100], true);
        // Stamped in the future.
        record(&mut buf, 18, 64, &signed(64, 1, 8, now + 5), true);

        let mut c = CaptureCounts::new(2, 1);
        assert_eq!(c.absorb(&buf, now), Ok(9));
        assert_eq!(c.frames, 9);
        assert_eq!(c.bytes, 4 * 64 + 1514 + 64 + 70 + 1514 + 64);
        assert_eq!(c.cut, 1);
        assert_eq!((c.global.other_frames, c.global.other_bytes), (1, 70));
        assert_eq!(
            (c.global.untracked_frames, c.global.untracked_bytes),
            (1, 64)
        );
        assert_eq!(c.global.future, 1);
        let f0 = &c.flows[0];
        assert_eq!(
            (f0.frames, f0.bytes, f0.gaps, f0.dups, f0.late),
            (4, 256, 1, 1, 0)
        );
        // Its four frames share one departure stamp: the first is timed.
        assert_eq!((f0.lat_min, f0.lat_max, f0.lat_count), (10_000, 10_000, 1));
        assert_eq!(c.hists[0].iter().sum::<u64>(), 1);
        assert_eq!(c.hists.len(), 1);
        let f1 = &c.flows[1];
        assert_eq!((f1.frames, f1.bytes, f1.lat_count), (2, 1514 + 64, 1));
        assert_eq!(c.signed_frames(), 6);

        // As the Linux receiver reports them: the flows that arrived, in id order.
        let t = c.totals();
        assert_eq!(t.flows.iter().map(|f| f.flow).collect::<Vec<_>>(), [0, 1]);
        let s0 = t.flow(0).unwrap();
        assert_eq!((s0.frames, s0.gaps, s0.duplicates, s0.cpus), (4, 1, 1, 1));
        assert_eq!(s0.unique(), 3);
        let lat = s0.latency.unwrap();
        assert_eq!((lat.min, lat.max), (10_000, 10_000));
        // Flow 0 has a histogram (percentiles), flow 1 not.
        assert!(lat.p50.unwrap().abs_diff(10_000) <= 10_000 / 100, "{lat:?}");
        assert_eq!(t.flow(1).unwrap().latency.unwrap().p50, None);
        assert_eq!(t.global, c.global);
        assert_eq!(lat.timed, 1);

        // Timing every frame: all four of flow 0.
        let mut c = CaptureCounts::new(2, 1);
        c.every_frame = true;
        c.absorb(&buf, now).unwrap();
        assert_eq!((c.flows[0].frames, c.flows[0].lat_count), (4, 4));
        assert_eq!(c.hists[0].iter().sum::<u64>(), 4);
    }

    #[test]
    fn a_bad_read_counts_the_records_before_it() {
        let mut buf = Vec::new();
        record(&mut buf, 18, 64, &signed(64, 0, 0, 0), true);
        record(&mut buf, 18, 64, &signed(64, 0, 1, 0), true);
        let mut c = CaptureCounts::new(1, 0);
        // Two bytes short is only the last record's padding, which may be absent; three is not.
        assert_eq!(c.absorb(&buf[..buf.len() - 2], 0), Ok(2));
        let mut c = CaptureCounts::new(1, 0);
        assert!(c.absorb(&buf[..buf.len() - 3], 0).is_err());
        assert_eq!(c.frames, 1);
    }

    /// A classic BPF interpreter for the instructions the filter uses, as `bpf_filter()` of
    /// xnu runs them (loads are big-endian, an out-of-bounds load returns 0).
    fn run(prog: &[BpfInsn], pkt: &[u8]) -> u32 {
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        loop {
            let i = prog[pc];
            pc += 1;
            match i.code {
                BPF_LD_W_LEN => a = pkt.len() as u32,
                BPF_ALU_SUB_K => a = a.wrapping_sub(i.k),
                BPF_MISC_TAX => x = a,
                BPF_LD_W_IND => {
                    let at = x.wrapping_add(i.k) as usize;
                    let Some(w) = pkt.get(at..at.saturating_add(4)).filter(|w| w.len() == 4) else {
                        return 0;
                    };
                    a = u32::from_be_bytes(w.try_into().unwrap());
                }
                BPF_LD_W_ABS | BPF_LD_H_ABS => {
                    let n = if i.code == BPF_LD_W_ABS { 4 } else { 2 };
                    let at = i.k as usize;
                    let Some(w) = pkt.get(at..at + n).filter(|w| w.len() == n) else {
                        return 0;
                    };
                    a = w.iter().fold(0, |a, &b| a << 8 | u32::from(b));
                }
                BPF_JMP_JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                BPF_RET_K => return i.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    #[test]
    fn the_filter_keeps_signed_frames_whole_and_drops_the_rest() {
        assert_eq!(run(&SIGNED_ONLY, &signed(64, 3, 9, 0)), SNAPLEN);
        assert_eq!(run(&SIGNED_ONLY, &signed(9014, 3, 9, 0)), SNAPLEN);
        assert_eq!(run(&SIGNED_ONLY, &[0u8; 64]), 0);
        // The magic must be last: one byte after it and the frame is not ours.
        let mut shifted = signed(64, 0, 0, 0);
        shifted.push(0);
        assert_eq!(run(&SIGNED_ONLY, &shifted), 0);
        for short in 0..4 {
            assert_eq!(run(&SIGNED_ONLY, &[0x4c, 0x52, 0x73][..short.min(3)]), 0);
        }
        assert_eq!(run(&SIGNED_ONLY, &[0x4c, 0x52, 0x73, 0x67]), SNAPLEN);
        assert_eq!(run(&Keep::All.program(), &[0u8; 64]), SNAPLEN);
        assert_eq!(Keep::Signed.program(), SIGNED_ONLY);
    }

    const LAB_MAC: [u8; 6] = [0x66, 0x65, 0x74, 0x68, 0x00, 0x01];

    /// A 60-byte frame to `dst`, from the other feth.
    fn frame_to(dst: [u8; 6]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&[0x66, 0x65, 0x74, 0x68, 0x00, 0x00]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f
    }

    #[test]
    fn the_lab_filter_keeps_frames_to_the_receiver_only() {
        let prog = Keep::To(LAB_MAC).program();
        assert_eq!(run(&prog, &frame_to(LAB_MAC)), SNAPLEN);
        assert_eq!(run(&prog, &signed(1514, 0, 0, 0)[..]), 0);
        // Each of the six bytes matters: the host's broadcast and multicast, and a neighbour.
        for i in 0..6 {
            let mut other = LAB_MAC;
            other[i] ^= 0x01;
            assert_eq!(run(&prog, &frame_to(other)), 0, "byte {i}");
        }
        assert_eq!(run(&prog, &frame_to([0xff; 6])), 0);
        assert_eq!(run(&prog, &frame_to([0x33, 0x33, 0, 0, 0, 1])), 0);
        // Too short to hold a destination: out of bounds, dropped.
        assert_eq!(run(&prog, &LAB_MAC[..5]), 0);
        assert_eq!(run(&prog, &LAB_MAC), SNAPLEN);
    }

    #[test]
    fn arrival_moves_the_bpf_stamp_onto_the_monotonic_clock() {
        let data = [0u8; 60];
        let at = |sec, usec| Record {
            sec,
            usec,
            datalen: 60,
            data: &data,
        };
        let wall = 1_700_000_000_500_000_000u64;
        let mono = 9_000_000_000u64;
        // Stamped 2.5 ms before the read.
        assert_eq!(
            arrival(&at(1_700_000_000, 497_500), mono, wall),
            mono - 2_500_000
        );
        // No stamp, a stamp after the read, or one before the monotonic clock began.
        assert_eq!(arrival(&at(0, 0), mono, wall), mono);
        assert_eq!(arrival(&at(1_700_000_001, 0), mono, wall), mono);
        assert_eq!(arrival(&at(1, 0), mono, wall), 0);

        // In the counts: 30 µs of latency by the stamp, though the read came 50 ms later.
        let tx = mono - 50_000_000;
        let mut buf = Vec::new();
        record(&mut buf, 18, 64, &signed(64, 0, 0, tx), true);
        let stamp = wall - 50_000_000 + 30_000;
        buf[..4].copy_from_slice(&((stamp / 1_000_000_000) as u32).to_le_bytes());
        buf[4..8].copy_from_slice(&((stamp % 1_000_000_000 / 1_000) as u32).to_le_bytes());
        let mut c = CaptureCounts::new(1, 0);
        assert_eq!(c.absorb_stamped(&buf, mono, wall), Ok(1));
        assert_eq!((c.flows[0].lat_min, c.flows[0].lat_max), (30_000, 30_000));
    }

    /// The same programs in a real classic-BPF kernel: Linux runs socket filters on the datagrams
    /// of a unix socketpair (the "packet" is the datagram), and checks the program on attach.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_linux_kernel_runs_the_filter_the_same_way() {
        let sent = [
            signed(64, 1, 1, 0),
            vec![0u8; 64],
            signed(200, 2, 2, 0),
            vec![0x4c, 0x52],
        ];
        assert_eq!(
            kernel_keeps(&SIGNED_ONLY, &sent),
            [sent[0].clone(), sent[2].clone()]
        );
        let sent = [
            frame_to(LAB_MAC),
            frame_to([0xff; 6]),
            frame_to([0x66, 0x65, 0x74, 0x68, 0x00, 0x02]),
            signed(64, 1, 1, 0),
            LAB_MAC[..5].to_vec(),
        ];
        assert_eq!(
            kernel_keeps(&Keep::To(LAB_MAC).program(), &sent),
            [sent[0].clone()]
        );
    }

    /// The datagrams of `sent` that `prog`, attached to a unix socket, lets through.
    #[cfg(target_os = "linux")]
    fn kernel_keeps(prog: &[BpfInsn], sent: &[Vec<u8>]) -> Vec<Vec<u8>> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors socketpair(2) writes.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK,
                0,
                fds.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        // SAFETY: socketpair just returned these two descriptors, owned by nothing else.
        let (tx, rx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // `struct sock_filter` has the layout of `struct bpf_insn`.
        let prog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr().cast_mut().cast(),
        };
        // SAFETY: `prog` points at `len` live instructions; the kernel copies them during the call.
        let rc = unsafe {
            libc::setsockopt(
                rx.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&prog as *const libc::sock_fprog).cast(),
                size_of::<libc::sock_fprog>() as u32,
            )
        };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        for d in sent {
            // SAFETY: `d` is valid for `d.len()` bytes.
            let n = unsafe { libc::send(tx.as_raw_fd(), d.as_ptr().cast(), d.len(), 0) };
            assert_eq!(n, d.len() as isize);
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        loop {
            // SAFETY: `buf` is valid for writes of its length.
            let n = unsafe { libc::recv(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                break;
            }
            got.push(buf[..n as usize].to_vec());
        }
        got
    }
}
