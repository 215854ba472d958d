//! The `lookout` binary: check-config, serve, demo, shutdown on SIGTERM.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubesim::{Clock, Fleet, FleetOptions};
use lookout_server::store;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

pub fn lookout() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_lookout"));
    cmd.env_remove("LOOKOUT_LISTEN")
        .env("LOOKOUT_LOG", "warn")
        .kill_on_drop(true);
    cmd
}

/// Names of the clusters [`serve_fleet`] configures, one per kubesim cluster in order.
const CLUSTER_NAMES: [&str; 4] = ["one", "two", "three", "four"];

/// A kubesim fleet of `clusters` clusters on the real clock, and the token that stops it.
pub async fn start_fleet(clusters: usize) -> (Fleet, CancellationToken) {
    let token = CancellationToken::new();
    let fleet = Fleet::start(
        &FleetOptions::numbered(clusters),
        Arc::new(Clock::Real),
        token.clone(),
    )
    .await
    .unwrap();
    (fleet, token)
}

/// Starts `lookout serve` on a free port with a config in `dir` naming every cluster of
/// `fleet` (`one` on context `sim-1`, `two` on `sim-2`, …) and the database at `db`.
/// Returns the process and its base URL; it may not be ready yet.
pub fn serve_fleet(
    fleet: &Fleet,
    dir: &std::path::Path,
    db: &std::path::Path,
) -> (tokio::process::Child, String) {
    let kc = dir.join("kubeconfig");
    fleet.write_kubeconfig(&kc).unwrap();
    let contexts: Vec<String> = (1..=fleet.clusters.len())
        .map(|i| format!("sim-{i}"))
        .collect();
    let clusters: Vec<(&str, &str)> = CLUSTER_NAMES
        .iter()
        .copied()
        .zip(contexts.iter().map(String::as_str))
        .collect();
    serve(dir, db, &kc, &clusters, Stdio::null())
}

/// Starts `lookout serve` on a free port with a config in `dir`: the database at `db` and
/// `clusters` as (name, context) of `kubeconfig`. Returns the process and its base URL; it
/// may not be ready yet.
fn serve(
    dir: &std::path::Path,
    db: &std::path::Path,
    kubeconfig: &std::path::Path,
    clusters: &[(&str, &str)],
    stderr: Stdio,
) -> (tokio::process::Child, String) {
    let database = format!("sqlite://{}", db.display());
    serve_database(dir, &database, kubeconfig, clusters, stderr)
}

/// [`serve`] with any database URL.
pub fn serve_database(
    dir: &std::path::Path,
    database: &str,
    kubeconfig: &std::path::Path,
    clusters: &[(&str, &str)],
    stderr: Stdio,
) -> (tokio::process::Child, String) {
    serve_database_with(dir, database, kubeconfig, clusters, stderr, &[])
}

/// [`serve_database`] with these environment variables set.
pub fn serve_database_with(
    dir: &std::path::Path,
    database: &str,
    kubeconfig: &std::path::Path,
    clusters: &[(&str, &str)],
    stderr: Stdio,
    env: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = format!("listen = \"127.0.0.1:{port}\"\ndatabase_url = \"{database}\"\n");
    for (name, context) in clusters {
        config.push_str(&format!(
            "[[clusters]]\nname = \"{name}\"\nkubeconfig = \"{}\"\ncontext = \"{context}\"\n",
            kubeconfig.display(),
        ));
    }
    let path = dir.join("lookout.toml");
    std::fs::write(&path, config).unwrap();
    let child = lookout()
        .arg("serve")
        .arg("--config")
        .arg(&path)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    (child, format!("http://127.0.0.1:{port}"))
}

/// The JSON body of a GET.
async fn get_json(url: &str) -> Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

/// A gauge of `/metrics` without labels.
fn gauge(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name} in /metrics"))
        .parse()
        .unwrap()
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

pub async fn wait_http_ok(url: &str) {
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

/// Stops `lookout serve` (started with its stderr piped) with SIGTERM, checks that it ended
/// well, and returns what it logged.
async fn stop_and_read_log(child: &mut tokio::process::Child) -> String {
    let mut stderr = child.stderr.take().unwrap();
    let status = terminate_within(child, Duration::from_secs(5)).await;
    assert!(status.success(), "{status:?}");
    let mut log = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut log)
        .await
        .unwrap();
    log
}

pub async fn terminate_within(
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
    let (fleet, token) = start_fleet(2).await;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base) = serve_fleet(&fleet, dir.path(), &dir.path().join("l.db"));
    wait_http_ok(&format!("{base}/readyz")).await;
    let clusters = get_json(&format!("{base}/api/v1/clusters")).await;
    assert_eq!(clusters["items"].as_array().unwrap().len(), 2);
    // The binary allocates with jemalloc and reports its heap.
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let heap = gauge(&metrics, "lookout_heap_bytes");
    assert!(
        (100_000..1_000_000_000).contains(&heap),
        "an implausible heap: {heap} bytes"
    );
    let resident = gauge(&metrics, "lookout_heap_resident_bytes");
    assert!(resident >= heap, "resident {resident} < allocated {heap}");
    let status = terminate_within(&mut child, Duration::from_secs(5)).await;
    assert!(status.success(), "{status:?}");
    token.cancel();
}

#[tokio::test(flavor = "multi_thread")]
async fn not_ready_while_syncing_is_not_logged_as_an_error() {
    // An API server that accepts connections and never answers: the first sync waits.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    crate::helpers::write_kubeconfig(&kc, "silent", silent.local_addr().unwrap());
    let (mut child, base) = serve(
        dir.path(),
        &dir.path().join("l.db"),
        &kc,
        &[("silent", "silent")],
        Stdio::piped(),
    );
    let http = reqwest::Client::new();
    let mut not_ready = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while not_ready < 3 && Instant::now() < deadline {
        if let Ok(r) = http.get(format!("{base}/readyz")).send().await {
            assert_eq!(r.status(), 503, "ready with a cluster that never answered");
            // Without sign-in, a loopback caller sees every cluster: it is named.
            assert_eq!(
                r.text().await.unwrap(),
                "not ready: waiting for the first sync of silent"
            );
            not_ready += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(not_ready, 3, "/readyz never answered");
    let log = stop_and_read_log(&mut child).await;
    // The expected 503 is an answer, not a failure of the server.
    assert!(!log.contains("response failed"), "{log}");
    assert!(!log.contains("ERROR"), "{log}");
    drop(silent);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_cluster_is_logged_when_its_state_changes_not_on_every_retry() {
    // A port nobody listens on: every request of every kind is refused at once, and the
    // watchers retry with backoff (from 0.8 s) the whole time.
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    crate::helpers::write_kubeconfig(&kc, "gone", refused);
    let (mut child, base) = serve(
        dir.path(),
        &dir.path().join("l.db"),
        &kc,
        &[("gone", "gone")],
        Stdio::piped(),
    );
    wait_http_ok(&format!("{base}/readyz")).await;
    // Until every kind has failed twice (each retried at least once), within 20 s.
    let deadline = Instant::now() + Duration::from_secs(20);
    let failures = loop {
        let metrics = reqwest::get(format!("{base}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let failures: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("lookout_watch_errors_total{cluster=\"gone\"} "))
            .unwrap()
            .parse()
            .unwrap();
        if failures >= 24 {
            break failures;
        }
        assert!(
            Instant::now() < deadline,
            "every kind retried: {failures} failures"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let log = stop_and_read_log(&mut child).await;
    let loud: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    // The state change (connecting → failed) and the first failure; the next reminder comes
    // after a minute.
    assert!(
        (1..=2).contains(&loud.len()),
        "{failures} failures logged as {} lines:\n{log}",
        loud.len()
    );
    assert!(log.contains("cluster sync state changed"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_scale_generators_fleet_is_healthy_and_cached_in_its_own_arena() {
    let (fleet, token) = start_fleet(1).await;
    let made = kubesim::sim::scale::populate(&fleet.clusters[0].cluster, 4, 400);
    assert_eq!(made.ingresses, 400);
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base) = serve_fleet(&fleet, dir.path(), &dir.path().join("l.db"));
    wait_http_ok(&format!("{base}/readyz")).await;
    // What benchmarks call a healthy fleet is one: served, issued, nothing to report.
    let findings = get_json(&format!("{base}/api/v1/findings")).await;
    assert_eq!(findings["total"], 0, "{findings}");
    let ingresses = get_json(&format!("{base}/api/v1/ingresses?per_page=1")).await;
    assert_eq!(ingresses["total"], 400);
    // The views live in the cache's arena: 400 Ingresses, Certificates and requests take
    // well over 200 KB there (about 1 KB each), and the arena is part of the heap.
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let cache = gauge(&metrics, "lookout_heap_cache_bytes");
    let heap = gauge(&metrics, "lookout_heap_bytes");
    assert!(cache > 200_000, "the cache arena holds {cache} bytes");
    assert!(cache < heap, "cache arena {cache} >= heap {heap}");
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
    let mut kubeconfig = None;
    while kubeconfig.is_none() {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("the demo prints its kubeconfig")
            .unwrap()
            .unwrap();
        kubeconfig = line
            .split("kubeconfig for kubectl: ")
            .nth(1)
            .map(|p| std::path::PathBuf::from(p.trim()));
    }
    let kubeconfig = kubeconfig.unwrap();
    assert!(
        kubeconfig.exists(),
        "the printed kubeconfig exists: {kubeconfig:?}"
    );
    // Keep reading what the demo prints, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    wait_http_ok(&format!("{url}/readyz")).await;
    let clusters: Value = reqwest::get(format!("{url}/api/v1/clusters"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = clusters["items"].as_array().unwrap();
    let states: Vec<(&str, &str)> = items
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        vec![
            ("zrh-prod", "synced"),
            ("gva-prod", "synced"),
            ("lab-dev", "synced"),
            ("fra-edge", "failed")
        ]
    );
    let board = reqwest::get(format!("{url}/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(board.contains("Demo: a simulated fleet"));

    // Every rule happens somewhere — but the two that need history; a challenge stuck
    // without a reason (cert-manager always says why a challenge waits — its self-check, a
    // present error, the propagation check — so that takes a challenge controller that
    // stopped working on it); and challenges queued for a slot, which takes more than
    // cert-manager's 60 in flight at once. The demo stages none of these; the server tests
    // do.
    // The demo's policy fails outright (policy.not-ready); a policy that is Ready yet misses
    // Ingresses, or holds the annotation at another value, is staged by the server and unit
    // tests.
    let expected: Vec<&str> = lookout_app::model::Rule::ALL
        .iter()
        .map(|r| r.id())
        .filter(|r| {
            !matches!(
                *r,
                "acme.rate-limit-budget"
                    | "tailscale.cert-budget"
                    | "acme.challenge-stuck"
                    | "acme.challenges-queued"
                    | "policy.missing-coverage"
                    | "policy.conflicts-with-fix"
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let findings: Value = reqwest::get(format!("{url}/api/v1/findings?per_page=1000"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let seen: Vec<&str> = findings["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap())
            .collect();
        let missing: Vec<&&str> = expected.iter().filter(|r| !seen.contains(r)).collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "rules never seen in the demo: {missing:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // The host whose Ingress moved to a new Secret after the shared listener refused its
    // updates: clients get the old certificate, and the finding says why.
    // The probe sees the host on its own round: waited for, like the rules above.
    loop {
        let careers: Value = reqwest::get(format!(
            "{url}/api/v1/findings?cluster=zrh-prod&rule=probe.wrong-certificate&per_page=100"
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        let told = careers["items"].as_array().unwrap().iter().any(|f| {
            f["name"] == "careers-2027-tls"
                && f["message"]
                    .as_str()
                    .unwrap()
                    .contains("shared listener of this cluster refuses updates")
        });
        if told {
            break;
        }
        assert!(Instant::now() < deadline, "{careers:#}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // Severity is harm to clients: most of the demo's problems are renewals failing while
    // the old certificate still serves, so at most a third are critical — besides the
    // Gateway tenant, whose three listeners are broken for their clients by design and whose
    // status page waits for a first certificate that cannot be issued.
    let problems: Value = reqwest::get(format!("{url}/api/v1/problems?per_page=100"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = problems["items"].as_array().unwrap();
    let gateway = |p: &&Value| p["root"]["namespace"] == "hooli-gateway";
    let critical_gateways = items
        .iter()
        .filter(gateway)
        .filter(|p| p["urgency"]["severity"] == "critical")
        .count();
    assert_eq!(critical_gateways, 4, "{problems:#}");
    let rest: Vec<&Value> = items.iter().filter(|p| !gateway(p)).collect();
    let critical = rest
        .iter()
        .filter(|p| p["urgency"]["severity"] == "critical")
        .count();
    assert!(
        rest.len() >= 20 && critical * 3 <= rest.len(),
        "{critical} of {} problems critical",
        rest.len()
    );

    // Prerequisites first: no problem is rooted at something a symptom of it explains
    // (a cause ranked to be fixed before the root's, or any cause under a symptom root).
    use lookout_app::model::rule::{Part, Rule};
    let rank = |id: &str| match Rule::parse(id).map(|r| r.info().part) {
        Some(Part::Cause(n)) => i32::from(n) + 100,
        Some(Part::Symptom(n)) => i32::from(n),
        _ => -1,
    };
    for p in items {
        let root = p["root"]["rule"].as_str().unwrap();
        for s in p["symptoms"].as_array().unwrap() {
            let symptom = s["rule"].as_str().unwrap();
            assert!(
                rank(symptom) < 100 || rank(symptom) <= rank(root),
                "problem {} is rooted at {root} under {symptom}, which comes first",
                p["id"]
            );
        }
    }

    // Lookout's own fix on a failing Ingress, one press: the annotations, then what the
    // issuance needs — under zrh-prod's default issuer (the self-check on) the challenge
    // waits in flight, so the in-flight Order is annotated (a renew for a Certificate in
    // backoff, a restart for a request that cannot be re-solved); it is issued within a
    // minute of real time.
    let http = reqwest::Client::new();
    let fix: Value = http
        .post(format!(
            "{url}/api/v1/ingresses/zrh-prod/acme-shop/shop/edit-in-place"
        ))
        .json(&json!({"dry_run": false}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(fix["outcome"], "ok", "{fix}");
    let last = &fix["steps"][2];
    assert!(
        last["kind"] == "Order"
            || last["kind"] == "CertificateRequest"
            || last["change"].as_str().unwrap().contains("Issuing=True"),
        "the fix ends by re-solving, restarting or renewing the issuance: {fix}"
    );
    let fixed_at = Instant::now();
    loop {
        let cert: Value = reqwest::get(format!(
            "{url}/api/v1/certificates/zrh-prod/acme-shop/shop-tls"
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        if cert["certificate"]["ready"]["status"] == "True" {
            break;
        }
        assert!(
            fixed_at.elapsed() < Duration::from_secs(75),
            "shop-tls not issued a minute after the fix: {cert}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // A renewal stuck in flight (the self-check fails for ever, the old certificate still
    // served): the fix's last step annotates the in-flight Order, cert-manager replaces the
    // pending challenge with one solved in place, and it is issued — the Certificate's first
    // revision issued here, from the same request.
    let fix: Value = http
        .post(format!(
            "{url}/api/v1/ingresses/zrh-prod/acme-blog/preview/edit-in-place"
        ))
        .json(&json!({"dry_run": false}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(fix["outcome"], "ok", "{fix}");
    assert_eq!(fix["steps"][2]["kind"], "Order", "{fix}");
    assert!(
        fix["steps"][2]["message"]
            .as_str()
            .is_some_and(|m| m.contains("replaced the pending challenge")),
        "{fix}"
    );
    let fixed_at = Instant::now();
    loop {
        let cert: Value = reqwest::get(format!(
            "{url}/api/v1/certificates/zrh-prod/acme-blog/preview-tls"
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        if cert["certificate"]["ready"]["status"] == "True"
            && cert["certificate"]["revision"].as_i64().is_some()
        {
            break;
        }
        assert!(
            fixed_at.elapsed() < Duration::from_secs(60),
            "preview-tls not renewed a minute after the fix: {cert}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let status = terminate_within(&mut child, Duration::from_secs(5)).await;
    assert!(status.success(), "{status:?}");
}

/// `lookout migrate-db` copies a SQLite history into PostgreSQL with a line per table, and a
/// second run, into the same target, writes nothing and still succeeds.
#[tokio::test]
async fn migrate_db_copies_a_sqlite_history_into_postgresql() {
    let Some(postgres) = crate::testdb::postgres_url().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}", dir.path().join("lookout.db").display());
    let db = store::Db::open(&sqlite).await.unwrap();
    for i in 0..3 {
        sqlx::query("INSERT INTO audit_log (at, actor, action, cluster, namespace, kind, name, dry_run, outcome) VALUES ('2026-06-01T09:00:00.000Z', 'sue', 'renew', 'zrh', 'shop', 'Certificate', $1, 0, 'ok')")
            .bind(format!("c{i}"))
            .execute(&db.writer)
            .await
            .unwrap();
    }
    db.close().await;
    let run = || async {
        lookout()
            .args(["migrate-db", "--from", &sqlite, "--to", &postgres])
            .output()
            .await
            .unwrap()
    };
    let first = run().await;
    let (out, err) = (
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr),
    );
    assert!(first.status.success(), "{out}{err}");
    assert!(
        err.contains("audit_log: 3 of 3 rows read, 3 written"),
        "{err}"
    );
    assert!(out.contains("copied 3 rows"), "{out}");
    let again = run().await;
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("copied 0 rows"));
    let target = store::Db::open(&postgres).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM audit_log")
        .fetch_one(&target.reader)
        .await
        .unwrap();
    assert_eq!(n, 3);
    // Copying another history into it is refused, with the reason.
    let other = tempfile::tempdir().unwrap();
    let other = format!("sqlite://{}", other.path().join("other.db").display());
    let db = store::Db::open(&other).await.unwrap();
    sqlx::query("INSERT INTO audit_log (at, actor, action, cluster, namespace, kind, name, dry_run, outcome) VALUES ('2026-07-01T09:00:00.000Z', 'bob', 'renew', 'gva', 'web', 'Certificate', 'w', 0, 'ok')")
        .execute(&db.writer)
        .await
        .unwrap();
    db.close().await;
    let refused = lookout()
        .args(["migrate-db", "--from", &other, "--to", &postgres])
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("already holds a different history"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    target.close().await;
}
