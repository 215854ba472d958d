//! Page handlers: parse the query, load the view (see [`super::load`], shared with the API),
//! render, set the status.

use axum::extract::{Path, RawQuery, State};
use axum::http::Uri;
use axum::response::Html;
use lookout_app::components::{Nav, Shell, SyncLine, UserInfo};

use super::session::CsrfToken;
use crate::auth::Caller;
use lookout_app::model::read::views::{CertificateQuery, IngressQuery};
use lookout_app::model::{ClusterName, Kind, Namespace, ObjectKey, Page};
use lookout_app::pages;

use super::{load, query, AppError, AppState};

/// The frame of every page. The change counter is read before the page's data, so a change
/// that lands while the page renders makes the live script fetch it again.
pub(super) fn shell(state: &AppState, caller: &Caller, csrf: &CsrfToken) -> Shell {
    shell_of(
        state,
        caller,
        csrf,
        &state.fleet().cluster_list(&caller.view),
    )
}

/// The shell with the clusters the page read already.
pub(super) fn shell_of(
    state: &AppState,
    caller: &Caller,
    csrf: &CsrfToken,
    clusters: &[lookout_app::model::ClusterView],
) -> Shell {
    let rev = super::events::revision(state, caller);
    let sync = clusters
        .iter()
        .map(|c| SyncLine {
            name: c.name.clone(),
            state: c.state.clone(),
            last_sync: c.last_sync,
        })
        .collect();
    Shell {
        title: String::new(),
        active: Nav::None,
        now: (state.registry.now)(),
        stylesheet: super::stylesheet_href(),
        banner: crate::auth::limits::with_unanswered(state.banner.clone(), &caller.view),
        storage: storage_banner(state),
        search: String::new(),
        rev,
        script: Some(super::assets::LIVE_SCRIPT.href()),
        sync,
        actions: !state.actions.read_only() && caller.view.may_act_anywhere(),
        csrf: csrf.0.clone(),
        user: Some(UserInfo {
            name: caller.identity.name.clone(),
            role: caller.view.role().map(|r| r.label()),
            via: caller.identity.via,
        }),
        demo: state
            .auth
            .demo
            .iter()
            .map(|d| (d.name.clone(), d.description.clone()))
            .collect(),
        without_data: false,
        support: state.support.clone(),
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

/// The names of the clusters the caller sees, for the filter forms.
pub(super) fn cluster_names(state: &AppState, caller: &Caller) -> Vec<String> {
    state
        .fleet()
        .clusters(&caller.view)
        .into_iter()
        .map(|c| c.name)
        .collect()
}

pub(super) async fn clusters(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    query::none(raw.as_deref())?;
    let clusters = state.fleet().clusters(&caller.view);
    Ok(Html(pages::clusters::page(
        &shell(&state, &caller, &csrf),
        clusters,
    )))
}

pub(super) async fn ingress(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    Path((cluster, namespace, name)): Path<(ClusterName, Namespace, String)>,
) -> Result<Html<String>, AppError> {
    let key = ObjectKey {
        cluster,
        namespace,
        name,
    };
    let detail = load::ingress(&state, &caller.view, &key)?;
    let problems = load::problems_about(&state, &caller.view, &key, Kind::Ingress);
    // The page shows the live chain even when the history cannot be read.
    let history = load::ingress_history(&state, &caller.view, &detail).await;
    Ok(Html(pages::ingress_detail::page(
        &shell(&state, &caller, &csrf),
        detail,
        problems,
        history,
    )))
}

pub(super) async fn certificate(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    Path((cluster, namespace, name)): Path<(ClusterName, Namespace, String)>,
) -> Result<Html<String>, AppError> {
    let key = ObjectKey {
        cluster,
        namespace,
        name,
    };
    // The page shows the live chain even when the history cannot be read.
    let (detail, timeline) = load::certificate(&state, &caller.view, &key).await?;
    let mut problems = load::problems_about(&state, &caller.view, &key, Kind::Certificate);
    // A problem rooted at its Ingress that stops issuance stops the Certificate's too: the
    // page and renew ask the same question (`offer::stops_issuance`), so the page never
    // offers what the preview would refuse.
    if let Some(ingress) = detail.ingress.as_deref() {
        let of_ingress = ObjectKey {
            name: ingress.to_string(),
            ..key.clone()
        };
        for p in load::problems_about(&state, &caller.view, &of_ingress, Kind::Ingress) {
            if lookout_app::model::read::offer::stops_issuance(
                &p,
                &detail.chain.certificate,
                Some(ingress),
            ) && p.rooted_at(Kind::Ingress, &key.namespace, ingress)
                && !problems.iter().any(|q| q.id == p.id)
            {
                problems.push(p);
            }
        }
    }
    Ok(Html(pages::certificate_detail::page(
        &shell(&state, &caller, &csrf),
        detail,
        problems,
        timeline.map_err(|e| e.0),
    )))
}

/// `/issuers/{cluster}/{namespace or _}/{name}`.
pub(super) async fn issuer(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    Path((cluster, namespace, name)): Path<(ClusterName, String, String)>,
) -> Result<Html<String>, AppError> {
    let detail = super::api::issuer_detail(&state, &caller, &cluster, &namespace, &name)?;
    Ok(Html(pages::issuer::page(
        &shell(&state, &caller, &csrf),
        detail,
    )))
}

pub(super) async fn policy(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    Path((cluster, namespace, name)): Path<(ClusterName, String, String)>,
) -> Result<Html<String>, AppError> {
    let detail = super::api::policy_detail(&state, &caller, &cluster, &namespace, &name)?;
    Ok(Html(pages::policies::detail(
        &shell(&state, &caller, &csrf),
        detail,
    )))
}

/// `/gateways/{cluster}/{namespace}/{name}`: a Gateway's listeners followed to their
/// certificates, with what is wrong and what to do first.
pub(super) async fn gateway(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    Path((cluster, namespace, name)): Path<(ClusterName, Namespace, String)>,
) -> Result<Html<String>, AppError> {
    let detail = super::api::gateway_detail(&state, &caller, &cluster, &namespace, &name)?;
    let key = ObjectKey {
        cluster,
        namespace,
        name,
    };
    let problems = load::problems_about(&state, &caller.view, &key, Kind::Gateway);
    Ok(Html(pages::gateways::detail(
        &shell(&state, &caller, &csrf),
        detail,
        problems,
    )))
}

pub(super) async fn search(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let text = query::search_query(raw.as_deref())?;
    let view = &caller.view;
    let per_page = pages::search::RESULTS_PER_KIND;
    let (ingresses, certificates) = match &text {
        None => (
            Page::of(Vec::new(), 1, per_page),
            Page::of(Vec::new(), 1, per_page),
        ),
        Some(t) => (
            load::ingresses(
                &state,
                view,
                &IngressQuery {
                    q: Some(t.clone()),
                    page: 1,
                    per_page,
                    ..Default::default()
                },
            ),
            load::certificates(
                &state,
                view,
                &CertificateQuery {
                    q: Some(t.clone()),
                    page: 1,
                    per_page,
                    ..Default::default()
                },
            ),
        ),
    };
    let issuers = match &text {
        None => Page::of(Vec::new(), 1, per_page),
        Some(t) => load::issuers(
            &state,
            view,
            &lookout_app::model::read::issuer::IssuerQuery {
                q: Some(t.clone()),
                page: 1,
                per_page,
                ..Default::default()
            },
        ),
    };
    let gateways = match &text {
        None => Page::of(Vec::new(), 1, per_page),
        Some(t) => lookout_app::ports::FleetReader::gateways(
            state.fleet(),
            view,
            &lookout_app::model::read::gateways::GatewayQuery {
                q: Some(t.clone()),
                page: 1,
                per_page,
                ..Default::default()
            },
        ),
    };
    Ok(Html(pages::search::page(
        &shell(&state, &caller, &csrf),
        text,
        ingresses,
        certificates,
        issuers,
        gateways,
    )))
}

pub(super) async fn not_found(uri: Uri) -> AppError {
    AppError::NotFound(format!("There is no page at {}.", uri.path()))
}
