//! The simulated cert-manager, Cilium and Let's Encrypt, driven through the HTTP API with
//! kube-rs and a manual clock: a full issuance, a failing HTTP-01 behind HTTPS enforcement
//! that succeeds after the override, a renewal, a manual renew, a rate limit, a failed
//! account registration, and fault injection.

use std::time::Duration;

use kube::api::{ListParams, Patch, PatchParams};
use kubesim::sim::letsencrypt::Server;
use serde_json::{json, Value};

mod support;
use support::sim::{condition, http01, Sim};

#[tokio::test]
async fn a_full_issuance_behind_edit_in_place() {
    let sim = Sim::start().await;
    sim.setup(http01(), true).await;
    sim.ingress("web", "web.example.com", true).await;
    sim.run(3);
    let cert = sim.certificate("web-tls").await;
    assert_eq!(
        cert["metadata"]["annotations"]["acme.cert-manager.io/http01-override-ingress-name"], "web",
        "added at creation"
    );
    assert_eq!(cert["metadata"]["ownerReferences"][0]["kind"], "Ingress");
    let issuer = sim
        .get(
            "cert-manager.io",
            "ClusterIssuer",
            "clusterissuers",
            None,
            "letsencrypt-prod",
        )
        .await
        .unwrap();
    assert_eq!(
        condition(&issuer, "Ready").unwrap()["reason"],
        "ACMEAccountRegistered"
    );
    let cr = sim
        .get(
            "cert-manager.io",
            "CertificateRequest",
            "certificaterequests",
            Some("shop"),
            "web-tls-1",
        )
        .await
        .expect("request web-tls-1");
    assert_eq!(
        cr["metadata"]["annotations"]["cert-manager.io/certificate-revision"],
        "1"
    );
    assert!(!cr["spec"]["request"].as_str().unwrap().is_empty(), "a CSR");
    let challenges = sim
        .api(
            "acme.cert-manager.io",
            "Challenge",
            "challenges",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(challenges.items.len(), 1);
    assert_eq!(
        challenges.items[0].data["spec"]["dnsName"],
        "web.example.com"
    );

    sim.run(10);
    let cert = sim.certificate("web-tls").await;
    assert_eq!(
        condition(&cert, "Ready").unwrap()["status"],
        "True",
        "{cert:#}"
    );
    assert!(
        condition(&cert, "Issuing").is_none(),
        "Issuing is removed after success"
    );
    assert_eq!(cert["status"]["revision"], 1);
    let nb = chrono::DateTime::parse_from_rfc3339(cert["status"]["notBefore"].as_str().unwrap())
        .unwrap();
    let na =
        chrono::DateTime::parse_from_rfc3339(cert["status"]["notAfter"].as_str().unwrap()).unwrap();
    let rt = chrono::DateTime::parse_from_rfc3339(cert["status"]["renewalTime"].as_str().unwrap())
        .unwrap();
    assert_eq!(na - nb, chrono::Duration::days(90));
    assert_eq!(
        rt - nb,
        chrono::Duration::days(60),
        "renewal at 2/3 of the lifetime"
    );
    let secret = sim
        .get("", "Secret", "secrets", Some("shop"), "web-tls")
        .await
        .expect("the Secret");
    assert_eq!(
        secret["metadata"]["annotations"]["cert-manager.io/certificate-name"],
        "web-tls"
    );
    let left = sim
        .api(
            "acme.cert-manager.io",
            "Challenge",
            "challenges",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        left.items.is_empty(),
        "challenges are deleted after success"
    );
    let ing = sim
        .get(
            "networking.k8s.io",
            "Ingress",
            "ingresses",
            Some("shop"),
            "web",
        )
        .await
        .unwrap();
    assert!(
        ing["status"]["loadBalancer"]["ingress"][0]["ip"]
            .as_str()
            .unwrap()
            .starts_with("192.0.2."),
        "Cilium copied the LB address"
    );
}

#[tokio::test]
async fn failing_http01_behind_https_enforcement_succeeds_after_the_override() {
    let sim = Sim::start().await;
    sim.setup(json!({"http01": {"ingress": {"ingressClassName": "cilium"}}, "waitInsteadOfSelfCheck": "2m"}), true).await;
    sim.ingress("shop", "shop.example.com", false).await;
    sim.run(130);
    let challenges = sim
        .api(
            "acme.cert-manager.io",
            "Challenge",
            "challenges",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    let ch = &challenges.items[0].data;
    assert_eq!(ch["status"]["state"], "invalid", "{ch:#}");
    // The CA followed the redirect to HTTPS, where the listener has no certificate for the
    // host yet (no Secret) and resets the handshake: cert-manager reports Boulder's detail
    // with the https URL.
    let reason = ch["status"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("Error accepting authorization: acme: authorization error for shop.example.com: 400 urn:ietf:params:acme:error:connection: 192.0.2."), "{reason}");
    assert!(
        reason.contains(": Fetching https://shop.example.com/.well-known/acme-challenge/"),
        "{reason}"
    );
    assert!(reason.ends_with(": Connection reset by peer"), "{reason}");
    // The Order is invalid without a reason, and the request says so with nothing after it
    // (cert-manager's `updateOrderStatusFromACMEOrder` and `certificaterequests/acme`).
    let orders = sim
        .api("acme.cert-manager.io", "Order", "orders", Some("shop"))
        .list(&ListParams::default())
        .await
        .unwrap();
    let order = &orders.items[0].data;
    assert_eq!(order["status"]["state"], "invalid", "{order:#}");
    assert!(
        order["status"]["reason"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{order:#}"
    );
    assert!(order["status"]["failureTime"].is_string(), "{order:#}");
    let requests = sim
        .api(
            "cert-manager.io",
            "CertificateRequest",
            "certificaterequests",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    let ready = condition(&requests.items[0].data, "Ready").unwrap();
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.ends_with("order is in \"invalid\" state: "),
        "{message:?}"
    );
    sim.run(3);
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(cert["status"]["failedIssuanceAttempts"], 1, "{cert:#}");
    assert_eq!(condition(&cert, "Issuing").unwrap()["status"], "False");
    assert!(condition(&cert, "Issuing").unwrap()["message"]
        .as_str()
        .unwrap()
        .starts_with("The certificate request has failed to complete and will be retried"));

    // The fix: edit-in-place on the Ingress and the override on the existing Certificate.
    let pp = PatchParams::apply("lookout");
    sim.api("networking.k8s.io", "Ingress", "ingresses", Some("shop"))
        .patch("shop", &pp, &Patch::Apply(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "shop", "annotations": {"acme.cert-manager.io/http01-edit-in-place": "true"}}})))
        .await
        .unwrap();
    sim.api("cert-manager.io", "Certificate", "certificates", Some("shop"))
        .patch("shop-tls", &pp, &Patch::Apply(json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "shop-tls", "namespace": "shop",
            "annotations": {"acme.cert-manager.io/http01-override-ingress-name": "shop", "cert-manager.io/issue-temporary-certificate": "true"}}})))
        .await
        .unwrap();
    // The backoff (1h) holds the next attempt back.
    sim.run(60);
    assert_eq!(
        sim.certificate("shop-tls").await["status"]["failedIssuanceAttempts"],
        1
    );
    sim.jump(chrono::Duration::hours(1));
    sim.run(125);
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(
        condition(&cert, "Ready").unwrap()["status"],
        "True",
        "{cert:#}"
    );
    assert!(
        cert["status"].get("failedIssuanceAttempts").is_none(),
        "failures cleared on success"
    );
}

#[tokio::test]
async fn self_check_fails_behind_https_enforcement_without_edit_in_place() {
    let sim = Sim::start().await;
    sim.setup(http01(), true).await;
    sim.ingress("blog", "blog.example.com", false).await;
    sim.run(10);
    let challenges = sim
        .api(
            "acme.cert-manager.io",
            "Challenge",
            "challenges",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    let ch = &challenges.items[0].data;
    assert_eq!(ch["status"]["state"], "pending");
    assert_eq!(ch["status"]["presented"], true);
    // cert-manager's self-check follows Cilium's 301 to HTTPS (pkg/issuer/acme/http/http.go),
    // where the listener has no certificate for the host yet and resets the handshake: it
    // reports Go's error for the https URL, never the 301.
    let reason = ch["status"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://blog.example.com/.well-known/acme-challenge/")
            && reason.contains("Get \"https://blog.example.com/.well-known/acme-challenge/")
            && reason.ends_with("read: connection reset by peer"),
        "{reason}"
    );
}

/// The real sequence on a cluster: the overrides reach a challenge only through a new
/// CertificateRequest. Annotating the Ingress and the Certificate leaves the pending
/// challenge failing; deleting the in-flight request makes cert-manager start again from the
/// annotated Certificate, and the new challenge is solved in place.
#[tokio::test]
async fn a_pending_challenge_does_not_heal_until_its_request_is_replaced() {
    let sim = Sim::start().await;
    sim.setup(
        json!({"http01": {"ingress": {"ingressClassName": "cilium"}}}),
        true,
    )
    .await;
    sim.ingress("shop", "shop.example.com", false).await;
    sim.run(10);
    let challenges = || sim.challenges();
    let before = challenges().await;
    assert_eq!(before.len(), 1);
    let old_name = before[0]["metadata"]["name"].clone();
    assert!(before[0]["spec"]["solver"]["http01"]["ingress"]
        .get("name")
        .is_none());
    let ingresses = || async {
        sim.api("networking.k8s.io", "Ingress", "ingresses", Some("shop"))
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect::<Vec<Value>>()
    };
    // Solved by a separate solver Ingress, owned by the Challenge, with the solver's class.
    let solver: Vec<Value> = ingresses()
        .await
        .into_iter()
        .filter(|i| i["metadata"]["labels"]["acme.cert-manager.io/http01-solver"] == "true")
        .collect();
    assert_eq!(solver.len(), 1, "{solver:#?}");
    assert!(solver[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .starts_with("cm-acme-http-solver-"));
    assert_eq!(solver[0]["spec"]["ingressClassName"], "cilium");
    assert_eq!(
        solver[0]["metadata"]["ownerReferences"][0]["kind"],
        "Challenge"
    );
    let path = solver[0]["spec"]["rules"][0]["http"]["paths"][0].clone();
    assert_eq!(path["pathType"], "Exact");
    assert!(path["path"]
        .as_str()
        .unwrap()
        .starts_with("/.well-known/acme-challenge/"));

    let pp = PatchParams::apply("lookout");
    sim.api("networking.k8s.io", "Ingress", "ingresses", Some("shop"))
        .patch("shop", &pp, &Patch::Apply(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "shop", "annotations": {"acme.cert-manager.io/http01-edit-in-place": "true"}}})))
        .await
        .unwrap();
    sim.api("cert-manager.io", "Certificate", "certificates", Some("shop"))
        .patch("shop-tls", &pp, &Patch::Apply(json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "shop-tls", "namespace": "shop",
            "annotations": {"acme.cert-manager.io/http01-override-ingress-name": "shop", "cert-manager.io/issue-temporary-certificate": "true"}}})))
        .await
        .unwrap();
    // Ten minutes later the same challenge still fails its self-check, Issuing=True, and no
    // failed attempt is counted: nothing heals by itself. The annotation did give the host
    // cert-manager's temporary certificate (the request is still pending), so the redirected
    // self-check now completes its handshake — and gets the application's page, because the
    // separate solver's route is not on the HTTPS listener.
    sim.run(600);
    let still = challenges().await;
    assert_eq!(still.len(), 1);
    assert_eq!(still[0]["metadata"]["name"], old_name);
    assert_eq!(still[0]["status"]["state"], "pending");
    let reason = still[0]["status"]["reason"].as_str().unwrap();
    assert!(reason.contains("did not get expected response"), "{reason}");
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(condition(&cert, "Issuing").unwrap()["status"], "True");
    assert!(cert["status"].get("failedIssuanceAttempts").is_none());

    // Restart: delete the in-flight CertificateRequest (its Order and Challenge go with it).
    sim.api(
        "cert-manager.io",
        "CertificateRequest",
        "certificaterequests",
        Some("shop"),
    )
    .delete("shop-tls-1", &Default::default())
    .await
    .unwrap();
    sim.run(5);
    let request = sim
        .get(
            "cert-manager.io",
            "CertificateRequest",
            "certificaterequests",
            Some("shop"),
            "shop-tls-1",
        )
        .await
        .expect("a new request");
    assert_eq!(
        request["metadata"]["annotations"]["acme.cert-manager.io/http01-override-ingress-name"],
        "shop",
        "copied from the Certificate at creation"
    );
    let after = challenges().await;
    assert_eq!(after.len(), 1, "{after:#?}");
    assert_ne!(after[0]["metadata"]["name"], old_name);
    assert_eq!(
        after[0]["spec"]["solver"]["http01"]["ingress"]["name"],
        "shop"
    );
    assert!(after[0]["spec"]["solver"]["http01"]["ingress"]
        .get("ingressClassName")
        .is_none());
    // The old solver Ingress went with its Challenge; the new one edits Ingress shop in
    // place: the token's path first in the host's rule, written by cert-manager (an Update).
    let all = ingresses().await;
    assert_eq!(all.len(), 1, "no solver Ingress left: {all:#?}");
    let token = after[0]["spec"]["token"].as_str().unwrap();
    let shop_paths = all[0]["spec"]["rules"][0]["http"]["paths"].clone();
    assert_eq!(
        shop_paths[0]["path"],
        format!("/.well-known/acme-challenge/{token}"),
        "{shop_paths:#}"
    );
    let managers: Vec<(String, String)> = all[0]["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["manager"].as_str().unwrap_or_default().to_string(),
                m["operation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("cert-manager-challenges".to_string(), "Update".to_string())),
        "{managers:?}"
    );
    sim.run(20);
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(
        condition(&cert, "Ready").unwrap()["status"],
        "True",
        "{cert:#}"
    );
    // Cleaned up: the token's path is gone from the Ingress again.
    let all = ingresses().await;
    let paths = all[0]["spec"]["rules"][0]["http"]["paths"].to_string();
    assert!(!paths.contains("acme-challenge"), "{paths}");
}

#[tokio::test]
async fn renewal_at_renewal_time_and_manual_renew() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    sim.ingress("web", "web.example.com", false).await;
    sim.run(15);
    assert_eq!(sim.certificate("web-tls").await["status"]["revision"], 1);
    sim.jump(chrono::Duration::days(60));
    let cert = sim.certificate("web-tls").await;
    assert_eq!(cert["status"]["revision"], 2, "{cert:#}");
    let requests = sim
        .api(
            "cert-manager.io",
            "CertificateRequest",
            "certificaterequests",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    let names: Vec<String> = requests
        .items
        .iter()
        .map(|r| r.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, vec!["web-tls-2"], "requests pruned to one");

    // `cmctl renew`: Issuing=True, ManuallyTriggered, on the status subresource.
    let mut conditions = cert["status"]["conditions"].as_array().unwrap().clone();
    conditions.push(json!({"type": "Issuing", "status": "True", "reason": "ManuallyTriggered", "message": "Certificate re-issuance manually triggered"}));
    sim.api("cert-manager.io", "Certificate", "certificates", Some("shop"))
        .patch_status("web-tls", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"resourceVersion": cert["metadata"]["resourceVersion"]}, "status": {"conditions": conditions}})))
        .await
        .unwrap();
    sim.run(15);
    assert_eq!(sim.certificate("web-tls").await["status"]["revision"], 3);
}

/// A Secret already holding a certificate for the names, from the Certificate's issuer:
/// cert-manager's readiness controller reads its times, the Certificate is Ready without a
/// new issuance, and the renewal starts at the renewal time that certificate gives — the
/// old one staying in the Secret while it runs. One from another issuer is replaced.
#[tokio::test]
async fn a_certificate_already_in_the_secret_is_adopted_and_renewed_at_its_renewal_time() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    let now = sim.clock.now();
    let secret = |name: &str, host: &str, issuer: &str, days_left: i64| {
        let not_after = now + chrono::Duration::days(days_left);
        let (chain, key) = kubesim::sim::pki::issue(
            kubesim::sim::pki::Hierarchy::Production,
            &[host.to_string()],
            not_after - chrono::Duration::days(90),
            not_after,
            days_left as u64,
        )
        .unwrap();
        json!({"metadata": {"name": format!("{name}-tls"), "annotations": {"cert-manager.io/issuer-name": issuer, "cert-manager.io/issuer-kind": "ClusterIssuer"}},
               "type": "kubernetes.io/tls", "data": {"tls.crt": chain, "tls.key": key}})
    };
    sim.create(
        "",
        "Secret",
        "secrets",
        Some("shop"),
        secret("old", "old.example.com", "letsencrypt-prod", 40),
    )
    .await;
    sim.create(
        "",
        "Secret",
        "secrets",
        Some("shop"),
        secret("moved", "moved.example.com", "letsencrypt-other", 40),
    )
    .await;
    let old_crt = sim
        .get("", "Secret", "secrets", Some("shop"), "old-tls")
        .await
        .unwrap()["data"]["tls.crt"]
        .clone();
    sim.ingress("old", "old.example.com", true).await;
    sim.ingress("moved", "moved.example.com", true).await;
    sim.run(15);
    let cert = sim.certificate("old-tls").await;
    let ready = condition(&cert, "Ready").unwrap();
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("True"), Some("Ready")),
        "{cert:#}"
    );
    assert!(
        cert["status"]["revision"].is_null(),
        "no issuance: {cert:#}"
    );
    let not_after = kubesim::sim::letsencrypt::rfc3339(now + chrono::Duration::days(40));
    assert_eq!(cert["status"]["notAfter"], json!(not_after));
    // A third of 90 days before the end.
    let renewal = kubesim::sim::letsencrypt::rfc3339(now + chrono::Duration::days(10));
    assert_eq!(cert["status"]["renewalTime"], json!(renewal));
    let secret = sim
        .get("", "Secret", "secrets", Some("shop"), "old-tls")
        .await
        .unwrap();
    assert_eq!(
        secret["data"]["tls.crt"], old_crt,
        "the adopted certificate stays"
    );
    // From another issuer: issued again at once.
    assert_eq!(sim.certificate("moved-tls").await["status"]["revision"], 1);

    sim.jump(chrono::Duration::days(11));
    let cert = sim.certificate("old-tls").await;
    assert_eq!(
        cert["status"]["revision"], 1,
        "renewed at its renewal time: {cert:#}"
    );
    assert_ne!(cert["status"]["notAfter"], json!(not_after));
}

#[tokio::test]
async fn a_rate_limited_order_fails_with_retry_after() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    {
        let mut le = sim.fleet.world.letsencrypt.lock().unwrap();
        for _ in 0..5 {
            le.record_issuance(
                Server::Production,
                &["promo.example.com".to_string()],
                sim.clock.now(),
            );
        }
    }
    sim.ingress("promo", "promo.example.com", true).await;
    sim.run(5);
    let orders = sim
        .api("acme.cert-manager.io", "Order", "orders", Some("shop"))
        .list(&ListParams::default())
        .await
        .unwrap();
    let order = &orders.items[0].data;
    assert_eq!(order["status"]["state"], "errored");
    let reason = order["status"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited"),
        "{reason}"
    );
    assert!(reason.contains("retry after 2026-06-"), "{reason}");
    let cert = sim.certificate("promo-tls").await;
    assert_eq!(cert["status"]["failedIssuanceAttempts"], 1);
}

#[tokio::test]
async fn an_issuer_whose_account_registration_fails() {
    let sim = Sim::start().await;
    sim.create("cert-manager.io", "ClusterIssuer", "clusterissuers", None, json!({"metadata": {"name": "broken"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.invalid", "solvers": [http01()]}}})).await;
    sim.run(2);
    let issuer = sim
        .get(
            "cert-manager.io",
            "ClusterIssuer",
            "clusterissuers",
            None,
            "broken",
        )
        .await
        .unwrap();
    let ready = condition(&issuer, "Ready").unwrap();
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("False"), Some("ErrRegisterACMEAccount"))
    );
    assert!(ready["message"]
        .as_str()
        .unwrap()
        .contains("invalidContact"));
}

#[tokio::test]
async fn faults_switch_on_and_off_through_the_admin_endpoint() {
    let sim = Sim::start().await;
    let base = sim.fleet.clusters[0].url();
    let http = reqwest::Client::new();
    let set = |faults: Value| {
        let http = http.clone();
        let url = format!("{base}/kubesim/faults");
        async move {
            assert!(http
                .put(url)
                .json(&faults)
                .send()
                .await
                .unwrap()
                .status()
                .is_success())
        }
    };
    set(json!({"error_500": true})).await;
    assert_eq!(
        http.get(format!("{base}/api/v1/namespaces"))
            .send()
            .await
            .unwrap()
            .status(),
        500
    );
    set(json!({"throttle_lists_retry_after": 7})).await;
    let throttled = http
        .get(format!("{base}/api/v1/namespaces"))
        .send()
        .await
        .unwrap();
    assert_eq!(throttled.status(), 429);
    assert_eq!(throttled.headers()["retry-after"], "7");
    set(json!({"gone_on_watch": true})).await;
    let gone: Value = serde_json::from_str(
        http.get(format!("{base}/api/v1/namespaces?watch=true"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(gone["object"]["code"], 410);
    set(json!({"blackhole": true})).await;
    let hung = tokio::time::timeout(
        Duration::from_millis(500),
        http.get(format!("{base}/api/v1/namespaces")).send(),
    )
    .await;
    assert!(hung.is_err(), "a blackholed cluster never answers");
    set(json!({"latency_ms": 300})).await;
    let started = std::time::Instant::now();
    assert!(http
        .get(format!("{base}/version"))
        .send()
        .await
        .unwrap()
        .status()
        .is_success());
    assert!(started.elapsed() >= Duration::from_millis(300));
    set(json!({})).await;
    assert_eq!(
        http.get(format!("{base}/api/v1/namespaces"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let bad = http
        .put(format!("{base}/kubesim/faults"))
        .json(&json!({"nonsense": 1}))
        .send()
        .await
        .unwrap();
    assert!(bad.status().is_client_error());
}

#[tokio::test]
async fn proxy_protocol_breaks_the_in_cluster_self_check() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    sim.api("", "ConfigMap", "configmaps", Some("kube-system"))
        .patch(
            "cilium-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"enable-ingress-proxy-protocol": "true"}})),
        )
        .await
        .unwrap();
    sim.ingress("web", "web.example.com", true).await;
    sim.run(10);
    let challenges = sim
        .api(
            "acme.cert-manager.io",
            "Challenge",
            "challenges",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    let reason = challenges.items[0].data["status"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.ends_with(": EOF"), "{reason}");
}

#[tokio::test]
async fn an_ingress_naming_one_secret_twice_is_refused_with_bad_config() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    sim.create(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        Some("shop"),
        json!({"metadata": {"name": "twice", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
               "spec": {"ingressClassName": "cilium", "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}],
                        "tls": [{"hosts": ["a.example.com"], "secretName": "twice-tls"}, {"hosts": ["b.example.com"], "secretName": "twice-tls"}]}}),
    )
    .await;
    sim.run(10);
    assert!(
        sim.get(
            "cert-manager.io",
            "Certificate",
            "certificates",
            Some("shop"),
            "twice-tls"
        )
        .await
        .is_none(),
        "ingress-shim makes no Certificate for a refused Ingress"
    );
    let events = sim
        .api("", "Event", "events", Some("shop"))
        .list(&ListParams::default())
        .await
        .unwrap();
    let bad: Vec<&Value> = events
        .items
        .iter()
        .map(|e| &e.data)
        .filter(|e| e["reason"] == "BadConfig" && e["involvedObject"]["name"] == "twice")
        .collect();
    assert_eq!(bad.len(), 1, "one event, not one per pass: {bad:?}");
    assert_eq!(bad[0]["type"], "Warning");
    assert_eq!(
        bad[0]["message"],
        "spec.tls[0].secretName: Invalid value: \"twice-tls\": this secret name must only appear in a single TLS entry but is also used in spec.tls[1].secretName"
    );
}

/// A TLS block without hosts is skipped with a `BadConfig` event; the Ingress's other
/// blocks still get their Certificates (`buildCertificates` continues past it).
#[tokio::test]
async fn a_tls_block_without_hosts_is_skipped_with_bad_config() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    sim.create(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        Some("shop"),
        json!({"metadata": {"name": "half", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
               "spec": {"ingressClassName": "cilium", "rules": [{"host": "a.example.com"}],
                        "tls": [{"secretName": "nohosts-tls"}, {"hosts": ["a.example.com"], "secretName": "half-tls"}]}}),
    )
    .await;
    sim.run(10);
    let cert = |name: &'static str| {
        sim.get(
            "cert-manager.io",
            "Certificate",
            "certificates",
            Some("shop"),
            name,
        )
    };
    assert!(cert("nohosts-tls").await.is_none(), "the skipped block");
    assert!(cert("half-tls").await.is_some(), "the valid block");
    let events = sim
        .api("", "Event", "events", Some("shop"))
        .list(&ListParams::default())
        .await
        .unwrap();
    let bad: Vec<&Value> = events
        .items
        .iter()
        .map(|e| &e.data)
        .filter(|e| e["reason"] == "BadConfig" && e["involvedObject"]["name"] == "half")
        .collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(
        bad[0]["message"],
        "Skipped a TLS block: spec.tls[0].hosts: Required value"
    );
}

/// The issuer's solver is picked per name as cert-manager's solverpicker does: a `dnsZones`
/// selector beats a solver without selector, and the Challenge's type follows the solver.
#[tokio::test]
async fn the_solver_is_picked_by_its_selector() {
    let sim = Sim::start().await;
    sim.setup(
        json!({"dns01": {"route53": {"region": "eu-central-1"}}, "selector": {"dnsZones": ["internal.example.com"]}}),
        false,
    )
    .await;
    // A catch-all HTTP-01 solver after the zone's DNS-01 solver.
    let rt_patch = json!({"spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [
        {"dns01": {"route53": {"region": "eu-central-1"}}, "selector": {"dnsZones": ["internal.example.com"]}},
        {"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}});
    sim.api("cert-manager.io", "ClusterIssuer", "clusterissuers", None)
        .patch(
            "letsencrypt-prod",
            &PatchParams::default(),
            &Patch::Merge(rt_patch),
        )
        .await
        .unwrap();
    sim.ingress("wiki", "wiki.internal.example.com", false)
        .await;
    sim.ingress("web", "web.example.com", false).await;
    sim.run(10);
    let challenges = sim
        .api(
            "acme.cert-manager.io",
            "Challenge",
            "challenges",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    let type_of = |host: &str| {
        challenges
            .items
            .iter()
            .find(|c| c.data["spec"]["dnsName"] == host)
            .map(|c| c.data["spec"]["type"].clone())
    };
    assert_eq!(type_of("wiki.internal.example.com"), Some(json!("DNS-01")));
    // web.example.com took the HTTP-01 catch-all: issued (its challenge already cleaned up).
    let web = sim.certificate("web-tls").await;
    assert_eq!(
        condition(&web, "Ready").unwrap()["status"],
        "True",
        "{web:#}"
    );
}

/// Cilium's default, dedicated mode: each Ingress has its own address, so a separate solver
/// Ingress is not where the host's DNS points — the challenge fails even without HTTPS
/// enforcement, until it is solved in place (cert-manager#6805).
#[tokio::test]
async fn in_dedicated_mode_a_separate_solver_fails_even_without_https_enforcement() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    sim.api("", "ConfigMap", "configmaps", Some("kube-system"))
        .patch(
            "cilium-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"ingress-default-lb-mode": "dedicated"}})),
        )
        .await
        .unwrap();
    sim.ingress("web", "web.example.com", false).await;
    sim.ingress("docs", "docs.example.com", true).await;
    sim.run(10);
    let challenges = sim
        .api(
            "acme.cert-manager.io",
            "Challenge",
            "challenges",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
    let web = challenges
        .items
        .iter()
        .find(|c| c.data["spec"]["dnsName"] == "web.example.com")
        .expect("web's challenge is pending");
    // DNS sends the request to the application's address, whose `/` route answers it.
    assert!(
        web.data["status"]["reason"].as_str().unwrap().starts_with(
            "Waiting for HTTP-01 challenge propagation: did not get expected response"
        ),
        "{:#}",
        web.data
    );
    // Solved in place, docs is issued; each Ingress has an address of its own.
    let docs = sim.certificate("docs-tls").await;
    assert_eq!(
        condition(&docs, "Ready").unwrap()["status"],
        "True",
        "{docs:#}"
    );
    let web_ing = sim
        .get(
            "networking.k8s.io",
            "Ingress",
            "ingresses",
            Some("shop"),
            "web",
        )
        .await
        .unwrap();
    let docs_ing = sim
        .get(
            "networking.k8s.io",
            "Ingress",
            "ingresses",
            Some("shop"),
            "docs",
        )
        .await
        .unwrap();
    let ip = |i: &Value| i["status"]["loadBalancer"]["ingress"][0]["ip"].clone();
    assert!(ip(&web_ing).as_str().unwrap().starts_with("198.51.100."));
    assert_ne!(ip(&web_ing), ip(&docs_ing));
}

/// New ACME accounts count against Let's Encrypt's registrations per IP address (10 per
/// 3 hours): the eleventh issuer registering from one cluster is refused.
#[tokio::test]
async fn the_eleventh_account_from_one_address_is_refused() {
    let sim = Sim::start().await;
    for i in 0..11 {
        sim.create(
            "cert-manager.io",
            "ClusterIssuer",
            "clusterissuers",
            None,
            json!({"metadata": {"name": format!("le-{i}")}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [http01()]}}}),
        )
        .await;
        sim.run(1);
    }
    let issuer = sim
        .get(
            "cert-manager.io",
            "ClusterIssuer",
            "clusterissuers",
            None,
            "le-10",
        )
        .await
        .unwrap();
    let ready = condition(&issuer, "Ready").unwrap();
    assert_eq!(ready["status"], "False");
    assert!(
        ready["message"].as_str().unwrap().starts_with("Failed to register ACME account: 429 urn:ietf:params:acme:error:rateLimited: too many new registrations (10) from this IP address in the last 3h0m0s"),
        "{ready:#}"
    );
    let first = sim
        .get(
            "cert-manager.io",
            "ClusterIssuer",
            "clusterissuers",
            None,
            "le-0",
        )
        .await
        .unwrap();
    assert_eq!(condition(&first, "Ready").unwrap()["status"], "True");
}

/// The Order controller computes the Challenges it needs on every pass from the issuer as it
/// is now and the Order's annotations (cert-manager `acmeorders/sync.go`): a pending
/// Challenge whose solver changes is replaced in place — same Order, same request, same
/// token — and the new one, solved on the certificate's own Ingress, passes behind the
/// redirect.
#[tokio::test]
async fn a_pending_challenge_is_re_solved_when_the_order_or_the_issuer_changes() {
    for change in ["order", "issuer"] {
        let sim = Sim::start().await;
        sim.setup(
            json!({"http01": {"ingress": {"ingressClassName": "cilium"}}}),
            true,
        )
        .await;
        sim.ingress("shop", "shop.example.com", false).await;
        sim.run(60);
        let list = |plural: &'static str, kind: &'static str, group: &'static str| {
            let sim = &sim;
            async move {
                sim.api(group, kind, plural, Some("shop"))
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .into_iter()
                    .map(|o| serde_json::to_value(&o).unwrap())
                    .collect::<Vec<Value>>()
            }
        };
        let before = list("challenges", "Challenge", "acme.cert-manager.io").await;
        assert_eq!(before.len(), 1, "{before:#?}");
        assert_eq!(before[0]["status"]["state"], "pending");
        let reason = before[0]["status"]["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("connection reset by peer"), "{reason}");
        let orders = list("orders", "Order", "acme.cert-manager.io").await;
        assert_eq!(orders.len(), 1);
        let order = orders[0]["metadata"]["name"].as_str().unwrap().to_string();
        let pp = PatchParams::default();
        // The host needs a certificate on 443 for the redirected challenge: the temporary
        // one, which the issuing controller writes once the Certificate asks for it.
        sim.api("cert-manager.io", "Certificate", "certificates", Some("shop"))
            .patch("shop-tls", &pp, &Patch::Merge(json!({"metadata": {"annotations": {"cert-manager.io/issue-temporary-certificate": "true"}}})))
            .await
            .unwrap();
        if change == "order" {
            sim.api("acme.cert-manager.io", "Order", "orders", Some("shop"))
                .patch(&order, &pp, &Patch::Merge(json!({"metadata": {"annotations": {"acme.cert-manager.io/http01-override-ingress-name": "shop"}}})))
                .await
                .unwrap();
        } else {
            sim.api("cert-manager.io", "ClusterIssuer", "clusterissuers", None)
                .patch("letsencrypt-prod", &pp, &Patch::Merge(json!({"spec": {"acme": {"solvers": [{"http01": {"ingress": {"name": "shop"}}}]}}})))
                .await
                .unwrap();
        }
        sim.run(2);
        let after = list("challenges", "Challenge", "acme.cert-manager.io").await;
        assert_eq!(after.len(), 1, "{change}: the old one is gone: {after:#?}");
        assert_ne!(
            after[0]["metadata"]["name"], before[0]["metadata"]["name"],
            "{change}"
        );
        assert_eq!(
            after[0]["spec"]["token"], before[0]["spec"]["token"],
            "{change}: the same authorization"
        );
        assert_eq!(
            after[0]["spec"]["solver"]["http01"]["ingress"]["name"], "shop",
            "{change}"
        );
        sim.run(60);
        let cert = sim.certificate("shop-tls").await;
        assert_eq!(
            condition(&cert, "Ready").unwrap()["status"],
            "True",
            "{change}: {cert:#}"
        );
        let orders = list("orders", "Order", "acme.cert-manager.io").await;
        assert_eq!(orders.len(), 1, "{change}: no new order");
        assert_eq!(orders[0]["metadata"]["name"], order.as_str(), "{change}");
    }
}

/// Behind HTTPS enforcement, once the host has a certificate (a renewal), an application
/// whose route covers `/` answers the redirected challenge path itself, with its page:
/// cert-manager's self-check reports the wrong response (not a 404), and so does the CA when
/// the challenge is accepted.
#[tokio::test]
async fn an_application_route_answers_the_redirected_challenge_with_its_page() {
    let sim = Sim::start().await;
    sim.setup(
        json!({"http01": {"ingress": {"ingressClassName": "cilium"}}, "waitInsteadOfSelfCheck": "2m"}),
        true,
    )
    .await;
    sim.create(
        "",
        "Secret",
        "secrets",
        Some("shop"),
        json!({"metadata": {"name": "shop-tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
    )
    .await;
    sim.create(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        Some("shop"),
        json!({"metadata": {"name": "shop", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
               "spec": {"ingressClassName": "cilium",
                        "rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "shop", "port": {"number": 80}}}}]}}],
                        "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]}}),
    )
    .await;
    let reason = sim.failed_challenge_after(130).await;
    assert!(
        reason.contains(
            "The key authorization file from the server did not match this challenge. Expected \""
        ) && reason.contains("(got \"<!DOCTYPE html>"),
        "{reason}"
    );
}

/// Behind HTTPS enforcement, a path that none of the host's TLS Ingresses routes is not
/// redirected: Cilium's plain-HTTP virtual host for the host holds only those routes (the
/// solver's own Ingress has no TLS), so Envoy answers a bare 404 over HTTP.
#[tokio::test]
async fn a_challenge_path_no_route_covers_gets_a_plain_404_behind_enforcement() {
    let sim = Sim::start().await;
    sim.setup(
        json!({"http01": {"ingress": {"ingressClassName": "cilium"}}, "waitInsteadOfSelfCheck": "2m"}),
        true,
    )
    .await;
    sim.create(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        Some("shop"),
        json!({"metadata": {"name": "shop", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
               "spec": {"ingressClassName": "cilium",
                        "rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/api", "pathType": "Prefix", "backend": {"service": {"name": "shop", "port": {"number": 80}}}}]}}],
                        "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]}}),
    )
    .await;
    let reason = sim.failed_challenge_after(130).await;
    assert!(
        reason.contains(
            ": Invalid response from http://shop.example.com/.well-known/acme-challenge/"
        ) && reason.ends_with(": 404"),
        "{reason}"
    );
}

/// `kubernetes.io/tls-acme: "true"` alone: with cert-manager's default issuer flags the
/// Certificate names that issuer; with upstream's empty default name ingress-shim refuses the
/// Ingress with `BadConfig` and makes nothing.
#[tokio::test]
async fn tls_acme_uses_the_default_issuer_or_is_refused_without_one() {
    let acme_ingress = json!({"metadata": {"name": "web", "annotations": {"kubernetes.io/tls-acme": "true"}},
        "spec": {"ingressClassName": "cilium", "rules": [{"host": "web.example.com"}],
                 "tls": [{"hosts": ["web.example.com"], "secretName": "web-tls"}]}});
    let with = Sim::start_with(|o| {
        o.default_issuer = Some(
            kubesim::sim::shim::DefaultIssuer::parse("ClusterIssuer/letsencrypt-prod").unwrap(),
        )
    })
    .await;
    with.setup(http01(), false).await;
    with.create(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        Some("shop"),
        acme_ingress.clone(),
    )
    .await;
    with.run(5);
    let cert = with.certificate("web-tls").await;
    assert_eq!(
        cert["spec"]["issuerRef"],
        json!({"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": "cert-manager.io"})
    );

    let without = Sim::start().await;
    without.setup(http01(), false).await;
    without
        .create(
            "networking.k8s.io",
            "Ingress",
            "ingresses",
            Some("shop"),
            acme_ingress,
        )
        .await;
    without.run(5);
    assert!(without
        .get(
            "cert-manager.io",
            "Certificate",
            "certificates",
            Some("shop"),
            "web-tls"
        )
        .await
        .is_none());
    let events = without
        .api("", "Event", "events", Some("shop"))
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        events.items.iter().any(|e| e.data["reason"] == "BadConfig"
            && e.data["message"] == "Could not determine issuer for ingress due to bad annotations: failed to determine issuer name to be used for ingress resource"),
        "{:#?}",
        events.items.iter().map(|e| &e.data["message"]).collect::<Vec<_>>()
    );
}
