//! Live updates: the SSE stream at `/api/v1/events`, its coalescing, the revision pages
//! carry for the live script, and that open streams do not hold up shutdown.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

use crate::helpers::*;

/// Reads Server-Sent Events from a response, one `change` message at a time.
struct Events {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Events {
    async fn open(app: &TestApp) -> Events {
        let response = app.get("/api/v1/events").await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "an SSE stream"
        );
        Events {
            body: response
                .bytes_stream()
                .map(|r| r.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next `change` message, or None when the stream ended or `within` passed.
    async fn next(&mut self, within: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let is_change = block.lines().any(|l| l == "event: change");
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .map(|d| serde_json::from_str(d).expect("the data is JSON"));
                if let (true, Some(data)) = (is_change, data) {
                    return Some(data);
                }
                continue;
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(Some(Err(_)) | None) | Err(_) => return None,
            }
        }
    }
}

fn ingress(name: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name},
           "spec": {"rules": [{"host": format!("{name}.example.com")}]}})
}

fn page_rev(html: &str) -> u64 {
    let at = html
        .find("data-rev=\"")
        .expect("the page carries its revision")
        + 10;
    html[at..at + html[at..].find('"').unwrap()]
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_reaches_the_stream_and_moves_the_revision_pages_carry() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let html = app.get("/ingresses").await.text().await.unwrap();
    assert!(html.contains("<script src=\"/assets/live.js?v="));
    assert!(
        html.contains("id=\"sync\""),
        "the sync strip is on every page"
    );
    let rendered_at = page_rev(&html);

    let mut events = Events::open(&app).await;
    let first = events
        .next(Duration::from_secs(2))
        .await
        .expect("a first message at once");
    assert_eq!(first["clusters"][0]["name"], "zrh-prod");
    assert_eq!(first["clusters"][0]["state"], "synced");
    let first_rev = first["rev"].as_u64().unwrap();
    assert!(first_rev >= rendered_at);

    create(
        &app,
        0,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        ingress("shop"),
    );
    let next = events
        .next(Duration::from_secs(5))
        .await
        .expect("the change is announced");
    assert!(next["rev"].as_u64().unwrap() > first_rev);
    let html = app.get("/ingresses").await.text().await.unwrap();
    assert!(html.contains("shop.example.com"));
    assert!(page_rev(&html) > rendered_at);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_changes_is_coalesced_to_at_most_four_messages_a_second() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let mut events = Events::open(&app).await;
    events
        .next(Duration::from_secs(2))
        .await
        .expect("first message");

    let burst = {
        let cluster = app.fleet.clusters[0].cluster.clone();
        std::thread::spawn(move || {
            let rt = cluster.resolve("networking.k8s.io", "ingresses").unwrap();
            let started = Instant::now();
            let mut n = 0;
            while started.elapsed() < Duration::from_millis(1500) {
                cluster
                    .create(
                        &rt,
                        Some("default"),
                        ingress(&format!("burst-{n}")),
                        &kubesim::WriteOpts::system(),
                    )
                    .unwrap();
                n += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            n
        })
    };
    let mut arrivals = Vec::new();
    while let Some(_msg) = events.next(Duration::from_secs(1)).await {
        arrivals.push(Instant::now());
    }
    let created = burst.join().unwrap();
    assert!(created > 100, "the burst made {created} changes");
    assert!(arrivals.len() >= 2, "the burst was announced");
    for pair in arrivals.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(200),
            "messages {gap:?} apart: not coalesced"
        );
    }
    assert!(
        arrivals.len() as u128
            <= (arrivals[arrivals.len() - 1] - arrivals[0]).as_millis() / 250 + 2,
        "{} messages for {created} changes",
        arrivals.len()
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn open_streams_end_at_shutdown_instead_of_holding_it_up() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let mut events = Events::open(&app).await;
    events
        .next(Duration::from_secs(2))
        .await
        .expect("first message");
    let started = Instant::now();
    app.app_token.cancel();
    assert!(
        events.next(Duration::from_secs(4)).await.is_none(),
        "the stream ends"
    );
    let server = app.server;
    tokio::time::timeout(Duration::from_secs(4), server)
        .await
        .expect("the server stops without waiting for the drain deadline")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_live_script_is_served_with_a_versioned_immutable_url() {
    let app = spawn_app(&["zrh-prod"]).await;
    let html = app.get("/clusters").await.text().await.unwrap();
    let at = html.find("/assets/live.js?v=").unwrap();
    let href = &html[at..at + html[at..].find('"').unwrap()];
    let script = app.get(href).await;
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(
        script.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    let body = script.text().await.unwrap();
    assert!(body.contains("new EventSource(\"/api/v1/events\")"));
    assert_eq!(
        app.get("/assets/live.js").await.headers()["cache-control"],
        "no-cache"
    );
    app.stop().await;
}

/// Live-update streams are capped per identity (a tab each, 32): one more is a 429 that
/// says why, and closing one makes room.
#[tokio::test(flavor = "multi_thread")]
async fn streams_are_capped_per_identity() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let mut open = Vec::new();
    for _ in 0..32 {
        let r = app.get("/api/v1/events").await;
        assert_eq!(r.status(), 200);
        open.push(r);
    }
    let refused = app.get("/api/v1/events").await;
    assert_eq!(refused.status(), 429);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_requests");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("32 live-update streams"));
    drop(open.pop());
    // The server notices the closed connection when it next writes (a keep-alive or a
    // message); poke it with a change and wait until a stream fits again.
    app.eventually("a slot frees once a stream is closed", || async {
        add_ingress(&app, 0, &format!("poke-{}", uuid::Uuid::new_v4().simple()));
        app.get("/api/v1/events").await.status() == 200
    })
    .await;
    app.stop().await;
}
