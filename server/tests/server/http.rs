//! Pages and API against kubesim: listing, 404s, 400s, escaping, caching, readiness.

use std::time::{Duration, Instant};

use lookout_server::config::ClusterConfig;
use lookout_server::store;
use serde_json::{json, Value};

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn ingresses_created_with_kubectl_appear_in_the_api_and_pages() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod", "gva-prod"]).await;
    app.wait_ready().await;
    let kc = app.kubeconfig();
    let kc2 = kc.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(
            &kc2,
            "zrh-prod",
            &["create", "namespace", "acme-shop"],
            None,
        );
        kubectl(
            &kc2,
            "zrh-prod",
            &["apply", "--server-side", "-f", "-"],
            Some(&ingress_yaml("acme-shop", "shop", "shop.acme.example")),
        );
        kubectl(
            &kc2,
            "gva-prod",
            &["apply", "--server-side", "-f", "-"],
            Some(&ingress_yaml("default", "web", "web.globex.example")),
        );
    })
    .await
    .unwrap();

    app.eventually("both Ingresses are listed", || async {
        app.json("/api/v1/ingresses").await["total"] == 2
    })
    .await;
    let list = app.json("/api/v1/ingresses?cluster=zrh-prod").await;
    assert_eq!(list["items"][0]["name"], "shop");
    assert_eq!(list["items"][0]["hosts"], json!(["shop.acme.example"]));
    assert_eq!(
        list["items"][0]["issuer"],
        json!({"kind": "ClusterIssuer", "name": "letsencrypt-prod", "group": "cert-manager.io"})
    );
    assert_eq!(list["items"][0]["annotation"], json!({"status": "missing"}));
    let by_host = app.json("/api/v1/ingresses?q=globex").await;
    assert_eq!(by_host["total"], 1);
    assert_eq!(by_host["items"][0]["cluster"], "gva-prod");

    let detail = app.json("/api/v1/ingresses/zrh-prod/acme-shop/shop").await;
    assert_eq!(detail["tls"][0]["secret_name"], "shop-tls");

    // Filters choose the list, never the facts: a cluster asked for lists its problems
    // alone, and the counts are still every cluster's.
    app.eventually("a problem in each cluster", || async {
        let by = app.json("/api/v1/problems").await["by_cluster"].clone();
        by.as_object().is_some_and(|o| o.len() == 2)
    })
    .await;
    let whole = app.json("/api/v1/problems").await;
    let zrh = app.json("/api/v1/problems?cluster=zrh-prod").await;
    assert_eq!(zrh["by_cluster"], whole["by_cluster"], "{zrh:#}");
    assert!(zrh["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["clusters"] == json!(["zrh-prod"])));
    assert!(zrh["total"].as_u64() < whole["total"].as_u64());
    let board = app.get("/?cluster=zrh-prod").await.text().await.unwrap();
    assert!(board.contains("The list below is filtered"), "{board}");

    let clusters = app.json("/api/v1/clusters").await;
    let names: Vec<&str> = clusters["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["zrh-prod", "gva-prod"]);
    assert!(clusters["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["state"] == "synced"));

    let page = app.get("/ingresses?q=shop").await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("shop.acme.example") && !html.contains("web.globex.example"),
        "{html}"
    );
    let detail_page = app
        .get("/ingresses/zrh-prod/acme-shop/shop")
        .await
        .text()
        .await
        .unwrap();
    assert!(detail_page.contains("shop-tls"));

    // A deletion through kubectl disappears too.
    let kc3 = kc.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(
            &kc3,
            "zrh-prod",
            &["delete", "ingress", "shop", "-n", "acme-shop"],
            None,
        )
    })
    .await
    .unwrap();
    app.eventually("the deleted Ingress is gone", || async {
        app.json("/api/v1/ingresses").await["total"] == 1
    })
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_cluster_is_listed_with_its_error_and_the_rest_keep_serving() {
    // A port that refuses connections, and a context that does not exist.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("dead-kubeconfig");
    std::fs::write(
        &dead,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: dead\n  cluster:\n    server: http://127.0.0.1:{closed_port}\ncontexts:\n- name: dead\n  context:\n    cluster: dead\n    user: u\nusers:\n- name: u\n  user:\n    token: x\ncurrent-context: dead\n"),
    )
    .unwrap();
    let extra = vec![
        ClusterConfig::from_kubeconfig("dead", &dead, "dead"),
        ClusterConfig::from_kubeconfig("typo", &dead, "no-such-context"),
    ];
    let app = app_with(&["zrh-prod"]).extra(extra).await;
    app.wait_ready().await;
    let clusters = app.json("/api/v1/clusters").await;
    let by_name = |n: &str| {
        clusters["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("zrh-prod")["state"], "synced");
    assert_eq!(by_name("dead")["state"], "failed");
    assert!(by_name("dead")["error"].as_str().unwrap().len() > 5);
    assert_eq!(by_name("typo")["state"], "failed");
    assert!(
        by_name("typo")["error"]
            .as_str()
            .unwrap()
            .contains("no-such-context"),
        "{}",
        by_name("typo")
    );

    let html = app.get("/clusters").await.text().await.unwrap();
    assert!(
        html.contains("no-such-context"),
        "the clusters page shows the error"
    );
    assert!(html.contains("failed"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn readyz_waits_for_a_cluster_that_does_not_answer() {
    // Accepts connections and never answers: the first list hangs.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("silent");
    write_kubeconfig(&kc, "s", format!("127.0.0.1:{port}"));
    let app = app_with(&["zrh-prod"])
        .auth(crate::tenancy::auth("127.0.0.1/32").await)
        .extra(vec![ClusterConfig {
            context: None,
            ..ClusterConfig::from_kubeconfig("silent", &kc, "")
        }])
        .await;
    let clusters = || async {
        let resp = app.get_as("/api/v1/clusters", "sam", "support").await;
        resp.json::<serde_json::Value>().await.unwrap()
    };
    app.eventually("zrh-prod synced", || async {
        clusters().await["items"][0]["state"] == "synced"
    })
    .await;
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503);
    // Anyone may ask: an anonymous caller (a kubelet's probe) gets the status only.
    let text = ready.text().await.unwrap();
    assert_eq!(
        text,
        "not ready: waiting for the first sync of the clusters"
    );
    // A caller who identifies learns which of the clusters they see are pending.
    let told = |token: &'static str| {
        let app = &app;
        async move {
            let resp = app
                .http
                .get(format!("{}/readyz", app.base))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            (resp.status(), resp.text().await.unwrap())
        }
    };
    assert_eq!(
        told("s3cret-admin").await,
        (
            reqwest::StatusCode::SERVICE_UNAVAILABLE,
            "not ready: waiting for the first sync of silent".to_string()
        )
    );
    let (status, text) = told("not-a-token").await;
    assert_eq!(status, 503, "a wrong token is an anonymous probe here");
    assert!(!text.contains("silent"), "{text}");
    assert!(clusters().await["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == "silent"));
    // Pages do not wait on it.
    let started = Instant::now();
    assert_eq!(
        app.get_as("/ingresses", "sam", "support").await.status(),
        200
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(app.get("/healthz").await.status(), 200);
    app.stop().await;
    drop(silent);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_pages_and_objects_are_real_404s() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let page = app.get("/no/such/page").await;
    assert_eq!(page.status(), 404);
    assert!(page.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(page.text().await.unwrap().contains("Not found"));

    let missing = app.get("/ingresses/zrh-prod/default/nope").await;
    assert_eq!(missing.status(), 404);
    let api = app.get("/api/v1/ingresses/zrh-prod/default/nope").await;
    assert_eq!(api.status(), 404);
    let body: Value = api.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    let api_route = app.get("/api/v1/nothing-here").await;
    assert_eq!(api_route.status(), 404);
    assert_eq!(
        api_route.json::<Value>().await.unwrap()["error"]["code"],
        "not_found"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_parameters_are_400s_that_name_the_parameter() {
    let app = spawn_app(&["zrh-prod"]).await;
    let page = app.get("/ingresses?page=zero").await;
    assert_eq!(page.status(), 400);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("page: \"zero\" is not a whole number"),
        "{html}"
    );
    let api = app.get("/api/v1/ingresses?colour=red").await;
    assert_eq!(api.status(), 400);
    let body: Value = api.json().await.unwrap();
    assert_eq!(body["error"]["code"], "bad_request");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("colour:"));
    // Without sign-in only loopback names are answered: a page whose name resolves to
    // 127.0.0.1 (DNS rebinding) can neither read nor act.
    for path in ["/api/v1/ingresses", "/"] {
        let r = app
            .http
            .get(format!("{}{path}", app.base))
            .header("Host", "evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{path}");
        assert!(r.text().await.unwrap().contains("loopback name"));
    }
    let r = app
        .http
        .post(format!("{}/api/v1/bulk/edit-in-place", app.base))
        .header("Host", "evil.example")
        .header("Origin", "http://evil.example")
        .json(&serde_json::json!({"dry_run": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Nor a name after a bracketed loopback address, nor two Host headers (no browser sends
    // either; a request that does is refused, not read first-wins).
    let raw = |request: String| {
        let addr = app.base.trim_start_matches("http://").to_string();
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            s.read_to_string(&mut answer).await.unwrap();
            answer
        }
    };
    for request in [
        "GET /api/v1/ingresses HTTP/1.1\r\nHost: [::1]evil.example\r\nConnection: close\r\n\r\n",
        "GET /api/v1/ingresses HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    ] {
        let answer = raw(request.to_string()).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{request:?}: {answer}");
    }
    // A huge duration is a 400 naming the parameter, not an overflow.
    for path in [
        "/api/v1/challenges",
        "/api/v1/audit",
        "/challenges",
        "/audit",
    ] {
        let r = app.get(&format!("{path}?since=99999999999999d")).await;
        assert_eq!(r.status(), 400, "{path}");
        let text = r.text().await.unwrap();
        assert!(
            text.contains("since") && text.contains("hundred years"),
            "{path}: {text}"
        );
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_provided_text_is_escaped() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let cluster = &app.fleet.clusters[0].cluster;
    let rt = cluster.resolve("networking.k8s.io", "ingresses").unwrap();
    let hostile = "<script>alert(1)</script>";
    cluster
        .create(
            &rt,
            Some("default"),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": "evil", "annotations": {"cert-manager.io/cluster-issuer": "le\"><img src=x onerror=alert(2)>", "acme.cert-manager.io/http01-edit-in-place": hostile}},
                   "spec": {"rules": [{"host": format!("{hostile}.example")}]}}),
            &kubesim::WriteOpts::system(),
        )
        .unwrap();
    app.eventually("the Ingress arrives", || async {
        app.json("/api/v1/ingresses").await["total"] == 1
    })
    .await;
    for path in [
        "/ingresses",
        "/ingresses/zrh-prod/default/evil",
        "/ingresses?q=%3Cscript%3E",
    ] {
        let html = app.get(path).await.text().await.unwrap();
        assert!(
            !html.contains("<script>alert(1)"),
            "{path} contains raw script"
        );
        assert!(
            !html.contains("<img src=x"),
            "{path} contains a raw img tag"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)"),
            "{path} shows the escaped text"
        );
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stylesheet_is_cached_and_responses_are_compressed() {
    let app = spawn_app(&["zrh-prod"]).await;
    let html = app.get("/clusters").await.text().await.unwrap();
    let href = html
        .split("href=\"/style/")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let css = app.get(&format!("/style/{href}")).await;
    assert_eq!(css.status(), 200);
    assert_eq!(
        css.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(css.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/css"));
    let stale = app.get("/style/lookout.css?v=old").await;
    assert_eq!(stale.headers()["cache-control"], "no-cache");
    let gz = app
        .http
        .get(format!("{}/style/{href}", app.base))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sync_state_changes_are_recorded_in_sqlite() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let dir = app.stop().await;
    let db = store::Db::open(&format!(
        "sqlite://{}",
        dir.path().join("lookout.db").display()
    ))
    .await
    .unwrap();
    let rows = store::sync_events::recent(&db.reader, "zrh-prod", 10)
        .await
        .unwrap();
    assert_eq!(rows.first().map(|r| r.state), Some("synced"), "{rows:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_expose_findings_sync_state_history_and_http_in_prometheus_text() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    assert_eq!(app.get("/healthz").await.status(), 200);
    let cluster = &app.fleet.clusters[0].cluster;
    let rt = cluster.resolve("networking.k8s.io", "ingresses").unwrap();
    cluster
        .create(&rt, Some("default"), json!({"metadata": {"name": "x", "annotations": {"cert-manager.io/cluster-issuer": "le", "acme.cert-manager.io/http01-edit-in-place": "yes"}}, "spec": {"rules": [{"host": "x.example.com"}]}}), &kubesim::WriteOpts::system())
        .unwrap();
    app.eventually("the finding", || async {
        app.json("/api/v1/findings?rule=ingress.edit-in-place-invalid")
            .await["items"]
            .as_array()
            .is_some_and(|a| a.len() == 1)
    })
    .await;
    let resp = app.get("/metrics").await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = resp.text().await.unwrap();
    for line in [
        "lookout_cluster_state{cluster=\"zrh-prod\",state=\"synced\"} 1",
        "lookout_findings{cluster=\"zrh-prod\",rule=\"ingress.edit-in-place-invalid\",severity=\"warning\"} 1",
        "lookout_cached_objects{cluster=\"zrh-prod\",kind=\"Ingress\"} 1",
        "lookout_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 1",
        "lookout_history_queue_depth 0",
        "# TYPE lookout_watch_relists_total counter",
        "lookout_storage_writable{writer=\"history\"} 1",
        "lookout_storage_held{writer=\"audit\"} 0",
        "lookout_relists_in_progress 0",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    // SQLite's own memory (its caches, the schema): something, and not absurd.
    let sqlite: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("lookout_sqlite_memory_bytes "))
        .expect("lookout_sqlite_memory_bytes")
        .parse()
        .unwrap();
    assert!((10_000..500_000_000).contains(&sqlite), "{sqlite}");
    app.stop().await;
}

#[test]
fn every_route_is_documented_in_the_api_docs() {
    let docs = include_str!("../../../docs/api.md");
    let mut checked = 0;
    for route in lookout_server::routes() {
        // The catch-all that answers 404 for unknown API paths, and the content-hashed assets.
        if route.path.contains("{*")
            || route.path.starts_with("/style/")
            || route.path.starts_with("/assets/")
        {
            continue;
        }
        if route.path.starts_with("/api/") {
            for method in route.methods {
                assert!(
                    docs.contains(&format!("`{method} {}`", route.path)),
                    "{method} {} is not in docs/api.md",
                    route.path
                );
            }
        } else {
            assert!(
                docs.contains(&format!("`{}`", route.path)),
                "{} is not in docs/api.md",
                route.path
            );
        }
        checked += 1;
    }
    assert!(checked > 30, "only {checked} routes");
}

/// Every query parameter of every GET route, driven with generated hostile values (huge and
/// negative numbers, control characters, SQL wildcards, wrong types, long strings): never a
/// 5xx, never a dropped connection (a panic).
#[tokio::test(flavor = "multi_thread")]
async fn every_query_parameter_of_every_route_takes_hostile_values_without_a_5xx() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    add_ingress(&app, 0, "shop");
    let params = [
        "page",
        "per_page",
        "sort",
        "cluster",
        "namespace",
        "severity",
        "rule",
        "status",
        "q",
        "domain",
        "outcome",
        "since",
        "action",
        "actor",
        "kind",
        "host",
        "annotation",
        "worst",
        "dry_run",
    ];
    let long = "a".repeat(5_000);
    let mut values: Vec<String> = [
        "99999999999999999999999",
        "-1",
        "0",
        "18446744073709551616",
        "1e400",
        "NaN",
        "%00",
        "%0A%0D",
        "%25",
        "%",
        "_",
        "*",
        "%2F..%2F",
        "%F0%9F%99%82",
        "%3Cscript%3E",
        "true",
        "[]",
        "{}",
        "99999999999999d",
        "-5h",
        "24h",
        "2026-13-45T99:99:99Z",
        "-urgency",
        "--since",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    values.push(long);
    // A few generated mixes on top of the fixed ones (a deterministic generator).
    let mut seed: u64 = 20;
    let alphabet: Vec<char> = "0123456789-_.%*?&=;/\\'\"<>aZ ".chars().collect();
    for _ in 0..12 {
        let n = 1 + (seed % 40) as usize;
        let mut v = String::new();
        for _ in 0..n {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let c = alphabet[(seed >> 33) as usize % alphabet.len()];
            v.push_str(&utf8_percent_encode(c));
        }
        values.push(v);
    }
    let mut checked = 0;
    for route in lookout_server::routes() {
        if !route.methods.contains(&"GET")
            || route.path == "/api/v1/events"
            || route.path.contains('*')
        {
            continue;
        }
        let path = route
            .path
            .replace("{cluster}", "zrh-prod")
            .replace("{namespace}", "default")
            .replace("{name}", "shop")
            .replace("{id}", "nope");
        for param in params {
            for value in &values {
                let url = format!("{}{path}?{param}={value}", app.base);
                let r = app
                    .http
                    .get(&url)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{url}: no answer ({e})"));
                assert!(r.status().as_u16() < 500, "{url}: {}", r.status());
                checked += 1;
            }
        }
    }
    assert!(checked > 5_000, "{checked} requests");
    app.stop().await;
}

/// One character, percent-encoded unless it is plainly safe in a query value.
fn utf8_percent_encode(c: char) -> String {
    if c.is_ascii_alphanumeric() || "-_.".contains(c) {
        c.to_string()
    } else {
        let mut buf = [0u8; 4];
        c.encode_utf8(&mut buf)
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect()
    }
}

/// Inputs are checked against what exists and what a route takes: a bulk run aimed at a
/// cluster the config does not name is a 404 that records nothing (a grant of `*` matches
/// any text, and the run would land on everyone's board); a JSON key given twice is a 400
/// naming it (the last would win); a query parameter on a route that takes none, and an
/// oversized header, are refused.
#[tokio::test(flavor = "multi_thread")]
async fn inputs_are_checked_against_the_config_and_what_each_route_takes() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    for path in ["/api/v1/bulk/renew", "/api/v1/bulk/edit-in-place"] {
        let r = app
            .post(
                path,
                json!({"cluster": "CALL-SUPPORT-+1-555-0100-NOW", "dry_run": true}),
            )
            .await;
        assert_eq!(r.status(), 404, "{path}");
    }
    assert_eq!(
        app.json("/api/v1/audit").await["total"],
        0,
        "nothing recorded"
    );
    let board = app.get("/").await.text().await.unwrap();
    assert!(!board.contains("CALL-SUPPORT"), "on the board");
    // The configured cluster still works.
    let r = app
        .post(
            "/api/v1/bulk/renew",
            json!({"cluster": "zrh-prod", "dry_run": true}),
        )
        .await;
    assert_eq!(r.status(), 200);

    let twice = app
        .http
        .post(format!("{}/api/v1/bulk/renew", app.base))
        .header("content-type", "application/json")
        .body(r#"{"cluster": "zrh-prod", "dry_run": true, "dry_run": false}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), 400);
    let body: Value = twice.json().await.unwrap();
    assert_eq!(
        body["error"]["message"], "dry_run: given more than once",
        "{body}"
    );
    assert_eq!(
        app.json("/api/v1/audit").await["total"],
        1,
        "only the dry run above"
    );

    for path in [
        "/api/v1/events?x=1",
        "/api/v1/ingresses/zrh-prod/default/web?x=1",
        "/ingresses/zrh-prod/default/web?x=1",
        "/ingresses/zrh-prod/default/web?x=1&x=2",
        "/certificates/zrh-prod/default/web-tls?x=1",
        "/issuers/zrh-prod/_/letsencrypt-prod?x=1",
        "/healthz?verbose=1",
        "/readyz?x=1",
        "/style/lookout.css?v=1&x=1",
        "/auth/signed-out?x=1",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status(), 400, "{path}");
    }
    let body: Value = app.get("/api/v1/events?x=1").await.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("x: unknown parameter"),
        "{body}"
    );

    let big = "a".repeat(100 * 1024);
    let r = app
        .http
        .get(format!("{}/api/v1/clusters", app.base))
        .header("x-padding", big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 431);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "request_header_fields_too_large");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("x-padding"),
        "{body}"
    );
    let mut many = app.http.get(format!("{}/api/v1/clusters", app.base));
    for i in 0..8 {
        many = many.header(format!("x-part-{i}"), "b".repeat(10 * 1024));
    }
    assert_eq!(many.send().await.unwrap().status(), 431);
    assert_eq!(app.get("/api/v1/clusters").await.status(), 200);
    app.stop().await;
}
