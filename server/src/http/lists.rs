//! Each list view defined once: its query, how its answer and every one of its rows are read
//! through the caller's view, and (for those with a page) how the page renders them. The
//! page, `/api/v1/<name>` and `/api/v1/<name>.csv` are the three generic handlers below over
//! that one definition, so a filter added to a list's query reaches all three at once and
//! they cannot disagree.

use std::future::Future;

use axum::extract::{RawQuery, State};
use axum::response::{Html, Response};
use axum::Json;
use lookout_app::model::View;
use serde::Serialize;

use super::error::ApiError;
use super::export::download;
use super::session::CsrfToken;
use super::{AppError, AppState};
use crate::auth::Caller;

mod budgets;
mod history;
mod judged;
mod objects;

pub(super) use budgets::{Budgets, Forecast};
pub(super) use history::{Audit, Challenges};
pub(super) use judged::{Findings, Probes, Problems};
pub(super) use objects::{Certificates, Gateways, Ingresses, Issuers, Policies};

/// One list view.
pub(super) trait List: 'static {
    /// Its name in `/api/v1/<name>.csv`'s download, `lookout-<name>.csv`.
    const NAME: &'static str;
    type Query: Clone + Send + Sync;
    type Row: Serialize + Send;
    /// What `/api/v1/<name>` answers: a page of rows, with what the list tells beside them.
    type Answer: Serialize + Send;

    /// The query from the query string; a 400 naming a bad parameter.
    fn query(state: &AppState, raw: Option<&str>) -> Result<Self::Query, AppError>;

    /// The JSON answer, through `view`.
    fn answer(
        state: &AppState,
        view: &View,
        q: &Self::Query,
    ) -> impl Future<Output = Result<Self::Answer, AppError>> + Send;

    /// Every row the query selects (its paging aside), and whether a history list stopped
    /// at the export's limit.
    fn every(
        state: &AppState,
        view: &View,
        q: &Self::Query,
    ) -> impl Future<Output = Result<(Vec<Self::Row>, bool), AppError>> + Send;
}

/// A list with a page of its own.
pub(super) trait ListPage: List {
    fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &Self::Query,
    ) -> impl Future<Output = Result<String, AppError>> + Send;
}

/// `GET /api/v1/<name>`.
pub(super) async fn api<L: List>(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Json<L::Answer>, ApiError> {
    let q = L::query(&state, raw.as_deref())?;
    Ok(Json(L::answer(&state, &caller.view, &q).await?))
}

/// `GET /api/v1/<name>.csv`: every row, the same filters.
pub(super) async fn csv<L: List>(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let q = L::query(&state, raw.as_deref())?;
    let (rows, truncated) = L::every(&state, &caller.view, &q).await?;
    download(L::NAME, &rows, truncated)
}

/// The list's page.
pub(super) async fn page<L: ListPage>(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    RawQuery(raw): RawQuery,
) -> Result<Html<String>, AppError> {
    let q = L::query(&state, raw.as_deref())?;
    Ok(Html(L::page(&state, &caller, &csrf, &q).await?))
}

/// A list response without paging.
#[derive(Serialize)]
pub(super) struct Items<T> {
    pub items: Vec<T>,
}
