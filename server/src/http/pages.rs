//! Page handlers: parse, read through the ports, render, set the status.

use axum::extract::{Path, RawQuery, State};
use axum::http::Uri;
use axum::response::Html;
use lookout_app::components::{Nav, Shell, SyncLine, UserInfo};

use crate::auth::{Caller, CsrfToken};
use lookout_app::model::ObjectKey;
use lookout_app::pages;

use super::{query, AppError, AppState};

/// The frame of every page. The change counter is read before the page's data, so a change
/// that lands while the page renders makes the live script fetch it again.
pub(super) fn shell(state: &AppState, caller: &Caller, csrf: &CsrfToken) -> Shell {
    let rev = state.registry.revision();
    let sync = state
        .fleet()
        .clusters(&caller.scope)
        .into_iter()
        .map(|c| SyncLine {
            name: c.name,
            state: c.state,
            last_sync: c.last_sync,
        })
        .collect();
    Shell {
        title: String::new(),
        active: Nav::None,
        now: (state.registry.now)(),
        stylesheet: super::stylesheet_href(),
        banner: state.banner.clone(),
        storage: storage_banner(state),
        search: String::new(),
        rev,
        script: Some(super::assets::LIVE_SCRIPT.href()),
        sync,
        actions: !state.actions.read_only() && !caller.act.is_empty(),
        csrf: csrf.0.clone(),
        user: Some(UserInfo {
            name: caller.identity.name.clone(),
            role: caller.identity.access.top_role().map(|r| r.label()),
            via: caller.identity.via,
        }),
        demo: state
            .auth
            .demo
            .iter()
            .map(|d| (d.name.clone(), d.description.clone()))
            .collect(),
    }
}

/// The banner while the database refuses writes: since when, why, and what is held.
fn storage_banner(state: &AppState) -> Option<String> {
    let (failure, held) = state.storage.problem()?;
    let records = if held == 1 {
        "record is"
    } else {
        "records are"
    };
    Some(format!(
        "History is not being saved: the database refuses writes ({}) since {} UTC. {held} {records} held in memory and will be written once it takes writes again; live data is not affected.",
        failure.error,
        failure.since.format("%Y-%m-%d %H:%M:%S"),
    ))
}

pub async fn board(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let q = query::finding_query(raw.as_deref())?;
    let shell = shell(&state, &caller, &csrf);
    let scope = caller.scope.clone();
    let clusters = state.fleet().clusters(&scope);
    let findings = state.fleet().findings(&scope, &q);
    let recent = recent_changes(&state, &scope, shell.now).await;
    Ok(Html(pages::board::page(
        &shell, &q, clusters, findings, recent,
    )))
}

/// The names of the clusters the caller sees, for the filter forms.
fn cluster_names(state: &AppState, caller: &Caller) -> Vec<String> {
    let scope = &caller.scope;
    state
        .registry
        .cluster_names()
        .into_iter()
        .filter(|c| scope.sees_cluster(c))
        .collect()
}

/// How far back the board's "what changed recently" looks, and how many lines it shows.
const RECENT_WINDOW: chrono::Duration = chrono::Duration::hours(24);
const RECENT_LINES: usize = 30;

/// The caller's recent changes; the board still renders when the history cannot be read.
async fn recent_changes(
    state: &AppState,
    scope: &lookout_app::model::Scope,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<lookout_app::model::history::RecentChange>, String> {
    // A caller who sees everything needs only the lines shown; others' are filtered below.
    let limit = if scope.sees_everything() {
        RECENT_LINES as i64
    } else {
        1000
    };
    let rows = crate::store::history::recent_changes(&state.history, now - RECENT_WINDOW, limit)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "could not read the recent changes");
            format!("the history could not be read ({e})")
        })?;
    Ok(rows
        .into_iter()
        .filter(|r| {
            if r.namespace.is_empty() {
                scope.sees_cluster(&r.cluster)
            } else {
                scope.sees(&r.cluster, &r.namespace)
            }
        })
        .take(RECENT_LINES)
        .collect())
}

pub async fn clusters(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    query::parse(raw.as_deref(), &[])?;
    let clusters = state.fleet().clusters(&caller.scope);
    Ok(Html(pages::clusters::page(
        &shell(&state, &caller, &csrf),
        clusters,
    )))
}

pub async fn ingresses(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let q = query::ingress_query(raw.as_deref())?;
    let names = cluster_names(&state, &caller);
    let page = state.fleet().ingresses(&caller.scope, &q);
    Ok(Html(pages::ingresses::page(
        &shell(&state, &caller, &csrf),
        &q,
        names,
        page,
    )))
}

pub async fn ingress(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    Path((cluster, namespace, name)): Path<(String, String, String)>,
) -> Result<Html<String>, AppError> {
    let detail = state.ingress_detail(
        &caller.scope,
        &ObjectKey {
            cluster,
            namespace,
            name,
        },
    )?;
    let history = host_history(&state, &detail.ingress).await;
    Ok(Html(pages::ingress_detail::page(
        &shell(&state, &caller, &csrf),
        detail,
        history,
    )))
}

/// Challenges the history has for an Ingress's hosts in its namespace, newest first; the
/// page still renders when the history cannot be read.
async fn host_history(
    state: &AppState,
    ingress: &lookout_app::model::IngressView,
) -> Result<Vec<lookout_app::model::history::ChallengeRecord>, String> {
    const PER_HOST: i64 = 20;
    let mut rows = Vec::new();
    for host in ingress.hosts.iter() {
        let filter = crate::store::history::ChallengeFilter {
            cluster: Some(ingress.cluster.to_string()),
            namespace: Some(ingress.namespace.to_string()),
            domain: Some(host.to_ascii_lowercase()),
            limit: PER_HOST,
            ..Default::default()
        };
        let found = crate::store::history::challenges(&state.history, &filter)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "could not read the challenge history");
                format!("{e}")
            })?;
        rows.extend(
            found
                .into_iter()
                .filter(|r| r.dns_name == host.to_ascii_lowercase()),
        );
    }
    rows.sort_by(|a, b| b.last_seen.cmp(&a.last_seen));
    Ok(rows)
}

pub async fn certificates(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let q = query::certificate_query(raw.as_deref())?;
    let scope = caller.scope.clone();
    // Every match, for the expiry chart; the table shows one page of them.
    let all = state.fleet().certificates(
        &scope,
        &lookout_app::ports::CertificateQuery {
            page: 1,
            per_page: usize::MAX,
            ..q.clone()
        },
    );
    let expiries = all.items.iter().map(|r| r.certificate.not_after).collect();
    let names = cluster_names(&state, &caller);
    Ok(Html(pages::certificates::page(
        &shell(&state, &caller, &csrf),
        &q,
        names,
        expiries,
        lookout_app::model::Page::of(all.items, q.page, q.per_page),
    )))
}

pub async fn certificate(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    Path((cluster, namespace, name)): Path<(String, String, String)>,
) -> Result<Html<String>, AppError> {
    let key = ObjectKey {
        cluster,
        namespace,
        name,
    };
    let detail = state.certificate_detail(&caller.scope, &key)?;
    // The page shows the live chain even when the history cannot be read.
    let timeline = crate::store::history::certificate_timeline(
        &state.history,
        &key.cluster,
        &key.namespace,
        &key.name,
    )
    .await
    .map_err(|e| e.to_string());
    Ok(Html(pages::certificate_detail::page(
        &shell(&state, &caller, &csrf),
        detail,
        timeline,
    )))
}

pub async fn challenges(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let (page, failures, q) =
        super::api::visible_challenges(&state, &caller.scope, raw.as_deref()).await?;
    Ok(Html(pages::challenges::page(
        &shell(&state, &caller, &csrf),
        &q,
        cluster_names(&state, &caller),
        failures,
        page,
    )))
}

pub async fn audit(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let (page, q) = super::api::visible_audit(&state, &caller.scope, raw.as_deref()).await?;
    Ok(Html(pages::audit::page(
        &shell(&state, &caller, &csrf),
        &q,
        page,
    )))
}

pub async fn search(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let text = query::search_query(raw.as_deref())?;
    let scope = caller.scope.clone();
    let per_page = pages::search::RESULTS_PER_KIND;
    let (ingresses, certificates) = match &text {
        None => (
            lookout_app::model::Page::of(Vec::new(), 1, per_page),
            lookout_app::model::Page::of(Vec::new(), 1, per_page),
        ),
        Some(t) => (
            state.fleet().ingresses(
                &scope,
                &lookout_app::ports::IngressQuery {
                    q: Some(t.clone()),
                    page: 1,
                    per_page,
                    ..Default::default()
                },
            ),
            state.fleet().certificates(
                &scope,
                &lookout_app::ports::CertificateQuery {
                    q: Some(t.clone()),
                    page: 1,
                    per_page,
                    ..Default::default()
                },
            ),
        ),
    };
    Ok(Html(pages::search::page(
        &shell(&state, &caller, &csrf),
        text,
        ingresses,
        certificates,
    )))
}

pub async fn rate_limits(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    query::parse(raw.as_deref(), &[])?;
    Ok(Html(pages::rate_limits::page(
        &shell(&state, &caller, &csrf),
        super::api::visible_budgets(&state, &caller.scope),
    )))
}

pub async fn not_found(uri: Uri) -> AppError {
    AppError::NotFound(format!("There is no page at {}.", uri.path()))
}
