//! The history's reads, as `lookout_app::ports::HistoryReader`: each query carries the
//! caller's view as SQL (see [`super::scope_clause`]), so what the pages and the API get is
//! only ever what the caller may see. One page of rows is read, however long the history.

use std::collections::HashMap;

use crate::store::Engine;
use crate::store::Pool;
use chrono::{DateTime, Utc};
use lookout_app::model::choice::Choice;
use lookout_app::model::failure::Failure;
use lookout_app::model::history::{AuditEntry, ChallengeRecord, RecentChange, Transition};
use lookout_app::model::read::sort::{ChallengeSort, Sort};
use lookout_app::model::read::views::{AuditQuery, ChallengeQuery, ChallengeState};
use lookout_app::model::view::View;
use lookout_app::model::{ObjectKey, Page};
use lookout_app::ports::{ChallengePage, HistoryReader, HistoryUnavailable, Reading};
use sqlx::Row;

use super::{audit, stamp, SqlQuery};

/// The history database's read pool, as the pages and the API read it.
#[derive(Clone)]
pub struct HistoryStore {
    pool: Pool,
    /// The writers' commit count, when known: it lets the board's "what changed recently"
    /// be answered again without a query while nothing was written.
    writes: Option<std::sync::Arc<super::writer::Health>>,
    recent: std::sync::Arc<std::sync::Mutex<Vec<RecentAnswer>>>,
}

/// One answer of [`recent_changes`] and what it was asked with.
struct RecentAnswer {
    view: View,
    limit: usize,
    since: DateTime<Utc>,
    committed: u64,
    rows: Vec<RecentChange>,
}

/// How many scopes' recent changes are kept (the support, on-call and a few customers').
const RECENT_ANSWERS: usize = 16;
/// How far the window's start may have moved for a kept answer to serve: rows leaving the
/// day's window within a second are not worth a query per board.
const RECENT_SLACK: chrono::Duration = chrono::Duration::seconds(1);

impl HistoryStore {
    pub fn new(pool: Pool) -> Self {
        HistoryStore {
            pool,
            writes: None,
            recent: Default::default(),
        }
    }

    /// Keeps the last answers of "what changed recently" until a writer commits.
    pub fn with_writes(mut self, health: std::sync::Arc<super::writer::Health>) -> Self {
        self.writes = Some(health);
        self
    }

    fn kept_recent(
        &self,
        view: &View,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Option<Vec<RecentChange>> {
        let committed = self.writes.as_ref()?.committed();
        let kept = self.recent.lock().expect("recent lock");
        kept.iter()
            .find(|a| {
                a.committed == committed
                    && a.limit == limit
                    && a.view == *view
                    && since >= a.since
                    && since - a.since <= RECENT_SLACK
            })
            .map(|a| a.rows.clone())
    }

    fn keep_recent(
        &self,
        view: &View,
        since: DateTime<Utc>,
        limit: usize,
        committed: u64,
        rows: &[RecentChange],
    ) {
        let mut kept = self.recent.lock().expect("recent lock");
        kept.retain(|a| !(a.view == *view && a.limit == limit));
        if kept.len() >= RECENT_ANSWERS {
            kept.remove(0);
        }
        kept.push(RecentAnswer {
            view: view.clone(),
            limit,
            since,
            committed,
            rows: rows.to_vec(),
        });
    }
}

/// A failed read, logged with its cause and told to the user in a sentence.
fn unavailable(e: sqlx::Error) -> HistoryUnavailable {
    tracing::warn!(error = %e, "could not read the history database");
    HistoryUnavailable(super::writer::describe(&e))
}

impl HistoryReader for HistoryStore {
    fn challenges<'a>(
        &'a self,
        view: &'a View,
        q: &'a ChallengeQuery,
    ) -> Reading<'a, ChallengePage> {
        Box::pin(async move {
            let filter = ChallengeFilter::of(q, view);
            let pool = &self.pool;
            let (total, failures, mut items) = tokio::try_join!(
                count_challenges(pool, &filter),
                failures_by_reason(pool, &filter),
                challenge_rows(pool, &filter),
            )
            .map_err(unavailable)?;
            fill_transitions(pool, &mut items)
                .await
                .map_err(unavailable)?;
            Ok(ChallengePage {
                page: Page {
                    items,
                    total,
                    page: q.page,
                    per_page: q.per_page,
                },
                failures,
            })
        })
    }

    fn audit<'a>(&'a self, view: &'a View, q: &'a AuditQuery) -> Reading<'a, Page<AuditEntry>> {
        Box::pin(async move {
            let filter = audit::AuditFilter::of(q, view);
            let (total, items) = tokio::try_join!(
                audit::count(&self.pool, &filter),
                audit::list(&self.pool, &filter),
            )
            .map_err(unavailable)?;
            Ok(Page {
                items,
                total,
                page: q.page,
                per_page: q.per_page,
            })
        })
    }

    fn recent_changes<'a>(
        &'a self,
        view: &'a View,
        place: lookout_app::model::read::views::Place<'a>,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Reading<'a, Vec<RecentChange>> {
        Box::pin(async move {
            let narrowed = view.narrowed(place.cluster, place.namespace);
            let view = &narrowed;
            if let Some(rows) = self.kept_recent(view, since, limit) {
                return Ok(rows);
            }
            // The count before the read: a commit during it makes the answer a miss next time.
            let committed = self.writes.as_ref().map(|w| w.committed());
            let rows = recent_changes(&self.pool, view, since, limit)
                .await
                .map_err(unavailable)?;
            if let Some(committed) = committed {
                self.keep_recent(view, since, limit, committed, &rows);
            }
            Ok(rows)
        })
    }

    fn certificate_timeline<'a>(
        &'a self,
        view: &'a View,
        c: &'a ObjectKey,
    ) -> Reading<'a, Vec<lookout_app::model::timeline::Attempt>> {
        Box::pin(async move {
            if !view.sees(&c.cluster, &c.namespace) {
                return Ok(Vec::new());
            }
            super::timeline::certificate_attempts(&self.pool, &c.cluster, &c.namespace, &c.name)
                .await
                .map_err(unavailable)
        })
    }

    fn host_challenges<'a>(
        &'a self,
        view: &'a View,
        cluster: &'a str,
        namespace: &'a str,
        hosts: Vec<String>,
        per_host: usize,
    ) -> Reading<'a, Vec<ChallengeRecord>> {
        Box::pin(async move {
            let mut rows = Vec::new();
            for host in hosts {
                let host = host.to_ascii_lowercase();
                let filter = ChallengeFilter {
                    cluster: Some(cluster.to_string()),
                    namespace: Some(namespace.to_string()),
                    domain: Some(host.clone()),
                    view: view_param(view),
                    limit: i64::try_from(per_host).unwrap_or(i64::MAX),
                    ..Default::default()
                };
                let mut found = challenge_rows(&self.pool, &filter)
                    .await
                    .map_err(unavailable)?;
                fill_transitions(&self.pool, &mut found)
                    .await
                    .map_err(unavailable)?;
                // The domain filter matches subdomains too: this host's own only.
                rows.extend(found.into_iter().filter(|r| r.dns_name == host));
            }
            rows.sort_by(|a, b| b.last_seen.cmp(&a.last_seen));
            Ok(rows)
        })
    }
}

/// Filters, order and window of `/challenges` and `/api/v1/challenges`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChallengeFilter {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub domain: Option<String>,
    pub outcome: Option<ChallengeState>,
    pub since: Option<DateTime<Utc>>,
    /// The caller's view as [`super::view_param`] writes it (None: everything).
    pub view: Option<String>,
    /// None: the most recently seen first.
    pub sort: Option<Sort<ChallengeSort>>,
    /// Rows skipped before the first returned (a page's start).
    pub offset: i64,
    /// At most this many rows.
    pub limit: i64,
}

impl ChallengeFilter {
    /// One page of a query, within what `view` sees.
    pub(crate) fn of(q: &ChallengeQuery, view: &View) -> Self {
        let (offset, limit) = super::page_window(q.page, q.per_page);
        ChallengeFilter {
            cluster: q.cluster.clone(),
            namespace: q.namespace.clone(),
            domain: q.domain.clone(),
            outcome: q.outcome,
            since: q.since,
            view: view_param(view),
            sort: q.sort,
            offset,
            limit,
        }
    }
}

/// The rows a [`ChallengeFilter`] matches (parameters $1 to $6, see [`bind_filter`]).
fn challenge_matches(engine: Engine) -> String {
    format!(
        "($1 IS NULL OR cluster = $1) AND ($2 IS NULL OR namespace = $2) \
         AND ($3 IS NULL OR dns_name = $3 OR {}) \
         AND ($4 IS NULL OR state = $4) AND ($5 IS NULL OR last_seen >= $5) AND {}",
        engine.is_subdomain("dns_name", 3),
        super::scope_clause(engine, 6)
    )
}

fn bind_filter<'q>(q: SqlQuery<'q>, f: &'q ChallengeFilter) -> SqlQuery<'q> {
    q.bind(&f.cluster)
        .bind(&f.namespace)
        .bind(&f.domain)
        .bind(f.outcome.map(|o| o.label()))
        .bind(f.since.map(stamp))
        .bind(&f.view)
}

/// `ORDER BY` of a challenge list: the sort key, then the most recently seen first (the
/// reverse of both when reversed); the row id breaks ties so pages never overlap. Names sort
/// by their bytes on both engines (PostgreSQL's database collation may ignore punctuation).
fn challenge_order(sort: Option<Sort<ChallengeSort>>, engine: Engine) -> String {
    let (key, reversed) = sort.map_or((ChallengeSort::Recent, false), |s| (s.key, s.reversed));
    let bytes = match engine {
        Engine::Sqlite => "",
        Engine::Postgres => " COLLATE \"C\"",
    };
    match (key, reversed) {
        (ChallengeSort::Domain, false) => format!("dns_name{bytes} ASC, last_seen DESC, id DESC"),
        (ChallengeSort::Domain, true) => format!("dns_name{bytes} DESC, last_seen ASC, id ASC"),
        (ChallengeSort::State, false) => format!("state{bytes} ASC, last_seen DESC, id DESC"),
        (ChallengeSort::State, true) => format!("state{bytes} DESC, last_seen ASC, id ASC"),
        (ChallengeSort::Recent, false) => "last_seen DESC, id DESC".to_string(),
        (ChallengeSort::Recent, true) => "last_seen ASC, id ASC".to_string(),
    }
}

/// How many challenges the filter matches (ignoring its window).
async fn count_challenges(pool: &Pool, f: &ChallengeFilter) -> Result<usize, sqlx::Error> {
    let sql = format!(
        "SELECT COUNT(*) FROM challenges WHERE {}",
        challenge_matches(Engine::of_pool(pool))
    );
    super::count(pool, bind_filter(sqlx::query(&sql), f)).await
}

/// The failed challenges the filter matches (ignoring its window), counted by classified
/// reason, most frequent first. SQLite groups them by their reason text; only the distinct
/// texts come back to be classified.
async fn failures_by_reason(
    pool: &Pool,
    f: &ChallengeFilter,
) -> Result<Vec<(&'static str, usize)>, sqlx::Error> {
    let sql = format!(
        "SELECT reason, COUNT(*) FROM challenges WHERE {} AND state IN ('invalid', 'errored') GROUP BY reason",
        challenge_matches(Engine::of_pool(pool))
    );
    let rows = bind_filter(sqlx::query(&sql), f).fetch_all(pool).await?;
    Ok(lookout_app::pages::challenges::tally_failures(
        rows.iter().map(|r| {
            let reason: Option<String> = r.get(0);
            let n: i64 = r.get(1);
            (
                Failure::classify(reason.as_deref().unwrap_or_default())
                    .class
                    .title(),
                usize::try_from(n).unwrap_or_default(),
            )
        }),
    ))
}

/// Challenges in the filter's order and window, without their transitions (see
/// [`fill_transitions`]).
async fn challenge_rows(
    pool: &Pool,
    f: &ChallengeFilter,
) -> Result<Vec<ChallengeRecord>, sqlx::Error> {
    let sql = format!(
        "SELECT id, cluster, namespace, name, order_name, dns_name, challenge_type, state, reason, created_at, last_seen, deleted_at \
         FROM challenges WHERE {} ORDER BY {} LIMIT $7 OFFSET $8",
        challenge_matches(Engine::of_pool(pool)),
        challenge_order(f.sort, Engine::of_pool(pool))
    );
    let rows = bind_filter(sqlx::query(&sql), f)
        .bind(f.limit)
        .bind(f.offset)
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let state: String = r.get("state");
            let reason: Option<String> = r.get("reason");
            let failure = Failure::of_challenge(&state, reason.as_deref());
            ChallengeRecord {
                id: r.get("id"),
                cluster: r.get("cluster"),
                namespace: r.get("namespace"),
                name: r.get("name"),
                order: r.get("order_name"),
                dns_name: r.get("dns_name"),
                challenge_type: r.get("challenge_type"),
                state,
                reason,
                failure,
                created_at: r.get("created_at"),
                last_seen: r.get("last_seen"),
                deleted_at: r.get("deleted_at"),
                transitions: Vec::new(),
            }
        })
        .collect())
}

/// Loads the transitions of `rows` in one query (not one per row).
async fn fill_transitions(pool: &Pool, rows: &mut [ChallengeRecord]) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut transitions: HashMap<i64, Vec<Transition>> = HashMap::with_capacity(ids.len());
    for t in sqlx::query(&format!("SELECT challenge_id, at, state, reason, presented, processing FROM challenge_transitions WHERE challenge_id IN {} ORDER BY challenge_id, at, id", Engine::of_pool(pool).json_integers(1)))
        .bind(serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()))
        .fetch_all(pool)
        .await?
    {
        transitions
            .entry(t.get("challenge_id"))
            .or_default()
            .push(Transition {
                at: t.get("at"),
                state: t.get("state"),
                reason: t.get("reason"),
                presented: super::flag(&t, "presented"),
                processing: super::flag(&t, "processing"),
            });
    }
    for r in rows {
        r.transitions = transitions.remove(&r.id).unwrap_or_default();
    }
    Ok(())
}

/// What changed since `since` that `view` sees, newest first, at most `limit` rows. A line
/// about the cluster itself (its sync state) is seen by anyone who sees the cluster.
async fn recent_changes(
    pool: &Pool,
    view: &View,
    since: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<RecentChange>, sqlx::Error> {
    // Each source is read newest first and cut at `limit` on its own (its time index
    // serves that), within the view; only then merged. One ORDER BY over the union read
    // every row of the window — thousands on a busy day — for every board.
    // A row with no namespace is about the whole cluster (an action run over all of it):
    // only a whole-cluster grant (namespace `*`) sees it, as in the audit. The cluster's own
    // sync events are the exception, told to anyone who sees the cluster at all.
    use super::{scope_filter, Rows};
    let engine = Engine::of_pool(pool);
    let scope_filter = |c: &str, n: &str, rows: Rows| scope_filter(engine, 3, c, n, rows);
    let branch = |select: &str, from: &str, at: &str, scoped: String| {
        format!(
            "SELECT * FROM (SELECT {select} FROM {from} WHERE {at} >= $1 AND {scoped} ORDER BY {at} DESC LIMIT $2) AS b"
        )
    };
    let sql = [
        branch(
            "at, cluster, namespace, 'Certificate' AS kind, name, 'Ready ' || status AS what, reason AS detail",
            "certificate_readiness",
            "at",
            scope_filter("cluster", "namespace", Rows::InNamespaces),
        ),
        branch(
            "t.at AS at, c.cluster AS cluster, c.namespace AS namespace, 'Challenge' AS kind, c.name || ' (' || c.dns_name || ')' AS name, \
             CASE t.state WHEN '' THEN 'created' ELSE t.state END AS what, t.reason AS detail",
            "challenge_transitions t JOIN challenges c ON c.id = t.challenge_id",
            "t.at",
            scope_filter("c.cluster", "c.namespace", Rows::InNamespaces),
        ),
        branch(
            "deleted_at AS at, cluster, namespace, 'Challenge' AS kind, name || ' (' || dns_name || ')' AS name, 'deleted' AS what, \
             CASE state WHEN '' THEN NULL ELSE 'last state ' || state END AS detail",
            "challenges",
            "deleted_at",
            scope_filter("cluster", "namespace", Rows::InNamespaces),
        ),
        // A cluster's sync state when it changed — stale, failed, and synced again after
        // that; not the "synced" of every cluster each time Lookout starts, which after a
        // restart of a large fleet would fill the list and push out what did change (the
        // cluster's own page keeps them all).
        branch(
            "at, cluster, '' AS namespace, 'Cluster' AS kind, cluster AS name, state AS what, error AS detail",
            "cluster_sync_events e",
            "at",
            format!(
                "{} AND (state <> 'synced' OR (SELECT p.state FROM cluster_sync_events p \
                 WHERE p.cluster = e.cluster AND (p.at < e.at OR (p.at = e.at AND p.id < e.id)) \
                 ORDER BY p.at DESC, p.id DESC LIMIT 1) IN ('stale', 'failed'))",
                scope_filter("cluster", "''", Rows::OfTheCluster)
            ),
        ),
        branch(
            "at, cluster, namespace, kind, name, \
             action || ': ' || outcome AS what, error AS detail",
            "audit_log",
            "at",
            // A preview changed nothing.
            format!(
                "dry_run = 0 AND {}",
                scope_filter("cluster", "namespace", Rows::InNamespaces)
            ),
        ),
    ]
    .join(" UNION ALL ")
        + " ORDER BY at DESC LIMIT $2";
    let rows = sqlx::query(&sql)
        .bind(stamp(since))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(view_param(view))
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| RecentChange {
            at: r.get("at"),
            cluster: r.get("cluster"),
            namespace: r.get("namespace"),
            kind: r.get("kind"),
            name: r.get("name"),
            what: r.get("what"),
            detail: r.get("detail"),
        })
        .collect())
}

/// A caller's view as one SQL parameter for [`super::scope_filter`]: NULL when it sees everything
/// (also the history of clusters since removed from the configuration), else the JSON array
/// of `[cluster, glob, like]` triples, one per visible cluster and namespace pattern — the
/// cluster by name, as the view resolved it against the configuration, the namespaces as a
/// SQLite `GLOB` pattern and as the same pattern for PostgreSQL's `LIKE` (`*` for a cluster
/// seen whole).
///
/// Both match like [`lookout_app::model::view::Namespaces::contains`] (`*`, `?`,
/// case-sensitive) once their own special characters are escaped; one difference remains in
/// SQLite: `?` is one byte there and one character here, which only matters for non-ASCII
/// names (namespaces are ASCII by the API server's validation).
pub fn view_param(view: &lookout_app::model::View) -> Option<String> {
    use lookout_app::model::view::Namespaces;
    if view.sees_everything() {
        return None;
    }
    let mut triples: Vec<[String; 3]> = Vec::new();
    let triple = |cluster: &str, pattern: &str| {
        [
            cluster.to_string(),
            super::sql_glob(pattern),
            super::sql_like(pattern),
        ]
    };
    for (cluster, sight) in view.clusters() {
        match &sight.read {
            Namespaces::Every => triples.push(triple(cluster, "*")),
            Namespaces::Matching(patterns) => {
                triples.extend(patterns.iter().map(|p| triple(cluster, p)))
            }
        }
    }
    Some(serde_json::to_string(&triples).unwrap_or_else(|_| "[]".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Db;
    use lookout_app::model::read::views::Place;

    /// Challenges `(cluster, namespace, dns_name, state, reason, last_seen minute)`.
    async fn seed(db: &Db, rows: &[(&str, &str, &str, &str, &str, u32)]) {
        for (i, (cluster, ns, host, state, reason, minute)) in rows.iter().enumerate() {
            sqlx::query("INSERT INTO challenges (cluster, namespace, name, uid, dns_name, challenge_type, state, reason, presented, processing, last_seen) VALUES ($1, $2, $3, $4, $5, 'HTTP-01', $6, $7, 0, 0, $8)")
                .bind(cluster)
                .bind(ns)
                .bind(format!("c{i}"))
                .bind(format!("u{i}"))
                .bind(host)
                .bind(state)
                .bind(reason)
                .bind(format!("2026-06-01T10:{minute:02}:00.000Z"))
                .execute(&db.writer)
                .await
                .unwrap();
        }
    }

    fn names(rows: &[ChallengeRecord]) -> Vec<&str> {
        rows.iter().map(|r| r.name.as_str()).collect()
    }

    /// The board's "what changed recently" is answered again from memory while nothing is
    /// written, and read anew after an audit row or a writer's commit.
    #[tokio::test]
    async fn recent_changes_are_kept_until_something_is_written() {
        for db in crate::store::testdb::engines().await {
            let store = HistoryStore::new(db.reader.clone()).with_writes(db.health.clone());
            let (everything, now) = (View::whole_fleet(["zrh"]), Utc::now());
            let since = now - chrono::Duration::hours(24);
            let read = |since| {
                let store = store.clone();
                let view = everything.clone();
                async move {
                    store
                        .recent_changes(&view, Place::default(), since, 30)
                        .await
                        .unwrap()
                        .len()
                }
            };
            assert_eq!(read(since).await, 0);
            // Behind the store's back (no writer, no audit log): the kept answer stands.
            sqlx::query("INSERT INTO audit_log (at, actor, action, cluster, namespace, kind, name, dry_run, outcome) VALUES ($1, 'x', 'renew', 'zrh', 'shop', 'Certificate', 'a', 0, 'ok')")
            .bind(stamp(now))
            .execute(&db.writer)
            .await
            .unwrap();
            assert_eq!(read(since).await, 0, "kept");
            // A window that moved on by more than a second asks again.
            assert_eq!(read(since + chrono::Duration::seconds(2)).await, 1);
            // An audit row written as an action happens is seen at once.
            let (held, _rx) = tokio::sync::mpsc::channel(1);
            let audit = super::super::audit::AuditLog {
                pool: db.writer.clone(),
                held,
                health: db.health.clone(),
            };
            audit
                .append(super::super::audit::NewEntry {
                    at: now,
                    actor: "y".into(),
                    action: "renew".into(),
                    cluster: "zrh".into(),
                    namespace: "shop".into(),
                    kind: "Certificate".into(),
                    name: "b".into(),
                    dry_run: false,
                    diff: None,
                    outcome: "ok".into(),
                    error: None,
                })
                .await;
            assert_eq!(read(since + chrono::Duration::seconds(2)).await, 2);
        }
    }

    /// The board's recent changes name a cluster's trouble and its recovery, not the
    /// "synced" every cluster records when Lookout starts.
    #[tokio::test]
    async fn recent_changes_keep_a_recovery_but_not_the_sync_of_a_start() {
        for db in crate::store::testdb::engines().await {
            let now = Utc::now();
            let at = |minutes: i64| stamp(now - chrono::Duration::minutes(60 - minutes));
            for (cluster, state, minute) in [
                ("zrh", "synced", 0),
                ("gva", "synced", 0),
                ("gva", "stale", 10),
                ("gva", "synced", 20),
                // Lookout restarted: both sync again.
                ("zrh", "synced", 30),
                ("gva", "synced", 30),
                ("fra", "failed", 30),
            ] {
                sqlx::query("INSERT INTO cluster_sync_events (cluster, state, error, at) VALUES ($1, $2, NULL, $3)")
                .bind(cluster)
                .bind(state)
                .bind(at(minute))
                .execute(&db.writer)
                .await
                .unwrap();
            }
            let store = HistoryStore::new(db.reader.clone());
            let view = View::whole_fleet(["zrh", "gva", "fra"]);
            let rows = store
                .recent_changes(
                    &view,
                    Place::default(),
                    now - chrono::Duration::hours(24),
                    30,
                )
                .await
                .unwrap();
            let seen: Vec<(&str, &str)> = rows
                .iter()
                .map(|r| (r.cluster.as_str(), r.what.as_str()))
                .collect();
            assert_eq!(
                seen,
                [("fra", "failed"), ("gva", "synced"), ("gva", "stale")],
                "the failure, and gva's trouble with its recovery; no start's sync"
            );
        }
    }

    /// Recent changes are what changed: a preview is not one; and a view narrowed to the
    /// page's filters reads only where they look.
    #[tokio::test]
    async fn recent_changes_leave_previews_out_and_follow_the_filters() {
        for db in crate::store::testdb::engines().await {
            let now = Utc::now();
            for (cluster, ns, name, dry_run) in [
                ("zrh", "shop", "applied", 0),
                ("zrh", "shop", "previewed", 1),
                ("zrh", "blog", "elsewhere", 0),
                ("gva", "shop", "other-cluster", 0),
            ] {
                sqlx::query("INSERT INTO audit_log (at, actor, action, cluster, namespace, kind, name, dry_run, outcome) VALUES ($1, 'x', 'renew', $2, $3, 'Certificate', $4, $5, 'ok')")
                    .bind(stamp(now))
                    .bind(cluster)
                    .bind(ns)
                    .bind(name)
                    .bind(dry_run)
                    .execute(&db.writer)
                    .await
                    .unwrap();
            }
            let store = HistoryStore::new(db.reader.clone());
            let since = now - chrono::Duration::hours(1);
            let names = |rows: Vec<RecentChange>| {
                let mut n: Vec<String> = rows.into_iter().map(|r| r.name).collect();
                n.sort();
                n
            };
            let all = View::whole_fleet(["zrh", "gva"]);
            assert_eq!(
                names(
                    store
                        .recent_changes(&all, Place::default(), since, 30)
                        .await
                        .unwrap()
                ),
                ["applied", "elsewhere", "other-cluster"],
                "no preview"
            );
            assert_eq!(
                names(
                    store
                        .recent_changes(
                            &all,
                            Place {
                                cluster: Some("zrh"),
                                namespace: None
                            },
                            since,
                            30
                        )
                        .await
                        .unwrap()
                ),
                ["applied", "elsewhere"]
            );
            assert_eq!(
                names(
                    store
                        .recent_changes(
                            &all,
                            Place {
                                cluster: Some("zrh"),
                                namespace: Some("shop")
                            },
                            since,
                            30
                        )
                        .await
                        .unwrap()
                ),
                ["applied"]
            );
        }
    }

    #[tokio::test]
    async fn the_database_filters_scopes_sorts_counts_groups_and_pages_the_challenges() {
        for db in crate::store::testdb::engines().await {
            let redirect = "Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://x/.well-known/acme-challenge/t': Get \"https://x/.well-known/acme-challenge/t\": EOF";
            seed(
            &db,
            &[
                ("zrh-prod", "acme-web", "b.acme.example", "valid", "", 1),
                (
                    "zrh-prod",
                    "acme-web",
                    "a.acme.example",
                    "invalid",
                    redirect,
                    2,
                ),
                (
                    "zrh-prod",
                    "acme-api",
                    "c.acme.example",
                    "invalid",
                    "Timeout after 30s",
                    3,
                ),
                (
                    "zrh-prod",
                    "globex",
                    "g.globex.example",
                    "invalid",
                    redirect,
                    4,
                ),
                (
                    "gva-prod",
                    "acme-web",
                    "d.acme.example",
                    "errored",
                    "Invalid response from http://d.acme.example/.well-known/acme-challenge/t: 404",
                    5,
                ),
                (
                    "zrh-prod",
                    "acme-web",
                    "e.acme.example",
                    "errored",
                    "failed to perform self check GET request 'http://e.acme.example/.well-known/acme-challenge/t': Get https://e.acme.example/.well-known/acme-challenge/t: stopped after 10 redirects",
                    5,
                ),
            ],
        )
        .await;
            let all = ChallengeFilter {
                limit: 100,
                ..Default::default()
            };
            let everything = challenge_rows(&db.reader, &all).await.unwrap();
            assert_eq!(
                names(&everything),
                ["c5", "c4", "c3", "c2", "c1", "c0"],
                "the most recently seen first; the newer row first on a tie"
            );
            assert_eq!(count_challenges(&db.reader, &all).await.unwrap(), 6);
            // A domain is a name or a parent of names, never a pattern: SQL wildcards match
            // nothing but themselves.
            for pattern in ["%", "_", "%.example", "acme.exampl_"] {
                let f = ChallengeFilter {
                    domain: Some(pattern.into()),
                    limit: 100,
                    ..Default::default()
                };
                assert_eq!(
                    count_challenges(&db.reader, &f).await.unwrap(),
                    0,
                    "{pattern}"
                );
            }
            let parent = ChallengeFilter {
                domain: Some("acme.example".into()),
                limit: 100,
                ..Default::default()
            };
            assert_eq!(
                count_challenges(&db.reader, &parent).await.unwrap(),
                5,
                "a to e under acme.example"
            );
            assert_eq!(
                failures_by_reason(&db.reader, &all).await.unwrap(),
                [("redirected", 3), ("404 not found", 1), ("timeout", 1)],
                "two texts of one reason counted together"
            );

            // A customer's view: acme namespaces of zrh clusters only.
            use lookout_app::model::scope::{Access, Grant, Role};
            let grant = Grant {
                clusters: vec!["zrh-*".into()],
                namespaces: vec!["acme-*".into()],
            };
            let customer = View::new(
                &Access::new(vec![(Role::Viewer, grant)]),
                ["zrh-prod", "gva-prod"],
            );
            let q = |sort: Option<&str>, page: usize, per_page: usize| ChallengeQuery {
                sort: sort.and_then(Sort::parse),
                page,
                per_page,
                ..Default::default()
            };
            let theirs = ChallengeFilter::of(&q(None, 1, 50), &customer);
            assert_eq!(
                names(&challenge_rows(&db.reader, &theirs).await.unwrap()),
                ["c5", "c2", "c1", "c0"]
            );
            assert_eq!(count_challenges(&db.reader, &theirs).await.unwrap(), 4);
            assert_eq!(
                failures_by_reason(&db.reader, &theirs).await.unwrap(),
                [("redirected", 2), ("timeout", 1)]
            );

            // Pages of two in each order: consecutive, no overlap, the same rows as one page.
            for (sort, expected) in [
                (Some("domain"), vec!["c1", "c0", "c2", "c5"]),
                (Some("-domain"), vec!["c5", "c2", "c0", "c1"]),
                (Some("state"), vec!["c5", "c2", "c1", "c0"]),
                (Some("-state"), vec!["c0", "c1", "c2", "c5"]),
                (Some("-recent"), vec!["c0", "c1", "c2", "c5"]),
            ] {
                let mut paged = Vec::new();
                for page in 1..=3 {
                    let f = ChallengeFilter::of(&q(sort, page, 2), &customer);
                    paged.extend(challenge_rows(&db.reader, &f).await.unwrap());
                }
                assert_eq!(names(&paged), expected, "{sort:?}");
            }
            let nobody = ChallengeFilter::of(&q(None, 1, 50), &View::nothing());
            assert_eq!(count_challenges(&db.reader, &nobody).await.unwrap(), 0);
        }
    }
}
