//! The TLS of the listener an agent and the OTG server share: a certificate and key from PEM
//! files, or (ixia-c's habit; snappi connects with verify=False) a self-signed certificate made
//! at start for the names the listener answers as.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Why the listener's TLS could not be set up: a file given (the user's to fix), or the TLS
/// stack.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{}: {why}", path.display())]
    File {
        path: std::path::PathBuf,
        why: String,
    },
    #[error(
        "the certificate and the key do not go together: {0} (is the key the certificate's own?)"
    )]
    Mismatch(String),
    #[error("TLS: {0}")]
    Stack(String),
}

impl TlsError {
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::Stack(_))
    }
}

/// The server's TLS: `cert_key`'s PEM certificate chain and key, else a self-signed
/// certificate for `names`. HTTP/1.1 and 1.0 by ALPN (a client offering none is served too).
pub fn server_config(
    cert_key: Option<(&Path, &Path)>,
    names: Vec<String>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let file = |path: &Path, why: String| TlsError::File {
        path: path.to_owned(),
        why,
    };
    let (certs, key) = match cert_key {
        Some((cert, key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| file(cert, e.to_string()))?;
            if certs.is_empty() {
                return Err(file(cert, "no PEM certificate in it".into()));
            }
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| file(key, e.to_string()))?;
            (certs, key)
        }
        None => {
            let made = rcgen::generate_simple_self_signed(names)
                .map_err(|e| TlsError::Stack(format!("make a self-signed certificate: {e}")))?;
            let key =
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
            (vec![made.cert.der().clone()], key)
        }
    };
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| TlsError::Stack(e.to_string()))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| match cert_key {
        Some(_) => TlsError::Mismatch(e.to_string()),
        None => TlsError::Stack(e.to_string()),
    })?;
    // A client that offers only http/1.0 would otherwise get "no application protocol".
    config.alpn_protocols = vec![b"http/1.1".to_vec(), b"http/1.0".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_certificate_is_made_and_a_missing_file_is_named() {
        let made = server_config(None, vec!["localhost".into()]).unwrap();
        assert_eq!(made.alpn_protocols[0], b"http/1.1");
        let missing = Path::new("/nonexistent/cert.pem");
        let e = server_config(Some((missing, missing)), vec![]).unwrap_err();
        assert!(
            e.is_usage() && e.to_string().contains("/nonexistent/cert.pem"),
            "{e}"
        );
    }
}
