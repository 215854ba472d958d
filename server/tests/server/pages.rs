//! Every page against kubesim: status and key content, sort orders and filters in the query
//! string, search, the audit log, charts — and hostile cluster-provided text escaped on all
//! of them.

use lookout_server::store;
use serde_json::{json, Value};

use crate::helpers::*;

/// Text a cluster (or a caller) could put anywhere: a script and an attribute breakout.
const SCRIPT: &str = "<script>alert(1)</script>";
const BREAKOUT: &str = "\"><img src=x onerror=alert(2)>";

/// An Ingress → Certificate → CertificateRequest → Order → Challenge chain whose every
/// free-text field carries hostile text, plus an Event.
fn hostile_chain(app: &TestApp) {
    create(
        app,
        0,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "evil", "annotations": {
                   "cert-manager.io/cluster-issuer": format!("le{BREAKOUT}"),
                   "acme.cert-manager.io/http01-edit-in-place": SCRIPT}},
               "spec": {"ingressClassName": "cilium",
                        "rules": [{"host": format!("{SCRIPT}.example")}],
                        "tls": [{"hosts": [format!("{SCRIPT}.example")], "secretName": "evil-tls"}]}}),
    );
    create(
        app,
        0,
        "cert-manager.io",
        "certificates",
        Some("default"),
        json!({"metadata": {"name": "evil-tls", "ownerReferences": controlled_by(app, "networking.k8s.io/v1", "Ingress", "ingresses", "evil")},
               "spec": {"secretName": "evil-tls", "dnsNames": [format!("{SCRIPT}.example")],
                        "issuerRef": {"name": format!("le{BREAKOUT}"), "kind": "ClusterIssuer"}}}),
    );
    patch_status(
        app,
        "cert-manager.io",
        "certificates",
        "evil-tls",
        json!({"conditions": [{"type": "Ready", "status": "False", "reason": "Failed",
                               "message": format!("issuing failed: {SCRIPT} {BREAKOUT}"),
                               "lastTransitionTime": "2026-01-01T00:00:00Z"}],
               "notBefore": "2026-01-01T00:00:00Z", "notAfter": "2026-04-01T00:00:00Z",
               "renewalTime": "2026-03-01T00:00:00Z"}),
    );
    create(
        app,
        0,
        "cert-manager.io",
        "certificaterequests",
        Some("default"),
        json!({"metadata": {"name": "evil-tls-1", "annotations": {"cert-manager.io/certificate-revision": "1"},
                            "ownerReferences": controlled_by(app, "cert-manager.io/v1", "Certificate", "certificates", "evil-tls")},
               "spec": {"request": ""}}),
    );
    create(
        app,
        0,
        "acme.cert-manager.io",
        "orders",
        Some("default"),
        json!({"metadata": {"name": "evil-tls-1-1", "ownerReferences": controlled_by(app, "cert-manager.io/v1", "CertificateRequest", "certificaterequests", "evil-tls-1")},
               "spec": {"dnsNames": [format!("{SCRIPT}.example")]}}),
    );
    create(
        app,
        0,
        "acme.cert-manager.io",
        "challenges",
        Some("default"),
        json!({"metadata": {"name": "evil-tls-1-1-1", "ownerReferences": controlled_by(app, "acme.cert-manager.io/v1", "Order", "orders", "evil-tls-1-1")},
               "spec": {"dnsName": format!("{SCRIPT}.example"), "type": "HTTP-01"}}),
    );
    patch_status(
        app,
        "acme.cert-manager.io",
        "challenges",
        "evil-tls-1-1-1",
        json!({"state": "invalid", "presented": true, "reason": format!("Invalid response: {SCRIPT} {BREAKOUT}")}),
    );
    create(
        app,
        0,
        "",
        "events",
        Some("default"),
        json!({"metadata": {"name": "evil.1"}, "involvedObject": {"kind": "Ingress", "name": "evil", "namespace": "default"},
               "reason": "Bad", "message": format!("event {SCRIPT} {BREAKOUT}"), "type": "Warning",
               "lastTimestamp": "2026-01-01T00:00:00Z"}),
    );
}

async fn record_hostile_audit_row(app: &TestApp) {
    let pool = store::Db::open(&format!(
        "sqlite://{}",
        app.dir.path().join("lookout.db").display()
    ))
    .await
    .unwrap()
    .writer;
    store::audit::record(
        &pool,
        &store::audit::NewEntry {
            at: chrono::Utc::now(),
            actor: SCRIPT.into(),
            action: "edit-in-place".into(),
            cluster: "zrh-prod".into(),
            namespace: "default".into(),
            kind: "Ingress".into(),
            name: "evil".into(),
            dry_run: true,
            diff: Some(BREAKOUT.into()),
            outcome: "conflict".into(),
            error: Some(SCRIPT.into()),
        },
    )
    .await
    .unwrap();
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_shows_hostile_cluster_text_escaped() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    hostile_chain(&app);
    record_hostile_audit_row(&app).await;
    app.eventually("the chain and its history are in", || async {
        let challenges = app.json("/api/v1/challenges").await;
        let detail = app
            .json_opt("/api/v1/ingresses/zrh-prod/default/evil")
            .await;
        challenges["total"] == 1
            && detail.is_some_and(|d| {
                d["tls"][0]["certificate"]["requests"][0]["orders"][0]["challenges"][0]["state"]
                    == "invalid"
                    && !d["events"].as_array().unwrap().is_empty()
            })
    })
    .await;
    // Pages and where the hostile text must show (escaped) on them.
    let pages = [
        ("/", true),
        ("/findings?sort=since", true),
        ("/clusters", false),
        ("/ingresses", true),
        ("/ingresses?sort=-host", true),
        ("/ingresses/zrh-prod/default/evil", true),
        ("/certificates", true),
        ("/certificates/zrh-prod/default/evil-tls", true),
        ("/challenges", true),
        ("/rate-limits", false),
        ("/audit", true),
        ("/search?q=%3Cscript%3E", true),
        ("/search", false),
        ("/no-such-page/%3Cscript%3Ealert(1)%3C%2Fscript%3E", false),
        ("/ingresses?page=%3Cscript%3Ealert(1)%3C%2Fscript%3E", true),
    ];
    for (path, shows) in pages {
        let response = app.get(path).await;
        let status = response.status().as_u16();
        let html = response.text().await.unwrap();
        assert!([200, 400, 404].contains(&status), "{path}: {status}");
        assert!(!html.contains("<script>alert"), "{path} has a raw script");
        assert!(!html.contains("<img src=x"), "{path} has a raw img tag");
        if shows {
            assert!(
                html.contains("&lt;script&gt;alert(1)"),
                "{path} does not show the text escaped"
            );
        }
    }
    let detail = app
        .get("/certificates/zrh-prod/default/evil-tls")
        .await
        .text()
        .await
        .unwrap();
    assert!(detail.contains("issuing failed: &lt;script&gt;"));
    assert!(detail.contains("data-testid=\"lifetime-chart\""));
    let ingress = app
        .get("/ingresses/zrh-prod/default/evil")
        .await
        .text()
        .await
        .unwrap();
    let history = &ingress[ingress.find("Challenge history").unwrap()..];
    assert!(
        history.contains("data-testid=\"challenge-row\""),
        "the chain view lists the host's challenge history"
    );
    let board = app.get("/").await.text().await.unwrap();
    assert!(
        board.contains("data-testid=\"recent-row\""),
        "the challenge's transitions are recent changes"
    );
    let api = app.json("/api/v1/audit?outcome=conflict").await;
    assert_eq!(api["total"], 1);
    assert_eq!(
        api["items"][0]["actor"], SCRIPT,
        "JSON carries the text as it is"
    );
    assert_eq!(api["items"][0]["dry_run"], true);
    assert_eq!(app.json("/api/v1/audit?outcome=ok").await["total"], 0);
    assert_eq!(app.get("/api/v1/audit?outcome=fine").await.status(), 400);
    let audit = app.get("/audit").await.text().await.unwrap();
    assert!(audit.contains("&quot;&gt;&lt;img src=x") || audit.contains("\"&gt;&lt;img src=x"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn each_page_answers_with_its_own_content() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
    for (name, host) in [
        ("alpha", "a.shop.example"),
        ("bravo", "z.shop.example"),
        ("charlie", "m.other.example"),
    ] {
        create(
            &app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some("default"),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": name, "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
                   "spec": {"ingressClassName": "cilium", "rules": [{"host": host}],
                            "tls": [{"hosts": [host], "secretName": format!("{name}-tls")}]}}),
        );
    }
    app.eventually("three Ingresses", || async {
        app.json("/api/v1/ingresses").await["total"] == 3
    })
    .await;
    let checks: [(&str, &[&str]); 11] = [
        (
            "/",
            &[
                "data-testid=\"board-summary\"",
                "What changed recently",
                "name=\"host\"",
                "data-testid=\"problem-row\"",
            ],
        ),
        (
            "/findings",
            &["data-testid=\"finding-row\"", "name=\"sort\""],
        ),
        ("/clusters", &["data-testid=\"cluster-row\"", "zrh-prod"]),
        (
            "/ingresses",
            &[
                "data-testid=\"ingress-row\"",
                "3 ingresses: ",
                "aria-sort=\"ascending\"",
                "a.shop.example",
            ],
        ),
        // The health line counts every match, not only the page's rows.
        (
            "/ingresses?per_page=1",
            &["data-testid=\"list-health\"", "3 ingresses: "],
        ),
        (
            "/ingresses/zrh-prod/default/alpha",
            &[
                "data-testid=\"annotation-status\"",
                "a.shop.example",
                // Its ClusterIssuer is not ready: that is why, before the details.
                "data-testid=\"why\" data-cause=\"issuer.not-ready\"",
                "<title>✖ alpha · default · zrh-prod",
            ],
        ),
        (
            "/certificates",
            &[
                "data-testid=\"expiry-chart\"",
                "Expiry timeline",
                "data-testid=\"list-health\"",
            ],
        ),
        ("/challenges", &["Failures by reason", "name=\"domain\""]),
        (
            "/rate-limits",
            &["Let&#x27;s Encrypt limits", "Let's Encrypt limits"],
        ),
        ("/audit", &["Audit log", "No action or preview matches"]),
        (
            "/search?q=shop.example",
            &[
                "2 Ingresses and 0 Certificates match",
                "data-testid=\"search-ingress\"",
            ],
        ),
    ];
    for (path, needles) in checks {
        let response = app.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        let html = response.text().await.unwrap();
        // Either spelling of the apostrophe counts for the budgets title.
        let any_of_pair = path == "/rate-limits";
        if any_of_pair {
            assert!(needles.iter().any(|n| html.contains(n)), "{path}");
        } else {
            for n in needles {
                assert!(html.contains(n), "{path} lacks {n}");
            }
        }
    }
    // The issuers: a list (page, JSON, CSV) in the nav, and found by search.
    let issuers = app.json("/api/v1/issuers").await;
    let le = issuers["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "letsencrypt-prod")
        .unwrap_or_else(|| panic!("{issuers:#}"));
    assert_eq!(le["kind"], "ClusterIssuer");
    assert_eq!(le["exists"], true);
    assert_eq!(le["server_label"], "Let's Encrypt production");
    let csv = app.get("/api/v1/issuers.csv").await.text().await.unwrap();
    assert!(csv.lines().any(|l| l.contains("letsencrypt-prod")), "{csv}");
    let list = app.get("/issuers").await.text().await.unwrap();
    assert!(
        list.contains("href=\"/issuers/zrh-prod/_/letsencrypt-prod\""),
        "{list}"
    );
    assert!(
        list.contains("href=\"/issuers\" aria-current=\"page\""),
        "in the nav"
    );
    let found = app.get("/search?q=letsencrypt").await.text().await.unwrap();
    assert!(found.contains("data-testid=\"search-issuer\""), "{found}");
    assert_eq!(app.get("/api/v1/issuers?page=x").await.status(), 400);
    // The board's counts are the fleet's; a filtered list says it is filtered.
    let board = app.get("/").await.text().await.unwrap();
    assert!(!board.contains("The list below is filtered"), "unfiltered");
    let board = app.get("/?namespace=nowhere").await.text().await.unwrap();
    assert!(
        board.contains("The list below is filtered to 0 problems."),
        "filtered"
    );
    // The findings page's filters are in the query string and filter.
    let findings = app
        .get("/findings?severity=info")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !findings
            .contains("data-testid=\"finding-row\" data-rule=\"ingress.edit-in-place-missing\""),
        "a critical or warning finding on an info-only list"
    );
    let findings = app
        .get("/findings?rule=ingress.edit-in-place-missing")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(
        findings.matches("data-testid=\"finding-row\"").count(),
        3,
        "one per Ingress"
    );
    // The board's too: their ClusterIssuer is not ready — one problem, the root, with the
    // three Ingresses as its blast radius and their missing edit-in-place among its symptoms.
    let problems = app.json("/api/v1/problems").await;
    let items = problems["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{problems:#}");
    let p = &items[0];
    assert_eq!(p["cause"], "issuer.not-ready");
    assert_eq!(p["hosts"].as_array().unwrap().len(), 3, "{p:#}");
    assert_eq!(
        p["symptoms"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "ingress.edit-in-place-missing")
            .count(),
        3
    );
    let board = app
        .get("/?cause=issuer.not-ready")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(board.matches("data-testid=\"problem-row\"").count(), 1);
    let board = app.get("/?host=a.shop.example").await.text().await.unwrap();
    assert_eq!(
        board.matches("data-testid=\"problem-row\"").count(),
        1,
        "{board}"
    );
    assert_eq!(app.get("/?cause=nope").await.status(), 400);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sort_orders_are_in_the_query_string_and_bad_ones_are_named() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    for (name, host) in [
        ("alpha", "z.example"),
        ("bravo", "a.example"),
        ("charlie", "m.example"),
    ] {
        create(
            &app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some("default"),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": name}, "spec": {"rules": [{"host": host}]}}),
        );
    }
    app.eventually("three Ingresses", || async {
        app.json("/api/v1/ingresses").await["total"] == 3
    })
    .await;
    let names = |v: Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(app.json("/api/v1/ingresses").await),
        ["alpha", "bravo", "charlie"]
    );
    assert_eq!(
        names(app.json("/api/v1/ingresses?sort=-name").await),
        ["charlie", "bravo", "alpha"]
    );
    assert_eq!(
        names(app.json("/api/v1/ingresses?sort=host").await),
        ["bravo", "charlie", "alpha"]
    );
    assert_eq!(
        names(
            app.json("/api/v1/ingresses?sort=host&per_page=1&page=2")
                .await
        ),
        ["charlie"]
    );

    let html = app.get("/ingresses?sort=host").await.text().await.unwrap();
    assert!(
        html.contains("href=\"?sort=-host\""),
        "the sorted column reverses on click"
    );
    let pos = |n: &str| html.find(&format!(">{n}</a>")).unwrap();
    assert!(pos("bravo") < pos("charlie") && pos("charlie") < pos("alpha"));

    for path in [
        "/ingresses?sort=colour",
        "/api/v1/certificates?sort=--expiry",
        "/findings?sort=oldest",
        "/challenges?sort=host",
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), 400, "{path}");
        let body = response.text().await.unwrap();
        assert!(body.contains("sort: "), "{path}: {body}");
    }
    app.stop().await;
}
