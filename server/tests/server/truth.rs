//! What cert-manager, approver-policy and Let's Encrypt really do, through kubesim and
//! Lookout: a first issuance behind HTTPS enforcement with edit-in-place serves
//! cert-manager's `cert-manager.local` temporary certificate while it runs, and Lookout says
//! so (once, as the first issuance, quoting what the probe saw — not as an untrusted or wrong
//! certificate) while the issuance heals by itself; requests an approver leaves or denies;
//! a challenge that fails only from Let's Encrypt's remote vantage points; a managed Secret
//! overwritten by hand, issued again at once.

use serde_json::json;

use crate::helpers::*;
use crate::probing::{app_ingress, cluster_setup, probed_app};

#[tokio::test(flavor = "multi_thread")]
async fn a_first_issuance_serves_the_temporary_certificate_and_lookout_says_so() {
    let app = probed_app(
        &["zrh"],
        json!({"enforce-ingress-https": "true", "ingress-default-lb-mode": "shared"}),
    )
    .await;
    let fix = json!({"acme.cert-manager.io/http01-edit-in-place": "true"});
    // Heals by itself: the redirected challenge reaches the solver over HTTPS, against the
    // temporary certificate.
    app_ingress(&app, 0, "first", "letsencrypt-prod", fix.clone());
    within(
        60,
        "the first issuance completes without any action",
        || async {
            app.json_opt("/api/v1/certificates/zrh/default/first-tls")
                .await
                .is_some_and(|c| {
                    c["certificate"]["ready"]["status"] == "True"
                        && c["certificate"]["revision"] == 1
                })
        },
    )
    .await;

    // Held: cert-manager's self-check for a name that does not resolve fails for ever, so the
    // temporary certificate stays — and is what the host serves.
    let c = &app.fleet.clusters[0].cluster;
    c.create(
        &c.resolve("networking.k8s.io", "ingresses").unwrap(),
        Some("default"),
        json!({"metadata": {"name": "held", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"}},
               "spec": {"ingressClassName": "cilium", "rules": [{"host": "held.invalid", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "held", "port": {"number": 80}}}}]}}],
                        "tls": [{"hosts": ["held.invalid"], "secretName": "held-tls"}]}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    within(
        60,
        "Lookout tells the temporary certificate the probe sees",
        || async {
            let Some(f) = app
                .json_opt("/api/v1/findings?cluster=zrh&per_page=500")
                .await
            else {
                return false;
            };
            let items = f["items"].as_array().unwrap();
            let of = |name: &str| -> Vec<&serde_json::Value> {
                items.iter().filter(|f| f["name"] == name).collect()
            };
            let held = of("held-tls");
            let temporary = held
                .iter()
                .find(|f| f["rule"] == "cert.temporary-certificate");
            temporary.is_some_and(|t| {
                t["message"]
                    .as_str()
                    .unwrap()
                    .contains("Observed: clients get it for held.invalid")
            }) && !held.iter().any(|f| {
                matches!(
                    f["rule"].as_str().unwrap(),
                    "probe.untrusted" | "probe.wrong-certificate" | "cert.not-ready"
                )
            })
        },
    )
    .await;
    let cert = app.json("/api/v1/certificates/zrh/default/held-tls").await;
    assert!(cert["certificate"]["not_after"].is_string(), "{cert:#}");
    assert!(cert["certificate"]["revision"].is_null(), "{cert:#}");
    app.stop().await;
}

/// A cluster running approver-policy: a request no policy applies to waits for approval, one
/// a policy refuses is denied — Lookout says each, with the policy's words, as the problem's
/// root, and the progress says what the Order waits for.
#[tokio::test(flavor = "multi_thread")]
async fn requests_waiting_for_approval_or_denied_are_told_as_the_root() {
    let app = app_with(&["zrh"])
        .with_controllers()
        .approver(&["default/waiting-tls-*"], &["default/refused-tls-*"])
        .await;
    app.wait_ready().await;
    cluster_setup(
        &app,
        0,
        json!({"enforce-ingress-https": "true", "ingress-default-lb-mode": "shared"}),
        &["IPv4"],
    );
    let fix = json!({"acme.cert-manager.io/http01-edit-in-place": "true"});
    app_ingress(&app, 0, "waiting", "letsencrypt-prod", fix.clone());
    app_ingress(&app, 0, "refused", "letsencrypt-prod", fix);
    within(30, "the denial is the root of its problem", || async {
        let Some(board) = app.json_opt("/api/v1/problems?cluster=zrh").await else {
            return false;
        };
        board["items"].as_array().unwrap().iter().any(|p| {
            p["root"]["rule"] == "cert.request-denied"
                && p["root"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("No policy approved this request: [allowed-domains")
        })
    })
    .await;
    // cert-manager's approver would have answered in seconds: after two minutes without an
    // answer it is a finding (the threshold is the unit tests'). The chain says it now.
    within(30, "the waiting request is in the chain", || async {
        app.json_opt("/api/v1/ingresses/zrh/default/waiting")
            .await
            .is_some_and(|c| {
                c["tls"][0]["certificate"]["requests"][0]["request"]["name"] == "waiting-tls-1"
            })
    })
    .await;
    let chain = app.json("/api/v1/ingresses/zrh/default/waiting").await;
    let request = &chain["tls"][0]["certificate"]["requests"][0]["request"];
    assert_eq!(request["name"], "waiting-tls-1", "{chain:#}");
    assert_eq!(request["approved"], false);
    assert!(request["denied"].is_null());
    let page = app
        .get("/ingresses/zrh/default/waiting")
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("the latest: waiting for approval"), "{page}");
    assert!(
        page.contains("Not approved yet: nothing signs it"),
        "{page}"
    );
    let page = app
        .get("/ingresses/zrh/default/refused")
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("the latest: denied by an approver"), "{page}");
    app.stop().await;
}

/// Boulder's primary vantage point passes and its remote ones are kept out (a firewall that
/// admits some networks): the challenge fails "During secondary validation", and Lookout
/// classes it as such — not as a timeout to fix on port 80, nor as the redirect.
#[tokio::test(flavor = "multi_thread")]
async fn a_secondary_validation_failure_is_classed_as_such() {
    let app = app_with(&["zrh"])
        .with_controllers()
        .remote_blocked(&["partner.example.com"])
        .await;
    app.wait_ready().await;
    cluster_setup(
        &app,
        0,
        json!({"enforce-ingress-https": "true", "ingress-default-lb-mode": "shared"}),
        &["IPv4"],
    );
    app_ingress(
        &app,
        0,
        "partner",
        "letsencrypt-prod",
        json!({"acme.cert-manager.io/http01-edit-in-place": "true"}),
    );
    within(
        60,
        "the challenge fails from the other vantage points",
        || async {
            let Some(d) = app.json_opt("/api/v1/challenges?cluster=zrh").await else {
                return false;
            };
            d["items"].as_array().unwrap().iter().any(|c| {
                c["failure"]["class"] == "secondary-validation"
                    && c["reason"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("During secondary validation: ")
            })
        },
    )
    .await;
    app.stop().await;
}

/// A mass incident behind HTTPS enforcement: the failing challenges hold cert-manager's
/// slots (two here, sixty by default) and the rest wait — Lookout says they are queued, not
/// stuck.
#[tokio::test(flavor = "multi_thread")]
async fn challenges_waiting_for_a_slot_are_queued_not_stuck() {
    let app = app_with(&["zrh"])
        .with_controllers()
        .max_concurrent_challenges(2)
        .await;
    app.wait_ready().await;
    cluster_setup(
        &app,
        0,
        json!({"enforce-ingress-https": "true", "ingress-default-lb-mode": "shared"}),
        &["IPv4"],
    );
    for name in ["one", "two", "three"] {
        app_ingress(&app, 0, name, "letsencrypt-prod", json!({}));
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    }
    // The waiting one was made a moment ago; the rule waits two minutes for the scheduler,
    // so the test reads the Challenge's own state from the API, and the rule on it is the
    // unit tests'.
    let challenge = |name: &'static str| {
        let app = &app;
        async move {
            app.json_opt(&format!("/api/v1/ingresses/zrh/default/{name}"))
                .await
                .map(|d| crate::restart::first_challenge(&d).clone())
                .filter(|c| !c.is_null())
        }
    };
    within(30, "the third challenge waits for a slot", || async {
        let (Some(one), Some(two), Some(three)) = (
            challenge("one").await,
            challenge("two").await,
            challenge("three").await,
        ) else {
            return false;
        };
        one["processing"] == true
            && two["processing"] == true
            && three["processing"] == false
            && three["state"] == ""
            && three["reason"].is_null()
    })
    .await;
    app.stop().await;
}

/// A managed Secret overwritten by hand with a certificate that does not decode: cert-manager
/// issues it again at once (`InvalidCertificate`, as its Event says), Cilium's listener keeps
/// serving the last certificate it loaded meanwhile, and nothing is left to report.
#[tokio::test(flavor = "multi_thread")]
async fn a_managed_secret_overwritten_by_hand_is_issued_again_at_once() {
    let app = probed_app(
        &["zrh"],
        json!({"enforce-ingress-https": "false", "ingress-default-lb-mode": "shared"}),
    )
    .await;
    app_ingress(&app, 0, "media", "letsencrypt-prod", json!({}));
    let revision = |n: i64| {
        let app = &app;
        async move {
            app.json_opt("/api/v1/certificates/zrh/default/media-tls")
                .await
                .is_some_and(|c| {
                    c["certificate"]["ready"]["status"] == "True"
                        && c["certificate"]["revision"] == n
                })
        }
    };
    within(60, "media is issued", || revision(1)).await;
    let c = &app.fleet.clusters[0].cluster;
    c.merge_patch(
        &c.resolve("", "secrets").unwrap(),
        Some("default"),
        "media-tls",
        &json!({"data": {"tls.crt": "bm90IGEgY2VydGlmaWNhdGU="}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    within(60, "media is issued again", || revision(2)).await;
    let detail = app.json("/api/v1/certificates/zrh/default/media-tls").await;
    let said = detail["events"].as_array().unwrap().iter().any(|e| {
        e["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Issuing certificate as Secret contains an invalid certificate")
    });
    assert!(said, "the trigger's Event is in the chain: {detail:#}");
    // What the listener serves is the issued certificate: no probe finding once it has
    // looked since.
    within(30, "nothing observed against media", || async {
        app.json("/api/v1/findings?cluster=zrh&per_page=500").await["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| {
                !(f["rule"].as_str().unwrap().starts_with("probe.") && f["name"] == "media-tls")
            })
    })
    .await;
    app.stop().await;
}
