//! kubesim's Cilium listeners on real sockets, judged by curl (an independent client): per
//! route, as Envoy answers with Cilium's translation of the Ingresses — the 301 on the paths
//! an enforcing host's TLS Ingresses route and a bare 404 on any other, the application's
//! page over HTTPS, a solver's key over plain HTTP, and a reset handshake while the host's
//! Secret does not exist.

use std::process::Command;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use kubesim::sim::edge::EdgePorts;
use kubesim::{Clock, Fleet, FleetOptions, WriteOpts};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn free_ports() -> EdgePorts {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    EdgePorts {
        https: a.local_addr().unwrap().port(),
        http: b.local_addr().unwrap().port(),
    }
}

fn create(fleet: &Fleet, group: &str, plural: &str, ns: Option<&str>, obj: Value) {
    let c = &fleet.clusters[0].cluster;
    let rt = c.resolve(group, plural).unwrap();
    c.create(&rt, ns, obj, &WriteOpts::system()).unwrap();
}

fn ingress(name: &str, host: &str, paths: &[(&str, &str)], force_https: bool) -> Value {
    let paths: Vec<Value> = paths
        .iter()
        .map(|(path, kind)| json!({"path": path, "pathType": kind, "backend": {"service": {"name": name, "port": {"number": 80}}}}))
        .collect();
    let annotations = if force_https {
        json!({"ingress.cilium.io/force-https": "enabled"})
    } else {
        json!({})
    };
    json!({"metadata": {"name": name, "annotations": annotations},
           "spec": {"ingressClassName": "cilium",
                    "rules": [{"host": host, "http": {"paths": paths}}],
                    "tls": [{"hosts": [host], "secretName": format!("{name}-tls")}]}})
}

/// What curl got: its exit code, the status line and headers, the body.
struct Got {
    code: i32,
    head: String,
    body: String,
}

fn curl(scheme: &str, host: &str, ip: &str, port: u16, path: &str) -> Got {
    curl_with(&["-k"], scheme, host, ip, port, path)
}

fn curl_with(extra: &[&str], scheme: &str, host: &str, ip: &str, port: u16, path: &str) -> Got {
    let out = Command::new("curl")
        .args(extra)
        .args([
            "-sS",
            "--max-time",
            "5",
            "-D",
            "-",
            "--resolve",
            &format!("{host}:{port}:{ip}"),
            &format!("{scheme}://{host}:{port}{path}"),
        ])
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Got {
        code: out.status.code().unwrap_or(-1),
        head: format!("{head}{}", String::from_utf8_lossy(&out.stderr)),
        body: body.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_listeners_answer_per_route_as_ciliums_envoy_does() {
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let (fleet, clock, ports) = shared_cluster(&stop).await;
    // app: enforcing, `/` routed, its Secret issued.
    create(
        &fleet,
        "networking.k8s.io",
        "ingresses",
        Some("web"),
        ingress("app", "app.example.com", &[("/", "Prefix")], true),
    );
    let (chain, key) = kubesim::sim::pki::issue(
        kubesim::sim::pki::Hierarchy::Production,
        &["app.example.com".into()],
        Utc::now() - chrono::Duration::days(1),
        Utc::now() + chrono::Duration::days(60),
        7,
    )
    .unwrap();
    // `issue` gives the base64 of the PEMs, as a Secret's data holds them.
    create(
        &fleet,
        "",
        "secrets",
        Some("web"),
        json!({"metadata": {"name": "app-tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": chain, "tls.key": key}}),
    );
    // api: enforcing, only `/api` routed, no Secret yet.
    create(
        &fleet,
        "networking.k8s.io",
        "ingresses",
        Some("web"),
        ingress("api", "api.example.com", &[("/api", "Prefix")], true),
    );
    // plain: not enforcing, `/` routed, and a solver's own Ingress for a challenge token.
    create(
        &fleet,
        "networking.k8s.io",
        "ingresses",
        Some("web"),
        ingress("plain", "plain.example.com", &[("/", "Prefix")], false),
    );
    create(
        &fleet,
        "acme.cert-manager.io",
        "challenges",
        Some("web"),
        json!({"metadata": {"name": "plain-1"}, "spec": {"dnsName": "plain.example.com", "token": "tok123", "key": "tok123.thumb", "type": "HTTP-01", "url": "https://acme.invalid/chall/1", "authorizationURL": "https://acme.invalid/authz/1", "wildcard": false, "solver": {"dns01": {}}, "issuerRef": {"name": "none", "kind": "ClusterIssuer"}}}),
    );
    create(
        &fleet,
        "networking.k8s.io",
        "ingresses",
        Some("web"),
        json!({"metadata": {"name": "cm-acme-http-solver-abcde"},
        "spec": {"ingressClassName": "cilium", "rules": [{"host": "plain.example.com", "http": {"paths": [{"path": "/.well-known/acme-challenge/tok123", "pathType": "ImplementationSpecific", "backend": {"service": {"name": "cm-acme-http-solver-abcde", "port": {"number": 8089}}}}]}}]}}),
    );
    for _ in 0..3 {
        clock.advance(chrono::Duration::seconds(1));
        fleet.step();
    }
    let c = &fleet.clusters[0].cluster;
    let rt = c.resolve("networking.k8s.io", "ingresses").unwrap();
    let app = c.get(&rt, Some("web"), "app").unwrap();
    let ip = app["status"]["loadBalancer"]["ingress"][0]["ip"]
        .as_str()
        .expect("Cilium published an address")
        .to_string();
    assert!(ip.starts_with("127."), "{ip}");

    // The listeners come up, and the routing table (rebuilt every 200 ms, asynchronously to
    // the writes above) catches up with the last object written: the solver's route.
    let mut up = false;
    for _ in 0..100 {
        let solver = curl(
            "http",
            "plain.example.com",
            &ip,
            ports.http,
            "/.well-known/acme-challenge/tok123",
        );
        if solver.head.starts_with("HTTP/1.1 200") {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(up, "the HTTP listener answers with every route");

    // Enforcing host, routed path: Envoy's default redirect code, 301.
    let got = curl(
        "http",
        "app.example.com",
        &ip,
        ports.http,
        "/.well-known/acme-challenge/x",
    );
    assert!(got.head.starts_with("HTTP/1.1 301"), "{}", got.head);
    assert!(
        got.head
            .to_ascii_lowercase()
            .contains("location: https://app.example.com/.well-known/acme-challenge/x"),
        "{}",
        got.head
    );
    // Over HTTPS, with the certificate of the host's Secret (verified against kubesim's
    // production root), the application's `/` route answers the challenge path with its
    // page.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root.pem");
    std::fs::write(&root, kubesim::sim::pki::production_root_pem()).unwrap();
    let got = curl_with(
        &["--cacert", root.to_str().unwrap()],
        "https",
        "app.example.com",
        &ip,
        ports.https,
        "/.well-known/acme-challenge/x",
    );
    assert_eq!(got.code, 0, "{}", got.head);
    assert!(got.head.starts_with("HTTP/1.1 200"), "{}", got.head);
    assert!(got.body.starts_with("<!DOCTYPE html>"), "{}", got.body);

    // Over HTTPS the virtual host holds the TLS Ingress's routes only: a separate solver
    // Ingress for the host (no TLS) is not there — its token's path gets the application's
    // page — while a solver edited into the TLS Ingress answers its key.
    for (name, token) in [("app-out", "tokout"), ("app-in", "tokin")] {
        create(
            &fleet,
            "acme.cert-manager.io",
            "challenges",
            Some("web"),
            json!({"metadata": {"name": name}, "spec": {"dnsName": "app.example.com", "token": token, "key": format!("{token}.thumb"), "type": "HTTP-01", "url": "https://acme.invalid/chall/2", "authorizationURL": "https://acme.invalid/authz/2", "wildcard": false, "solver": {"http01": {}}, "issuerRef": {"name": "none", "kind": "ClusterIssuer"}}}),
        );
    }
    create(
        &fleet,
        "networking.k8s.io",
        "ingresses",
        Some("web"),
        json!({"metadata": {"name": "cm-acme-http-solver-out"},
        "spec": {"ingressClassName": "cilium", "rules": [{"host": "app.example.com", "http": {"paths": [{"path": "/.well-known/acme-challenge/tokout", "pathType": "Exact", "backend": {"service": {"name": "cm-acme-http-solver-out", "port": {"number": 8089}}}}]}}]}}),
    );
    let c = &fleet.clusters[0].cluster;
    let ingresses = c.resolve("networking.k8s.io", "ingresses").unwrap();
    c.merge_patch(
        &ingresses,
        Some("web"),
        "app",
        &json!({"spec": {"rules": [{"host": "app.example.com", "http": {"paths": [
            {"path": "/.well-known/acme-challenge/tokin", "pathType": "Exact", "backend": {"service": {"name": "cm-acme-http-solver-in", "port": {"number": 8089}}}},
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "app", "port": {"number": 80}}}}]}}]}}),
        &WriteOpts::system(),
    )
    .unwrap();
    let mut in_place = None;
    for _ in 0..100 {
        let got = curl(
            "https",
            "app.example.com",
            &ip,
            ports.https,
            "/.well-known/acme-challenge/tokin",
        );
        if got.body == "tokin.thumb" {
            in_place = Some(got);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(in_place.is_some(), "the in-place solver answers over HTTPS");
    let got = curl(
        "https",
        "app.example.com",
        &ip,
        ports.https,
        "/.well-known/acme-challenge/tokout",
    );
    assert!(got.head.starts_with("HTTP/1.1 200"), "{}", got.head);
    assert!(
        got.body.starts_with("<!DOCTYPE html>"),
        "the application, not the key: {}",
        got.body
    );

    // Enforcing host, a path its TLS Ingress does not route: a bare 404, no redirect.
    let got = curl(
        "http",
        "api.example.com",
        &ip,
        ports.http,
        "/.well-known/acme-challenge/x",
    );
    assert!(got.head.starts_with("HTTP/1.1 404"), "{}", got.head);
    let got = curl("http", "api.example.com", &ip, ports.http, "/api/v1");
    assert!(got.head.starts_with("HTTP/1.1 301"), "{}", got.head);
    // No Secret: the handshake is reset (curl: SSL connect error or receive failure).
    let got = curl("https", "api.example.com", &ip, ports.https, "/api/v1");
    assert!(
        [35, 56].contains(&got.code) && got.head.to_ascii_lowercase().contains("reset"),
        "curl {}: {}",
        got.code,
        got.head
    );

    // Not enforcing: the solver's path answers the key, the application everything else.
    let got = curl(
        "http",
        "plain.example.com",
        &ip,
        ports.http,
        "/.well-known/acme-challenge/tok123",
    );
    assert!(got.head.starts_with("HTTP/1.1 200"), "{}", got.head);
    assert_eq!(got.body, "tok123.thumb");
    let got = curl("http", "plain.example.com", &ip, ports.http, "/shop");
    assert!(got.head.starts_with("HTTP/1.1 200"), "{}", got.head);
    assert!(got.body.starts_with("<!DOCTYPE html>"), "{}", got.body);
}

/// Starts one shared-mode cluster with its Cilium objects and the `web` namespace.
async fn shared_cluster(stop: &CancellationToken) -> (Fleet, Arc<Clock>, EdgePorts) {
    let clock = Arc::new(Clock::manual(
        Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap(),
    ));
    let ports = free_ports();
    let opts = FleetOptions {
        controllers: true,
        edge: Some(ports),
        ..FleetOptions::numbered(1)
    };
    let fleet = Fleet::start(&opts, clock.clone(), stop.clone())
        .await
        .unwrap();
    create(
        &fleet,
        "",
        "configmaps",
        Some("kube-system"),
        json!({"metadata": {"name": "cilium-config"}, "data": {"enforce-ingress-https": "false", "ingress-default-lb-mode": "shared"}}),
    );
    create(
        &fleet,
        "",
        "services",
        Some("kube-system"),
        json!({"metadata": {"name": "cilium-ingress"}, "spec": {"type": "LoadBalancer", "ipFamilies": ["IPv4"]}}),
    );
    create(
        &fleet,
        "networking.k8s.io",
        "ingressclasses",
        None,
        json!({"metadata": {"name": "cilium"}, "spec": {"controller": "cilium.io/ingress-controller"}}),
    );
    create(
        &fleet,
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": "web"}}),
    );
    (fleet, clock, ports)
}

/// A Secret holding a certificate for `host` from `hierarchy`.
fn tls_secret(name: &str, host: &str, hierarchy: kubesim::sim::pki::Hierarchy) -> Value {
    let (chain, key) = kubesim::sim::pki::issue(
        hierarchy,
        &[host.into()],
        Utc::now() - chrono::Duration::days(1),
        Utc::now() + chrono::Duration::days(60),
        11,
    )
    .unwrap();
    json!({"metadata": {"name": name}, "type": "kubernetes.io/tls", "data": {"tls.crt": chain, "tls.key": key}})
}

/// Polls until `ok` holds for what curl got (10 s).
async fn until(what: &str, mut get: impl FnMut() -> Got, ok: impl Fn(&Got) -> bool) -> Got {
    for _ in 0..100 {
        let got = get();
        if ok(&got) {
            return got;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let got = get();
    panic!("{what}: curl {}: {}", got.code, got.head);
}

fn reset(got: &Got) -> bool {
    [35, 56].contains(&got.code) && got.head.to_ascii_lowercase().contains("reset")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_listener_has_no_default_certificate_and_keeps_what_envoy_accepted() {
    use kubesim::sim::pki::Hierarchy;
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let (fleet, clock, ports) = shared_cluster(&stop).await;
    let step = |n: usize| {
        for _ in 0..n {
            clock.advance(chrono::Duration::seconds(1));
            fleet.step();
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root.pem");
    std::fs::write(&root, kubesim::sim::pki::production_root_pem()).unwrap();
    let verified = |host: &str, ip: &str| {
        curl_with(
            &["--cacert", root.to_str().unwrap()],
            "https",
            host,
            ip,
            ports.https,
            "/",
        )
    };
    let web = Some("web");
    let ing = "networking.k8s.io";
    create(
        &fleet,
        "",
        "secrets",
        web,
        tls_secret("one-tls", "one.example.com", Hierarchy::Production),
    );
    create(
        &fleet,
        ing,
        "ingresses",
        web,
        ingress("one", "one.example.com", &[("/", "Prefix")], false),
    );
    step(3);
    let c = &fleet.clusters[0].cluster;
    let ingresses = c.resolve(ing, "ingresses").unwrap();
    let secrets = c.resolve("", "secrets").unwrap();
    let ip = c.get(&ingresses, web, "one").unwrap()["status"]["loadBalancer"]["ingress"][0]["ip"]
        .as_str()
        .expect("Cilium published an address")
        .to_string();
    until(
        "one serves its Secret",
        || verified("one.example.com", &ip),
        |g| g.code == 0,
    )
    .await;

    // A server name no filter chain matches: Envoy closes the connection, no default
    // certificate.
    let got = curl("https", "unknown.example.com", &ip, ports.https, "/");
    assert!(reset(&got), "curl {}: {}", got.code, got.head);

    // A version of the Secret that does not load is rejected: the last good one serves.
    c.merge_patch(
        &secrets,
        web,
        "one-tls",
        &json!({"data": {"tls.crt": "bm90IGEgY2VydGlmaWNhdGU="}}),
        &WriteOpts::system(),
    )
    .unwrap();
    // A Secret that never loaded leaves its chain without a certificate: reset. Its HTTP
    // route answering shows the table has been rebuilt since the junk above.
    create(
        &fleet,
        "",
        "secrets",
        web,
        json!({"metadata": {"name": "two-tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "bm90IGEgY2VydGlmaWNhdGU=", "tls.key": "bm9wZQ=="}}),
    );
    create(
        &fleet,
        ing,
        "ingresses",
        web,
        ingress("two", "two.example.com", &[("/", "Prefix")], false),
    );
    step(3);
    until(
        "two's HTTP route is on the listener",
        || curl("http", "two.example.com", &ip, ports.http, "/"),
        |g| g.head.starts_with("HTTP/1.1 200"),
    )
    .await;
    let got = curl("https", "two.example.com", &ip, ports.https, "/");
    assert!(reset(&got), "never loaded: curl {}: {}", got.code, got.head);
    let got = verified("one.example.com", &ip);
    assert_eq!(
        got.code, 0,
        "the last good certificate keeps serving: {}",
        got.head
    );

    // A second Secret for one.example.com on the shared listener: Envoy refuses the update
    // and keeps the chains it accepted — one's Secret (production) rather than dup's
    // (staging), and no chain for a host added after.
    c.merge_patch(
        &secrets,
        web,
        "one-tls",
        &tls_secret("one-tls", "one.example.com", Hierarchy::Production),
        &WriteOpts::system(),
    )
    .unwrap();
    create(
        &fleet,
        "",
        "secrets",
        web,
        tls_secret("dup-tls", "one.example.com", Hierarchy::Staging),
    );
    create(
        &fleet,
        ing,
        "ingresses",
        web,
        ingress("dup", "one.example.com", &[("/dup", "Prefix")], false),
    );
    create(
        &fleet,
        "",
        "secrets",
        web,
        tls_secret("late-tls", "late.example.com", Hierarchy::Production),
    );
    create(
        &fleet,
        ing,
        "ingresses",
        web,
        ingress("late", "late.example.com", &[("/", "Prefix")], false),
    );
    step(3);
    until(
        "late's HTTP route is on the listener (routes still update)",
        || curl("http", "late.example.com", &ip, ports.http, "/"),
        |g| g.head.starts_with("HTTP/1.1 200"),
    )
    .await;
    let got = curl("https", "late.example.com", &ip, ports.https, "/");
    assert!(
        reset(&got),
        "no chain for a host added after the refusal: curl {}: {}",
        got.code,
        got.head
    );
    let got = verified("one.example.com", &ip);
    assert_eq!(
        got.code, 0,
        "one's accepted chain keeps its Secret: {}",
        got.head
    );

    // The duplicate gone, the next update is accepted: late gets its chain.
    c.delete(&ingresses, web, "dup", false).unwrap();
    step(3);
    until(
        "late serves once the duplicate is gone",
        || verified("late.example.com", &ip),
        |g| g.code == 0,
    )
    .await;
}
