//! The lists of what Lookout keeps: the challenge history and the audit log.

use lookout_app::model::history::{AuditEntry, ChallengeRecord};
use lookout_app::model::read::views::paging::MAX_PER_PAGE;
use lookout_app::model::read::views::{AuditQuery, ChallengeQuery};
use lookout_app::model::{Page, View};
use lookout_app::pages;
use serde::Serialize;

use super::{List, ListPage};
use crate::auth::Caller;
use crate::http::export::every_page;
use crate::http::pages::{cluster_names, shell};
use crate::http::session::CsrfToken;
use crate::http::{load, query, AppError, AppState};

/// The challenge history, with the failures among the matching rows grouped by reason.
#[derive(Serialize)]
pub(in crate::http) struct ChallengeHistory {
    #[serde(flatten)]
    pub page: Page<ChallengeRecord>,
    /// Failed challenges by class (redirected, 404 not found, …), most frequent first.
    pub failures_by_reason: Vec<ReasonCount>,
}

/// How many failed challenges share a classified reason.
#[derive(Serialize)]
pub(in crate::http) struct ReasonCount {
    pub reason: &'static str,
    pub count: usize,
}

/// The challenge history Lookout keeps (Kubernetes deletes Challenges).
pub(in crate::http) struct Challenges;

impl List for Challenges {
    const NAME: &'static str = "challenges";
    type Query = ChallengeQuery;
    type Row = ChallengeRecord;
    type Answer = ChallengeHistory;

    fn query(state: &AppState, raw: Option<&str>) -> Result<ChallengeQuery, AppError> {
        query::challenge_query(raw, (state.registry.now)())
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &ChallengeQuery,
    ) -> Result<ChallengeHistory, AppError> {
        let history = load::challenges(state, view, q).await?;
        Ok(ChallengeHistory {
            page: history.page,
            failures_by_reason: history
                .failures
                .into_iter()
                .map(|(reason, count)| ReasonCount { reason, count })
                .collect(),
        })
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &ChallengeQuery,
    ) -> Result<(Vec<ChallengeRecord>, bool), AppError> {
        every_page(|page| {
            let q = ChallengeQuery {
                page,
                per_page: MAX_PER_PAGE,
                ..q.clone()
            };
            async move { Ok(load::challenges(state, view, &q).await?.page.items) }
        })
        .await
    }
}

impl ListPage for Challenges {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &ChallengeQuery,
    ) -> Result<String, AppError> {
        let history = load::challenges(state, &caller.view, q).await?;
        Ok(pages::challenges::page(
            &shell(state, caller, csrf),
            q,
            cluster_names(state, caller),
            history.failures,
            history.page,
        ))
    }
}

/// The audit log of actions.
pub(in crate::http) struct Audit;

impl List for Audit {
    const NAME: &'static str = "audit";
    type Query = AuditQuery;
    type Row = AuditEntry;
    type Answer = Page<AuditEntry>;

    fn query(state: &AppState, raw: Option<&str>) -> Result<AuditQuery, AppError> {
        query::audit_query(raw, (state.registry.now)())
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &AuditQuery,
    ) -> Result<Page<AuditEntry>, AppError> {
        load::audit(state, view, q).await
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &AuditQuery,
    ) -> Result<(Vec<AuditEntry>, bool), AppError> {
        every_page(|page| {
            let q = AuditQuery {
                page,
                per_page: MAX_PER_PAGE,
                ..q.clone()
            };
            async move { Ok(load::audit(state, view, &q).await?.items) }
        })
        .await
    }
}

impl ListPage for Audit {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &AuditQuery,
    ) -> Result<String, AppError> {
        let page = Self::answer(state, &caller.view, q).await?;
        Ok(pages::audit::page(&shell(state, caller, csrf), q, page))
    }
}
