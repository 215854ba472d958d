//! What the probe sees on a Gateway's hosts, on kubesim's Gateway listeners (real sockets on
//! the Gateway's loopback address): a listener its controller left out answers nothing, and
//! a listener serving a certificate without its hostname is refused by clients — each
//! observation the evidence of that listener's problem, on the board as one problem.

use serde_json::{json, Value};

use crate::helpers::*;
use crate::probing::{create, probed_app};

/// The problem rooted at `rule` and its symptoms' rules.
fn problem<'p>(board: &'p Value, rule: &str) -> Option<&'p Value> {
    board["items"]
        .as_array()?
        .iter()
        .find(|p| p["root"]["rule"] == rule)
}

fn symptoms(p: &Value) -> Vec<(String, String)> {
    p["symptoms"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["rule"].as_str().unwrap_or_default().to_string(),
                s["title"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_hosts_observation_is_evidence_of_its_listeners_problem() {
    let app = probed_app(&["zrh-prod"], json!({"enforce-ingress-https": "false"})).await;
    // An issuer whose solver attaches to Gateway default/web, and a Certificate for www
    // alone, issued through it.
    create(
        &app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-gateway"},
               "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com",
                                 "privateKeySecretRef": {"name": "le-gateway"},
                                 "solvers": [{"http01": {"gatewayHTTPRoute": {"parentRefs": [
                                     {"kind": "Gateway", "name": "web", "namespace": "default"}]}}}]}}}),
    );
    create(
        &app,
        0,
        "cert-manager.io",
        "certificates",
        Some("default"),
        json!({"metadata": {"name": "www-tls"},
               "spec": {"secretName": "www-tls", "dnsNames": ["www.example.com"],
                        "issuerRef": {"kind": "ClusterIssuer", "name": "letsencrypt-gateway"}}}),
    );
    // www served with it; shop with the same Secret (a certificate for www alone); api with
    // a Secret of another namespace, which no ReferenceGrant permits.
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
                   {"name": "https-www", "hostname": "www.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"certificateRefs": [{"name": "www-tls"}]}},
                   {"name": "https-shop", "hostname": "shop.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"certificateRefs": [{"name": "www-tls"}]}},
                   {"name": "https-api", "hostname": "api.example.com", "port": 443, "protocol": "HTTPS",
                    "tls": {"certificateRefs": [{"name": "api-tls", "namespace": "platform"}]}}]}}),
    );
    within(
        90,
        "each observation is in its listener's problem",
        || async {
            let Some(board) = app.json_opt("/api/v1/problems?cluster=zrh-prod").await else {
                return false;
            };
            let api = problem(&board, "gateway.reference-not-permitted").map(symptoms);
            let shop = problem(&board, "gateway.hostname-not-covered").map(symptoms);
            let api_ok = api.is_some_and(|s| {
                !s.is_empty()
                    && s.iter().all(|(rule, title)| {
                        rule == "probe.unreachable" && title.contains("api.example.com")
                    })
            });
            let shop_ok = shop.is_some_and(|s| {
                s.iter().any(|(rule, title)| {
                    rule == "probe.name-mismatch" && title.contains("shop.example.com")
                })
            });
            // www is served with its own certificate: nothing observed about it anywhere.
            let www_quiet = !board.to_string().contains("https://www.example.com");
            api_ok && shop_ok && www_quiet
        },
    )
    .await;
    let board = app.json("/api/v1/problems?cluster=zrh-prod").await;
    let api = problem(&board, "gateway.reference-not-permitted").unwrap();
    assert!(
        api["diagnosis"]
            .as_str()
            .is_some_and(|d| d.contains("(observed: https://api.example.com does not answer")),
        "{api:#}"
    );
    // No problem of the load balancer's own: every observation has its listener's.
    assert!(problem(&board, "probe.unreachable").is_none(), "{board:#}");
    app.stop().await;
}
