//! Fault injection for tests of the runners: any port whose one queue panics, or fails as an
//! interface that went down, at a chosen submit. The engine's tests wrap the null port, the
//! root tests an AF_XDP port; both need the same wrapper, so it lives beside the traits.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::{Port, PortError, PortInfo, QueueConfig, QueueStats, TxDesc, TxQueue};

/// The message of an injected panic, which [`quiet_injected_panics`] recognises.
pub const INJECTED: &str = "injected fault";

/// What the faulty queue does when its turn comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Panics with [`INJECTED`].
    Panic,
    /// Returns [`PortError::InterfaceDown`], as a queue whose interface vanished.
    InterfaceDown,
}

/// `inner` with its queue `queue` struck by `fault` at submit number `after` + 1.
#[derive(Debug)]
pub struct FaultyPort<P> {
    pub inner: P,
    pub queue: u32,
    pub after: u32,
    pub fault: Fault,
    /// When the fault struck.
    pub at: Arc<OnceLock<Instant>>,
}

impl<P: Port> FaultyPort<P> {
    pub fn new(inner: P, queue: u32, after: u32, fault: Fault) -> Self {
        FaultyPort {
            inner,
            queue,
            after,
            fault,
            at: Arc::default(),
        }
    }
}

impl<P: Port> Port for FaultyPort<P> {
    fn info(&self) -> &PortInfo {
        self.inner.info()
    }
    fn min_slots(&self) -> u32 {
        self.inner.min_slots()
    }
    fn open_queue(&self, config: &QueueConfig) -> Result<Box<dyn TxQueue>, PortError> {
        Ok(Box::new(FaultyQueue {
            inner: self.inner.open_queue(config)?,
            left: (config.queue_id == self.queue).then_some(self.after),
            fault: self.fault,
            iface: self.inner.info().name.clone(),
            at: self.at.clone(),
        }))
    }
}

struct FaultyQueue {
    inner: Box<dyn TxQueue>,
    left: Option<u32>,
    fault: Fault,
    iface: String,
    at: Arc<OnceLock<Instant>>,
}

impl TxQueue for FaultyQueue {
    fn slots(&self) -> u32 {
        self.inner.slots()
    }
    fn slot_size(&self) -> u32 {
        self.inner.slot_size()
    }
    fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        self.inner.slot_mut(slot)
    }
    fn reserve(&mut self, want: u32) -> u32 {
        self.inner.reserve(want)
    }
    fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError> {
        match &mut self.left {
            Some(0) => {
                self.at.get_or_init(Instant::now);
                match self.fault {
                    Fault::Panic => panic!("{INJECTED}"),
                    Fault::InterfaceDown => {
                        return Err(PortError::InterfaceDown {
                            iface: self.iface.clone(),
                        });
                    }
                }
            }
            Some(n) => *n -= 1,
            None => {}
        }
        self.inner.submit(descs)
    }
    fn reap(&mut self) -> Result<u32, PortError> {
        self.inner.reap()
    }
    fn drain(&mut self, timeout: Duration) -> Result<u32, PortError> {
        self.inner.drain(timeout)
    }
    fn stats(&self) -> QueueStats {
        self.inner.stats()
    }
    fn mode(&self) -> String {
        self.inner.mode()
    }
}

/// Prints an injected panic's message without the default hook's backtrace, which alone can
/// take over a second to resolve on a loaded machine (RUST_BACKTRACE); other panics print as
/// usual. Idempotent.
pub fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied());
            if message == Some(INJECTED) {
                eprintln!("{INJECTED} at {:?}", info.location());
            } else {
                previous(info);
            }
        }));
    });
}
