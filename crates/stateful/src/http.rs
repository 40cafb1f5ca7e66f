//! The HTTP/1.1 application profile: a GET for `/<bytes>`, a response of that many body bytes in
//! a pattern both ends know, and the incremental readers that check them. Nothing here does I/O.

/// The byte at `offset` of every response body: a cycle of 251 (a prime, so no power-of-two
/// buffer or segment size lines up with it) that a lost, doubled or shifted range breaks.
pub fn body_byte(offset: u64) -> u8 {
    (offset % 251) as u8
}

/// `len` bytes of the body pattern, as a server writes them (and the lab's nginx serves them
/// from a file).
pub fn body(len: usize) -> Vec<u8> {
    (0..len as u64).map(body_byte).collect()
}

/// The pattern 64 cycles long: a body is copied from it and compared against it a slice at a
/// time, not a byte at a time.
const PERIOD: usize = 251;
static PATTERN: [u8; PERIOD * 64] = {
    let mut p = [0u8; PERIOD * 64];
    let mut i = 0;
    while i < p.len() {
        p[i] = (i % PERIOD) as u8;
        i += 1;
    }
    p
};

/// Writes the pattern's bytes from body offset `offset` into `buf`.
pub fn fill_body(buf: &mut [u8], offset: u64) {
    let mut at = (offset % PERIOD as u64) as usize;
    for chunk in buf.chunks_mut(PATTERN.len() - PERIOD) {
        chunk.copy_from_slice(&PATTERN[at..at + chunk.len()]);
        at = (at + chunk.len()) % PERIOD;
    }
}

/// The offset within `data` of its first byte off the pattern, `data` being the body from
/// offset `offset`; None when every byte is right.
pub fn first_wrong(data: &[u8], offset: u64) -> Option<usize> {
    let mut at = (offset % PERIOD as u64) as usize;
    let mut done = 0;
    for chunk in data.chunks(PATTERN.len() - PERIOD) {
        if chunk != &PATTERN[at..at + chunk.len()] {
            let i = chunk.iter().zip(&PATTERN[at..]).position(|(a, b)| a != b)?;
            return Some(done + i);
        }
        done += chunk.len();
        at = (at + chunk.len()) % PERIOD;
    }
    None
}

/// The request a client sends for a `len`-byte response; `last` asks the server to close after
/// answering, so the server closes first and holds TIME_WAIT, as a web server does.
pub fn request(host: &str, len: u64, last: bool) -> String {
    let connection = if last { "close" } else { "keep-alive" };
    format!(
        "GET /{len} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: linerate\r\nConnection: {connection}\r\n\r\n"
    )
}

/// Why a response was not the one asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadResponse {
    /// Not `HTTP/1.x 200`.
    Status(String),
    /// No Content-Length, or a length other than the one asked for.
    Length { expected: u64, got: Option<u64> },
    /// A body byte off the pattern.
    Body { offset: u64 },
    /// A head longer than [`MAX_HEAD`] without its blank line.
    HeadTooLong,
}

impl std::fmt::Display for BadResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadResponse::Status(line) => write!(f, "status line {line:?}"),
            BadResponse::Length { expected, got } => {
                write!(f, "Content-Length {got:?}, {expected} asked")
            }
            BadResponse::Body { offset } => write!(f, "body byte {offset} off the pattern"),
            BadResponse::HeadTooLong => write!(f, "a head of more than {MAX_HEAD} bytes"),
        }
    }
}

/// The longest request or response head either side reads.
pub const MAX_HEAD: usize = 4096;

/// Reads one response as it arrives in pieces: the head, then exactly `expected` body bytes,
/// each checked against the pattern. Reused connection after connection (no allocation after
/// the first head).
#[derive(Debug)]
pub struct ResponseReader {
    expected: u64,
    head: Vec<u8>,
    body: Option<u64>,
}

/// What a piece of a response did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// More to come; `body` bytes of the body were in this piece.
    More { body: u64 },
    /// The response ended in this piece: `used` bytes of it were the response's, `body` of
    /// them body bytes.
    Done { used: usize, body: u64 },
}

impl ResponseReader {
    pub fn new(expected: u64) -> Self {
        ResponseReader {
            expected,
            head: Vec::with_capacity(512),
            body: None,
        }
    }

    /// The body bytes the response is to carry.
    pub fn expected(&self) -> u64 {
        self.expected
    }

    /// Starts the next response.
    pub fn reset(&mut self, expected: u64) {
        self.expected = expected;
        self.head.clear();
        self.body = None;
    }

    /// Takes the next bytes of the stream.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, BadResponse> {
        let mut used = 0;
        if self.body.is_none() {
            // The head's end may straddle pieces: look from three bytes before this one.
            let from = self.head.len().saturating_sub(3);
            let take = data
                .len()
                .min(MAX_HEAD + 4 - self.head.len().min(MAX_HEAD + 4));
            self.head.extend_from_slice(&data[..take]);
            let Some(end) = find(&self.head[from..], b"\r\n\r\n").map(|i| from + i + 4) else {
                if self.head.len() > MAX_HEAD {
                    return Err(BadResponse::HeadTooLong);
                }
                return Ok(Progress::More { body: 0 });
            };
            used = end - (self.head.len() - take);
            self.check_head(end)?;
            self.body = Some(0);
        }
        let done = self.body.unwrap_or(0);
        let want = (self.expected - done) as usize;
        let piece = &data[used..(used + want).min(data.len())];
        if let Some(i) = first_wrong(piece, done) {
            return Err(BadResponse::Body {
                offset: done + i as u64,
            });
        }
        let body = piece.len() as u64;
        self.body = Some(done + body);
        if done + body == self.expected {
            Ok(Progress::Done {
                used: used + piece.len(),
                body,
            })
        } else {
            Ok(Progress::More { body })
        }
    }

    fn check_head(&self, end: usize) -> Result<(), BadResponse> {
        let head = String::from_utf8_lossy(&self.head[..end]);
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap_or_default();
        let mut words = status.split(' ');
        let ok =
            matches!(words.next(), Some("HTTP/1.1" | "HTTP/1.0")) && words.next() == Some("200");
        if !ok {
            return Err(BadResponse::Status(status.to_owned()));
        }
        let length = lines.find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<u64>().ok())
                .flatten()
        });
        if length != Some(self.expected) {
            return Err(BadResponse::Length {
                expected: self.expected,
                got: length,
            });
        }
        Ok(())
    }
}

/// A request as a server reads it: the body size it asks for and whether it asks to close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The response's body bytes: the path's number, else the server's default.
    pub len: u64,
    /// `Connection: close`, or HTTP/1.0 without keep-alive.
    pub close: bool,
    /// Bytes of the stream the head took.
    pub used: usize,
}

/// Looks for a whole request head at the start of `data`; None while it is incomplete.
pub fn parse_request(data: &[u8], default_len: u64) -> Result<Option<Request>, BadRequest> {
    let Some(end) = find(data, b"\r\n\r\n").map(|i| i + 4) else {
        return if data.len() > MAX_HEAD {
            Err(BadRequest)
        } else {
            Ok(None)
        };
    };
    let head = std::str::from_utf8(&data[..end]).map_err(|_| BadRequest)?;
    let mut lines = head.split("\r\n");
    let mut words = lines.next().unwrap_or_default().split(' ');
    let (Some("GET"), Some(path), Some(version)) = (words.next(), words.next(), words.next())
    else {
        return Err(BadRequest);
    };
    let len = match path.trim_start_matches('/') {
        "" => default_len,
        n => n.parse().map_err(|_| BadRequest)?,
    };
    let connection = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("connection")
            .then(|| value.trim().to_ascii_lowercase())
    });
    let close = match (version, connection.as_deref()) {
        (_, Some("close")) => true,
        ("HTTP/1.0", Some("keep-alive")) => false,
        ("HTTP/1.0", _) => true,
        _ => false,
    };
    Ok(Some(Request {
        len,
        close,
        used: end,
    }))
}

/// A request this server does not serve (not a `GET /` or `GET /<bytes>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadRequest;

/// The head of a response of `len` body bytes.
pub fn response_head(len: u64, close: bool) -> String {
    let connection = if close { "close" } else { "keep-alive" };
    format!(
        "HTTP/1.1 200 OK\r\nServer: linerate\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\nConnection: {connection}\r\n\r\n"
    )
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(len: u64) -> Vec<u8> {
        let mut r = response_head(len, true).into_bytes();
        r.extend(body(len as usize));
        r
    }

    #[test]
    fn a_response_read_in_every_split_is_done_once() {
        let whole = response(4096);
        for cut in [1, 7, 100, whole.len() - 4096 - 2, whole.len() - 1] {
            let mut r = ResponseReader::new(4096);
            let mut body = 0;
            let first = r.feed(&whole[..cut]).unwrap();
            if let Progress::More { body: b } = first {
                body += b;
            }
            match r.feed(&whole[cut..]).unwrap() {
                Progress::Done { used, body: b } => {
                    assert_eq!(used, whole.len() - cut);
                    assert_eq!(body + b, 4096);
                }
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_shifted_byte_a_wrong_length_or_status_is_named() {
        let mut whole = response(1000);
        let at = whole.len() - 1000 + 600;
        whole.remove(at);
        whole.push(0);
        let mut r = ResponseReader::new(1000);
        assert_eq!(r.feed(&whole), Err(BadResponse::Body { offset: 600 }));
        let mut r = ResponseReader::new(999);
        assert!(matches!(
            r.feed(&response(1000)),
            Err(BadResponse::Length {
                expected: 999,
                got: Some(1000)
            })
        ));
        let mut r = ResponseReader::new(1);
        assert!(matches!(
            r.feed(b"HTTP/1.1 404 Not Found\r\n\r\n"),
            Err(BadResponse::Status(_))
        ));
    }

    #[test]
    fn the_pattern_is_filled_and_checked_from_any_offset() {
        for (offset, len) in [
            (0u64, 0usize),
            (0, 1),
            (250, 3),
            (1000, 40_000),
            (7, 15_813),
        ] {
            let mut buf = vec![0u8; len];
            fill_body(&mut buf, offset);
            let want: Vec<u8> = (offset..offset + len as u64).map(body_byte).collect();
            assert_eq!(buf, want, "from {offset}, {len} bytes");
            assert_eq!(first_wrong(&buf, offset), None);
            if len > 20 {
                buf[len - 20] ^= 1;
                assert_eq!(first_wrong(&buf, offset), Some(len - 20));
            }
        }
    }

    #[test]
    fn requests_say_their_size_and_whether_to_close() {
        let req = request("h", 4096, true);
        let got = parse_request(req.as_bytes(), 7).unwrap().unwrap();
        assert_eq!((got.len, got.close, got.used), (4096, true, req.len()));
        let keep = parse_request(b"GET / HTTP/1.1\r\n\r\nGET", 7)
            .unwrap()
            .unwrap();
        assert_eq!((keep.len, keep.close, keep.used), (7, false, 18));
        assert_eq!(parse_request(b"GET / HTTP/1.0\r\n", 7), Ok(None));
        assert_eq!(
            parse_request(b"POST / HTTP/1.1\r\n\r\n", 7),
            Err(BadRequest)
        );
    }
}
