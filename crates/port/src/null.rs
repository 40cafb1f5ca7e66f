use std::time::Duration;

use crate::{Port, PortError, PortInfo, QueueConfig, SlotMemory, TxDesc, TxQueue};

/// Counts and discards: measures the generator alone, with no I/O behind it.
#[derive(Debug)]
pub struct NullPort {
    info: PortInfo,
}

impl NullPort {
    pub fn new(queues: u32) -> Self {
        Self {
            info: PortInfo {
                name: "null".into(),
                mac: None,
                mtu: 1500,
                link_speed: None,
                queues,
                driver: None,
                backend: "null",
            },
        }
    }
}

impl Port for NullPort {
    fn info(&self) -> &PortInfo {
        &self.info
    }

    /// Frames complete the moment they are submitted: a few batches of slots are plenty.
    fn min_slots(&self) -> u32 {
        256
    }

    fn open_queue(&self, config: &QueueConfig) -> Result<Box<dyn TxQueue>, PortError> {
        Ok(Box::new(NullQueue::new(config)))
    }
}

/// A queue whose frames complete the moment they are submitted.
#[derive(Debug)]
pub struct NullQueue {
    memory: SlotMemory,
    completed: u32,
}

impl NullQueue {
    pub fn new(config: &QueueConfig) -> Self {
        Self {
            memory: SlotMemory::new(config.slots, config.slot_size),
            completed: 0,
        }
    }
}

impl TxQueue for NullQueue {
    fn slots(&self) -> u32 {
        self.memory.slots()
    }
    fn slot_size(&self) -> u32 {
        self.memory.slot_size()
    }
    #[inline]
    fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        self.memory.slot_mut(slot)
    }
    #[inline]
    fn reserve(&mut self, want: u32) -> u32 {
        want
    }
    #[inline]
    fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError> {
        self.completed += descs.len() as u32;
        Ok(())
    }
    #[inline]
    fn reap(&mut self) -> Result<u32, PortError> {
        Ok(std::mem::take(&mut self.completed))
    }
    fn drain(&mut self, _timeout: Duration) -> Result<u32, PortError> {
        self.reap()
    }
    fn mode(&self) -> String {
        "discard".into()
    }
}

impl NullPort {
    /// The MTU frames are checked against (the null port has no link of its own).
    pub fn set_mtu(&mut self, mtu: u32) {
        self.info.mtu = mtu;
    }
}
