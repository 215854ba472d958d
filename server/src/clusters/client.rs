//! The HTTP client of a cluster, built the way client-go builds its transport: HTTP/2 when
//! the API server offers it (TLS with ALPN `h2`, which every API server does), so that all of
//! a cluster's watches and requests share one connection instead of one connection each;
//! HTTP/1.1 otherwise. A watch over HTTP/1.1 holds a connection with its read buffer and
//! request queue (about 40 KiB here, more with TLS); at twelve watches per cluster that was
//! most of a cluster's fixed cost.
//!
//! Clusters whose kubeconfig names no CA are verified with the system's roots, loaded once
//! for the whole process (kube's own builder loads them again for every client).
//!
//! Through a proxy (`proxy-url`), the client is kube's own.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{ClientBuilder, ConfigExt};
use kube::{Client, Config};
use tower::{BoxError, ServiceBuilder};

/// How often an idle HTTP/2 connection is pinged, and how long the answer may take before
/// the connection is dropped (client-go: `ReadIdleTimeout` 30 s, `PingTimeout` 15 s, in
/// `k8s.io/apimachinery/pkg/util/net/http.go`). Without it a connection to an API server
/// that vanished without a FIN would hold every watch of the cluster until the kernel gives
/// up on it.
const PING_EVERY: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// TLS sessions a cluster's client keeps for resuming. Its one connection goes to one API
/// server (a few after a failover); rustls's default of 256 servers is a table of ~15 KiB
/// per cluster, allocated whole. Each client keeps its own: a session resumed skips the
/// certificate check, so one client's sessions must never be offered under another's trust.
const SESSIONS: usize = 4;

/// Builds the client for `config` (kube's default retry already decided by the caller).
pub(super) fn build(mut config: Config) -> Result<Client, String> {
    if config.proxy_url.is_some() {
        return Client::try_from(config).map_err(|e| format!("building the client: {e}"));
    }
    // No CA of its own: the system's roots, shared. An empty root list keeps kube from
    // loading them for this client; the verifier is replaced below.
    let system_roots = config.root_cert.is_none() && config.root_cert_file.is_none();
    if system_roots {
        config.root_cert = Some(Vec::new());
    }
    let mut tls = config
        .rustls_client_config()
        .map_err(|e| format!("the TLS configuration: {e}"))?;
    if system_roots && !config.accept_invalid_certs {
        tls.dangerous().set_certificate_verifier(system_verifier()?);
    }
    tls.resumption = rustls::client::Resumption::in_memory_sessions(SESSIONS);
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let https = match &config.tls_server_name {
        Some(name) => https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(
            name.clone()
                .try_into()
                .map_err(|e| format!("tls-server-name {name:?}: {e}"))?,
        )),
        None => https,
    };
    let https = https.enable_all_versions().wrap_connector(http);
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http_client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .http2_keep_alive_interval(PING_EVERY)
        .http2_keep_alive_timeout(PING_TIMEOUT)
        .http2_keep_alive_while_idle(true)
        .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .auth_layer()
                .map_err(|e| format!("the credentials: {e}"))?,
        )
        .layer(
            config
                .extra_headers_layer()
                .map_err(|e| format!("the extra headers: {e}"))?,
        )
        .map_err(BoxError::from)
        .service(http_client);
    Ok(ClientBuilder::new(service, config.default_namespace).build())
}

/// The verifier of the system's roots, loaded on first use and shared by every client.
fn system_verifier() -> Result<Arc<rustls_platform_verifier::Verifier>, String> {
    static VERIFIER: OnceLock<Result<Arc<rustls_platform_verifier::Verifier>, String>> =
        OnceLock::new();
    VERIFIER
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls_platform_verifier::Verifier::new(provider)
                .map(Arc::new)
                .map_err(|e| format!("the system's CA certificates: {e}"))
        })
        .clone()
}
