//! Two `lookout serve` processes sharing one PostgreSQL database and one kubesim: both
//! watch and write what they see, each Challenge transition is recorded once, a preview made
//! on one is shown by the other, a form from one is taken by the other, and killing one replica (SIGKILL) in the middle of a storm
//! of transitions loses nothing the other saw.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::binary::{serve_database_with, start_fleet, wait_http_ok};

/// Challenges per storm.
const CHALLENGES: usize = 25;

/// Creates Challenges `{prefix}-{i}` and moves each through pending to valid; after
/// `kill_after` of them, runs `kill`.
fn storm(cluster: &kubesim::Cluster, prefix: &str, kill_after: Option<(usize, &mut dyn FnMut())>) {
    let rt = cluster
        .resolve("acme.cert-manager.io", "challenges")
        .unwrap();
    let status = kubesim::WriteOpts {
        status: true,
        ..kubesim::WriteOpts::system()
    };
    let mut kill_after = kill_after;
    for i in 0..CHALLENGES {
        let name = format!("{prefix}-{i}");
        cluster
            .create(
                &rt,
                Some("default"),
                json!({"metadata": {"name": name},
                       "spec": {"dnsName": format!("{name}.example.com"), "type": "HTTP-01"}}),
                &kubesim::WriteOpts::system(),
            )
            .unwrap();
        for s in [
            json!({"state": "pending", "processing": true, "presented": true}),
            json!({"state": "valid", "processing": false, "presented": false,
                   "reason": "Successfully authorized domain"}),
        ] {
            cluster
                .merge_patch(
                    &rt,
                    Some("default"),
                    &name,
                    &json!({ "status": s }),
                    &status,
                )
                .unwrap();
        }
        if let Some((after, kill)) = kill_after.as_mut() {
            if i + 1 == *after {
                kill();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every Challenge's recorded states, in order, by name.
async fn recorded(db: &lookout_server::store::Db) -> BTreeMap<String, Vec<String>> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.name, t.state FROM challenge_transitions t JOIN challenges c ON c.id = t.challenge_id \
         ORDER BY c.name, t.id",
    )
    .fetch_all(&db.reader)
    .await
    .unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, state) in rows {
        out.entry(name).or_default().push(state);
    }
    out
}

/// Waits until every Challenge of `prefix` has reached `valid` in the database.
async fn wait_recorded(
    db: &lookout_server::store::Db,
    prefix: &str,
) -> BTreeMap<String, Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = recorded(db).await;
        let done = (0..CHALLENGES).all(|i| {
            all.get(&format!("{prefix}-{i}"))
                .is_some_and(|s| s.last().map(String::as_str) == Some("valid"))
        });
        if done {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "the {prefix} storm was not recorded within 60 s: {all:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_record_each_transition_once_and_one_survives_the_others_kill() {
    let Some(url) = crate::testdb::postgres_url().await else {
        return;
    };
    let (fleet, token) = start_fleet(1).await;
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let kubeconfig = dirs[0].path().join("kubeconfig");
    fleet.write_kubeconfig(&kubeconfig).unwrap();
    let log = |i: usize| Stdio::from(std::fs::File::create(dirs[i].path().join("log")).unwrap());
    let clusters = [("one", "sim-1")];
    // The same session key for both, as the postgres-replicas overlay gives them.
    let key = [(
        "LOOKOUT_AUTH_SESSION_KEY",
        "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDEyMw==",
    )];
    let (mut first, first_base) =
        serve_database_with(dirs[0].path(), &url, &kubeconfig, &clusters, log(0), &key);
    let (mut second, second_base) =
        serve_database_with(dirs[1].path(), &url, &kubeconfig, &clusters, log(1), &key);
    wait_http_ok(&format!("{first_base}/readyz")).await;
    wait_http_ok(&format!("{second_base}/readyz")).await;
    let db = lookout_server::store::Db::open(&url).await.unwrap();
    let cluster = fleet.clusters[0].cluster.clone();

    // Both replicas see every change and both write: each is recorded once.
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || storm(&c, "calm", None))
        .await
        .unwrap();
    let all = wait_recorded(&db, "calm").await;
    for i in 0..CHALLENGES {
        assert_eq!(
            all[&format!("calm-{i}")],
            vec!["", "pending", "valid"],
            "calm-{i}: each state once, in order"
        );
    }

    // A preview made on one replica is shown by the other.
    let rt = cluster.resolve("networking.k8s.io", "ingresses").unwrap();
    cluster
        .create(
            &rt,
            Some("default"),
            crate::helpers::ingress("web", json!({"cert-manager.io/cluster-issuer": "le"})),
            &kubesim::WriteOpts::system(),
        )
        .unwrap();
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let preview: serde_json::Value = loop {
        let r = http
            .post(format!(
                "{first_base}/api/v1/ingresses/one/default/web/edit-in-place"
            ))
            .json(&json!({"dry_run": true}))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            break r.json().await.unwrap();
        }
        assert!(Instant::now() < deadline, "no preview: {}", r.status());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let id = preview["id"].as_str().unwrap();
    let elsewhere = http
        .get(format!("{second_base}/api/v1/actions/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        elsewhere.status(),
        200,
        "the other replica shows the preview"
    );
    let elsewhere: serde_json::Value = elsewhere.json().await.unwrap();
    assert_eq!(elsewhere["steps"], preview["steps"]);
    assert_eq!(elsewhere["dry_run"], true);

    // A form from a page of one replica is taken by the other (the same key reads its CSRF
    // cookie), and the preview page it leads to is shown by the first.
    let (browser, csrf) = crate::actions::browser_at(&first_base).await;
    let posted = browser
        .post(format!("{second_base}/actions"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", &second_base)
        .body(format!(
            "csrf={csrf}&action=edit-in-place&cluster=one&namespace=default&name=web&mode=preview"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 303, "the other replica takes the form");
    let location = posted.headers()["location"].to_str().unwrap().to_string();
    let page = browser
        .get(format!("{first_base}{location}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Preview (dry run)"));

    // The first replica is killed in the middle of a storm: the second recorded everything.
    let pid = first.id().expect("the first replica runs");
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || {
        let mut kill = || {
            // SAFETY: kill(2) with a pid of our own child and a valid signal.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        };
        storm(&c, "storm", Some((CHALLENGES / 2, &mut kill)))
    })
    .await
    .unwrap();
    let status = first.wait().await.unwrap();
    assert!(!status.success(), "the first replica was killed");
    let all = wait_recorded(&db, "storm").await;
    for i in 0..CHALLENGES {
        assert_eq!(
            all[&format!("storm-{i}")],
            vec!["", "pending", "valid"],
            "storm-{i}: nothing lost, nothing twice"
        );
    }
    // The survivor serves the whole history.
    let page: serde_json::Value =
        reqwest::get(format!("{second_base}/api/v1/challenges?per_page=1"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    assert_eq!(page["total"], 2 * CHALLENGES);
    second.kill().await.unwrap();
    db.close().await;
    token.cancel();
}
