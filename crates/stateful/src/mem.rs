//! Two links joined in memory, for tests of the ends without a port: what one sends the other
//! receives, in order, except every `drop_every`-th frame (a lossy link, to see TCP recover)
//! or the frames a test picks ([`pair_dropping`]).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use smoltcp::phy::{Device, DeviceCapabilities, Medium};

use crate::StatefulError;
use crate::stack::{Link, LinkCounters};

#[derive(Debug, Default)]
struct Queue {
    frames: Mutex<VecDeque<Vec<u8>>>,
    ready: Condvar,
}

/// Which frames an end's sends lose: true drops the frame.
pub type Dropper = Box<dyn FnMut(&[u8]) -> bool + Send>;

/// One end of a pair.
pub struct MemLink {
    inbox: Arc<Queue>,
    outbox: Arc<Queue>,
    drop_every: u64,
    dropper: Option<Dropper>,
    /// A frame taken off the queue by a peek, not yet handed up.
    held: Option<Vec<u8>>,
    counters: LinkCounters,
}

impl std::fmt::Debug for MemLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemLink")
            .field("drop_every", &self.drop_every)
            .field("dropper", &self.dropper.is_some())
            .field("counters", &self.counters)
            .finish()
    }
}

/// Two joined links; `drop_every` (0: none) drops that share of each end's sent frames.
pub fn pair(drop_every: u64) -> (MemLink, MemLink) {
    joined(drop_every, None, None)
}

/// Two joined links, each losing the frames its dropper picks.
pub fn pair_dropping(a: Dropper, b: Dropper) -> (MemLink, MemLink) {
    joined(0, Some(a), Some(b))
}

fn joined(drop_every: u64, a: Option<Dropper>, b: Option<Dropper>) -> (MemLink, MemLink) {
    let (qa, qb) = (Arc::new(Queue::default()), Arc::new(Queue::default()));
    let end = |inbox: &Arc<Queue>, outbox: &Arc<Queue>, dropper| MemLink {
        inbox: inbox.clone(),
        outbox: outbox.clone(),
        drop_every,
        dropper,
        held: None,
        counters: LinkCounters::default(),
    };
    (end(&qa, &qb, a), end(&qb, &qa, b))
}

#[derive(Debug)]
pub struct Rx(Vec<u8>);

#[derive(Debug)]
pub struct Tx<'a>(&'a mut MemLink);

impl smoltcp::phy::RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl smoltcp::phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        let link = self.0;
        link.counters.tx_frames += 1;
        let picked = link.dropper.as_mut().is_some_and(|d| d(&frame));
        if picked || link.drop_every > 0 && link.counters.tx_frames.is_multiple_of(link.drop_every)
        {
            link.counters.tx_dropped += 1;
        } else {
            link.outbox.frames.lock().expect("queue").push_back(frame);
            link.outbox.ready.notify_one();
        }
        r
    }
}

impl Device for MemLink {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _: smoltcp::time::Instant) -> Option<(Rx, Tx<'_>)> {
        let frame = match self.held.take() {
            Some(frame) => frame,
            None => self.inbox.frames.lock().expect("queue").pop_front()?,
        };
        self.counters.rx_frames += 1;
        Some((Rx(frame), Tx(self)))
    }

    fn transmit(&mut self, _: smoltcp::time::Instant) -> Option<Tx<'_>> {
        Some(Tx(self))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = 1514;
        caps
    }
}

impl Link for MemLink {
    fn wait(&mut self, timeout: Duration) -> Result<(), StatefulError> {
        let frames = self.inbox.frames.lock().expect("queue");
        if frames.is_empty() && self.held.is_none() {
            let _ = self
                .inbox
                .ready
                .wait_timeout(frames, timeout)
                .expect("queue");
        }
        Ok(())
    }

    fn peek(&mut self) -> Option<&[u8]> {
        if self.held.is_none() {
            self.held = self.inbox.frames.lock().expect("queue").pop_front();
        }
        self.held.as_deref()
    }

    fn counters(&self) -> LinkCounters {
        self.counters
    }
}
