//! What a tenant learns about a neighbour through derived data: findings, budgets, previews,
//! audit rows, action records and live updates computed from both tenants' objects. The
//! neighbour (`globex-web`) shares a host, the load balancer's address, a registered domain
//! and its Let's Encrypt budgets, a tailnet and a Certificate name (`shop-tls`) with the
//! tenant (`acme-shop`); a support engineer previews actions on both and runs bulk runs over
//! the cluster and in the neighbour's namespace; every one of the neighbour's names carries
//! the marker `globex`. The tenant then walks every route of the router with its *own*
//! objects as parameters — as a user the trusted proxy names, with an API token, and signed
//! in with OpenID Connect — and no response may carry a marker. Support sees the markers on
//! the same routes, so their absence means something.

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
    // A namespace made beforehand (for a RoleBinding in it) is no error.
    let create = |group: &str, plural: &str, ns: Option<&str>, obj: Value| {
        let rt = c.resolve(group, plural).unwrap();
        if let Err(e) = c.create(&rt, ns, obj, &kubesim::WriteOpts::system()) {
            assert!(plural == "namespaces" && e.code == 409, "{e:?}");
        }
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
    // A ClusterIssuer no Certificate of the tenant's uses (the neighbour's team's own).
    create(
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "globex-private"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}}),
    );
    // The neighbour: the same host, another host of the same registered domain (and so its
    // budgets), and a Certificate of the same name as the tenant's (`shop-tls`).
    for (ns, name, hosts, secret) in [
        ("acme-shop", "shop", vec!["shop.acme.example"], "shop-tls"),
        (
            "globex-web",
            "globex-twin",
            vec!["shop.acme.example"],
            "globex-twin-tls",
        ),
        (
            "globex-web",
            "globex-only",
            vec!["api.acme.example"],
            "globex-only-tls",
        ),
        (
            "globex-web",
            "globex-namesake",
            vec!["globex-namesake.acme.example"],
            "shop-tls",
        ),
    ] {
        if name == "shop" || name == "globex-twin" {
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
                            "tls": [{"hosts": hosts, "secretName": secret}]}}),
        );
    }
}

/// One tailnet, two tenants: 20 Tailscale Ingresses of the neighbour's, then 21 of the
/// tenant's (newer), each with its published hostname — 41 of Let's Encrypt's 50 a week, so
/// `tailscale.cert-budget` is about the tenant's newest and counts the neighbour's.
async fn neighbours_sharing_a_tailnet(app: &TestApp) {
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("networking.k8s.io", "ingresses").unwrap();
    let status = kubesim::WriteOpts {
        status: true,
        ..kubesim::WriteOpts::system()
    };
    for (ns, prefix, count) in [("globex-web", "globex-ts", 20), ("acme-shop", "ts", 21)] {
        for i in 0..count {
            let name = format!("{prefix}-{i}");
            c.create(
                &rt,
                Some(ns),
                json!({"metadata": {"name": name}, "spec": {"ingressClassName": "tailscale"}}),
                &kubesim::WriteOpts::system(),
            )
            .unwrap();
            let hostname = format!("{name}.tail0042.ts.net");
            c.merge_patch(
                &rt,
                Some(ns),
                &name,
                &json!({"status": {"loadBalancer": {"ingress": [{"hostname": hostname}]}}}),
                &status,
            )
            .unwrap();
        }
        // Creation times are in seconds: the tenant's come a second later.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn derived_data_never_carries_a_neighbours_names() {
    let ports = crate::probing::free_ports();
    let app = neighbours_app(ports).auth(auth("127.0.0.1/32").await).await;
    let (support, tenant) = (
        Who::Proxy(SUPPORT.0, SUPPORT.1),
        Who::Proxy(TENANT.0, TENANT.1),
    );
    // The tenant's operator through the trusted proxy, and a viewer token on the same
    // namespaces.
    let walkers = [tenant, Who::Token("s3cret-viewer")];
    neighbours_walked(&app, support, tenant, &walkers).await;
    app.stop().await;
}

/// The same walk for people signed in with OpenID Connect (a real provider): sessions
/// decide the view as proxies and tokens do.
#[tokio::test(flavor = "multi_thread")]
async fn derived_data_never_carries_a_neighbours_names_to_a_signed_in_tenant() {
    if !crate::oidc::provider_available() {
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups.json");
    std::fs::write(
        &groups,
        json!({SUPPORT.0: [SUPPORT.1], TENANT.0: [TENANT.1]}).to_string(),
    )
    .unwrap();
    let provider =
        crate::oidc::start_provider_with(&format!("{base}/auth/callback"), Some(&groups)).await;
    let ports = crate::probing::free_ports();
    let app = neighbours_app(ports)
        .auth(crate::tenancy::oidc_auth(&base, &provider.issuer).await)
        .listener(listener)
        .await;
    let browsers = [crate::oidc::browser(), crate::oidc::browser()];
    for (browser, login) in browsers.iter().zip([SUPPORT.0, TENANT.0]) {
        let (page, _) = crate::oidc::sign_in(browser, &base, "/", login).await;
        assert!(page.contains(login), "signed in as {login}");
    }
    let support = Who::Session(SUPPORT.0, &browsers[0]);
    let tenant = Who::Session(TENANT.0, &browsers[1]);
    neighbours_walked(&app, support, tenant, &[tenant]).await;
    app.stop().await;
}

/// The same walk where the cluster's RBAC decides (`auth.access_source = "kubernetes"`):
/// support bound cluster-wide, the tenant's group in its namespace, written with kubectl;
/// the token keeps its static scope.
#[tokio::test(flavor = "multi_thread")]
async fn derived_data_never_carries_a_neighbours_names_when_the_cluster_decides() {
    if !kubectl_available() {
        return;
    }
    let ports = crate::probing::free_ports();
    let app = neighbours_app(ports)
        .with_service_account_of(crate::rbac::render("overlays/cluster-access"))
        .auth(crate::tenancy::kubernetes_auth("127.0.0.1/32").await)
        .await;
    let admin = app.dir.path().join("kubeconfig");
    let bindings = format!(
        r#"
apiVersion: v1
kind: Namespace
metadata: {{name: acme-shop}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: tls-operator}}
rules:
  - apiGroups: ["networking.k8s.io"]
    resources: ["ingresses"]
    verbs: ["list", "patch"]
  - apiGroups: ["cert-manager.io"]
    resources: ["certificates"]
    verbs: ["list", "patch"]
  - apiGroups: ["cert-manager.io"]
    resources: ["certificates/status"]
    verbs: ["update"]
  - apiGroups: ["cert-manager.io"]
    resources: ["certificaterequests"]
    verbs: ["delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: support-tls}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tls-operator}}
subjects: [{{kind: Group, name: {support}, apiGroup: rbac.authorization.k8s.io}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: tenant-tls, namespace: acme-shop}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tls-operator}}
subjects: [{{kind: Group, name: {tenant}, apiGroup: rbac.authorization.k8s.io}}]
"#,
        support = SUPPORT.1,
        tenant = TENANT.1
    );
    kubectl(
        &admin,
        "zrh-prod",
        &["apply", "--server-side", "-f", "-"],
        Some(&bindings),
    );
    let (support, tenant) = (
        Who::Proxy(SUPPORT.0, SUPPORT.1),
        Who::Proxy(TENANT.0, TENANT.1),
    );
    neighbours_walked(
        &app,
        support,
        tenant,
        &[tenant, Who::Token("s3cret-viewer")],
    )
    .await;
    app.stop().await;
}

/// kubesim with its controllers, serving the hosts on `ports`, and the probe looking at
/// them: what it saw is derived data too.
fn neighbours_app(ports: kubesim::sim::edge::EdgePorts) -> AppOptions {
    app_with(&["zrh-prod"])
        .with_controllers()
        .edge(ports)
        .probe(crate::probing::settings(ports, &["127.0.0.0/8", "::1/128"]))
}

/// Neighbours sharing a host, a load-balancer address, a registered domain and its budgets,
/// a tailnet and a Certificate name; support acting on both and running bulk runs over the
/// cluster: `walkers` walk every route as the tenant and find no marker of the neighbour.
async fn neighbours_walked(app: &TestApp, support: Who<'_>, tenant: Who<'_>, walkers: &[Who<'_>]) {
    app.wait_ready().await;
    neighbours_sharing_a_host(app);
    neighbours_sharing_a_tailnet(app).await;
    app.eventually("all four certificates are issued and counted", || async {
        let budgets = support
            .get(app, "/api/v1/rate-limits")
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
            && support
                .get(app, "/api/v1/certificates?status=ready")
                .await
                .json::<Value>()
                .await
                .unwrap()["total"]
                == 4
    })
    .await;
    app.eventually(
        "the probe has seen the shared host from both namespaces",
        || async {
            support
                .get(app, "/api/v1/probes?host=shop.acme.example")
                .await
                .text()
                .await
                .unwrap()
                .contains("globex-twin")
        },
    )
    .await;
    let mine = tenant
        .get(app, "/api/v1/probes")
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
        tenant
            .get(app, "/api/v1/findings")
            .await
            .text()
            .await
            .unwrap()
            .contains("ingress.shared-host-https-redirect")
    })
    .await;
    // Support acts in the neighbour's namespace (a preview, an audit row).
    let support_preview: Value = support
        .post(
            app,
            "/api/v1/certificates/zrh-prod/globex-web/globex-twin-tls/renew",
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(support_preview["id"].is_string(), "{support_preview:#}");
    // The tenant's own preview: its budgets are shared with the neighbour's certificate.
    let own: Value = tenant
        .post(
            app,
            "/api/v1/certificates/zrh-prod/acme-shop/shop-tls/renew",
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
        let body = support.get(app, path).await.text().await.unwrap();
        assert!(
            body.contains("globex"),
            "support sees the neighbour on {path}"
        );
    }

    // A ClusterIssuer only someone else may read answers as one that does not exist: its
    // name cannot be probed, nor its readiness read.
    for path in [
        "/issuers/zrh-prod/_/globex-private",
        "/api/v1/issuers/zrh-prod/_/globex-private",
    ] {
        assert_eq!(
            support.get(app, path).await.status(),
            200,
            "support: {path}"
        );
        let theirs = tenant.get(app, path).await;
        assert_eq!(theirs.status(), 404, "the tenant: {path}");
        let missing = tenant
            .get(app, &path.replace("globex-private", "nobody-made-this"))
            .await;
        assert_eq!(missing.status(), 404);
        assert_eq!(
            theirs.text().await.unwrap().replace("globex-private", "X"),
            missing
                .text()
                .await
                .unwrap()
                .replace("nobody-made-this", "X"),
            "the same answer as for a name that does not exist"
        );
    }

    // Support's bulk runs: over the whole cluster, in the neighbour's namespace and in the
    // tenant's.
    for (path, body) in [
        (
            "/api/v1/bulk/renew",
            json!({"cluster": "zrh-prod", "dry_run": true}),
        ),
        (
            "/api/v1/bulk/edit-in-place",
            json!({"namespace": "globex-web", "dry_run": true}),
        ),
        (
            "/api/v1/bulk/renew",
            json!({"namespace": "acme-shop", "dry_run": true}),
        ),
    ] {
        let run = support.post(app, path, body).await;
        assert_eq!(run.status(), 200, "support's bulk run {path}");
    }
    let audit = support
        .get(app, "/api/v1/audit")
        .await
        .text()
        .await
        .unwrap();
    assert!(audit.contains("bulk-renew"), "{audit}");
    // The walk: the same routes, the same silence.
    for &who in walkers {
        let (checked, answered) = walk(app, &own_id, who).await;
        assert!(
            checked >= 40,
            "walked {checked} route × method pairs as {who:?}"
        );
        // Not a walk of refusals: most routes answer this identity.
        assert!(
            answered >= 25,
            "{answered} of {checked} answered {who:?} with 2xx"
        );
        // The neighbour's names answer as names nobody made.
        let their_id = support_preview["id"].as_str().unwrap();
        let compared = crate::existence::theirs_answer_as_missing(app, who, their_id).await;
        assert!(compared >= 30, "compared {compared} routes as {who:?}");
    }
    // The tenant's own findings are there, with the neighbour counted, not named.
    let findings = tenant
        .get(app, "/api/v1/findings")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        findings.contains("1 Ingress in another namespace"),
        "{findings}"
    );
    // The tailnet's budget: the tenant's newest Ingress, the neighbour's hostnames counted.
    assert!(
        findings.contains("41 new Tailscale hostnames in tail0042.ts.net"),
        "{findings}"
    );
    // Support's preview of the same renew, read by the tenant, shows what the tenant's own
    // preview shows of the budgets (support's view knew when the neighbour spent it), and
    // none of support's words.
    let support_on_shop: Value = support
        .post(
            app,
            "/api/v1/certificates/zrh-prod/acme-shop/shop-tls/renew",
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    let theirs: Value = tenant
        .get(
            app,
            &format!(
                "/api/v1/actions/{}",
                support_on_shop["id"].as_str().expect("support may preview")
            ),
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
    crate::existence::revisions_stay_while_the_neighbour_changes(app, support, walkers).await;
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

/// Who acts or walks the routes: a user the trusted proxy names, an API token, or a browser
/// holding an OpenID Connect session (with the person's name).
#[derive(Clone, Copy)]
pub(crate) enum Who<'a> {
    Proxy(&'static str, &'static str),
    Token(&'static str),
    Session(&'static str, &'a reqwest::Client),
}

impl std::fmt::Debug for Who<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Proxy(user, groups) => write!(f, "proxy user {user} ({groups})"),
            Who::Token(_) => write!(f, "a viewer token"),
            Who::Session(name, _) => write!(f, "{name}'s session"),
        }
    }
}

impl Who<'_> {
    pub(crate) fn request(
        &self,
        app: &TestApp,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        let url = format!("{}{path}", app.base);
        match *self {
            Who::Proxy(user, groups) => app
                .http
                .request(method, url)
                .header("X-Forwarded-User", user)
                .header("X-Forwarded-Groups", groups),
            Who::Token(token) => app.http.request(method, url).bearer_auth(token),
            Who::Session(_, browser) => browser.request(method, url),
        }
    }

    pub(crate) async fn get(&self, app: &TestApp, path: &str) -> reqwest::Response {
        self.request(app, reqwest::Method::GET, path)
            .send()
            .await
            .unwrap()
    }

    async fn post(&self, app: &TestApp, path: &str, body: Value) -> reqwest::Response {
        self.request(app, reqwest::Method::POST, path)
            .json(&body)
            .send()
            .await
            .unwrap()
    }
}

/// Every route × method of the router with the tenant's own objects as parameters, as
/// `who`: no response carries a marker of the neighbour. Returns how many were walked, and
/// how many of them answered 2xx.
async fn walk(app: &TestApp, own_id: &str, who: Who<'_>) -> (usize, usize) {
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
            // A session walks the data, not its own sign-in and sign-out.
            if matches!(who, Who::Session(..)) && path.starts_with("/auth/") {
                continue;
            }
            let mut request = who.request(app, method.parse().unwrap(), &path);
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
