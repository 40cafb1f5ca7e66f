//! One bound AF_XDP socket as a `TxQueue`: the hot path (reserve, submit, reap) touches only the
//! rings and, when the kernel asks for it, makes the one syscall it may make: the kick.

use std::sync::Arc;
use std::time::Duration;

use linerate_port::{PortError, QueueStats, TxDesc, TxQueue};

use crate::AfXdpError;
use crate::port::PassProgram;
use crate::socket::XskSocket;
use crate::sys::{self, Kick, KickFailed};
use crate::umem::Umem;

/// A transmit queue on one AF_XDP socket. Fields drop in declaration order: the socket (rings,
/// then fd) goes before the UMEM it references, and the pass program goes last.
#[derive(Debug)]
pub struct XskQueue {
    socket: XskSocket,
    umem: Umem,
    _pass: Option<Arc<PassProgram>>,
    slots: u32,
    chunk: u32,
    /// Completion ring size: submitted-but-unreaped frames never exceed it.
    completion_size: u32,
    /// Submitted and not yet reaped.
    outstanding: u32,
    /// Granted by the last `reserve` and not yet submitted.
    reserved: u32,
    need_wakeup: bool,
    kicks: u64,
    kicks_busy: u64,
    mode: String,
    iface: String,
    queue_id: u32,
}

pub(crate) struct QueueParts {
    pub(crate) socket: XskSocket,
    pub(crate) umem: Umem,
    pub(crate) pass: Option<Arc<PassProgram>>,
    pub(crate) slots: u32,
    pub(crate) chunk: u32,
    pub(crate) need_wakeup: bool,
    pub(crate) mode: String,
    pub(crate) iface: String,
    pub(crate) queue_id: u32,
}

impl XskQueue {
    pub(crate) fn new(parts: QueueParts) -> Self {
        Self {
            completion_size: parts.socket.completion.size(),
            socket: parts.socket,
            umem: parts.umem,
            _pass: parts.pass,
            slots: parts.slots,
            chunk: parts.chunk,
            outstanding: 0,
            reserved: 0,
            need_wakeup: parts.need_wakeup,
            kicks: 0,
            kicks_busy: 0,
            mode: parts.mode,
            iface: parts.iface,
            queue_id: parts.queue_id,
        }
    }

    /// Frames submitted and not yet reaped.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// The kernel's per-socket counters (`XDP_STATISTICS`).
    pub fn kernel_statistics(&self) -> Result<libc::xdp_statistics, AfXdpError> {
        self.socket.statistics().map_err(|e| {
            AfXdpError::io(
                format!("XDP_STATISTICS on {} queue {}", self.iface, self.queue_id),
                e,
            )
        })
    }

    /// Wakes the kernel to send what the TX ring holds. A busy kick is counted and not an error:
    /// the frames stay in the ring and the next kick sends them. A link that went down is an
    /// error: retrying would spin until the drain timeout.
    #[inline]
    fn kick(&mut self) -> Result<(), PortError> {
        self.kicks += 1;
        match sys::kick(&self.socket.fd) {
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
        // A deleted interface is first closed (ENETDOWN), then unregistered, which unbinds the
        // socket (ENXIO): a moment tells a deletion from a plain `ip link set down`.
        let gone = || {
            (0..20).any(|_| {
                std::thread::sleep(Duration::from_millis(10));
                !std::path::Path::new("/sys/class/net")
                    .join(&self.iface)
                    .exists()
            })
        };
        match failed {
            KickFailed::Down if gone() => self.gone(),
            KickFailed::Os(e) if e.raw_os_error() == Some(libc::ENXIO) => self.gone(),
            KickFailed::Down => PortError::InterfaceDown {
                iface: self.iface.clone(),
            },
            KickFailed::Os(e) => PortError::kick(&self.iface, self.queue_id, e),
        }
    }

    #[cold]
    fn gone(&self) -> PortError {
        PortError::InterfaceGone {
            iface: self.iface.clone(),
        }
    }

    /// Takes what the completion ring holds.
    #[inline]
    fn take_completions(&mut self) -> u32 {
        let n = self.socket.completion.take(self.outstanding);
        self.outstanding -= n;
        n
    }
}

impl TxQueue for XskQueue {
    fn slots(&self) -> u32 {
        self.slots
    }

    fn slot_size(&self) -> u32 {
        self.chunk
    }

    #[inline]
    fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        self.umem.slot_mut(slot)
    }

    #[inline]
    fn reserve(&mut self, want: u32) -> u32 {
        let room = self.completion_size - self.outstanding;
        self.reserved = self.socket.tx.free(want.min(room));
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
        let n = descs.len() as u32;
        for (i, &desc) in descs.iter().enumerate() {
            if desc.slot >= self.slots || desc.len == 0 || desc.len > self.chunk {
                // Nothing is published: the descriptors written so far are overwritten later.
                return Err(PortError::bad_desc(desc, self.chunk, self.slots));
            }
            let addr = u64::from(desc.slot) * u64::from(self.chunk);
            self.socket.tx.write(
                i as u32,
                libc::xdp_desc {
                    addr,
                    len: desc.len,
                    options: 0,
                },
            );
        }
        self.socket.tx.publish(n);
        self.reserved -= n;
        self.outstanding += n;
        if n > 0 && (!self.need_wakeup || self.socket.tx.needs_wakeup()) {
            self.kick()?;
        }
        Ok(())
    }

    #[inline]
    fn reap(&mut self) -> Result<u32, PortError> {
        if self.outstanding == 0 {
            return Ok(0);
        }
        // A copy-mode kick sends at most the TX budget; what it left in the ring waits for the
        // next kick, which must come from here when the worker has nothing new to submit.
        if self.socket.tx.pending() > 0 && (!self.need_wakeup || self.socket.tx.needs_wakeup()) {
            self.kick()?;
        }
        Ok(self.take_completions())
    }

    fn drain(&mut self, timeout: Duration) -> Result<u32, PortError> {
        let (iface, queue) = (self.iface.clone(), self.queue_id);
        linerate_port::drain_polling(&iface, queue, timeout, || {
            if self.outstanding > 0
                && (self.socket.tx.pending() > 0 || self.socket.tx.needs_wakeup())
            {
                self.kick()?;
            }
            Ok((self.take_completions(), self.outstanding))
        })
    }

    fn stats(&self) -> QueueStats {
        let mut extra = Vec::with_capacity(8);
        if let Ok(s) = self.socket.statistics() {
            extra.push(("tx_invalid_descs", s.tx_invalid_descs));
            extra.push(("tx_ring_empty_descs", s.tx_ring_empty_descs));
        }
        extra.push(("kicks", self.kicks));
        extra.push(("kicks_busy", self.kicks_busy));
        extra.push(("tx_skb_budget", self.socket.budget.map_or(0, u64::from)));
        extra.push(("tx_ring_size", u64::from(self.socket.tx.size())));
        extra.push(("umem_huge_pages", u64::from(self.umem.huge())));
        QueueStats { extra }
    }

    fn mode(&self) -> String {
        self.mode.clone()
    }
}
