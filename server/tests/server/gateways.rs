//! Gateways through kubesim's Cilium Gateway controller: a listener whose certificate
//! reference does not resolve is reported as the controller reports it, and cleared when
//! the reference is permitted and its Secret holds a certificate.

use base64::Engine;
use serde_json::{json, Value};

use crate::helpers::*;
use crate::probing::create;

fn pem_secret(ns: &str, name: &str) -> Value {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({"metadata": {"name": name, "namespace": ns}, "type": "kubernetes.io/tls",
           "data": {"tls.crt": b64("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
                    "tls.key": b64("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n")}})
}

fn of_rule<'v>(findings: &'v Value, rule: &str) -> Vec<&'v Value> {
    findings["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["rule"] == rule)
        .collect()
}

fn not_ready(findings: &Value) -> Vec<&Value> {
    of_rule(findings, "gateway.listener-not-ready")
}

fn not_permitted(findings: &Value) -> Vec<&Value> {
    of_rule(findings, "gateway.reference-not-permitted")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listener_whose_certificate_is_not_permitted_is_not_ready_until_a_reference_grant() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    for ns in ["shop", "certs"] {
        create(
            &app,
            0,
            "",
            "namespaces",
            None,
            json!({"metadata": {"name": ns}}),
        );
    }
    // The certificate lives in the platform's namespace; the Gateway in the team's.
    create(
        &app,
        0,
        "",
        "secrets",
        Some("certs"),
        pem_secret("certs", "shop-tls"),
    );
    create(
        &app,
        0,
        "gateway.networking.k8s.io",
        "gateways",
        Some("shop"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "web"},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "https", "hostname": "shop.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls", "namespace": "certs"}]}}]}}),
    );
    app.eventually("the listener is reported as not permitted", || async {
        let findings = app.json("/api/v1/findings").await;
        not_ready(&findings).is_empty()
            && not_permitted(&findings).first().is_some_and(|f| {
                f["severity"] == "critical"
                    && f["kind"] == "Gateway"
                    && f["message"].as_str().is_some_and(|m| {
                        m.contains(
                        "ResolvedRefs is False (RefNotPermitted): CertificateRef is not permitted",
                    )
                    })
            })
    })
    .await;
    // A grant for another Secret does not permit this one.
    create(
        &app,
        0,
        "gateway.networking.k8s.io",
        "referencegrants",
        Some("certs"),
        json!({"metadata": {"name": "other"},
               "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "shop"}],
                        "to": [{"group": "", "kind": "Secret", "name": "other-tls"}]}}),
    );
    // The grant for it does.
    create(
        &app,
        0,
        "gateway.networking.k8s.io",
        "referencegrants",
        Some("certs"),
        json!({"metadata": {"name": "shop-gateways"},
               "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "shop"}],
                        "to": [{"group": "", "kind": "Secret", "name": "shop-tls"}]}}),
    );
    app.eventually("the permitted listener is no longer reported", || async {
        let findings = app.json("/api/v1/findings").await;
        not_ready(&findings).is_empty() && not_permitted(&findings).is_empty()
    })
    .await;
    // The status kubectl would show: resolved and accepted.
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("gateway.networking.k8s.io", "gateways").unwrap();
    let gw = c.get(&rt, Some("shop"), "web").unwrap();
    let listener = &gw["status"]["listeners"][0];
    let status = |kind: &str| {
        listener["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == kind)
            .map(|c| (c["status"].clone(), c["reason"].clone()))
    };
    assert_eq!(
        status("ResolvedRefs"),
        Some((json!("True"), json!("ResolvedRefs"))),
        "{gw:#}"
    );
    assert_eq!(
        status("Accepted"),
        Some((json!("True"), json!("Accepted"))),
        "{gw:#}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listener_whose_secret_is_missing_is_not_ready_until_it_holds_a_certificate() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": "shop"}}),
    );
    create(
        &app,
        0,
        "gateway.networking.k8s.io",
        "gateways",
        Some("shop"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "web"},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "https", "hostname": "shop.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"certificateRefs": [{"name": "shop-tls"}]}}]}}),
    );
    app.eventually("the missing Secret is reported", || async {
        let findings = app.json("/api/v1/findings").await;
        not_ready(&findings).first().is_some_and(|f| {
            f["message"].as_str().is_some_and(|m| {
                m.contains("ResolvedRefs is False (InvalidCertificateRef)")
                    && m.contains("secrets \"shop-tls\" not found")
            })
        })
    })
    .await;
    create(
        &app,
        0,
        "",
        "secrets",
        Some("shop"),
        pem_secret("shop", "shop-tls"),
    );
    app.eventually("the resolved listener is no longer reported", || async {
        not_ready(&app.json("/api/v1/findings").await).is_empty()
    })
    .await;
    app.stop().await;
}

/// The Gateways list: one row per TLS listener with what its controller says and the
/// Certificate writing its Secret; a tenant sees their own namespaces' Gateways only, in
/// the page, the JSON and the CSV alike.
#[tokio::test(flavor = "multi_thread")]
async fn the_gateways_list_shows_each_listener_as_its_reader_may_see_it() {
    let app = app_with(&["zrh-prod"])
        .with_controllers()
        .auth(crate::tenancy::auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    for (ns, host) in [
        ("acme-shop", "shop.acme.example"),
        ("globex-web", "www.globex.example"),
    ] {
        create(
            &app,
            0,
            "",
            "namespaces",
            None,
            json!({"metadata": {"name": ns}}),
        );
        create(
            &app,
            0,
            "gateway.networking.k8s.io",
            "gateways",
            Some(ns),
            json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                   "metadata": {"name": format!("{ns}-gateway")},
                   "spec": {"gatewayClassName": "cilium", "listeners": [
                       {"name": "https", "hostname": host, "port": 443, "protocol": "HTTPS",
                        "tls": {"certificateRefs": [{"name": format!("{ns}-tls")}]}}]}}),
        );
    }
    // acme-shop's Secret exists; globex-web's does not.
    create(
        &app,
        0,
        "",
        "secrets",
        Some("acme-shop"),
        pem_secret("acme-shop", "acme-shop-tls"),
    );
    app.eventually(
        "both listeners are listed with their controller's words",
        || async {
            let rows = app
                .get_as("/api/v1/gateways", "sue", "support")
                .await
                .json::<Value>()
                .await
                .unwrap();
            let items = rows["items"].as_array().cloned().unwrap_or_default();
            items.len() == 2
            // The failing one first, with the reason its controller gave.
            && items[0]["gateway"] == "globex-web-gateway"
            && items[0]["resolved_refs"] == "False"
            && items[0]["reason"] == "InvalidCertificateRef"
            && items[0]["severity"] == "critical"
            && items[1]["gateway"] == "acme-shop-gateway"
            && items[1]["resolved_refs"] == "True"
            && items[1]["severity"].is_null()
        },
    )
    .await;
    let tenant = app
        .get_as("/api/v1/gateways", "carol", "customer-acme")
        .await
        .text()
        .await
        .unwrap();
    let theirs: Value = serde_json::from_str(&tenant).unwrap();
    assert_eq!(theirs["total"], 1, "{tenant}");
    assert_eq!(theirs["items"][0]["hostname"], "shop.acme.example");
    assert!(!tenant.contains("globex"), "{tenant}");
    for path in ["/gateways", "/api/v1/gateways.csv"] {
        let body = app
            .get_as(path, "carol", "customer-acme")
            .await
            .text()
            .await
            .unwrap();
        assert!(
            body.contains("acme-shop-gateway") && !body.contains("globex"),
            "{path}: {body}"
        );
    }
    // Search finds the hosts Gateways serve, as each reader may see them.
    let found = app
        .get_as("/search?q=www.globex.example", "sue", "support")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        found.contains("data-testid=\"search-gateway\"")
            && found.contains("Gateway globex-web-gateway · www.globex.example"),
        "{found}"
    );
    let theirs = app
        .get_as("/search?q=www.globex.example", "carol", "customer-acme")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !theirs.contains("search-gateway") && !theirs.contains("globex-web-gateway"),
        "{theirs}"
    );
    let page = app
        .get_as("/gateways", "sue", "support")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(
            "Accepted False, ResolvedRefs False, Programmed False (InvalidCertificateRef)"
        ),
        "{page}"
    );
    app.stop().await;
}

/// A listener serving a hostname its Certificate does not name: critical once that
/// Certificate is issued, and gone when the hostname is added to its dnsNames.
#[tokio::test(flavor = "multi_thread")]
async fn a_listener_hostname_its_certificate_does_not_name_is_reported_until_it_is_added() {
    let app = app_with(&["zrh-prod"]).await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "cert-manager.io",
        "certificates",
        Some("default"),
        json!({"metadata": {"name": "www-tls"},
               "spec": {"secretName": "www-tls", "dnsNames": ["www.example.com"],
                        "issuerRef": {"kind": "ClusterIssuer", "name": "letsencrypt-prod"}}}),
    );
    patch_status(
        &app,
        "cert-manager.io",
        "certificates",
        "www-tls",
        json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
                               "message": "Certificate is up to date and has not expired"}]}),
    );
    create(
        &app,
        0,
        "gateway.networking.k8s.io",
        "gateways",
        Some("default"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "web"},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "https-www", "hostname": "www.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"certificateRefs": [{"name": "www-tls"}]}},
                   {"name": "https-shop", "hostname": "shop.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"certificateRefs": [{"name": "www-tls"}]}}]}}),
    );
    app.eventually("the uncovered hostname is reported, once", || async {
        let findings = app.json("/api/v1/findings").await;
        let found = of_rule(&findings, "gateway.hostname-not-covered");
        found.len() == 1
            && found[0]["severity"] == "critical"
            && found[0]["title"].as_str().is_some_and(|t| {
                t.contains(
                    "shop.example.com not covered by Certificate www-tls of listener https-shop",
                )
            })
    })
    .await;
    let c = &app.fleet.clusters[0].cluster;
    c.merge_patch(
        &c.resolve("cert-manager.io", "certificates").unwrap(),
        Some("default"),
        "www-tls",
        &json!({"spec": {"dnsNames": ["www.example.com", "shop.example.com"]}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    app.eventually("the covered hostname is no longer reported", || async {
        of_rule(
            &app.json("/api/v1/findings").await,
            "gateway.hostname-not-covered",
        )
        .is_empty()
    })
    .await;
    app.stop().await;
}

/// A Gateway whose certificate is solved over HTTP-01 by cert-manager's gatewayHTTPRoute
/// solver, without a port-80 listener: the challenge's problem is rooted at the unreachable
/// route, and a port-80 listener clears it as the certificate is issued.
#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_solver_route_without_a_port_80_listener_is_the_root_until_one_serves_it() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": "shop"}}),
    );
    create(
        &app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-gateway"},
               "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com",
                                 "privateKeySecretRef": {"name": "le-gateway"},
                                 "solvers": [{"http01": {"gatewayHTTPRoute": {}}}]}}}),
    );
    create(
        &app,
        0,
        "gateway.networking.k8s.io",
        "gateways",
        Some("shop"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "web", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-gateway"}},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "https", "hostname": "shop.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}]}}),
    );
    app.eventually(
        "the unreachable route is the root of the certificate's problem",
        || async {
            let Some(board) = app.json_opt("/api/v1/problems?cluster=zrh-prod").await else {
                return false;
            };
            board["items"].as_array().unwrap().iter().any(|p| {
                p["root"]["rule"] == "gateway.http01-route-unreachable"
                    && p["root"]["kind"] == "Challenge"
                    && p["root"]["severity"] == "critical"
                    && p["root"]["message"].as_str().is_some_and(|m| {
                        m.contains("attaches to shop/web: Gateway shop/web has no HTTP listener")
                    })
            })
        },
    )
    .await;
    // The finding's own lines, run as written with kubectl: the Gateway's port-80 listener
    // is applied beside its HTTPS one; the route is served, the certificate issued.
    let findings = app.json("/api/v1/findings?cluster=zrh-prod").await;
    let lines = of_rule(&findings, "gateway.http01-route-unreachable")[0]["commands"]
        .as_str()
        .expect("the listener to add, in full")
        .to_string();
    run_by_hand(&app, &lines).await;
    let c = &app.fleet.clusters[0].cluster;
    let gw = c
        .get(
            &c.resolve("gateway.networking.k8s.io", "gateways").unwrap(),
            Some("shop"),
            "web",
        )
        .unwrap();
    let names: Vec<_> = gw["spec"]["listeners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["https", "acme-http01"], "{gw}");
    within(60, "issued, and nothing unreachable", || async {
        let findings = app.json("/api/v1/findings?cluster=zrh-prod").await;
        let certs = app
            .json("/api/v1/certificates?cluster=zrh-prod&namespace=shop")
            .await;
        of_rule(&findings, "gateway.http01-route-unreachable").is_empty()
            && certs["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "shop-tls" && c["ready"]["status"] == "True")
    })
    .await;
    app.stop().await;
}

/// A Gateway's port-80 redirect in front of a host whose Certificate an Ingress solver
/// validates: the Certificate's cause, told from the routes as kubesim serves them, and gone
/// with the redirect.
#[tokio::test(flavor = "multi_thread")]
async fn a_port_80_redirect_in_front_of_an_ingress_solver_is_the_certificates_cause() {
    let app = app_with(&["zrh-prod"]).await;
    app.wait_ready().await;
    ready_cluster_issuer(&app, "letsencrypt-prod");
    create(
        &app,
        0,
        "cert-manager.io",
        "certificates",
        Some("default"),
        json!({"metadata": {"name": "shop-tls"},
               "spec": {"secretName": "shop-tls", "dnsNames": ["shop.example.com"],
                        "issuerRef": {"kind": "ClusterIssuer", "name": "letsencrypt-prod"}}}),
    );
    patch_status(
        &app,
        "cert-manager.io",
        "certificates",
        "shop-tls",
        json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
                               "message": "Certificate is up to date and has not expired"}]}),
    );
    create(
        &app,
        0,
        "gateway.networking.k8s.io",
        "gateways",
        Some("default"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "web"},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "http", "port": 80, "protocol": "HTTP"},
                   {"name": "https", "hostname": "shop.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"certificateRefs": [{"name": "shop-tls"}]}}]}}),
    );
    create(
        &app,
        0,
        "gateway.networking.k8s.io",
        "httproutes",
        Some("default"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "to-https"},
               "spec": {"parentRefs": [{"name": "web", "sectionName": "http"}],
                        "rules": [{"filters": [{"type": "RequestRedirect",
                                                "requestRedirect": {"scheme": "https", "statusCode": 301}}]}]}}),
    );
    app.eventually("the redirect is the Certificate's cause", || async {
        let findings = app.json("/api/v1/findings?cluster=zrh-prod").await;
        of_rule(&findings, "gateway.acme-path-redirected")
            .first()
            .is_some_and(|f| {
                f["kind"] == "Certificate"
                    && f["name"] == "shop-tls"
                    && f["severity"] == "warning"
                    && f["message"].as_str().is_some_and(|m| {
                        m.contains("redirect 301 to https of HTTPRoute default/to-https")
                    })
            })
    })
    .await;
    // The finding's own lines: the issuer gets a Gateway solver for the host, which the
    // next issuance picks over the Ingress solver — nothing left to judge.
    let findings = app.json("/api/v1/findings?cluster=zrh-prod").await;
    let lines = of_rule(&findings, "gateway.acme-path-redirected")[0]["commands"]
        .as_str()
        .expect("the solver to add, in full")
        .to_string();
    run_by_hand(&app, &lines).await;
    app.eventually("with the Gateway solver, nothing", || async {
        of_rule(
            &app.json("/api/v1/findings?cluster=zrh-prod").await,
            "gateway.acme-path-redirected",
        )
        .is_empty()
    })
    .await;
    let c = &app.fleet.clusters[0].cluster;
    let issuer = c
        .get(
            &c.resolve("cert-manager.io", "clusterissuers").unwrap(),
            None,
            "letsencrypt-prod",
        )
        .unwrap();
    let solvers = issuer["spec"]["acme"]["solvers"].as_array().unwrap();
    assert_eq!(solvers.len(), 2, "the solver it had is kept: {issuer}");
    // And without the redirect, nothing either: the rule is about the redirect.
    c.delete(
        &c.resolve("gateway.networking.k8s.io", "httproutes")
            .unwrap(),
        Some("default"),
        "to-https",
        false,
    )
    .unwrap();
    app.eventually("without the redirect, nothing", || async {
        of_rule(
            &app.json("/api/v1/findings?cluster=zrh-prod").await,
            "gateway.acme-path-redirected",
        )
        .is_empty()
    })
    .await;
    app.stop().await;
}

/// Runs a finding's `commands` in bash as a person would paste them, with `kubectl` reaching
/// the app's first cluster; a failing line fails the test.
async fn run_by_hand(app: &TestApp, lines: &str) {
    if !kubectl_available() {
        panic!("kubectl runs the finding's lines");
    }
    let kc = app.kubeconfig();
    let script = format!(
        "set -euo pipefail\nkubectl() {{ command kubectl --context zrh-prod --cache-dir {cache} \"$@\"; }}\n{lines}\n",
        cache = kc.with_extension("cache").display()
    );
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .env("KUBECONFIG", &kc)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{lines}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
