//! The accept loop and the connection pools (see the crate's page).

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;

/// How long a client whose connection has been let in has to send its next request's head
/// (idle, between requests) before the connection is closed.
const HEAD_WAIT: Duration = Duration::from_secs(30);
/// How long a new connection has for its TLS handshake and a first request the server takes
/// (the right token, or the owner's); until then it holds none of `--max-connections`.
pub const FIRST_REQUEST_WAIT: Duration = Duration::from_secs(5);
/// New connections waiting for that first request, in all and from one source; past either, the
/// oldest waiting one (of that source) is closed to make room, so a flood of idle connections
/// costs a client with the token one round trip, not a slot.
pub const UNPROVEN_AT_ONCE: usize = 64;
pub const UNPROVEN_PER_SOURCE: usize = 16;
/// Connections of users who may not drive the server that are answered (403) at once.
const REFUSED_AT_ONCE: usize = 8;

/// The connections not yet let in, oldest first, each with the sender of its verdict: `true`
/// when its first taken request arrives, `false` when it is closed to make room.
#[derive(Default)]
struct Unproven {
    next: u64,
    waiting: VecDeque<(u64, Source, tokio::sync::oneshot::Sender<bool>)>,
}

/// Where a connection comes from, for the per-source cap: an IPv4 address, or an IPv6 /64
/// (one host is given a whole /64).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Source(u128);

impl Source {
    fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Source(u128::from(u32::from(v4))),
            IpAddr::V6(v6) => Source(u128::from(v6) >> 64 | 1 << 64),
        }
    }
}

impl Unproven {
    fn admit(&mut self, source: Source) -> (u64, tokio::sync::oneshot::Receiver<bool>) {
        let of_source = self.waiting.iter().filter(|w| w.1 == source).count();
        let oldest = if of_source >= UNPROVEN_PER_SOURCE {
            self.waiting.iter().position(|w| w.1 == source)
        } else if self.waiting.len() >= UNPROVEN_AT_ONCE {
            Some(0)
        } else {
            None
        };
        if let Some((_, _, verdict)) = oldest.and_then(|i| self.waiting.remove(i)) {
            let _ = verdict.send(false);
        }
        let (tell, verdict) = tokio::sync::oneshot::channel();
        let id = self.next;
        self.next += 1;
        self.waiting.push_back((id, source, tell));
        (id, verdict)
    }

    /// Takes a connection out, telling it `verdict` if it was still waiting.
    fn leave(&mut self, id: u64, verdict: bool) -> bool {
        match self.waiting.iter().position(|w| w.0 == id) {
            Some(i) => {
                if let Some((_, _, tell)) = self.waiting.remove(i) {
                    let _ = tell.send(verdict);
                }
                true
            }
            None => false,
        }
    }
}

/// The connection pools: the ones let in (`--max-connections`) and the ones not yet.
struct Pools {
    unproven: Mutex<Unproven>,
    slots: Arc<tokio::sync::Semaphore>,
}

/// A connection's pass, carried by each of its requests: the request that the token check lets
/// through lets the connection in, which then waits for (and holds) one of the slots.
#[derive(Clone)]
pub struct Pass(Arc<PassInner>);

struct PassInner {
    id: u64,
    pools: Arc<Pools>,
    slot: Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
}

impl Pass {
    /// The pass of a connection that never waits among the unproven ones.
    fn outside(pools: &Arc<Pools>) -> Self {
        Pass(Arc::new(PassInner {
            id: u64::MAX,
            pools: Arc::clone(pools),
            slot: Mutex::new(None),
        }))
    }

    /// The connection's request was taken: out of the waiting ones, into a slot (waiting for
    /// one if all are taken). A connection closed meanwhile to make room stays out.
    pub async fn let_in(&self) {
        let inner = &self.0;
        let waiting = lock(&inner.pools.unproven).leave(inner.id, true);
        if waiting && let Ok(slot) = Arc::clone(&inner.pools.slots).acquire_owned().await {
            *lock(&inner.slot) = Some(slot);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl std::fmt::Debug for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pass").field(&self.0.id).finish()
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

/// A listener failed to start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("install the SIGTERM handler: {0}")]
    Signal(std::io::Error),
}

/// A bound socket, served until Ctrl-C or SIGTERM.
pub struct Listener {
    tcp: tokio::net::TcpListener,
    local: SocketAddr,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    pools: Arc<Pools>,
    owner: Option<u32>,
    refused: Arc<tokio::sync::Semaphore>,
    /// Registered at bind, before anyone learns the address: a SIGTERM sent as soon as the
    /// server says where it listens is a clean stop, not the default death.
    term: tokio::signal::unix::Signal,
}

impl Listener {
    /// Binds `addr`. `slots`: the connections let in at once; `owner`: the uid (besides root)
    /// a connection must come from to be served, None for anyone (the server's own guard
    /// decides); `tls`: None for plain HTTP.
    pub async fn bind(
        addr: SocketAddr,
        tls: Option<Arc<rustls::ServerConfig>>,
        slots: usize,
        owner: Option<u32>,
    ) -> Result<Self, ListenError> {
        let tcp = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ListenError::Bind { addr, source })?;
        let local = tcp
            .local_addr()
            .map_err(|source| ListenError::Bind { addr, source })?;
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(ListenError::Signal)?;
        Ok(Listener {
            term,
            tcp,
            local,
            acceptor: tls.map(tokio_rustls::TlsAcceptor::from),
            pools: Arc::new(Pools {
                unproven: Mutex::default(),
                slots: Arc::new(tokio::sync::Semaphore::new(slots)),
            }),
            owner,
            refused: Arc::new(tokio::sync::Semaphore::new(REFUSED_AT_ONCE)),
        })
    }

    /// Where it listens (the port, when `addr` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Serves `router` to the connections that may drive the server and `forbidden` to the
    /// others, until Ctrl-C or SIGTERM.
    pub async fn serve(
        mut self,
        router: axum::Router,
        forbidden: axum::Router,
    ) -> Result<(), ListenError> {
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        eprintln!("linerate: accept on {}: {e}", self.local);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = tokio::signal::ctrl_c() => return Ok(()),
                _ = self.term.recv() => return Ok(()),
            };
            let allowed = self.owner.is_none_or(|owner| {
                linerate_sys::peer_uid(peer, self.local).is_some_and(|uid| uid == owner || uid == 0)
            });
            if allowed {
                self.admit(tcp, peer, router.clone());
            } else if let Ok(slot) = Arc::clone(&self.refused).try_acquire_owned() {
                // Another user's connections never wait among the owner's: they have a few
                // places of their own, and past those are closed at once.
                let acceptor = self.acceptor.clone();
                let pass = Pass::outside(&self.pools);
                let forbidden = forbidden.clone();
                tokio::spawn(async move {
                    let _slot = slot;
                    let served = connection(tcp, acceptor, forbidden, pass, false);
                    let _ = tokio::time::timeout(FIRST_REQUEST_WAIT, served).await;
                });
            }
        }
    }

    /// The owner's connection waits for its first taken request among the unproven ones,
    /// never in a slot; the verdict ends that wait.
    fn admit(&self, tcp: TcpStream, peer: SocketAddr, router: axum::Router) {
        let (id, verdict) = lock(&self.pools.unproven).admit(Source::of(peer.ip()));
        let pass = Pass(Arc::new(PassInner {
            id,
            pools: Arc::clone(&self.pools),
            slot: Mutex::new(None),
        }));
        let acceptor = self.acceptor.clone();
        tokio::spawn(async move {
            let first_request = async {
                if let Ok(Ok(true)) = tokio::time::timeout(FIRST_REQUEST_WAIT, verdict).await {
                    std::future::pending::<()>().await;
                }
            };
            // Dropping the connection's future closes it.
            tokio::select! {
                () = connection(tcp, acceptor, router, pass.clone(), true) => (),
                () = first_request => (),
            }
            lock(&pass.0.pools.unproven).leave(pass.0.id, false);
        });
    }
}

/// One connection served to its end: each request carries the connection's pass. A client
/// that never finishes its headers holds a task, not the server; one that may not drive it
/// (`keep` false) gets its answer and the connection ends.
async fn connection(
    tcp: TcpStream,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    router: axum::Router,
    pass: Pass,
    keep: bool,
) {
    let service =
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(pass.clone());
            tower_service::Service::call(&mut router.clone(), req)
        });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(if keep { HEAD_WAIT } else { FIRST_REQUEST_WAIT })
        .keep_alive(keep);
    match acceptor {
        Some(acceptor) => {
            if let Ok(stream) = acceptor.accept(tcp).await {
                let _ = http.serve_connection(TokioIo::new(stream), service).await;
            }
        }
        None => {
            let _ = http.serve_connection(TokioIo::new(tcp), service).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_waiting_connection_of_a_full_source_or_pool_makes_room() {
        let mut unproven = Unproven::default();
        let a = Source::of("192.0.2.1".parse().unwrap());
        let mut verdicts: Vec<_> = (0..UNPROVEN_PER_SOURCE + 2)
            .map(|_| unproven.admit(a).1)
            .collect();
        // The two oldest of the source were closed; the rest wait.
        let closed: Vec<_> = verdicts.iter_mut().map(|v| v.try_recv().ok()).collect();
        assert_eq!(&closed[..3], &[Some(false), Some(false), None]);
        assert_eq!(unproven.waiting.len(), UNPROVEN_PER_SOURCE);
        // Another /64 of IPv6 is another source; the same /64 is one.
        let b = Source::of("2001:db8:0:1::1".parse().unwrap());
        assert!(b == Source::of("2001:db8:0:1::2".parse().unwrap()));
        assert!(b != Source::of("2001:db8:0:2::1".parse().unwrap()));
        assert!(a == Source::of("::ffff:192.0.2.1".parse().unwrap()));
        // Past the pool, the oldest of all goes, whatever its source.
        let (first_b, _) = unproven.admit(b);
        for i in 0..UNPROVEN_AT_ONCE - UNPROVEN_PER_SOURCE {
            let ip = IpAddr::from([198, 51, 100, (i / 8) as u8]);
            unproven.admit(Source::of(ip));
        }
        assert_eq!(unproven.waiting.len(), UNPROVEN_AT_ONCE);
        assert_eq!(verdicts[2].try_recv(), Ok(false));
        // Let in: out of the waiting ones, told so, and not closed later.
        assert!(unproven.leave(first_b, true));
        assert!(!unproven.leave(first_b, false));
    }
}
