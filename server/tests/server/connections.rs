//! What one client can hold of the server (`[http]`): a half-sent request header and an
//! idle kept-alive connection are closed after `header_timeout`; beyond `max_connections`
//! new connections wait until one closes; live-update streams are capped per identity.
//! Raw TCP, so that nothing (like a client's connection pool) hides what the server does.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::*;

fn limits(header_timeout: Duration, max_connections: usize) -> HttpConfig {
    HttpConfig {
        header_timeout,
        max_connections,
        streams_per_identity: 2,
        streams_total: max_connections.saturating_sub(1).max(1),
    }
}

fn addr(app: &TestApp) -> String {
    app.base.trim_start_matches("http://").to_string()
}

/// Reads until the server closes the connection (Some(bytes read)), or None if it is still
/// open after `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return None,
        }
    }
}

const REQUEST: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

#[tokio::test(flavor = "multi_thread")]
async fn half_sent_headers_and_idle_connections_are_closed_after_the_header_timeout() {
    let app = app_with(&["zrh-prod"])
        .limits(limits(Duration::from_secs(1), 64))
        .await;
    // Half a header: closed after the timeout (and not before).
    let mut slow = TcpStream::connect(addr(&app)).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    assert!(
        closed_within(&mut slow, Duration::from_millis(500))
            .await
            .is_none(),
        "the header timeout does not strike early"
    );
    assert!(
        closed_within(&mut slow, Duration::from_secs(3))
            .await
            .is_some(),
        "a half-sent header is closed after http.header_timeout"
    );
    // A kept-alive connection: answered, then closed once idle for the timeout.
    let mut idle = TcpStream::connect(addr(&app)).await.unwrap();
    idle.write_all(REQUEST).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    let rest = closed_within(&mut idle, Duration::from_secs(3))
        .await
        .expect("an idle kept-alive connection is closed");
    assert!(rest.is_empty(), "nothing more was sent: {rest:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn beyond_max_connections_a_new_connection_waits_until_one_closes() {
    let app = app_with(&["zrh-prod"])
        .limits(limits(Duration::from_secs(30), 2))
        .await;
    let held: Vec<TcpStream> = futures::future::join_all(
        (0..2).map(|_| async { TcpStream::connect(addr(&app)).await.unwrap() }),
    )
    .await;
    // Give the accept loop time to take both.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut third = TcpStream::connect(addr(&app)).await.unwrap();
    third.write_all(REQUEST).await.unwrap();
    let mut buf = [0u8; 1024];
    assert!(
        tokio::time::timeout(Duration::from_secs(1), third.read(&mut buf))
            .await
            .is_err(),
        "a third connection is not served while two are open"
    );
    drop(held);
    let n = tokio::time::timeout(Duration::from_secs(5), third.read(&mut buf))
        .await
        .expect("served once a slot is free")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn live_update_streams_follow_the_configured_cap() {
    let app = app_with(&["zrh-prod"])
        .limits(limits(Duration::from_secs(30), 64))
        .await;
    app.wait_ready().await;
    let mut open = Vec::new();
    for _ in 0..2 {
        let r = app.get("/api/v1/events").await;
        assert_eq!(r.status(), 200);
        open.push(r);
    }
    let third = app.get("/api/v1/events").await;
    assert_eq!(third.status(), 429);
    assert!(third
        .text()
        .await
        .unwrap()
        .contains("already has 2 live-update streams open"));
    drop(open);
    app.eventually("a closed stream frees its slot", || async {
        app.get("/api/v1/events").await.status() == 200
    })
    .await;
    app.stop().await;
}

/// A live-update stream is a response in progress, not an idle connection: the header
/// timeout does not cut it.
#[tokio::test(flavor = "multi_thread")]
async fn a_live_update_stream_outlives_the_header_timeout() {
    use futures::StreamExt;
    let app = app_with(&["zrh-prod"])
        .limits(limits(Duration::from_secs(1), 64))
        .await;
    app.wait_ready().await;
    let mut stream = app.get("/api/v1/events").await.bytes_stream();
    tokio::time::timeout(Duration::from_secs(3), stream.next())
        .await
        .expect("the first message")
        .unwrap()
        .unwrap();
    // Past the header timeout (1 s) with the stream idle: what is tested is that nothing
    // cuts it meanwhile, so the time has to pass.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    add_ingress(&app, 0, "later");
    let next = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("a message after the timeout's length")
        .expect("the stream is still open")
        .unwrap();
    assert!(String::from_utf8_lossy(&next).contains("event: change"));
    app.stop().await;
}
