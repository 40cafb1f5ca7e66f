//! The listening socket: TLS, the accept loop and what each connection may do.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use linerate_otg as otg;

use super::App;
use super::api::{forbidden, router};
use crate::cli::ServeArgs;

/// How long a client has to send a request's head (and, idle, its next one) before its
/// connection is closed.
const HEAD_WAIT: Duration = Duration::from_secs(30);
/// Connections of users who may not drive the server that are answered (403) at once.
const REFUSED_AT_ONCE: usize = 8;

pub(super) fn tls_config(args: &ServeArgs) -> Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let (certs, key) = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| crate::usage(format!("--tls-cert {}: {e}", cert.display())))?;
            if certs.is_empty() {
                return Err(crate::usage(format!(
                    "--tls-cert {}: no PEM certificate in it",
                    cert.display()
                )));
            }
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| crate::usage(format!("--tls-key {}: {e}", key.display())))?;
            (certs, key)
        }
        _ => {
            // ixia-c's habit: a self-signed certificate made at start (snappi: verify=False).
            let names = vec!["localhost".to_string(), args.listen.ip().to_string()];
            let made = rcgen::generate_simple_self_signed(names)
                .context("make a self-signed certificate")?;
            let key =
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
            (vec![made.cert.der().clone()], key)
        }
    };
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("TLS versions")?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => crate::usage(format!(
            "--tls-cert {} with --tls-key {}: {e} (is the key the certificate's own?)",
            cert.display(),
            key.display()
        )),
        _ => anyhow::Error::from(e).context("TLS certificate and key"),
    })?;
    // A client that offers no ALPN is served too (rustls goes on without one); one that offers
    // only http/1.0 would otherwise get "no application protocol".
    config.alpn_protocols = vec![b"http/1.1".to_vec(), b"http/1.0".to_vec()];
    Ok(Arc::new(config))
}

pub(super) async fn serve(app: Arc<App>, tls: Option<Arc<rustls::ServerConfig>>) -> Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;

    let listener = tokio::net::TcpListener::bind(app.args.listen)
        .await
        .with_context(|| format!("listen on {}", app.args.listen))?;
    let local = listener.local_addr()?;
    // One line a script can wait for (the port, when --listen asked for port 0).
    eprintln!(
        "linerate {}: OTG API {} on {}://{local}",
        if app.agent.is_some() {
            "agent"
        } else {
            "serve"
        },
        otg::API_SPEC_VERSION,
        if tls.is_some() { "https" } else { "http" }
    );
    let router = router(Arc::clone(&app));
    let forbidden = forbidden(app.owner.unwrap_or(0));
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("install the SIGTERM handler")?;
    let slots = Arc::new(tokio::sync::Semaphore::new(usize::from(
        app.args.max_connections,
    )));
    let refused = Arc::new(tokio::sync::Semaphore::new(REFUSED_AT_ONCE));
    loop {
        // Past the cap, connections wait in the kernel's backlog until one ends.
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.context("the connection slots")?,
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("linerate serve: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        };
        let allowed = app
            .owner
            .is_none_or(|owner| peer_uid(peer, local).is_some_and(|uid| uid == owner || uid == 0));
        // Another user's connections never take a slot of the owner's: they have a few of
        // their own, and past those are closed at once.
        let slot = if allowed {
            slot
        } else {
            drop(slot);
            match Arc::clone(&refused).try_acquire_owned() {
                Ok(slot) => slot,
                Err(_) => continue,
            }
        };
        let service = TowerToHyperService::new(if allowed {
            router.clone()
        } else {
            forbidden.clone()
        });
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut http = hyper::server::conn::http1::Builder::new();
            // A client that never finishes its headers holds a task, not the server; one that
            // may not drive it gets its answer and the connection ends.
            http.timer(TokioTimer::new())
                .header_read_timeout(HEAD_WAIT)
                .keep_alive(allowed);
            let served = match acceptor {
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await;
                    match handshake {
                        Ok(Ok(stream)) => {
                            http.serve_connection(TokioIo::new(stream), service).await
                        }
                        _ => return,
                    }
                }
                None => http.serve_connection(TokioIo::new(tcp), service).await,
            };
            drop(served);
        });
    }
    eprintln!("linerate serve: stopping");
    Ok(())
}

/// The uid of the client's end of a loopback TCP connection: the kernel's socket table entry
/// whose local address is the client's and whose remote is ours. None when it is not there
/// (the client already closed) or the table cannot be read.
fn peer_uid(client: SocketAddr, server: SocketAddr) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            uid_in_table(&text, client, server)
        })
}

fn uid_in_table(table: &str, client: SocketAddr, server: SocketAddr) -> Option<u32> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, remote, uid) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
        // Only a connected socket (01: ESTABLISHED) has its owner's uid; a closing one reads 0.
        let established = fields.get(3) == Some(&"01");
        (established && parse_endpoint(local)? == client && parse_endpoint(remote)? == server)
            .then(|| uid.parse().ok())
            .flatten()
    })
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): the address is the kernel's
/// 32-bit words in host byte order, the port big-endian hex.
fn parse_endpoint(text: &str) -> Option<SocketAddr> {
    let (addr, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let mut bytes = Vec::with_capacity(16);
    for word in addr.as_bytes().chunks(8) {
        let word = u32::from_str_radix(std::str::from_utf8(word).ok()?, 16).ok()?;
        bytes.extend_from_slice(&word.to_ne_bytes());
    }
    let ip: IpAddr = match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok()?.into(),
        16 => <[u8; 16]>::try_from(bytes).ok()?.into(),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_end_of_a_loopback_connection_names_its_uid() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let server = listener.local_addr().expect("addr");
        let client = std::net::TcpStream::connect(server).expect("connect");
        let (_accepted, peer) = listener.accept().expect("accept");
        assert_eq!(peer, client.local_addr().expect("addr"));
        assert_eq!(
            peer_uid(peer, server),
            Some(nix::unistd::geteuid().as_raw())
        );
        drop(client);
        drop(_accepted);
        // A client that has gone is nobody's.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(peer_uid(peer, server), None);
    }

    #[test]
    fn table_lines_name_addresses_as_the_kernel_writes_them() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
                     0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 1 1\n";
        let client: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let server: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        if cfg!(target_endian = "little") {
            assert_eq!(uid_in_table(table, client, server), Some(65534));
        }
        assert_eq!(uid_in_table(table, server, client), None);
        let v6 = parse_endpoint("00000000000000000000000001000000:1F90");
        if cfg!(target_endian = "little") {
            assert_eq!(v6, Some("[::1]:8080".parse().unwrap()));
        }
    }
}
