//! What a stateful run counts, every connection in exactly one place: a client's attempted =
//! established + failed + still connecting; established = closed + active.

use hdrhistogram::Histogram;
use serde::Serialize;

/// A client's connections and requests so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClientCounters {
    /// SYNs sent for a new connection (each a new 5-tuple).
    pub attempted: u64,
    /// Handshakes completed.
    pub established: u64,
    /// Never established: no answer to the SYN within the connect timeout.
    pub failed_timeout: u64,
    /// Never established: the peer (or a device on the way) answered the SYN with a reset.
    pub failed_refused: u64,
    /// Established, and ended: every request answered and both FINs exchanged.
    pub closed: u64,
    /// Established, and ended by the peer's reset before the last response.
    pub closed_reset: u64,
    /// Established, and stalled: no progress within the connection timeout.
    pub closed_timeout: u64,
    /// Established, and ended on a response that was not the one asked for.
    pub closed_bad_response: u64,
    /// Requests sent.
    pub requests: u64,
    /// Responses received whole, every body byte checked.
    pub responses: u64,
    /// Body bytes received and checked (goodput).
    pub body_bytes: u64,
    /// Segments the client sent again (SYNs, requests, FINs): no connection's count, the
    /// link's.
    pub retransmitted: u64,
}

impl ClientCounters {
    /// Adds what `now` counts over `before` (one connection's step, to its kind's counts).
    pub(crate) fn add_since(&mut self, now: &ClientCounters, before: &ClientCounters) {
        // Field by field, named: a counter added to the struct must be added here.
        let ClientCounters {
            attempted,
            established,
            failed_timeout,
            failed_refused,
            closed,
            closed_reset,
            closed_timeout,
            closed_bad_response,
            requests,
            responses,
            body_bytes,
            retransmitted,
        } = self;
        *attempted += now.attempted - before.attempted;
        *established += now.established - before.established;
        *failed_timeout += now.failed_timeout - before.failed_timeout;
        *failed_refused += now.failed_refused - before.failed_refused;
        *closed += now.closed - before.closed;
        *closed_reset += now.closed_reset - before.closed_reset;
        *closed_timeout += now.closed_timeout - before.closed_timeout;
        *closed_bad_response += now.closed_bad_response - before.closed_bad_response;
        *requests += now.requests - before.requests;
        *responses += now.responses - before.responses;
        *body_bytes += now.body_bytes - before.body_bytes;
        *retransmitted += now.retransmitted - before.retransmitted;
    }

    /// Connections that never got established.
    pub fn failed(&self) -> u64 {
        self.failed_timeout + self.failed_refused
    }

    /// Established connections that ended, whichever way.
    pub fn ended(&self) -> u64 {
        self.closed + self.closed_reset + self.closed_timeout + self.closed_bad_response
    }

    /// Established and not ended yet.
    pub fn active(&self) -> u64 {
        self.established - self.ended()
    }

    /// SYNs sent whose handshake has not ended either way.
    pub fn connecting(&self) -> u64 {
        self.attempted - self.established - self.failed()
    }
}

/// A server's connections and requests so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ServerCounters {
    /// Handshakes completed.
    pub accepted: u64,
    /// Ended with both FINs exchanged.
    pub closed: u64,
    /// Ended by the peer's reset.
    pub reset: u64,
    /// Ended on a request this server does not serve.
    pub bad_request: u64,
    /// Ended by the server: no progress within the connection timeout.
    pub timeout: u64,
    pub requests: u64,
    /// Responses whose every byte was queued.
    pub responses: u64,
    /// Body bytes queued.
    pub body_bytes: u64,
    /// Segments the server sent again (SYN-ACKs, response data, FINs).
    pub retransmitted: u64,
}

impl ServerCounters {
    pub fn active(&self) -> u64 {
        self.accepted - self.closed - self.reset - self.bad_request - self.timeout
    }
}

/// Percentiles of a time, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// A histogram of times in microseconds, 1 µs to 60 s at 3 significant figures.
#[derive(Debug, Clone)]
pub struct Times(Histogram<u64>);

impl Default for Times {
    fn default() -> Self {
        Times(Histogram::new_with_bounds(1, 60_000_000, 3).expect("static bounds"))
    }
}

impl Times {
    pub fn record(&mut self, micros: u64) {
        self.0.saturating_record(micros.max(1));
    }

    /// Every time of `other` too (the same bounds: never out of range).
    pub fn add(&mut self, other: &Times) {
        let _ = self.0.add(&other.0);
    }

    pub fn percentiles(&self) -> Percentiles {
        let h = &self.0;
        Percentiles {
            count: h.len(),
            p50_us: h.value_at_quantile(0.5) as f64,
            p90_us: h.value_at_quantile(0.9) as f64,
            p99_us: h.value_at_quantile(0.99) as f64,
            max_us: h.max() as f64,
        }
    }
}
