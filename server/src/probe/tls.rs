//! The certificate a host serves on one address: the TLS handshake with SNI = the host,
//! accepting whatever is served (it is what clients get, good or bad), then judged apart:
//! does the chain verify against the system roots for that name.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::{connect, ProbeError, ProxyHeader};

pub use lookout_app::model::probe::{ServedCertificate, TlsObservation, Untrusted};

/// Why rustls refused the chain.
fn untrusted(e: &rustls::Error) -> Untrusted {
    use rustls::CertificateError as C;
    let text = stable_text(e);
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::NotValidForName | C::NotValidForNameContext { .. } => Untrusted::NameMismatch(text),
            C::UnknownIssuer => Untrusted::UnknownIssuer(text),
            C::Expired | C::ExpiredContext { .. } => Untrusted::Expired(text),
            C::NotValidYet | C::NotValidYetContext { .. } => Untrusted::NotYetValid(text),
            _ => Untrusted::Other(text),
        },
        _ => Untrusted::Other(text),
    }
}

/// rustls's words for `e`, except that a certificate outside its validity is told by the
/// bound it crossed alone: rustls also names the time of the check ("verification time …,
/// … seconds ago"), which made the same certificate a new answer every round and moved the
/// failure's start with it.
fn stable_text(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let at = |t: &UnixTime| {
        i64::try_from(t.as_secs())
            .ok()
            .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
            .map_or_else(
                || t.as_secs().to_string(),
                |d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            )
    };
    match e {
        rustls::Error::InvalidCertificate(C::ExpiredContext { not_after, .. }) => format!(
            "invalid peer certificate: certificate expired: not valid after {}",
            at(not_after)
        ),
        rustls::Error::InvalidCertificate(C::NotValidYetContext { not_before, .. }) => format!(
            "invalid peer certificate: certificate not valid yet: not valid before {}",
            at(not_before)
        ),
        _ => e.to_string(),
    }
}

/// Accepts any chain (the handshake's signatures still checked): the probe records what is
/// served — the connection's peer certificates — and judges it apart.
#[derive(Debug)]
struct AcceptAny {
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The trust anchors served chains are judged against, with what every probe reuses: the
/// client configuration that accepts any chain, and the verifier that judges it.
#[derive(Clone)]
pub struct Roots {
    store: Arc<rustls::RootCertStore>,
    config: Arc<rustls::ClientConfig>,
    verifier: Result<Arc<rustls::client::WebPkiServerVerifier>, String>,
}

impl Roots {
    fn from_store(store: rustls::RootCertStore) -> Self {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let store = Arc::new(store);
        let config = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny {
                provider: provider.clone(),
            }))
            .with_no_client_auth();
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(store.clone(), provider)
                .build()
                .map_err(|e| format!("no trust anchors to verify against ({e})"));
        Roots {
            store,
            config: Arc::new(config),
            verifier,
        }
    }

    /// The system's (`rustls-native-certs`: the platform's CA bundle).
    pub fn system() -> Self {
        let mut store = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            let _ = store.add(cert);
        }
        Self::from_store(store)
    }

    /// These roots and the certificates of a PEM file (a private CA's).
    pub fn with_pem(self, pem: &[u8]) -> Result<Self, String> {
        use rustls::pki_types::pem::PemObject;
        let mut store = (*self.store).clone();
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("not a PEM certificate ({e})"))?;
            store
                .add(cert)
                .map_err(|e| format!("not a usable trust anchor ({e})"))?;
            added += 1;
        }
        if added == 0 {
            return Err("holds no PEM certificate".into());
        }
        Ok(Self::from_store(store))
    }

    /// Exactly these (for tests and private CAs).
    pub fn of(certs: impl IntoIterator<Item = CertificateDer<'static>>) -> Self {
        let mut store = rustls::RootCertStore::empty();
        for cert in certs {
            let _ = store.add(cert);
        }
        Self::from_store(store)
    }
}

/// Connects to `addr`, says `host` in SNI, and records what is served (judged at the wall
/// clock's now).
pub async fn served(
    addr: SocketAddr,
    host: &str,
    timeout: Duration,
    proxy: Option<ProxyHeader>,
    roots: &Roots,
) -> Result<TlsObservation, ProbeError> {
    served_at(addr, host, timeout, proxy, roots, UnixTime::now()).await
}

/// As [`served`], with the chain judged valid or not at `now` (the server's clock: the
/// demo's runs faster than the wall's).
pub async fn served_at(
    addr: SocketAddr,
    host: &str,
    timeout: Duration,
    proxy: Option<ProxyHeader>,
    roots: &Roots,
    now: UnixTime,
) -> Result<TlsObservation, ProbeError> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|_| ProbeError::Handshake(format!("{host:?} is not a name SNI can carry")))?;
    let deadline = tokio::time::Instant::now() + timeout;
    let stream = tokio::time::timeout_at(deadline, connect(addr, timeout, proxy))
        .await
        .map_err(|_| ProbeError::Timeout)??;
    let connector = tokio_rustls::TlsConnector::from(roots.config.clone());
    let tls = tokio::time::timeout_at(deadline, connector.connect(name.clone(), stream))
        .await
        .map_err(|_| ProbeError::Timeout)?
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => ProbeError::Handshake(e.to_string()),
            _ => super::classify(&e),
        })?;
    let version = tls
        .get_ref()
        .1
        .protocol_version()
        .map(|v| match v {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
            other => format!("{other:?}"),
        })
        .unwrap_or_default();
    let chain: Vec<CertificateDer<'static>> = tls
        .get_ref()
        .1
        .peer_certificates()
        .unwrap_or_default()
        .to_vec();
    let (leaf, intermediates) = chain
        .split_first()
        .ok_or_else(|| ProbeError::Handshake("no certificate was served".into()))?;
    let parsed = ServedCertificate::parse(leaf)
        .ok_or_else(|| ProbeError::Handshake("the served certificate does not parse".into()))?;
    let untrusted = match &roots.verifier {
        Err(e) => Some(Untrusted::UnknownIssuer(e.clone())),
        Ok(v) => v
            .verify_server_cert(leaf, intermediates, &name, &[], now)
            .err()
            .map(|e| untrusted(&e)),
    };
    Ok(TlsObservation {
        leaf: parsed,
        chain_len: chain.len(),
        untrusted,
        version,
    })
}
