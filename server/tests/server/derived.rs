//! What a tenant learns about a neighbour through derived data: findings, budgets, previews,
//! audit rows, action records and live updates computed from both tenants' objects. The
//! neighbour (`globex-web`) shares a host and a certificate's names with the tenant
//! (`acme-shop`), has certificates issued from the same Let's Encrypt budgets, is acted on by
//! a support engineer; every one of its names carries the marker `globex`. The tenant's
//! operator then walks every route of the router with its *own* objects as parameters: no
//! response may carry the marker. Support sees the markers on the same routes, so their
//! absence means something.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::helpers::*;
use crate::tenancy::auth;

/// What must never reach the tenant: the neighbour's namespace, object names and hosts,
/// and the support engineer who acted there.
const MARKERS: &[&str] = &["globex", "zz-support-engineer"];
const TENANT: (&str, &str) = ("dave", "acme-ops");
const SUPPORT: (&str, &str) = ("zz-support-engineer", "support");

/// A production ClusterIssuer, and in each namespace an Ingress for `shop.acme.example`
/// (the neighbour's names the same host) whose certificate it asks for, solved in place
/// (Cilium's dedicated mode would give a separate solver its own address).
fn neighbours_sharing_a_host(app: &TestApp) {
    let c = &app.fleet.clusters[0].cluster;
    let create = |group: &str, plural: &str, ns: Option<&str>, obj: Value| {
        let rt = c.resolve(group, plural).unwrap();
        c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
            .unwrap();
    };
    create(
        "networking.k8s.io",
        "ingressclasses",
        None,
        json!({"metadata": {"name": "cilium"}, "spec": {"controller": "cilium.io/ingress-controller"}}),
    );
    // Cilium's load balancer: the Ingresses get addresses kubesim serves.
    create(
        "",
        "services",
        Some("kube-system"),
        json!({"metadata": {"name": "cilium-ingress"}, "spec": {"type": "LoadBalancer", "ipFamilies": ["IPv4", "IPv6"]}}),
    );
    create(
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}}),
    );
    for (ns, name, hosts) in [
        ("acme-shop", "shop", vec!["shop.acme.example"]),
        ("globex-web", "globex-twin", vec!["shop.acme.example"]),
        ("globex-web", "globex-only", vec!["api.acme.example"]),
    ] {
        if name != "globex-only" {
            create("", "namespaces", None, json!({"metadata": {"name": ns}}));
        }
        let annotations = json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"});
        create(
            "networking.k8s.io",
            "ingresses",
            Some(ns),
            json!({"metadata": {"name": name, "annotations": annotations},
                   "spec": {"ingressClassName": "cilium",
                            "rules": hosts.iter().map(|h| json!({"host": h})).collect::<Vec<_>>(),
                            "tls": [{"hosts": hosts, "secretName": format!("{name}-tls")}]}}),
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn derived_data_never_carries_a_neighbours_names() {
    // kubesim serves the hosts and the probe looks at them: what it saw is derived data too.
    let ports = crate::probing::free_ports();
    let app = app_with(&["zrh-prod"])
        .with_controllers()
        .edge(ports)
        .probe(crate::probing::settings(ports, &["127.0.0.0/8", "::1/128"]))
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    neighbours_sharing_a_host(&app);
    app.eventually("all three certificates are issued and counted", || async {
        let budgets = app
            .get_as("/api/v1/rate-limits", SUPPORT.0, SUPPORT.1)
            .await
            .json::<Value>()
            .await
            .unwrap();
        // Both issuances of the shared names counted (the budgets are recomputed on a timer,
        // after the certificates turn ready).
        budgets.to_string().contains("globex-twin")
            && budgets["items"].as_array().is_some_and(|b| {
                b.iter().any(|x| {
                    x["limit"] == "exact-set" && x["key"] == "shop.acme.example" && x["used"] == 2
                })
            })
            && app
                .get_as("/api/v1/certificates?status=ready", SUPPORT.0, SUPPORT.1)
                .await
                .json::<Value>()
                .await
                .unwrap()["total"]
                == 3
    })
    .await;
    app.eventually(
        "the probe has seen the shared host from both namespaces",
        || async {
            app.get_as(
                "/api/v1/probes?host=shop.acme.example",
                SUPPORT.0,
                SUPPORT.1,
            )
            .await
            .text()
            .await
            .unwrap()
            .contains("globex-twin")
        },
    )
    .await;
    let mine = app
        .get_as("/api/v1/probes", TENANT.0, TENANT.1)
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert!(
        mine["items"].as_array().is_some_and(|i| !i.is_empty()),
        "the tenant sees its own host probed: {mine:#}"
    );
    assert!(!mine.to_string().contains("globex"), "{mine:#}");
    assert!(
        mine["round"].is_null(),
        "fleet-wide counts are not the tenant's"
    );
    // Now Cilium enforces HTTPS: the shared host makes a finding on both sides.
    let c = &app.fleet.clusters[0].cluster;
    c.create(
        &c.resolve("", "configmaps").unwrap(),
        Some("kube-system"),
        json!({"metadata": {"name": "cilium-config"}, "data": {"enforce-ingress-https": "true"}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    // ... and the neighbour's twin loses edit-in-place (its next challenge would be
    // redirected): the shared host is a finding on both sides.
    c.merge_patch(
        &c.resolve("networking.k8s.io", "ingresses").unwrap(),
        Some("globex-web"),
        "globex-twin",
        &json!({"metadata": {"annotations": {"acme.cert-manager.io/http01-edit-in-place": null}}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    app.eventually("the shared host is a finding", || async {
        app.get_as("/api/v1/findings", TENANT.0, TENANT.1)
            .await
            .text()
            .await
            .unwrap()
            .contains("ingress.shared-host-https-redirect")
    })
    .await;
    // Support acts in the neighbour's namespace (a preview, an audit row).
    let support_preview: Value = app
        .post_as(
            "/api/v1/certificates/zrh-prod/globex-web/globex-twin-tls/renew",
            SUPPORT.0,
            SUPPORT.1,
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(support_preview["id"].is_string(), "{support_preview:#}");
    // The tenant's own preview: its budgets are shared with the neighbour's certificate.
    let own: Value = app
        .post_as(
            "/api/v1/certificates/zrh-prod/acme-shop/shop-tls/renew",
            TENANT.0,
            TENANT.1,
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    let own_id = own["id"]
        .as_str()
        .expect("the tenant's preview")
        .to_string();
    assert!(
        own["budget"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["limit"] == "exact-set" && b["used"] == 2 && b["elsewhere"] == 1),
        "the neighbour's issuance of the same names is counted, not named: {own:#}"
    );
    // The same routes show support the markers: the walk below is not vacuous.
    for path in [
        "/",
        "/certificates",
        "/audit",
        "/api/v1/findings",
        "/issuers/zrh-prod/_/letsencrypt-prod",
    ] {
        let body = app
            .get_as(path, SUPPORT.0, SUPPORT.1)
            .await
            .text()
            .await
            .unwrap();
        assert!(
            body.contains("globex"),
            "support sees the neighbour on {path}"
        );
    }

    // The tenant's operator through the trusted proxy, and a viewer token on the same
    // namespaces: the same walk, the same silence.
    for who in [Who::Proxy(TENANT.0, TENANT.1), Who::Token("s3cret-viewer")] {
        let (checked, answered) = walk(&app, &own_id, who).await;
        assert!(
            checked >= 40,
            "walked {checked} route × method pairs as {who:?}"
        );
        // Not a walk of refusals: most routes answer this identity.
        assert!(
            answered >= 25,
            "{answered} of {checked} answered {who:?} with 2xx"
        );
    }
    // The tenant's own findings are there, with the neighbour counted, not named.
    let findings = app
        .get_as("/api/v1/findings", TENANT.0, TENANT.1)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        findings.contains("1 Ingress in another namespace"),
        "{findings}"
    );
    // Support's preview of the same renew, read by the tenant, shows what the tenant's own
    // preview shows of the budgets (support's view knew when the neighbour spent it), and
    // none of support's words.
    let support_on_shop: Value = app
        .post_as(
            "/api/v1/certificates/zrh-prod/acme-shop/shop-tls/renew",
            SUPPORT.0,
            SUPPORT.1,
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    let theirs: Value = app
        .get_as(
            &format!(
                "/api/v1/actions/{}",
                support_on_shop["id"].as_str().expect("support may preview")
            ),
            TENANT.0,
            TENANT.1,
        )
        .await
        .json()
        .await
        .unwrap();
    let exact = |r: &Value| {
        r["budget"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["limit"] == "exact-set")
            .cloned()
            .unwrap()
    };
    let (mine, seen) = (exact(&own), exact(&theirs));
    assert_eq!(
        (&seen["elsewhere"], &seen["frees_at"], &seen["server"]),
        (&mine["elsewhere"], &mine["frees_at"], &mine["server"]),
        "support's record as the tenant reads it: {theirs:#}"
    );
    assert!(
        theirs["message"].as_str().unwrap().starts_with("renew by "),
        "{theirs:#}"
    );
    app.stop().await;
}

/// A tenant's bulk run moves the tenant's live revision (its page follows the progress);
/// the same run by someone else in the same namespace does not.
#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_own_bulk_run_moves_its_live_revision_and_no_one_elses() {
    let app = app_with(&["zrh-prod"])
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    crate::tenancy::two_tenants(&app);
    app.eventually("the tenant's Ingress is cached", || async {
        app.get_as("/api/v1/ingresses", TENANT.0, TENANT.1)
            .await
            .json::<Value>()
            .await
            .unwrap()["total"]
            == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let events = |who: (&'static str, &'static str)| {
        let app = &app;
        async move {
            let response = app.get_as("/api/v1/events", who.0, who.1).await;
            assert_eq!(response.status(), 200);
            crate::tenancy::Revisions::of(response)
        }
    };
    let mut tenant = events(TENANT).await;
    let mut colleague = events(("erin", "acme-ops")).await;
    let first = tenant.next(Duration::from_secs(3)).await.expect("first");
    colleague.next(Duration::from_secs(3)).await.expect("first");
    let bulk = |who: (&str, &str)| {
        app.http
            .post(format!("{}/api/v1/bulk/edit-in-place", app.base))
            .header("X-Forwarded-User", who.0)
            .header("X-Forwarded-Groups", who.1)
            .json(&json!({"dry_run": true, "namespace": "acme-shop"}))
            .send()
    };
    assert_eq!(bulk(TENANT).await.unwrap().status(), 200);
    let moved = tenant
        .next(Duration::from_secs(3))
        .await
        .expect("the tenant's own run is told");
    assert_ne!(moved, first);
    assert_eq!(
        colleague.next(Duration::from_millis(1500)).await,
        None,
        "another person's run is not told"
    );
    app.stop().await;
}

/// Who walks the routes: a user the trusted proxy names, or an API token.
#[derive(Debug, Clone, Copy)]
enum Who {
    Proxy(&'static str, &'static str),
    Token(&'static str),
}

/// Every route × method of the router with the tenant's own objects as parameters, as
/// `who`: no response carries a marker of the neighbour. Returns how many were walked, and
/// how many of them answered 2xx.
async fn walk(app: &TestApp, own_id: &str, who: Who) -> (usize, usize) {
    let (mut checked, mut answered) = (0, 0);
    for route in lookout_server::routes() {
        for method in route.methods {
            let name = if route.path.contains("certificates") {
                "shop-tls"
            } else {
                "shop"
            };
            let path = route
                .path
                .replace("{cluster}", "zrh-prod")
                .replace("{namespace}", "acme-shop")
                .replace("{name}", name)
                .replace("{id}", own_id)
                .replace("{*rest}", "acme-shop");
            let path = match path.as_str() {
                "/search" => "/search?q=shop.acme.example".to_string(),
                // The ClusterIssuer both tenants' Certificates use.
                p if p.contains("/issuers/") => p.replace("/acme-shop/shop", "/_/letsencrypt-prod"),
                _ => path,
            };
            let request = app
                .http
                .request(method.parse().unwrap(), format!("{}{path}", app.base));
            let mut request = match who {
                Who::Proxy(user, groups) => request
                    .header("X-Forwarded-User", user)
                    .header("X-Forwarded-Groups", groups),
                Who::Token(token) => request.bearer_auth(token),
            };
            if *method != "GET" {
                request = request.json(&if path.contains("/bulk/") {
                    json!({"dry_run": true, "namespace": "acme-shop"})
                } else {
                    json!({"dry_run": true})
                });
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body = if path == "/api/v1/events" {
                let mut stream = response.bytes_stream();
                let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
                    .await
                    .unwrap()
                    .unwrap()
                    .unwrap();
                String::from_utf8_lossy(&first).to_string()
            } else {
                response.text().await.unwrap()
            };
            assert!(status < 500, "{who:?} {method} {path}: {status}");
            if (200..300).contains(&status) {
                answered += 1;
            }
            for marker in MARKERS {
                assert!(
                    !body.contains(marker),
                    "{who:?} {method} {path} ({status}) shows {marker:?}: {body}"
                );
            }
            checked += 1;
        }
    }
    (checked, answered)
}
