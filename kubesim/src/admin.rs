//! Fault injection over HTTP: the middleware that applies a cluster's [`Faults`] to its API
//! requests, and the admin endpoint on the cluster's own port — `GET/PUT /kubesim/faults`,
//! `POST /kubesim/faults/drop-watches` (ends open watches) and
//! `POST /kubesim/faults/reset-versions` (hands out every resource version again from 1, as
//! an API server restarted on a restored etcd).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::faults::Faults;
use crate::status::ApiError;
use crate::store::Cluster;

fn is_api(path: &str) -> bool {
    path.starts_with("/api") || path.starts_with("/openapi") || path == "/version"
}

/// The middleware that applies the faults to API requests (the admin endpoint is exempt).
pub async fn apply(State(cluster): State<Arc<Cluster>>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    if !is_api(&path) {
        return next.run(req).await;
    }
    let f = cluster.faults();
    if f.blackhole {
        std::future::pending::<()>().await;
    }
    if f.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(f.latency_ms)).await;
    }
    if f.error_500 {
        return ApiError::new(
            500,
            "InternalError",
            "Internal error occurred: kubesim fault injection (error_500)",
        )
        .into_response();
    }
    let query = req.uri().query().unwrap_or_default();
    let watch = query
        .split('&')
        .any(|kv| kv == "watch=true" || kv == "watch=1");
    if watch && f.gone_on_watch {
        let ev = json!({"type": "ERROR", "object": ApiError::gone("too old resource version: kubesim fault injection (gone_on_watch)").to_status()});
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            format!("{ev}\n"),
        )
            .into_response();
    }
    if let (false, Some(after), true) = (
        watch,
        f.throttle_lists_retry_after,
        req.method() == axum::http::Method::GET,
    ) {
        // As API priority and fairness answers: the header and the Status's retryAfterSeconds.
        cluster.count_throttled();
        let mut resp = ApiError::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        )
        .with_details(json!({"retryAfterSeconds": after}))
        .into_response();
        resp.headers_mut().insert(header::RETRY_AFTER, after.into());
        return resp;
    }
    next.run(req).await
}

pub async fn get(State(cluster): State<Arc<Cluster>>) -> Json<Faults> {
    Json(cluster.faults())
}

pub async fn put(State(cluster): State<Arc<Cluster>>, Json(faults): Json<Faults>) -> Json<Faults> {
    cluster.set_faults(faults.clone());
    Json(faults)
}

pub async fn drop_watches(State(cluster): State<Arc<Cluster>>) -> StatusCode {
    cluster.drop_watches();
    StatusCode::NO_CONTENT
}

pub async fn reset_versions(State(cluster): State<Arc<Cluster>>) -> StatusCode {
    cluster.reset_resource_versions();
    StatusCode::NO_CONTENT
}
