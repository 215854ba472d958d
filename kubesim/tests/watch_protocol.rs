//! The watch protocol on the wire: synthetic ADDED events, bookmarks, `timeoutSeconds`, and
//! 410 Gone as an ERROR event inside the stream, as a real API server sends them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kubesim::{Clock, Fleet, FleetOptions, WriteOpts};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

async fn start() -> (Fleet, tokio_util::sync::DropGuard) {
    let token = CancellationToken::new();
    let mut opts = FleetOptions::numbered(1);
    opts.install_crds = false;
    let fleet = Fleet::start(&opts, Arc::new(Clock::Real), token.clone())
        .await
        .unwrap();
    (fleet, token.drop_guard())
}

fn add_configmap(fleet: &Fleet, name: &str) {
    let c = &fleet.clusters[0].cluster;
    let rt = c.resolve("", "configmaps").unwrap();
    c.create(
        &rt,
        Some("default"),
        json!({"metadata": {"name": name}}),
        &WriteOpts::system(),
    )
    .unwrap();
}

/// Reads newline-delimited events until the stream ends or `until` returns true.
async fn read_events(
    mut resp: reqwest::Response,
    limit: Duration,
    until: impl Fn(&[Value]) -> bool,
) -> (Vec<Value>, bool) {
    let deadline = Instant::now() + limit;
    let mut buf = Vec::new();
    let mut events = Vec::new();
    loop {
        let chunk = match tokio::time::timeout_at(deadline.into(), resp.chunk()).await {
            Err(_) => return (events, false),
            Ok(c) => c.unwrap(),
        };
        let Some(chunk) = chunk else {
            return (events, true);
        };
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            events.push(serde_json::from_slice(&line).unwrap());
        }
        if until(&events) {
            return (events, false);
        }
    }
}

#[tokio::test]
async fn watch_from_zero_sends_existing_objects_then_changes() {
    let (fleet, _g) = start().await;
    add_configmap(&fleet, "before");
    let url = format!(
        "{}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0",
        fleet.clusters[0].url()
    );
    let resp = reqwest::get(url).await.unwrap();
    assert_eq!(resp.status(), 200);
    // The answer's head comes once the watch is registered: a change from now on is in it.
    let reader = tokio::spawn(read_events(resp, Duration::from_secs(5), |e| e.len() >= 2));
    add_configmap(&fleet, "after");
    let (events, _) = reader.await.unwrap();
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "before");
    assert_eq!(events[1]["object"]["metadata"]["name"], "after");
    assert_eq!(events[1]["object"]["apiVersion"], "v1");
}

#[tokio::test]
async fn bookmarks_arrive_and_timeout_seconds_ends_the_stream() {
    let (fleet, _g) = start().await;
    let rv = fleet.clusters[0].cluster.resource_version();
    let url = format!(
        "{}/apis/networking.k8s.io/v1/ingresses?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=3",
        fleet.clusters[0].url()
    );
    let started = Instant::now();
    let (events, ended) = read_events(
        reqwest::get(url).await.unwrap(),
        Duration::from_secs(10),
        |_| false,
    )
    .await;
    assert!(ended, "the stream ended by itself");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(2900) && elapsed < Duration::from_secs(6),
        "{elapsed:?}"
    );
    let bookmark = events
        .iter()
        .find(|e| e["type"] == "BOOKMARK")
        .expect("a bookmark");
    assert_eq!(bookmark["object"]["kind"], "Ingress");
    assert!(
        bookmark["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= rv
    );
}

#[tokio::test]
async fn a_too_old_resource_version_is_a_410_error_event() {
    let (fleet, _g) = start().await;
    add_configmap(&fleet, "a");
    let old = fleet.clusters[0].cluster.resource_version();
    fleet.clusters[0].cluster.expire_watches();
    let url = format!(
        "{}/api/v1/configmaps?watch=true&resourceVersion={old}",
        fleet.clusters[0].url()
    );
    let (events, ended) = read_events(
        reqwest::get(url).await.unwrap(),
        Duration::from_secs(5),
        |_| false,
    )
    .await;
    assert!(ended);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["kind"], "Status");
    assert_eq!(events[0]["object"]["code"], 410);
    assert_eq!(events[0]["object"]["reason"], "Expired");
    // A fresh list hands out a version that can be watched from again.
    let list: Value = reqwest::get(format!("{}/api/v1/configmaps", fleet.clusters[0].url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let url = format!(
        "{}/api/v1/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=1",
        fleet.clusters[0].url()
    );
    let (events, ended) = read_events(
        reqwest::get(url).await.unwrap(),
        Duration::from_secs(5),
        |_| false,
    )
    .await;
    assert!(ended && events.is_empty(), "{events:?}");
}

#[tokio::test]
async fn errors_are_status_objects() {
    let (fleet, _g) = start().await;
    let base = fleet.clusters[0].url();
    let resp = reqwest::get(format!(
        "{base}/api/v1/namespaces/default/configmaps/missing"
    ))
    .await
    .unwrap();
    assert_eq!(resp.status(), 404);
    let status: Value = resp.json().await.unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"missing\" not found");
    let unknown = reqwest::get(format!("{base}/apis/example.com/v1/widgets"))
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let client = reqwest::Client::new();
    let no_manager = client
        .patch(format!("{base}/api/v1/namespaces/default/configmaps/x"))
        .header("content-type", "application/apply-patch+yaml")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(no_manager.status(), 422);
    let body: Value = no_manager.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().contains("fieldManager"));
    let bad_ns = client
        .post(format!("{base}/api/v1/namespaces/nope/configmaps"))
        .json(&json!({"metadata": {"name": "x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_ns.status(), 404);
}
