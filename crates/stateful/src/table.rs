//! An end's connections, in shards: smoltcp walks every socket of a set on each poll (a frame's
//! socket is found by a linear scan, every socket is asked whether it has something to send),
//! so one set of a million sockets costs a millisecond a frame and a core to sit idle. Here the
//! slots are cut into shards of [`SHARD`] sockets, each its own `SocketSet`; a frame goes to
//! its connection's shard by one map lookup on the endpoint that names it, and a wake visits
//! only the shards a frame came for, the caller touched, or whose deadline fell (a heap of each
//! shard's next instant: smoltcp's timers and the caller's). An idle connection costs nothing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use smoltcp::iface::{Interface, PollIngressSingleResult, PollResult, SocketHandle, SocketSet};
use smoltcp::socket::tcp::{self, State};
use smoltcp::time::Instant;
use smoltcp::wire::{
    ArpPacket, EthernetFrame, EthernetProtocol, IpAddress, IpEndpoint, IpProtocol, Ipv4Packet,
    TcpPacket,
};

use crate::stack::Link;

/// Sockets a shard holds: a visit walks them all a few times, so a few dozen keeps it cheap
/// while a million connections make 16,384 shards.
pub(crate) const SHARD: usize = 64;

/// Frames taken from the link before the shards they touched are visited.
const INGRESS_BATCH: usize = 256;

/// Which endpoint of a socket names its connection in the frames that arrive: a client's own
/// (the frames' destination), or a server's peer (their source: every connection shares the
/// server's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Client,
    Server,
}

/// No deadline.
const NEVER: i64 = i64::MAX;

/// An ARP frame from a neighbour not heard from for this long (µs) wakes every open shard: a
/// socket may wait for it. One heard more recently is in smoltcp's cache already (it keeps an
/// entry 60 s), and a socket that still waits retries by its own timer within a second.
const NEIGHBOUR_FRESH_US: i64 = 10_000_000;

pub(crate) struct Table<'a> {
    side: Side,
    shards: Vec<SocketSet<'a>>,
    /// By slot: its socket's handle in its shard (slot / SHARD).
    handles: Vec<SocketHandle>,
    /// The slot of each connection, by the endpoint that names it.
    slot_of: HashMap<u64, u32>,
    /// By slot: the key it is registered under.
    key_of: Vec<Option<u64>>,
    /// By shard: sockets listening (a server's SYN goes to a shard with one) and sockets with
    /// a connection (an ARP answer may unblock them).
    listening: Vec<u16>,
    open: Vec<u16>,
    /// Where a server looks first for a listening socket.
    listen_cursor: usize,
    /// By shard: its next deadline (µs), and the heap of them (stale entries skipped).
    due_at: Vec<i64>,
    timers: BinaryHeap<Reverse<(i64, u32)>>,
    touched: Vec<u32>,
    is_touched: Vec<bool>,
    /// When each neighbour's ARP frame was last seen (µs), by its IPv4 address.
    neighbours: HashMap<u32, i64>,
}

impl<'a> Table<'a> {
    pub(crate) fn new(side: Side, sockets: impl IntoIterator<Item = tcp::Socket<'a>>) -> Self {
        let mut shards: Vec<SocketSet<'a>> = Vec::new();
        let mut handles = Vec::new();
        for (i, socket) in sockets.into_iter().enumerate() {
            if i % SHARD == 0 {
                shards.push(SocketSet::new(Vec::with_capacity(SHARD)));
            }
            let shard = shards.last_mut().expect("a shard was made");
            handles.push(shard.add(socket));
        }
        let n = shards.len();
        let mut table = Table {
            side,
            shards,
            key_of: vec![None; handles.len()],
            handles,
            slot_of: HashMap::new(),
            listening: vec![0; n],
            open: vec![0; n],
            listen_cursor: 0,
            due_at: vec![NEVER; n],
            timers: BinaryHeap::new(),
            touched: Vec::new(),
            is_touched: vec![false; n],
            neighbours: HashMap::new(),
        };
        for s in 0..n {
            table.sync(s);
        }
        table
    }

    pub(crate) fn slots(&self) -> usize {
        self.handles.len()
    }

    pub(crate) fn socket(&mut self, slot: usize) -> &mut tcp::Socket<'a> {
        self.shards[slot / SHARD].get_mut::<tcp::Socket>(self.handles[slot])
    }

    /// The slot's shard is visited at the next [`Table::visit`] (the caller changed its socket).
    pub(crate) fn touch(&mut self, slot: usize) {
        self.touch_shard(slot / SHARD);
    }

    fn touch_shard(&mut self, s: usize) {
        if !self.is_touched[s] {
            self.is_touched[s] = true;
            self.touched.push(s as u32);
        }
    }

    /// Hands up to a batch of waiting frames each to its connection's shard; true when any came.
    pub(crate) fn ingress<L: Link>(
        &mut self,
        iface: &mut Interface,
        link: &mut L,
        now: Instant,
    ) -> bool {
        let mut any = false;
        let mut arp = false;
        for _ in 0..INGRESS_BATCH {
            let Some(frame) = link.peek() else { break };
            let (s, new_peer) = match demux(frame) {
                Demux::Tcp { dst, src, syn } => {
                    let key = match self.side {
                        Side::Client => dst,
                        Side::Server => src,
                    };
                    match self.slot_of.get(&key) {
                        Some(&slot) => (slot as usize / SHARD, false),
                        None if syn && self.side == Side::Server => (self.listening_shard(), true),
                        // No connection of ours: any shard answers it (smoltcp resets it).
                        None => (0, false),
                    }
                }
                Demux::Arp { sender } => {
                    let at = now.total_micros();
                    let last = self.neighbours.insert(sender, at);
                    arp |= last.is_none_or(|last| at - last > NEIGHBOUR_FRESH_US);
                    (0, false)
                }
                Demux::Other => (0, false),
            };
            if iface.poll_ingress_single(now, link, &mut self.shards[s])
                == PollIngressSingleResult::None
            {
                break;
            }
            any = true;
            self.touch_shard(s);
            if new_peer {
                // The next frame of this handshake must find the socket that took the SYN.
                self.sync(s);
            }
        }
        if arp {
            // A neighbour heard from anew: sockets that waited for its address may send now
            // (smoltcp holds them up to a second otherwise).
            for s in 0..self.shards.len() {
                if self.open[s] > 0 {
                    self.touch_shard(s);
                }
            }
        }
        any
    }

    /// Touches every shard whose deadline has come.
    pub(crate) fn expire(&mut self, now: Instant) {
        let now = now.total_micros();
        while let Some(&Reverse((at, s))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            if self.due_at[s as usize] == at {
                self.due_at[s as usize] = NEVER;
                self.touch_shard(s as usize);
            }
        }
    }

    /// The earliest deadline of any shard.
    pub(crate) fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, s))) = self.timers.peek() {
            if self.due_at[s as usize] == at {
                return Some(Instant::from_micros(at));
            }
            self.timers.pop();
        }
        None
    }

    /// Whether a shard waits to be visited.
    pub(crate) fn has_touched(&self) -> bool {
        !self.touched.is_empty()
    }

    /// Visits each touched shard: its timers and queued segments go out, `step` moves each of
    /// its slots on (and says when the slot next needs it, if no frame comes first), what the
    /// steps wrote goes out, and the steps see what that did (a socket done draining).
    pub(crate) fn visit<L: Link>(
        &mut self,
        iface: &mut Interface,
        link: &mut L,
        now: Instant,
        mut step: impl FnMut(usize, &mut tcp::Socket<'a>) -> Option<Instant>,
    ) {
        while let Some(s) = self.touched.pop() {
            let s = s as usize;
            self.is_touched[s] = false;
            let first = s * SHARD;
            let last = (first + SHARD).min(self.handles.len());
            egress(iface, link, now, &mut self.shards[s]);
            for slot in first..last {
                let socket = self.shards[s].get_mut::<tcp::Socket>(self.handles[slot]);
                step(slot, socket);
            }
            egress(iface, link, now, &mut self.shards[s]);
            let mut due = NEVER;
            for slot in first..last {
                let socket = self.shards[s].get_mut::<tcp::Socket>(self.handles[slot]);
                if let Some(at) = step(slot, socket) {
                    due = due.min(at.total_micros());
                }
            }
            if let Some(at) = iface.poll_at(now, &self.shards[s]) {
                due = due.min(at.total_micros());
            }
            self.sync(s);
            if due != NEVER && due != self.due_at[s] {
                self.due_at[s] = due;
                self.timers.push(Reverse((due, s as u32)));
            }
        }
    }

    /// Registers each socket of shard `s` under the endpoint its frames will carry, and counts
    /// the shard's listening and open sockets.
    fn sync(&mut self, s: usize) {
        let first = s * SHARD;
        let last = (first + SHARD).min(self.handles.len());
        let (mut listening, mut open) = (0, 0);
        for slot in first..last {
            let socket = self.shards[s].get::<tcp::Socket>(self.handles[slot]);
            match socket.state() {
                State::Listen => listening += 1,
                State::Closed => {}
                _ => open += 1,
            }
            let endpoint = match self.side {
                Side::Client => socket.local_endpoint(),
                Side::Server => socket.remote_endpoint(),
            };
            let key = endpoint.and_then(|e| key(&e));
            if key != self.key_of[slot] {
                if let Some(old) = self.key_of[slot].take()
                    && self.slot_of.get(&old) == Some(&(slot as u32))
                {
                    self.slot_of.remove(&old);
                }
                if let Some(new) = key {
                    self.slot_of.insert(new, slot as u32);
                }
                self.key_of[slot] = key;
            }
        }
        self.listening[s] = listening;
        self.open[s] = open;
    }

    /// A shard with a listening socket, round from the last one that had one.
    fn listening_shard(&mut self) -> usize {
        let n = self.shards.len();
        for k in 0..n {
            let s = (self.listen_cursor + k) % n;
            if self.listening[s] > 0 {
                self.listen_cursor = s;
                return s;
            }
        }
        // Every socket busy: smoltcp resets the SYN, as a full accept queue would drop it.
        self.listen_cursor
    }

    /// Every shard's sockets, for a last look (the run's end).
    pub(crate) fn touch_all(&mut self) {
        for s in 0..self.shards.len() {
            self.touch_shard(s);
        }
    }
}

fn egress<L: Link>(iface: &mut Interface, link: &mut L, now: Instant, sockets: &mut SocketSet<'_>) {
    while iface.poll_egress(now, link, sockets) == PollResult::SocketStateChanged {}
}

fn key(endpoint: &IpEndpoint) -> Option<u64> {
    match endpoint.addr {
        IpAddress::Ipv4(ip) => Some(u64::from(ip.to_bits()) << 16 | u64::from(endpoint.port)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

enum Demux {
    Tcp { dst: u64, src: u64, syn: bool },
    Arp { sender: u32 },
    Other,
}

/// What a frame is, as far as picking its shard needs.
fn demux(frame: &[u8]) -> Demux {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return Demux::Other;
    };
    match eth.ethertype() {
        EthernetProtocol::Arp => {
            return match ArpPacket::new_checked(eth.payload()) {
                Ok(arp) if arp.source_protocol_addr().len() == 4 => Demux::Arp {
                    sender: u32::from_be_bytes(
                        arp.source_protocol_addr().try_into().expect("four bytes"),
                    ),
                },
                _ => Demux::Other,
            };
        }
        EthernetProtocol::Ipv4 => {}
        _ => return Demux::Other,
    }
    let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else {
        return Demux::Other;
    };
    if ip.next_header() != IpProtocol::Tcp || ip.frag_offset() != 0 {
        return Demux::Other;
    }
    let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else {
        return Demux::Other;
    };
    let at =
        |addr: std::net::Ipv4Addr, port: u16| u64::from(addr.to_bits()) << 16 | u64::from(port);
    Demux::Tcp {
        dst: at(ip.dst_addr(), tcp.dst_port()),
        src: at(ip.src_addr(), tcp.src_port()),
        syn: tcp.syn() && !tcp.ack(),
    }
}
