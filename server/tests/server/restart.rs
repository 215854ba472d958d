//! The fix on a cluster that behaves as cert-manager does (kubesim's controllers): a pending
//! challenge behind Cilium's HTTPS enforcement does not heal from the Ingress's and the
//! Certificate's annotations alone (they reach only the next request), so the fix ends by
//! annotating the in-flight Order, whose controller re-solves the challenge in place — and
//! the certificate is issued from the same request. Also the separate "restart issuance"
//! action, and renew refused while an issuance is in flight.

use serde_json::{json, Value};

use crate::helpers::*;

/// Cilium enforcing HTTPS, a production ClusterIssuer with an HTTP-01 solver, and Ingress
/// `default/web` asking it for a certificate without edit-in-place.
pub(crate) fn behind_https_enforcement(app: &TestApp) {
    let c = &app.fleet.clusters[0].cluster;
    let create = |group: &str, plural: &str, ns: Option<&str>, obj: Value| {
        let rt = c.resolve(group, plural).unwrap();
        c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
            .unwrap();
    };
    create(
        "",
        "configmaps",
        Some("kube-system"),
        json!({"metadata": {"name": "cilium-config"}, "data": {"enforce-ingress-https": "true"}}),
    );
    create(
        "networking.k8s.io",
        "ingressclasses",
        None,
        json!({"metadata": {"name": "cilium"}, "spec": {"controller": "cilium.io/ingress-controller"}}),
    );
    create(
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}}),
    );
    create(
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"metadata": {"name": "web", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
        "spec": {"ingressClassName": "cilium", "rules": [{"host": "web.example.com"}], "tls": [{"hosts": ["web.example.com"], "secretName": "web-tls"}]}}),
    );
}

pub(crate) fn first_challenge(detail: &Value) -> &Value {
    &detail["tls"][0]["certificate"]["requests"][0]["orders"][0]["challenges"][0]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fix_re_solves_the_stuck_challenge_in_place_and_the_certificate_is_issued() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    behind_https_enforcement(&app);
    let chain = "/api/v1/ingresses/zrh-prod/default/web";
    app.eventually("the self-check fails as cert-manager's does", || async {
        app.json_opt(chain).await.is_some_and(|d| {
            first_challenge(&d)["reason"]
                == "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'"
        })
    })
    .await;
    let d = app.json(chain).await;
    let ch = first_challenge(&d);
    assert_eq!(ch["failure"]["class"], "not-found");
    assert!(
        ch["in_place_ingress"].is_null(),
        "solved by a separate solver Ingress"
    );
    let request = d["tls"][0]["certificate"]["requests"][0]["request"]["name"]
        .as_str()
        .unwrap()
        .to_string();

    // While it is being issued, renew is refused and restart is what is offered.
    let renew = app
        .post(
            "/api/v1/certificates/zrh-prod/default/web-tls/renew",
            json!({}),
        )
        .await;
    assert_eq!(renew.status(), 409);
    let restart: Value = app
        .post(
            "/api/v1/certificates/zrh-prod/default/web-tls/restart",
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(restart["outcome"], "ok", "{restart:#}");
    assert_eq!(restart["steps"][0]["kind"], "CertificateRequest");
    assert_eq!(
        restart["steps"][0]["diff"],
        json!([format!("- CertificateRequest {request}")])
    );
    let page = app
        .get("/certificates/zrh-prod/default/web-tls")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Preview: restart issuance"),
        "the Certificate page offers the restart"
    );

    // The fix, previewed: three steps, nothing changed.
    let path = "/api/v1/ingresses/zrh-prod/default/web/edit-in-place";
    let preview: Value = app
        .post(path, json!({"dry_run": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(preview["outcome"], "ok", "{preview:#}");
    let kinds: Vec<&str> = preview["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Ingress", "Certificate", "Order"]);
    assert_eq!(
        preview["steps"][2]["diff"],
        json!(["+ metadata.annotations[\"acme.cert-manager.io/http01-override-ingress-name\"]: \"web\""])
    );
    assert!(
        preview["steps"][2]["change"]
            .as_str()
            .is_some_and(|d| d.contains("no new request")),
        "the preview says why: {preview:#}"
    );
    let uid = |d: &Value| d["tls"][0]["certificate"]["requests"][0]["request"]["uid"].clone();
    let before = uid(&app.json(chain).await);
    assert_eq!(
        uid(&app.json(chain).await),
        before,
        "a preview deletes nothing"
    );

    // Applied: the Order is annotated, cert-manager replaces the challenge with one solved
    // in place, and the certificate is issued from the same request.
    let done = app.post(path, json!({"dry_run": false})).await;
    assert_eq!(done.status(), 200);
    let done: Value = done.json().await.unwrap();
    assert_eq!(done["outcome"], "ok", "{done:#}");
    assert!(
        done["steps"][2]["message"]
            .as_str()
            .is_some_and(|m| m.contains("replaced the pending challenge")),
        "{done:#}"
    );
    app.eventually("the certificate is issued", || async {
        app.json_opt("/api/v1/certificates/zrh-prod/default/web-tls")
            .await
            .is_some_and(|c| c["certificate"]["ready"]["status"] == "True")
    })
    .await;
    // Its progress follows the request in flight, not a new one.
    let record = app
        .json(&format!("/api/v1/actions/{}", done["id"].as_str().unwrap()))
        .await;
    assert_eq!(record["progress"][0]["step"], "request", "{record:#}");
    assert_eq!(record["progress"][0]["state"], "done", "{record:#}");
    assert_eq!(record["settled"], "ready", "{record:#}");
    let audit = app.json("/api/v1/audit?action=edit-in-place").await;
    let run = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dry_run"] == false)
        .expect("the run is audited");
    let diff = run["diff"].as_str().unwrap_or_default();
    assert!(
        !diff.contains("- CertificateRequest"),
        "no request deleted: {audit:#}"
    );
    assert!(diff.contains("http01-override-ingress-name"), "{diff}");
    assert_eq!(uid(&app.json(chain).await), before, "the same request");

    // Settled, it stays as it settled: a later renewal of the Certificate (a newer request,
    // another certificate served) does not move the fix's page.
    assert!(record["settled_at"].is_string(), "{record:#}");
    let renewed = app
        .post(
            "/api/v1/certificates/zrh-prod/default/web-tls/renew",
            json!({"confirm_budget": true}),
        )
        .await;
    assert_eq!(renewed.status(), 200);
    app.eventually("the renewal is issued", || async {
        let d = app.json(chain).await;
        let newest = &d["tls"][0]["certificate"]["requests"][0]["request"];
        newest["uid"] != before && newest["issued"].is_object()
    })
    .await;
    let again = app
        .json(&format!("/api/v1/actions/{}", done["id"].as_str().unwrap()))
        .await;
    assert_eq!(again["progress"], record["progress"]);
    assert_eq!(again["settled"], "ready");
    assert_eq!(again["settled_at"], record["settled_at"]);
    assert!(
        again.get("final_progress").is_none(),
        "kept, not sent: {again:#}"
    );
    app.stop().await;
}

/// cert-manager's Order controller re-solves a pending Challenge when the issuer's solver
/// changes (kubesim does as upstream does): Lookout's chain follows the new Challenge — its
/// solver on the certificate's own Ingress — and the failure of the old one goes with it,
/// without a new request.
#[tokio::test(flavor = "multi_thread")]
async fn lookout_follows_a_challenge_re_solved_after_the_issuer_changed() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    behind_https_enforcement(&app);
    let chain = "/api/v1/ingresses/zrh-prod/default/web";
    app.eventually("the self-check fails behind the redirect", || async {
        app.json_opt(chain)
            .await
            .is_some_and(|d| first_challenge(&d)["failure"]["class"] == "not-found")
    })
    .await;
    let d = app.json(chain).await;
    let old = first_challenge(&d)["name"].as_str().unwrap().to_string();
    let request = d["tls"][0]["certificate"]["requests"][0]["request"]["name"].clone();
    assert!(request.is_string(), "{d:#}");
    // The issuer's solver now names the Ingress: the challenge is solved in place — and
    // passes behind the redirect once the host has a certificate on 443, the temporary one
    // cert-manager writes while the request is pending when the Certificate asks for it.
    let c = &app.fleet.clusters[0].cluster;
    c.merge_patch(
        &c.resolve("cert-manager.io", "certificates").unwrap(),
        Some("default"),
        "web-tls",
        &json!({"metadata": {"annotations": {"cert-manager.io/issue-temporary-certificate": "true"}}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    c.merge_patch(
        &c.resolve("cert-manager.io", "clusterissuers").unwrap(),
        None,
        "letsencrypt-prod",
        &json!({"spec": {"acme": {"solvers": [{"http01": {"ingress": {"name": "web"}}}]}}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    app.eventually(
        "Lookout shows the new challenge, solved in place",
        || async {
            app.json_opt(chain).await.is_some_and(|d| {
                let ch = first_challenge(&d);
                ch["name"] != old.as_str() && ch["in_place_ingress"] == "web"
            })
        },
    )
    .await;
    app.eventually(
        "the certificate is issued from the same request",
        || async {
            app.json_opt("/api/v1/certificates/zrh-prod/default/web-tls")
                .await
                .is_some_and(|c| c["certificate"]["ready"]["status"] == "True")
        },
    )
    .await;
    let d = app.json(chain).await;
    assert_eq!(
        d["tls"][0]["certificate"]["requests"][0]["request"]["name"], request,
        "no new request: {d:#}"
    );
    app.stop().await;
}

/// With Kubernetes' garbage collector taking its time (kubesim's delay), the request
/// cert-manager makes after a restart has its predecessor's name, so its Order's name is
/// taken until the old Order is removed: the restart and its progress say that is what it
/// waits for, and then the new Order comes.
#[tokio::test(flavor = "multi_thread")]
async fn a_restart_says_when_the_old_order_holds_the_new_ones_name() {
    let app = app_with(&["zrh-prod"])
        .with_controllers()
        .gc_delay(chrono::Duration::seconds(4))
        .await;
    app.wait_ready().await;
    behind_https_enforcement(&app);
    let chain = "/api/v1/ingresses/zrh-prod/default/web";
    app.eventually("a challenge is under way", || async {
        app.json_opt(chain)
            .await
            .is_some_and(|d| first_challenge(&d)["reason"].is_string())
    })
    .await;
    let d = app.json(chain).await;
    let old_order = d["tls"][0]["certificate"]["requests"][0]["orders"][0]["order"]["name"].clone();
    assert!(old_order.is_string(), "{d:#}");
    let restart: Value = app
        .post(
            "/api/v1/certificates/zrh-prod/default/web-tls/restart",
            json!({"dry_run": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(restart["outcome"], "ok", "{restart:#}");
    let message = restart["steps"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "its Order waits for the old Order {} to be removed",
            old_order.as_str().unwrap()
        )),
        "{message}"
    );
    let id = restart["id"].as_str().unwrap();
    let progress = app.json(&format!("/api/v1/actions/{id}")).await;
    let order_step = progress["progress"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "order")
        .cloned()
        .unwrap_or_default();
    assert!(
        order_step["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("waiting for the old Order")),
        "{progress:#}"
    );
    within(
        20,
        "the new Order, once the old one is collected",
        || async {
            let p = app.json(&format!("/api/v1/actions/{id}")).await;
            p["progress"].as_array().is_some_and(|steps| {
                steps.iter().any(|s| {
                    s["step"] == "order"
                        && s["detail"]
                            .as_str()
                            .is_some_and(|d| d.starts_with("Order ") && !d.contains("old"))
                })
            })
        },
    )
    .await;
    app.stop().await;
}

/// The fix's fallback: when no Challenge solved on the Ingress appears within its wait after
/// the Order is annotated (here cert-manager is down, so nothing re-solves), the fix restarts
/// the request instead and says so; once cert-manager is back the certificate is issued.
#[tokio::test(flavor = "multi_thread")]
async fn the_fix_restarts_the_request_when_nothing_re_solves_the_challenge() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    behind_https_enforcement(&app);
    let chain = "/api/v1/ingresses/zrh-prod/default/web";
    app.eventually("the self-check fails", || async {
        app.json_opt(chain)
            .await
            .is_some_and(|d| first_challenge(&d)["reason"].as_str().is_some())
    })
    .await;
    let uid = |d: &Value| d["tls"][0]["certificate"]["requests"][0]["request"]["uid"].clone();
    let before = uid(&app.json(chain).await);
    let cluster = &app.fleet.clusters[0].cluster;
    cluster.set_faults(kubesim::faults::Faults {
        cert_manager_down: true,
        ..Default::default()
    });
    let done: Value = app
        .post(
            "/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            json!({"dry_run": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(done["outcome"], "ok", "{done:#}");
    let last = &done["steps"][2];
    assert_eq!(last["kind"], "Order", "{done:#}");
    let message = last["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no challenge on Ingress web appeared within 10 s")
            && message.contains("restarted the request instead"),
        "{done:#}"
    );
    let diff: Vec<&str> = last["diff"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        diff.iter().any(|d| d.starts_with("- CertificateRequest")),
        "the request was deleted: {diff:?}"
    );
    cluster.set_faults(kubesim::faults::Faults::default());
    app.eventually("the certificate is issued from a new request", || async {
        app.json_opt("/api/v1/certificates/zrh-prod/default/web-tls")
            .await
            .is_some_and(|c| c["certificate"]["ready"]["status"] == "True")
    })
    .await;
    assert_ne!(uid(&app.json(chain).await), before, "a new request");
    app.stop().await;
}
