//! One packet socket with its TX ring as a `TxQueue`. A slot is a ring frame: the frames laid in
//! once stay in place lap after lap, and the hot path writes a length and a status word per
//! frame, then makes one `sendto` per batch.

use std::os::fd::OwnedFd;
use std::time::Duration;

use linerate_port::{PortError, QueueStats, SlotMemory, TxDesc, TxQueue};

use crate::AfPacketError;
use crate::ring::{Status, TxRing};
use crate::sys::{self, Kick, KickFailed};

/// A transmit queue on one AF_PACKET socket. Fields drop in declaration order: the ring is
/// unmapped before the socket closes.
#[derive(Debug)]
pub struct AfPacketQueue {
    ring: TxRing,
    fd: OwnedFd,
    /// The kernel sends ring frames in ring order, so frames must be handed over in that order.
    /// A worker that submits slots out of order (interleaved streams give each lane its own
    /// slots) moves the slots here, once, and each submit then copies the frame into the next
    /// ring frame.
    copied: Option<SlotMemory>,
    /// Next ring frame to hand over, and the oldest one handed over and not yet reaped.
    head: u32,
    tail: u32,
    /// Handed over and not yet reaped.
    outstanding: u32,
    /// Granted by the last `reserve` and not yet submitted.
    reserved: u32,
    kicks: u64,
    kicks_busy: u64,
    copies: u64,
    /// The longest frame the interface carries (MTU + Ethernet header), checked here when the
    /// kernel does not: it skips its own check for a ring with a `virtio_net_hdr`. `u32::MAX`
    /// when the kernel checks.
    max_len: u32,
    mode: String,
    iface: String,
    queue_id: u32,
}

pub(crate) struct QueueParts {
    pub(crate) ring: TxRing,
    pub(crate) fd: OwnedFd,
    pub(crate) max_len: u32,
    pub(crate) mode: String,
    pub(crate) iface: String,
    pub(crate) queue_id: u32,
}

impl AfPacketQueue {
    pub(crate) fn new(parts: QueueParts) -> Self {
        Self {
            ring: parts.ring,
            fd: parts.fd,
            copied: None,
            head: 0,
            tail: 0,
            outstanding: 0,
            reserved: 0,
            kicks: 0,
            kicks_busy: 0,
            copies: 0,
            max_len: parts.max_len,
            mode: parts.mode,
            iface: parts.iface,
            queue_id: parts.queue_id,
        }
    }

    /// Frames handed over and not yet reaped.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// True once slots were submitted out of ring order and frames are copied on submit.
    pub fn copying(&self) -> bool {
        self.copied.is_some()
    }

    #[inline]
    fn next(&self, frame: u32) -> u32 {
        if frame + 1 == self.ring.frames() {
            0
        } else {
            frame + 1
        }
    }

    /// True when the newest frame handed over is still waiting to be sent: the kernel walks the
    /// ring in order, so then a kick is owed (the last one found the socket's send buffer or the
    /// device busy and left the rest marked).
    #[inline]
    fn unsent(&self) -> bool {
        if self.outstanding == 0 {
            return false;
        }
        let newest = if self.head == 0 {
            self.ring.frames() - 1
        } else {
            self.head - 1
        };
        self.ring.status(newest) == Status::Requested
    }

    /// Wakes the kernel to send what the ring holds. A busy kick (the socket's send buffer full
    /// of frames in flight, or the device queue full with the frame left marked) is counted and
    /// not an error: the next kick sends them.
    #[inline]
    fn kick(&mut self) -> Result<(), PortError> {
        self.kicks += 1;
        match sys::kick(&self.fd) {
            Ok(Kick::Sent) => Ok(()),
            Ok(Kick::Busy) => {
                self.kicks_busy += 1;
                Ok(())
            }
            Err(failed) => Err(self.kick_error(failed)),
        }
    }

    #[cold]
    fn kick_error(&self, failed: KickFailed) -> PortError {
        match failed {
            KickFailed::Down => PortError::InterfaceDown {
                iface: self.iface.clone(),
            },
            // A frame the kernel refused (marked wrong-format) is why the send failed: name it
            // rather than the errno.
            KickFailed::Os(e) => match self.refused() {
                Some(frame) => self.wrong_format(frame),
                None => PortError::kick(&self.iface, self.queue_id, e),
            },
        }
    }

    /// The ring frame the kernel refused, if any is in flight.
    #[cold]
    fn refused(&self) -> Option<u32> {
        let mut frame = self.tail;
        for _ in 0..self.outstanding {
            if self.ring.status(frame) == Status::WrongFormat {
                return Some(frame);
            }
            frame = self.next(frame);
        }
        None
    }

    /// Longer than the interface carries, by the kernel's rule (`tpacket_snd`): MTU + Ethernet
    /// header, 4 bytes more for an 802.1Q-tagged frame.
    #[inline]
    fn too_long(&mut self, desc: TxDesc) -> bool {
        if desc.len <= self.max_len {
            return false;
        }
        let tagged = self.slot_mut(desc.slot).get(12..14) == Some(&[0x81, 0x00]);
        !(tagged && desc.len <= self.max_len.saturating_add(4))
    }

    #[cold]
    fn wrong_format(&self, frame: u32) -> PortError {
        AfPacketError::WrongFormat {
            iface: self.iface.clone(),
            queue: self.queue_id,
            frame,
        }
        .into()
    }

    /// Moves every slot's bytes out of the ring into plain memory (the ring frames hold exactly
    /// what the worker wrote into the slots, in flight or not), for out-of-order submits.
    #[cold]
    fn start_copying(&mut self) {
        let size = self.ring.data_size();
        let mut memory = SlotMemory::new(self.ring.frames(), size);
        for slot in 0..self.ring.frames() {
            memory
                .slot_mut(slot)
                .copy_from_slice(self.ring.data_mut(slot));
        }
        self.copied = Some(memory);
    }

    /// Takes the frames the kernel has sent, oldest first.
    #[inline]
    fn take_completions(&mut self) -> Result<u32, PortError> {
        let mut n = 0;
        while self.outstanding > 0 {
            match self.ring.status(self.tail) {
                Status::Available => {
                    self.tail = self.next(self.tail);
                    self.outstanding -= 1;
                    n += 1;
                }
                Status::Requested | Status::Sending => break,
                Status::WrongFormat => return Err(self.wrong_format(self.tail)),
            }
        }
        Ok(n)
    }
}

impl TxQueue for AfPacketQueue {
    fn slots(&self) -> u32 {
        self.ring.frames()
    }

    fn slot_size(&self) -> u32 {
        self.ring.data_size()
    }

    #[inline]
    fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        match &mut self.copied {
            Some(memory) => memory.slot_mut(slot),
            None => self.ring.data_mut(slot),
        }
    }

    #[inline]
    fn reserve(&mut self, want: u32) -> u32 {
        self.reserved = want.min(self.ring.frames() - self.outstanding);
        self.reserved
    }

    #[inline]
    fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError> {
        if descs.len() > self.reserved as usize {
            return Err(PortError::over_submit(
                &self.iface,
                self.queue_id,
                descs.len(),
                self.reserved,
            ));
        }
        let size = self.ring.data_size();
        // Checked before any frame is handed over: the kernel sees a status word at once, so a
        // bad descriptor halfway must not leave the first half sent.
        for &desc in descs {
            if desc.slot >= self.ring.frames() || desc.len == 0 || desc.len > size {
                return Err(PortError::bad_desc(
                    desc,
                    self.ring.data_size(),
                    self.ring.frames(),
                ));
            }
            if self.too_long(desc) {
                return Err(self.wrong_format(self.head));
            }
        }
        for &desc in descs {
            if self.copied.is_none() && desc.slot != self.head {
                self.start_copying();
            }
            if let Some(memory) = &self.copied {
                let frame = memory.frame(desc);
                self.ring.data_mut(self.head)[..frame.len()].copy_from_slice(frame);
                self.copies += 1;
            }
            self.ring.hand_over(self.head, desc.len);
            self.head = self.next(self.head);
        }
        let n = descs.len() as u32;
        self.reserved -= n;
        self.outstanding += n;
        if n > 0 {
            self.kick()?;
        }
        Ok(())
    }

    #[inline]
    fn reap(&mut self) -> Result<u32, PortError> {
        if self.outstanding == 0 {
            return Ok(0);
        }
        if self.unsent() {
            self.kick()?;
        }
        self.take_completions()
    }

    fn drain(&mut self, timeout: Duration) -> Result<u32, PortError> {
        let (iface, queue) = (self.iface.clone(), self.queue_id);
        linerate_port::drain_polling(&iface, queue, timeout, || {
            if self.unsent() {
                self.kick()?;
            }
            Ok((self.take_completions()?, self.outstanding))
        })
    }

    fn stats(&self) -> QueueStats {
        let layout = self.ring.layout();
        QueueStats {
            extra: vec![
                ("kicks", self.kicks),
                ("kicks_busy", self.kicks_busy),
                ("copies", self.copies),
                ("tx_ring_frames", u64::from(layout.frames)),
                ("tx_ring_frame_size", u64::from(layout.frame_size)),
                ("tx_ring_block_size", u64::from(layout.block_size)),
            ],
        }
    }

    fn mode(&self) -> String {
        self.mode.clone()
    }
}
