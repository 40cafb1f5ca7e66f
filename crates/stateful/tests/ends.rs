//! linerate's client against linerate's server over joined in-memory links: every connection
//! accounted for, every body byte checked, on a clean link and on one that drops frames.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etherparse::{NetSlice, SlicedPacket, TcpSlice, TransportSlice};
use linerate_stateful::recording::Turn;
use linerate_stateful::{
    Addresses, Check, ClientConfig, ClientReport, HttpTemplate, Range, Recording, Replay,
    ServerConfig, ServerReport, mem, run_client, run_server,
};

const SERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

fn configs(connections: u64, requests: u32) -> (ClientConfig, ServerConfig) {
    configs_on(SERVER.into(), "10.0.1.0/28", 16, connections, requests)
}

/// A client of the range `clients` and a server at `server`, on one network of `prefix_len`.
fn configs_on(
    server: IpAddr,
    clients: &str,
    prefix_len: u8,
    connections: u64,
    requests: u32,
) -> (ClientConfig, ServerConfig) {
    let client = ClientConfig {
        addresses: Addresses {
            mac: [2, 0, 0, 0, 0, 2],
            range: Range::parse(clients).unwrap(),
            prefix_len,
            gateway: None,
            vlan: None,
            inner_vlan: None,
            outer_tpid: linerate_stateful::QINQ_TPID,
        },
        ports: (1024, 65535),
        server: SocketAddr::new(server, 80),
        connections,
        rate: None,
        schedule: None,
        concurrent: 32,
        http: vec![HttpTemplate::only(4096, requests)],
        think: Duration::ZERO,
        think_recorded: false,
        timeout: Duration::from_secs(10),
        rx_buffer: 16 * 1024,
        time_wait: Duration::from_secs(10),
        replay: None,
        timestamps: true,
        seed: 1,
    };
    let server = ServerConfig {
        addresses: Addresses {
            mac: [2, 0, 0, 0, 0, 1],
            range: Range::single(server),
            prefix_len,
            gateway: None,
            vlan: None,
            inner_vlan: None,
            outer_tpid: linerate_stateful::QINQ_TPID,
        },
        port: 80,
        default_bytes: 1,
        max_bytes: 1 << 20,
        concurrent: 512,
        send_buffer: 64 * 1024,
        timeout: Duration::from_secs(10),
        time_wait: Duration::from_secs(10),
        replay: None,
        think_recorded: false,
        timestamps: true,
        seed: 2,
    };
    (client, server)
}

/// What one end's frames show a decoder of its own (etherparse, not smoltcp): segments that
/// occupy sequence space, those sent again, and those the link dropped.
#[derive(Debug, Default)]
struct Seen {
    /// By connection (its addresses and ports): the sequence number after the highest sent.
    high: HashMap<(Ipv4Addr, u16, Ipv4Addr, u16), u32>,
    retransmitted: u64,
    dropped: u64,
}

impl Seen {
    /// Looks at one frame the end sent; `drop` says whether the link will lose it.
    fn look(&mut self, frame: &[u8], drop: impl FnOnce(Ipv4Addr, &TcpSlice) -> bool) -> bool {
        let Some((source, destination, tcp)) = ipv4_tcp(frame) else {
            return false;
        };
        let len = tcp.payload().len() as u32 + u32::from(tcp.syn()) + u32::from(tcp.fin());
        if len == 0 {
            return false;
        }
        let end = tcp.sequence_number().wrapping_add(len);
        let conn = (
            source,
            tcp.source_port(),
            destination,
            tcp.destination_port(),
        );
        let again = match self.high.get(&conn) {
            Some(&high) => {
                let again = (tcp.sequence_number().wrapping_sub(high) as i32) < 0;
                if (high.wrapping_sub(end) as i32) < 0 {
                    self.high.insert(conn, end);
                }
                again
            }
            None => {
                self.high.insert(conn, end);
                false
            }
        };
        self.retransmitted += u64::from(again);
        let dropped = drop(source, &tcp);
        self.dropped += u64::from(dropped);
        dropped
    }
}

/// A frame's IPv4 addresses and TCP segment, read by etherparse.
fn ipv4_tcp(frame: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr, TcpSlice<'_>)> {
    let packet = SlicedPacket::from_ethernet(frame).ok()?;
    let (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Tcp(tcp))) = (packet.net, packet.transport)
    else {
        return None;
    };
    Some((
        ip.header().source_addr(),
        ip.header().destination_addr(),
        tcp,
    ))
}

/// The client's address and port of a segment one end sent: its source's when the client
/// sent it, its destination's when the server did — what names its connection in a log.
fn client_end(
    from_client: bool,
    source: Ipv4Addr,
    destination: Ipv4Addr,
    tcp: &TcpSlice,
) -> (Ipv4Addr, u16) {
    if from_client {
        (source, tcp.source_port())
    } else {
        (destination, tcp.destination_port())
    }
}

type Shared = Arc<Mutex<Seen>>;

/// An end's dropper that shows the frames to `seen` and drops what `rule` picks.
fn watching(
    seen: &Shared,
    mut rule: impl FnMut(Ipv4Addr, &TcpSlice) -> bool + Send + 'static,
) -> mem::Dropper {
    let seen = seen.clone();
    Box::new(move |frame| seen.lock().unwrap().look(frame, &mut rule))
}

fn run(connections: u64, requests: u32, drop_every: u64) {
    let (client, server) = configs(connections, requests);
    run_with(client, server, drop_every);
}

fn run_with(
    client: ClientConfig,
    server: ServerConfig,
    drop_every: u64,
) -> (ClientReport, ServerReport) {
    let (a, b) = mem::pair(drop_every);
    let (report, served) = run_on(client, server, a, b);
    if drop_every > 0 {
        assert!(report.link.tx_dropped + served.link.tx_dropped > 0);
    }
    (report, served)
}

/// The client's run on `a` with the server on `b`, stopped when the client is done.
fn ends(
    client: &ClientConfig,
    server: &ServerConfig,
    a: &mut mem::MemLink,
    b: &mut mem::MemLink,
) -> (ClientReport, ServerReport) {
    let stop = AtomicBool::new(false);
    let never = AtomicBool::new(false);
    std::thread::scope(|s| {
        let srv = s.spawn(|| run_server(b, server, &stop, |_| {}).unwrap());
        let report = run_client(a, client, &never, |_| {}).unwrap();
        stop.store(true, Ordering::Relaxed);
        (report, srv.join().unwrap())
    })
}

fn run_on(
    client: ClientConfig,
    server: ServerConfig,
    mut a: mem::MemLink,
    mut b: mem::MemLink,
) -> (ClientReport, ServerReport) {
    let connections = client.connections;
    let HttpTemplate {
        requests,
        response_bytes: bytes,
        ..
    } = client.http[0];
    let (report, served) = ends(&client, &server, &mut a, &mut b);
    let c = report.counters;
    assert_eq!(c.attempted, connections, "{report:#?}");
    assert_eq!(c.established, connections, "{report:#?}");
    assert_eq!(c.closed, connections, "{report:#?}");
    assert_eq!(c.failed() + c.active() + c.connecting(), 0, "{report:#?}");
    assert_eq!(c.requests, connections * u64::from(requests));
    assert_eq!(c.responses, c.requests);
    assert_eq!(c.body_bytes, c.responses * bytes);
    let s = served.counters;
    assert_eq!(s.accepted, connections, "{served:#?}");
    assert_eq!((s.requests, s.responses), (c.requests, c.requests));
    assert_eq!(s.bad_request + s.reset + s.timeout, 0, "{served:#?}");
    (report, served)
}

#[test]
fn every_connection_of_a_clean_link_ends_closed() {
    run(300, 1, 0);
}

#[test]
fn keep_alive_connections_carry_every_request() {
    run(50, 4, 0);
}

/// A mix of three kinds — 1 KiB once (weight 2), 8 KiB twice and 100 bytes once (weight 1
/// each): 400 connections take 200, 100 and 100 of them, each kind's connections, requests,
/// responses and body bytes exact and adding up to the run's, every body byte checked; the
/// server answered each request with the size it asked.
#[test]
fn a_mix_of_kinds_takes_each_its_share_and_counts_it() {
    let (mut client, server) = configs(400, 1);
    let kind = |response_bytes, requests, weight| HttpTemplate {
        response_bytes,
        requests,
        weight,
    };
    client.http = vec![kind(1024, 1, 2), kind(8192, 2, 1), kind(100, 1, 1)];
    let (mut a, mut b) = mem::pair(0);
    let (report, served) = ends(&client, &server, &mut a, &mut b);
    let names: Vec<&str> = report.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["1024x1", "8192x2", "100x1"]);
    // (connections, responses, body bytes) of each kind.
    let want = [
        (200, 200, 200 * 1024),
        (100, 200, 200 * 8192),
        (100, 100, 100 * 100),
    ];
    for (t, (n, responses, bytes)) in report.templates.iter().zip(want) {
        let c = t.counters;
        assert_eq!((c.attempted, c.established, c.closed), (n, n, n), "{t:#?}");
        assert_eq!(
            (c.requests, c.responses, c.body_bytes),
            (responses, responses, bytes),
            "{t:#?}"
        );
        assert_eq!(c.failed() + c.active() + c.connecting(), 0, "{t:#?}");
        assert_eq!(t.response_time.count, responses, "{t:#?}");
    }
    let c = report.counters;
    assert_eq!((c.attempted, c.closed), (400, 400), "{report:#?}");
    assert_eq!((c.responses, c.body_bytes), (500, 1_853_200), "{report:#?}");
    assert_eq!(report.response_time.count, 500);
    let s = served.counters;
    assert_eq!(
        (s.accepted, s.responses, s.body_bytes),
        (400, 500, 1_853_200)
    );
    assert_eq!(s.bad_request + s.reset + s.timeout, 0, "{served:#?}");
}

#[test]
fn a_link_that_drops_one_frame_in_fifty_loses_no_transfer() {
    run(200, 1, 50);
}

#[test]
fn ipv6_ends_carry_every_transfer_clean_and_through_loss() {
    // Fifteen client addresses of a /124 and the server on one /64: neighbour discovery both
    // ways (the client's solicitations for the server teach it every client address), then
    // the same exact counts as IPv4's, clean and losing one frame in 50.
    for drop_every in [0, 50] {
        let (client, server) = configs_on(
            "2001:db8::1".parse().unwrap(),
            "2001:db8:0:0:1::/124",
            64,
            200,
            2,
        );
        run_with(client, server, drop_every);
    }
}

#[test]
fn a_think_time_longer_than_the_timeout_is_no_stall() {
    // The timeout runs from the last move: a connection idle by design (thinking) is not
    // stalled, and its next request's wait starts when it is sent.
    let (mut client, server) = configs(20, 2);
    client.think = Duration::from_millis(300);
    client.timeout = Duration::from_millis(200);
    run_with(client, server, 0);
}

#[test]
fn each_lost_syn_and_request_is_one_retransmission() {
    // The client's first SYN and first request of every connection are lost: each is sent
    // once more after the retransmission timeout, and nothing else is.
    let n = 20;
    let (client, server) = configs(n, 1);
    let (client_seen, server_seen) = (Shared::default(), Shared::default());
    let mut lost: HashSet<(Ipv4Addr, u16, bool)> = HashSet::new();
    let a = watching(&client_seen, move |source, tcp| {
        let what = if tcp.syn() {
            Some(false)
        } else if !tcp.payload().is_empty() {
            Some(true)
        } else {
            None
        };
        what.is_some_and(|request| lost.insert((source, tcp.source_port(), request)))
    });
    let b = watching(&server_seen, |_, _| false);
    let (a, b) = mem::pair_dropping(a, b);
    let (report, served) = run_on(client, server, a, b);
    assert_eq!(client_seen.lock().unwrap().dropped, 2 * n);
    assert_eq!(report.counters.retransmitted, 2 * n, "{report:#?}");
    assert_eq!(client_seen.lock().unwrap().retransmitted, 2 * n);
    assert_eq!(served.counters.retransmitted, 0, "{served:#?}");
    assert_eq!(server_seen.lock().unwrap().retransmitted, 0);
    // Round trips timed: a retransmitted segment is never (Karn), each handshake's ACK
    // and FIN are; a round trip over joined queues is well under the 1 s a resend waits.
    assert!(report.rtt.count >= n, "{report:#?}");
    assert!(report.rtt.p99_us < 500_000.0, "{report:#?}");
    assert!(served.rtt.count >= n, "{served:#?}");
}

#[test]
fn a_syn_sent_again_finds_its_connection_past_a_free_listener() {
    // The second connection's first two SYN-ACKs are lost, so its client sends the SYN again
    // while the first connection (thinking 300 ms, then done) has left the slot before it
    // listening. smoltcp offers a frame to a shard's sockets in order and a listener accepts
    // any SYN: that SYN must still reach its own slot, not open a second connection whose
    // reset ends the first.
    let (mut client, mut server) = configs(2, 2);
    client.concurrent = 2;
    // Who closes first: the server, whose slot listens again at once without TIME-WAIT.
    server.time_wait = Duration::ZERO;
    client.think = Duration::from_millis(300);
    let mut first: Option<Ipv4Addr> = None;
    let mut lost = 0;
    let b = Box::new(move |frame: &[u8]| {
        let Some((_, to, tcp)) = ipv4_tcp(frame) else {
            return false;
        };
        if !(tcp.syn() && tcp.ack()) || *first.get_or_insert(to) == to || lost == 2 {
            return false;
        }
        lost += 1;
        true
    });
    let (a, b) = mem::pair_dropping(Box::new(|_| false), b);
    let (report, served) = run_on(client, server, a, b);
    assert_eq!(served.link.tx_dropped, 2, "{served:#?}");
    assert!(
        report.counters.retransmitted >= 1,
        "the SYN was sent again: {report:#?}"
    );
}

#[test]
fn retransmissions_are_counted_as_a_decoder_of_the_frames_counts_them() {
    // Every 15th segment with data, SYN or FIN lost both ways: each end's count of what it
    // sent again is what etherparse reads off its frames, and each lost segment was sent again.
    let (mut client, mut server) = configs(100, 2);
    // A segment lost three times running waits 1 + 2 + 4 s for TCP's backoff: both ends get
    // the replay test's 30 s, not a server's 10 s (a full run saw the server give up once).
    client.timeout = Duration::from_secs(30);
    server.timeout = Duration::from_secs(30);
    let (client_seen, server_seen) = (Shared::default(), Shared::default());
    let every = |k: u64| {
        let mut seen = 0u64;
        move |_: Ipv4Addr, _: &TcpSlice| {
            seen += 1;
            seen.is_multiple_of(k)
        }
    };
    let (a, b) = mem::pair_dropping(
        watching(&client_seen, every(15)),
        watching(&server_seen, every(15)),
    );
    let (report, served) = run_on(client, server, a, b);
    let (cs, ss) = (client_seen.lock().unwrap(), server_seen.lock().unwrap());
    assert!(cs.dropped > 0 && ss.dropped > 0, "{cs:?} {ss:?}");
    assert_eq!(
        report.counters.retransmitted, cs.retransmitted,
        "{report:#?}"
    );
    assert_eq!(
        served.counters.retransmitted, ss.retransmitted,
        "{served:#?}"
    );
    assert!(cs.retransmitted >= cs.dropped, "{cs:?}");
    assert!(ss.retransmitted >= ss.dropped, "{ss:?}");
}

/// A conversation of four turns: the server's banner first, a long answer (many segments), and
/// the client's last word; `server_closes` says who sends the first FIN.
fn recording(server_closes: bool) -> Recording {
    let turn = |from_client: bool, bytes: Vec<u8>| Turn {
        from_client,
        bytes,
        pause: Duration::ZERO,
    };
    Recording {
        turns: vec![
            turn(false, b"220 hello\r\n".to_vec()),
            turn(true, b"GET /a long request\r\n".repeat(20)),
            turn(false, (0..50_000u32).map(|i| (i * 7 % 256) as u8).collect()),
            turn(true, b"QUIT\r\n".to_vec()),
        ],
        server_closes,
        client: "10.9.0.2:40000".parse().unwrap(),
        server: "10.9.0.1:25".parse().unwrap(),
    }
}

/// A replay of 100 connections over links that lose every `drop_every`-th frame each way;
/// with the reports, the RSTs each end sent.
fn replay_run(
    rec: Recording,
    server_rec: Recording,
    drop_every: u64,
) -> (ClientReport, ServerReport, [u64; 2]) {
    let (client, server) = replay_configs(100, rec, server_rec);
    let resets: [Arc<AtomicU64>; 2] = Default::default();
    let lossy = |resets: Arc<AtomicU64>| -> mem::Dropper {
        let mut sent = 0u64;
        Box::new(move |frame: &[u8]| {
            if ipv4_tcp(frame).is_some_and(|(_, _, tcp)| tcp.rst()) {
                resets.fetch_add(1, Ordering::Relaxed);
            }
            sent += 1;
            drop_every > 0 && sent.is_multiple_of(drop_every)
        })
    };
    let (mut a, mut b) = mem::pair_dropping(lossy(resets[0].clone()), lossy(resets[1].clone()));
    let (report, served) = ends(&client, &server, &mut a, &mut b);
    let resets = resets.map(|r| r.load(Ordering::Relaxed));
    (report, served, resets)
}

/// Both ends replaying: `n` connections, the client `rec`'s, the server `server_rec`'s.
fn replay_configs(n: u64, rec: Recording, server_rec: Recording) -> (ClientConfig, ServerConfig) {
    let (mut client, mut server) = configs(n, 1);
    // One segment lost three times running waits 1 + 2 + 4 s for its retransmissions, past
    // an end's 10 s timeout from its last move: a lossy run needs the longer one.
    client.timeout = Duration::from_secs(30);
    server.timeout = Duration::from_secs(30);
    // The recording's client closes first, so each slot would sit out TIME-WAIT's 10 s.
    client.time_wait = Duration::ZERO;
    let replay = |r: Recording| Replay {
        recording: Arc::new(r),
        check: Check::Bytes,
    };
    client.replay = Some(replay(rec));
    server.replay = Some(replay(server_rec));
    (client, server)
}

#[test]
fn a_replay_waits_the_pauses_the_capture_shows_before_each_turn() {
    // The client's request waits 200 ms after the server's banner and its last word 500 ms
    // after the answer, and the server's answer 300 ms after the request, as recorded. Each
    // wait is read off the frames as they leave: from one side's last data segment to the
    // other's next one.
    let mut rec = recording(false);
    rec.turns[1].pause = Duration::from_millis(200);
    rec.turns[2].pause = Duration::from_millis(300);
    rec.turns[3].pause = Duration::from_millis(500);
    let n = 32;
    let (mut client, mut server) = replay_configs(n, rec.clone(), rec);
    client.think_recorded = true;
    server.think_recorded = true;
    type Sent = Arc<Mutex<HashMap<(Ipv4Addr, u16), Vec<(bool, std::time::Instant)>>>>;
    let sent: Sent = Arc::default();
    let log = |from_client: bool| -> mem::Dropper {
        let sent = sent.clone();
        Box::new(move |frame: &[u8]| {
            if let Some((source, destination, tcp)) = ipv4_tcp(frame)
                && !tcp.payload().is_empty()
            {
                let conn = client_end(from_client, source, destination, &tcp);
                let at = std::time::Instant::now();
                sent.lock()
                    .unwrap()
                    .entry(conn)
                    .or_default()
                    .push((from_client, at));
            }
            false
        })
    };
    let (mut a, mut b) = mem::pair_dropping(log(true), log(false));
    let (report, served) = ends(&client, &server, &mut a, &mut b);
    assert_eq!(report.counters.closed, n, "{report:#?}");
    assert_eq!(served.counters.closed, n, "{served:#?}");
    let sent = sent.lock().unwrap();
    assert_eq!(sent.len() as u64, n);
    for (conn, segments) in sent.iter() {
        // The client's waits: each time it speaks after the server has.
        let waits: Vec<Duration> = segments
            .windows(2)
            .filter(|w| !w[0].0 && w[1].0)
            .map(|w| w[1].1 - w[0].1)
            .collect();
        assert_eq!(waits.len(), 2, "{conn:?}: {segments:?}");
        // An end's wait runs from its clock's reading at the top of the pass of its loop that
        // read the other's turn, which may come before that turn's last frame was sent: a
        // pass of a debug build over 32 connections' frames takes milliseconds (CI saw a wait
        // 4.4 ms under 500 ms). 25 ms of slack, against waits of 200-500 ms where none would
        // be microseconds.
        let slack = Duration::from_millis(25);
        assert!(
            waits[0] + slack >= Duration::from_millis(200),
            "{conn:?}: {waits:?}"
        );
        assert!(
            waits[1] + slack >= Duration::from_millis(500),
            "{conn:?}: {waits:?}"
        );
        let answers: Vec<Duration> = segments
            .windows(2)
            .filter(|w| w[0].0 && !w[1].0)
            .map(|w| w[1].1 - w[0].1)
            .collect();
        assert_eq!(answers.len(), 1, "{conn:?}: {segments:?}");
        assert!(
            answers[0] + slack >= Duration::from_millis(300),
            "{conn:?}: {answers:?}"
        );
    }
}

#[test]
fn a_recorded_conversation_replays_turn_by_turn_both_ways() {
    // Lossy: one frame in 40 each way, under the 50,000-byte answer's many segments and every
    // handshake's (a SYN sent again must find its own slot: see the test above).
    for (server_closes, drop_every) in [(false, 0), (true, 0), (false, 40), (true, 40)] {
        let rec = recording(server_closes);
        let (to_server, to_client) = rec.bytes();
        let (report, served, resets) = replay_run(rec.clone(), rec, drop_every);
        let (c, s) = (report.counters, served.counters);
        let n = 100;
        assert_eq!(
            (c.attempted, c.established, c.closed),
            (n, n, n),
            "{report:#?}"
        );
        assert_eq!(c.failed() + c.ended() - c.closed, 0, "{report:#?}");
        // Two turns each way a connection, every byte the recording's.
        assert_eq!((c.requests, c.responses), (2 * n, 2 * n), "{report:#?}");
        assert_eq!(c.body_bytes, n * to_client);
        assert_eq!((s.accepted, s.closed), (n, n), "{served:#?}");
        assert_eq!((s.requests, s.responses), (2 * n, 2 * n), "{served:#?}");
        assert_eq!(s.bad_request + s.reset + s.timeout, 0, "{served:#?}");
        assert_eq!(s.body_bytes, n * to_client);
        assert!(to_server > 0);
        // The end that closed first takes its slot back from TIME-WAIT at once (the client,
        // --time-wait 0) or keeps it (the server, 10 s): neither sends an RST on a clean link.
        if drop_every == 0 {
            assert_eq!(resets, [0, 0], "RSTs sent by the client and the server");
        }
    }
}

#[test]
fn a_server_that_answers_other_bytes_is_a_bad_response() {
    let mut other = recording(false);
    other.turns[2].bytes[30_000] ^= 1;
    let (report, _, _) = replay_run(recording(false), other, 0);
    let c = report.counters;
    assert_eq!(c.closed_bad_response, 100, "{report:#?}");
    assert_eq!(c.responses, 100, "only the banners were right: {report:#?}");
}

#[test]
fn a_clean_connection_is_seven_segments_as_a_kernel_clients_is() {
    // The client's SYN, its ACK of the SYN-ACK, its request, and its FIN carrying the
    // acknowledgement of the response; the server's SYN-ACK, its response with its FIN, and
    // the last ACK: seven segments a connection, each a frame a DUT forwards — what curl and
    // nginx exchange. The ACK could ride on the request (six), but a kernel client sends it on
    // its own, and the handshake then completes at the server even when the request is lost.
    // The server's TIME-WAIT cut to nothing (as the benchmark runs it) is forgotten without a
    // segment: no RST either.
    let n = 50;
    let (mut client, mut server) = configs(n, 1);
    client.http = vec![HttpTemplate::only(1024, 1)];
    server.time_wait = Duration::ZERO;
    type Log = Arc<Mutex<HashMap<(Ipv4Addr, u16), Vec<String>>>>;
    let log: Log = Arc::default();
    let logging = |from_client: bool| -> mem::Dropper {
        let log = log.clone();
        Box::new(move |frame: &[u8]| {
            let Some((source, destination, tcp)) = ipv4_tcp(frame) else {
                return false;
            };
            let key = client_end(from_client, source, destination, &tcp);
            let mut what = String::from(if from_client { "client " } else { "server " });
            for (set, flag) in [
                (tcp.syn(), "SYN "),
                (tcp.ack(), "ACK "),
                (tcp.fin(), "FIN "),
                (tcp.rst(), "RST "),
            ] {
                if set {
                    what.push_str(flag);
                }
            }
            if !tcp.payload().is_empty() {
                what.push_str("data");
            }
            log.lock()
                .unwrap()
                .entry(key)
                .or_default()
                .push(what.trim_end().to_owned());
            false
        })
    };
    let (a, b) = mem::pair_dropping(logging(true), logging(false));
    let (report, served) = run_on(client, server, a, b);
    assert_eq!(report.counters.closed, n, "{report:#?}");
    assert_eq!(served.counters.closed, n, "{served:#?}");
    let log = log.lock().unwrap();
    assert_eq!(log.len() as u64, n);
    for (conn, segments) in log.iter() {
        let mine = |who: &str| -> Vec<&str> {
            segments
                .iter()
                .filter_map(|s| s.strip_prefix(who))
                .collect()
        };
        assert_eq!(
            mine("client "),
            ["SYN", "ACK", "ACK data", "ACK FIN"],
            "{conn:?}: {segments:?}"
        );
        assert_eq!(
            mine("server "),
            ["SYN ACK", "ACK FIN data", "ACK"],
            "{conn:?}: {segments:?}"
        );
    }
}
