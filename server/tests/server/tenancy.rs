//! Sign-in, roles and scopes on every surface: proxy identities believed only from trusted
//! addresses, API tokens, a customer who sees nothing of another tenant on any route of the
//! router table, viewers refused actions, security headers.

use std::time::Duration;

use futures::StreamExt;
use lookout_server::auth::Auth;
use lookout_server::config::Config;
use lookout_server::store;
use serde_json::{json, Value};

use crate::helpers::*;

/// The hex SHA-256 of `s3cret-viewer` and `s3cret-admin`.
fn sha256(s: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) async fn auth(trusted: &str) -> Auth {
    with_rules(&format!(
        "[auth]\nmode = \"proxy\"\ntrusted_proxies = [\"{trusted}\"]\n"
    ))
    .await
}

/// Proxy sign-in where each cluster's RBAC decides for people (`access_source =
/// "kubernetes"`); the tokens of [`rules`] keep their static scopes.
pub(crate) async fn kubernetes_auth(trusted: &str) -> Auth {
    with_rules(&format!(
        "[auth]\nmode = \"proxy\"\ntrusted_proxies = [\"{trusted}\"]\naccess_source = \"kubernetes\"\n"
    ))
    .await
}

/// The same rules for people signed in at the OpenID Connect provider `issuer`, Lookout
/// being at `base`.
pub(crate) async fn oidc_auth(base: &str, issuer: &str) -> Auth {
    with_rules(&format!(
        r#"
[auth]
mode = "oidc"
public_url = "{base}"

[auth.oidc]
issuer_url = "{issuer}"
client_id = "lookout"
client_secret = "lookout-test-secret"
"#
    ))
    .await
}

/// `auth_section` with [`rules`], for one cluster `zrh-prod`.
async fn with_rules(auth_section: &str) -> Auth {
    let text = format!(
        "[[clusters]]\nname = \"zrh-prod\"\nin_cluster = true\n{auth_section}\n{}",
        rules()
    );
    let config = Config::parse(&text, &[]).unwrap();
    Auth::from_config(&config).await.unwrap()
}

/// Support (operator), on-call (admin), a customer's viewers and operators, a viewer token
/// on the customer's namespaces and an admin token.
fn rules() -> String {
    format!(
        r#"
[[access]]
groups = ["support"]
role = "operator"

[[access]]
groups = ["oncall"]
role = "admin"

[[access]]
groups = ["customer-acme"]
role = "viewer"
clusters = ["zrh-prod"]
namespaces = ["acme-*"]

[[access]]
groups = ["acme-ops"]
role = "operator"
clusters = ["zrh-prod"]
namespaces = ["acme-*"]

[[tokens]]
name = "ci"
sha256 = "{viewer}"
role = "viewer"
namespaces = ["acme-*"]

[[tokens]]
name = "prometheus"
sha256 = "{admin}"
role = "admin"
"#,
        viewer = sha256("s3cret-viewer"),
        admin = sha256("s3cret-admin"),
    )
}

/// Two tenants in one cluster: ACME (the customer) and Globex (another customer).
pub(crate) fn two_tenants(app: &TestApp) {
    for (ns, name, host) in [
        ("acme-shop", "shop", "shop.acme.example"),
        ("globex-web", "site", "www.globex.example"),
    ] {
        create(
            app,
            0,
            "",
            "namespaces",
            None,
            json!({"metadata": {"name": ns}}),
        );
        create(
            app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some(ns),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": name, "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
                   "spec": {"ingressClassName": "cilium", "rules": [{"host": host}],
                            "tls": [{"hosts": [host], "secretName": format!("{name}-tls")}]}}),
        );
        create(
            app,
            0,
            "cert-manager.io",
            "certificates",
            Some(ns),
            json!({"metadata": {"name": format!("{name}-tls")},
                   "spec": {"secretName": format!("{name}-tls"), "dnsNames": [host], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}}),
        );
        create(
            app,
            0,
            "acme.cert-manager.io",
            "challenges",
            Some(ns),
            json!({"metadata": {"name": format!("{name}-tls-1-1-1")},
                   "spec": {"dnsName": host, "type": "HTTP-01"}}),
        );
        // A Gateway of the same name serving the host, for the Gateway pages.
        create(
            app,
            0,
            "gateway.networking.k8s.io",
            "gateways",
            Some(ns),
            json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                   "metadata": {"name": name},
                   "spec": {"gatewayClassName": "cilium", "listeners": [
                       {"name": "https", "hostname": host, "port": 443, "protocol": "HTTPS",
                        "tls": {"certificateRefs": [{"name": format!("{name}-tls")}]}}]}}),
        );
    }
}

impl TestApp {
    /// A POST of `body` as JSON, as a user the trusted proxy identified.
    pub(crate) async fn post_as(
        &self,
        path: &str,
        user: &str,
        groups: &str,
        body: Value,
    ) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .header("X-Forwarded-User", user)
            .header("X-Forwarded-Groups", groups)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// A GET as a user the trusted proxy identified.
    pub(crate) async fn get_as(&self, path: &str, user: &str, groups: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .header("X-Forwarded-User", user)
            .header("X-Forwarded-Groups", groups)
            .send()
            .await
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn proxy_headers_are_believed_only_from_trusted_addresses() {
    let app = app_with(&["zrh-prod"])
        .auth(auth("10.9.9.9/32").await)
        .await;
    app.wait_ready().await;
    let r = app.get_as("/api/v1/ingresses", "mallory", "oncall").await;
    assert_eq!(
        r.status(),
        401,
        "headers from an untrusted address are ignored"
    );
    assert_eq!(r.headers()["www-authenticate"], "Bearer realm=\"lookout\"");
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "unauthorized"
    );
    let page = app.get_as("/", "mallory", "oncall").await;
    assert_eq!(page.status(), 401);
    assert!(page.text().await.unwrap().contains("Sign-in required"));
    assert_eq!(app.get("/healthz").await.status(), 200, "health stays open");
    app.stop().await;

    let app = app_with(&["zrh-prod"])
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    let r = app.get_as("/api/v1/ingresses", "sue", "support").await;
    assert_eq!(r.status(), 200);
    // Per-user answers are for that user only: never kept by a shared cache.
    assert_eq!(r.headers()["cache-control"], "private, no-store");
    let vary: Vec<&str> = r
        .headers()
        .get_all("vary")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert!(
        vary.iter()
            .any(|v| v.contains("Cookie") && v.to_ascii_lowercase().contains("x-forwarded-user")),
        "{vary:?}"
    );
    let page = app.get_as("/", "sue", "support").await;
    assert_eq!(page.headers()["cache-control"], "private, no-store");
    // A person cannot pass for an API token (tokens act as "token:<name>"), in any case.
    for name in ["token:admin", "TOKEN:prometheus", "Token:x"] {
        let forged = app.get_as("/api/v1/ingresses", name, "support").await;
        assert_eq!(forged.status(), 401, "{name}");
        let body: Value = forged.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("reserved"),
            "{body}"
        );
    }
    // An identity header twice is refused, not resolved first-wins.
    for (user, groups) in [
        (vec!["sue", "mallory"], vec!["support"]),
        (vec!["sue"], vec!["viewers", "support"]),
    ] {
        let mut request = app.http.get(format!("{}/api/v1/ingresses", app.base));
        for u in &user {
            request = request.header("X-Forwarded-User", *u);
        }
        for g in &groups {
            request = request.header("X-Forwarded-Groups", *g);
        }
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), 400, "{user:?} {groups:?}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("sent more than once"),
            "{body}"
        );
    }
    let html = app
        .get_as("/", "sue", "support")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("sue (operator)"),
        "the header says who is signed in"
    );
    assert_eq!(
        app.get("/api/v1/ingresses").await.status(),
        401,
        "no identity"
    );
    assert_eq!(
        app.get_as("/api/v1/ingresses", "nobody", "strangers")
            .await
            .json::<Value>()
            .await
            .unwrap()["total"],
        0,
        "no rule names the group: nothing visible"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bearer_tokens_carry_their_own_role_and_scope() {
    let app = app_with(&["zrh-prod"])
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    two_tenants(&app);
    app.eventually("both Ingresses", || async {
        app.http
            .get(format!("{}/api/v1/ingresses", app.base))
            .bearer_auth("s3cret-admin")
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()["total"]
            == 2
    })
    .await;
    let as_token = |token: &'static str, path: &'static str| {
        app.http
            .get(format!("{}{path}", app.base))
            .bearer_auth(token)
            .send()
    };
    let viewer: Value = as_token("s3cret-viewer", "/api/v1/ingresses")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(viewer["total"], 1);
    assert_eq!(viewer["items"][0]["namespace"], "acme-shop");
    let wrong = as_token("guess", "/api/v1/ingresses").await.unwrap();
    assert_eq!(wrong.status(), 401);
    assert_eq!(
        as_token("s3cret-viewer", "/metrics")
            .await
            .unwrap()
            .status(),
        403
    );
    let metrics = as_token("s3cret-admin", "/metrics").await.unwrap();
    assert_eq!(
        metrics.status(),
        200,
        "Prometheus scrapes with an admin token"
    );
    let fix = app
        .http
        .post(format!(
            "{}/api/v1/ingresses/zrh-prod/acme-shop/shop/edit-in-place",
            app.base
        ))
        .bearer_auth("s3cret-viewer")
        .json(&json!({"dry_run": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(fix.status(), 403, "a viewer may not act");
    app.stop().await;
}

/// Strings only the other tenant's data contains (the requests name its namespace and
/// objects, and a 404 may repeat what was asked; these it may not show).
const GLOBEX: &[&str] = &["www.globex.example", "globex diff"];

#[tokio::test(flavor = "multi_thread")]
async fn a_customer_sees_nothing_of_another_tenant_on_any_route() {
    let app = app_with(&["zrh-prod"])
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    two_tenants(&app);
    app.eventually("both tenants are cached and in the history", || async {
        let i = app
            .get_as("/api/v1/ingresses", "sue", "support")
            .await
            .json::<Value>()
            .await
            .unwrap();
        let c = app
            .get_as("/api/v1/challenges", "sue", "support")
            .await
            .json::<Value>()
            .await
            .unwrap();
        i["total"] == 2 && c["total"] == 2
    })
    .await;
    // Another tenant's action and audit row, made by support.
    let globex_action: Value = app
        .http
        .post(format!(
            "{}/api/v1/ingresses/zrh-prod/globex-web/site/edit-in-place",
            app.base
        ))
        .header("X-Forwarded-User", "sue")
        .header("X-Forwarded-Groups", "support")
        .json(&json!({"dry_run": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let globex_id = globex_action["id"]
        .as_str()
        .expect("support may preview")
        .to_string();
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
            actor: "sue".into(),
            action: "renew".into(),
            cluster: "zrh-prod".into(),
            namespace: "globex-web".into(),
            kind: "Certificate".into(),
            name: "site-tls".into(),
            dry_run: false,
            diff: Some("globex diff".into()),
            outcome: "ok".into(),
            error: None,
        },
    )
    .await
    .unwrap();
    pool.close().await;

    // Support sees both markers, so their absence below means something.
    let wide = app
        .get_as("/ingresses", "sue", "support")
        .await
        .text()
        .await
        .unwrap();
    assert!(wide.contains(GLOBEX[0]));
    app.eventually("support sees the other tenant's Gateway page", || async {
        app.get_as("/gateways/zrh-prod/globex-web/site", "sue", "support")
            .await
            .text()
            .await
            .unwrap()
            .contains(GLOBEX[0])
    })
    .await;
    let wide = app
        .get_as("/audit", "sue", "support")
        .await
        .text()
        .await
        .unwrap();
    assert!(wide.contains(GLOBEX[1]));
    let customer = ("carol", "customer-acme");
    let mut checked = 0;
    for route in lookout_server::routes() {
        for method in route.methods {
            // Every parameter points at the other tenant's objects.
            let name = if route.path.contains("certificates") {
                "site-tls"
            } else {
                "site"
            };
            let path = route
                .path
                .replace("{cluster}", "zrh-prod")
                .replace("{namespace}", "globex-web")
                .replace("{name}", name)
                .replace("{id}", &globex_id)
                .replace("{*rest}", "globex-web");
            let path = match path.as_str() {
                "/search" => "/search?q=globex".to_string(),
                "/api/v1/challenges" => "/api/v1/challenges?namespace=globex-web".to_string(),
                _ => path,
            };
            let mut request = app
                .http
                .request(method.parse().unwrap(), format!("{}{path}", app.base))
                .header("X-Forwarded-User", customer.0)
                .header("X-Forwarded-Groups", customer.1);
            if *method != "GET" {
                request = if path.starts_with("/api/") {
                    request.json(&if path.contains("/bulk/") {
                        json!({"dry_run": true, "namespace": "globex-web"})
                    } else {
                        json!({"dry_run": true})
                    })
                } else {
                    request
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body("action=bulk-edit-in-place&cluster=zrh-prod&namespace=globex-web&name=&mode=preview")
                };
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body = if path == "/api/v1/events" {
                // The stream never ends: its first message is what it tells.
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
            assert!(status < 500, "{method} {path}: {status}");
            for marker in GLOBEX {
                assert!(
                    !body.contains(marker),
                    "{method} {path} ({status}) shows {marker:?}: {body}"
                );
            }
            if route.path.contains("{name}") || route.path.contains("{id}") {
                assert_eq!(
                    status, 404,
                    "{method} {path}: another tenant's object is answered like a missing one"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "walked {checked} route × method pairs");
    // A bulk run aimed at the other tenant's namespace wrote nothing into its audit log.
    let audit: Value = app
        .get_as("/api/v1/audit?per_page=1000", "sue", "support")
        .await
        .json()
        .await
        .unwrap();
    let carols: Vec<&Value> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["actor"] == customer.0 && r["namespace"] == "globex-web")
        .collect();
    assert!(carols.is_empty(), "{carols:#?}");

    // The customer does see their own tenant (the test is not passing vacuously).
    for path in [
        "/ingresses",
        "/certificates",
        "/challenges",
        "/api/v1/ingresses",
        "/search?q=acme",
    ] {
        let body = app
            .get_as(path, customer.0, customer.1)
            .await
            .text()
            .await
            .unwrap();
        assert!(
            body.contains("acme-shop") || body.contains("shop.acme.example"),
            "{path} shows the customer's own objects"
        );
    }
    let own = app
        .http
        .post(format!(
            "{}/api/v1/ingresses/zrh-prod/acme-shop/shop/edit-in-place",
            app.base
        ))
        .header("X-Forwarded-User", customer.0)
        .header("X-Forwarded-Groups", customer.1)
        .json(&json!({"dry_run": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        own.status(),
        403,
        "a viewer's action on their own Ingress is refused"
    );

    // A run aimed at the whole cluster is for whole-cluster viewers: on support's board and
    // in their audit, on neither for the tenant (whose audit never showed it either). A run,
    // not a preview: the board's recent changes leave previews out.
    let bulk = app
        .post_as(
            "/api/v1/bulk/renew",
            "sue",
            "support",
            json!({"cluster": "zrh-prod", "dry_run": false}),
        )
        .await;
    assert_eq!(bulk.status(), 200);
    let support_board = app
        .get_as("/", "sue", "support")
        .await
        .text()
        .await
        .unwrap();
    assert!(support_board.contains("bulk-renew"), "support sees its run");
    let board = app
        .get_as("/", customer.0, customer.1)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !board.contains("bulk-renew"),
        "a whole-cluster run on a tenant's board"
    );
    let audit = app
        .get_as("/api/v1/audit", customer.0, customer.1)
        .await
        .text()
        .await
        .unwrap();
    assert!(!audit.contains("bulk-renew"), "{audit}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_response_carries_the_security_headers_and_pages_have_no_inline_script() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    for path in [
        "/",
        "/ingresses",
        "/no-such-page",
        "/api/v1/clusters",
        "/healthz",
    ] {
        let r = app.get(path).await;
        let h = r.headers();
        assert!(
            h["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("script-src 'self'"),
            "{path}"
        );
        assert!(h["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'"));
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h["referrer-policy"], "same-origin");
        let body = r.text().await.unwrap();
        assert!(
            !body.contains("<script>"),
            "{path} has an inline script the policy would block"
        );
        assert!(
            !body.contains(" style=\""),
            "{path} has an inline style the policy would block"
        );
    }
    // The CSRF cookie comes with pages only: a static file a shared cache may keep (one
    // cookie handed to many browsers), a health answer or the API never sets one.
    for path in [
        "/style/lookout.css",
        "/assets/live.js",
        "/favicon.svg",
        "/healthz",
        "/readyz",
        "/api/v1/clusters",
    ] {
        let r = app.get(path).await;
        assert!(r.status().is_success(), "{path}: {}", r.status());
        assert!(
            r.headers().get("set-cookie").is_none(),
            "{path} sets a cookie: {:?}",
            r.headers().get("set-cookie")
        );
    }
    let html = app.get("/").await;
    let cookie = html.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.starts_with("lookout_csrf="));
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    app.stop().await;
}

/// The live-update stream tells a tenant about its own namespaces only: another tenant's
/// change sends nothing (neither a message nor a new revision); its own change does.
#[tokio::test(flavor = "multi_thread")]
async fn live_updates_move_only_with_what_the_caller_sees() {
    let app = app_with(&["zrh-prod"])
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    two_tenants(&app);
    app.eventually("both tenants' Ingresses are cached", || async {
        app.get_as("/api/v1/ingresses", "sue", "support")
            .await
            .json::<Value>()
            .await
            .unwrap()["total"]
            == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let response = app.get_as("/api/v1/events", "carol", "customer-acme").await;
    assert_eq!(response.status(), 200);
    let mut stream = Revisions {
        body: response
            .bytes_stream()
            .map(|r| r.map(|b| b.to_vec()))
            .boxed(),
        buffer: String::new(),
    };
    let first = stream
        .next(Duration::from_secs(3))
        .await
        .expect("the first message");
    let page = app
        .get_as("/ingresses", "carol", "customer-acme")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(&format!("data-rev=\"{first}\"")),
        "pages carry the same revision"
    );
    // The other tenant changes, and cluster-scoped objects none of carol's name (a
    // ClusterIssuer, an IngressClass): nothing for carol.
    add_ingress_in(&app, "globex-web", "another");
    create(
        &app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "globex-only"},
               "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "privateKeySecretRef": {"name": "globex-only"}, "solvers": []}}}),
    );
    create(
        &app,
        0,
        "networking.k8s.io",
        "ingressclasses",
        None,
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "globex-class"},
               "spec": {"controller": "example.com/other"}}),
    );
    assert_eq!(
        stream.next(Duration::from_millis(1500)).await,
        None,
        "another tenant's change is not told"
    );
    // Her own namespace changes: a message with a new revision.
    add_ingress_in(&app, "acme-shop", "mine");
    let moved = stream
        .next(Duration::from_secs(3))
        .await
        .expect("her own change is told");
    assert_ne!(moved, first);
    app.stop().await;
}

fn add_ingress_in(app: &TestApp, ns: &str, name: &str) {
    create(
        app,
        0,
        "networking.k8s.io",
        "ingresses",
        Some(ns),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
               "spec": {"rules": [{"host": format!("{name}.example")}]}}),
    );
}

/// The revisions an SSE stream announces.
pub(crate) struct Revisions {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Revisions {
    pub(crate) fn of(response: reqwest::Response) -> Revisions {
        Revisions {
            body: response
                .bytes_stream()
                .map(|r| r.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next message's revision, or None when none came within `within`.
    pub(crate) async fn next(&mut self, within: Duration) -> Option<u64> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                    let v: Value = serde_json::from_str(data).unwrap();
                    return Some(v["rev"].as_u64().unwrap());
                }
                continue;
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }
}

/// A filter naming a cluster or namespace outside the caller's view is a 404 like a missing
/// object — whether it does not exist or is someone else's — on pages, the API and exports.
#[tokio::test(flavor = "multi_thread")]
async fn filters_outside_the_callers_view_are_not_found() {
    let app = app_with(&["zrh-prod"])
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    two_tenants(&app);
    let customer = ("carol", "customer-acme");
    for path in [
        "/api/v1/ingresses?cluster=CALL-SUPPORT-NOW",
        "/api/v1/ingresses?cluster=zrh-prod&namespace=globex-web",
        "/api/v1/findings?namespace=globex-web",
        "/api/v1/ingresses.csv?cluster=sim-2",
        "/ingresses?namespace=globex-web",
        "/audit?cluster=sim-2",
    ] {
        let resp = app.get_as(path, customer.0, customer.1).await;
        assert_eq!(resp.status(), 404, "{path}");
        let body = resp.text().await.unwrap();
        assert!(
            !body.contains("globex-web") || path.contains("globex-web"),
            "{body}"
        );
        if path.starts_with("/api/") && !path.contains(".csv") {
            let error: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(error["error"]["code"], "not_found", "{path}");
        }
        assert!(body.contains("in your view"), "{path}: {body}");
    }
    // The same filters inside the view answer; support sees every namespace.
    for (who, path) in [
        (
            customer,
            "/api/v1/ingresses?cluster=zrh-prod&namespace=acme-shop",
        ),
        (customer, "/api/v1/ingresses?namespace=acme-nothing-yet"),
        (customer, "/ingresses?cluster=&namespace="),
        (("sue", "support"), "/api/v1/findings?namespace=globex-web"),
    ] {
        let resp = app.get_as(path, who.0, who.1).await;
        assert_eq!(resp.status(), 200, "{path} as {}", who.0);
    }
    app.stop().await;
}

/// An Event about a cluster-scoped object is kept in `default` with no namespace in its
/// reference (client-go's `makeEvent`): the chain of an Ingress asking that ClusterIssuer
/// shows it to a reader of the whole cluster, and not to a tenant — the issuer's details
/// are not theirs.
#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_issuers_events_show_on_the_chain_only_to_whole_cluster_readers() {
    let app = app_with(&["zrh-prod"])
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    two_tenants(&app);
    create(
        &app,
        0,
        "",
        "events",
        Some("default"),
        json!({"metadata": {"name": "letsencrypt-prod.187f3a"},
               "involvedObject": {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "name": "letsencrypt-prod"},
               "reason": "ErrRegisterACMEAccount", "type": "Warning", "source": {"component": "cert-manager-issuers"},
               "message": "Failed to register ACME account: the account of team globex-web",
               "lastTimestamp": "2026-12-07T00:00:00Z"}),
    );
    app.eventually("support reads the issuer's event on the chain", || async {
        app.get_as(
            "/api/v1/ingresses/zrh-prod/acme-shop/shop",
            "sue",
            "support",
        )
        .await
        .text()
        .await
        .unwrap()
        .contains("ErrRegisterACMEAccount")
    })
    .await;
    let theirs = app
        .get_as(
            "/api/v1/ingresses/zrh-prod/acme-shop/shop",
            "carol",
            "customer-acme",
        )
        .await;
    assert_eq!(theirs.status(), 200);
    let theirs = theirs.text().await.unwrap();
    assert!(
        !theirs.contains("ErrRegisterACMEAccount") && !theirs.contains("globex"),
        "{theirs}"
    );
    app.stop().await;
}
