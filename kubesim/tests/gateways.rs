//! Cilium's Gateway controller in kubesim, as upstream sets a Gateway's status
//! (cilium/cilium `operator/pkg/gateway-api/gateway_reconcile.go`): each listener's
//! certificate references checked in order, the first failure making it invalid.

mod support;

use base64::Engine;
use serde_json::{json, Value};
use support::sim::Sim;

const GROUP: &str = "gateway.networking.k8s.io";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

async fn secret(sim: &Sim, ns: &str, name: &str, crt: &str) {
    sim.create(
        "",
        "Secret",
        "secrets",
        Some(ns),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
               "data": {"tls.crt": b64(crt), "tls.key": b64("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n")}}),
    )
    .await;
}

/// A Gateway of `class` in `shop` with one listener per certificate reference.
async fn gateway(sim: &Sim, class: &str, refs: Vec<Value>) {
    let listeners: Vec<Value> = refs
        .into_iter()
        .enumerate()
        .map(|(i, r)| json!({"name": format!("l{i}"), "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [r]}}))
        .collect();
    sim.create(
        GROUP,
        "Gateway",
        "gateways",
        Some("shop"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "web", "namespace": "shop"},
               "spec": {"gatewayClassName": class, "listeners": listeners}}),
    )
    .await;
}

/// (type, status, reason) of each condition of listener `i`.
fn listener(gw: &Value, i: usize) -> Vec<(String, String, String)> {
    gw["status"]["listeners"][i]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let f = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (f("type"), f("status"), f("reason"))
        })
        .collect()
}

fn has(conditions: &[(String, String, String)], kind: &str, status: &str, reason: &str) -> bool {
    conditions
        .iter()
        .any(|(k, s, r)| k == kind && s == status && r == reason)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_listener_is_judged_by_its_first_certificate_reference_that_fails() {
    let sim = Sim::start().await;
    for ns in ["shop", "certs"] {
        sim.create(
            "",
            "Namespace",
            "namespaces",
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
    }
    secret(
        &sim,
        "shop",
        "good",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .await;
    secret(&sim, "shop", "not-pem", "just bytes").await;
    secret(
        &sim,
        "certs",
        "elsewhere",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .await;
    gateway(
        &sim,
        "cilium",
        vec![
            json!({"name": "good"}),
            json!({"name": "missing"}),
            json!({"name": "not-pem"}),
            json!({"name": "elsewhere", "namespace": "certs"}),
            json!({"group": "example.com", "kind": "Vault", "name": "x"}),
        ],
    )
    .await;
    sim.run(1);
    let gw = sim
        .get(GROUP, "Gateway", "gateways", Some("shop"), "web")
        .await
        .unwrap();
    // Resolved and accepted, but no address yet: not programmed.
    let good = listener(&gw, 0);
    assert!(
        has(&good, "ResolvedRefs", "True", "ResolvedRefs")
            && has(&good, "Accepted", "True", "Accepted"),
        "{good:?}"
    );
    assert!(has(&good, "Programmed", "False", "Pending"), "{good:?}");
    for (i, reason) in [
        (1, "InvalidCertificateRef"),
        (2, "InvalidCertificateRef"),
        (3, "RefNotPermitted"),
        (4, "InvalidCertificateRef"),
    ] {
        let l = listener(&gw, i);
        assert!(
            has(&l, "ResolvedRefs", "False", reason),
            "listener {i}: {l:?}"
        );
        assert!(
            has(&l, "Accepted", "False", "Invalid") && has(&l, "Programmed", "False", "Pending"),
            "listener {i}: {l:?}"
        );
    }
    let accepted = |gw: &Value| {
        gw["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["type"].as_str().unwrap().to_string(),
                    c["status"].as_str().unwrap().to_string(),
                    c["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let conditions = accepted(&gw);
    assert!(
        has(&conditions, "Accepted", "True", "Accepted")
            && has(&conditions, "Programmed", "False", "AddressNotAssigned"),
        "{conditions:?}"
    );
    // A grant from Gateways of `shop` to every Secret of `certs` permits the fourth.
    sim.create(
        GROUP,
        "ReferenceGrant",
        "referencegrants",
        Some("certs"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
               "metadata": {"name": "shop", "namespace": "certs"},
               "spec": {"from": [{"group": GROUP, "kind": "Gateway", "namespace": "shop"}], "to": [{"group": "", "kind": "Secret"}]}}),
    )
    .await;
    sim.run(1);
    let gw = sim
        .get(GROUP, "Gateway", "gateways", Some("shop"), "web")
        .await
        .unwrap();
    let granted = listener(&gw, 3);
    assert!(
        has(&granted, "ResolvedRefs", "True", "ResolvedRefs"),
        "{granted:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_addressed_gateway_is_programmed_and_another_class_is_left_alone() {
    let sim = Sim::start().await;
    sim.create(
        "",
        "Namespace",
        "namespaces",
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
    )
    .await;
    secret(
        &sim,
        "shop",
        "good",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .await;
    gateway(&sim, "cilium", vec![json!({"name": "good"})]).await;
    // The address comes from the Gateway's load-balancer Service in Cilium; kubesim keeps
    // what is written to the status (a create's status is dropped, as by an API server).
    sim.api(GROUP, "Gateway", "gateways", Some("shop"))
        .patch_status(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"status": {"addresses": [{"type": "IPAddress", "value": "127.0.0.1"}]}}),
            ),
        )
        .await
        .unwrap();
    sim.run(1);
    let gw = sim
        .get(GROUP, "Gateway", "gateways", Some("shop"), "web")
        .await
        .unwrap();
    assert!(
        has(&listener(&gw, 0), "Programmed", "True", "Programmed"),
        "{gw:#}"
    );
    let resource_version = gw["metadata"]["resourceVersion"].clone();
    // Nothing changed: nothing is written again.
    sim.run(2);
    let again = sim
        .get(GROUP, "Gateway", "gateways", Some("shop"), "web")
        .await
        .unwrap();
    assert_eq!(again["metadata"]["resourceVersion"], resource_version);
    // Another controller's Gateway gets no status from Cilium.
    sim.create(
        GROUP,
        "Gateway",
        "gateways",
        Some("shop"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "other", "namespace": "shop"},
               "spec": {"gatewayClassName": "istio", "listeners": [{"name": "l", "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "missing"}]}}]}}),
    )
    .await;
    sim.run(1);
    let other = sim
        .get(GROUP, "Gateway", "gateways", Some("shop"), "other")
        .await
        .unwrap();
    assert!(other["status"]["listeners"].is_null(), "{other:#}");
}

/// cert-manager's gateway-shim: one Certificate per Secret of the annotated Gateway's TLS
/// listeners, its dnsNames their hostnames, owned by the Gateway and pointing its HTTP-01
/// solver at it; a listener it cannot use skipped with `BadConfig`; kept in line when the
/// listeners change (`pkg/controller/certificate-shim/sync.go`).
#[tokio::test(flavor = "multi_thread")]
async fn gateway_shim_issues_one_certificate_per_secret_of_an_annotated_gateway() {
    let sim = Sim::start().await;
    sim.create(
        "",
        "Namespace",
        "namespaces",
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
    )
    .await;
    let tls = |secret: &str| json!({"mode": "Terminate", "certificateRefs": [{"name": secret}]});
    sim.create(
        GROUP,
        "Gateway",
        "gateways",
        Some("shop"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "web", "namespace": "shop", "labels": {"team": "shop"},
                            "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "http", "port": 80, "protocol": "HTTP"},
                   {"name": "www", "hostname": "www.shop.example", "port": 443, "protocol": "HTTPS", "tls": tls("shop-tls")},
                   {"name": "apex", "hostname": "shop.example", "port": 443, "protocol": "HTTPS", "tls": tls("shop-tls")},
                   {"name": "again", "hostname": "www.shop.example", "port": 8443, "protocol": "HTTPS", "tls": tls("shop-tls")},
                   {"name": "passthrough", "hostname": "db.shop.example", "port": 443, "protocol": "TLS",
                    "tls": {"mode": "Passthrough", "certificateRefs": [{"name": "db-tls"}]}},
                   {"name": "elsewhere", "hostname": "api.shop.example", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "api-tls", "namespace": "certs"}]}}]}}),
    )
    .await;
    sim.run(1);
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(
        cert["spec"]["dnsNames"],
        json!(["www.shop.example", "shop.example"]),
        "{cert:#}"
    );
    assert_eq!(cert["spec"]["issuerRef"]["name"], "letsencrypt-prod");
    assert_eq!(cert["spec"]["issuerRef"]["kind"], "ClusterIssuer");
    assert_eq!(cert["metadata"]["labels"]["team"], "shop");
    let owner = &cert["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            owner["kind"].as_str(),
            owner["name"].as_str(),
            owner["controller"].as_bool()
        ),
        (Some("Gateway"), Some("web"), Some(true))
    );
    let annotations = &cert["metadata"]["annotations"];
    assert_eq!(
        annotations["acme.cert-manager.io/http01-parentrefkind"],
        "Gateway"
    );
    assert_eq!(
        annotations["acme.cert-manager.io/http01-parentrefname"],
        "web"
    );
    // Passthrough is ignored in silence; another namespace's Secret is skipped, and said.
    for name in ["db-tls", "api-tls"] {
        assert!(
            sim.get(
                "cert-manager.io",
                "Certificate",
                "certificates",
                Some("shop"),
                name
            )
            .await
            .is_none(),
            "{name}"
        );
    }
    let events: Vec<Value> = sim
        .api("", "Event", "events", Some("shop"))
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert!(
        events.iter().any(|e| e["reason"] == "BadConfig"
            && e["involvedObject"]["kind"] == "Gateway"
            && e["message"] == "Skipped a listener block: spec.listeners[5].tls.certificateRef[0].namespace: Invalid value: \"certs\": cross-namespace secret references are not allowed in listeners"),
        "{events:#?}"
    );
    assert!(events.iter().any(|e| e["reason"] == "CreateCertificate"
        && e["message"] == "Successfully created Certificate \"shop-tls\""));
    // The apex listener removed: the Certificate follows.
    sim.api(GROUP, "Gateway", "gateways", Some("shop"))
        .patch(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Json::<()>(
                serde_json::from_value(json!([{"op": "remove", "path": "/spec/listeners/2"}]))
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    sim.run(1);
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(cert["spec"]["dnsNames"], json!(["www.shop.example"]));
    // Without the issuer annotation nothing is issued.
    sim.create(
        GROUP,
        "Gateway",
        "gateways",
        Some("shop"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "plain", "namespace": "shop", "annotations": {"kubernetes.io/tls-acme": "true"}},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "www", "hostname": "plain.example", "port": 443, "protocol": "HTTPS", "tls": tls("plain-tls")}]}}),
    )
    .await;
    sim.run(1);
    assert!(sim
        .get(
            "cert-manager.io",
            "Certificate",
            "certificates",
            Some("shop"),
            "plain-tls"
        )
        .await
        .is_none());
}

/// cert-manager's `gatewayHTTPRoute` solver: the Challenge's parentRefs are the Gateway
/// gateway-shim named, the solver's HTTPRoute attaches there, and the self-check passes only
/// once the Gateway has a port-80 HTTP listener admitting it (`pkg/issuer/acme/http/httproute.go`,
/// `pkg/controller/acmeorders/util.go`).
#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_solver_route_passes_only_once_a_port_80_listener_serves_it() {
    let sim = Sim::start().await;
    sim.setup(
        json!({"http01": {"gatewayHTTPRoute": {"labels": {"team": "web"}}}}),
        false,
    )
    .await;
    sim.create(
        GROUP,
        "Gateway",
        "gateways",
        Some("shop"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "web", "namespace": "shop",
                            "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "https", "hostname": "shop.example", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}]}}),
    )
    .await;
    sim.run(15);
    let challenges = sim.challenges().await;
    assert_eq!(challenges.len(), 1, "{challenges:#?}");
    let ch = &challenges[0];
    assert_eq!(
        ch["spec"]["solver"]["http01"]["gatewayHTTPRoute"]["parentRefs"],
        json!([{"name": "web", "namespace": "shop", "kind": "Gateway"}])
    );
    assert_eq!(ch["status"]["state"], "pending");
    assert!(
        ch["status"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("wrong status code '404', expected '200'")),
        "{ch:#}"
    );
    // The solver's route: the challenge's host, the token's exact path, the solver Service.
    let routes: Vec<Value> = sim
        .api(GROUP, "HTTPRoute", "httproutes", Some("shop"))
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    assert_eq!(routes.len(), 1, "{routes:#?}");
    let route = &routes[0];
    assert!(route["metadata"]["name"]
        .as_str()
        .unwrap()
        .starts_with("cm-acme-http-solver-"));
    assert_eq!(route["metadata"]["labels"]["team"], "web");
    assert_eq!(route["spec"]["hostnames"], json!(["shop.example"]));
    assert_eq!(
        route["spec"]["rules"][0]["matches"][0]["path"],
        json!({"type": "Exact", "value": format!("/.well-known/acme-challenge/{}", ch["spec"]["token"].as_str().unwrap())})
    );
    assert_eq!(route["spec"]["rules"][0]["backendRefs"][0]["port"], 8089);
    // A port-80 listener for the host: the route is served, the challenge passes, the
    // route is cleaned up and the Certificate issued.
    sim.api(GROUP, "Gateway", "gateways", Some("shop"))
        .patch(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Json::<()>(
                serde_json::from_value(json!([{"op": "add", "path": "/spec/listeners/-",
                    "value": {"name": "http", "port": 80, "protocol": "HTTP"}}]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    sim.run(30);
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(
        support::sim::condition(&cert, "Ready").map(|c| c["status"].clone()),
        Some(json!("True")),
        "{cert:#}"
    );
    let left = sim
        .api(GROUP, "HTTPRoute", "httproutes", Some("shop"))
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert!(left.is_empty(), "the solver's route is deleted");
}

/// The self-check's hairpin to a Gateway listener: Cilium's Gateway API listeners take PROXY
/// protocol by `enable-gateway-api-proxy-protocol`, not by the Ingress flag
/// (cilium/cilium `operator/pkg/gateway-api/cell.go`): with the Ingress one on, a Gateway
/// solver still passes; with the Gateway one on, its self-check reads EOF.
#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_solver_self_check_meets_proxy_protocol_only_by_the_gateway_flag() {
    for (flag, passes) in [
        ("enable-ingress-proxy-protocol", true),
        ("enable-gateway-api-proxy-protocol", false),
    ] {
        let sim = Sim::start().await;
        sim.setup(json!({"http01": {"gatewayHTTPRoute": {}}}), false)
            .await;
        sim.api("", "ConfigMap", "configmaps", Some("kube-system"))
            .patch(
                "cilium-config",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"data": {flag: "true"}})),
            )
            .await
            .unwrap();
        sim.create(
            GROUP,
            "Gateway",
            "gateways",
            Some("shop"),
            json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                   "metadata": {"name": "web", "namespace": "shop",
                                "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
                   "spec": {"gatewayClassName": "cilium", "listeners": [
                       {"name": "http", "port": 80, "protocol": "HTTP"},
                       {"name": "https", "hostname": "shop.example", "port": 443, "protocol": "HTTPS",
                        "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}]}}),
        )
        .await;
        sim.run(30);
        let cert = sim.certificate("shop-tls").await;
        let ready = support::sim::condition(&cert, "Ready").map(|c| c["status"].clone());
        if passes {
            assert_eq!(ready, Some(json!("True")), "{flag}: {cert:#}");
        } else {
            assert_ne!(ready, Some(json!("True")), "{flag}: {cert:#}");
            let challenges = sim.challenges().await;
            assert!(
                challenges.iter().any(|ch| ch["status"]["reason"]
                    .as_str()
                    .is_some_and(|r| r.ends_with(": EOF"))),
                "{flag}: {challenges:#?}"
            );
        }
    }
}
