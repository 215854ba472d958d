//! Storage faults: the database on a full filesystem, and locked by another process. Live
//! pages keep working from the cache, the fault is shown (banner, `/metrics`), and the
//! history written while it lasted arrives once it is gone, in order, with its own times.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::binary::{serve_fleet, start_fleet, terminate_within, wait_http_ok};
use crate::helpers::*;

/// A tmpfs mounted on a directory, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts one with these options (`size=4m`, `size=4m,ro`), or None where this process
    /// may not mount (not root): the test then cannot run, which is an error under CI.
    fn mount(at: &Path, options: &str) -> Option<Tmpfs> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must be able to mount a tmpfs (run as root) for the full-disk test"
            );
            eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        }
        ok.then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the filesystem of `dir` with one file until it refuses more.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 16 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
    path
}

fn challenge(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"dnsName": format!("{name}.example.com"), "type": "HTTP-01"}})
}

fn set_state(app: &TestApp, name: &str, state: &str) {
    patch_status(
        app,
        "acme.cert-manager.io",
        "challenges",
        name,
        json!({"state": state, "processing": state == "pending", "presented": false}),
    );
}

/// The value of `name{writer="WRITER"}` in /metrics.
async fn storage_metric(app: &TestApp, name: &str, writer: &str) -> Option<f64> {
    metric_at(&app.base, name, writer).await
}

/// The value of `name{writer="WRITER"}` in the /metrics of the server at `base`.
async fn metric_at(base: &str, name: &str, writer: &str) -> Option<f64> {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let prefix = format!("{name}{{writer=\"{writer}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.parse().ok())
}

/// The recorded states of Challenge `name` and the time of the first.
async fn recorded(app: &TestApp, name: &str) -> Option<(Vec<String>, String)> {
    let (row, states) = challenge_history(app, name).await?;
    Some((states, row["transitions"][0]["at"].as_str()?.to_string()))
}

/// A page answers 200 within a second, shows `text`, and says whether it has the storage
/// banner.
async fn page_with(app: &TestApp, path: &str, text: &str) -> bool {
    let started = Instant::now();
    let resp = app.get(path).await;
    assert_eq!(resp.status(), 200, "{path}");
    let body = resp.text().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{path} took {:?}",
        started.elapsed()
    );
    assert!(body.contains(text), "{path} shows {text}");
    body.contains("data-testid=\"storage-banner\"")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_holds_the_history_keeps_pages_live_and_writes_it_all_once_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mount) = Tmpfs::mount(dir.path(), "size=4m") else {
        return;
    };
    let app = app_with(&["zrh-prod"]).dir(dir).await;
    app.wait_ready().await;
    assert_eq!(
        storage_metric(&app, "lookout_storage_writable", "history").await,
        Some(1.0)
    );
    let filler = fill(app.dir.path());

    // Challenges come and change while nothing can be written.
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("acme.cert-manager.io", "challenges").unwrap();
    let opts = kubesim::WriteOpts::system();
    c.create(&rt, Some("default"), challenge("during"), &opts)
        .unwrap();
    let created = chrono::Utc::now();
    within(15, "the history writer reports the full disk", || async {
        storage_metric(&app, "lookout_storage_writable", "history").await == Some(0.0)
    })
    .await;
    set_state(&app, "during", "pending");
    set_state(&app, "during", "valid");
    add_ingress(&app, 0, "added-during-the-fault");
    within(10, "the new Ingress is live", || async {
        page_with(&app, "/ingresses", "zrh-prod").await
            && app
                .get("/ingresses")
                .await
                .text()
                .await
                .unwrap()
                .contains("added-during-the-fault")
    })
    .await;
    let page = app.get("/").await.text().await.unwrap();
    assert!(
        page.contains("History is not being saved")
            && page.contains("database or disk is full")
            && page.contains("held in memory"),
        "the banner names the fault"
    );
    assert!(
        storage_metric(&app, "lookout_storage_held", "history")
            .await
            .unwrap()
            >= 1.0
    );
    assert!(
        storage_metric(&app, "lookout_storage_write_errors_total", "history")
            .await
            .unwrap()
            >= 1.0
    );
    assert!(
        recorded(&app, "during").await.is_none(),
        "nothing could be written yet"
    );

    // Space returns: everything held is written, in order, with the times it happened.
    std::fs::remove_file(filler).unwrap();
    within(40, "the held history is written", || async {
        recorded(&app, "during")
            .await
            .is_some_and(|(s, _)| s.last().map(String::as_str) == Some("valid"))
    })
    .await;
    let (states, first_at) = recorded(&app, "during").await.unwrap();
    assert_eq!(states, ["", "pending", "valid"], "every state, in order");
    let first_at = chrono::DateTime::parse_from_rfc3339(&first_at).unwrap();
    assert!(
        (first_at.with_timezone(&chrono::Utc) - created)
            .num_seconds()
            .abs()
            <= 2,
        "recorded at the time it happened ({first_at}), not when it was written"
    );
    within(5, "the fault clears", || async {
        storage_metric(&app, "lookout_storage_writable", "history").await == Some(1.0)
            && !page_with(&app, "/", "Lookout").await
    })
    .await;
    assert_eq!(
        storage_metric(&app, "lookout_storage_dropped_total", "history").await,
        Some(0.0)
    );
    let dir = app.stop().await;
    drop(mount);
    drop(dir);
}

/// Another process holding the database's write lock until dropped (python3's sqlite3).
struct Locker(Child);

impl Locker {
    fn lock(db: &Path) -> Locker {
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import sqlite3, sys\n\
                 c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                 c.execute('BEGIN EXCLUSIVE')\n\
                 print('locked', flush=True)\n\
                 sys.stdin.read()\n",
            ])
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        Locker(child)
    }
}

impl Drop for Locker {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_locked_by_another_process_holds_history_and_audit_until_it_lets_go() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    add_ingress(&app, 0, "web");
    within(10, "the Ingress is live", || async {
        app.json_opt("/api/v1/ingresses/zrh-prod/default/web")
            .await
            .is_some()
    })
    .await;
    let locker = Locker::lock(&app.dir.path().join("lookout.db"));

    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("acme.cert-manager.io", "challenges").unwrap();
    c.create(
        &rt,
        Some("default"),
        challenge("locked-out"),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    // A preview is audited; the row waits for the lock like the history.
    let preview = app
        .post(
            "/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            json!({"dry_run": true}),
        )
        .await;
    assert_eq!(preview.status(), 200, "the action itself works");
    within(20, "both writers report the lock", || async {
        storage_metric(&app, "lookout_storage_writable", "history").await == Some(0.0)
            && storage_metric(&app, "lookout_storage_writable", "audit").await == Some(0.0)
    })
    .await;
    assert!(page_with(&app, "/ingresses", "web").await, "banner shown");
    assert!(app
        .get("/")
        .await
        .text()
        .await
        .unwrap()
        .contains("database is locked"));
    // Reads of the history go on beside the lock.
    let started = Instant::now();
    let list = app.get("/api/v1/challenges").await;
    assert_eq!(list.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(1));

    drop(locker);
    within(40, "the held history and audit row are written", || async {
        recorded(&app, "locked-out").await.is_some()
            && app.json("/api/v1/audit?action=edit-in-place").await["items"]
                .as_array()
                .is_some_and(|a| a.len() == 1)
    })
    .await;
    within(5, "the fault clears", || async {
        !page_with(&app, "/ingresses", "web").await
    })
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_a_read_only_filesystem_serves_live_data_and_opens_the_database_once_writable() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let Some(mount) = Tmpfs::mount(&data, "size=4m,ro") else {
        return;
    };
    let (fleet, token) = start_fleet(1).await;
    let db = data.join("lookout.db");
    let (mut child, base) = serve_fleet(&fleet, dir.path(), &db);
    wait_http_ok(&format!("{base}/readyz")).await;

    // Live data is served; the history says why it is not there.
    let ingresses = reqwest::get(format!("{base}/api/v1/ingresses"))
        .await
        .unwrap();
    assert_eq!(ingresses.status(), 200);
    let page = reqwest::get(&base).await.unwrap().text().await.unwrap();
    assert!(
        page.contains("data-testid=\"storage-banner\"")
            && page.contains("unable to open database file"),
        "the banner names the fault"
    );
    assert!(
        !page.contains(&data.display().to_string()),
        "the banner does not show where the database is"
    );
    assert_eq!(
        metric_at(&base, "lookout_storage_writable", "database").await,
        Some(0.0)
    );
    let history = reqwest::get(format!("{base}/api/v1/challenges"))
        .await
        .unwrap();
    assert_eq!(history.status(), 503);
    let body: Value = history.json().await.unwrap();
    assert_eq!(body["error"]["code"], "storage_unavailable", "{body}");

    // The filesystem becomes writable: the database is created, migrated and written.
    let remounted = Command::new("mount")
        .args(["-o", "remount,rw"])
        .arg(&data)
        .status()
        .unwrap();
    assert!(remounted.success());
    within(
        60,
        "the database opens and the held sync events are written",
        || async {
            metric_at(&base, "lookout_storage_writable", "database").await == Some(1.0)
                && metric_at(&base, "lookout_storage_writable", "sync events").await == Some(1.0)
                && metric_at(&base, "lookout_storage_held", "sync events").await == Some(0.0)
                && !reqwest::get(&base)
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap()
                    .contains("storage-banner")
        },
    )
    .await;
    let history = reqwest::get(format!("{base}/api/v1/challenges"))
        .await
        .unwrap();
    assert_eq!(history.status(), 200);
    let status = terminate_within(&mut child, Duration::from_secs(5)).await;
    assert!(status.success(), "{status:?}");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    let synced: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM cluster_sync_events WHERE cluster = 'one' AND state = 'synced'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(
        synced >= 1,
        "the first sync, held from the start, is recorded"
    );
    pool.close().await;
    token.cancel();
    drop(mount);
}

/// PostgreSQL restarting: the history writer holds what it cannot write (banner, /metrics),
/// the pages stay live, and once the server is back everything is written, in order, once.
#[tokio::test(flavor = "multi_thread")]
async fn a_postgresql_restart_holds_the_history_and_writes_it_all_once_the_server_is_back() {
    let Some(mut server) = crate::testdb::OwnServer::start().await else {
        return;
    };
    let app = app_with(&["zrh-prod"]).database(server.url()).await;
    app.wait_ready().await;
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("acme.cert-manager.io", "challenges").unwrap();
    let opts = kubesim::WriteOpts::system();
    c.create(&rt, Some("default"), challenge("before"), &opts)
        .unwrap();
    within(15, "the first Challenge is recorded", || async {
        recorded(&app, "before").await.is_some()
    })
    .await;

    server.stop().await;
    c.create(&rt, Some("default"), challenge("during"), &opts)
        .unwrap();
    set_state(&app, "during", "pending");
    within(
        20,
        "the history writer reports the stopped server",
        || async { storage_metric(&app, "lookout_storage_writable", "history").await == Some(0.0) },
    )
    .await;
    set_state(&app, "during", "valid");
    add_ingress(&app, 0, "added-while-postgres-is-down");
    within(
        20,
        "the pages stay live and say why history is not saved",
        || async {
            let page = app.get("/ingresses").await.text().await.unwrap();
            page.contains("added-while-postgres-is-down")
                && page.contains("data-testid=\"storage-banner\"")
        },
    )
    .await;
    assert!(
        storage_metric(&app, "lookout_storage_held", "history")
            .await
            .unwrap()
            >= 1.0
    );

    server.start_again().await;
    within(60, "the held history is written", || async {
        recorded(&app, "during")
            .await
            .is_some_and(|(s, _)| s.last().map(String::as_str) == Some("valid"))
    })
    .await;
    let (states, _) = recorded(&app, "during").await.unwrap();
    assert_eq!(
        states,
        ["", "pending", "valid"],
        "every state, once, in order"
    );
    within(10, "the fault clears", || async {
        storage_metric(&app, "lookout_storage_writable", "history").await == Some(1.0)
    })
    .await;
    assert_eq!(
        storage_metric(&app, "lookout_storage_dropped_total", "history").await,
        Some(0.0)
    );
    app.stop().await;
}
