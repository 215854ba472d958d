//! HTTPS for the API servers of an authorizing fleet. Clients send credentials only over
//! TLS (kubectl drops the kubeconfig's token on a plain `http://` server:
//! `staging/src/k8s.io/client-go/tools/clientcmd/client_config.go`), so a fleet that
//! authenticates serves TLS with a certificate of its own CA, which the kubeconfig carries.

use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SanType};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// The fleet's serving CA and the server configuration of its API servers.
pub struct Serving {
    /// The CA a client trusts (the kubeconfig's `certificate-authority-data`), PEM.
    pub ca_pem: String,
    pub config: Arc<rustls::ServerConfig>,
}

impl Serving {
    /// A new CA, and a server certificate for `bind`, `127.0.0.1`, `::1` and `localhost`.
    pub fn new(bind: IpAddr) -> anyhow::Result<Serving> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.distinguished_name
            .push(DnType::CommonName, "kubesim API server CA");
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;
        let mut leaf = CertificateParams::new(vec![
            "localhost".to_string(),
            "kubernetes.default.svc".to_string(),
        ])?;
        leaf.distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        for ip in [
            bind,
            IpAddr::from([127, 0, 0, 1]),
            IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
        ] {
            if !leaf.subject_alt_names.contains(&SanType::IpAddress(ip)) && !ip.is_unspecified() {
                leaf.subject_alt_names.push(SanType::IpAddress(ip));
            }
        }
        let key = KeyPair::generate()?;
        let cert = leaf.signed_by(&key, &ca)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der())
                    .map_err(|e| anyhow::anyhow!("the server key: {e}"))?,
            )?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Serving {
            ca_pem: ca.pem(),
            config: Arc::new(config),
        })
    }
}

/// Serves `app` over TLS on `listener` until `stop`; open connections end with it, as when
/// an API server goes away.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    serving: Arc<rustls::ServerConfig>,
    stop: CancellationToken,
) {
    let acceptor = TlsAcceptor::from(serving);
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "kubesim could not accept a connection");
                    continue;
                }
            },
        };
        let (acceptor, app, stop) = (acceptor.clone(), app.clone(), stop.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let service = hyper_util::service::TowerToHyperService::new(app);
            let builder =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            let conn =
                builder.serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(tls), service);
            tokio::select! {
                _ = conn => {}
                _ = stop.cancelled() => {}
            }
        });
    }
}
