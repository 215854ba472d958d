//! The axum router, built from one route table ([`routes`]): server-rendered pages, the
//! action forms, the `/api/v1` JSON API with its SSE stream, sign-in, `/metrics`, health
//! endpoints and the static assets; sign-in, request-metrics, compression, tracing and
//! timeout layers around them. [`serve`] is the accept loop with the connection limits.

mod actions;
mod api;
mod assets;
mod error;
pub(crate) mod events;
mod export;
mod listen;
mod lists;
mod load;
mod metrics;
mod pages;
mod query;
mod rejections;
pub(crate) mod session;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use lookout_app::ports::FleetReader;
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;

use crate::auth::Caller;
use crate::clusters::Registry;

pub(crate) use error::{error_shell, ApiError, AppError};
pub(crate) use events::Streams;
pub(crate) use listen::serve;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub registry: Arc<Registry>,
    /// The fleet's change counter (live updates).
    pub changes: crate::fleet::Changes,
    /// The fleet's Let's Encrypt budgets.
    pub budgets: Arc<crate::fleet::Budgets>,
    /// The history, read within the caller's scope.
    pub history: crate::store::reads::HistoryStore,
    /// Whether the database takes the writers' writes (banner, `/metrics`).
    pub storage: Arc<crate::store::writer::Health>,
    /// Request counts and latencies for `/metrics`.
    pub http: Arc<metrics::HttpMetrics>,
    /// Open live-update streams, capped per identity and in total.
    pub streams: Arc<events::Streams>,
    /// Shown on every page (e.g. that sign-in is off).
    pub banner: Option<String>,
    /// `[support] contact`.
    pub support: Option<String>,
    /// Cancelled at shutdown; ends the live-update streams so the server can drain.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Fixes, undo, renew and bulk runs.
    pub actions: Arc<crate::actions::Actions>,
    /// Sign-in, roles and scopes.
    pub auth: Arc<crate::auth::Auth>,
    /// Where signing out is kept across restarts.
    pub ended_sessions: crate::store::sessions::EndedSessions,
    /// What the probe's last round cost and found.
    pub probes: Arc<crate::probe::worker::ProbeStatus>,
}

impl AppState {
    /// The fleet as the pages read it.
    pub fn fleet(&self) -> &dyn FleetReader {
        self.registry.as_ref()
    }
}

/// The stylesheet URL with its version.
pub(crate) fn stylesheet_href() -> String {
    assets::STYLESHEET.href()
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<AppState>, caller: Caller) -> Response {
    if state.registry.ready() {
        return (StatusCode::OK, "ready").into_response();
    }
    // Anyone may ask (probes send no credentials): an anonymous caller gets the status
    // only; a caller who identifies (an API token, a signed-in admin) learns which of the
    // clusters they may see are still pending.
    let pending = state.registry.pending_seen(&caller.view);
    let text = if pending.is_empty() {
        "not ready: waiting for the first sync of the clusters".to_string()
    } else {
        format!(
            "not ready: waiting for the first sync of {}",
            pending.join(", ")
        )
    };
    (StatusCode::SERVICE_UNAVAILABLE, Expected, text).into_response()
}

/// Marks a 5xx response as an expected answer rather than a failure of the server (`/readyz`
/// while clusters sync), so the request log does not report it as an error on every start.
#[derive(Debug, Clone, Copy)]
struct Expected;

impl axum::response::IntoResponseParts for Expected {
    type Error = std::convert::Infallible;

    fn into_response_parts(
        self,
        mut res: axum::response::ResponseParts,
    ) -> Result<axum::response::ResponseParts, Self::Error> {
        res.extensions_mut().insert(self);
        Ok(res)
    }
}

/// tower-http's classification of server errors, except responses marked [`Expected`].
#[derive(Debug, Clone, Copy)]
struct Failures;

impl tower_http::classify::ClassifyResponse for Failures {
    type FailureClass = tower_http::classify::ServerErrorsFailureClass;
    type ClassifyEos = tower_http::classify::NeverClassifyEos<Self::FailureClass>;

    fn classify_response<B>(
        self,
        res: &axum::http::Response<B>,
    ) -> tower_http::classify::ClassifiedResponse<Self::FailureClass, Self::ClassifyEos> {
        if res.extensions().get::<Expected>().is_some() {
            return tower_http::classify::ClassifiedResponse::Ready(Ok(()));
        }
        tower_http::classify::ServerErrorsAsFailures::new().classify_response(res)
    }

    fn classify_error<E: std::fmt::Display + 'static>(self, error: &E) -> Self::FailureClass {
        tower_http::classify::ServerErrorsAsFailures::new().classify_error(error)
    }
}

/// One route: its path, the methods it answers, and the handlers.
pub struct Route {
    pub path: &'static str,
    pub methods: &'static [&'static str],
    handler: axum::routing::MethodRouter<AppState>,
}

fn route(
    path: &'static str,
    methods: &'static [&'static str],
    handler: axum::routing::MethodRouter<AppState>,
) -> Route {
    Route {
        path,
        methods,
        handler,
    }
}

/// A route that takes no query parameter: any is a 400 naming it, as on the routes that
/// take some (`query::read`), rather than ignored.
fn no_query(r: Route) -> Route {
    Route {
        handler: r
            .handler
            .layer(axum::middleware::from_fn(rejections::refuse_query)),
        ..r
    }
}

/// Every route of the application. The router is built from this table, and the tenancy
/// test walks it, so a route added later cannot escape that test.
pub fn routes() -> Vec<Route> {
    const GET: &[&str] = &["GET"];
    const POST: &[&str] = &["POST"];
    vec![
        route("/", GET, get(lists::page::<lists::Problems>)),
        route("/findings", GET, get(lists::page::<lists::Findings>)),
        route("/clusters", GET, get(pages::clusters)),
        route("/ingresses", GET, get(lists::page::<lists::Ingresses>)),
        no_query(route(
            "/ingresses/{cluster}/{namespace}/{name}",
            GET,
            get(pages::ingress),
        )),
        route(
            "/certificates",
            GET,
            get(lists::page::<lists::Certificates>),
        ),
        no_query(route(
            "/certificates/{cluster}/{namespace}/{name}",
            GET,
            get(pages::certificate),
        )),
        route("/issuers", GET, get(lists::page::<lists::Issuers>)),
        no_query(route(
            "/issuers/{cluster}/{namespace}/{name}",
            GET,
            get(pages::issuer),
        )),
        route("/gateways", GET, get(lists::page::<lists::Gateways>)),
        no_query(route(
            "/gateways/{cluster}/{namespace}/{name}",
            GET,
            get(pages::gateway),
        )),
        route("/policies", GET, get(lists::page::<lists::Policies>)),
        no_query(route(
            "/policies/{cluster}/{namespace}/{name}",
            GET,
            get(pages::policy),
        )),
        route("/challenges", GET, get(lists::page::<lists::Challenges>)),
        route("/rate-limits", GET, get(lists::page::<lists::Budgets>)),
        route(
            "/rate-limits/forecast",
            GET,
            get(lists::page::<lists::Forecast>),
        ),
        route("/audit", GET, get(lists::page::<lists::Audit>)),
        route("/search", GET, get(pages::search)),
        route("/actions", POST, post(actions::post_action)),
        no_query(route("/actions/{id}", GET, get(actions::action_page))),
        route("/api/v1/clusters", GET, get(api::clusters)),
        route("/api/v1/findings", GET, get(lists::api::<lists::Findings>)),
        route("/api/v1/problems", GET, get(lists::api::<lists::Problems>)),
        route(
            "/api/v1/challenges",
            GET,
            get(lists::api::<lists::Challenges>),
        ),
        route(
            "/api/v1/rate-limits",
            GET,
            get(lists::api::<lists::Budgets>),
        ),
        route(
            "/api/v1/rate-limits/forecast",
            GET,
            get(lists::api::<lists::Forecast>),
        ),
        route("/api/v1/audit", GET, get(lists::api::<lists::Audit>)),
        route("/api/v1/probes", GET, get(lists::api::<lists::Probes>)),
        route("/api/v1/probes.csv", GET, get(lists::csv::<lists::Probes>)),
        route(
            "/api/v1/findings.csv",
            GET,
            get(lists::csv::<lists::Findings>),
        ),
        route(
            "/api/v1/problems.csv",
            GET,
            get(lists::csv::<lists::Problems>),
        ),
        route(
            "/api/v1/ingresses.csv",
            GET,
            get(lists::csv::<lists::Ingresses>),
        ),
        route(
            "/api/v1/certificates.csv",
            GET,
            get(lists::csv::<lists::Certificates>),
        ),
        route(
            "/api/v1/issuers.csv",
            GET,
            get(lists::csv::<lists::Issuers>),
        ),
        route("/api/v1/issuers", GET, get(lists::api::<lists::Issuers>)),
        route(
            "/api/v1/challenges.csv",
            GET,
            get(lists::csv::<lists::Challenges>),
        ),
        route(
            "/api/v1/rate-limits.csv",
            GET,
            get(lists::csv::<lists::Budgets>),
        ),
        route(
            "/api/v1/rate-limits/forecast.csv",
            GET,
            get(lists::csv::<lists::Forecast>),
        ),
        route("/api/v1/audit.csv", GET, get(lists::csv::<lists::Audit>)),
        route(
            "/api/v1/certificates",
            GET,
            get(lists::api::<lists::Certificates>),
        ),
        no_query(route(
            "/api/v1/certificates/{cluster}/{namespace}/{name}",
            GET,
            get(api::certificate),
        )),
        no_query(route(
            "/api/v1/issuers/{cluster}/{namespace}/{name}",
            GET,
            get(api::issuer),
        )),
        route("/api/v1/gateways", GET, get(lists::api::<lists::Gateways>)),
        route(
            "/api/v1/gateways.csv",
            GET,
            get(lists::csv::<lists::Gateways>),
        ),
        no_query(route(
            "/api/v1/gateways/{cluster}/{namespace}/{name}",
            GET,
            get(api::gateway),
        )),
        route("/api/v1/policies", GET, get(lists::api::<lists::Policies>)),
        route(
            "/api/v1/policies.csv",
            GET,
            get(lists::csv::<lists::Policies>),
        ),
        no_query(route(
            "/api/v1/policies/{cluster}/{namespace}/{name}",
            GET,
            get(api::policy),
        )),
        route(
            "/api/v1/ingresses",
            GET,
            get(lists::api::<lists::Ingresses>),
        ),
        no_query(route(
            "/api/v1/ingresses/{cluster}/{namespace}/{name}",
            GET,
            get(api::ingress),
        )),
        no_query(route("/api/v1/events", GET, get(events::stream))),
        route(
            "/api/v1/ingresses/{cluster}/{namespace}/{name}/edit-in-place",
            &["POST", "DELETE"],
            post(actions::api_edit_in_place).delete(actions::api_undo_edit_in_place),
        ),
        no_query(route(
            "/api/v1/certificates/{cluster}/{namespace}/{name}/renew",
            POST,
            post(actions::api_renew),
        )),
        no_query(route(
            "/api/v1/certificates/{cluster}/{namespace}/{name}/restart",
            POST,
            post(actions::api_restart),
        )),
        no_query(route(
            "/api/v1/bulk/edit-in-place",
            POST,
            post(actions::api_bulk_edit_in_place),
        )),
        no_query(route(
            "/api/v1/bulk/renew",
            POST,
            post(actions::api_bulk_renew),
        )),
        no_query(route("/api/v1/actions/{id}", GET, get(actions::api_action))),
        route(
            "/api/v1/{*rest}",
            &["GET", "POST", "DELETE"],
            get(api::not_found)
                .post(api::not_found)
                .delete(api::not_found),
        ),
        route("/auth/login", GET, get(session::login)),
        route("/auth/callback", GET, get(session::callback)),
        route("/auth/logout", POST, post(session::logout)),
        route("/auth/demo", POST, post(session::switch_demo_identity)),
        no_query(route("/auth/signed-out", GET, get(session::signed_out))),
        route(
            assets::STYLESHEET.path(),
            GET,
            get(|q| async move { assets::STYLESHEET.respond(q) }),
        ),
        route(
            assets::LIVE_SCRIPT.path(),
            GET,
            get(|q| async move { assets::LIVE_SCRIPT.respond(q) }),
        ),
        no_query(route("/metrics", GET, get(metrics::render))),
        route(
            assets::FAVICON.path(),
            GET,
            get(|q| async move { assets::FAVICON.respond(q) }),
        ),
        route(
            "/favicon.ico",
            GET,
            get(|q| async move { assets::FAVICON.respond(q) }),
        ),
        no_query(route("/healthz", GET, get(healthz))),
        no_query(route("/readyz", GET, get(readyz))),
    ]
}

/// The whole HTTP application.
pub(crate) fn router(state: AppState) -> Router {
    routes()
        .into_iter()
        .fold(Router::new(), |r, route| r.route(route.path, route.handler))
        .fallback(pages::not_found)
        .layer(axum::extract::DefaultBodyLimit::max(rejections::MAX_BODY))
        .layer(axum::middleware::from_fn(rejections::explain))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            session::authenticate,
        ))
        // Before anyone reads them.
        .layer(axum::middleware::from_fn(rejections::header_limits))
        .layer(axum::middleware::from_fn_with_state(
            state.http.clone(),
            metrics::track,
        ))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new(
            tower_http::classify::SharedClassifier::new(Failures),
        ))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .with_state(state)
}
