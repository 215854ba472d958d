//! `/api/v1` JSON handlers of single objects and the clusters: thin — parse, load the view
//! (see [`super::load`], shared with the pages), return it. The lists' JSON is defined with
//! each list in [`super::lists`].

use axum::extract::{Path, RawQuery, State};
use axum::http::Uri;
use axum::Json;
use lookout_app::model::read::views::{CertificateDetail, IngressDetail};
use lookout_app::model::timeline::Attempt;
use lookout_app::model::{ClusterName, ClusterView, Namespace, ObjectKey};
use serde::Serialize;

use super::error::ApiError;
use super::lists::Items;
use super::{load, query, AppError, AppState};
use crate::auth::Caller;

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
        AppError::NotFound(match namespace {
            Some(ns) => format!(
                "There is no Issuer {name} in namespace {ns} of cluster {cluster} that you can see."
            ),
            None => {
                format!("There is no ClusterIssuer {name} in cluster {cluster} that you can see.")
            }
        })
    })
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

/// The policy of a page or `GET /api/v1/policies/...`; a 404 that reads the same whether it
/// does not exist or the caller sees none of it.
pub(super) fn policy_detail(
    state: &AppState,
    caller: &Caller,
    cluster: &str,
    namespace: &str,
    name: &str,
) -> Result<lookout_app::model::read::policies::PolicyDetail, AppError> {
    state
        .fleet()
        .policy(&caller.view, cluster, namespace, name)
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "There is no policy {name} in namespace {namespace} of cluster {cluster} that you can see."
            ))
        })
}

/// `GET /api/v1/policies/{cluster}/{namespace}/{name}`: what the policy's page shows.
pub(super) async fn policy(
    State(state): State<AppState>,
    caller: Caller,
    Path((cluster, namespace, name)): Path<(ClusterName, String, String)>,
) -> Result<Json<lookout_app::model::read::policies::PolicyDetail>, ApiError> {
    Ok(Json(policy_detail(
        &state, &caller, &cluster, &namespace, &name,
    )?))
}

pub(super) fn gateway_detail(
    state: &AppState,
    caller: &Caller,
    cluster: &str,
    namespace: &str,
    name: &str,
) -> Result<lookout_app::model::read::gateways::GatewayDetail, AppError> {
    state
        .fleet()
        .gateway(&caller.view, cluster, namespace, name)
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "There is no Gateway {name} in namespace {namespace} of cluster {cluster} that you can see."
            ))
        })
}

/// `GET /api/v1/gateways/{cluster}/{namespace}/{name}`: what the Gateway's page shows.
pub(super) async fn gateway(
    State(state): State<AppState>,
    caller: Caller,
    Path((cluster, namespace, name)): Path<(ClusterName, Namespace, String)>,
) -> Result<Json<lookout_app::model::read::gateways::GatewayDetail>, ApiError> {
    Ok(Json(gateway_detail(
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

pub(super) async fn not_found(uri: Uri) -> ApiError {
    AppError::NotFound(format!("no API endpoint at {}", uri.path())).into()
}
