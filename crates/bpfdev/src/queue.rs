use std::time::Duration;

use linerate_port::{PortError, QueueConfig, QueueStats, SlotMemory, TxDesc, TxQueue};

use crate::transmit::{BpfDevice, Writer};

/// One worker's transmit queue: its own bpf descriptor and its own slots. `/dev/bpf` has no
/// hardware queues; every worker opens a descriptor of its own and the kernel serialises them
/// onto the interface. Writes are synchronous, so a frame is complete once `submit` returns.
#[derive(Debug)]
pub struct BpfQueue<D> {
    memory: SlotMemory,
    writer: Writer<D>,
    batch: u32,
    completed: u32,
}

impl<D: BpfDevice> BpfQueue<D> {
    pub fn new(config: &QueueConfig, mut writer: Writer<D>) -> Self {
        let batch = config.batch.max(1);
        writer.reserve(batch as usize, config.slot_size as usize);
        Self {
            memory: SlotMemory::new(config.slots, config.slot_size),
            writer,
            batch,
            completed: 0,
        }
    }

    pub fn writer(&self) -> &Writer<D> {
        &self.writer
    }
}

impl<D: BpfDevice + Send> TxQueue for BpfQueue<D> {
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
        want.min(self.batch)
    }
    fn submit(&mut self, descs: &[TxDesc]) -> Result<(), PortError> {
        for desc in descs {
            self.memory.try_frame(*desc)?;
        }
        self.writer.send(&self.memory, descs)?;
        self.completed += descs.len() as u32;
        Ok(())
    }
    #[inline]
    fn reap(&mut self) -> Result<u32, PortError> {
        Ok(std::mem::take(&mut self.completed))
    }
    fn drain(&mut self, _timeout: Duration) -> Result<u32, PortError> {
        // Nothing is ever pending: every frame was written before `submit` returned.
        self.reap()
    }
    fn stats(&self) -> QueueStats {
        let s = self.writer.stats();
        QueueStats {
            extra: vec![
                ("bpf_writes", s.writes),
                ("bpf_enobufs_retries", s.enobufs_retries),
                ("bpf_batch_fallbacks", s.batch_fallbacks),
            ],
        }
    }
    fn mode(&self) -> String {
        self.writer.mode().describe().into()
    }
}
