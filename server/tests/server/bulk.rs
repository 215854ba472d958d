//! Renew with its Let's Encrypt budget check, and the bulk runs of edit-in-place and renew,
//! against kubesim, checked with kubectl.

use serde_json::{json, Value};

use crate::actions::{get_json, shop, EIP, PROD};
use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn bulk_edit_in_place_previews_every_item_then_fixes_them() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let kc = app.kubeconfig();
    let kc2 = kc.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(&kc2, "zrh-prod", &["create", "namespace", "acme"], None);
        for (name, host) in [("one", "one.acme.example"), ("two", "two.acme.example")] {
            kubectl(
                &kc2,
                "zrh-prod",
                &["apply", "--server-side", "-f", "-"],
                Some(&ingress_yaml("acme", name, host)),
            );
        }
        kubectl(
            &kc2,
            "zrh-prod",
            &["apply", "--server-side", "-f", "-"],
            Some(&ingress_yaml("default", "other", "other.example")),
        );
    })
    .await
    .unwrap();
    app.eventually("three Ingresses", || async {
        app.json("/api/v1/ingresses").await["total"] == 3
    })
    .await;

    // Their ClusterIssuer does not exist: the fix cannot help yet, and the run says so for
    // each Ingress instead of counting it.
    let blocked: Value = app
        .post(
            "/api/v1/bulk/edit-in-place",
            json!({"cluster": "zrh-prod", "namespace": "acme", "dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(blocked["total"], 0, "{blocked:#}");
    assert_eq!(
        blocked["message"],
        "Preview: nothing to run; 2 left alone: each would be refused or fail the same way"
    );
    let skipped = blocked["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{blocked:#}");
    assert!(skipped.iter().all(|s| s["why"]
        .as_str()
        .unwrap()
        .contains("would fail the same way")));
    cluster_issuer(&app, "letsencrypt-prod");
    mark_cluster_issuer_ready(&app, "letsencrypt-prod");
    app.eventually("the issuer is ready", || async {
        app.json("/api/v1/problems?cause=issuer.missing").await["total"] == 0
            && app.json("/api/v1/problems?cause=issuer.not-ready").await["total"] == 0
    })
    .await;

    // From the board filtered to one host: that host's Ingress alone, whatever the cluster
    // and namespace hold besides.
    let one: Value = app
        .post(
            "/api/v1/bulk/edit-in-place",
            json!({"list": "board", "filters": "host=one.acme.example", "dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(one["total"], 1, "{one:#}");
    assert_eq!(one["items"][0]["name"], "one");
    assert_eq!(
        one["scope"],
        json!({"list": "board", "filters": "host=one.acme.example"})
    );
    let page = app
        .get(&format!("/actions/{}", one["id"].as_str().unwrap()))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("the rows of the triage board with host one.acme.example"),
        "{page}"
    );
    assert!(page.contains("Apply to 1 item<"), "{page}");
    assert!(
        page.contains(&format!(
            "name=\"preview\" value=\"{}\"",
            one["id"].as_str().unwrap()
        )),
        "the apply button applies this preview: {page}"
    );
    for (body, param) in [
        (json!({"list": "certificates", "dry_run": true}), "list"),
        (
            json!({"list": "board", "filters": "cause=nope", "dry_run": true}),
            "cause",
        ),
        (
            json!({"list": "board", "filters": "host=x", "cluster": "zrh-prod"}),
            "filters",
        ),
    ] {
        let r = app.post("/api/v1/bulk/edit-in-place", body).await;
        assert_eq!(r.status(), 400);
        let message = r.json::<Value>().await.unwrap()["error"]["message"].clone();
        assert!(message.as_str().unwrap().starts_with(param), "{message}");
    }

    let preview: Value = app
        .post(
            "/api/v1/bulk/edit-in-place",
            json!({"cluster": "zrh-prod", "namespace": "acme", "dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(preview["total"], 2);
    assert_eq!(preview["items"].as_array().unwrap().len(), 2);
    assert!(preview["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["outcome"] == "ok" && i["dry_run"] == true));
    assert!(get_json(&kc, "ingress", "acme", "one")["metadata"]["annotations"][EIP].is_null());

    // Between the preview and the apply, a third Ingress joins the list and someone fixes
    // `two` by hand: the apply runs exactly what the preview showed, judged again.
    let kc2 = kc.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(
            &kc2,
            "zrh-prod",
            &["apply", "--server-side", "-f", "-"],
            Some(&ingress_yaml("acme", "three", "three.acme.example")),
        );
        kubectl(
            &kc2,
            "zrh-prod",
            &[
                "annotate",
                "ingress",
                "two",
                "-n",
                "acme",
                &format!("{EIP}=true"),
            ],
            None,
        );
    })
    .await
    .unwrap();
    app.eventually("the new Ingress and the hand-made fix", || async {
        app.json("/api/v1/ingresses").await["total"] == 4
            && app.json("/api/v1/ingresses/zrh-prod/acme/two").await["annotation"]["status"]
                == "set"
    })
    .await;
    let id = preview["id"].as_str().unwrap();
    for (body, status, param) in [
        (json!({"preview": id, "dry_run": true}), 400, "preview"),
        (json!({"preview": id, "list": "board"}), 400, "preview"),
        (json!({"preview": "nope"}), 404, ""),
    ] {
        let r = app.post("/api/v1/bulk/edit-in-place", body).await;
        assert_eq!(r.status(), status);
        let message = r.json::<Value>().await.unwrap()["error"]["message"].clone();
        assert!(message.as_str().unwrap().starts_with(param), "{message}");
    }
    let wrong = app.post("/api/v1/bulk/renew", json!({"preview": id})).await;
    assert_eq!(wrong.status(), 400, "a preview applies its own action only");

    let run: Value = app
        .post("/api/v1/bulk/edit-in-place", json!({"preview": id}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(run["outcome"], "ok", "{run:#}");
    assert_eq!(run["message"], "1 of 1 items ok; 2 left alone");
    assert_eq!(run["from_preview"], id);
    assert_eq!(run["scope"], preview["scope"]);
    let why = |name: &str| {
        run["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["object"]["name"] == name)
            .map(|s| s["why"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert!(
        why("three").contains("joined the list after the preview"),
        "{run:#}"
    );
    assert!(why("two").contains("no longer needs this"), "{run:#}");
    for name in ["one", "two"] {
        assert_eq!(
            get_json(&kc, "ingress", "acme", name)["metadata"]["annotations"][EIP],
            "true"
        );
    }
    assert!(
        get_json(&kc, "ingress", "acme", "three")["metadata"]["annotations"][EIP].is_null(),
        "not in the preview: untouched"
    );
    assert!(
        get_json(&kc, "ingress", "default", "other")["metadata"]["annotations"][EIP].is_null(),
        "outside the namespace: untouched"
    );
    let audit = app.json("/api/v1/audit").await;
    let rows = audit["items"].as_array().unwrap();
    let count = |action: &str, dry_run: bool| {
        rows.iter()
            .filter(|i| i["action"] == action && i["dry_run"] == dry_run)
            .count()
    };
    assert_eq!(
        count("bulk-edit-in-place", true),
        3,
        "each preview (blocked, from the board, the namespace): one row"
    );
    assert_eq!(count("bulk-edit-in-place", false), 1, "the run");
    assert_eq!(count("edit-in-place", false), 1, "each item that ran");
    assert_eq!(
        rows.len(),
        5,
        "items of a preview are not audited one by one"
    );
    let page = app
        .get(&format!("/actions/{}", run["id"].as_str().unwrap()))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(page.matches("data-testid=\"bulk-item\"").count(), 1);
    assert!(page.contains("1 of 1 done"));
    assert!(page.contains("Applied to exactly the items of"), "{page}");
    app.stop().await;
}

/// Issued certificates for `names` recorded in the history, as if Lookout had seen them.
async fn seed_issuances(app: &TestApp, names: &str, n: usize) {
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        app.dir.path().join("lookout.db").display()
    ))
    .await
    .unwrap();
    for i in 0..n {
        let at = (chrono::Utc::now() - chrono::Duration::hours(i as i64 + 1))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        sqlx::query(
            "INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, outcome, reason, message, created_at, finished_at, last_seen, deleted_at) \
             VALUES ('zrh-prod', 'shop', ?, ?, 'web-tls', ?, 'ClusterIssuer', 'letsencrypt-prod', ?, ?, 'issued', NULL, NULL, ?, ?, ?, ?)",
        )
        .bind(format!("web-tls-{i}"))
        .bind(format!("uid-{i}"))
        .bind(i as i64 + 1)
        .bind(PROD)
        .bind(json!([names]).to_string())
        .bind(&at)
        .bind(&at)
        .bind(&at)
        .bind(&at)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;
}

/// The Let's Encrypt production ClusterIssuer, `web-tls` with this status, and five
/// issuances of its names this week in the history.
async fn failing_web_tls_with_a_full_budget(app: &TestApp, status: Value) {
    // Ready: an issuer that is not would be why renewing fails (and renew is refused).
    ready_cluster_issuer(app, "letsencrypt-prod");
    let c = &app.fleet.clusters[0].cluster;
    let mut opts = kubesim::WriteOpts::system();
    opts.status = true;
    let rt = c.resolve("cert-manager.io", "certificates").unwrap();
    c.merge_patch(
        &rt,
        Some("shop"),
        "web-tls",
        &json!({ "status": status }),
        &opts,
    )
    .unwrap();
    seed_issuances(app, "web.shop.example", 5).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn renew_sets_issuing_like_cmctl_and_respects_the_exact_set_budget() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let kc = shop(&app).await;
    failing_web_tls_with_a_full_budget(&app, json!({"conditions": [
        {"type": "Ready", "status": "False", "reason": "Failed", "message": "the last attempt failed"},
        {"type": "Issuing", "status": "False", "reason": "Failed", "message": "order invalid"}],
        "notAfter": "2026-12-20T00:00:00Z", "revision": 3})).await;
    app.eventually("the budget is full", || async {
        app.json("/api/v1/rate-limits").await["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["limit"] == "exact-set" && b["used"] == 5)
    })
    .await;
    let path = "/api/v1/certificates/zrh-prod/shop/web-tls/renew";

    let preview: Value = app
        .post(path, json!({"dry_run": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(preview["needs_confirmation"], true);
    let set = preview["budget"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["limit"] == "exact-set")
        .unwrap();
    assert_eq!(
        (
            set["used"].clone(),
            set["after"].clone(),
            set["exceeds"].clone()
        ),
        (json!(5), json!(6), json!(true))
    );
    assert!(
        !preview["budget"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["limit"] == "registered-domain"),
        "a renewal is exempt from the registered-domain limit"
    );

    let refused = app.post(path, json!({"dry_run": false})).await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "budget_exceeded");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("web.shop.example would be 6 of 5"));
    assert_eq!(
        get_json(&kc, "certificate", "shop", "web-tls")["status"]["conditions"][1]["status"],
        "False",
        "not triggered"
    );

    let done = app
        .post(path, json!({"dry_run": false, "confirm_budget": true}))
        .await;
    assert_eq!(done.status(), 200);
    let cert = get_json(&kc, "certificate", "shop", "web-tls");
    let conditions = cert["status"]["conditions"].as_array().unwrap();
    let issuing = conditions.iter().find(|c| c["type"] == "Issuing").unwrap();
    assert_eq!(issuing["status"], "True");
    assert_eq!(issuing["reason"], "ManuallyTriggered");
    assert_eq!(
        issuing["message"],
        "Certificate re-issuance manually triggered"
    );
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Ready" && c["reason"] == "Failed"),
        "other conditions kept"
    );
    assert_eq!(conditions.len(), 2);

    let again = app.post(path, json!({"confirm_budget": true})).await;
    assert_eq!(again.status(), 409, "already issuing");
    assert_eq!(
        again.json::<Value>().await.unwrap()["error"]["code"],
        "refused"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bulk_renew_covers_the_failing_certificates_and_checks_their_budgets_together() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let kc = shop(&app).await;
    failing_web_tls_with_a_full_budget(&app, json!({"conditions": [
        {"type": "Ready", "status": "False", "reason": "Failed", "message": "the last attempt failed"}],
        "notAfter": "2026-12-20T00:00:00Z", "revision": 1})).await;
    app.eventually("the budget is full and the Certificate failing", || async {
        let full = app.json("/api/v1/rate-limits").await["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["limit"] == "exact-set" && b["used"] == 5);
        full && app.json("/api/v1/certificates?status=not-ready").await["total"] == 1
    })
    .await;

    let preview: Value = app
        .post(
            "/api/v1/bulk/renew",
            json!({"namespace": "shop", "dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(preview["total"], 1);
    assert_eq!(preview["needs_confirmation"], true);
    assert_eq!(preview["items"][0]["name"], "web-tls");
    assert_eq!(preview["items"][0]["outcome"], "ok");

    let refused = app
        .post("/api/v1/bulk/renew", json!({"namespace": "shop"}))
        .await;
    assert_eq!(refused.status(), 409);
    assert_eq!(
        refused.json::<Value>().await.unwrap()["error"]["code"],
        "budget_exceeded"
    );

    let run: Value = app
        .post(
            "/api/v1/bulk/renew",
            json!({"namespace": "shop", "confirm_budget": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(run["message"], "1 of 1 items ok");
    let cert = get_json(&kc, "certificate", "shop", "web-tls");
    let issuing = cert["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Issuing")
        .cloned()
        .unwrap();
    assert_eq!(issuing["reason"], "ManuallyTriggered");
    // Each item is followed as its own page follows it, to settled: here the new request
    // is awaited.
    let record = app
        .json(&format!("/api/v1/actions/{}", run["id"].as_str().unwrap()))
        .await;
    let progress = record["items"][0]["progress"].as_array().unwrap();
    assert_eq!(progress[0]["step"], "request", "{record:#}");
    assert!(record["settled"].is_null(), "{record:#}");
    let page = app
        .get(&format!("/actions/{}", run["id"].as_str().unwrap()))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-testid=\"bulk-settled\""), "{page}");
    assert!(page.contains("1 under way"), "{page}");
    app.stop().await;
}

/// Renewing while the issuer is not ready would only fail again: the preview says so and
/// what to fix first, offers no Apply, and the API refuses; once the issuer is ready the
/// same preview is fine.
#[tokio::test(flavor = "multi_thread")]
async fn renew_is_refused_while_its_root_cause_is_unfixed() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    shop(&app).await;
    cluster_issuer(&app, "letsencrypt-prod");
    let path = "/api/v1/certificates/zrh-prod/shop/web-tls/renew";
    app.eventually("the issuer is known and not ready", || async {
        app.json("/api/v1/problems?cause=issuer.not-ready").await["total"] == 1
    })
    .await;
    let preview: Value = app
        .post(path, json!({"dry_run": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(preview["outcome"], "refused", "{preview:#}");
    let why = preview["message"].as_str().unwrap();
    assert!(
        why.contains("would fail the same way")
            && why.contains("issuer is not ready")
            && why.contains("open the issuer"),
        "{why}"
    );
    let page = app
        .get(&format!("/actions/{}", preview["id"].as_str().unwrap()))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !page.contains("Apply: renew"),
        "no Apply for a plan that would fail"
    );
    assert_eq!(
        app.post(path, json!({"dry_run": false})).await.status(),
        409
    );

    mark_cluster_issuer_ready(&app, "letsencrypt-prod");
    app.eventually("the issuer is ready", || async {
        app.json("/api/v1/problems?cause=issuer.not-ready").await["total"] == 0
    })
    .await;
    let preview: Value = app
        .post(path, json!({"dry_run": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(preview["outcome"], "ok", "{preview:#}");
    app.stop().await;
}

/// A tenant's renew is refused too while the ClusterIssuer is not ready (whether it would
/// fail does not depend on who asks), but the tenant learns only that the issuer is not
/// usable — not its name's details nor who else depends on it.
#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_renew_is_refused_without_the_clusters_details() {
    if !kubectl_available() {
        return;
    }
    let config = lookout_server::config::Config::parse(
        r#"
[[clusters]]
name = "zrh-prod"
in_cluster = true

[auth]
mode = "proxy"
trusted_proxies = ["127.0.0.1/32"]

[[access]]
groups = ["shop-ops"]
role = "operator"
namespaces = ["shop"]
"#,
        &[],
    )
    .unwrap();
    let app = app_with(&["zrh-prod"])
        .auth(
            lookout_server::auth::Auth::from_config(&config)
                .await
                .unwrap(),
        )
        .await;
    app.eventually("ready", || async {
        app.http
            .get(format!("{}/readyz", app.base))
            .send()
            .await
            .unwrap()
            .status()
            == 200
    })
    .await;
    let kc = app.kubeconfig();
    let kc2 = kc.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(&kc2, "zrh-prod", &["create", "namespace", "shop"], None);
        kubectl(
            &kc2,
            "zrh-prod",
            &["apply", "-f", "-"],
            Some(&ingress_yaml("shop", "web", "web.shop.example")),
        );
    })
    .await
    .unwrap();
    create(
        &app,
        0,
        "cert-manager.io",
        "certificates",
        Some("shop"),
        json!({"metadata": {"name": "web-tls"},
               "spec": {"secretName": "web-tls", "dnsNames": ["web.shop.example"], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}}),
    );
    cluster_issuer(&app, "letsencrypt-prod");
    let as_tenant = |method: reqwest::Method, path: &str| {
        app.http
            .request(method, format!("{}{path}", app.base))
            .header("X-Forwarded-User", "tina")
            .header("X-Forwarded-Groups", "shop-ops")
    };
    app.eventually("the tenant sees the Certificate", || async {
        as_tenant(
            reqwest::Method::GET,
            "/api/v1/certificates/zrh-prod/shop/web-tls",
        )
        .send()
        .await
        .unwrap()
        .status()
            == 200
    })
    .await;
    let preview: Value = as_tenant(
        reqwest::Method::POST,
        "/api/v1/certificates/zrh-prod/shop/web-tls/renew",
    )
    .json(&json!({"dry_run": true}))
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(preview["outcome"], "refused", "{preview:#}");
    let why = preview["message"].as_str().unwrap();
    assert!(
        why.contains("issuer this Certificate uses is not usable"),
        "{why}"
    );
    assert!(
        !why.contains("depend"),
        "no count of who else depends on it: {why}"
    );
    // The board tells the same problem as the platform's, with the support contact and no
    // button; the Certificate's page offers no renew and no kubectl command for it.
    let problems: Value = as_tenant(reqwest::Method::GET, "/api/v1/problems")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let issuer = problems["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["cause"] == "issuer.not-ready")
        .unwrap_or_else(|| panic!("{problems:#}"));
    assert_eq!(issuer["owner"], "platform");
    assert_eq!(issuer["action"]["provider"], true);
    assert!(issuer["action"]["href"].is_null());
    let board = as_tenant(reqwest::Method::GET, "/")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        board.contains("On the provider&#x27;s side") || board.contains("On the provider's side"),
        "{board}"
    );
    assert!(
        board.contains("href=\"https://support.provider.example/tickets\""),
        "{board}"
    );
    let page = as_tenant(reqwest::Method::GET, "/certificates/zrh-prod/shop/web-tls")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-testid=\"provider\""), "{page}");
    assert!(!page.contains("preview-renew"), "{page}");
    app.stop().await;
}

/// A bulk run's record is read by whoever sees every cluster it covered whole — on-call and
/// the fleet's admins, not only the one who ran it — and by no one who sees part of it.
#[tokio::test(flavor = "multi_thread")]
async fn a_bulk_runs_record_is_read_by_those_who_see_all_it_covered() {
    let config = lookout_server::config::Config::parse(
        r#"
[[clusters]]
name = "zrh-prod"
in_cluster = true

[auth]
mode = "proxy"
trusted_proxies = ["127.0.0.1/32"]

[[access]]
groups = ["platform"]
role = "operator"

[[access]]
groups = ["on-call"]
role = "viewer"

[[access]]
groups = ["shop-ops"]
role = "operator"
namespaces = ["shop"]
"#,
        &[],
    )
    .unwrap();
    let app = app_with(&["zrh-prod"])
        .auth(
            lookout_server::auth::Auth::from_config(&config)
                .await
                .unwrap(),
        )
        .await;
    for ns in ["shop", "blog"] {
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
            "networking.k8s.io",
            "ingresses",
            Some(ns),
            json!({"metadata": {"name": "web", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
                   "spec": {"ingressClassName": "cilium", "rules": [{"host": format!("web.{ns}.example")}],
                            "tls": [{"hosts": [format!("web.{ns}.example")], "secretName": "web-tls"}]}}),
        );
    }
    app.eventually("the Ingresses are in", || async {
        app.get_as("/api/v1/ingresses", "pat", "platform")
            .await
            .json::<Value>()
            .await
            .is_ok_and(|l| l["total"] == 2)
    })
    .await;
    let run: Value = app
        .post_as(
            "/api/v1/bulk/edit-in-place",
            "pat",
            "platform",
            json!({"filters": "cluster=zrh-prod", "dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    let id = run["id"].as_str().unwrap_or_else(|| panic!("{run:#}"));
    let path = format!("/api/v1/actions/{id}");
    for (user, groups, status) in [
        ("pat", "platform", 200),
        ("olga", "on-call", 200),
        ("tina", "shop-ops", 404),
    ] {
        let got = app.get_as(&path, user, groups).await;
        assert_eq!(got.status(), status, "{user}");
    }
    app.stop().await;
}
