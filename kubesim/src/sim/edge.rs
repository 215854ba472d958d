//! Cilium's data plane, simulated with real sockets: for every loopback load-balancer address
//! the Cilium controller published (`127.x.y.z`, `::1`), a TLS listener and an HTTP listener
//! on the configured ports, each answering per route as Envoy does with Cilium's
//! translation of the Ingresses.
//!
//! - TLS: the certificate of the Secret named by the Ingress's TLS entry for the SNI host,
//!   through the listener's filter chains and secret discovery as [`chains`] describes: no
//!   chain for the name (or no name), or a Secret that does not exist or never loaded, and
//!   the handshake is reset after the ClientHello (cilium/cilium#26988 shows `Recv failure:
//!   Connection reset by peer` until the Secret is created); Cilium has no default
//!   certificate. Over TLS the virtual host holds the routes of the host's
//!   TLS Ingresses only (Cilium's `envoyHTTPSRoutes`): a solver path edited into one of them
//!   answers its key — a separate solver Ingress has no TLS and is not there —, an
//!   application route there answers the application's page (200, HTML), anything else
//!   Envoy's bare 404.
//! - HTTP: a host with HTTPS enforcement answers `301` to `https://` — Cilium's per-route
//!   `RedirectAction{https_redirect: true}` without a code is Envoy's default 301 — on the
//!   paths the host's TLS Ingresses route, and 404 on any other (Cilium builds that virtual
//!   host from the TLS Ingresses' routes only, so a solver on an Ingress without TLS is not
//!   on it). Cilium merges the Ingresses of a host into one virtual host, so one enforcing
//!   Ingress redirects them all (cilium/cilium#35347), the ACME path included. Without it, a
//!   solver path answers the key, an application route the page, anything else 404.
//! - Gateways: [`gateways`] says what their listeners serve.
//! - `enable-ingress-proxy-protocol`: every connection must start with a PROXY v1 or v2
//!   header, else it is closed (Envoy's proxy_protocol listener filter). When the header names
//!   an IPv6 client and the cluster's `cilium-ingress` Service is IPv4-only, the connection is
//!   dropped after it (cilium/cilium#42950, fixed by cilium/proxy#1944).

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::cilium::{self, RoutePath};
use super::issuance::APP_PAGE;

mod chains;
mod gateways;
mod request;
use super::{s, Api};
use crate::store::Cluster;
use chains::{Chains, Served};
use request::read_request;

/// The ports the listeners use (unprivileged in tests and the demo).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgePorts {
    pub https: u16,
    pub http: u16,
}

/// What one host on one address gets.
struct Route {
    certificate: Served,
    redirect: bool,
    /// The paths the host's TLS Ingresses route: what the redirect covers.
    tls_routes: Vec<RoutePath>,
    /// The application's paths on the host (solver paths and solver Ingresses excluded).
    app: Vec<RoutePath>,
    /// ACME paths a solver route serves: path → key authorization.
    solver: HashMap<String, String>,
    /// Its cluster's listeners take only PROXY-protocol connections.
    proxy: bool,
    /// … and drop those from IPv6 clients (IPv4-only cluster, cilium/cilium#42950).
    ipv6_broken: bool,
    /// A Gateway's: an `Exact` solver path wins over the redirect (Gateway API precedence).
    exact_first: bool,
}

/// What a request gets.
enum Answer {
    Redirect,
    Key(String),
    Page,
    NotFound,
}

impl Route {
    /// Whether a connection that sent `header` (Some(names an IPv6 client)) is served.
    fn admits(&self, header: Option<bool>) -> bool {
        match (self.proxy, header) {
            (false, None) => true,
            (true, Some(ipv6)) => !(ipv6 && self.ipv6_broken),
            _ => false,
        }
    }

    fn answer_http(&self, path: &str) -> Answer {
        if let Some(key) = self.solver.get(path).filter(|_| self.exact_first) {
            return Answer::Key(key.clone());
        }
        if self.redirect {
            return if self.tls_routes.iter().any(|r| r.matches(path)) {
                Answer::Redirect
            } else {
                Answer::NotFound
            };
        }
        self.answer_plain(path)
    }

    fn answer_https(&self, path: &str) -> Answer {
        // The HTTPS virtual host holds the routes of the host's TLS Ingresses only: a solver
        // edited into one of them answers its key, a separate solver Ingress (no TLS) is not
        // there, and the application's routes there answer its page.
        let on_tls = |r: &&RoutePath| r.path() == path;
        if let Some(key) = self
            .tls_routes
            .iter()
            .find(on_tls)
            .and_then(|r| self.solver.get(r.path()))
        {
            Answer::Key(key.clone())
        } else if self
            .tls_routes
            .iter()
            .any(|r| !r.is_solver() && r.matches(path))
        {
            Answer::Page
        } else {
            Answer::NotFound
        }
    }

    /// Over plain HTTP without the redirect: every Ingress of the host is on the virtual
    /// host, solver Ingresses included.
    fn answer_plain(&self, path: &str) -> Answer {
        if let Some(key) = self.solver.get(path) {
            Answer::Key(key.clone())
        } else if self.app.iter().any(|r| r.matches(path)) {
            Answer::Page
        } else {
            Answer::NotFound
        }
    }
}

impl Answer {
    fn response(&self, host: &str, path: &str) -> String {
        let (status, headers, body) = match self {
            Answer::Redirect => (
                "301 Moved Permanently",
                format!("location: https://{host}{path}\r\n"),
                "",
            ),
            Answer::Key(key) => (
                "200 OK",
                "content-type: text/plain\r\n".into(),
                key.as_str(),
            ),
            Answer::Page => ("200 OK", "content-type: text/html\r\n".into(), APP_PAGE),
            Answer::NotFound => ("404 Not Found", String::new(), ""),
        };
        format!(
            "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    }
}

#[derive(Default)]
struct Table {
    versions: Vec<u64>,
    routes: HashMap<(IpAddr, String), Arc<Route>>,
    /// Every address to serve.
    addresses: HashSet<IpAddr>,
}

/// The listeners of a fleet.
pub struct Edge {
    ports: EdgePorts,
    clusters: Vec<Arc<Cluster>>,
    table: RwLock<Table>,
    chains: Chains,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl Edge {
    /// Serves the clusters' loopback load-balancer addresses until `shutdown`.
    pub fn spawn(clusters: Vec<Arc<Cluster>>, ports: EdgePorts, shutdown: CancellationToken) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let edge = Arc::new(Edge {
            ports,
            clusters,
            table: RwLock::default(),
            chains: Chains::new(provider.clone()),
            provider,
        });
        tokio::spawn(async move {
            let mut bound: HashSet<IpAddr> = HashSet::new();
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let e = edge.clone();
                let Ok(addresses) = tokio::task::spawn_blocking(move || e.refresh()).await else {
                    continue;
                };
                for ip in addresses {
                    if bound.insert(ip) {
                        edge.clone().listen(ip, shutdown.clone()).await;
                    }
                }
            }
        });
    }

    /// Rebuilds the routing table when a cluster changed; returns every address to serve.
    fn refresh(&self) -> Vec<IpAddr> {
        let versions: Vec<u64> = self.clusters.iter().map(|c| c.resource_version()).collect();
        if self.table.read().expect("edge table").versions == versions {
            return self
                .table
                .read()
                .expect("edge table")
                .addresses
                .iter()
                .copied()
                .collect();
        }
        let mut table = Table {
            versions,
            ..Table::default()
        };
        for (i, cluster) in self.clusters.iter().enumerate() {
            let api = Api::new(cluster);
            self.add_cluster(i, &api, &mut table);
        }
        let addresses = table.addresses.iter().copied().collect();
        *self.table.write().expect("edge table") = table;
        addresses
    }

    fn add_cluster(&self, i: usize, api: &Api<'_>, table: &mut Table) {
        let proxy = cilium::proxy_protocol(api);
        let ipv4_only = api
            .get("", "services", Some("kube-system"), "cilium-ingress")
            .is_some_and(|svc| {
                !svc.pointer("/spec/ipFamilies")
                    .and_then(Value::as_array)
                    .is_some_and(|f| f.iter().any(|x| x == "IPv6"))
            });
        let keys: HashMap<String, String> = api
            .list("acme.cert-manager.io", "challenges")
            .iter()
            .filter_map(|c| {
                Some((
                    s(c, "/spec/token")?.to_string(),
                    s(c, "/spec/key")?.to_string(),
                ))
            })
            .collect();
        let ingresses = api.list("networking.k8s.io", "ingresses");
        // Per host: whether any Ingress of it enforces HTTPS, the routes of its TLS
        // Ingresses, its application's routes and its solver paths.
        let mut redirect: HashMap<String, bool> = HashMap::new();
        let mut tls_routes: HashMap<String, Vec<RoutePath>> = HashMap::new();
        let mut app: HashMap<String, Vec<RoutePath>> = HashMap::new();
        let mut solver: HashMap<String, HashMap<String, String>> = HashMap::new();
        for ing in &ingresses {
            let enforces = cilium::enforces_https(api, ing);
            let tls = cilium::tls_hosts_of(ing);
            for host in &tls {
                *redirect.entry(host.clone()).or_default() |= enforces;
            }
            let solver_ingress =
                s(ing, "/metadata/name").is_some_and(|n| n.starts_with("cm-acme-http-solver-"));
            let hosts: HashSet<String> = ing
                .pointer("/spec/rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| s(r, "/host"))
                .map(str::to_ascii_lowercase)
                .collect();
            for host in hosts {
                let routes = RoutePath::of_host(ing, &host);
                for r in &routes {
                    let Some(token) = r.solver_token() else {
                        continue;
                    };
                    if let Some(key) = keys.get(token) {
                        solver
                            .entry(host.clone())
                            .or_default()
                            .insert(r.path().to_string(), key.clone());
                    }
                }
                if tls.contains(&host) {
                    tls_routes
                        .entry(host.clone())
                        .or_default()
                        .extend(routes.iter().cloned());
                }
                if !solver_ingress {
                    app.entry(host)
                        .or_default()
                        .extend(routes.into_iter().filter(|r| !r.is_solver()));
                }
            }
        }
        let served = self.chains.served(i, api, &ingresses);
        for ing in &ingresses {
            let addresses: Vec<IpAddr> = ing
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| s(a, "/ip")?.parse().ok())
                .filter(|ip: &IpAddr| ip.is_loopback())
                .collect();
            table.addresses.extend(addresses.iter().copied());
            for host in cilium::tls_hosts_of(ing) {
                for ip in &addresses {
                    let key = (*ip, host.clone());
                    if table.routes.contains_key(&key) {
                        continue;
                    }
                    let route = Route {
                        certificate: served.get(&key).cloned().unwrap_or(Served::Missing),
                        redirect: redirect.get(&host).copied().unwrap_or(false),
                        tls_routes: tls_routes.get(&host).cloned().unwrap_or_default(),
                        app: app.get(&host).cloned().unwrap_or_default(),
                        solver: solver.get(&host).cloned().unwrap_or_default(),
                        proxy,
                        ipv6_broken: proxy && ipv4_only,
                        exact_first: false,
                    };
                    table.routes.insert(key, Arc::new(route));
                }
            }
        }
        // Cilium's Gateway listeners, with PROXY protocol by their own flag.
        let gateway_proxy = cilium::gateway_proxy_protocol(api);
        for g in gateways::hosts(api, &keys) {
            let certificate = self.chains.load(i, api, &g.secret);
            table.addresses.extend(g.addresses.iter().copied());
            for ip in &g.addresses {
                let route = Route {
                    certificate: certificate.clone(),
                    redirect: g.redirect,
                    tls_routes: if g.redirect {
                        vec![RoutePath::prefix("/")]
                    } else {
                        Vec::new()
                    },
                    app: Vec::new(),
                    solver: g.solver.clone(),
                    proxy: gateway_proxy,
                    ipv6_broken: false,
                    exact_first: true,
                };
                table
                    .routes
                    .entry((*ip, g.host.clone()))
                    .or_insert_with(|| Arc::new(route));
            }
        }
    }

    fn route(&self, ip: IpAddr, host: &str) -> Option<Arc<Route>> {
        self.table
            .read()
            .expect("edge table")
            .routes
            .get(&(ip, host.to_ascii_lowercase()))
            .cloned()
    }

    async fn listen(self: Arc<Self>, ip: IpAddr, shutdown: CancellationToken) {
        for (port, tls) in [(self.ports.https, true), (self.ports.http, false)] {
            let listener = match TcpListener::bind(SocketAddr::new(ip, port)).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(address = %ip, port, error = %e, "kubesim cannot serve this load-balancer address");
                    continue;
                }
            };
            let config = tls.then(|| {
                let mut c = rustls::ServerConfig::builder_with_provider(self.provider.clone())
                    .with_safe_default_protocol_versions()
                    .expect("default TLS versions")
                    .with_no_client_auth()
                    .with_cert_resolver(Arc::new(Resolver {
                        edge: self.clone(),
                        ip,
                    }));
                c.alpn_protocols = vec![b"http/1.1".to_vec()];
                Arc::new(c)
            });
            let edge = self.clone();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                loop {
                    let accepted = tokio::select! {
                        _ = stop.cancelled() => return,
                        a = listener.accept() => a,
                    };
                    let Ok((stream, _)) = accepted else { continue };
                    let edge = edge.clone();
                    let config = config.clone();
                    tokio::spawn(async move {
                        let _ = tokio::time::timeout(
                            Duration::from_secs(10),
                            edge.serve(ip, stream, config),
                        )
                        .await;
                    });
                }
            });
        }
    }

    async fn serve(
        &self,
        ip: IpAddr,
        mut stream: TcpStream,
        config: Option<Arc<rustls::ServerConfig>>,
    ) {
        // An optional PROXY header first; then the host (SNI, or `Host`) picks the route,
        // and the route says whether the connection is served (`::1` is shared by clusters
        // with and without PROXY protocol).
        let header = match starts_with_proxy_header(&stream).await {
            Some(true) => match proxy_header(&mut stream).await {
                Some(ipv6) => Some(ipv6),
                None => return,
            },
            Some(false) => None,
            None => return,
        };
        match config {
            Some(config) => {
                let acceptor = tokio_rustls::LazyConfigAcceptor::new(
                    rustls::server::Acceptor::default(),
                    stream,
                );
                let Ok(start) = acceptor.await else { return };
                let route = start
                    .client_hello()
                    .server_name()
                    .and_then(|h| self.route(ip, h));
                if !route
                    .as_ref()
                    .map_or(header.is_none(), |r| r.admits(header))
                {
                    return;
                }
                let accept = start.into_stream(config);
                if route
                    .as_ref()
                    .is_none_or(|r| matches!(r.certificate, Served::Missing))
                {
                    // No chain or no certificate for the name: reset, as Envoy does.
                    if let Some(io) = accept.get_ref() {
                        reset(io);
                    }
                    return;
                }
                let Ok(mut tls) = accept.await else {
                    return;
                };
                if let Some((host, path)) = read_request(&mut tls).await {
                    let answer = route
                        .as_ref()
                        .map_or(Answer::NotFound, |r| r.answer_https(&path));
                    let _ = tls
                        .write_all(answer.response(&host, &path).as_bytes())
                        .await;
                }
                let _ = tls.shutdown().await;
            }
            None => self.serve_http(ip, stream, header).await,
        }
    }

    async fn serve_http(&self, ip: IpAddr, mut stream: TcpStream, header: Option<bool>) {
        let Some((host, path)) = read_request(&mut stream).await else {
            return;
        };
        let route = self.route(ip, &host);
        if !route
            .as_ref()
            .map_or(header.is_none(), |r| r.admits(header))
        {
            return;
        }
        let answer = route.map_or(Answer::NotFound, |r| r.answer_http(&path));
        let _ = stream
            .write_all(answer.response(&host, &path).as_bytes())
            .await;
        let _ = stream.shutdown().await;
    }
}

/// Closes a connection with a reset (SO_LINGER 0), not a FIN.
fn reset(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

struct Resolver {
    edge: Arc<Edge>,
    ip: IpAddr,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Resolver({})", self.ip)
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        hello
            .server_name()
            .and_then(|h| self.edge.route(self.ip, h))
            .and_then(|r| match &r.certificate {
                Served::Loaded(key) => Some(key.clone()),
                Served::Missing => None,
            })
    }
}

/// Whether the connection starts with a PROXY header (v1 `PROXY ` or the v2 signature);
/// None when nothing arrives.
async fn starts_with_proxy_header(stream: &TcpStream) -> Option<bool> {
    const V2: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
    let mut buf = [0u8; 12];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    loop {
        let n = tokio::time::timeout_at(deadline, stream.peek(&mut buf))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        let seen = &buf[..n];
        if !b"PROXY ".starts_with(&seen[..n.min(6)]) && !V2.starts_with(seen) {
            return Some(false);
        }
        if n >= 12 {
            return Some(true);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Reads a PROXY v1 or v2 header: Some(whether it names an IPv6 client), None when the
/// connection does not start with one.
async fn proxy_header(stream: &mut TcpStream) -> Option<bool> {
    const V2: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
    let mut start = [0u8; 12];
    tokio::time::timeout(Duration::from_secs(3), stream.read_exact(&mut start))
        .await
        .ok()?
        .ok()?;
    if &start == V2 {
        let mut rest = [0u8; 4];
        stream.read_exact(&mut rest).await.ok()?;
        let len = u16::from_be_bytes([rest[2], rest[3]]) as usize;
        let mut body = vec![0u8; len];
        stream.read_exact(&mut body).await.ok()?;
        return Some(rest[1] >> 4 == 2);
    }
    if !start.starts_with(b"PROXY ") {
        return None;
    }
    let mut line = start.to_vec();
    while !line.ends_with(b"\r\n") {
        if line.len() > 107 {
            return None;
        }
        let mut b = [0u8; 1];
        stream.read_exact(&mut b).await.ok()?;
        line.push(b[0]);
    }
    Some(line.starts_with(b"PROXY TCP6"))
}
