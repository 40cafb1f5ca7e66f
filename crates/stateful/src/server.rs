//! The server: a table of listening sockets on one port, each serving `GET /<bytes>` with a
//! body in the pattern clients check, keep-alive or closing as the request asks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use smoltcp::socket::tcp::{self, State};

use crate::counters::ServerCounters;
use crate::http::{self, MAX_HEAD};
use crate::recording::{Check, Replay};
use crate::stack::{self, Clock, Link, LinkCounters};
use crate::table::{Side, Table};
use crate::{Addresses, StatefulError};

/// Each connection's receive buffer: requests are one line of headers.
const RX_BUFFER: usize = 4096;

/// What a server run does.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The server's MAC, its one address (a /32 range), the on-link network and a gateway.
    pub addresses: Addresses,
    pub port: u16,
    /// Body bytes for `GET /` (a path `/<bytes>` asks for its own).
    pub default_bytes: u64,
    /// The largest body served.
    pub max_bytes: u64,
    /// Connections served at once (listening sockets; one that closed first holds its slot
    /// through TIME-WAIT, 10 s in smoltcp).
    pub concurrent: usize,
    /// Each connection's send buffer: what a response may have in flight (the peer's window
    /// and this bound the goodput), and most of a slot's memory.
    pub send_buffer: usize,
    /// A connection that makes no progress this long is ended.
    pub timeout: Duration,
    /// How long a connection the server closed first stays in TIME-WAIT (holding its slot)
    /// before the slot is taken back; smoltcp's own is 10 s, and a longer one is that. Taken
    /// back sooner, the connection is forgotten without a segment, as a kernel forgets one.
    pub time_wait: Duration,
    /// A recorded session to replay instead of serving `GET /<bytes>`: the client's turns
    /// read and checked, the server's sent.
    pub replay: Option<Replay>,
    /// A replay's server waits before each of its turns the pause the capture shows
    /// ([`crate::recording::Turn::pause`]: its own work, and from a capture on the client's
    /// host a round trip too).
    pub think_recorded: bool,
    /// Whether the server answers a SYN's TCP timestamps with its own (RFC 7323).
    pub timestamps: bool,
    pub seed: u64,
}

/// A server run's outcome (it runs until stopped).
#[derive(Debug, Clone, Serialize)]
pub struct ServerReport {
    pub elapsed_s: f64,
    pub counters: ServerCounters,
    /// The server's round trips: a segment (SYN-ACK, response data, FIN) leaving to its
    /// acknowledgement.
    pub rtt: crate::Percentiles,
    pub link: LinkCounters,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Listening,
    Reading,
    /// Writing a response: head bytes left to send, then body bytes.
    Writing {
        head: usize,
        body: u64,
        close: bool,
    },
    /// Replaying a recorded session's turns.
    Replaying,
    Closing,
}

#[derive(Debug)]
struct Slot {
    phase: Phase,
    moved: smoltcp::time::Instant,
    request: Vec<u8>,
    head: Vec<u8>,
    /// Body bytes of the response being written (the pattern's offset is `len - body`).
    len: u64,
    /// When the socket was first seen in TIME-WAIT.
    time_wait_since: Option<smoltcp::time::Instant>,
    /// A replay's turn, and the bytes of it read or written so far.
    turn: usize,
    done: usize,
    /// When a replay's server turn may start, its recorded pause waited.
    speak_at: Option<smoltcp::time::Instant>,
}

impl Slot {
    /// When the slot next needs a step if no frame comes first (smoltcp's own timers are the
    /// table's to add).
    fn deadline(
        &self,
        timeout: smoltcp::time::Duration,
        config: &ServerConfig,
    ) -> Option<smoltcp::time::Instant> {
        let tick = smoltcp::time::Duration::from_micros(1);
        if let (Phase::Replaying, Some(at)) = (self.phase, self.speak_at) {
            return Some(at);
        }
        match (self.phase, self.time_wait_since) {
            (Phase::Listening, _) => None,
            (Phase::Closing, Some(since)) => Some(
                since + smoltcp::time::Duration::from_micros(config.time_wait.as_micros() as u64),
            ),
            _ => Some(self.moved + timeout + tick),
        }
    }
}

/// A server run's counts at one instant, as `run_server` hands them up once a second.
#[derive(Debug, Clone, Copy)]
pub struct ServerSnapshot {
    pub elapsed_s: f64,
    pub counters: ServerCounters,
    /// The round trips timed so far.
    pub rtt: crate::Percentiles,
}

/// Serves until `stop` is set, calling `each_second` with the counts once a second and once
/// more at the end.
pub fn run_server<L: Link>(
    link: &mut L,
    config: &ServerConfig,
    stop: &AtomicBool,
    mut each_second: impl FnMut(&ServerSnapshot),
) -> Result<ServerReport, StatefulError> {
    if config.addresses.range.len() != 1 {
        return Err(StatefulError::Usage(
            "a server has one address: give A.B.C.D/N as its on-link network, not a range".into(),
        ));
    }
    if config.concurrent == 0 || config.port == 0 {
        return Err(StatefulError::Usage(
            "a server needs a port (1 to 65535) and at least one connection".into(),
        ));
    }
    let buffers = config.concurrent as u64 * (RX_BUFFER + config.send_buffer) as u64;
    if buffers > crate::client::BUFFER_BUDGET || config.send_buffer < 1024 {
        return Err(StatefulError::Usage(format!(
            "{} connections at once × a {} B send buffer need {} MiB of socket buffers; give a send buffer of at least 1 KiB and at most {} MiB all told: lower --concurrent or --send-buffer",
            config.concurrent,
            config.send_buffer,
            buffers >> 20,
            crate::client::BUFFER_BUDGET >> 20
        )));
    }
    let clock = Clock::start();
    let mut iface = stack::interface(link, &config.addresses, &clock, config.seed)?;
    let now = clock.now();
    let mut table = Table::new(
        Side::Server,
        config.addresses,
        (0..config.concurrent).map(|_| {
            let rx = tcp::SocketBuffer::new(vec![0; RX_BUFFER]);
            let tx = tcp::SocketBuffer::new(vec![0; config.send_buffer]);
            let mut socket = tcp::Socket::new(rx, tx);
            socket.set_nagle_enabled(false);
            // Reno: a stateful box sees the slow start and back-off a real stack does.
            socket.set_congestion_control(tcp::CongestionControl::Reno);
            socket.set_tsval_generator(stack::timestamps(config.timestamps));
            // Listening from the start: a SYN that comes before the first poll finds a socket.
            let _ = socket.listen(config.port);
            socket
        }),
    );
    let mut slots: Vec<Slot> = (0..table.slots())
        .map(|_| Slot {
            phase: Phase::Listening,
            moved: now,
            // Made on a slot's first request: a million idle listeners hold no heads.
            request: Vec::new(),
            head: Vec::new(),
            len: 0,
            time_wait_since: None,
            turn: 0,
            done: 0,
            speak_at: None,
        })
        .collect();
    let timeout = smoltcp::time::Duration::from_micros(config.timeout.as_micros() as u64);
    let mut c = ServerCounters::default();
    let mut next_second = 1.0;
    while !stop.load(Ordering::Relaxed) {
        let now = clock.now();
        table.ingress(&mut iface, link, now);
        table.expire(now);
        table.visit(&mut iface, link, now, |i, socket| {
            let slot = &mut slots[i];
            serve(slot, socket, now, timeout, config, &mut c);
            slot.deadline(timeout, config)
        });
        c.retransmitted = table.retransmitted();
        let elapsed = clock.elapsed().as_secs_f64();
        if elapsed >= next_second {
            next_second = elapsed.floor() + 1.0;
            each_second(&ServerSnapshot {
                elapsed_s: elapsed,
                counters: c,
                rtt: table.rtt(),
            });
        }
        let wait = if table.has_touched() {
            Duration::ZERO
        } else {
            match table.next_deadline() {
                Some(at) => {
                    let now = clock.now();
                    // smoltcp's difference of instants is unsigned: a deadline passed waits none.
                    Duration::from_micros(if at > now {
                        (at - now).total_micros()
                    } else {
                        0
                    })
                }
                None => Duration::from_millis(50),
            }
        };
        if !wait.is_zero() {
            link.wait(wait.min(Duration::from_millis(50)))?;
        }
    }
    let last = ServerSnapshot {
        elapsed_s: clock.elapsed().as_secs_f64(),
        counters: c,
        rtt: table.rtt(),
    };
    each_second(&last);
    Ok(ServerReport {
        elapsed_s: last.elapsed_s,
        counters: c,
        rtt: last.rtt,
        link: link.counters(),
    })
}

/// Moves a replaying connection on by one turn or as far as it can; true when it waits for
/// the peer.
fn replay_step(
    slot: &mut Slot,
    socket: &mut tcp::Socket,
    r: &Replay,
    think_recorded: bool,
    now: smoltcp::time::Instant,
    stalled: bool,
    c: &mut ServerCounters,
) -> bool {
    let turns = &r.recording.turns;
    let end = |slot: &mut Slot, socket: &mut tcp::Socket, count: &mut u64| {
        *count += 1;
        socket.abort();
        slot.phase = Phase::Closing;
        false
    };
    if socket.state() == State::Closed {
        c.reset += 1;
        slot.phase = Phase::Closing;
        return false;
    }
    let Some(turn) = turns.get(slot.turn) else {
        // Every turn done, the recording's client closing first: its FIN ends it, and more
        // bytes than it sent are not the recording's.
        if !socket.may_recv() {
            socket.close();
            c.closed += 1;
            slot.moved = now;
            slot.phase = Phase::Closing;
            return false;
        }
        if socket.can_recv() {
            return end(slot, socket, &mut c.bad_request);
        }
        if stalled {
            return end(slot, socket, &mut c.timeout);
        }
        return true;
    };
    let bytes = &turn.bytes;
    if turn.from_client {
        let mut wrong = false;
        while socket.can_recv() && slot.done < bytes.len() {
            let done = &mut slot.done;
            let Ok(ok) = socket.recv(|data| {
                let n = data.len().min(bytes.len() - *done);
                let ok = r.check == Check::Lengths || data[..n] == bytes[*done..*done + n];
                *done += n;
                (n, ok)
            }) else {
                break;
            };
            slot.moved = now;
            wrong |= !ok;
            if wrong {
                break;
            }
        }
        if wrong {
            return end(slot, socket, &mut c.bad_request);
        }
        if slot.done < bytes.len() {
            if !socket.may_recv() && !socket.can_recv() {
                // The client closed before its turn was done.
                return end(slot, socket, &mut c.reset);
            }
            if stalled {
                return end(slot, socket, &mut c.timeout);
            }
            return true;
        }
        c.requests += 1;
    } else {
        // The recorded pause first, from when the client's turn was read (or the handshake).
        if think_recorded && slot.done == 0 && !turn.pause.is_zero() {
            let at = *slot.speak_at.get_or_insert_with(|| {
                slot.moved + smoltcp::time::Duration::from_micros(turn.pause.as_micros() as u64)
            });
            if now < at {
                return true;
            }
        }
        if !socket.may_send() {
            return end(slot, socket, &mut c.reset);
        }
        let n = socket.send_slice(&bytes[slot.done..]).unwrap_or(0);
        if n > 0 {
            slot.done += n;
            c.body_bytes += n as u64;
            slot.moved = now;
        }
        if slot.done < bytes.len() {
            if stalled {
                return end(slot, socket, &mut c.timeout);
            }
            return true;
        }
        c.responses += 1;
    }
    slot.turn += 1;
    slot.done = 0;
    slot.speak_at = None;
    slot.moved = now;
    if slot.turn == turns.len() && r.recording.server_closes {
        socket.close();
        c.closed += 1;
        slot.phase = Phase::Closing;
    }
    false
}

fn serve(
    slot: &mut Slot,
    socket: &mut tcp::Socket,
    now: smoltcp::time::Instant,
    timeout: smoltcp::time::Duration,
    config: &ServerConfig,
    c: &mut ServerCounters,
) {
    let time_wait = smoltcp::time::Duration::from_micros(config.time_wait.as_micros() as u64);
    let stalled = |slot: &Slot| now - slot.moved > timeout;
    loop {
        match slot.phase {
            Phase::Listening => match socket.state() {
                State::Listen | State::SynReceived => return,
                State::Closed => {
                    slot.phase = Phase::Closing;
                }
                _ => {
                    c.accepted += 1;
                    slot.request.clear();
                    slot.moved = now;
                    slot.phase = Phase::Reading;
                    if config.replay.is_some() {
                        (slot.turn, slot.done, slot.speak_at) = (0, 0, None);
                        slot.phase = Phase::Replaying;
                    }
                }
            },
            Phase::Replaying => {
                let r = config.replay.as_ref().expect("a replay");
                let waits = replay_step(
                    slot,
                    socket,
                    r,
                    config.think_recorded,
                    now,
                    stalled(slot),
                    c,
                );
                if waits {
                    return;
                }
            }
            Phase::Reading => {
                if socket.state() == State::Closed {
                    c.reset += 1;
                    slot.phase = Phase::Closing;
                    continue;
                }
                while socket.can_recv() && slot.request.len() <= MAX_HEAD {
                    let request = &mut slot.request;
                    let _ = socket.recv(|data| {
                        let n = data.len().min(MAX_HEAD + 1 - request.len());
                        request.extend_from_slice(&data[..n]);
                        (n, ())
                    });
                    slot.moved = now;
                }
                match http::parse_request(&slot.request, config.default_bytes) {
                    Ok(Some(req)) if req.len <= config.max_bytes => {
                        c.requests += 1;
                        slot.request.drain(..req.used);
                        slot.head.clear();
                        slot.head
                            .extend_from_slice(http::response_head(req.len, req.close).as_bytes());
                        slot.len = req.len;
                        slot.phase = Phase::Writing {
                            head: slot.head.len(),
                            body: req.len,
                            close: req.close,
                        };
                    }
                    Ok(Some(_)) | Err(_) => {
                        c.bad_request += 1;
                        socket.abort();
                        slot.phase = Phase::Closing;
                    }
                    Ok(None) if !socket.may_recv() => {
                        // The client closed between requests: close our half too.
                        socket.close();
                        c.closed += 1;
                        slot.phase = Phase::Closing;
                    }
                    Ok(None) if stalled(slot) => {
                        c.timeout += 1;
                        socket.abort();
                        slot.phase = Phase::Closing;
                    }
                    Ok(None) => return,
                }
            }
            Phase::Writing { head, body, close } => {
                if socket.state() == State::Closed || !socket.may_send() {
                    c.reset += 1;
                    socket.abort();
                    slot.phase = Phase::Closing;
                    continue;
                }
                let (mut head, mut body) = (head, body);
                if head > 0 {
                    let from = slot.head.len() - head;
                    head -= socket.send_slice(&slot.head[from..]).unwrap_or(0);
                }
                if head == 0 {
                    let len = slot.len;
                    while body > 0 && socket.can_send() {
                        let sent = socket
                            .send(|buf| {
                                let n = (body as usize).min(buf.len());
                                http::fill_body(&mut buf[..n], len - body);
                                (n, n)
                            })
                            .unwrap_or(0);
                        if sent == 0 {
                            break;
                        }
                        body -= sent as u64;
                        c.body_bytes += sent as u64;
                        slot.moved = now;
                    }
                }
                if head > 0 || body > 0 {
                    slot.phase = Phase::Writing { head, body, close };
                    if stalled(slot) {
                        c.timeout += 1;
                        socket.abort();
                        slot.phase = Phase::Closing;
                        continue;
                    }
                    return;
                }
                c.responses += 1;
                if close {
                    socket.close();
                    c.closed += 1;
                    slot.moved = now;
                    slot.phase = Phase::Closing;
                } else {
                    slot.phase = Phase::Reading;
                }
            }
            // Back to listening once smoltcp has forgotten the last connection. A TIME-WAIT
            // cut short is forgotten without a segment: `listen` below resets the socket
            // silently, as `stack::forget` does for a client's.
            Phase::Closing => {
                let state = socket.state();
                let waited = state == State::TimeWait && {
                    let since = *slot.time_wait_since.get_or_insert(now);
                    now - since >= time_wait
                };
                if !waited && (state != State::Closed || socket.local_endpoint().is_some()) {
                    if state != State::TimeWait && stalled(slot) {
                        socket.abort();
                    }
                    return;
                }
                slot.time_wait_since = None;
                // Again each connection: smoltcp turns a socket's off for good when a peer's
                // SYN comes without them.
                socket.set_tsval_generator(stack::timestamps(config.timestamps));
                if socket.listen(config.port).is_err() {
                    return;
                }
                slot.moved = now;
                slot.phase = Phase::Listening;
                return;
            }
        }
    }
}
