//! The accept loop. axum's own `serve` has no limits: a client sending half a request
//! header, or keeping an idle connection, held it forever, and any number of connections
//! were accepted. Here (hyper's connection builder, as `serve` uses it, with a timer):
//!
//! - a request's header must arrive within `http.header_timeout`; the same clock runs while
//!   a kept-alive HTTP/1 connection waits for its next request, so idle connections close
//!   after it too (hyper starts it whenever it waits for a request head);
//! - HTTP/2 connections are pinged and closed when the client stops answering;
//! - at most `http.max_connections` are open: beyond, the loop stops accepting and new
//!   connections wait in the kernel's backlog until one closes (logged once a minute).
//!
//! Each connection's peer address is handed to the handlers as axum's `ConnectInfo`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::HttpConfig;

/// How often an HTTP/2 connection is pinged, and how long an answer may take.
const H2_PING: Duration = Duration::from_secs(30);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// Serves `router` on `listener` until `stop`, then lets open requests finish (the caller
/// bounds how long it waits).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &HttpConfig,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_PING)
        .keep_alive_timeout(H2_PING_TIMEOUT);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut last_full: Option<tokio::time::Instant> = None;
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if last_full.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    tracing::warn!(
                        max_connections = limits.max_connections,
                        "every connection slot is taken (http.max_connections): new connections wait"
                    );
                    last_full = Some(tokio::time::Instant::now());
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
                    _ = stop.cancelled() => break,
                }
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let service = router.clone().map_request(
            move |mut request: axum::extract::Request<hyper::body::Incoming>| {
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(peer));
                request
            },
        );
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service))
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
