//! Page handlers: parse, read through the ports, render, set the status.

use axum::extract::{Path, RawQuery, State};
use axum::http::Uri;
use axum::response::Html;
use lookout_app::components::{Nav, Shell, SyncLine};
use lookout_app::model::ObjectKey;
use lookout_app::pages;

use super::{query, AppError, AppState};

/// The frame of every page. The change counter is read before the page's data, so a change
/// that lands while the page renders makes the live script fetch it again.
fn shell(state: &AppState) -> Shell {
    let rev = state.registry.revision();
    let sync = state
        .fleet()
        .clusters(&state.scope())
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
        search: String::new(),
        rev,
        script: Some(super::assets::LIVE_SCRIPT.href()),
        sync,
    }
}

pub async fn board(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let q = query::finding_query(raw.as_deref())?;
    let scope = state.scope();
    let clusters = state.fleet().clusters(&scope);
    let findings = state.fleet().findings(&scope, &q);
    Ok(Html(pages::board::page(&shell(&state), clusters, findings)))
}

pub async fn clusters(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    query::parse(raw.as_deref(), &[])?;
    let clusters = state.fleet().clusters(&state.scope());
    Ok(Html(pages::clusters::page(&shell(&state), clusters)))
}

pub async fn ingresses(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let q = query::ingress_query(raw.as_deref())?;
    let scope = state.scope();
    let names = state
        .fleet()
        .clusters(&scope)
        .into_iter()
        .map(|c| c.name)
        .collect();
    let page = state.fleet().ingresses(&scope, &q);
    Ok(Html(pages::ingresses::page(
        &shell(&state),
        &q,
        names,
        page,
    )))
}

pub async fn ingress(
    State(state): State<AppState>,
    Path((cluster, namespace, name)): Path<(String, String, String)>,
) -> Result<Html<String>, AppError> {
    let detail = state.ingress_detail(&ObjectKey {
        cluster,
        namespace,
        name,
    })?;
    Ok(Html(pages::ingress_detail::page(&shell(&state), detail)))
}

pub async fn certificates(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let q = query::certificate_query(raw.as_deref())?;
    let page = state.fleet().certificates(&state.scope(), &q);
    Ok(Html(pages::certificates::page(&shell(&state), &q, page)))
}

pub async fn certificate(
    State(state): State<AppState>,
    Path((cluster, namespace, name)): Path<(String, String, String)>,
) -> Result<Html<String>, AppError> {
    let detail = state.certificate_detail(&ObjectKey {
        cluster,
        namespace,
        name,
    })?;
    Ok(Html(pages::certificate_detail::page(
        &shell(&state),
        detail,
    )))
}

pub async fn challenges(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let (visible, page, per_page) = super::api::visible_challenges(&state, raw.as_deref()).await?;
    let failures = pages::challenges::failures_by_reason(&visible);
    Ok(Html(pages::challenges::page(
        &shell(&state),
        failures,
        lookout_app::model::Page::of(visible, page, per_page),
    )))
}

pub async fn rate_limits(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    query::parse(raw.as_deref(), &[])?;
    Ok(Html(pages::rate_limits::page(
        &shell(&state),
        super::api::visible_budgets(&state),
    )))
}

pub async fn not_found(uri: Uri) -> AppError {
    AppError::NotFound(format!("There is no page at {}.", uri.path()))
}
