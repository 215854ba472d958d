//! `/api/v1` JSON handlers: thin — parse, load the view (see [`super::load`], shared with the
//! pages), return it.

use axum::extract::{Path, RawQuery, State};
use axum::http::Uri;
use axum::Json;
use lookout_app::model::budget::Budget;
use lookout_app::model::history::{AuditEntry, ChallengeRecord};
use lookout_app::model::read::views::{
    CertificateDetail, CertificateRow, IngressDetail, IngressRow,
};
use lookout_app::model::timeline::Attempt;
use lookout_app::model::{ClusterName, ClusterView, Finding, Namespace, ObjectKey, Page};
use serde::Serialize;

use super::error::ApiError;
use super::{load, query, AppError, AppState};
use crate::auth::Caller;

/// A list response.
#[derive(Serialize)]
pub(super) struct Items<T> {
    pub items: Vec<T>,
}

pub(super) async fn clusters(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Items<ClusterView>>, ApiError> {
    query::none(raw.as_deref())?;
    Ok(Json(Items {
        items: state.fleet().clusters(&caller.view),
    }))
}

pub(super) async fn findings(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<Finding>>, ApiError> {
    let q = query::finding_query(raw.as_deref())?;
    let all = state.fleet().findings(&caller.view, &q);
    Ok(Json(Page::of(all, q.page, q.per_page)))
}

pub(super) async fn problems(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<lookout_app::model::read::problems::Problems>, ApiError> {
    let q = query::problem_query(raw.as_deref())?;
    Ok(Json(state.fleet().problems(&caller.view, &q)))
}

pub(super) async fn ingresses(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<IngressRow>>, ApiError> {
    let q = query::ingress_query(raw.as_deref())?;
    Ok(Json(load::ingresses(&state, &caller.view, &q)))
}

pub(super) async fn ingress(
    State(state): State<AppState>,
    caller: Caller,
    Path((cluster, namespace, name)): Path<(ClusterName, Namespace, String)>,
) -> Result<Json<IngressDetail>, ApiError> {
    let key = ObjectKey {
        cluster,
        namespace,
        name,
    };
    Ok(Json(load::ingress(&state, &caller.view, &key)?))
}

pub(super) async fn certificates(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<CertificateRow>>, ApiError> {
    let q = query::certificate_query(raw.as_deref())?;
    Ok(Json(load::certificates(&state, &caller.view, &q)))
}

/// One issuer as the caller sees it (`_` as the namespace of a ClusterIssuer); a 404 like
/// a missing object for anything the caller does not see.
pub(super) fn issuer_detail(
    state: &AppState,
    caller: &Caller,
    cluster: &str,
    namespace: &str,
    name: &str,
) -> Result<lookout_app::model::read::issuer::IssuerDetail, AppError> {
    let namespace = (namespace != "_").then_some(namespace);
    super::load::issuer(state, &caller.view, cluster, namespace, name).ok_or_else(|| {
        AppError::NotFound(format!(
            "There is no issuer {name} in {} of cluster {cluster} that you can see.",
            namespace.map_or_else(|| "the cluster".to_string(), |ns| format!("namespace {ns}"))
        ))
    })
}

/// `GET /api/v1/issuers`: every issuer the caller may see, the most severe first.
pub(super) async fn issuers(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<lookout_app::model::read::issuer::IssuerRow>>, ApiError> {
    let q = query::issuer_query(raw.as_deref())?;
    Ok(Json(load::issuers(&state, &caller.view, &q)))
}

/// `GET /api/v1/issuers/{cluster}/{namespace or _}/{name}`: what the issuer page shows.
pub(super) async fn issuer(
    State(state): State<AppState>,
    caller: Caller,
    Path((cluster, namespace, name)): Path<(ClusterName, String, String)>,
) -> Result<Json<lookout_app::model::read::issuer::IssuerDetail>, ApiError> {
    Ok(Json(issuer_detail(
        &state, &caller, &cluster, &namespace, &name,
    )?))
}

/// A Certificate's chain plus what the history remembers about it.
#[derive(Serialize)]
pub(super) struct CertificateWithHistory {
    #[serde(flatten)]
    pub detail: CertificateDetail,
    pub timeline: Vec<Attempt>,
}

pub(super) async fn certificate(
    State(state): State<AppState>,
    caller: Caller,
    Path((cluster, namespace, name)): Path<(ClusterName, Namespace, String)>,
) -> Result<Json<CertificateWithHistory>, ApiError> {
    let key = ObjectKey {
        cluster,
        namespace,
        name,
    };
    let (detail, timeline) = load::certificate(&state, &caller.view, &key).await?;
    Ok(Json(CertificateWithHistory {
        detail,
        timeline: timeline.map_err(AppError::from)?,
    }))
}

/// The challenge history, with the failures among the matching rows grouped by reason.
#[derive(Serialize)]
pub(super) struct ChallengeHistory {
    #[serde(flatten)]
    pub page: Page<ChallengeRecord>,
    /// Failed challenges by class (redirected, 404 not found, …), most frequent first.
    pub failures_by_reason: Vec<ReasonCount>,
}

/// How many failed challenges share a classified reason.
#[derive(Serialize)]
pub(super) struct ReasonCount {
    pub reason: &'static str,
    pub count: usize,
}

pub(super) async fn challenges(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<ChallengeHistory>, ApiError> {
    let q = query::challenge_query(raw.as_deref(), (state.registry.now)())?;
    let history = load::challenges(&state, &caller.view, &q).await?;
    Ok(Json(ChallengeHistory {
        page: history.page,
        failures_by_reason: history
            .failures
            .into_iter()
            .map(|(reason, count)| ReasonCount { reason, count })
            .collect(),
    }))
}

pub(super) async fn audit(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<AuditEntry>>, ApiError> {
    let q = query::audit_query(raw.as_deref(), (state.registry.now)())?;
    Ok(Json(load::audit(&state, &caller.view, &q).await?))
}

/// The Let's Encrypt budgets the caller may see.
pub(super) async fn rate_limits(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Items<Budget>>, ApiError> {
    let q = query::budget_query(raw.as_deref())?;
    Ok(Json(Items {
        items: load::budgets(&state, &caller.view, &q),
    }))
}

/// The next week's issuances against the budgets, per registered domain.
pub(super) async fn forecast(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Items<lookout_app::model::budget::DomainForecast>>, ApiError> {
    let q = query::budget_query(raw.as_deref())?;
    Ok(Json(Items {
        items: load::forecast(&state, &caller.view, &q),
    }))
}

pub(super) async fn not_found(uri: Uri) -> ApiError {
    AppError::NotFound(format!("no API endpoint at {}", uri.path())).into()
}

/// `/api/v1/probes`: what the probe last saw on each visible host × address.
#[derive(Serialize)]
pub(super) struct Probes {
    items: Vec<lookout_app::model::probe::ProbeRow>,
    /// When the last round finished (None: the probe is off or has not finished one).
    checked: Option<chrono::DateTime<chrono::Utc>>,
    /// What the last round cost, for whoever sees the whole fleet.
    #[serde(skip_serializing_if = "Option::is_none")]
    round: Option<Round>,
}

#[derive(Serialize)]
struct Round {
    seconds: f64,
    probed: usize,
    failed: usize,
    refused: usize,
    rounds: u64,
}

pub(super) async fn probes(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Probes>, ApiError> {
    let q = query::probe_query(raw.as_deref())?;
    let items = load::probes(&state, &caller.view, &q);
    let last = state.probes.last.lock().expect("probe status lock").clone();
    Ok(Json(Probes {
        items,
        checked: last.finished,
        round: caller.view.sees_everything().then_some(Round {
            seconds: last.seconds,
            probed: last.probed,
            failed: last.failed,
            refused: last.refused,
            rounds: last.rounds,
        }),
    }))
}
