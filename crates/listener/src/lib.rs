//! The listening socket of linerate's HTTP servers (`linerate serve` and `linerate agent`): TLS,
//! the accept loop, and which connections may hold one of the server's slots.
//!
//! A token-guarded server must not let connections that never prove themselves crowd out one
//! that does. So a new connection holds no slot: it waits among the *unproven* ones (64 in all,
//! 16 per source, the oldest closed to make room) with 5 s for its handshake and a first request
//! the server takes. The server's own guard (its token check) says a request was taken by
//! calling [`Pass::let_in`] on the pass each request carries as an extension; only then does the
//! connection wait for, and hold, one of the slots. On a loopback listen that only its owner may
//! drive, another user's connections are answered by a router of their own, a few at a time.

#![forbid(unsafe_code)]

#[cfg(target_os = "linux")]
mod linux;

#[cfg(target_os = "linux")]
pub use linux::{
    FIRST_REQUEST_WAIT, ListenError, Listener, Pass, UNPROVEN_AT_ONCE, UNPROVEN_PER_SOURCE,
};
