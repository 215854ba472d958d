//! Behaviours kubesim follows because upstream does, each checked through the HTTP API with
//! kube-rs and a manual clock: cert-manager's temporary certificate on a first issuance, an
//! in-place challenge with nothing served on 443, and the re-issue triggers that skip the
//! backoff.

use base64::Engine;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{json, Value};

mod support;
use support::sim::{condition, http01, Sim};

/// The issuer's common name of the certificate in a Secret's `tls.crt`.
fn secret_issuer(secret: &Value) -> String {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["tls.crt"].as_str().unwrap())
        .unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
    let cert = pem.parse_x509().unwrap();
    cert.issuer().to_string()
}

async fn secret(sim: &Sim, name: &str) -> Option<Value> {
    sim.get("", "Secret", "secrets", Some("shop"), name).await
}

async fn events_of(sim: &Sim, name: &str) -> Vec<String> {
    sim.api("", "Event", "events", Some("shop"))
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.data["involvedObject"]["name"] == name)
        .map(|e| e.data["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The seed's mechanism: ingress-shim asks for a temporary certificate with the
/// edit-in-place override, the issuing controller writes one signed by `cert-manager.local`
/// while the request is pending, readiness copies its times (Ready `IncorrectIssuer` under a
/// ClusterIssuer), and the redirected challenge completes its handshake against it — so the
/// first issuance behind HTTPS enforcement heals by itself and the real certificate replaces
/// the temporary one.
#[tokio::test]
async fn a_first_issuance_behind_enforcement_serves_the_temporary_certificate_then_heals() {
    let sim = Sim::start().await;
    sim.setup(http01(), true).await;
    sim.ingress("web", "web.example.com", true).await;
    sim.run(1);
    let cert = sim.certificate("web-tls").await;
    assert_eq!(
        cert["metadata"]["annotations"]["cert-manager.io/issue-temporary-certificate"], "true",
        "ingress-shim asks for it with the override"
    );
    let mut temporary = None;
    for _ in 0..5 {
        sim.run(1);
        if let Some(s) = secret(&sim, "web-tls").await {
            temporary = Some(s);
            break;
        }
    }
    let temporary = temporary.expect("the temporary certificate's Secret");
    assert!(
        secret_issuer(&temporary).contains("cert-manager.local"),
        "{}",
        secret_issuer(&temporary)
    );
    let annotations = &temporary["metadata"]["annotations"];
    assert_eq!(annotations["cert-manager.io/certificate-name"], "web-tls");
    assert!(annotations.get("cert-manager.io/issuer-name").is_none());
    let cert = sim.certificate("web-tls").await;
    let ready = condition(&cert, "Ready").unwrap();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "IncorrectIssuer");
    assert_eq!(
        ready["message"],
        "Issuing certificate as Secret was previously issued by \"Issuer.cert-manager.io/\""
    );
    assert_eq!(condition(&cert, "Issuing").unwrap()["status"], "True");
    assert!(cert["status"]["notAfter"].is_string(), "{cert:#}");
    assert!(cert["status"].get("revision").is_none());
    assert!(events_of(&sim, "web-tls")
        .await
        .iter()
        .any(|m| m == "Issued temporary certificate"));

    // The redirected self-check gets the key over HTTPS, then the CA: issued.
    sim.run(30);
    let cert = sim.certificate("web-tls").await;
    assert_eq!(
        condition(&cert, "Ready").unwrap()["reason"],
        "Ready",
        "{cert:#}"
    );
    assert_eq!(cert["status"]["revision"], 1);
    let issued = secret(&sim, "web-tls").await.unwrap();
    assert!(!secret_issuer(&issued).contains("cert-manager.local"));
    assert_eq!(
        issued["metadata"]["annotations"]["cert-manager.io/issuer-name"],
        "letsencrypt-prod"
    );
}

/// Under a namespaced Issuer the temporary certificate's Secret passes readiness (its absent
/// issuer annotations match `Issuer`): Ready is True while clients get an untrusted
/// certificate.
#[tokio::test]
async fn under_a_namespaced_issuer_the_temporary_certificate_reads_ready() {
    let sim = Sim::start().await;
    sim.setup(http01(), true).await;
    // The self-check never passes (a DNS name that does not resolve): the request stays
    // pending and the temporary certificate stays.
    sim.create("cert-manager.io", "Issuer", "issuers", Some("shop"),
        json!({"metadata": {"name": "le"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [http01()]}}})).await;
    sim.create("networking.k8s.io", "Ingress", "ingresses", Some("shop"),
        json!({"metadata": {"name": "web", "annotations": {"cert-manager.io/issuer": "le", "acme.cert-manager.io/http01-edit-in-place": "true"}},
               "spec": {"ingressClassName": "cilium", "rules": [{"host": "web.invalid", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}], "tls": [{"hosts": ["web.invalid"], "secretName": "web-tls"}]}})).await;
    sim.run(30);
    let cert = sim.certificate("web-tls").await;
    assert_eq!(
        condition(&cert, "Ready").unwrap()["status"],
        "True",
        "{cert:#}"
    );
    assert_eq!(condition(&cert, "Issuing").unwrap()["status"], "True");
    assert!(cert["status"].get("revision").is_none());
    assert!(secret_issuer(&secret(&sim, "web-tls").await.unwrap()).contains("cert-manager.local"));
}

/// A challenge solved in place is redirected like any other path of its Ingress: without a
/// certificate on 443 (a hand-made Certificate with the override but no temporary
/// certificate) the handshake is reset, and Let's Encrypt says so.
#[tokio::test]
async fn an_in_place_challenge_with_nothing_served_on_443_is_reset() {
    let sim = Sim::start().await;
    sim.setup(
        json!({"http01": {"ingress": {"ingressClassName": "cilium"}}, "waitInsteadOfSelfCheck": "1m"}),
        true,
    )
    .await;
    sim.create("networking.k8s.io", "Ingress", "ingresses", Some("shop"),
        json!({"metadata": {"name": "web"},
               "spec": {"ingressClassName": "cilium", "rules": [{"host": "web.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}], "tls": [{"hosts": ["web.example.com"], "secretName": "web-tls"}]}})).await;
    sim.create("cert-manager.io", "Certificate", "certificates", Some("shop"),
        json!({"metadata": {"name": "web-tls", "annotations": {"acme.cert-manager.io/http01-override-ingress-name": "web"}},
               "spec": {"secretName": "web-tls", "dnsNames": ["web.example.com"], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}})).await;
    let reason = sim.failed_challenge_after(90).await;
    assert!(
        reason.contains("Fetching https://web.example.com/.well-known/acme-challenge/")
            && reason.contains("Connection reset by peer"),
        "{reason}"
    );
}

/// cert-manager re-issues at once when the issuer changes (`IncorrectIssuer` against the
/// Secret's annotations) — switching staging to production starts a new request — and a
/// spec that changed since the failed request skips the failure backoff.
#[tokio::test]
async fn changing_the_issuer_re_issues_at_once_even_in_backoff() {
    let sim = Sim::start().await;
    sim.setup(
        json!({"http01": {"ingress": {"ingressClassName": "cilium"}}, "waitInsteadOfSelfCheck": "1m"}),
        true,
    )
    .await;
    sim.create("cert-manager.io", "ClusterIssuer", "clusterissuers", None,
        json!({"metadata": {"name": "letsencrypt-staging"}, "spec": {"acme": {"server": "https://acme-staging-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}})).await;
    // Failing behind enforcement without edit-in-place: one failed attempt, backing off 1 h.
    sim.ingress("shop", "shop.example.com", false).await;
    sim.failed_challenge_after(90).await;
    sim.run(5);
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(cert["status"]["failedIssuanceAttempts"], 1, "{cert:#}");
    assert_eq!(condition(&cert, "Issuing").unwrap()["status"], "False");

    // The issuer changes (on the Ingress: ingress-shim owns the Certificate's spec): a new
    // request now, not after the backoff.
    sim.api("networking.k8s.io", "Ingress", "ingresses", Some("shop"))
        .patch("shop", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-staging"}}})))
        .await
        .unwrap();
    sim.run(3);
    let cert = sim.certificate("shop-tls").await;
    assert_eq!(
        condition(&cert, "Issuing").unwrap()["status"],
        "True",
        "{cert:#}"
    );
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
    assert_eq!(request["spec"]["issuerRef"]["name"], "letsencrypt-staging");
}

/// Once issued, a Certificate moved to another issuer is re-issued by the trigger
/// controller with reason `IncorrectIssuer`, naming the issuer of the Secret.
#[tokio::test]
async fn an_issued_certificate_moved_to_another_issuer_is_re_issued() {
    let sim = Sim::start().await;
    sim.setup(http01(), true).await;
    sim.create("cert-manager.io", "ClusterIssuer", "clusterissuers", None,
        json!({"metadata": {"name": "letsencrypt-other"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [http01()]}}})).await;
    sim.ingress("web", "web.example.com", true).await;
    sim.run(40);
    assert_eq!(
        condition(&sim.certificate("web-tls").await, "Ready").unwrap()["reason"],
        "Ready"
    );
    sim.api("networking.k8s.io", "Ingress", "ingresses", Some("shop"))
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-other"}}})))
        .await
        .unwrap();
    sim.run(1);
    let issuing = condition(&sim.certificate("web-tls").await, "Issuing")
        .cloned()
        .unwrap();
    assert_eq!(issuing["status"], "True");
    assert_eq!(issuing["reason"], "IncorrectIssuer");
    assert_eq!(
        issuing["message"],
        "Issuing certificate as Secret was previously issued by \"ClusterIssuer.cert-manager.io/letsencrypt-prod\""
    );
}

async fn request(sim: &Sim, name: &str) -> Option<Value> {
    sim.get(
        "cert-manager.io",
        "CertificateRequest",
        "certificaterequests",
        Some("shop"),
        name,
    )
    .await
}

/// approver-policy leaves a request no policy applies to unapproved: no condition, only
/// events; nothing signs it, no temporary certificate is written (the request has no Ready
/// condition) — until someone approves it.
#[tokio::test]
async fn an_unapproved_request_waits_until_it_is_approved() {
    let sim = Sim::start_with(|o| o.approver.unapproved = vec!["shop/web-tls-*".into()]).await;
    sim.setup(http01(), true).await;
    sim.ingress("web", "web.example.com", true).await;
    sim.run(30);
    let cr = request(&sim, "web-tls-1").await.expect("the request");
    assert!(cr["status"].get("conditions").is_none(), "{cr:#}");
    let events = events_of(&sim, "web-tls-1").await;
    assert!(
        events
            .iter()
            .any(|m| m == "Request is not applicable for any policy so ignoring"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|m| m == "Not signing CertificateRequest until it is Approved"),
        "{events:?}"
    );
    assert!(
        secret(&sim, "web-tls").await.is_none(),
        "no temporary certificate yet"
    );
    let cert = sim.certificate("web-tls").await;
    assert_eq!(condition(&cert, "Issuing").unwrap()["status"], "True");

    // Approved by hand (`cmctl approve`): signed, issued.
    sim.api("cert-manager.io", "CertificateRequest", "certificaterequests", Some("shop"))
        .patch_status("web-tls-1", &PatchParams::default(), &Patch::Merge(json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "cmctl", "message": "manually approved by cmctl"}]}})))
        .await
        .unwrap();
    sim.run(40);
    let cert = sim.certificate("web-tls").await;
    assert_eq!(
        condition(&cert, "Ready").unwrap()["reason"],
        "Ready",
        "{cert:#}"
    );
}

/// A request a policy denies: Ready=False `Denied` on the request, the Certificate's
/// Issuing=False with the policy's reason and message, and the same denial again after the
/// backoff (the request stays).
#[tokio::test]
async fn a_denied_request_fails_the_issuance_with_the_policys_words() {
    let sim = Sim::start_with(|o| o.approver.deny = vec!["shop/web-tls-*".into()]).await;
    sim.setup(http01(), true).await;
    sim.ingress("web", "web.example.com", true).await;
    sim.run(10);
    let cr = request(&sim, "web-tls-1").await.expect("the request");
    assert_eq!(
        condition(&cr, "Denied").unwrap()["reason"],
        "policy.cert-manager.io"
    );
    let ready = condition(&cr, "Ready").unwrap();
    assert_eq!(ready["reason"], "Denied");
    assert_eq!(
        ready["message"],
        "The CertificateRequest was denied by an approval controller"
    );
    let cert = sim.certificate("web-tls").await;
    let issuing = condition(&cert, "Issuing").unwrap();
    assert_eq!(issuing["status"], "False");
    assert_eq!(issuing["reason"], "policy.cert-manager.io");
    let message = issuing["message"].as_str().unwrap();
    assert!(
        message.starts_with("The certificate request has failed to complete and will be retried: No policy approved this request: [allowed-domains: "),
        "{message}"
    );
    assert_eq!(cert["status"]["failedIssuanceAttempts"], 1);
    sim.jump(chrono::Duration::minutes(61));
    let cert = sim.certificate("web-tls").await;
    assert_eq!(cert["status"]["failedIssuanceAttempts"], 2, "{cert:#}");
    assert_eq!(
        request(&sim, "web-tls-1").await.unwrap()["metadata"]["uid"],
        cr["metadata"]["uid"],
        "the same request"
    );
}

/// Boulder's multi-perspective validation: the primary vantage point gets the key, the remote
/// ones are kept out, and the authorization fails with the remote problem prefixed.
#[tokio::test]
async fn a_host_blocked_from_remote_vantage_points_fails_secondary_validation() {
    let sim = Sim::start_with(|o| o.remote_blocked = vec!["web.example.com".into()]).await;
    sim.setup(http01(), true).await;
    sim.ingress("web", "web.example.com", true).await;
    let reason = sim.failed_challenge_after(30).await;
    assert!(
        reason.contains("urn:ietf:params:acme:error:connection: During secondary validation: ")
            && reason.contains("Fetching http://web.example.com/.well-known/acme-challenge/")
            && reason.ends_with("Timeout during connect (likely firewall problem)"),
        "{reason}"
    );
    // Another host passes: only the blocked one fails.
    sim.ingress("api", "api.example.com", true).await;
    sim.run(30);
    let cert = sim.certificate("api-tls").await;
    assert_eq!(
        condition(&cert, "Ready").unwrap()["reason"],
        "Ready",
        "{cert:#}"
    );
}

/// A wildcard under an issuer with HTTP-01 solvers only: the Order controller finds no
/// solver, says so once in a Warning `Solver` event, makes no Challenge, and the Order stays
/// pending. With a DNS-01 solver the Challenge is for the base name, `wildcard: true`, and
/// its propagation check waits (kubesim has no nameserver that would answer).
#[tokio::test]
async fn a_wildcard_without_a_dns01_solver_gets_no_challenge() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    sim.create("cert-manager.io", "Certificate", "certificates", Some("shop"),
        json!({"metadata": {"name": "wild-tls"}, "spec": {"secretName": "wild-tls", "dnsNames": ["*.example.com"], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}})).await;
    sim.run(30);
    assert!(sim.challenges().await.is_empty());
    let orders = sim
        .api("acme.cert-manager.io", "Order", "orders", Some("shop"))
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(orders.items.len(), 1);
    let order = &orders.items[0].data;
    assert_eq!(order["status"]["state"], "pending");
    let order_name = orders.items[0].metadata.name.clone().unwrap();
    let warnings: Vec<String> = events_of(&sim, &order_name).await;
    assert_eq!(
        warnings,
        ["Failed to determine a valid solver configuration for the set of domains on the Order: no configured challenge solvers can be used for this challenge"],
        "once"
    );

    // The issuer gains a DNS-01 solver: the Order's next pass makes the Challenge.
    sim.api("cert-manager.io", "ClusterIssuer", "clusterissuers", None)
        .patch("letsencrypt-prod", &PatchParams::default(), &Patch::Merge(json!({"spec": {"acme": {"solvers": [http01(), {"dns01": {"route53": {"region": "eu-central-1", "hostedZoneID": "Z0123456789"}}}]}}})))
        .await
        .unwrap();
    sim.run(10);
    let list = sim.challenges().await;
    assert_eq!(list.len(), 1, "{list:#?}");
    let ch = &list[0];
    assert_eq!(ch["spec"]["dnsName"], "example.com");
    assert_eq!(ch["spec"]["wildcard"], true);
    assert_eq!(ch["spec"]["type"], "DNS-01");
    assert_eq!(ch["status"]["presented"], true);
    assert_eq!(
        ch["status"]["reason"],
        "Waiting for DNS-01 challenge propagation: DNS record for \"example.com\" not yet propagated"
    );
}

/// A DNS-01 solver that cannot present (Route 53 finds no hosted zone for the name): the
/// error is the Challenge's reason and, prefixed, a Warning event; it stays unpresented.
#[tokio::test]
async fn a_dns01_present_error_is_the_reason_and_an_event() {
    let sim = Sim::start().await;
    sim.setup(
        json!({"dns01": {"route53": {"region": "eu-central-1"}}}),
        false,
    )
    .await;
    sim.create("cert-manager.io", "Certificate", "certificates", Some("shop"),
        json!({"metadata": {"name": "api-tls"}, "spec": {"secretName": "api-tls", "dnsNames": ["api.example.com"], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}})).await;
    sim.run(20);
    let list = sim.challenges().await;
    assert_eq!(list.len(), 1);
    let ch = &list[0];
    assert_eq!(ch["status"]["presented"], false);
    let reason = ch["status"]["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        "failed to determine Route 53 hosted zone ID: zone example.com. not found in Route 53 for domain _acme-challenge.api.example.com."
    );
    let name = ch["metadata"]["name"].as_str().unwrap();
    let events = events_of(&sim, name).await;
    assert_eq!(
        events,
        [format!("Error presenting challenge: {reason}")],
        "once"
    );
}

/// Readiness is strict: a Secret put there by hand (a valid certificate for the names, no
/// cert-manager annotations) matches only a namespaced Issuer, so a Certificate of a
/// ClusterIssuer re-issues it at once (`IncorrectIssuer`) instead of adopting it.
#[tokio::test]
async fn a_hand_made_secret_is_re_issued_under_a_cluster_issuer() {
    let sim = Sim::start().await;
    sim.setup(http01(), false).await;
    let now = chrono::Utc::now();
    let (chain, key) = kubesim::sim::pki::issue(
        kubesim::sim::pki::Hierarchy::Production,
        &["copied.example.com".into()],
        now - chrono::Duration::days(10),
        now + chrono::Duration::days(80),
        5,
    )
    .unwrap();
    sim.create("", "Secret", "secrets", Some("shop"),
        json!({"metadata": {"name": "copied-tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": chain, "tls.key": key}})).await;
    sim.create("cert-manager.io", "Certificate", "certificates", Some("shop"),
        json!({"metadata": {"name": "copied-tls"}, "spec": {"secretName": "copied-tls", "dnsNames": ["copied.example.com"], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}})).await;
    sim.run(1);
    let cert = sim.certificate("copied-tls").await;
    let issuing = condition(&cert, "Issuing").expect("re-issued at once");
    assert_eq!(issuing["reason"], "IncorrectIssuer", "{cert:#}");
    assert_eq!(
        issuing["message"],
        "Issuing certificate as Secret was previously issued by \"Issuer.cert-manager.io/\""
    );
    assert_eq!(
        condition(&cert, "Ready").unwrap()["reason"],
        "IncorrectIssuer"
    );
}

/// cert-manager processes at most `--max-concurrent-challenges` Challenges at once: the
/// others wait with `processing: false`, state `""` and no reason, and the oldest gets the
/// next free slot.
#[tokio::test]
async fn challenges_beyond_the_limit_wait_for_a_slot() {
    let sim = Sim::start_with(|o| o.max_concurrent_challenges = 2).await;
    // Behind HTTPS enforcement without edit-in-place: every self-check fails for ever.
    sim.setup(http01(), true).await;
    for i in 1..=4 {
        sim.ingress(&format!("app{i}"), &format!("app{i}.example.com"), false)
            .await;
        sim.run(1);
    }
    sim.run(20);
    let list = sim.challenges().await;
    assert_eq!(list.len(), 4);
    let (running, queued): (Vec<&Value>, Vec<&Value>) =
        list.iter().partition(|c| c["status"]["processing"] == true);
    assert_eq!(running.len(), 2, "{list:#?}");
    // Made without a status (the API server drops it on create): processing is false.
    for q in &queued {
        assert_ne!(q["status"]["processing"], true, "{q:#}");
        assert_eq!(q["status"]["state"].as_str().unwrap_or_default(), "");
        assert!(q["status"].get("reason").is_none(), "{q:#}");
    }
    let mut running_hosts: Vec<&str> = running
        .iter()
        .map(|c| c["spec"]["dnsName"].as_str().unwrap())
        .collect();
    running_hosts.sort_unstable();
    assert_eq!(
        running_hosts,
        ["app1.example.com", "app2.example.com"],
        "oldest first"
    );

    // A slot frees (app1's Certificate and Ingress are deleted, its challenge with them):
    // the oldest waiting one, app3, takes it.
    sim.api(
        "cert-manager.io",
        "Certificate",
        "certificates",
        Some("shop"),
    )
    .delete("app1-tls", &Default::default())
    .await
    .unwrap();
    sim.api("networking.k8s.io", "Ingress", "ingresses", Some("shop"))
        .delete("app1", &Default::default())
        .await
        .unwrap();
    sim.run(5);
    let list = sim.challenges().await;
    let running: Vec<&str> = list
        .iter()
        .filter(|c| c["status"]["processing"] == true)
        .map(|c| c["spec"]["dnsName"].as_str().unwrap())
        .collect();
    assert!(running.contains(&"app3.example.com"), "{running:?}");
    assert!(!running.contains(&"app4.example.com"), "{running:?}");
}

/// Issues web.example.com's certificate, then patches its Secret's data with `data` and
/// returns the Certificate one controller second later.
async fn issued_then_overwritten(sim: &Sim, data: Value) -> Value {
    sim.setup(http01(), false).await;
    sim.ingress("web", "web.example.com", false).await;
    sim.run(40);
    assert_eq!(
        condition(&sim.certificate("web-tls").await, "Ready").unwrap()["reason"],
        "Ready"
    );
    sim.api("", "Secret", "secrets", Some("shop"))
        .patch(
            "web-tls",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": data })),
        )
        .await
        .unwrap();
    sim.run(1);
    sim.certificate("web-tls").await
}

/// A Secret whose certificate does not decode is issued again at once
/// (`SecretPublicKeysDiffer`: `InvalidCertificate`), and readiness says the same.
#[tokio::test]
async fn a_secret_overwritten_with_junk_is_re_issued_at_once() {
    let sim = Sim::start().await;
    let junk = base64::engine::general_purpose::STANDARD
        .encode("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n");
    let cert = issued_then_overwritten(&sim, json!({ "tls.crt": junk })).await;
    let issuing = condition(&cert, "Issuing").expect("re-issued at once");
    assert_eq!(issuing["status"], "True", "{cert:#}");
    assert_eq!(issuing["reason"], "InvalidCertificate");
    assert!(
        issuing["message"]
            .as_str()
            .unwrap()
            .starts_with("Issuing certificate as Secret contains an invalid certificate: "),
        "{issuing:#}"
    );
    assert_eq!(
        condition(&cert, "Ready").unwrap()["reason"],
        "InvalidCertificate"
    );
    // And it heals: a new certificate in the Secret, Ready again.
    sim.run(40);
    let cert = sim.certificate("web-tls").await;
    assert_eq!(
        condition(&cert, "Ready").unwrap()["reason"],
        "Ready",
        "{cert:#}"
    );
    assert_eq!(cert["status"]["revision"], 2);
}

/// A Secret without its private key: `MissingData`, worded as upstream's check words it.
#[tokio::test]
async fn a_secret_without_its_key_is_missing_data() {
    let sim = Sim::start().await;
    let cert = issued_then_overwritten(&sim, json!({ "tls.key": null })).await;
    let issuing = condition(&cert, "Issuing").expect("re-issued at once");
    assert_eq!(issuing["reason"], "MissingData", "{cert:#}");
    assert_eq!(
        issuing["message"],
        "Issuing certificate as Secret does not contain a private key"
    );
}

/// Another key pair written into the Secret — consistent in itself, but not the current
/// request's key — is `SecretMismatch`; a key that is not the certificate's is
/// `InvalidKeyPair`.
#[tokio::test]
async fn another_key_pair_in_the_secret_is_re_issued() {
    let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
    let other = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["web.example.com".to_string()])
        .unwrap()
        .self_signed(&other)
        .unwrap();
    let sim = Sim::start().await;
    let cert = issued_then_overwritten(
        &sim,
        json!({"tls.crt": b64(leaf.pem()), "tls.key": b64(other.serialize_pem())}),
    )
    .await;
    let issuing = condition(&cert, "Issuing").expect("re-issued at once");
    assert_eq!(issuing["reason"], "SecretMismatch", "{cert:#}");
    assert_eq!(
        issuing["message"],
        "Secret contains a private key that does not match the current CertificateRequest"
    );

    let sim = Sim::start().await;
    let cert = issued_then_overwritten(&sim, json!({"tls.key": b64(other.serialize_pem())})).await;
    let issuing = condition(&cert, "Issuing").expect("re-issued at once");
    assert_eq!(issuing["reason"], "InvalidKeyPair", "{cert:#}");
    assert_eq!(
        issuing["message"],
        "Issuing certificate as Secret contains a private key that does not match the certificate"
    );
}

/// An expired copy written into the Secret is renewed at once: the trigger reads the
/// renewal time of the certificate in the Secret, not the status.
#[tokio::test]
async fn an_expired_copy_in_the_secret_is_renewed_at_once() {
    let sim = Sim::start().await;
    // The sim's clock 41 s on, when the copy is written.
    let now = sim.clock.now() + chrono::Duration::seconds(41);
    let (chain, key) = kubesim::sim::pki::issue(
        kubesim::sim::pki::Hierarchy::Production,
        &["web.example.com".into()],
        now - chrono::Duration::days(95),
        now - chrono::Duration::days(5),
        5,
    )
    .unwrap();
    let cert = issued_then_overwritten(&sim, json!({"tls.crt": chain, "tls.key": key})).await;
    let issuing = condition(&cert, "Issuing").expect("renewed at once");
    assert_eq!(issuing["reason"], "Renewing", "{cert:#}");
}
