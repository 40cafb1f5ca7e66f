//! An application profile taken from a capture of one real TCP session, TRex ASTF's way: what
//! the client sent and what the server answered, in turns, as the two byte streams carried
//! them. A client replays the client's turns and reads the server's; a server the other way.
//! Segment boundaries, timing and addresses are not kept: the turns are the application's
//! conversation, and each replayed connection is a new one of this machine's TCP.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

use crate::StatefulError;

/// One turn of the conversation: the bytes one side sent before the other answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub from_client: bool,
    pub bytes: Vec<u8>,
    /// How long the side waited before the turn, as captured: from the other side's last
    /// segment before it to the turn's first byte (a user's think time, a server's work; from
    /// a capture on the client's host, a server's turn adds the round trip).
    pub pause: std::time::Duration,
}

/// The conversation of one TCP session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    pub turns: Vec<Turn>,
    /// Whether the server sent the first FIN (an HTTP/1.0 server, `Connection: close`): a
    /// replaying server closes after its last turn; else it waits for the client's FIN.
    pub server_closes: bool,
    /// The ends as captured, for the report.
    pub client: SocketAddr,
    pub server: SocketAddr,
}

/// How a replaying end checks what the other sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Check {
    /// Every byte as recorded: linerate at both ends.
    #[default]
    Bytes,
    /// The recorded number of bytes, whatever they are: a real server whose answers carry a
    /// date, a real client whose requests carry its own name.
    Lengths,
}

/// A recording and how it is checked: a client's or server's profile.
#[derive(Debug, Clone)]
pub struct Replay {
    pub recording: std::sync::Arc<Recording>,
    pub check: Check,
}

/// The most bytes a recording holds, both sides together: each turn is kept in memory once
/// and sent from there by every connection.
const MOST: usize = 64 << 20;

impl Recording {
    /// Reads the first TCP session of the capture file at `path`.
    pub fn read(path: &Path) -> Result<Recording, StatefulError> {
        let bytes = std::fs::read(path)
            .map_err(|e| StatefulError::Usage(format!("the profile {}: {e}", path.display())))?;
        Recording::parse(&bytes)
            .map_err(|why| StatefulError::Usage(format!("the profile {}: {why}", path.display())))
    }

    /// The first TCP session of a capture (pcap or pcapng, Ethernet) held in memory: the one
    /// whose SYN comes first. The error is the reason, without the path.
    pub fn parse(file: &[u8]) -> Result<Recording, String> {
        // GRO on a capturing host hands up segments far over the MTU: take them whole.
        let capture = linerate_stream::Capture::parse(file, 256 * 1024)?;
        let frames = capture
            .frames
            .loaded()
            .ok_or("the capture was not loaded")?;
        let mut session: Option<Session> = None;
        for (frame, &at_ns) in frames.iter().zip(&capture.times_ns) {
            let Some(mut seg) = segment(frame) else {
                continue;
            };
            seg.at_ns = at_ns;
            let Some(s) = &mut session else {
                if seg.syn && !seg.ack {
                    session = Some(Session::new(&seg));
                }
                continue;
            };
            if s.take(&seg)? {
                break;
            }
        }
        let s = session.ok_or(
            "no TCP handshake in it: capture from before the connection opens (its SYN), e.g. tcpdump -w FILE 'tcp port 80'",
        )?;
        if s.turns.is_empty() {
            return Err(format!(
                "the session {} → {} carries no data: nothing to replay",
                s.client, s.server
            ));
        }
        Ok(Recording {
            turns: s.turns,
            server_closes: s.first_fin == Some(false),
            client: s.client,
            server: s.server,
        })
    }

    /// Bytes the client sends and the server sends, in all.
    pub fn bytes(&self) -> (u64, u64) {
        self.turns.iter().fold((0, 0), |(c, s), t| {
            let n = t.bytes.len() as u64;
            if t.from_client {
                (c + n, s)
            } else {
                (c, s + n)
            }
        })
    }
}

/// A TCP segment of the capture, as far as the conversation needs.
struct Segment<'a> {
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    syn: bool,
    ack: bool,
    fin: bool,
    rst: bool,
    payload: &'a [u8],
    /// When it was captured, from the capture's first frame.
    at_ns: u64,
}

fn segment(frame: &[u8]) -> Option<Segment<'_>> {
    let packet = SlicedPacket::from_ethernet(frame).ok()?;
    let (src, dst): (IpAddr, IpAddr) = match &packet.net {
        Some(NetSlice::Ipv4(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
        ),
        Some(NetSlice::Ipv6(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
        ),
        _ => return None,
    };
    let Some(TransportSlice::Tcp(tcp)) = &packet.transport else {
        return None;
    };
    Some(Segment {
        src: SocketAddr::new(src, tcp.source_port()),
        dst: SocketAddr::new(dst, tcp.destination_port()),
        seq: tcp.sequence_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload: tcp.payload(),
        at_ns: 0,
    })
}

/// A session being read: each direction's next sequence number and the turns so far.
struct Session {
    client: SocketAddr,
    server: SocketAddr,
    /// The next byte expected from the client, and from the server (None before its SYN-ACK).
    next: [Option<u32>; 2],
    turns: Vec<Turn>,
    bytes: usize,
    /// Which side's FIN came first: true the client's.
    first_fin: Option<bool>,
    /// When the client's last segment was captured, and the server's.
    last_at_ns: [u64; 2],
}

impl Session {
    fn new(syn: &Segment) -> Session {
        Session {
            client: syn.src,
            server: syn.dst,
            next: [Some(syn.seq.wrapping_add(1)), None],
            turns: Vec::new(),
            bytes: 0,
            first_fin: None,
            last_at_ns: [syn.at_ns, 0],
        }
    }

    /// Takes one segment; true when the session is over (both FINs, or a reset).
    fn take(&mut self, seg: &Segment) -> Result<bool, String> {
        let from_client = if (seg.src, seg.dst) == (self.client, self.server) {
            true
        } else if (seg.src, seg.dst) == (self.server, self.client) {
            false
        } else {
            return Ok(false);
        };
        if seg.rst {
            return Ok(true);
        }
        let side = usize::from(!from_client);
        let other_last_at = self.last_at_ns[usize::from(from_client)];
        self.last_at_ns[side] = seg.at_ns;
        if seg.syn {
            // The server's SYN-ACK starts its stream; a SYN sent again changes nothing.
            if !from_client {
                self.next[1] = Some(seg.seq.wrapping_add(1));
            }
            return Ok(false);
        }
        let Some(next) = self.next[side] else {
            return Err(format!(
                "{} sent before the handshake was seen whole: capture the session from its start",
                who(from_client)
            ));
        };
        let len = seg.payload.len() as u32;
        let end = seg.seq.wrapping_add(len);
        if len > 0 {
            if before(next, seg.seq) {
                return Err(format!(
                    "the capture lacks {} bytes of the {}'s stream before sequence number {} (dropped by the capture, or out of order): capture the session whole, on an end host",
                    seg.seq.wrapping_sub(next),
                    who(from_client),
                    seg.seq
                ));
            }
            if before(next, end) {
                // A retransmission that overlaps what came before adds only what is new.
                let new = &seg.payload[next.wrapping_sub(seg.seq) as usize..];
                self.bytes += new.len();
                if self.bytes > MOST {
                    return Err(format!(
                        "over {} MiB of data: a profile is kept in memory",
                        MOST >> 20
                    ));
                }
                match self.turns.last_mut() {
                    Some(t) if t.from_client == from_client => t.bytes.extend_from_slice(new),
                    _ => self.turns.push(Turn {
                        from_client,
                        bytes: new.to_vec(),
                        pause: std::time::Duration::from_nanos(
                            seg.at_ns.saturating_sub(other_last_at),
                        ),
                    }),
                }
                self.next[side] = Some(end);
            }
        }
        if seg.fin {
            self.first_fin.get_or_insert(from_client);
            self.next[side] = Some(end.wrapping_add(1));
            // Both FINs: the conversation is over.
            let other = usize::from(from_client);
            if self.first_fin != Some(from_client) && self.next[other].is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn who(from_client: bool) -> &'static str {
    if from_client { "client" } else { "server" }
}

/// Whether sequence number `a` comes before `b`.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};

    const CLIENT: ([u8; 4], u16) = ([10, 0, 0, 2], 40000);
    const SERVER: ([u8; 4], u16) = ([10, 0, 0, 1], 80);

    /// A segment as an Ethernet frame: from the client when `c`, flags "S", "SA", "F", "R" or
    /// "" (an ACK).
    fn frame(c: bool, seq: u32, flags: &str, payload: &[u8]) -> Vec<u8> {
        let ((src, sport), (dst, dport)) = if c {
            (CLIENT, SERVER)
        } else {
            (SERVER, CLIENT)
        };
        let mut b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4(src, dst, 64)
            .tcp(sport, dport, seq, 65535);
        if flags.contains('S') {
            b = b.syn();
        }
        if flags.contains('F') {
            b = b.fin();
        }
        if flags.contains('R') {
            b = b.rst();
        }
        if flags != "S" {
            b = b.ack(1);
        }
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    /// A capture of `frames`, one a millisecond.
    fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
        let timed: Vec<(u64, Vec<u8>)> = (0..).zip(frames.iter().cloned()).collect();
        pcap_at(&timed)
    }

    /// A capture of frames each at its millisecond.
    fn pcap_at(frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut w = PcapWriter::with_header(Vec::new(), PcapHeader::default()).unwrap();
        for (ms, f) in frames {
            w.write_packet(&PcapPacket::new(
                std::time::Duration::from_millis(*ms),
                f.len() as u32,
                f,
            ))
            .unwrap();
        }
        w.into_writer()
    }

    #[test]
    fn turns_follow_the_streams_not_the_segments() {
        // A request in two segments, one sent again; a response in two; a last word each way;
        // the server's FIN first.
        let (c, s) = (1000u32, 5000u32);
        let file = pcap(&[
            frame(true, c, "S", b""),
            frame(false, s, "SA", b""),
            frame(true, c + 1, "", b"GET / HT"),
            frame(true, c + 1, "", b"GET / HT"),
            frame(true, c + 9, "", b"TP/1.1\r\n\r\n"),
            frame(false, s + 1, "", b"HTTP/1.1 200 OK\r\n"),
            frame(false, s + 18, "", b"\r\nbody"),
            frame(true, c + 19, "", b"more"),
            frame(false, s + 24, "F", b"bye"),
            frame(true, c + 23, "F", b""),
            frame(true, c + 24, "", b"after the end"),
        ]);
        let r = Recording::parse(&file).unwrap();
        let turns: Vec<(bool, &[u8])> = r
            .turns
            .iter()
            .map(|t| (t.from_client, &t.bytes[..]))
            .collect();
        assert_eq!(
            turns,
            [
                (true, &b"GET / HTTP/1.1\r\n\r\n"[..]),
                (false, b"HTTP/1.1 200 OK\r\n\r\nbody"),
                (true, b"more"),
                (false, b"bye"),
            ]
        );
        assert!(r.server_closes);
        assert_eq!(r.client.to_string(), "10.0.0.2:40000");
        assert_eq!(r.bytes(), (22, 26));
    }

    #[test]
    fn each_turn_keeps_the_pause_before_it_from_the_other_sides_last_segment() {
        // The client asks 3 ms after the SYN-ACK, the server answers in two segments 20 ms
        // after the request's last one (the client's ACKs of the answer do not move it), and
        // the client thinks 500 ms before asking again, past its own ACK in between.
        let (c, s) = (1000u32, 5000u32);
        let file = pcap_at(&[
            (0, frame(true, c, "S", b"")),
            (1, frame(false, s, "SA", b"")),
            (2, frame(true, c + 1, "", b"")),
            (4, frame(true, c + 1, "", b"GET /a")),
            (5, frame(true, c + 7, "", b" HTTP/1.1\r\n\r\n")),
            (25, frame(false, s + 1, "", b"HTTP/1.1 200 OK\r\n")),
            (26, frame(true, c + 20, "", b"")),
            (27, frame(false, s + 18, "", b"\r\nbody")),
            (28, frame(true, c + 20, "", b"")),
            (528, frame(true, c + 20, "", b"GET /b")),
            (530, frame(false, s + 24, "F", b"bye")),
            (531, frame(true, c + 26, "F", b"")),
        ]);
        let r = Recording::parse(&file).unwrap();
        let pauses: Vec<(bool, u64)> = r
            .turns
            .iter()
            .map(|t| (t.from_client, t.pause.as_millis() as u64))
            .collect();
        assert_eq!(pauses, [(true, 3), (false, 20), (true, 501), (false, 2)]);
    }

    #[test]
    fn a_capture_that_lost_bytes_or_has_no_session_is_refused() {
        let file = pcap(&[
            frame(true, 1, "S", b""),
            frame(false, 9, "SA", b""),
            frame(true, 12, "", b"late"),
        ]);
        let e = Recording::parse(&file).unwrap_err();
        assert!(e.contains("lacks 10 bytes of the client's stream"), "{e}");
        let e = Recording::parse(&pcap(&[frame(true, 5, "", b"data")])).unwrap_err();
        assert!(e.contains("no TCP handshake"), "{e}");
        let e = Recording::parse(&pcap(&[
            frame(true, 1, "S", b""),
            frame(false, 9, "SA", b""),
        ]))
        .unwrap_err();
        assert!(e.contains("carries no data"), "{e}");
        let e = Recording::parse(b"not a capture at all").unwrap_err();
        assert!(!e.is_empty());
    }
}
