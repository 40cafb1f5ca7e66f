//! One AF_XDP socket set up for TX: UMEM registered, FILL/COMPLETION/TX rings created and the
//! TX and COMPLETION rings mapped. FILL is registered because bind requires it, and never given
//! buffers. Binding is a separate step so the mode ladder can retry with a fresh socket.

use std::io;
use std::os::fd::OwnedFd;

use crate::ring::{CompletionRing, TxRing};
use crate::sys;
use crate::umem::Umem;

/// Ring sizes of one socket.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RingSizes {
    pub(crate) tx: u32,
    pub(crate) completion: u32,
    pub(crate) fill: u32,
}

impl RingSizes {
    /// TX: the largest power of two ≤ `slots`, at most 2048. COMPLETION: twice that, so a full TX
    /// ring and as many completed-but-unreaped frames both fit. FILL: as small as bind accepts.
    pub(crate) fn for_slots(slots: u32) -> Self {
        let tx = (1u32 << (31 - slots.max(1).leading_zeros())).min(2048);
        Self {
            tx,
            completion: tx * 2,
            fill: tx.min(64),
        }
    }
}

/// A socket with its rings, not necessarily bound yet. Fields drop in order: rings are unmapped
/// before the socket closes.
#[derive(Debug)]
pub(crate) struct XskSocket {
    pub(crate) tx: TxRing,
    pub(crate) completion: CompletionRing,
    /// The TX budget per kick the kernel accepted (`XDP_MAX_TX_SKB_BUDGET`), if it did.
    pub(crate) budget: Option<u32>,
    pub(crate) fd: OwnedFd,
}

/// Which step of the setup failed, with its errno.
#[derive(Debug)]
pub(crate) struct SetupError {
    pub(crate) step: &'static str,
    pub(crate) source: io::Error,
}

fn step<T>(step: &'static str, r: io::Result<T>) -> Result<T, SetupError> {
    r.map_err(|source| SetupError { step, source })
}

impl XskSocket {
    pub(crate) fn new(umem: &Umem, sizes: RingSizes, budget: u32) -> Result<Self, SetupError> {
        let fd = step("socket(AF_XDP)", sys::xdp_socket())?;
        step(
            "XDP_UMEM_REG",
            sys::set_xdp_opt(&fd, libc::XDP_UMEM_REG, &umem.registration()),
        )?;
        step(
            "XDP_UMEM_FILL_RING",
            sys::set_xdp_opt(&fd, libc::XDP_UMEM_FILL_RING, &sizes.fill),
        )?;
        step(
            "XDP_UMEM_COMPLETION_RING",
            sys::set_xdp_opt(&fd, libc::XDP_UMEM_COMPLETION_RING, &sizes.completion),
        )?;
        step(
            "XDP_TX_RING",
            sys::set_xdp_opt(&fd, libc::XDP_TX_RING, &sizes.tx),
        )?;

        let zero = libc::xdp_ring_offset {
            producer: 0,
            consumer: 0,
            desc: 0,
            flags: 0,
        };
        let mut offsets = libc::xdp_mmap_offsets {
            rx: zero,
            tx: zero,
            fr: zero,
            cr: zero,
        };
        let len = step(
            "XDP_MMAP_OFFSETS",
            sys::get_xdp_opt(&fd, libc::XDP_MMAP_OFFSETS, &mut offsets),
        )?;
        if len != size_of::<libc::xdp_mmap_offsets>() {
            // Kernels before 5.4 answer without the `flags` offsets, so without need_wakeup.
            return Err(SetupError {
                step: "XDP_MMAP_OFFSETS",
                source: io::Error::other("kernel too old: AF_XDP rings have no flags (needs 5.4+)"),
            });
        }
        let tx = step("mmap TX ring", TxRing::map(&fd, &offsets.tx, sizes.tx))?;
        let completion = step(
            "mmap COMPLETION ring",
            CompletionRing::map(&fd, &offsets.cr, sizes.completion),
        )?;

        // XDP_MAX_TX_SKB_BUDGET (6.17+): frames one copy-mode kick may send, 32 by default. The
        // kernel accepts 32 ≤ budget ≤ TX ring size and answers ENOPROTOOPT before 6.17 and
        // EACCES out of range; either way the default stays, which is only slower.
        let budget = (sizes.tx >= 32)
            .then(|| budget.clamp(32, sizes.tx))
            .filter(|b| sys::set_xdp_opt(&fd, sys::XDP_MAX_TX_SKB_BUDGET, b).is_ok());

        Ok(Self {
            tx,
            completion,
            budget,
            fd,
        })
    }

    pub(crate) fn bind(&self, ifindex: u32, queue_id: u32, flags: u16) -> io::Result<()> {
        sys::bind_xdp(&self.fd, ifindex, queue_id, flags)
    }

    /// True when the kernel reports the socket bound in zero-copy mode (`XDP_OPTIONS`).
    pub(crate) fn zero_copy(&self) -> io::Result<bool> {
        let mut options = libc::xdp_options { flags: 0 };
        sys::get_xdp_opt(&self.fd, libc::XDP_OPTIONS, &mut options)?;
        Ok(options.flags & libc::XDP_OPTIONS_ZEROCOPY != 0)
    }

    /// The kernel's per-socket counters (`XDP_STATISTICS`).
    pub(crate) fn statistics(&self) -> io::Result<libc::xdp_statistics> {
        let mut stats = libc::xdp_statistics {
            rx_dropped: 0,
            rx_invalid_descs: 0,
            tx_invalid_descs: 0,
            rx_ring_full: 0,
            rx_fill_ring_empty_descs: 0,
            tx_ring_empty_descs: 0,
        };
        sys::get_xdp_opt(&self.fd, libc::XDP_STATISTICS, &mut stats)?;
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::RingSizes;

    #[test]
    fn ring_sizes_are_powers_of_two_within_slots() {
        for (slots, tx) in [
            (1, 1),
            (2, 2),
            (3, 2),
            (64, 64),
            (100, 64),
            (4096, 2048),
            (5000, 2048),
        ] {
            let s = RingSizes::for_slots(slots);
            assert_eq!(s.tx, tx, "slots {slots}");
            assert!(s.completion.is_power_of_two() && s.completion >= s.tx);
            assert!(s.fill.is_power_of_two());
        }
    }
}
