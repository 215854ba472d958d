//! `/api/v1` JSON handlers: thin — parse, read through the ports, return view types.

use axum::extract::{Path, RawQuery, State};
use axum::http::Uri;
use axum::Json;
use lookout_app::model::history::AuditEntry;
use lookout_app::model::{ClusterView, Finding, ObjectKey, Page};
use lookout_app::ports::{
    AuditQuery, CertificateDetail, CertificateRow, ChallengeQuery, IngressDetail, IngressRow,
};
use serde::Serialize;

use super::error::ApiError;
use super::{query, AppError, AppState};
use crate::auth::Caller;
use crate::store::audit;
use crate::store::history::{self, ChallengeRecord, TimelineEntry};
use lookout_app::model::budget::Budget;
use lookout_app::model::Scope;

/// A list response.
#[derive(Serialize)]
pub struct Items<T> {
    pub items: Vec<T>,
}

pub async fn clusters(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Items<ClusterView>>, ApiError> {
    query::parse(raw.as_deref(), &[])?;
    Ok(Json(Items {
        items: state.fleet().clusters(&caller.scope),
    }))
}

pub async fn findings(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<Finding>>, ApiError> {
    let q = query::finding_query(raw.as_deref())?;
    let all = state.fleet().findings(&caller.scope, &q);
    Ok(Json(Page::of(all, q.page, q.per_page)))
}

pub async fn ingresses(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<IngressRow>>, ApiError> {
    let q = query::ingress_query(raw.as_deref())?;
    Ok(Json(state.fleet().ingresses(&caller.scope, &q)))
}

pub async fn ingress(
    State(state): State<AppState>,
    caller: Caller,
    Path((cluster, namespace, name)): Path<(String, String, String)>,
) -> Result<Json<IngressDetail>, ApiError> {
    Ok(Json(state.ingress_detail(
        &caller.scope,
        &ObjectKey {
            cluster,
            namespace,
            name,
        },
    )?))
}

pub async fn certificates(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<CertificateRow>>, ApiError> {
    let q = query::certificate_query(raw.as_deref())?;
    Ok(Json(state.fleet().certificates(&caller.scope, &q)))
}

/// A Certificate's chain plus what the history remembers about it.
#[derive(Serialize)]
pub struct CertificateWithHistory {
    #[serde(flatten)]
    pub detail: CertificateDetail,
    pub timeline: Vec<TimelineEntry>,
}

pub async fn certificate(
    State(state): State<AppState>,
    caller: Caller,
    Path((cluster, namespace, name)): Path<(String, String, String)>,
) -> Result<Json<CertificateWithHistory>, ApiError> {
    let key = ObjectKey {
        cluster,
        namespace,
        name,
    };
    let detail = state.certificate_detail(&caller.scope, &key)?;
    let timeline =
        history::certificate_timeline(&state.history, &key.cluster, &key.namespace, &key.name)
            .await
            .map_err(AppError::storage)?;
    Ok(Json(CertificateWithHistory { detail, timeline }))
}

/// The challenge history, with the failures among the matching rows grouped by reason.
#[derive(Serialize)]
pub struct ChallengeHistory {
    #[serde(flatten)]
    pub page: Page<ChallengeRecord>,
    /// Failed challenges by classified reason (redirect to HTTPS, 404, …), most frequent first.
    pub failures_by_reason: Vec<ReasonCount>,
}

/// How many failed challenges share a classified reason.
#[derive(Serialize)]
pub struct ReasonCount {
    pub reason: &'static str,
    pub count: usize,
}

pub async fn challenges(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<ChallengeHistory>, ApiError> {
    let (page, failures, _) = visible_challenges(&state, &caller.scope, raw.as_deref()).await?;
    Ok(Json(ChallengeHistory {
        page,
        failures_by_reason: failures
            .into_iter()
            .map(|(reason, count)| ReasonCount { reason, count })
            .collect(),
    }))
}

/// The requested page of the challenge history the caller may see, with its rows'
/// transitions; the failures among every matching row by reason; and the query. SQLite
/// filters, counts, groups and pages, so a request reads one page of rows however long the
/// history.
pub async fn visible_challenges(
    state: &AppState,
    scope: &Scope,
    raw: Option<&str>,
) -> Result<
    (
        Page<ChallengeRecord>,
        Vec<(&'static str, usize)>,
        ChallengeQuery,
    ),
    AppError,
> {
    let q = query::challenge_query(raw, (state.registry.now)())?;
    let filter = history::ChallengeFilter::of(&q, scope);
    let pool = &state.history;
    let (total, failures, mut items) = tokio::try_join!(
        history::count_challenges(pool, &filter),
        history::failures_by_reason(pool, &filter),
        history::challenge_rows(pool, &filter),
    )
    .map_err(AppError::storage)?;
    history::fill_transitions(pool, &mut items)
        .await
        .map_err(AppError::storage)?;
    let page = Page {
        items,
        total,
        page: q.page,
        per_page: q.per_page,
    };
    Ok((page, failures, q))
}

/// The requested page of the audit rows the caller may see, newest first, with the query.
pub async fn visible_audit(
    state: &AppState,
    scope: &Scope,
    raw: Option<&str>,
) -> Result<(Page<AuditEntry>, AuditQuery), AppError> {
    let q = query::audit_query(raw, (state.registry.now)())?;
    let filter = audit::AuditFilter::of(&q, scope);
    let (total, items) = tokio::try_join!(
        audit::count(&state.history, &filter),
        audit::list(&state.history, &filter),
    )
    .map_err(AppError::storage)?;
    let page = Page {
        items,
        total,
        page: q.page,
        per_page: q.per_page,
    };
    Ok((page, q))
}

pub async fn audit(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Page<AuditEntry>>, ApiError> {
    let (page, _) = visible_audit(&state, &caller.scope, raw.as_deref()).await?;
    Ok(Json(page))
}

/// The Let's Encrypt budgets the caller may see (see [`rate_limits`]).
pub fn visible_budgets(state: &AppState, scope: &Scope) -> Vec<Budget> {
    state
        .registry
        .budgets()
        .into_iter()
        .filter(|b| {
            b.latest
                .as_ref()
                .is_some_and(|o| scope.sees_cluster_wide(&o.cluster))
        })
        .collect()
}

/// The Let's Encrypt budgets. They are fleet-wide (Let's Encrypt counts across accounts),
/// so only a caller who sees every namespace of the budget's latest cluster gets it.
pub async fn rate_limits(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<Items<Budget>>, ApiError> {
    query::parse(raw.as_deref(), &[])?;
    Ok(Json(Items {
        items: visible_budgets(&state, &caller.scope),
    }))
}

pub async fn not_found(uri: Uri) -> ApiError {
    AppError::NotFound(format!("no API endpoint at {}", uri.path())).into()
}
