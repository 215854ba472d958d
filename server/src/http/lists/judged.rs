//! The lists of what the rules judged: the triage board's problems, the findings, and what
//! the probe saw.

use lookout_app::model::probe::ProbeRow;
use lookout_app::model::read::problems::{Problem, Problems as Answered};
use lookout_app::model::read::views::{FindingQuery, ProbeQuery, ProblemQuery};
use lookout_app::model::{Finding, Page, View};
use lookout_app::pages;
use serde::Serialize;

use super::{List, ListPage};
use crate::auth::Caller;
use crate::http::pages::{shell, shell_of};
use crate::http::session::CsrfToken;
use crate::http::{load, query, AppError, AppState};

/// The triage board: problems, most urgent first.
pub(in crate::http) struct Problems;

impl List for Problems {
    const NAME: &'static str = "problems";
    type Query = ProblemQuery;
    type Row = Problem;
    type Answer = Answered;

    fn query(_: &AppState, raw: Option<&str>) -> Result<ProblemQuery, AppError> {
        query::problem_query(raw)
    }

    async fn answer(state: &AppState, view: &View, q: &ProblemQuery) -> Result<Answered, AppError> {
        Ok(state.fleet().problems(view, q))
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &ProblemQuery,
    ) -> Result<(Vec<Problem>, bool), AppError> {
        let q = ProblemQuery {
            page: 1,
            per_page: usize::MAX,
            ..q.clone()
        };
        Ok((state.fleet().problems(view, &q).page.items, false))
    }
}

impl ListPage for Problems {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &ProblemQuery,
    ) -> Result<String, AppError> {
        let clusters = state.fleet().cluster_list(&caller.view);
        let shell = shell_of(state, caller, csrf, &clusters);
        let board = load::board(state, &caller.view, q, shell.now, clusters).await;
        Ok(pages::board::page(
            &shell,
            q,
            &board.clusters,
            board.problems,
            board.recent,
        ))
    }
}

/// Every finding, as the rules made them.
pub(in crate::http) struct Findings;

impl List for Findings {
    const NAME: &'static str = "findings";
    type Query = FindingQuery;
    type Row = Finding;
    type Answer = Page<Finding>;

    fn query(_: &AppState, raw: Option<&str>) -> Result<FindingQuery, AppError> {
        query::finding_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &FindingQuery,
    ) -> Result<Page<Finding>, AppError> {
        Ok(Page::of(
            state.fleet().findings(view, q),
            q.page,
            q.per_page,
        ))
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &FindingQuery,
    ) -> Result<(Vec<Finding>, bool), AppError> {
        Ok((state.fleet().findings(view, q), false))
    }
}

impl ListPage for Findings {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &FindingQuery,
    ) -> Result<String, AppError> {
        Ok(pages::findings::page(
            &shell(state, caller, csrf),
            q,
            state.fleet().clusters(&caller.view),
            state.fleet().findings(&caller.view, q),
        ))
    }
}

/// `/api/v1/probes`: what the probe last saw on each visible host × address.
#[derive(Serialize)]
pub(in crate::http) struct ProbeAnswer {
    items: Vec<ProbeRow>,
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

/// What the probe saw (no page of its own: the detail pages show it).
pub(in crate::http) struct Probes;

impl List for Probes {
    const NAME: &'static str = "probes";
    type Query = ProbeQuery;
    type Row = ProbeRow;
    type Answer = ProbeAnswer;

    fn query(_: &AppState, raw: Option<&str>) -> Result<ProbeQuery, AppError> {
        query::probe_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &ProbeQuery,
    ) -> Result<ProbeAnswer, AppError> {
        let items = load::probes(state, view, q);
        let checked = state
            .probes
            .last
            .lock()
            .expect("probe status lock")
            .finished;
        Ok(ProbeAnswer {
            items,
            checked,
            round: state.registry.probe_round(view).map(|last| Round {
                seconds: last.seconds,
                probed: last.probed,
                failed: last.failed,
                refused: last.refused,
                rounds: last.rounds,
            }),
        })
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &ProbeQuery,
    ) -> Result<(Vec<ProbeRow>, bool), AppError> {
        Ok((load::probes(state, view, q), false))
    }
}
