//! The lookout application against kubesim over HTTP, with a real SQLite file, started the
//! same way `main` starts it (on port 0), plus the `lookout` binary itself.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubesim::{Clock, Fleet, FleetOptions};
use lookout_server::clusters::{self, ClusterSource};
use lookout_server::config::ClusterConfig;
use lookout_server::{app, store};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

struct TestApp {
    base: String,
    http: reqwest::Client,
    fleet: Fleet,
    dir: tempfile::TempDir,
    token: CancellationToken,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// Starts kubesim with `clusters` and the application against them; `extra` are added as
/// further (e.g. broken) cluster configs.
async fn spawn_app(clusters: &[&str], extra: Vec<ClusterConfig>) -> TestApp {
    let token = CancellationToken::new();
    let opts = FleetOptions {
        names: clusters.iter().map(|s| s.to_string()).collect(),
        ..FleetOptions::numbered(0)
    };
    let fleet = Fleet::start(&opts, Arc::new(Clock::Real), token.clone())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    fleet.write_kubeconfig(&kubeconfig).unwrap();
    let mut configs: Vec<ClusterConfig> = clusters
        .iter()
        .map(|c| ClusterConfig {
            name: c.to_string(),
            kubeconfig: Some(kubeconfig.clone()),
            context: Some(c.to_string()),
            in_cluster: false,
        })
        .collect();
    configs.extend(extra);
    let sources: Vec<ClusterSource> = clusters::connect(&configs).await;
    let db = store::Db::open(&format!(
        "sqlite://{}",
        dir.path().join("lookout.db").display()
    ))
    .await
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(app::run(
        app::Parts {
            listener,
            db,
            clusters: sources,
            banner: None,
        },
        token.clone(),
    ));
    TestApp {
        base,
        http: reqwest::Client::new(),
        fleet,
        dir,
        token,
        server,
    }
}

impl TestApp {
    async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
    }

    async fn json(&self, path: &str) -> Value {
        let resp = self.get(path).await;
        assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
        resp.json().await.unwrap()
    }

    /// Polls `check` until it holds (watch events arrive asynchronously), at most 10 s.
    async fn eventually<F, Fut>(&self, what: &str, check: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !check().await {
            assert!(Instant::now() < deadline, "timed out waiting for: {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn wait_ready(&self) {
        self.eventually("/readyz to answer 200", || async {
            self.get("/readyz").await.status() == 200
        })
        .await;
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// Stops the app; the returned directory still holds its database.
    async fn stop(self) -> tempfile::TempDir {
        self.token.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("the app stops within 10 s")
            .unwrap()
            .unwrap();
        self.dir
    }
}

fn kubectl_available() -> bool {
    let ok = std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl is required under CI=true"
        );
        eprintln!("skipping: kubectl is not installed");
    }
    ok
}

fn kubectl(kubeconfig: &Path, context: &str, args: &[&str], stdin: Option<&str>) {
    use std::io::Write;
    let mut child = std::process::Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .arg("--context")
        .arg(context)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("cache"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ingress_yaml(ns: &str, name: &str, host: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations:\n    cert-manager.io/cluster-issuer: letsencrypt-prod\nspec:\n  ingressClassName: cilium\n  rules:\n  - host: {host}\n  tls:\n  - hosts: [\"{host}\"]\n    secretName: {name}-tls\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn ingresses_created_with_kubectl_appear_in_the_api_and_pages() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod", "gva-prod"], vec![]).await;
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
        json!({"kind": "ClusterIssuer", "name": "letsencrypt-prod"})
    );
    let by_host = app.json("/api/v1/ingresses?q=globex").await;
    assert_eq!(by_host["total"], 1);
    assert_eq!(by_host["items"][0]["cluster"], "gva-prod");

    let detail = app.json("/api/v1/ingresses/zrh-prod/acme-shop/shop").await;
    assert_eq!(detail["tls"][0]["secret_name"], "shop-tls");

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
        ClusterConfig {
            name: "dead".into(),
            kubeconfig: Some(dead.clone()),
            context: Some("dead".into()),
            in_cluster: false,
        },
        ClusterConfig {
            name: "typo".into(),
            kubeconfig: Some(dead),
            context: Some("no-such-context".into()),
            in_cluster: false,
        },
    ];
    let app = spawn_app(&["zrh-prod"], extra).await;
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
    std::fs::write(
        &kc,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: s\n  context:\n    cluster: s\n    user: u\nusers:\n- name: u\n  user: {{}}\ncurrent-context: s\n"),
    )
    .unwrap();
    let app = spawn_app(
        &["zrh-prod"],
        vec![ClusterConfig {
            name: "silent".into(),
            kubeconfig: Some(kc),
            context: None,
            in_cluster: false,
        }],
    )
    .await;
    app.eventually("zrh-prod synced", || async {
        app.json("/api/v1/clusters").await["items"][0]["state"] == "synced"
    })
    .await;
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503);
    assert!(ready.text().await.unwrap().contains("silent"));
    // Pages do not wait on it.
    let started = Instant::now();
    assert_eq!(app.get("/ingresses").await.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(app.get("/healthz").await.status(), 200);
    app.stop().await;
    drop(silent);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_pages_and_objects_are_real_404s() {
    let app = spawn_app(&["zrh-prod"], vec![]).await;
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
    let app = spawn_app(&["zrh-prod"], vec![]).await;
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
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_provided_text_is_escaped() {
    let app = spawn_app(&["zrh-prod"], vec![]).await;
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
    let app = spawn_app(&["zrh-prod"], vec![]).await;
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
    let app = spawn_app(&["zrh-prod"], vec![]).await;
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

// The binary.

fn lookout() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_lookout"));
    cmd.env_remove("LOOKOUT_LISTEN")
        .env("LOOKOUT_LOG", "warn")
        .kill_on_drop(true);
    cmd
}

#[tokio::test]
async fn check_config_reports_every_problem_and_serve_refuses_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "listen = \"nowhere\"\nreadonly = true\n[[clusters]]\nname = \"zrh\"\ncontext = \"x\"\n[[access]]\ngroups = [\"support\"]\nrole = \"god\"\n").unwrap();
    let out = lookout()
        .arg("check-config")
        .arg(&bad)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("readonly: unknown key"), "{stderr}");

    std::fs::write(&bad, "listen = \"nowhere\"\n[[clusters]]\nname = \"zrh\"\ncontext = \"x\"\n[[access]]\ngroups = [\"support\"]\nrole = \"god\"\n").unwrap();
    let out = lookout()
        .arg("check-config")
        .arg(&bad)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    for key in ["listen:", "clusters[0].kubeconfig:", "access[0].role:"] {
        assert!(stderr.contains(key), "{key} missing from:\n{stderr}");
    }
    let serve = lookout()
        .arg("serve")
        .arg("--config")
        .arg(&bad)
        .output()
        .await
        .unwrap();
    assert_ne!(serve.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&serve.stderr),
        stderr,
        "serve reports the same messages"
    );

    let good = dir.path().join("good.toml");
    std::fs::write(&good, "listen = \"127.0.0.1:0\"\n").unwrap();
    let ok = lookout()
        .arg("check-config")
        .arg(&good)
        .output()
        .await
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[tokio::test]
async fn a_failed_migration_stops_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taken.db");
    // A database whose schema collides with migration 0001.
    {
        let db = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=rwc", path.display()))
            .await
            .unwrap();
        sqlx::query("CREATE TABLE cluster_sync_events (x)")
            .execute(&db)
            .await
            .unwrap();
        db.close().await;
    }
    let err = store::Db::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("database migration failed"),
        "{err}"
    );
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase_url = \"sqlite://{}\"\n",
            path.display()
        ),
    )
    .unwrap();
    let out = lookout()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("database migration failed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn wait_http_ok(url: &str) {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(r) = http.get(url).send().await {
            if r.status() == 200 {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{url} did not answer 200 within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn terminate_within(
    child: &mut tokio::process::Child,
    limit: Duration,
) -> std::process::ExitStatus {
    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    tokio::time::timeout(limit, child.wait())
        .await
        .expect("exited after SIGTERM in time")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_against_kubesim_and_stop_on_sigterm() {
    let token = CancellationToken::new();
    let fleet = Fleet::start(
        &FleetOptions::numbered(2),
        Arc::new(Clock::Real),
        token.clone(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    fleet.write_kubeconfig(&kc).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.path().join("lookout.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:{port}\"\ndatabase_url = \"sqlite://{db}\"\n[[clusters]]\nname = \"one\"\nkubeconfig = \"{kc}\"\ncontext = \"sim-1\"\n[[clusters]]\nname = \"two\"\nkubeconfig = \"{kc}\"\ncontext = \"sim-2\"\n",
            db = dir.path().join("l.db").display(),
            kc = kc.display()
        ),
    )
    .unwrap();
    let mut child = lookout()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_http_ok(&format!("http://127.0.0.1:{port}/readyz")).await;
    let clusters: Value = reqwest::get(format!("http://127.0.0.1:{port}/api/v1/clusters"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(clusters["items"].as_array().unwrap().len(), 2);
    let status = terminate_within(&mut child, Duration::from_secs(5)).await;
    assert!(status.success(), "{status:?}");
    token.cancel();
}

#[tokio::test(flavor = "multi_thread")]
async fn demo_serves_a_seeded_fleet_and_stops_on_sigterm() {
    let mut child = lookout()
        .arg("demo")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the demo prints its URL")
        .unwrap()
        .unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("a URL on the first line")
        .trim_end_matches('/')
        .to_string();
    wait_http_ok(&format!("{url}/readyz")).await;
    let clusters: Value = reqwest::get(format!("{url}/api/v1/clusters"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = clusters["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert!(
        items
            .iter()
            .all(|c| c["state"] == "synced" && c["ingresses"].as_u64().unwrap() > 0),
        "{clusters}"
    );
    let board = reqwest::get(format!("{url}/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(board.contains("Demo: a simulated fleet"));
    let status = terminate_within(&mut child, Duration::from_secs(5)).await;
    assert!(status.success(), "{status:?}");
}
