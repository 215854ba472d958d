//! One loader per view, shared by its page and its `/api/v1` endpoint, so that the two can
//! never disagree. Loaders read through the ports only (`FleetReader`, `HistoryReader`,
//! `BudgetReader`), each taking the caller's view; none applies a view itself.

use chrono::{DateTime, Utc};
use lookout_app::model::budget::{Budget, DomainForecast, Limit};
use lookout_app::model::history::{AuditEntry, RecentChange};
use lookout_app::model::read::issuer::{IssuerDetail, IssuerQuery, IssuerRow};
use lookout_app::model::read::problems::Problems;
use lookout_app::model::read::views::{
    AuditQuery, CertificateDetail, CertificateQuery, CertificateRow, ChallengeQuery, IngressDetail,
    IngressQuery, IngressRow, Place, ProblemQuery,
};
use lookout_app::model::timeline::Attempt;
use lookout_app::model::{ClusterView, ObjectKey, Page, View};
use lookout_app::ports::{
    BudgetReader, ChallengePage, FleetReader, HistoryReader, HistoryUnavailable,
};

use super::{AppError, AppState};

impl From<HistoryUnavailable> for AppError {
    fn from(e: HistoryUnavailable) -> Self {
        AppError::Storage(e.0)
    }
}

/// How far back the board's "what changed recently" looks, and how many lines it shows.
const RECENT_WINDOW: chrono::Duration = chrono::Duration::hours(24);
const RECENT_LINES: usize = 30;

/// The triage board: the clusters, the problems the filters select, and what changed in
/// the last day (an error instead when the history cannot be read: the board still shows).
pub(super) struct Board {
    pub clusters: std::sync::Arc<Vec<ClusterView>>,
    pub problems: Problems,
    pub recent: Result<Vec<RecentChange>, String>,
}

pub(super) async fn board(
    state: &AppState,
    view: &View,
    q: &ProblemQuery,
    now: DateTime<Utc>,
    clusters: std::sync::Arc<Vec<ClusterView>>,
) -> Board {
    Board {
        clusters,
        problems: state.fleet().problems(view, q),
        // What changed where the filters look (the cluster, the namespace).
        recent: state
            .history
            .recent_changes(
                view,
                Place {
                    cluster: q.cluster.as_deref(),
                    namespace: q.namespace.as_deref(),
                },
                now - RECENT_WINDOW,
                RECENT_LINES,
            )
            .await
            .map_err(|e| format!("the history could not be read ({})", e.0)),
    }
}

/// The problems an object is part of (for "Why this is broken" on its page).
pub(super) fn problems_about(
    state: &AppState,
    view: &View,
    key: &ObjectKey,
    kind: lookout_app::model::Kind,
) -> Vec<lookout_app::model::read::problems::Problem> {
    let q = ProblemQuery {
        cluster: Some(key.cluster.to_string()),
        namespace: Some(key.namespace.to_string()),
        // All of them: the object's own may be past any page of a busy namespace.
        page: 1,
        per_page: usize::MAX,
        ..Default::default()
    };
    let mut out: Vec<_> = state
        .fleet()
        .problems(view, &q)
        .page
        .items
        .into_iter()
        .filter(|p| p.concerns(kind, &key.namespace, &key.name))
        // Told as it bears on this object: its chain's urgency, as the lists tell it.
        .map(|p| p.about_object(kind, &key.namespace, &key.name))
        .collect();
    lookout_app::model::read::problems::sort(&mut out);
    out
}

pub(super) fn ingresses(state: &AppState, view: &View, q: &IngressQuery) -> Page<IngressRow> {
    state.fleet().ingresses(view, q)
}

/// One Ingress with its chain, or the 404 that the page and the API share.
pub(super) fn ingress(
    state: &AppState,
    view: &View,
    key: &ObjectKey,
) -> Result<IngressDetail, AppError> {
    state.fleet().ingress(view, key).ok_or_else(|| {
        AppError::NotFound(format!(
            "There is no Ingress {}/{} in cluster {}.",
            key.namespace, key.name, key.cluster
        ))
    })
}

/// The Challenges the history has for an Ingress's hosts in its namespace, newest first.
pub(super) async fn ingress_history(
    state: &AppState,
    view: &View,
    detail: &IngressDetail,
) -> Result<Vec<lookout_app::model::history::ChallengeRecord>, String> {
    const PER_HOST: usize = 20;
    let ing = &detail.ingress;
    state
        .history
        .host_challenges(
            view,
            &ing.cluster,
            &ing.namespace,
            ing.hosts.iter().map(|h| h.to_string()).collect(),
            PER_HOST,
        )
        .await
        .map_err(|e| e.0)
}

pub(super) fn certificates(
    state: &AppState,
    view: &View,
    q: &CertificateQuery,
) -> Page<CertificateRow> {
    state.fleet().certificates(view, q)
}

/// The issuers the caller may see, with their account's limits that are reached.
pub(super) fn issuers(state: &AppState, view: &View, q: &IssuerQuery) -> Page<IssuerRow> {
    let mut page = state.fleet().issuers(view, q);
    let budgets = state.budgets.budgets(view);
    for row in &mut page.items {
        let ns = (!row.namespace.is_empty()).then_some(row.namespace.as_str());
        row.account_limits_reached =
            account_limits(&budgets, &row.cluster, row.kind, ns, &row.name)
                .filter(|b| b.used >= b.capacity)
                .map(|b| b.limit)
                .collect();
        row.account_limits_reached.dedup();
    }
    page
}

/// One issuer as the caller sees it, with its account's limits.
pub(super) fn issuer(
    state: &AppState,
    view: &View,
    cluster: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<IssuerDetail> {
    let mut d = state.fleet().issuer(view, cluster, namespace, name)?;
    let budgets = state.budgets.budgets(view);
    d.account = account_limits(&budgets, cluster, d.kind, namespace, name)
        .cloned()
        .collect();
    Some(d)
}

/// The budgets of the ACME account an issuer uses: its new orders, its paused names, its
/// failed authorizations.
fn account_limits<'b>(
    budgets: &'b [Budget],
    cluster: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> impl Iterator<Item = &'b Budget> {
    let account = lookout_app::model::budget::account(cluster, namespace.unwrap_or(""), kind, name);
    budgets.iter().filter(move |b| {
        b.account.as_deref() == Some(account.as_str())
            && matches!(
                b.limit,
                Limit::NewOrders | Limit::Paused | Limit::FailedAuthorizations
            )
    })
}

/// What the probe last saw, as the caller may see it, where the filters say.
pub(super) fn probes(
    state: &AppState,
    view: &View,
    q: &lookout_app::model::read::views::ProbeQuery,
) -> Vec<lookout_app::model::probe::ProbeRow> {
    state.fleet().probes(
        view,
        q.cluster.as_deref(),
        q.namespace.as_deref(),
        q.host.as_deref(),
    )
}

/// One Certificate with its chain, or the 404 that the page and the API share; and what the
/// history remembers of it (or why it cannot be read).
pub(super) async fn certificate(
    state: &AppState,
    view: &View,
    key: &ObjectKey,
) -> Result<(CertificateDetail, Result<Vec<Attempt>, HistoryUnavailable>), AppError> {
    let detail = state.fleet().certificate(view, key).ok_or_else(|| {
        AppError::NotFound(format!(
            "There is no Certificate {}/{} in cluster {}.",
            key.namespace, key.name, key.cluster
        ))
    })?;
    let timeline = state.history.certificate_timeline(view, key).await;
    Ok((detail, timeline))
}

pub(super) async fn challenges(
    state: &AppState,
    view: &View,
    q: &ChallengeQuery,
) -> Result<ChallengePage, AppError> {
    Ok(state.history.challenges(view, q).await?)
}

pub(super) async fn audit(
    state: &AppState,
    view: &View,
    q: &AuditQuery,
) -> Result<Page<AuditEntry>, AppError> {
    Ok(state.history.audit(view, q).await?)
}

/// How far the budgets' forecast looks ahead.
pub(super) const FORECAST: chrono::Duration = chrono::Duration::days(7);

/// The next week's issuances of what the caller sees (where `q` says) against the budgets
/// as the caller sees them: the counts are shared, the other tenants' due issuances are
/// not theirs to know.
pub(super) fn forecast(
    state: &AppState,
    view: &View,
    q: &lookout_app::model::read::views::BudgetQuery,
) -> Vec<DomainForecast> {
    let now = (state.registry.now)();
    let mut due = state.registry.due(view, q, now + FORECAST);
    // Renewal or new is the same answer for every reader, and the same the renew preview
    // gives: judged on every issuance the fleet counted, not only the reader's.
    let everything = state.budgets.all();
    for d in &mut due {
        d.renewal |=
            lookout_app::model::budget::is_renewal(&d.server, &d.names, None, d.at, &everything);
    }
    lookout_app::model::budget::forecast(&state.budgets.budgets(view), &due, now, FORECAST)
}

pub(super) fn budgets(
    state: &AppState,
    view: &View,
    q: &lookout_app::model::read::views::BudgetQuery,
) -> Vec<Budget> {
    let mut all = state.budgets.budgets(view);
    all.retain(|b| q.selects(b));
    all
}
