//! Sign-in against a real OpenID Connect provider: the npm package `oidc-provider`, started
//! here on loopback (`end2end/oidc/provider.mjs`). A support engineer and a customer sign in
//! through the provider's login form (authorization code + PKCE), get sessions with their
//! groups, see what their rules allow, and sign out.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use lookout_server::auth::Auth;
use lookout_server::config::Config;
use serde_json::{json, Value};

use crate::helpers::*;

fn end2end() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../end2end")
}

/// Whether node and the npm packages are there; in CI their absence is a failure.
pub(crate) fn provider_available() -> bool {
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let package = end2end()
        .join("node_modules/oidc-provider/package.json")
        .exists();
    if !(node && package) {
        assert!(
            std::env::var("CI").is_err(),
            "node or end2end/node_modules is missing (run npm ci --prefix end2end)"
        );
        eprintln!("skipping: node or end2end/node_modules/oidc-provider is missing");
    }
    node && package
}

/// The provider process; killed when dropped.
pub(crate) struct OidcProvider {
    child: tokio::process::Child,
    pub(crate) issuer: String,
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn start_provider(redirect_uri: &str) -> OidcProvider {
    start_provider_with(redirect_uri, None).await
}

/// The provider, reading each login's groups from `groups_file` (JSON) at every sign-in.
pub(crate) async fn start_provider_with(
    redirect_uri: &str,
    groups_file: Option<&std::path::Path>,
) -> OidcProvider {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new("node")
        .arg(end2end().join("oidc/provider.mjs"))
        .env("PORT", port.to_string())
        .env("REDIRECT_URI", redirect_uri)
        .envs(groups_file.map(|f| ("GROUPS_FILE", f.as_os_str())))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let issuer = format!("http://127.0.0.1:{port}");
    let discovery = format!("{issuer}/.well-known/openid-configuration");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !reqwest::get(&discovery)
        .await
        .is_ok_and(|r| r.status().is_success())
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "oidc-provider did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    OidcProvider { child, issuer }
}

/// A browser that keeps cookies and shows each redirect.
pub(crate) fn browser() -> reqwest::Client {
    browser_with(std::sync::Arc::new(reqwest::cookie::Jar::default()))
}

/// A browser whose cookies the test can read (to replay one later).
fn browser_with(jar: std::sync::Arc<reqwest::cookie::Jar>) -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_provider(jar)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Follows redirects by hand (across Lookout and the provider); returns the final response
/// and its URL.
async fn follow(
    client: &reqwest::Client,
    mut response: reqwest::Response,
) -> (reqwest::Response, reqwest::Url) {
    let mut url = response.url().clone();
    for _ in 0..20 {
        if !response.status().is_redirection() {
            return (response, url);
        }
        let location = response.headers()["location"].to_str().unwrap().to_string();
        url = url.join(&location).unwrap();
        response = client.get(url.clone()).send().await.unwrap();
    }
    panic!("too many redirects, last at {url}");
}

/// The action and the hidden fields of the first form of a page.
fn form_of(html: &str) -> (String, Vec<(String, String)>) {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let key = format!("{name}=\"");
        let at = tag.find(&key)? + key.len();
        Some(tag[at..at + tag[at..].find('"')?].to_string())
    };
    let form_at = html.find("<form").expect("a form");
    let form_tag = &html[form_at..form_at + html[form_at..].find('>').unwrap()];
    let action = attr(form_tag, "action").expect("the form's action");
    let fields = html[form_at..]
        .split("<input")
        .skip(1)
        .map(|t| &t[..t.find('>').unwrap_or(t.len())])
        .filter(|t| t.contains("type=\"hidden\""))
        .filter_map(|t| Some((attr(t, "name")?, attr(t, "value").unwrap_or_default())))
        .collect();
    (action, fields)
}

/// Signs in as `login` through the provider's login form (and its consent form, if it asks),
/// starting at `path`; returns the page the browser lands on, which must answer 200.
pub(crate) async fn sign_in(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    login: &str,
) -> (String, reqwest::Url) {
    let (status, text, at) = sign_in_landing(client, base, path, login).await;
    assert_eq!(status, 200, "landed on {at}: {text}");
    (text, at)
}

/// As [`sign_in`], whatever the landing page answers: (its status, its text, its URL).
async fn sign_in_landing(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    login: &str,
) -> (reqwest::StatusCode, String, reqwest::Url) {
    let first = client.get(format!("{base}{path}")).send().await.unwrap();
    assert_eq!(
        first.status(),
        303,
        "a page without a session goes to sign-in"
    );
    let (mut page, mut at) = follow(client, first).await;
    assert!(
        at.as_str().contains("/interaction/"),
        "the provider's login page: {at}"
    );
    for _ in 0..3 {
        if !at.as_str().contains("/interaction/") {
            break;
        }
        let html = page.text().await.unwrap();
        let (action, mut fields) = form_of(&html);
        if fields.iter().any(|(k, v)| k == "prompt" && v == "login") {
            fields.push(("login".into(), login.into()));
            fields.push(("password".into(), "any".into()));
        }
        let post = client
            .post(at.join(&action).unwrap())
            .form(&fields)
            .send()
            .await
            .unwrap();
        (page, at) = follow(client, post).await;
    }
    let status = page.status();
    let text = page.text().await.unwrap();
    (status, text, at)
}

/// Lookout signing people in through a provider started for it (the tests' OIDC
/// configuration: support everywhere, a customer's group in its namespaces), and its URL.
async fn signing_in_app() -> (TestApp, OidcProvider, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let provider = start_provider(&format!("{base}/auth/callback")).await;
    let auth = crate::tenancy::oidc_auth(&base, &provider.issuer).await;
    let app = app_with(&["zrh-prod"]).auth(auth).listener(listener).await;
    (app, provider, base)
}

#[tokio::test(flavor = "multi_thread")]
async fn support_and_a_customer_sign_in_with_a_real_provider_and_see_their_scopes() {
    if !provider_available() {
        return;
    }
    // Support operates everywhere; the customer's group sees its namespaces.
    let (app, provider, base) = signing_in_app().await;
    for (ns, host) in [
        ("acme-shop", "shop.acme.example"),
        ("globex-web", "www.globex.example"),
    ] {
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
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": "web"}, "spec": {"rules": [{"host": host}]}}),
        );
    }

    assert_eq!(
        app.get("/api/v1/ingresses").await.status(),
        401,
        "the API without a session"
    );

    let support = browser();
    let (page, url) = sign_in(&support, &base, "/ingresses", "support").await;
    assert_eq!(url.path(), "/ingresses", "back where the sign-in started");
    assert!(page.contains("support (operator)"), "signed in as support");
    let session = support
        .get(format!("{base}/api/v1/ingresses"))
        .send()
        .await
        .unwrap();
    assert_eq!(session.status(), 200);

    let customer_jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
    let customer = browser_with(customer_jar.clone());
    let (page, _) = sign_in(&customer, &base, "/", "carol").await;
    assert!(page.contains("carol (viewer)"));
    let mut seen = 0;
    for _ in 0..50 {
        let list: Value = customer
            .get(format!("{base}/api/v1/ingresses"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        seen = list["total"].as_u64().unwrap();
        if seen == 1 {
            assert_eq!(list["items"][0]["namespace"], "acme-shop");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, 1, "the customer sees their one Ingress");
    let all: Value = support
        .get(format!("{base}/api/v1/ingresses"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(all["total"], 2, "support sees both tenants");

    // Sign out: the session ends.
    let page = customer
        .get(format!("{base}/ingresses"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let marker = "name=\"csrf\" value=\"";
    let at = page.find(marker).unwrap() + marker.len();
    let csrf = &page[at..at + page[at..].find('"').unwrap()];
    // What a thief would have copied before the sign-out.
    use reqwest::cookie::CookieStore;
    let stolen = customer_jar
        .cookies(&base.parse().unwrap())
        .expect("the browser holds cookies")
        .to_str()
        .unwrap()
        .to_string();
    let out = customer
        .post(format!("{base}/auth/logout"))
        .form(&[("csrf", csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    assert_eq!(
        customer
            .get(format!("{base}/api/v1/ingresses"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    // The copied cookie, replayed after the sign-out, is refused too: the session ended
    // on the server, not only in this browser.
    let replay = reqwest::Client::new()
        .get(format!("{base}/api/v1/ingresses"))
        .header("Cookie", stolen)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 401);
    drop(provider);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_callback_is_refused() {
    if !provider_available() {
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let provider = start_provider(&format!("{base}/auth/callback")).await;
    let config = Config::parse(
        &format!(
            "[[clusters]]\nname = \"zrh-prod\"\nin_cluster = true\n[auth]\nmode = \"oidc\"\npublic_url = \"{base}\"\n[auth.oidc]\nissuer_url = \"{}\"\nclient_id = \"lookout\"\nclient_secret = \"lookout-test-secret\"\n",
            provider.issuer
        ),
        &[],
    )
    .unwrap();
    let app = app_with(&["zrh-prod"])
        .auth(Auth::from_config(&config).await.unwrap())
        .listener(listener)
        .await;
    let client = browser();
    // No flow started in this browser: a code from elsewhere is not accepted.
    let r = client
        .get(format!("{base}/auth/callback?code=stolen&state=guess"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // A flow started, but the state does not match.
    let login = client
        .get(format!("{base}/auth/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let r = client
        .get(format!("{base}/auth/callback?code=stolen&state=guess"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.text().await.unwrap().contains("state does not match"));
    drop(provider);
    app.stop().await;
}

/// The CSRF token of a page (for the sign-out form).
fn csrf_of(page: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let at = page.find(marker).expect("a form with a CSRF token") + marker.len();
    page[at..at + page[at..].find('"').unwrap()].to_string()
}

/// Groups are read from the provider again once `auth.groups_max_age` has passed (a user
/// moved to another group gets the new access without signing out), and a signed-out
/// session stays ended after a restart (the database keeps it).
#[tokio::test(flavor = "multi_thread")]
async fn groups_are_read_again_and_a_sign_out_survives_a_restart() {
    if !provider_available() {
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let groups = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(groups.path(), r#"{"carol": ["customer-acme"]}"#).unwrap();
    let provider = start_provider_with(&format!("{base}/auth/callback"), Some(groups.path())).await;
    let config = Config::parse(
        &format!(
            r#"
[[clusters]]
name = "zrh-prod"
in_cluster = true

[auth]
mode = "oidc"
public_url = "{base}"
session_key = "{key}"
groups_max_age = "4s"

[auth.oidc]
issuer_url = "{issuer}"
client_id = "lookout"
client_secret = "lookout-test-secret"

[[access]]
groups = ["support"]
role = "operator"

[[access]]
groups = ["customer-acme"]
role = "viewer"
namespaces = ["acme-*"]
"#,
            issuer = provider.issuer,
            key = "a".repeat(88),
        ),
        &[],
    )
    .unwrap();
    // The sessions' clock, moved forward by the test instead of waiting.
    let ahead = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let clock: lookout_server::clock::Now = {
        let ahead = ahead.clone();
        std::sync::Arc::new(move || {
            chrono::Utc::now()
                + chrono::Duration::seconds(ahead.load(std::sync::atomic::Ordering::SeqCst))
        })
    };
    let app = app_with(&["zrh-prod"])
        .auth(
            Auth::from_config(&config)
                .await
                .unwrap()
                .with_clock(clock.clone()),
        )
        .listener(listener)
        .await;
    let jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
    let carol = browser_with(jar.clone());
    let (page, _) = sign_in(&carol, &base, "/ingresses", "carol").await;
    assert!(page.contains("carol (viewer)"), "{page}");

    // Carol moves to support; once her groups are older than 4 s (the sessions' clock moved
    // 5 s on) the next page goes through the provider again — no form, her session there lasts — and she is an operator.
    std::fs::write(groups.path(), r#"{"carol": ["support"]}"#).unwrap();
    ahead.fetch_add(5, std::sync::atomic::Ordering::SeqCst);
    let aged = carol
        .get(format!("{base}/api/v1/ingresses"))
        .send()
        .await
        .unwrap();
    assert_eq!(aged.status(), 401, "an aged session is not believed");
    let first = carol.get(format!("{base}/ingresses")).send().await.unwrap();
    assert_eq!(first.status(), 303, "a page goes to the provider again");
    let (page, url) = follow(&carol, first).await;
    assert_eq!(url.path(), "/ingresses", "back without a login form: {url}");
    let page = page.text().await.unwrap();
    assert!(
        page.contains("carol (operator)"),
        "the new groups count: {page}"
    );

    // Sign out; a copy of the cookie is refused, also by the next start of Lookout.
    use reqwest::cookie::CookieStore;
    let stolen = jar
        .cookies(&base.parse().unwrap())
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let replay = |base: String, cookie: String| async move {
        reqwest::Client::new()
            .get(format!("{base}/api/v1/ingresses"))
            .header("Cookie", cookie)
            .send()
            .await
            .unwrap()
            .status()
    };
    assert_eq!(
        replay(base.clone(), stolen.clone()).await,
        200,
        "the copy works until the sign-out"
    );
    let out = carol
        .post(format!("{base}/auth/logout"))
        .form(&[("csrf", csrf_of(&page))])
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    assert_eq!(replay(base.clone(), stolen.clone()).await, 401);
    let dir = app.stop().await;
    let again = app_with(&["zrh-prod"])
        .auth(Auth::from_config(&config).await.unwrap().with_clock(clock))
        .dir(dir)
        .await;
    assert_eq!(
        replay(again.base.clone(), stolen).await,
        401,
        "the sign-out outlives a restart"
    );
    drop(provider);
    again.stop().await;
}

/// A name Lookout refuses (one only API tokens may carry) ends the sign-in on an error page
/// that says why — no session, and no loop back to the provider.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_name_ends_the_sign_in_with_an_error_page() {
    if !provider_available() {
        return;
    }
    let (app, _provider, base) = signing_in_app().await;
    let client = browser();
    let (status, page, at) = sign_in_landing(&client, &base, "/", "token:ci").await;
    assert_eq!(
        at.path(),
        "/auth/callback",
        "it ends where the provider sent it back"
    );
    assert_eq!(status, 401, "{page}");
    assert!(page.contains("reserved"), "{page}");
    // No session was made: the API still asks for one.
    let api = client
        .get(format!("{base}/api/v1/ingresses"))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), 401);
    app.stop().await;
}

/// A live stream follows its caller: signed out, the stream open in another tab ends within
/// the re-check interval instead of reporting on.
#[tokio::test(flavor = "multi_thread")]
async fn a_live_stream_ends_when_its_caller_signs_out() {
    use futures::StreamExt;
    if !provider_available() {
        return;
    }
    let (app, provider, base) = signing_in_app().await;
    let carol = browser();
    let (page, _) = sign_in(&carol, &base, "/", "carol").await;
    let stream = carol
        .get(format!("{base}/api/v1/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut body = stream.bytes_stream();
    let first = tokio::time::timeout(Duration::from_secs(5), body.next())
        .await
        .expect("the first message");
    assert!(first.is_some_and(|b| b.is_ok()));
    let out = carol
        .post(format!("{base}/auth/logout"))
        .form(&[("csrf", csrf_of(&page))])
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    // The stream ends (no more chunks) within the re-check interval (5 s) and a margin.
    let ended = tokio::time::timeout(Duration::from_secs(9), async {
        while let Some(chunk) = body.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream went on after the sign-out");
    drop(provider);
    app.stop().await;
}
