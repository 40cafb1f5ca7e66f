//! The listening socket: TLS, the accept loop and what each connection may do.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use linerate_otg as otg;

use super::App;
use super::api::router;
use crate::cli::ServeArgs;

pub(super) fn tls_config(args: &ServeArgs) -> Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let (certs, key) = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| crate::usage(format!("--tls-cert {}: {e}", cert.display())))?;
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
    .context("TLS certificate and key")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
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
        "linerate serve: OTG API {} on {}://{local}",
        otg::API_SPEC_VERSION,
        if tls.is_some() { "https" } else { "http" }
    );
    let router = router(Arc::clone(&app));
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("install the SIGTERM handler")?;
    loop {
        let (tcp, _) = tokio::select! {
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
        let service = TowerToHyperService::new(router.clone());
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            // A client that never finishes its headers holds a task, not the server.
            http.timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30));
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
