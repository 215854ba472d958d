//! The ACME history against kubesim: deleted Challenges keep every state; a restart on the
//! same database neither loses nor duplicates rows; the names come from the CSR.

use serde_json::{json, Value};

use crate::helpers::*;

fn challenge_status(app: &TestApp, name: &str, status: Value) {
    patch_status(app, "acme.cert-manager.io", "challenges", name, status);
}

async fn states(app: &TestApp, name: &str) -> Option<(Vec<String>, Option<String>)> {
    let (row, states) = challenge_history(app, name).await?;
    Some((states, row["deleted_at"].as_str().map(str::to_string)))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_challenge_keeps_every_state_and_a_restart_adds_nothing() {
    every_state_kept(app_with(&["zrh-prod"]).await).await;
}

/// The same on PostgreSQL: the writer's statements, the trigger that records transitions,
/// the pages' reads and a restart's replay.
#[tokio::test(flavor = "multi_thread")]
async fn on_postgresql_a_deleted_challenge_keeps_every_state_and_a_restart_adds_nothing() {
    let Some(url) = crate::testdb::postgres_url().await else {
        return;
    };
    every_state_kept(app_with(&["zrh-prod"]).database(url).await).await;
}

async fn every_state_kept(app: TestApp) {
    app.wait_ready().await;
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("acme.cert-manager.io", "challenges").unwrap();
    for name in ["gone", "stays"] {
        c.create(&rt, Some("default"), json!({"metadata": {"name": name}, "spec": {"dnsName": format!("{name}.example.com"), "type": "HTTP-01"}}), &kubesim::WriteOpts::system()).unwrap();
    }
    app.eventually("both challenges recorded", || async {
        states(&app, "gone").await.is_some() && states(&app, "stays").await.is_some()
    })
    .await;
    challenge_status(
        &app,
        "gone",
        json!({"state": "pending", "processing": true, "presented": false}),
    );
    app.eventually("pending recorded", || async {
        states(&app, "gone")
            .await
            .is_some_and(|(s, _)| s.contains(&"pending".to_string()))
    })
    .await;
    challenge_status(
        &app,
        "gone",
        json!({"state": "pending", "processing": true, "presented": true}),
    );
    challenge_status(
        &app,
        "gone",
        json!({"state": "valid", "processing": false, "presented": false, "reason": "Successfully authorized domain"}),
    );
    app.eventually("valid recorded", || async {
        states(&app, "gone")
            .await
            .is_some_and(|(s, _)| s.last() == Some(&"valid".to_string()))
    })
    .await;
    c.delete(&rt, Some("default"), "gone", false).unwrap();
    app.eventually("the deletion recorded", || async {
        states(&app, "gone").await.is_some_and(|(_, d)| d.is_some())
    })
    .await;
    let (gone, _) = states(&app, "gone").await.unwrap();
    assert_eq!(
        gone,
        vec!["", "pending", "pending", "valid"],
        "every state, in order"
    );
    let list = app.json("/api/v1/challenges?outcome=valid").await;
    assert_eq!(list["total"], 1);
    challenge_status(
        &app,
        "stays",
        json!({"state": "invalid", "processing": false, "presented": false, "reason": "Invalid response from https://stays.example.com/.well-known/acme-challenge/x: 404"}),
    );
    app.eventually("the failure grouped", || async {
        app.json("/api/v1/challenges").await["failures_by_reason"]
            == json!([{"reason": "redirected", "count": 1}])
    })
    .await;
    let before = app.json("/api/v1/challenges?per_page=1000").await;
    // A page of one row carries that row's own transitions (only the page's are read).
    for page in [1, 2] {
        let one = app
            .json(&format!("/api/v1/challenges?per_page=1&page={page}"))
            .await;
        assert_eq!(one["total"], 2);
        let row = &one["items"][0];
        let same = before["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == row["name"])
            .unwrap();
        assert_eq!(row, same, "page {page}");
        assert!(!row["transitions"].as_array().unwrap().is_empty());
    }

    // Restart on the same database: the relist replays every live object.
    let app = app.restart().await;
    app.wait_ready().await;
    // A Challenge made after the restart reaches the history behind the relist's replay (one
    // watcher, one queue, one writer): once it is there, the replay is written too.
    let c = &app.fleet.clusters[0].cluster;
    c.create(&rt, Some("default"), json!({"metadata": {"name": "marker"}, "spec": {"dnsName": "marker.example.com", "type": "HTTP-01"}}), &kubesim::WriteOpts::system()).unwrap();
    app.eventually("the marker, behind the replay", || async {
        states(&app, "marker").await.is_some()
    })
    .await;
    let after = app.json("/api/v1/challenges?per_page=1000").await;
    let without_marker: Vec<&Value> = after["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] != "marker")
        .collect();
    let before: Vec<&Value> = before["items"].as_array().unwrap().iter().collect();
    assert_eq!(before, without_marker, "nothing lost, nothing duplicated");
    let bad = app.get("/api/v1/challenges?since=yesterday").await;
    assert_eq!(bad.status(), 400);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_challenge_deleted_while_lookout_was_down_is_marked_deleted() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let c = app.fleet.clusters[0].cluster.clone();
    let rt = c.resolve("acme.cert-manager.io", "challenges").unwrap();
    c.create(&rt, Some("default"), json!({"metadata": {"name": "ghost"}, "spec": {"dnsName": "ghost.example.com", "type": "HTTP-01"}}), &kubesim::WriteOpts::system()).unwrap();
    app.eventually("recorded", || async {
        states(&app, "ghost").await.is_some()
    })
    .await;
    // Deleted while nobody watches; the restarted app learns it from its relist.
    let app = app
        .restart_after(|_| drop(c.delete(&rt, Some("default"), "ghost", false).unwrap()))
        .await;
    app.wait_ready().await;
    app.eventually("marked deleted", || async {
        states(&app, "ghost")
            .await
            .is_some_and(|(_, d)| d.is_some())
    })
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_issuance_is_recorded_with_the_names_of_its_csr_and_counts_against_the_budget() {
    issuance_recorded(app_with(&["zrh-prod"]).with_controllers().await).await;
}

/// The same on PostgreSQL: requests, orders, readiness and the budgets read from them.
#[tokio::test(flavor = "multi_thread")]
async fn on_postgresql_an_issuance_is_recorded_and_counts_against_the_budget() {
    let Some(url) = crate::testdb::postgres_url().await else {
        return;
    };
    issuance_recorded(
        app_with(&["zrh-prod"])
            .with_controllers()
            .database(url)
            .await,
    )
    .await;
}

async fn issuance_recorded(app: TestApp) {
    app.wait_ready().await;
    let c = &app.fleet.clusters[0].cluster;
    let create = |group: &str, plural: &str, ns: Option<&str>, obj: Value| {
        let rt = c.resolve(group, plural).unwrap();
        c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
            .unwrap();
    };
    create(
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
    create(
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"metadata": {"name": "shop", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"}},
        "spec": {"rules": [{"host": "shop.example.co.uk"}], "tls": [{"hosts": ["shop.example.co.uk"], "secretName": "shop-tls"}]}}),
    );
    app.eventually("the certificate is issued", || async {
        app.json_opt("/api/v1/certificates/zrh-prod/default/shop-tls")
            .await
            .is_some_and(|c| c["certificate"]["ready"]["status"] == "True")
    })
    .await;
    app.eventually("the certificate is budgeted", || async {
        let limits = app.json("/api/v1/rate-limits").await;
        limits["items"].as_array().is_some_and(|b| {
            b.iter().any(|x| {
                x["limit"] == "registered-domain" && x["key"] == "example.co.uk" && x["used"] == 1
            })
        })
    })
    .await;
    let limits = app.json("/api/v1/rate-limits").await;
    let set = limits["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["limit"] == "exact-set")
        .unwrap();
    assert_eq!(
        (
            set["key"].as_str(),
            set["used"].as_u64(),
            set["capacity"].as_u64()
        ),
        (Some("shop.example.co.uk"), Some(1), Some(5))
    );
    assert_eq!(set["latest"]["name"], "shop-tls");
    assert_eq!(set["clusters"], json!(["zrh-prod"]));
    assert_eq!(set["namespaces"], json!(["zrh-prod/default"]));
    // Which namespaces spend it: the filter keeps it for its namespace, not for another; a
    // cluster Lookout does not watch is not found.
    let here = app
        .json("/api/v1/rate-limits?cluster=zrh-prod&namespace=default")
        .await;
    assert!(!here["items"].as_array().unwrap().is_empty());
    let elsewhere = app
        .json("/api/v1/rate-limits?cluster=zrh-prod&namespace=elsewhere")
        .await;
    assert!(elsewhere["items"].as_array().unwrap().is_empty());
    let unknown = app.get("/api/v1/rate-limits?cluster=gva-prod").await;
    assert_eq!(unknown.status(), 404);
    let page = app.get("/rate-limits?cluster=zrh-prod").await;
    assert_eq!(page.status(), 200);
    assert!(page
        .text()
        .await
        .unwrap()
        .contains("/rate-limits?cluster=zrh-prod"));
    let page = app.get("/rate-limits").await.text().await.unwrap();
    assert!(
        page.contains("example.co.uk") && page.contains("1 / 50") && page.contains("<svg"),
        "budgets page with its bars"
    );
    let cert = app
        .json("/api/v1/certificates/zrh-prod/default/shop-tls")
        .await;
    // One attempt, issued, with its request, Order and Challenge changes.
    let attempt = &cert["timeline"][0];
    assert_eq!(attempt["number"], 1, "{cert:#}");
    assert_eq!(attempt["outcome"], "issued");
    let kinds: Vec<&str> = attempt["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"request") && kinds.contains(&"order") && kinds.contains(&"challenge"),
        "{kinds:?}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_authorizations_count_against_the_per_name_budget() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    let c = &app.fleet.clusters[0].cluster;
    let create = |group: &str, plural: &str, ns: Option<&str>, obj: Value| {
        let rt = c.resolve(group, plural).unwrap();
        c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
            .unwrap();
    };
    // The CA is asked at once and cannot resolve the name.
    create(
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "le"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com",
        "solvers": [{"http01": {"ingress": {}}, "waitInsteadOfSelfCheck": "0s"}]}}}),
    );
    create(
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"metadata": {"name": "lost", "annotations": {"cert-manager.io/cluster-issuer": "le"}},
        "spec": {"rules": [{"host": "lost.example.invalid"}], "tls": [{"hosts": ["lost.example.invalid"], "secretName": "lost-tls"}]}}),
    );
    app.eventually("the failed authorization is budgeted", || async {
        let limits = app.json("/api/v1/rate-limits").await;
        limits["items"].as_array().is_some_and(|b| {
            b.iter().any(|x| {
                x["limit"] == "failed-authorizations"
                    && x["key"] == "lost.example.invalid"
                    && x["used"] == 1
            })
        })
    })
    .await;
    let history = app
        .json("/api/v1/challenges?domain=lost.example.invalid")
        .await;
    assert_eq!(history["items"][0]["failure"]["class"], "dns");
    assert_eq!(history["items"][0]["failure"]["label"], "DNS lookup failed");
    assert_eq!(
        history["failures_by_reason"],
        json!([{"reason": "DNS", "count": 1}])
    );
    app.stop().await;
}

/// An issued request recorded without its ACME server — seen before its issuer, or stored
/// by an earlier version — as `name`, issued `hours` ago, for `host`, by `issuer`.
async fn request_without_server(
    app: &TestApp,
    (kind, issuer): (&str, &str),
    name: &str,
    host: &str,
    hours: i64,
) {
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        app.dir.path().join("lookout.db").display()
    ))
    .await
    .unwrap();
    let at = (chrono::Utc::now() - chrono::Duration::hours(hours))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    sqlx::query(
        "INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, outcome, created_at, finished_at, last_seen) \
         VALUES ('zrh-prod', 'shop', ?, ?, ?, 1, ?, ?, NULL, ?, 'issued', ?, ?, ?)",
    )
    .bind(name)
    .bind(format!("uid-{name}"))
    .bind(name.trim_end_matches("-1"))
    .bind(kind)
    .bind(issuer)
    .bind(json!([host]).to_string())
    .bind(&at)
    .bind(&at)
    .bind(&at)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

/// How many of the issuances under `shop.example` the Let's Encrypt budgets count: the
/// exact sets with one spent (the registered domain's bucket refills by the hour, as
/// Boulder's does, so its use is not a plain count).
async fn counted(app: &TestApp) -> usize {
    app.json("/api/v1/rate-limits").await["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| {
            b["limit"] == "exact-set"
                && b["key"].as_str().unwrap().ends_with(".shop.example")
                && b["used"] == 1
        })
        .count()
}

/// Every issuance counts, whatever order things were seen in: requests recorded before
/// their issuer was listed get its ACME server when it shows up (a ClusterIssuer, and an
/// Issuer in its namespace only), and rows stored earlier are filled in at the next start.
#[tokio::test(flavor = "multi_thread")]
async fn an_issuance_seen_before_its_issuer_counts_once_the_issuer_shows() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    request_without_server(
        &app,
        ("ClusterIssuer", "letsencrypt-prod"),
        "a-tls-1",
        "a.shop.example",
        2,
    )
    .await;
    request_without_server(&app, ("Issuer", "le"), "b-tls-1", "b.shop.example", 3).await;
    // Another namespace's Issuer of the same name is not this one.
    create(
        &app,
        0,
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": "elsewhere"}}),
    );
    create(
        &app,
        0,
        "cert-manager.io",
        "issuers",
        Some("elsewhere"),
        json!({"metadata": {"name": "le"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "privateKeySecretRef": {"name": "le"}, "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
    cluster_issuer(&app, "letsencrypt-prod");
    app.eventually("the ClusterIssuer's issuance is counted", || async {
        counted(&app).await == 1
    })
    .await;
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
        "issuers",
        Some("shop"),
        json!({"metadata": {"name": "le"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "privateKeySecretRef": {"name": "le"}, "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
    app.eventually("the Issuer's issuance is counted", || async {
        counted(&app).await == 2
    })
    .await;
    // A row stored by an earlier version, its issuer long listed: filled in at the next
    // start, when the issuers are listed again.
    request_without_server(
        &app,
        ("ClusterIssuer", "letsencrypt-prod"),
        "c-tls-1",
        "c.shop.example",
        4,
    )
    .await;
    let app = app.restart().await;
    app.wait_ready().await;
    app.eventually("the earlier row is counted after the restart", || async {
        counted(&app).await == 3
    })
    .await;
    app.stop().await;
}

/// The budgets' rows as a set, for comparing two Lookouts: limit, key, used and when one
/// frees up.
async fn budgets_of(json: Value) -> Vec<String> {
    let mut rows: Vec<String> = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            format!(
                "{} {} {} {}",
                b["limit"], b["key"], b["used"], b["frees_at"]
            )
        })
        .collect();
    rows.sort();
    rows
}

/// Two Lookouts over one cluster, each with its own database — one that saw the requests
/// before their issuer existed and restarted in the middle, one started after everything
/// was issued — count the same budgets, and count every certificate the cluster says it
/// issued.
#[tokio::test(flavor = "multi_thread")]
async fn two_lookouts_count_the_same_budgets_whatever_they_saw_first() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    let names = ["shop", "blog", "docs"];
    for name in names {
        create(
            &app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some("default"),
            json!({"metadata": {"name": name, "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"}},
            "spec": {"rules": [{"host": format!("{name}.example.co.uk")}], "tls": [{"hosts": [format!("{name}.example.co.uk")], "secretName": format!("{name}-tls")}]}}),
        );
    }
    // cert-manager asks before the issuer exists: the requests wait, and are recorded
    // without an ACME server.
    app.eventually("the requests are recorded before their issuer", || async {
        let mut all = true;
        for name in names {
            all &= app
                .json_opt(&format!("/api/v1/certificates/zrh-prod/default/{name}-tls"))
                .await
                .is_some_and(|c| c["requests"].as_array().is_some_and(|r| !r.is_empty()));
        }
        all
    })
    .await;
    let app = app.restart().await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
    app.eventually("all three are issued and counted", || async {
        app.json("/api/v1/certificates?status=ready").await["total"] == 3
            && counted_sets(&app.json("/api/v1/rate-limits").await) == 3
    })
    .await;
    // A Lookout started later, with a database of its own, counts the same.
    let other = app.another().await;
    // (A later Lookout syncs the cluster and reads its history first: more than the usual
    // ten seconds on a loaded machine.)
    within(30, "the later Lookout counts the same budgets", || async {
        let ours = budgets_of(app.json("/api/v1/rate-limits").await).await;
        let theirs = budgets_of(other.json("/api/v1/rate-limits").await).await;
        !ours.is_empty() && ours == theirs
    })
    .await;
    // And what the cluster says it issued is what both count: one issued request per
    // Certificate, one exact set each.
    let issued: usize = {
        let mut n = 0;
        for name in names {
            let c = app
                .json(&format!("/api/v1/certificates/zrh-prod/default/{name}-tls"))
                .await;
            n += c["requests"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["request"]["issued"].is_object())
                .count();
        }
        n
    };
    assert_eq!(issued, 3);
    assert_eq!(
        counted_sets(&other.json("/api/v1/rate-limits").await),
        issued
    );
    // And each budget is what the CA itself holds: kubesim's Let's Encrypt, replaying its
    // own issuances, has as many tokens used of each exact set and of the registered domain.
    use kubesim::sim::letsencrypt::{Kind as CaLimit, Server};
    let ca_used = |limit: CaLimit, key: &str| {
        let ca = app.fleet.world.letsencrypt.lock().unwrap();
        let (left, _) = ca.remaining(Server::Production, limit, key, "", chrono::Utc::now());
        let burst = if limit == CaLimit::ExactSet { 5 } else { 50 };
        burst - left
    };
    let ours = other.json("/api/v1/rate-limits").await;
    let used = |limit: &str, key: &str| {
        ours["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["limit"] == limit && b["key"] == key)
            .map_or(0, |b| b["used"].as_i64().unwrap())
    };
    for name in names {
        let key = format!("{name}.example.co.uk");
        assert_eq!(
            used("exact-set", &key),
            ca_used(CaLimit::ExactSet, &key),
            "{key}"
        );
    }
    assert_eq!(
        used("registered-domain", "example.co.uk"),
        ca_used(CaLimit::RegisteredDomain, "example.co.uk")
    );
    other.stop().await;
    app.stop().await;
}

/// How many exact sets have spends counted.
fn counted_sets(budgets: &Value) -> usize {
    budgets["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["limit"] == "exact-set" && b["used"].as_u64() > Some(0))
        .count()
}
