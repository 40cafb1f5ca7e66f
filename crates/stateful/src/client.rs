//! The client: opens connections from a range of addresses and ports to one server at a target
//! rate under a cap of concurrent ones, runs the HTTP profile on each (requests, responses
//! checked byte by byte; a mix of kinds, [`crate::mix`], each counted on its own too) and
//! counts how every connection ended.
//!
//! Connections live in a fixed table of slots, each a smoltcp socket whose buffers are made
//! once: a new connection takes a free slot by index and reuses its socket, so nothing is
//! allocated per connection. smoltcp keeps each socket's retransmission and TIME-WAIT timers.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use smoltcp::socket::tcp::{self, State};
use smoltcp::wire::IpAddress;

use crate::counters::{ClientCounters, Percentiles, Times};
use crate::http::{self, Progress, ResponseReader};
use crate::mix::{self, HttpTemplate};
use crate::recording::{Check, Replay, Turn};
use crate::schedule::Schedule;
use crate::stack::{self, Clock, Link, LinkCounters};
use crate::table::{Side, Table};
use crate::{Addresses, StatefulError};

/// What a client run does.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The client's MAC, address range (connections go round its addresses, then its ports),
    /// on-link network and gateway.
    pub addresses: Addresses,
    /// Source ports, first and last.
    pub ports: (u16, u16),
    pub server: SocketAddr,
    /// Connections to open in all.
    pub connections: u64,
    /// New connections a second; None: as fast as the cap lets.
    pub rate: Option<f64>,
    /// Or a rate that ramps up, holds and ramps down; `connections` is then what it adds up to
    /// ([`Schedule::connections`]) or fewer.
    pub schedule: Option<Schedule>,
    /// Connections open at once, at most (the slots of the table).
    pub concurrent: usize,
    /// What each connection asks: one kind, or a mix of kinds each taking its weight's share
    /// of the connections in an interleaved order ([`crate::mix`]). A replay's is empty (or
    /// its one kind unused).
    pub http: Vec<HttpTemplate>,
    /// Time between a response and the next request on the same connection (a user reading
    /// the page): the connection stays open, idle.
    pub think: Duration,
    /// A replay's client waits before each of its turns the pause the capture shows
    /// ([`crate::recording::Turn::pause`]) instead of `think`.
    pub think_recorded: bool,
    /// A connection that makes no progress this long is ended: a SYN unanswered, a response
    /// stalled, a close that never completes.
    pub timeout: Duration,
    /// Each socket's receive buffer (the window it offers).
    pub rx_buffer: usize,
    /// How long a connection the client closed first stays in TIME-WAIT, holding its slot
    /// (smoltcp's own is 10 s, and a longer one is that); taken back sooner, the connection
    /// is forgotten without a segment, as a kernel forgets one. Only a replay whose client
    /// closes first meets it (the HTTP client asks the server to close).
    pub time_wait: Duration,
    /// A recorded session to replay instead of the HTTP GETs (`http` unused): the client's
    /// turns sent, the server's read and checked.
    pub replay: Option<Replay>,
    /// Whether connections offer TCP timestamps (RFC 7323) in their SYN, as Linux's do; used
    /// when the server answers with its own.
    pub timestamps: bool,
    pub seed: u64,
}

impl ClientConfig {
    pub fn validate(&self) -> Result<(), StatefulError> {
        let usage = |m: String| Err(StatefulError::Usage(m));
        self.addresses.validate()?;
        if self.ports.0 == 0 || self.ports.0 > self.ports.1 {
            return usage(format!(
                "source ports {}-{}: give FIRST-LAST with 1 <= FIRST <= LAST",
                self.ports.0, self.ports.1
            ));
        }
        if self.concurrent == 0 || self.concurrent > 1 << 20 {
            return usage("concurrent connections: 1 to 1048576".into());
        }
        if self.replay.is_none() {
            mix::validate(&self.http)?;
        } else if self.http.len() > 1 {
            return usage(
                "a replay is one session on every connection: give a recording or a mix, not both"
                    .into(),
            );
        }
        if let Some(r) = self.rate
            && !(r > 0.0 && r.is_finite())
        {
            return usage(format!(
                "connection rate {r}: give a positive number a second"
            ));
        }
        if let Some(schedule) = &self.schedule {
            schedule.validate()?;
            if self.rate.is_some() {
                return usage("a rate and a schedule: give one".into());
            }
            if self.connections > schedule.connections() {
                return usage(format!(
                    "{} connections, and the schedule opens {}: give no more than it does",
                    self.connections,
                    schedule.connections()
                ));
            }
        }
        if self.server.is_ipv6() != self.addresses.range.is_ipv6() {
            return usage(format!(
                "the server {} and the clients' range {}/{} are not of one family: give both IPv4 or both IPv6",
                self.server.ip(),
                self.addresses.range.network,
                self.addresses.range.prefix_len
            ));
        }
        if self.addresses.range.contains(self.server.ip()) {
            return usage(format!(
                "the server {} is inside the clients' range {}/{}: the client would answer for it; give the clients another prefix",
                self.server.ip(),
                self.addresses.range.network,
                self.addresses.range.prefix_len
            ));
        }
        let buffers = self.concurrent as u64 * (self.rx_buffer + TX_BUFFER) as u64;
        if buffers > BUFFER_BUDGET {
            return usage(format!(
                "{} connections at once × a {} B window need {} MiB of socket buffers, over the {} MiB budget: lower --concurrent or --window",
                self.concurrent,
                self.rx_buffer,
                buffers >> 20,
                BUFFER_BUDGET >> 20
            ));
        }
        let tuples = u64::from(self.addresses.range.len()) * self.tuple_ports();
        if self.connections > tuples {
            return usage(format!(
                "{} connections need as many 5-tuples; {} addresses × {} ports give {tuples}: widen the range or the ports",
                self.connections,
                self.addresses.range.len(),
                self.tuple_ports()
            ));
        }
        Ok(())
    }

    /// The fewest bytes one connection puts on the wire each way, to the server and to the
    /// client, as a link carries them: each frame with its FCS, padded to 64 bytes, and its
    /// preamble and gap (20). The handshake, the requests and the bodies (an HTTP response's
    /// head left out) in full segments (1,460 bytes over IPv4, 1,440 over IPv6), one
    /// acknowledgement of each response, both FINs and their acknowledgements; a replay's
    /// turns as recorded. A lower bound: a device that carries less cannot carry the
    /// connection. Of a mix, the mean over its kinds by their weights (rounded up): what the
    /// connections of a cycle of its order carry, a connection.
    pub fn wire_bytes(&self) -> (u64, u64) {
        if let Some(r) = &self.replay {
            let answers = r.recording.turns.iter().filter(|t| !t.from_client).count() as u64;
            return self.wire_of(r.recording.bytes(), answers);
        }
        let host = self.host();
        let (mut to_server, mut to_client, mut weights) = (0, 0, 0);
        for t in &self.http {
            let more = http::request(&host, t.response_bytes, false).len() as u64;
            let last = http::request(&host, t.response_bytes, true).len() as u64;
            let requests = u64::from(t.requests);
            let (s, c) = self.wire_of(
                (more * (requests - 1) + last, t.response_bytes * requests),
                requests,
            );
            let w = u64::from(t.weight);
            (to_server, to_client, weights) = (to_server + w * s, to_client + w * c, weights + w);
        }
        let weights = weights.max(1);
        (to_server.div_ceil(weights), to_client.div_ceil(weights))
    }

    /// The wire bytes each way of a connection whose payload is `bytes` (to the server, to
    /// the client), each of its `answers` acknowledged by a segment of the client's.
    fn wire_of(&self, (to_server, to_client): (u64, u64), answers: u64) -> (u64, u64) {
        let wire = Wire::of(self.server.ip(), &self.addresses);
        // SYN or SYN-ACK (with its options), the handshake's or a response's ACK, FIN, ACK.
        let controls = wire.frame(20) + 3 * wire.frame(0);
        (
            controls + wire.stream(to_server) + answers * wire.frame(0),
            controls + wire.stream(to_client),
        )
    }

    /// Refuses a rate (or a schedule's) that a link of `mbps` cannot carry either way.
    pub fn check_link(&self, mbps: u64) -> Result<(), StatefulError> {
        let Some(rate) = self.schedule.as_ref().map(|s| s.rate).or(self.rate) else {
            return Ok(());
        };
        let (to_server, to_client) = self.wire_bytes();
        let (bytes, way) = if to_client >= to_server {
            (to_client, "to the clients")
        } else {
            (to_server, "to the server")
        };
        let need = rate * bytes as f64 * 8.0 / 1e6;
        if need > mbps as f64 {
            return Err(StatefulError::Usage(format!(
                "{rate} connections a second of at least {bytes} bytes on the wire {way} each need {:.2} Gbit/s, over the link's {:.2} Gbit/s: lower --rate (at most {:.0}) or the bytes a connection carries",
                need / 1e3,
                mbps as f64 / 1e3,
                mbps as f64 * 1e6 / 8.0 / bytes as f64
            )));
        }
        Ok(())
    }

    /// The server as a request's Host header names it (an IPv6 address in brackets).
    fn host(&self) -> String {
        match self.server.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        }
    }

    /// The rate asked for `t` seconds into the run.
    fn target_at(&self, t: f64) -> Option<f64> {
        match (&self.schedule, self.rate) {
            (Some(schedule), _) => Some(schedule.rate_at(t)),
            (None, rate) => rate,
        }
    }

    fn tuple_ports(&self) -> u64 {
        u64::from(self.ports.1 - self.ports.0) + 1
    }

    /// The source of connection `k`: addresses first, so consecutive connections spread over
    /// the range, then the next port.
    fn source(&self, k: u64) -> (IpAddr, u16) {
        let n = u64::from(self.addresses.range.len());
        let port = self.ports.0 as u64 + (k / n) % self.tuple_ports();
        (self.addresses.range.nth(k), port as u16)
    }
}

/// Each connection's transmit buffer: a request is one line of headers.
const TX_BUFFER: usize = 1024;

/// TCP segments on an Ethernet link of 1,500 bytes, as the wire carries them.
struct Wire {
    /// The IP header's bytes: 20 (IPv4) or 40 (IPv6).
    ip: u64,
    /// The VLAN tags' bytes: 4 on a VLAN, 8 on stacked VLANs, else 0.
    tag: u64,
}

impl Wire {
    fn of(addr: IpAddr, addresses: &Addresses) -> Wire {
        let tags = [addresses.vlan, addresses.inner_vlan];
        Wire {
            ip: if addr.is_ipv4() { 20 } else { 40 },
            tag: 4 * tags.iter().flatten().count() as u64,
        }
    }

    /// The segment size a stack sends (smoltcp's, a kernel's): the 1,500 bytes less the IP
    /// and TCP headers.
    fn mss(&self) -> u64 {
        1500 - self.ip - 20
    }

    /// A segment of `payload` bytes: Ethernet (with its 802.1Q tag on a VLAN), IP and TCP
    /// headers, the FCS, padding to 64 bytes, preamble and gap.
    fn frame(&self, payload: u64) -> u64 {
        (14 + self.tag + self.ip + 20 + payload + 4).max(64) + 20
    }

    /// A byte stream of `len` bytes in full segments and a last one.
    fn stream(&self, len: u64) -> u64 {
        let (full, rest) = (len / self.mss(), len % self.mss());
        full * self.frame(self.mss()) + if rest > 0 { self.frame(rest) } else { 0 }
    }
}

/// Socket buffers a client may make, all told (made at start, one set a slot): 16 GiB.
pub(crate) const BUFFER_BUDGET: u64 = 16 << 30;

/// One second of a run, or its end.
#[derive(Debug, Clone, Serialize)]
pub struct ClientSnapshot {
    pub elapsed_s: f64,
    pub counters: ClientCounters,
    /// Each kind's of the mix, in its order (one kind: the run's; a replay: none). A kind's
    /// `retransmitted` is 0: the link counts retransmissions, not the connections.
    pub templates: Vec<ClientCounters>,
    pub active: u64,
    /// New connections a second the rate or schedule asked for at this time; None: unpaced.
    pub target_cps: Option<f64>,
    /// The round trips timed so far.
    pub rtt: Percentiles,
}

/// A client run's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ClientReport {
    pub elapsed_s: f64,
    pub counters: ClientCounters,
    /// Connections established a second, over the run.
    pub cps: f64,
    /// Body bits a second, over the run.
    pub goodput_bps: f64,
    /// SYN sent to handshake done (one round trip, plus the server's accept).
    pub connect_time: Percentiles,
    /// Request sent to the response's last byte.
    pub response_time: Percentiles,
    /// The client's round trips: a segment (SYN, request, FIN) leaving to its acknowledgement.
    pub rtt: Percentiles,
    pub link: LinkCounters,
    /// Whether a stop (Ctrl-C) ended the run before every connection was opened.
    pub stopped: bool,
    /// The first connections that timed out, where they stood: which side stalled.
    pub timed_out: Vec<TimedOut>,
    /// Each kind of the mix over the run (one kind: the run's; a replay: none).
    pub templates: Vec<TemplateReport>,
}

/// One kind of a client's mix over the run.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateReport {
    /// `4096x1`: response bytes and requests ([`HttpTemplate::name`]).
    pub name: String,
    pub template: HttpTemplate,
    /// Its connections' counts (`retransmitted` 0: the run's, the link's).
    pub counters: ClientCounters,
    /// Its connections established a second, over the run.
    pub cps: f64,
    /// Its body bits a second, over the run.
    pub goodput_bps: f64,
    /// Its requests sent to their responses' last bytes.
    pub response_time: Percentiles,
}

/// A connection ended by the timeout, as it stood when it was ended.
#[derive(Debug, Clone, Serialize)]
pub struct TimedOut {
    pub source: SocketAddr,
    /// What the client was doing: connecting, sending, reading, thinking, ending (waiting for
    /// the server's FIN) or closing.
    pub phase: &'static str,
    /// smoltcp's TCP state (e.g. LAST-ACK: the client's FIN was never acknowledged).
    pub tcp_state: String,
}

/// Timed-out connections described in a report, at most.
const TIMED_OUT_KEPT: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting,
    Sending,
    Reading,
    /// Between a response and the next request, until the instant held.
    Thinking(smoltcp::time::Instant),
    /// The last response read: waiting for the server's FIN, which the request asked for.
    Ending,
    Closing,
    /// Closed or aborted; the socket still owes the peer a segment (an RST, the last ACK).
    Draining,
}

impl Phase {
    /// Whether a slot in this phase holds a connection of the count.
    fn counted(self) -> bool {
        !matches!(self, Phase::Idle | Phase::Draining)
    }

    fn name(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Connecting => "connecting",
            Phase::Sending => "sending",
            Phase::Reading => "reading",
            Phase::Thinking(_) => "thinking",
            Phase::Ending => "ending",
            Phase::Closing => "closing",
            Phase::Draining => "draining",
        }
    }
}

#[derive(Debug)]
struct Slot {
    phase: Phase,
    /// When the connection last moved: the timeout runs from here.
    moved: smoltcp::time::Instant,
    /// When its SYN or its request left.
    started: smoltcp::time::Instant,
    /// The connection's kind in the mix.
    template: usize,
    requests_left: u32,
    sent: usize,
    reader: ResponseReader,
    /// A replay's turn, and the bytes of it read so far.
    turn: usize,
    read: usize,
    /// When the socket was first seen in TIME-WAIT.
    time_wait_since: Option<smoltcp::time::Instant>,
}

impl Slot {
    /// When the slot next needs a step if no frame comes first: its think ending, or its
    /// timeout (smoltcp's own timers are the table's to add).
    fn deadline(&self, how: &How) -> smoltcp::time::Instant {
        match (self.phase, self.time_wait_since) {
            (Phase::Thinking(until), _) => until,
            (Phase::Draining, Some(since)) => since + how.time_wait,
            _ => self.moved + how.timeout + smoltcp::time::Duration::from_micros(1),
        }
    }
}

/// Runs the client until every connection has ended (or `stop` is set and the open ones have
/// ended or timed out), calling `each_second` with the counts once a second.
pub fn run_client<L: Link>(
    link: &mut L,
    config: &ClientConfig,
    stop: &AtomicBool,
    mut each_second: impl FnMut(&ClientSnapshot),
) -> Result<ClientReport, StatefulError> {
    config.validate()?;
    let clock = Clock::start();
    let mut iface = stack::interface(link, &config.addresses, &clock, config.seed)?;
    let next_hop = config.addresses.gateway.unwrap_or(config.server.ip());
    stack::announce(link, &config.addresses, next_hop, &clock);
    link.flush();
    let slots_wanted = config.concurrent.min(config.connections.max(1) as usize);
    let now = clock.now();
    let mut table = Table::new(
        Side::Client,
        config.addresses,
        (0..slots_wanted).map(|_| {
            let rx = tcp::SocketBuffer::new(vec![0; config.rx_buffer]);
            let tx = tcp::SocketBuffer::new(vec![0; TX_BUFFER]);
            let mut socket = tcp::Socket::new(rx, tx);
            socket.set_nagle_enabled(false);
            // Reno: a stateful box sees the slow start and back-off a real stack does.
            socket.set_congestion_control(tcp::CongestionControl::Reno);
            socket
        }),
    );
    let mut slots: Vec<Slot> = (0..table.slots())
        .map(|_| Slot {
            phase: Phase::Idle,
            moved: now,
            started: now,
            template: 0,
            requests_left: 0,
            sent: 0,
            reader: ResponseReader::new(0),
            turn: 0,
            read: 0,
            time_wait_since: None,
        })
        .collect();
    let mut free: Vec<usize> = (0..slots.len()).rev().collect();
    // Slots holding a connection of the count (not idle, not draining).
    let mut busy = 0usize;
    let host = config.host();
    // Each kind's two requests: one keeping the connection, the last asking to close it.
    let requests: Vec<(String, String)> = config
        .http
        .iter()
        .map(|t| {
            (
                http::request(&host, t.response_bytes, false),
                http::request(&host, t.response_bytes, true),
            )
        })
        .collect();
    let micros = |d: Duration| smoltcp::time::Duration::from_micros(d.as_micros() as u64);
    let how = How {
        timeout: micros(config.timeout),
        think: micros(config.think),
        think_recorded: config.think_recorded,
        time_wait: micros(config.time_wait),
        requests: &requests,
        replay: config.replay.as_ref(),
    };
    let (order, kinds) = match config.replay {
        Some(_) => (Vec::new(), 0),
        None => (mix::order(&config.http), config.http.len()),
    };
    let mut c = ClientCounters::default();
    // Each kind's counts and response times; a replay's connections are the run's alone.
    let mut per = vec![ClientCounters::default(); kinds];
    let mixed = kinds > 1;
    let mut per_times = vec![Times::default(); kinds.max(1)];
    let mut connect_times = Times::default();
    let mut next_second = 1.0;
    let mut stopped = false;
    let mut timed_out = Vec::new();

    loop {
        let now = clock.now();
        table.ingress(&mut iface, link, now);
        table.expire(now);
        stopped |= stop.load(Ordering::Relaxed) && c.attempted < config.connections;
        // New connections: as many as the rate has made due, the cap allows and remain.
        let due = match (&config.schedule, config.rate) {
            _ if stopped => 0,
            (Some(schedule), _) => {
                (schedule.due(clock.elapsed().as_secs_f64()) as u64 + 1).saturating_sub(c.attempted)
            }
            (None, Some(rate)) => {
                ((clock.elapsed().as_secs_f64() * rate) as u64 + 1).saturating_sub(c.attempted)
            }
            (None, None) => u64::MAX,
        };
        let open = due
            .min(config.connections - c.attempted)
            .min(free.len() as u64);
        for _ in 0..open {
            let Some(i) = free.pop() else { break };
            let slot = &mut slots[i];
            let (ip, port) = config.source(c.attempted);
            let socket = table.socket(i);
            // Again each connection: smoltcp turns a socket's off for good when a peer
            // answers without them.
            socket.set_tsval_generator(stack::timestamps(config.timestamps));
            socket
                .connect(
                    iface.context(),
                    (IpAddress::from(config.server.ip()), config.server.port()),
                    (IpAddress::from(ip), port),
                )
                .map_err(|e| StatefulError::Usage(format!("connecting from {ip}:{port}: {e}")))?;
            table.touch(i);
            // A replay has no kinds: its connections are kind 0, the run's.
            let kind = match order.len() as u64 {
                0 => 0,
                n => usize::from(order[(c.attempted % n) as usize]),
            };
            if mixed {
                per[kind].attempted += 1;
            }
            c.attempted += 1;
            busy += 1;
            slot.phase = Phase::Connecting;
            slot.moved = now;
            slot.started = now;
            slot.template = kind;
            if let Some(t) = config.http.get(kind) {
                slot.reader.reset(t.response_bytes);
                slot.requests_left = t.requests;
            }
            slot.turn = 0;
            slot.read = 0;
            slot.time_wait_since = None;
        }
        table.visit(&mut iface, link, now, |i, socket| {
            let slot = &mut slots[i];
            if slot.phase == Phase::Idle {
                return None;
            }
            let before = (
                slot.phase,
                socket.state(),
                c.failed_timeout + c.closed_timeout,
                socket.local_endpoint(),
            );
            // A mix's steps are counted to their kind too; one kind's counts are the run's.
            let counted = if mixed { Some(c) } else { None };
            let kind = slot.template;
            let ended = step(
                slot,
                socket,
                now,
                &how,
                &mut c,
                &mut connect_times,
                &mut per_times[kind],
            );
            if let Some(counted) = counted {
                per[kind].add_since(&c, &counted);
            }
            if c.failed_timeout + c.closed_timeout > before.2
                && timed_out.len() < TIMED_OUT_KEPT
                && let Some(source) = before.3
            {
                timed_out.push(TimedOut {
                    source: SocketAddr::new(source.addr.into(), source.port),
                    phase: before.0.name(),
                    tcp_state: before.1.to_string(),
                });
            }
            if before.0.counted() && !slot.phase.counted() {
                busy -= 1;
            }
            if ended {
                slot.phase = Phase::Idle;
                free.push(i);
                return None;
            }
            Some(slot.deadline(&how))
        });
        c.retransmitted = table.retransmitted();
        let elapsed = clock.elapsed().as_secs_f64();
        if elapsed >= next_second {
            next_second = elapsed.floor() + 1.0;
            each_second(&ClientSnapshot {
                elapsed_s: elapsed,
                counters: c,
                templates: kinds_of(&per, &c),
                active: c.active(),
                target_cps: config.target_at(elapsed),
                rtt: table.rtt(),
            });
        }
        // Done when every connection has ended: a socket still draining (TIME-WAIT's 10 s,
        // an RST to send) holds no connection of the count, and a last visit sends its due.
        if busy == 0 && (c.attempted == config.connections || stopped) {
            table.touch_all();
            table.visit(&mut iface, link, clock.now(), |_, _| None);
            c.retransmitted = table.retransmitted();
            break;
        }
        // Sleep until a frame, a shard's deadline, the next connection due or the next second.
        let more = !stopped && c.attempted < config.connections && !free.is_empty();
        let mut wait = match table.next_deadline() {
            Some(at) => {
                let now = clock.now();
                // smoltcp's difference of instants is unsigned: a deadline passed waits none.
                Duration::from_micros(if at > now {
                    (at - now).total_micros()
                } else {
                    0
                })
            }
            None => Duration::from_millis(10),
        };
        let paced = config.rate.is_some() || config.schedule.is_some();
        if table.has_touched() || (more && !paced) {
            wait = Duration::ZERO;
        } else if more {
            // When the next connection is due: the rate's, or the schedule's inverse.
            let at = match (&config.schedule, config.rate) {
                (Some(schedule), _) => schedule.when(c.attempted as f64),
                (None, Some(rate)) => Some(c.attempted as f64 / rate),
                (None, None) => None,
            };
            if let Some(at) = at {
                let next = at - clock.elapsed().as_secs_f64();
                wait = wait.min(Duration::from_secs_f64(next.max(0.0)));
            }
        }
        if !wait.is_zero() {
            link.wait(wait.min(Duration::from_millis(10)))?;
        }
    }
    let elapsed = clock.elapsed().as_secs_f64();
    each_second(&ClientSnapshot {
        elapsed_s: elapsed,
        counters: c,
        templates: kinds_of(&per, &c),
        active: c.active(),
        target_cps: config.target_at(elapsed),
        rtt: table.rtt(),
    });
    let per_second = |n: u64| n as f64 / elapsed.max(1e-9);
    let mut response_times = Times::default();
    for t in &per_times {
        response_times.add(t);
    }
    let per = kinds_of(&per, &c);
    let templates = per
        .iter()
        .zip(&config.http)
        .zip(&per_times)
        .map(|((counters, template), times)| TemplateReport {
            name: template.name(),
            template: *template,
            counters: *counters,
            cps: per_second(counters.established),
            goodput_bps: per_second(counters.body_bytes) * 8.0,
            response_time: times.percentiles(),
        })
        .collect();
    Ok(ClientReport {
        elapsed_s: elapsed,
        counters: c,
        cps: per_second(c.established),
        goodput_bps: per_second(c.body_bytes) * 8.0,
        connect_time: connect_times.percentiles(),
        response_time: response_times.percentiles(),
        rtt: table.rtt(),
        link: link.counters(),
        stopped,
        timed_out,
        templates,
    })
}

/// Each kind's counts: a mix's as counted, one kind's the run's (but `retransmitted`, the
/// link's), a replay's none.
fn kinds_of(per: &[ClientCounters], run: &ClientCounters) -> Vec<ClientCounters> {
    match per.len() {
        1 => vec![ClientCounters {
            retransmitted: 0,
            ..*run
        }],
        _ => per.to_vec(),
    }
}

/// Ends a connection the way `count` says: reset, its slot draining.
fn drain(slot: &mut Slot, socket: &mut tcp::Socket, now: smoltcp::time::Instant, count: &mut u64) {
    *count += 1;
    socket.abort();
    slot.moved = now;
    slot.phase = Phase::Draining;
}

/// A replay's turn is done: the next one's side reads or writes, after the think time when
/// the client speaks again; after the last, the client closes.
fn next_turn(
    slot: &mut Slot,
    socket: &mut tcp::Socket,
    r: &Replay,
    now: smoltcp::time::Instant,
    how: &How,
) {
    slot.turn += 1;
    slot.moved = now;
    slot.phase = match r.recording.turns.get(slot.turn) {
        None => {
            socket.close();
            Phase::Closing
        }
        Some(t) if t.from_client => thinking_before(t, now, how),
        Some(_) => {
            slot.started = now;
            Phase::Reading
        }
    };
}

/// The client's turn `t` is next: sent now, or after its think time (the capture's own pause
/// when asked; else `think`, which a connection's first turn does not wait).
fn thinking_before(t: &Turn, now: smoltcp::time::Instant, how: &How) -> Phase {
    let pause = if how.think_recorded {
        smoltcp::time::Duration::from_micros(t.pause.as_micros() as u64)
    } else {
        how.think
    };
    if pause > smoltcp::time::Duration::ZERO {
        Phase::Thinking(now + pause)
    } else {
        Phase::Sending
    }
}

/// What every connection of a run does, as `step` reads it.
struct How<'a> {
    timeout: smoltcp::time::Duration,
    think: smoltcp::time::Duration,
    think_recorded: bool,
    time_wait: smoltcp::time::Duration,
    /// Each kind's requests: one keeping the connection, the last asking to close it.
    requests: &'a [(String, String)],
    replay: Option<&'a Replay>,
}

/// Moves one connection on; true when it has ended and its slot is free again.
fn step(
    slot: &mut Slot,
    socket: &mut tcp::Socket,
    now: smoltcp::time::Instant,
    how: &How,
    c: &mut ClientCounters,
    connect_times: &mut Times,
    response_times: &mut Times,
) -> bool {
    let How {
        timeout,
        think,
        requests,
        replay,
        ..
    } = *how;
    let state = socket.state();
    // Whether the connection has not moved for the timeout: read when needed, as a phase
    // change within this call moves it.
    let stalled = |slot: &Slot| now - slot.moved > timeout;
    loop {
        match slot.phase {
            Phase::Idle => return true,
            Phase::Connecting => match state {
                State::SynSent | State::SynReceived if stalled(slot) => {
                    c.failed_timeout += 1;
                    socket.abort();
                    slot.moved = now;
                    slot.phase = Phase::Draining;
                }
                State::SynSent | State::SynReceived => return false,
                // A reset answered the SYN.
                State::Closed => {
                    c.failed_refused += 1;
                    slot.moved = now;
                    slot.phase = Phase::Draining;
                }
                _ => {
                    c.established += 1;
                    connect_times.record((now - slot.started).total_micros());
                    slot.phase = Phase::Sending;
                    slot.sent = 0;
                    slot.moved = now;
                    // A recorded server may speak first (a banner); a recorded client may
                    // have waited before its first words.
                    if let Some(r) = replay {
                        let first = &r.recording.turns[0];
                        if !first.from_client {
                            slot.started = now;
                            slot.phase = Phase::Reading;
                        } else if how.think_recorded {
                            slot.phase = thinking_before(first, now, how);
                        }
                    }
                }
            },
            Phase::Sending if replay.is_some() => {
                let r = replay.expect("a replay");
                if state == State::Closed || !socket.may_send() {
                    drain(slot, socket, now, &mut c.closed_reset);
                    continue;
                }
                let turn = &r.recording.turns[slot.turn].bytes;
                if slot.sent == 0 && socket.can_send() {
                    slot.started = now;
                }
                match socket.send_slice(&turn[slot.sent..]) {
                    Ok(n) => {
                        slot.sent += n;
                        if n > 0 {
                            slot.moved = now;
                        }
                    }
                    Err(_) => {
                        drain(slot, socket, now, &mut c.closed_reset);
                        continue;
                    }
                }
                if slot.sent < turn.len() {
                    if stalled(slot) {
                        drain(slot, socket, now, &mut c.closed_timeout);
                        continue;
                    }
                    return false;
                }
                c.requests += 1;
                slot.sent = 0;
                next_turn(slot, socket, r, now, how);
            }
            Phase::Reading if replay.is_some() => {
                let r = replay.expect("a replay");
                let turn = &r.recording.turns[slot.turn].bytes;
                let mut wrong = false;
                while socket.can_recv() && slot.read < turn.len() {
                    let read = &mut slot.read;
                    let got = socket.recv(|data| {
                        let n = data.len().min(turn.len() - *read);
                        let ok = r.check == Check::Lengths || data[..n] == turn[*read..*read + n];
                        *read += n;
                        (n, (n, ok))
                    });
                    let Ok((n, ok)) = got else { break };
                    c.body_bytes += n as u64;
                    slot.moved = now;
                    if !ok {
                        wrong = true;
                        break;
                    }
                }
                if wrong {
                    drain(slot, socket, now, &mut c.closed_bad_response);
                } else if slot.read == turn.len() {
                    c.responses += 1;
                    response_times.record((now - slot.started).total_micros());
                    slot.read = 0;
                    next_turn(slot, socket, r, now, how);
                } else if state == State::Closed || (!socket.may_recv() && !socket.can_recv()) {
                    // The peer ended the stream before its turn did.
                    drain(slot, socket, now, &mut c.closed_reset);
                } else if stalled(slot) {
                    drain(slot, socket, now, &mut c.closed_timeout);
                } else {
                    return false;
                }
            }
            Phase::Sending => {
                if state == State::Closed || !socket.may_send() {
                    c.closed_reset += 1;
                    socket.abort();
                    slot.moved = now;
                    slot.phase = Phase::Draining;
                    continue;
                }
                let (more, last) = &requests[slot.template];
                let request = if slot.requests_left == 1 { last } else { more };
                if slot.sent == 0 && socket.can_send() {
                    slot.started = now;
                }
                match socket.send_slice(&request.as_bytes()[slot.sent..]) {
                    Ok(n) => slot.sent += n,
                    Err(_) => {
                        c.closed_reset += 1;
                        socket.abort();
                        slot.moved = now;
                        slot.phase = Phase::Draining;
                        continue;
                    }
                }
                if slot.sent < request.len() {
                    if stalled(slot) {
                        c.closed_timeout += 1;
                        socket.abort();
                        slot.moved = now;
                        slot.phase = Phase::Draining;
                        continue;
                    }
                    return false;
                }
                c.requests += 1;
                slot.moved = now;
                let expected = slot.reader.expected();
                slot.reader.reset(expected);
                slot.phase = Phase::Reading;
            }
            Phase::Reading => {
                let mut outcome = Ok(Progress::More { body: 0 });
                while socket.can_recv() {
                    let reader = &mut slot.reader;
                    let got = socket.recv(|data| match reader.feed(data) {
                        Ok(Progress::Done { used, body }) => {
                            (used, Ok(Progress::Done { used, body }))
                        }
                        Ok(more) => (data.len(), Ok(more)),
                        Err(e) => (data.len(), Err(e)),
                    });
                    outcome = got.unwrap_or(Ok(Progress::More { body: 0 }));
                    match outcome {
                        Ok(Progress::More { body }) => {
                            c.body_bytes += body;
                            slot.moved = now;
                        }
                        _ => break,
                    }
                }
                match outcome {
                    Err(_) => {
                        c.closed_bad_response += 1;
                        socket.abort();
                        slot.moved = now;
                        slot.phase = Phase::Draining;
                    }
                    Ok(Progress::Done { body, .. }) => {
                        c.body_bytes += body;
                        c.responses += 1;
                        response_times.record((now - slot.started).total_micros());
                        slot.moved = now;
                        slot.requests_left -= 1;
                        if slot.requests_left > 0 {
                            slot.phase = Phase::Thinking(now + think);
                            slot.sent = 0;
                        } else {
                            slot.phase = Phase::Ending;
                            continue;
                        }
                    }
                    Ok(Progress::More { .. }) => {
                        // The peer ended the stream (a FIN or a reset) before the response did.
                        if state == State::Closed || (!socket.may_recv() && !socket.can_recv()) {
                            c.closed_reset += 1;
                            socket.abort();
                            slot.moved = now;
                            slot.phase = Phase::Draining;
                        } else if stalled(slot) {
                            c.closed_timeout += 1;
                            socket.abort();
                            slot.moved = now;
                            slot.phase = Phase::Draining;
                        } else {
                            return false;
                        }
                    }
                }
            }
            Phase::Thinking(until) => {
                if state == State::Closed || !socket.may_send() {
                    // The peer closed an idle connection (its keep-alive timeout).
                    c.closed_reset += 1;
                    socket.abort();
                    slot.moved = now;
                    slot.phase = Phase::Draining;
                } else if now >= until {
                    slot.moved = now;
                    slot.phase = Phase::Sending;
                } else {
                    return false;
                }
            }
            // The server closes first, as `Connection: close` asks, and keeps the TIME-WAIT;
            // a client that closed as soon as it had the body would race the server's FIN and,
            // when quicker, hold TIME-WAIT in its slot (10 s: a run of 64 slots stalled at
            // 86 connections). A server that never closes is closed on after the timeout.
            Phase::Ending => {
                if state == State::Closed || !socket.may_recv() || stalled(slot) {
                    socket.close();
                    slot.moved = now;
                    slot.phase = Phase::Closing;
                    continue;
                }
                return false;
            }
            Phase::Closing => match socket.state() {
                // Ended: LAST-ACK answered, or our FIN answered (FIN-WAIT-2, TIME-WAIT: the
                // socket drains while the slot waits). As a kernel's close() returns, the
                // client is done once its FIN is acknowledged; a peer's FIN that never comes
                // (smoltcp can miss one that arrived out of order) costs the slot the timeout.
                State::Closed | State::TimeWait | State::FinWait2 => {
                    c.closed += 1;
                    slot.moved = now;
                    slot.phase = Phase::Draining;
                }
                _ if stalled(slot) => {
                    c.closed_timeout += 1;
                    socket.abort();
                    slot.moved = now;
                    slot.phase = Phase::Draining;
                }
                _ => return false,
            },
            // Free once smoltcp forgot the tuple (its RST or TIME-WAIT done); a socket held
            // past the timeout (FIN-WAIT-2 with no FIN coming) is reset; a TIME-WAIT cut short
            // is forgotten without a segment.
            Phase::Draining => {
                let state = socket.state();
                if state == State::Closed && socket.local_endpoint().is_none() {
                    return true;
                }
                if state == State::TimeWait {
                    let since = *slot.time_wait_since.get_or_insert(now);
                    if now - since >= how.time_wait {
                        stack::forget(socket);
                        return true;
                    }
                    return false;
                }
                if now - slot.moved > timeout && !matches!(state, State::TimeWait | State::Closed) {
                    socket.abort();
                }
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Range;

    fn config(rate: f64) -> ClientConfig {
        ClientConfig {
            addresses: Addresses {
                mac: [2, 0, 0, 0, 0, 2],
                range: Range::parse("10.0.1.0/24").unwrap(),
                prefix_len: 16,
                gateway: None,
                vlan: None,
                inner_vlan: None,
                outer_tpid: crate::addr::QINQ_TPID,
            },
            ports: (1024, 65535),
            server: "10.0.0.1:80".parse().unwrap(),
            connections: 10,
            rate: Some(rate),
            schedule: None,
            concurrent: 8,
            http: vec![HttpTemplate::only(4096, 1)],
            think: Duration::ZERO,
            think_recorded: false,
            timeout: Duration::from_secs(10),
            rx_buffer: 16 * 1024,
            time_wait: Duration::ZERO,
            replay: None,
            timestamps: true,
            seed: 1,
        }
    }

    #[test]
    fn a_connection_carries_at_least_its_segments_each_way() {
        // On the wire a frame is its bytes with the FCS (64 at least) and 20 more. Both ways:
        // a SYN or SYN-ACK with 20 bytes of options (98), three bare segments (84 each: an ACK,
        // a FIN, an ACK). To the server also the request, 79 bytes in one segment (157), and
        // an ACK of the response (84); to the client the body's 4,096 bytes in segments of
        // 1,460, 1,460 and 1,176 (1,538 + 1,538 + 1,254).
        assert_eq!(config(1.0).wire_bytes(), (591, 4680));
        // Over IPv6 20 more bytes a header: a SYN 118, a bare segment 98 (over 64 now), the
        // request (84 bytes, its Host bracketed) 182, and the body in segments of 1,440:
        // 1,538 + 1,538 + 1,314 (1,216 bytes).
        let mut v6 = config(1.0);
        v6.addresses.range = Range::parse("2001:db8:1::/120").unwrap();
        v6.server = "[2001:db8::1]:80".parse().unwrap();
        assert_eq!(v6.wire_bytes(), (692, 4802));
        // On a VLAN 4 more bytes a frame but the bare segments' (62 bytes, padded to 64 as
        // before): a SYN 102, the request 161; the body's segments 1,542, 1,542 and 1,258.
        let mut tagged = config(1.0);
        tagged.addresses.vlan = Some(100);
        assert_eq!(tagged.wire_bytes(), (599, 4696));
        // On stacked VLANs 8 more: the bare segments too (66 bytes, 86 with the gap), a SYN
        // 106, the request 165; the body's segments 1,546, 1,546 and 1,262.
        tagged.addresses.inner_vlan = Some(200);
        assert_eq!(tagged.wire_bytes(), (615, 4718));
    }

    #[test]
    fn a_rate_the_link_cannot_carry_is_refused_with_the_rate_it_can() {
        // 100,000 a second × 4,680 bytes × 8 = 3.74 Gbit/s toward the clients.
        let c = config(100_000.0);
        c.check_link(10_000).unwrap();
        let why = c.check_link(1_000).unwrap_err().to_string();
        assert!(why.contains("3.74 Gbit/s"), "{why}");
        assert!(why.contains("at most 26709"), "{why}");
        assert!(why.contains("to the clients"), "{why}");
        // Unpaced: nothing to check.
        let mut unpaced = c.clone();
        unpaced.rate = None;
        unpaced.check_link(1).unwrap();
    }
}
