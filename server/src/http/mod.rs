//! The axum router: server-rendered pages, the `/api/v1` JSON API, `/metrics`, health
//! endpoints and the stylesheet, with tracing, request-metrics and compression layers.

mod actions;
mod api;
mod assets;
mod error;
mod events;
mod metrics;
mod pages;
mod query;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use lookout_app::model::ObjectKey;
use lookout_app::model::Scope;
use lookout_app::ports::{CertificateDetail, FleetReader, IngressDetail};
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;

use crate::clusters::Registry;

pub use error::AppError;
pub use metrics::HttpMetrics;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub registry: Arc<Registry>,
    /// The read pool of the history database.
    pub history: sqlx::SqlitePool,
    /// Request counts and latencies for `/metrics`.
    pub http: Arc<metrics::HttpMetrics>,
    /// Shown on every page (e.g. that sign-in is off).
    pub banner: Option<String>,
    /// Cancelled at shutdown; ends the live-update streams so the server can drain.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Fixes, undo, renew and bulk runs.
    pub actions: Arc<crate::actions::Actions>,
}

impl AppState {
    /// The fleet as the pages read it.
    pub fn fleet(&self) -> &dyn FleetReader {
        self.registry.as_ref()
    }

    /// One Ingress with its chain, or the 404 that pages and the API share.
    pub fn ingress_detail(&self, key: &ObjectKey) -> Result<IngressDetail, AppError> {
        self.fleet().ingress(&self.scope(), key).ok_or_else(|| {
            AppError::NotFound(format!(
                "There is no Ingress {}/{} in cluster {}.",
                key.namespace, key.name, key.cluster
            ))
        })
    }

    /// One Certificate with its chain, or the 404 that pages and the API share.
    pub fn certificate_detail(&self, key: &ObjectKey) -> Result<CertificateDetail, AppError> {
        self.fleet().certificate(&self.scope(), key).ok_or_else(|| {
            AppError::NotFound(format!(
                "There is no Certificate {}/{} in cluster {}.",
                key.namespace, key.name, key.cluster
            ))
        })
    }

    /// The caller's scope. Sign-in does not exist yet: everyone sees everything.
    pub fn scope(&self) -> Scope {
        Scope::everything()
    }
}

/// The stylesheet URL with its version.
pub fn stylesheet_href() -> String {
    assets::STYLESHEET.href()
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<AppState>) -> Response {
    if state.registry.ready() {
        (StatusCode::OK, "ready").into_response()
    } else {
        let pending = state.registry.pending().join(", ");
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("waiting for the first sync of: {pending}"),
        )
            .into_response()
    }
}

/// The whole HTTP application.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(pages::board))
        .route("/clusters", get(pages::clusters))
        .route("/ingresses", get(pages::ingresses))
        .route(
            "/ingresses/{cluster}/{namespace}/{name}",
            get(pages::ingress),
        )
        .route("/certificates", get(pages::certificates))
        .route("/challenges", get(pages::challenges))
        .route("/rate-limits", get(pages::rate_limits))
        .route("/audit", get(pages::audit))
        .route("/search", get(pages::search))
        .route(
            "/certificates/{cluster}/{namespace}/{name}",
            get(pages::certificate),
        )
        .route("/api/v1/clusters", get(api::clusters))
        .route("/api/v1/findings", get(api::findings))
        .route("/api/v1/challenges", get(api::challenges))
        .route("/api/v1/rate-limits", get(api::rate_limits))
        .route("/api/v1/audit", get(api::audit))
        .route("/api/v1/certificates", get(api::certificates))
        .route(
            "/api/v1/certificates/{cluster}/{namespace}/{name}",
            get(api::certificate),
        )
        .route("/api/v1/ingresses", get(api::ingresses))
        .route(
            "/api/v1/ingresses/{cluster}/{namespace}/{name}",
            get(api::ingress),
        )
        .route(
            "/api/v1/{*rest}",
            get(api::not_found)
                .post(api::not_found)
                .delete(api::not_found),
        )
        .route("/api/v1/events", get(events::stream))
        .route(
            "/api/v1/ingresses/{cluster}/{namespace}/{name}/edit-in-place",
            post(actions::api_edit_in_place).delete(actions::api_undo_edit_in_place),
        )
        .route(
            "/api/v1/certificates/{cluster}/{namespace}/{name}/renew",
            post(actions::api_renew),
        )
        .route(
            "/api/v1/bulk/edit-in-place",
            post(actions::api_bulk_edit_in_place),
        )
        .route("/api/v1/bulk/renew", post(actions::api_bulk_renew))
        .route("/api/v1/actions/{id}", get(actions::api_action))
        .route("/actions", post(actions::post_action))
        .route("/actions/{id}", get(actions::action_page))
        .route(
            assets::STYLESHEET.path(),
            get(|q| async move { assets::STYLESHEET.respond(q) }),
        )
        .route(
            assets::LIVE_SCRIPT.path(),
            get(|q| async move { assets::LIVE_SCRIPT.respond(q) }),
        )
        .route("/metrics", get(metrics::render))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.http.clone(),
            metrics::track,
        ))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .with_state(state)
}
