//! An end's connections, in shards: smoltcp walks every socket of a set on each poll (a frame's
//! socket is found by a linear scan, every socket is asked whether it has something to send),
//! so one set of a million sockets costs a millisecond a frame and a core to sit idle. Here the
//! slots are cut into shards of [`SHARD`] sockets, each its own `SocketSet`; a frame goes to
//! its connection's shard by one map lookup on the endpoint that names it, and a wake visits
//! only the shards a frame came for, the caller touched, or whose deadline fell (a heap of each
//! shard's next instant: smoltcp's timers and the caller's). An idle connection costs nothing.
//!
//! The table also watches the segments that cross the link, since smoltcp keeps its
//! retransmissions and round-trip estimate to itself: a segment that starts before the
//! highest sequence number its connection has sent is a retransmission, and one new segment
//! at a time is timed until an acknowledgement covers it (Karn's rule: not across a
//! retransmission), as a BSD stack times its round trips.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use smoltcp::iface::{Interface, PollIngressSingleResult, PollResult, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, RxToken, TxToken};
use smoltcp::socket::tcp::{self, State};
use smoltcp::time::Instant;
use smoltcp::wire::{
    ArpPacket, EthernetFrame, EthernetProtocol, IpAddress, IpEndpoint, IpProtocol, Ipv4Packet,
    Ipv6Packet, TcpPacket,
};

use crate::Addresses;
use crate::counters::{Percentiles, Times};
use crate::stack::{self, Link};

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
    /// The slot of each connection, by the endpoint that names it (a lookup a frame: foldhash,
    /// not SipHash, for an 18-byte key).
    slot_of: HashMap<Key, u32, foldhash::fast::RandomState>,
    /// By slot: the key it is registered under.
    key_of: Vec<Option<Key>>,
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
    /// When each neighbour's ARP or neighbour discovery frame was last seen (µs), by its
    /// address.
    neighbours: HashMap<u128, i64>,
    /// The end's own addresses: a neighbour solicitation for one of them is answered here.
    addresses: Addresses,
    /// By slot: what its connection has sent.
    sent: Vec<Sent>,
    /// Segments the link took since they were last accounted to their slots.
    out: Vec<Segment>,
    retransmitted: u64,
    rtt: Times,
}

/// What one connection has sent, as far as telling a retransmission and timing a round trip
/// need.
#[derive(Debug, Clone, Copy, Default)]
struct Sent {
    /// Whether the connection has sent anything yet.
    begun: bool,
    /// The sequence number after the highest it has sent.
    high: u32,
    /// A segment being timed: the sequence number after it, and when it left (µs).
    timed: Option<(u32, i64)>,
}

/// A segment that occupies sequence space (data, SYN or FIN), as it left.
#[derive(Debug, Clone, Copy)]
struct Segment {
    key: Key,
    seq: u32,
    len: u32,
    at: i64,
}

/// Whether sequence number `a` comes before `b` (RFC 793's arithmetic modulo 2^32).
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl<'a> Table<'a> {
    pub(crate) fn new(
        side: Side,
        addresses: Addresses,
        sockets: impl IntoIterator<Item = tcp::Socket<'a>>,
    ) -> Self {
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
        let slots = handles.len();
        let mut table = Table {
            side,
            shards,
            key_of: vec![None; slots],
            handles,
            slot_of: HashMap::default(),
            listening: vec![0; n],
            open: vec![0; n],
            listen_cursor: 0,
            due_at: vec![NEVER; n],
            timers: BinaryHeap::new(),
            touched: Vec::new(),
            is_touched: vec![false; n],
            neighbours: HashMap::new(),
            addresses,
            sent: vec![Sent::default(); slots],
            out: Vec::new(),
            retransmitted: 0,
            rtt: Times::default(),
        };
        for s in 0..n {
            table.sync(s);
        }
        table
    }

    pub(crate) fn slots(&self) -> usize {
        self.handles.len()
    }

    /// Segments sent again so far, every connection's.
    pub(crate) fn retransmitted(&self) -> u64 {
        self.retransmitted
    }

    /// Round trips timed so far: a segment's leaving to the first acknowledgement covering it
    /// (the peer's delayed acknowledgement included, as TCP's own estimate sees it).
    pub(crate) fn rtt(&self) -> Percentiles {
        self.rtt.percentiles()
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
            let demuxed = demux(frame);
            let syn_up = matches!(demuxed, Demux::Tcp { syn: true, .. });
            let (s, new_peer) = match demuxed {
                Demux::Tcp { dst, src, syn, ack } => {
                    let key = match self.side {
                        Side::Client => dst,
                        Side::Server => src,
                    };
                    match self.slot_of.get(&key) {
                        Some(&slot) if syn && self.owns_syn(slot as usize) => {
                            // A SYN again (the peer lost our SYN-ACK) or late. Its own socket
                            // ignores it, but smoltcp hands a frame to the first socket of the
                            // shard that accepts it, and a listener before the slot would
                            // open a second connection on the same addresses, whose reset
                            // then ends the first: the socket's own retransmission answers.
                            let _ = link.receive(now);
                            continue;
                        }
                        Some(&slot) => {
                            if let Some(ack) = ack {
                                self.acknowledged(slot as usize, ack, now);
                            }
                            (slot as usize / SHARD, false)
                        }
                        None if syn && self.side == Side::Server => (self.listening_shard(), true),
                        // No connection of ours: any shard answers it (smoltcp resets it).
                        None => (0, false),
                    }
                }
                Demux::Neighbour { sender, solicits } => {
                    let at = now.total_micros();
                    let last = self.neighbours.insert(sender, at);
                    arp |= last.is_none_or(|last| at - last > NEIGHBOUR_FRESH_US);
                    if let Some(asked) = solicits
                        && self.addresses.range.contains(asked.target.into())
                    {
                        // smoltcp answers for the addresses it holds (the range's first);
                        // the range's others are this end's to answer, as ARP's are by
                        // any-IP. smoltcp still sees the frame and learns the sender.
                        stack::advertise(&mut *link, self.addresses.mac, &asked, now);
                    }
                    (0, false)
                }
                Demux::Other => (0, false),
            };
            let mut watched = Watched {
                link: &mut *link,
                side: self.side,
                out: &mut self.out,
                at: now.total_micros(),
                syn_up,
            };
            if iface.poll_ingress_single(now, &mut watched, &mut self.shards[s])
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
        // An answer smoltcp sent at once (a reset, an acknowledgement) occupies no sequence
        // space; anything else is accounted to its slot here.
        self.account();
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
            let mut watched = Watched {
                link: &mut *link,
                side: self.side,
                out: &mut self.out,
                at: now.total_micros(),
                syn_up: false,
            };
            egress(iface, &mut watched, now, &mut self.shards[s]);
            for slot in first..last {
                let socket = self.shards[s].get_mut::<tcp::Socket>(self.handles[slot]);
                step(slot, socket);
            }
            egress(iface, &mut watched, now, &mut self.shards[s]);
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
            // After the sync: a connection's first segment (a client's SYN, a server's
            // SYN-ACK) finds the slot under its new key.
            self.account();
            if due != NEVER && due != self.due_at[s] {
                self.due_at[s] = due;
                self.timers.push(Reverse((due, s as u32)));
            }
        }
        // What ingress answered and the shards sent leaves now, in one batch.
        link.flush();
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
            let key = endpoint.map(|e| key(&e));
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
                // Another connection in the slot: its sequence space starts afresh.
                self.sent[slot] = Sent::default();
            }
        }
        self.listening[s] = listening;
        self.open[s] = open;
    }

    /// Accounts the segments sent since the last call to their connections: retransmissions
    /// counted, a new segment timed when none is.
    fn account(&mut self) {
        for seg in self.out.drain(..) {
            let Some(&slot) = self.slot_of.get(&seg.key) else {
                continue;
            };
            let sent = &mut self.sent[slot as usize];
            let end = seg.seq.wrapping_add(seg.len);
            if !sent.begun {
                *sent = Sent {
                    begun: true,
                    high: end,
                    timed: Some((end, seg.at)),
                };
                continue;
            }
            let again = before(seg.seq, sent.high);
            if again {
                self.retransmitted += 1;
                sent.timed = None;
            }
            if before(sent.high, end) {
                sent.high = end;
                if !again && sent.timed.is_none() {
                    sent.timed = Some((end, seg.at));
                }
            }
        }
    }

    /// An acknowledgement for `slot`'s connection arrived: the timed segment, if it covers it,
    /// is a round trip.
    fn acknowledged(&mut self, slot: usize, ack: u32, now: Instant) {
        let sent = &mut self.sent[slot];
        if let Some((end, at)) = sent.timed
            && !before(ack, end)
        {
            self.rtt.record((now.total_micros() - at).max(0) as u64);
            sent.timed = None;
        }
    }

    /// Whether `slot`'s connection is the one a SYN for it belongs to: a server's, from the
    /// SYN that opened it until TIME-WAIT (where a new connection of the same addresses may
    /// begin, as RFC 6191 lets it).
    fn owns_syn(&self, slot: usize) -> bool {
        self.side == Side::Server
            && !matches!(
                self.shards[slot / SHARD]
                    .get::<tcp::Socket>(self.handles[slot])
                    .state(),
                State::Listen | State::Closed | State::TimeWait
            )
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

fn egress<D: Device>(
    iface: &mut Interface,
    link: &mut D,
    now: Instant,
    sockets: &mut SocketSet<'_>,
) {
    while iface.poll_egress(now, link, sockets) == PollResult::SocketStateChanged {}
}

/// The link as smoltcp sees it while the table watches: every frame it sends passes through
/// [`outgoing`] on its way.
struct Watched<'w, L> {
    link: &'w mut L,
    side: Side,
    out: &'w mut Vec<Segment>,
    /// The instant of this poll (µs): the segments' departure.
    at: i64,
    /// Whether the frame handed up is a SYN (demux read it): only then is its MSS looked at.
    syn_up: bool,
}

struct WatchedTx<'w, T> {
    inner: T,
    side: Side,
    out: &'w mut Vec<Segment>,
    at: i64,
}

/// A frame handed up, a SYN's MSS lowered for timestamps on the way ([`clamped_syn`]); the
/// flag says it is a SYN, so that no other frame is parsed again.
struct WatchedRx<T>(T, bool);

impl<T: RxToken> RxToken for WatchedRx<T> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        if !self.1 {
            return self.0.consume(f);
        }
        self.0.consume(|frame| match clamped_syn(frame) {
            Some((copy, len)) => f(&copy[..len]),
            None => f(frame),
        })
    }
}

/// The longest SYN whose MSS [`clamped_syn`] lowers: headers and options, no data.
const SYN_COPY: usize = 14 + 60 + 60;

/// The bytes of the timestamps option (RFC 7323) in a segment: 10, and 2 of padding.
const TIMESTAMPS_LEN: u16 = 12;

/// A copy of `frame` whose MSS option is lowered by the timestamps option's 12 bytes, when the
/// frame is a SYN (or SYN-ACK) carrying both, its checksum mended (RFC 1624); None for any
/// other. smoltcp 0.13 sizes a segment by the peer's MSS and the MTU as if it sent no options,
/// so a full segment with timestamps came out 12 bytes over the MTU and was dropped before it
/// left. The peer's MSS lowered by them (what a router's MSS clamping does) keeps each segment
/// whole, as Linux's 1,448 bytes beside timestamps do.
fn clamped_syn(frame: &[u8]) -> Option<([u8; SYN_COPY], usize)> {
    let (_, _, tcp) = tcp_of(frame)?;
    if frame.len() > SYN_COPY || tcp.len() < 20 || tcp[13] & 0x02 == 0 {
        return None;
    }
    let options = tcp.get(20..usize::from(tcp[12] >> 4) * 4)?;
    let (mut mss_at, mut stamped, mut i) = (None, false, 0);
    while i < options.len() {
        match options[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let len = usize::from(*options.get(i + 1)?);
                match (kind, len) {
                    (_, 0 | 1) => return None,
                    (2, 4) => mss_at = Some(20 + i + 2),
                    (8, 10) => stamped = true,
                    _ => {}
                }
                i += len;
            }
        }
    }
    let at = mss_at.filter(|_| stamped)?;
    let old = u16::from_be_bytes([*tcp.get(at)?, *tcp.get(at + 1)?]);
    let new = old.checked_sub(TIMESTAMPS_LEN).filter(|&m| m > 0)?;
    let base = tcp.as_ptr() as usize - frame.as_ptr() as usize;
    let mut copy = [0; SYN_COPY];
    copy[..frame.len()].copy_from_slice(frame);
    copy[base + at..base + at + 2].copy_from_slice(&new.to_be_bytes());
    let sum = base + 16;
    let checksum = u16::from_be_bytes([copy[sum], copy[sum + 1]]);
    let mut folded = u32::from(!checksum) + u32::from(!old) + u32::from(new);
    folded = (folded & 0xffff) + (folded >> 16);
    folded = (folded & 0xffff) + (folded >> 16);
    copy[sum..sum + 2].copy_from_slice(&(!(folded as u16)).to_be_bytes());
    Some((copy, frame.len()))
}

impl<'w, L: Device> Device for Watched<'w, L> {
    type RxToken<'a>
        = WatchedRx<L::RxToken<'a>>
    where
        Self: 'a;
    type TxToken<'a>
        = WatchedTx<'a, L::TxToken<'a>>
    where
        Self: 'a;

    fn receive(&mut self, now: Instant) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let (rx, tx) = self.link.receive(now)?;
        Some((
            WatchedRx(rx, self.syn_up),
            WatchedTx {
                inner: tx,
                side: self.side,
                out: &mut *self.out,
                at: self.at,
            },
        ))
    }

    fn transmit(&mut self, now: Instant) -> Option<Self::TxToken<'_>> {
        Some(WatchedTx {
            inner: self.link.transmit(now)?,
            side: self.side,
            out: &mut *self.out,
            at: self.at,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        self.link.capabilities()
    }
}

impl<T: TxToken> TxToken for WatchedTx<'_, T> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let (side, out, at) = (self.side, self.out, self.at);
        self.inner.consume(len, |buf| {
            let r = f(buf);
            if let Some(seg) = outgoing(buf, side, at) {
                out.push(seg);
            }
            r
        })
    }
}

/// A frame the end sends, if it is a TCP segment that occupies sequence space, keyed by the
/// endpoint that names its connection (a client's own, a server's peer).
fn outgoing(frame: &[u8], side: Side, at: i64) -> Option<Segment> {
    let (src, dst, tcp) = tcp_of(frame)?;
    let tcp = TcpPacket::new_checked(tcp).ok()?;
    let len = tcp.payload().len() as u32 + u32::from(tcp.syn()) + u32::from(tcp.fin());
    if len == 0 {
        return None;
    }
    let key = match side {
        Side::Client => (src, tcp.src_port()),
        Side::Server => (dst, tcp.dst_port()),
    };
    Some(Segment {
        key,
        seq: tcp.seq_number().0 as u32,
        len,
        at,
    })
}

/// A connection's name in the table: an address (either family's bits) and a port.
type Key = (u128, u16);

/// An IPv4 or IPv6 frame's addresses and its TCP segment (an IPv4 fragment after the first,
/// or IPv6 with an extension header before TCP, is not one).
fn tcp_of(frame: &[u8]) -> Option<(u128, u128, &[u8])> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    match eth.ethertype() {
        EthernetProtocol::Ipv4 => {
            let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
            if ip.next_header() != IpProtocol::Tcp || ip.frag_offset() != 0 {
                return None;
            }
            let at = ip.header_len() as usize + 14;
            let end = 14 + usize::from(ip.total_len());
            Some((
                u128::from(ip.src_addr().to_bits()),
                u128::from(ip.dst_addr().to_bits()),
                frame.get(at..end)?,
            ))
        }
        EthernetProtocol::Ipv6 => {
            let ip = Ipv6Packet::new_checked(eth.payload()).ok()?;
            if ip.next_header() != IpProtocol::Tcp {
                return None;
            }
            let end = 14 + 40 + usize::from(ip.payload_len());
            Some((
                ip.src_addr().to_bits(),
                ip.dst_addr().to_bits(),
                frame.get(14 + 40..end)?,
            ))
        }
        _ => None,
    }
}

fn key(endpoint: &IpEndpoint) -> Key {
    let addr = match endpoint.addr {
        IpAddress::Ipv4(ip) => u128::from(ip.to_bits()),
        IpAddress::Ipv6(ip) => ip.to_bits(),
    };
    (addr, endpoint.port)
}

enum Demux {
    Tcp {
        dst: Key,
        src: Key,
        syn: bool,
        /// The acknowledgement number, when the ACK flag is set.
        ack: Option<u32>,
    },
    /// ARP, or IPv6 neighbour discovery (a solicitation's target, when it is one).
    Neighbour {
        sender: u128,
        solicits: Option<stack::Solicitation>,
    },
    Other,
}

/// What a frame is, as far as picking its shard needs.
fn demux(frame: &[u8]) -> Demux {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return Demux::Other;
    };
    if eth.ethertype() == EthernetProtocol::Arp {
        return match ArpPacket::new_checked(eth.payload()) {
            Ok(arp) if arp.source_protocol_addr().len() == 4 => Demux::Neighbour {
                sender: u128::from(u32::from_be_bytes(
                    arp.source_protocol_addr().try_into().expect("four bytes"),
                )),
                solicits: None,
            },
            _ => Demux::Other,
        };
    }
    if let Some((sender, solicits)) = stack::neighbour_discovery(frame) {
        return Demux::Neighbour { sender, solicits };
    }
    let Some((src, dst, tcp)) = tcp_of(frame) else {
        return Demux::Other;
    };
    let Ok(tcp) = TcpPacket::new_checked(tcp) else {
        return Demux::Other;
    };
    Demux::Tcp {
        dst: (dst, tcp.dst_port()),
        src: (src, tcp.src_port()),
        syn: tcp.syn() && !tcp.ack(),
        ack: tcp.ack().then(|| tcp.ack_number().0 as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{PacketBuilder, SlicedPacket, TcpOptionElement, TransportSlice};

    /// A SYN (or SYN-ACK with `ack`) with these options, over IPv4 or IPv6.
    fn syn(v6: bool, ack: bool, options: &[TcpOptionElement]) -> Vec<u8> {
        let eth = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let ip = if v6 {
            eth.ipv6(
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                64,
            )
        } else {
            eth.ipv4([10, 0, 0, 2], [10, 0, 0, 1], 64)
        };
        let mut b = ip.tcp(40000, 80, 7, 65535).syn();
        if ack {
            b = b.ack(9);
        }
        let b = b.options(options).unwrap();
        let mut out = Vec::new();
        b.write(&mut out, &[]).unwrap();
        out
    }

    /// The MSS etherparse reads, and whether the TCP checksum it computes is the frame's.
    fn read(frame: &[u8]) -> (Option<u16>, bool) {
        let p = SlicedPacket::from_ethernet(frame).unwrap();
        let Some(TransportSlice::Tcp(tcp)) = p.transport else {
            panic!("not TCP")
        };
        let mss = tcp.options_iterator().find_map(|o| match o {
            Ok(TcpOptionElement::MaximumSegmentSize(m)) => Some(m),
            _ => None,
        });
        let sum = match p.net.unwrap() {
            etherparse::NetSlice::Ipv4(ip) => {
                tcp.calc_checksum_ipv4(ip.header().source(), ip.header().destination())
            }
            etherparse::NetSlice::Ipv6(ip) => {
                tcp.calc_checksum_ipv6(ip.header().source(), ip.header().destination())
            }
            _ => panic!("not IP"),
        };
        (mss, sum.unwrap() == tcp.checksum())
    }

    #[test]
    fn a_syn_with_timestamps_has_its_mss_lowered_by_their_twelve_bytes() {
        let stamped = [
            TcpOptionElement::MaximumSegmentSize(1460),
            TcpOptionElement::SelectiveAcknowledgementPermitted,
            TcpOptionElement::Timestamp(57_064_508, 0),
            TcpOptionElement::Noop,
            TcpOptionElement::WindowScale(7),
        ];
        for (v6, ack) in [(false, false), (false, true), (true, false), (true, true)] {
            let frame = syn(v6, ack, &stamped);
            assert_eq!(read(&frame), (Some(1460), true));
            let (copy, len) = clamped_syn(&frame).expect("clamped");
            assert_eq!(len, frame.len());
            assert_eq!(read(&copy[..len]), (Some(1448), true), "v6 {v6} ack {ack}");
            // Nothing else moved.
            let moved = (0..len).filter(|&i| copy[i] != frame[i]).count();
            assert!(moved <= 4, "{moved} bytes changed");
        }
        // No timestamps, no MSS, or no SYN: left as it is.
        let plain = syn(false, false, &[TcpOptionElement::MaximumSegmentSize(1460)]);
        assert!(clamped_syn(&plain).is_none());
        let no_mss = syn(false, false, &[TcpOptionElement::Timestamp(1, 0)]);
        assert!(clamped_syn(&no_mss).is_none());
        let mut not_syn = syn(false, true, &stamped);
        let flags = 14 + 20 + 13;
        not_syn[flags] &= !0x02;
        assert!(clamped_syn(&not_syn).is_none());
        // A length-0 option would loop: not read.
        let mut broken = syn(false, false, &stamped);
        broken[14 + 20 + 20 + 1] = 0;
        assert!(clamped_syn(&broken).is_none());
    }
}
