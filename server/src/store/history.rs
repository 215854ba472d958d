//! The ACME history: one writer task fed by a bounded channel, committing in groups
//! (`BEGIN IMMEDIATE`, about every 100 ms or 500 events), idempotent by comparing with the
//! stored state; retention and WAL checkpoints; and the queries the API reads.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use futures::future::BoxFuture;
use lookout_app::model::certificate::{CertificateRequestView, ChallengeView, OrderView};
use lookout_app::model::object::Condition;
use sqlx::{Row, SqliteConnection, SqlitePool};
use tokio_util::sync::CancellationToken;

use super::writer::{Stamped, Writer};
use super::SqlQuery;
use crate::clock::Now;
pub use lookout_app::model::history::{ChallengeRecord, HistoryEvent, TimelineEntry, Transition};
use lookout_app::model::kind::Kind;
use lookout_app::model::reasons::ChallengeFailure;
use lookout_app::model::scope::Scope;
use lookout_app::ports::ChallengeQuery;
use lookout_app::sort::Sort;

/// Events a batch holds at most.
const BATCH: usize = 500;
/// How long the writer gathers a batch.
const LINGER: Duration = Duration::from_millis(100);
/// Events held in memory while the database refuses writes.
const HOLD: usize = 50_000;

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn opt_stamp(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(stamp)
}

/// The history's writer: batches of up to 500 events gathered for 100 ms, up to 50,000
/// events held in memory while the database refuses writes.
pub fn writer() -> Writer<HistoryEvent> {
    Writer {
        what: "history",
        batch: BATCH,
        linger: LINGER,
        hold: HOLD,
        write: write_batch,
    }
}

/// Writes one batch in one `BEGIN IMMEDIATE` transaction, each event at the time it reached
/// the writer; on any error the transaction is rolled back and the error returned (the
/// writer holds the batch and tries again).
fn write_batch<'a>(
    pool: &'a SqlitePool,
    batch: &'a [Stamped<HistoryEvent>],
) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    Box::pin(async move {
        let mut conn = pool.acquire().await?;
        sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
        let mut result = Ok(());
        for ev in batch {
            result = apply(&mut conn, &ev.item, ev.at).await;
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            result = sqlx::query("COMMIT").execute(&mut *conn).await.map(drop);
        }
        if result.is_err() {
            // Also after a failed COMMIT (a full disk), which can leave the transaction open.
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        } else {
            tracing::debug!(events = batch.len(), "history batch committed");
        }
        result
    })
}

async fn apply(
    conn: &mut SqliteConnection,
    ev: &HistoryEvent,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    match ev {
        HistoryEvent::Challenge {
            cluster,
            view,
            deleted,
        } => challenge(conn, cluster, view, *deleted, now).await,
        HistoryEvent::Order {
            cluster,
            view,
            deleted,
        } => order(conn, cluster, view, *deleted, now).await,
        HistoryEvent::Request {
            cluster,
            view,
            acme_server,
            deleted,
        } => request(conn, cluster, view, acme_server.as_deref(), *deleted, now).await,
        HistoryEvent::Readiness {
            cluster,
            namespace,
            name,
            ready,
        } => readiness(conn, cluster, namespace, name, ready.as_ref(), now).await,
        HistoryEvent::Relisted {
            cluster,
            kind,
            live,
        } => {
            let table = match kind {
                Kind::Challenge => "challenges",
                Kind::Order => "orders",
                Kind::CertificateRequest => "certificate_requests",
                // Only the kinds above have a table; the watcher sends no other.
                _ => return Ok(()),
            };
            let sql = format!("UPDATE {table} SET deleted_at = ? WHERE cluster = ? AND deleted_at IS NULL AND uid NOT IN (SELECT value FROM json_each(?))");
            let live = serde_json::to_string(live).unwrap_or_else(|_| "[]".into());
            sqlx::query(&sql)
                .bind(stamp(now))
                .bind(cluster)
                .bind(live)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
    }
}

async fn mark_deleted(
    conn: &mut SqliteConnection,
    table: &str,
    id: i64,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "UPDATE {table} SET deleted_at = COALESCE(deleted_at, ?), last_seen = ? WHERE id = ?"
    ))
    .bind(stamp(now))
    .bind(stamp(now))
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn challenge(
    conn: &mut SqliteConnection,
    cluster: &str,
    v: &ChallengeView,
    deleted: bool,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let uid = v.uid.to_string();
    let (state, reason) = (v.state.to_string(), v.reason.as_deref().map(str::to_string));
    if deleted {
        let existing = sqlx::query("SELECT id FROM challenges WHERE cluster = ? AND uid = ?")
            .bind(cluster)
            .bind(&uid)
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(row) = existing {
            return mark_deleted(conn, "challenges", row.get("id"), now).await;
        }
    }
    // One statement inserts a new Challenge or updates a changed one; an event that changes
    // nothing (a relist, a replayed watch event) writes nothing. SQLite's triggers add the
    // transition (migration 0005).
    sqlx::query(
        "INSERT INTO challenges (cluster, namespace, name, uid, order_name, dns_name, challenge_type, state, reason, presented, processing, created_at, last_seen, deleted_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (cluster, uid) DO UPDATE SET state = excluded.state, reason = excluded.reason, presented = excluded.presented, \
           processing = excluded.processing, last_seen = excluded.last_seen, deleted_at = NULL \
         WHERE (state, reason, presented, processing) IS NOT (excluded.state, excluded.reason, excluded.presented, excluded.processing)",
    )
    .bind(cluster)
    .bind(&*v.namespace)
    .bind(&*v.name)
    .bind(&uid)
    .bind(v.owner.as_ref().map(|o| o.name.to_string()))
    .bind(&*v.dns_name)
    .bind(&*v.challenge_type)
    .bind(&state)
    .bind(&reason)
    .bind(v.presented)
    .bind(v.processing)
    .bind(opt_stamp(v.created))
    .bind(stamp(now))
    .bind(deleted.then(|| stamp(now)))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn order(
    conn: &mut SqliteConnection,
    cluster: &str,
    v: &OrderView,
    deleted: bool,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let uid = v.uid.to_string();
    let existing =
        sqlx::query("SELECT id, state, reason FROM orders WHERE cluster = ? AND uid = ?")
            .bind(cluster)
            .bind(&uid)
            .fetch_optional(&mut *conn)
            .await?;
    let (state, reason) = (v.state.to_string(), v.reason.as_deref().map(str::to_string));
    let id = match existing {
        Some(row) => {
            let id: i64 = row.get("id");
            if deleted {
                return mark_deleted(conn, "orders", id, now).await;
            }
            if row.get::<String, _>("state") == state && row.get::<Option<String>, _>("reason") == reason {
                return Ok(());
            }
            sqlx::query("UPDATE orders SET state = ?, reason = ?, last_seen = ?, deleted_at = NULL WHERE id = ?")
                .bind(&state)
                .bind(&reason)
                .bind(stamp(now))
                .bind(id)
                .execute(&mut *conn)
                .await?;
            id
        }
        None => sqlx::query(
            "INSERT INTO orders (cluster, namespace, name, uid, request, state, reason, created_at, last_seen, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(cluster)
        .bind(&*v.namespace)
        .bind(&*v.name)
        .bind(&uid)
        .bind(v.owner.as_ref().map(|o| o.name.to_string()))
        .bind(&state)
        .bind(&reason)
        .bind(opt_stamp(v.created))
        .bind(stamp(now))
        .bind(deleted.then(|| stamp(now)))
        .fetch_one(&mut *conn)
        .await?
        .get("id"),
    };
    sqlx::query("INSERT INTO order_transitions (order_id, at, state, reason) VALUES (?, ?, ?, ?)")
        .bind(id)
        .bind(stamp(now))
        .bind(&state)
        .bind(&reason)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// `pending`, `issued`, `failed` or `denied`, from the Ready condition.
pub fn outcome(v: &CertificateRequestView) -> &'static str {
    match v.ready.as_ref() {
        Some(c) if c.is_true() => "issued",
        Some(c) if c.reason.as_deref() == Some("Failed") => "failed",
        Some(c) if c.reason.as_deref() == Some("Denied") => "denied",
        _ => "pending",
    }
}

async fn request(
    conn: &mut SqliteConnection,
    cluster: &str,
    v: &CertificateRequestView,
    acme_server: Option<&str>,
    deleted: bool,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let uid = v.uid.to_string();
    let outcome = outcome(v);
    let reason = v
        .ready
        .as_ref()
        .and_then(|c| c.reason.as_deref())
        .map(str::to_string);
    let message = v
        .ready
        .as_ref()
        .and_then(|c| c.message.as_deref())
        .map(str::to_string);
    let finished = (outcome != "pending").then(|| stamp(v.failure_time.unwrap_or(now)));
    let existing = sqlx::query("SELECT id, outcome, reason, message FROM certificate_requests WHERE cluster = ? AND uid = ?").bind(cluster).bind(&uid).fetch_optional(&mut *conn).await?;
    match existing {
        Some(row) => {
            let id: i64 = row.get("id");
            if deleted {
                return mark_deleted(conn, "certificate_requests", id, now).await;
            }
            let same = row.get::<String, _>("outcome") == outcome
                && row.get::<Option<String>, _>("reason") == reason
                && row.get::<Option<String>, _>("message") == message;
            if !same {
                sqlx::query("UPDATE certificate_requests SET outcome = ?, reason = ?, message = ?, finished_at = COALESCE(finished_at, ?), last_seen = ? WHERE id = ?")
                    .bind(outcome)
                    .bind(&reason)
                    .bind(&message)
                    .bind(&finished)
                    .bind(stamp(now))
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
            }
        }
        None => {
            let names: Vec<&str> = v.names.iter().map(|n| &**n).collect();
            sqlx::query(
                "INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, outcome, reason, message, created_at, finished_at, last_seen, deleted_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(cluster)
            .bind(&*v.namespace)
            .bind(&*v.name)
            .bind(&uid)
            .bind(v.owner.as_ref().map(|o| o.name.to_string()))
            .bind(v.revision)
            .bind(v.issuer.as_ref().map(|i| i.kind.to_string()))
            .bind(v.issuer.as_ref().map(|i| i.name.to_string()))
            .bind(acme_server)
            .bind(serde_json::to_string(&names).unwrap_or_else(|_| "[]".into()))
            .bind(outcome)
            .bind(&reason)
            .bind(&message)
            .bind(opt_stamp(v.created))
            .bind(&finished)
            .bind(stamp(now))
            .bind(deleted.then(|| stamp(now)))
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(())
}

async fn readiness(
    conn: &mut SqliteConnection,
    cluster: &str,
    ns: &str,
    name: &str,
    ready: Option<&Condition>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let status = ready
        .map(|c| c.status.to_string())
        .unwrap_or_else(|| "absent".into());
    let reason = ready.and_then(|c| c.reason.as_deref()).map(str::to_string);
    let last = sqlx::query("SELECT status, reason FROM certificate_readiness WHERE cluster = ? AND namespace = ? AND name = ? ORDER BY id DESC LIMIT 1")
        .bind(cluster)
        .bind(ns)
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?;
    if last.is_some_and(|r| {
        r.get::<String, _>("status") == status && r.get::<Option<String>, _>("reason") == reason
    }) {
        return Ok(());
    }
    let at = ready.and_then(|c| c.last_transition).unwrap_or(now);
    sqlx::query("INSERT INTO certificate_readiness (cluster, namespace, name, at, status, reason, message) VALUES (?, ?, ?, ?, ?, ?, ?)")
        .bind(cluster)
        .bind(ns)
        .bind(name)
        .bind(stamp(at))
        .bind(&status)
        .bind(&reason)
        .bind(ready.and_then(|c| c.message.as_deref()))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Deletes history older than `retention` (objects gone before the cutoff, transitions,
/// readiness and audit rows) every hour, and checkpoints the WAL every five minutes.
pub async fn run_maintenance(
    pool: SqlitePool,
    retention: chrono::Duration,
    now: Now,
    shutdown: CancellationToken,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(300));
    let mut round: u64 = 0;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if round.is_multiple_of(12) {
            match prune(&pool, now() - retention).await {
                Ok(n) if n > 0 => {
                    tracing::info!(rows = n, "history older than the retention period deleted")
                }
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "history retention failed"),
            }
        }
        round += 1;
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&pool)
            .await
        {
            tracing::warn!(error = %e, "WAL checkpoint failed");
        }
    }
}

/// Deletes what is older than `cutoff`; returns the number of rows.
pub async fn prune(pool: &SqlitePool, cutoff: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let c = stamp(cutoff);
    let mut n = 0;
    for sql in [
        "DELETE FROM challenge_transitions WHERE at < ?",
        "DELETE FROM challenges WHERE deleted_at IS NOT NULL AND deleted_at < ?",
        "DELETE FROM order_transitions WHERE at < ?",
        "DELETE FROM orders WHERE deleted_at IS NOT NULL AND deleted_at < ?",
        "DELETE FROM certificate_requests WHERE deleted_at IS NOT NULL AND deleted_at < ?",
        "DELETE FROM certificate_readiness WHERE at < ?",
        "DELETE FROM audit_log WHERE at < ?",
    ] {
        n += sqlx::query(sql)
            .bind(&c)
            .execute(pool)
            .await?
            .rows_affected();
    }
    Ok(n)
}

/// Filters, order and window of `/challenges` and `/api/v1/challenges`.
#[derive(Debug, Clone, Default)]
pub struct ChallengeFilter {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub domain: Option<String>,
    /// `valid`, `invalid`, `errored`, `pending`, …
    pub outcome: Option<String>,
    pub since: Option<DateTime<Utc>>,
    /// The caller's scope as [`super::scope_param`] writes it (None: everything).
    pub scope: Option<String>,
    /// None: the most recently seen first.
    pub sort: Option<Sort>,
    /// Rows skipped before the first returned (a page's start).
    pub offset: i64,
    /// At most this many rows.
    pub limit: i64,
}

impl ChallengeFilter {
    /// One page of a query, within what `scope` sees.
    pub fn of(q: &ChallengeQuery, scope: &Scope) -> Self {
        let (offset, limit) = super::page_window(q.page, q.per_page);
        ChallengeFilter {
            cluster: q.cluster.clone(),
            namespace: q.namespace.clone(),
            domain: q.domain.clone(),
            outcome: q.outcome.clone(),
            since: q.since,
            scope: super::scope_param(scope),
            sort: q.sort,
            offset,
            limit,
        }
    }
}

/// The rows a [`ChallengeFilter`] matches (parameters ?1 to ?6, see [`bind_filter`]).
fn challenge_matches() -> String {
    format!(
        "(?1 IS NULL OR cluster = ?1) AND (?2 IS NULL OR namespace = ?2) \
         AND (?3 IS NULL OR dns_name = ?3 OR dns_name LIKE '%.' || ?3) \
         AND (?4 IS NULL OR state = ?4) AND (?5 IS NULL OR last_seen >= ?5) AND {}",
        super::scope_clause(6)
    )
}

fn bind_filter<'q>(q: SqlQuery<'q>, f: &'q ChallengeFilter) -> SqlQuery<'q> {
    q.bind(&f.cluster)
        .bind(&f.namespace)
        .bind(&f.domain)
        .bind(&f.outcome)
        .bind(f.since.map(stamp))
        .bind(&f.scope)
}

/// `ORDER BY` of a challenge list: the sort key, then the most recently seen first (the
/// reverse of both when reversed); the row id breaks ties so pages never overlap.
fn challenge_order(sort: Option<Sort>) -> &'static str {
    let (key, reversed) = sort.map_or(("recent", false), |s| (s.key, s.reversed));
    match (key, reversed) {
        ("domain", false) => "dns_name ASC, last_seen DESC, id DESC",
        ("domain", true) => "dns_name DESC, last_seen ASC, id ASC",
        ("state", false) => "state ASC, last_seen DESC, id DESC",
        ("state", true) => "state DESC, last_seen ASC, id ASC",
        (_, false) => "last_seen DESC, id DESC",
        (_, true) => "last_seen ASC, id ASC",
    }
}

/// Challenges in the filter's order and window, with their transitions.
pub async fn challenges(
    pool: &SqlitePool,
    f: &ChallengeFilter,
) -> Result<Vec<ChallengeRecord>, sqlx::Error> {
    let mut rows = challenge_rows(pool, f).await?;
    fill_transitions(pool, &mut rows).await?;
    Ok(rows)
}

/// How many challenges the filter matches (ignoring its window).
pub async fn count_challenges(
    pool: &SqlitePool,
    f: &ChallengeFilter,
) -> Result<usize, sqlx::Error> {
    let sql = format!(
        "SELECT COUNT(*) FROM challenges WHERE {}",
        challenge_matches()
    );
    super::count(pool, bind_filter(sqlx::query(&sql), f)).await
}

/// The failed challenges the filter matches (ignoring its window), counted by classified
/// reason, most frequent first. SQLite groups them by their reason text; only the distinct
/// texts come back to be classified.
pub async fn failures_by_reason(
    pool: &SqlitePool,
    f: &ChallengeFilter,
) -> Result<Vec<(&'static str, usize)>, sqlx::Error> {
    let sql = format!(
        "SELECT reason, COUNT(*) FROM challenges WHERE {} AND state IN ('invalid', 'errored') GROUP BY reason",
        challenge_matches()
    );
    let rows = bind_filter(sqlx::query(&sql), f).fetch_all(pool).await?;
    Ok(lookout_app::pages::challenges::tally_failures(
        rows.iter().map(|r| {
            let reason: Option<String> = r.get(0);
            let n: i64 = r.get(1);
            (
                ChallengeFailure::classify(reason.as_deref().unwrap_or_default()).label(),
                usize::try_from(n).unwrap_or_default(),
            )
        }),
    ))
}

/// Challenges in the filter's order and window, without their transitions (see
/// [`fill_transitions`]).
pub async fn challenge_rows(
    pool: &SqlitePool,
    f: &ChallengeFilter,
) -> Result<Vec<ChallengeRecord>, sqlx::Error> {
    let sql = format!(
        "SELECT id, cluster, namespace, name, order_name, dns_name, challenge_type, state, reason, created_at, last_seen, deleted_at \
         FROM challenges WHERE {} ORDER BY {} LIMIT ?7 OFFSET ?8",
        challenge_matches(),
        challenge_order(f.sort)
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
            let failure = (state == "invalid" || state == "errored")
                .then(|| ChallengeFailure::classify(reason.as_deref().unwrap_or_default()).label());
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
pub async fn fill_transitions(
    pool: &SqlitePool,
    rows: &mut [ChallengeRecord],
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut transitions: std::collections::HashMap<i64, Vec<Transition>> =
        std::collections::HashMap::with_capacity(ids.len());
    for t in sqlx::query("SELECT challenge_id, at, state, reason, presented, processing FROM challenge_transitions WHERE challenge_id IN (SELECT value FROM json_each(?)) ORDER BY challenge_id, at, id")
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
                presented: t.get("presented"),
                processing: t.get("processing"),
            });
    }
    for r in rows {
        r.transitions = transitions.remove(&r.id).unwrap_or_default();
    }
    Ok(())
}

/// Everything the history knows about one Certificate, oldest first.
pub async fn certificate_timeline(
    pool: &SqlitePool,
    cluster: &str,
    ns: &str,
    name: &str,
) -> Result<Vec<TimelineEntry>, sqlx::Error> {
    let mut out: Vec<TimelineEntry> = Vec::new();
    for r in sqlx::query("SELECT at, status, reason, message FROM certificate_readiness WHERE cluster = ? AND namespace = ? AND name = ?").bind(cluster).bind(ns).bind(name).fetch_all(pool).await? {
        let reason: Option<String> = r.get("reason");
        out.push(TimelineEntry { at: r.get("at"), kind: "readiness", name: name.to_string(), state: format!("Ready {}", r.get::<String, _>("status")), detail: reason });
    }
    let requests = sqlx::query("SELECT name, outcome, message, created_at, finished_at, last_seen FROM certificate_requests WHERE cluster = ? AND namespace = ? AND certificate = ?")
        .bind(cluster)
        .bind(ns)
        .bind(name)
        .fetch_all(pool)
        .await?;
    for r in &requests {
        let cr: String = r.get("name");
        out.push(TimelineEntry {
            at: r
                .get::<Option<String>, _>("created_at")
                .unwrap_or_else(|| r.get("last_seen")),
            kind: "request",
            name: cr.clone(),
            state: "created".into(),
            detail: None,
        });
        if let Some(done) = r.get::<Option<String>, _>("finished_at") {
            out.push(TimelineEntry {
                at: done,
                kind: "request",
                name: cr.clone(),
                state: r.get("outcome"),
                detail: r.get("message"),
            });
        }
        let orders: Vec<(i64, String)> = sqlx::query(
            "SELECT id, name FROM orders WHERE cluster = ? AND namespace = ? AND request = ?",
        )
        .bind(cluster)
        .bind(ns)
        .bind(&cr)
        .fetch_all(pool)
        .await?
        .into_iter()
        .map(|o| (o.get("id"), o.get("name")))
        .collect();
        for (order_id, order) in orders {
            for t in
                sqlx::query("SELECT at, state, reason FROM order_transitions WHERE order_id = ?")
                    .bind(order_id)
                    .fetch_all(pool)
                    .await?
            {
                out.push(TimelineEntry {
                    at: t.get("at"),
                    kind: "order",
                    name: order.clone(),
                    state: t.get("state"),
                    detail: t.get("reason"),
                });
            }
            for c in sqlx::query("SELECT c.name, c.dns_name, t.at, t.state, t.reason FROM challenges c JOIN challenge_transitions t ON t.challenge_id = c.id WHERE c.cluster = ? AND c.namespace = ? AND c.order_name = ?")
                .bind(cluster)
                .bind(ns)
                .bind(&order)
                .fetch_all(pool)
                .await?
            {
                let state: String = c.get("state");
                out.push(TimelineEntry { at: c.get("at"), kind: "challenge", name: format!("{} ({})", c.get::<String, _>("name"), c.get::<String, _>("dns_name")), state: if state.is_empty() { "created".into() } else { state }, detail: c.get("reason") });
            }
        }
    }
    out.sort_by(|a, b| a.at.cmp(&b.at));
    Ok(out)
}

/// What changed since `since`, newest first, at most `limit` rows.
pub async fn recent_changes(
    pool: &SqlitePool,
    since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<lookout_app::model::history::RecentChange>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT at, cluster, namespace, 'Certificate' AS kind, name, 'Ready ' || status AS what, reason AS detail \
           FROM certificate_readiness WHERE at >= ?1 \
         UNION ALL \
         SELECT t.at, c.cluster, c.namespace, 'Challenge', c.name || ' (' || c.dns_name || ')', \
                CASE t.state WHEN '' THEN 'created' ELSE t.state END, t.reason \
           FROM challenge_transitions t JOIN challenges c ON c.id = t.challenge_id WHERE t.at >= ?1 \
         UNION ALL \
         SELECT deleted_at, cluster, namespace, 'Challenge', name || ' (' || dns_name || ')', 'deleted', \
                CASE state WHEN '' THEN NULL ELSE 'last state ' || state END \
           FROM challenges WHERE deleted_at >= ?1 \
         UNION ALL \
         SELECT at, cluster, '', 'Cluster', cluster, state, error FROM cluster_sync_events WHERE at >= ?1 \
         UNION ALL \
         SELECT at, cluster, namespace, kind, name, \
                action || CASE dry_run WHEN 1 THEN ' (preview)' ELSE '' END || ': ' || outcome, error \
           FROM audit_log WHERE at >= ?1 \
         ORDER BY at DESC LIMIT ?2",
    )
    .bind(stamp(since))
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| lookout_app::model::history::RecentChange {
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

/// Issued certificates with a known ACME server since `since` (for budgets).
pub async fn issuances(
    pool: &SqlitePool,
    since: DateTime<Utc>,
) -> Result<Vec<lookout_app::model::budget::Issuance>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT acme_server, names, COALESCE(finished_at, last_seen) AS at, cluster, namespace, certificate, name FROM certificate_requests \
         WHERE outcome = 'issued' AND acme_server IS NOT NULL AND COALESCE(finished_at, last_seen) >= ?",
    )
    .bind(stamp(since))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let at = DateTime::parse_from_rfc3339(&r.get::<String, _>("at"))
                .ok()?
                .with_timezone(&Utc);
            let names: Vec<String> =
                serde_json::from_str(&r.get::<String, _>("names")).unwrap_or_default();
            let certificate: Option<String> = r.get("certificate");
            Some(lookout_app::model::budget::Issuance {
                server: r.get("acme_server"),
                names,
                at,
                origin: lookout_app::model::budget::Origin {
                    cluster: r.get("cluster"),
                    namespace: r.get("namespace"),
                    kind: if certificate.is_some() {
                        "Certificate".into()
                    } else {
                        "CertificateRequest".into()
                    },
                    name: certificate.unwrap_or_else(|| r.get("name")),
                },
            })
        })
        .filter(|i| !i.names.is_empty())
        .collect())
}

/// Challenges that became invalid since `since`, with the ACME server of their request.
pub async fn failed_authorizations(
    pool: &SqlitePool,
    since: DateTime<Utc>,
) -> Result<Vec<lookout_app::model::budget::FailedAuthorization>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT c.dns_name, t.at, c.cluster, c.namespace, c.name, r.acme_server FROM challenge_transitions t \
         JOIN challenges c ON c.id = t.challenge_id \
         JOIN orders o ON o.cluster = c.cluster AND o.namespace = c.namespace AND o.name = c.order_name \
         JOIN certificate_requests r ON r.cluster = o.cluster AND r.namespace = o.namespace AND r.name = o.request \
         WHERE t.state = 'invalid' AND t.at >= ? AND r.acme_server IS NOT NULL",
    )
    .bind(stamp(since))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let at = DateTime::parse_from_rfc3339(&r.get::<String, _>("at"))
                .ok()?
                .with_timezone(&Utc);
            Some(lookout_app::model::budget::FailedAuthorization {
                server: r.get("acme_server"),
                name: r.get("dns_name"),
                at,
                origin: lookout_app::model::budget::Origin {
                    cluster: r.get("cluster"),
                    namespace: r.get("namespace"),
                    kind: "Challenge".into(),
                    name: r.get("name"),
                },
            })
        })
        .collect())
}

/// Recomputes the Let's Encrypt budgets every `interval` and hands them to `publish`.
pub async fn run_budgets(
    pool: SqlitePool,
    interval: Duration,
    now: Now,
    publish: impl Fn(Vec<lookout_app::model::budget::Budget>) + Send + 'static,
    shutdown: CancellationToken,
) {
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let at = now();
        // Renewal detection needs the sets issued before the window too.
        let issued = issuances(&pool, at - chrono::Duration::days(120)).await;
        let failed = failed_authorizations(&pool, at - chrono::Duration::hours(1)).await;
        match (issued, failed) {
            (Ok(i), Ok(f)) => publish(lookout_app::model::budget::compute(&i, &f, at)),
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!(error = %e, "could not compute the Let's Encrypt budgets")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Db;

    /// Challenges `(cluster, namespace, dns_name, state, reason, last_seen minute)`.
    async fn seed(db: &Db, rows: &[(&str, &str, &str, &str, &str, u32)]) {
        for (i, (cluster, ns, host, state, reason, minute)) in rows.iter().enumerate() {
            sqlx::query("INSERT INTO challenges (cluster, namespace, name, uid, dns_name, challenge_type, state, reason, presented, processing, last_seen) VALUES (?, ?, ?, ?, ?, 'HTTP-01', ?, ?, 0, 0, ?)")
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

    #[tokio::test]
    async fn sqlite_filters_scopes_sorts_counts_groups_and_pages_the_challenges() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&format!("sqlite://{}", dir.path().join("t.db").display()))
            .await
            .unwrap();
        let redirect = "Invalid response: 'Redirect' to https://x/";
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
                    "404 Not Found",
                    5,
                ),
                (
                    "zrh-prod",
                    "acme-web",
                    "e.acme.example",
                    "errored",
                    "got 'Redirect'",
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
        assert_eq!(
            failures_by_reason(&db.reader, &all).await.unwrap(),
            [
                ("redirect to HTTPS", 3),
                ("404 not found", 1),
                ("timeout", 1)
            ],
            "two texts of one reason counted together"
        );

        // A customer's scope: acme namespaces of zrh clusters only.
        let customer = Scope::from_grants(vec![lookout_app::model::scope::Grant {
            clusters: vec!["zrh-*".into()],
            namespaces: vec!["acme-*".into()],
        }]);
        let q = |sort: Option<&str>, page: usize, per_page: usize| ChallengeQuery {
            sort: sort.and_then(|s| Sort::parse(s, lookout_app::sort::CHALLENGE_SORTS)),
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
            [("redirect to HTTPS", 2), ("timeout", 1)]
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
        let nobody = ChallengeFilter::of(&q(None, 1, 50), &Scope::default());
        assert_eq!(count_challenges(&db.reader, &nobody).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn retention_deletes_only_what_is_older_than_the_cutoff() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&format!("sqlite://{}", dir.path().join("t.db").display()))
            .await
            .unwrap();
        let old = "2026-01-01T00:00:00.000Z";
        let new = "2026-06-01T00:00:00.000Z";
        for (uid, deleted) in [("a", Some(old)), ("b", Some(new)), ("c", None)] {
            sqlx::query("INSERT INTO challenges (cluster, namespace, name, uid, dns_name, challenge_type, state, presented, processing, last_seen, deleted_at) VALUES ('z', 'n', ?, ?, 'h', 'HTTP-01', 'valid', 0, 0, ?, ?)")
                .bind(uid)
                .bind(uid)
                .bind(old)
                .bind(deleted)
                .execute(&db.writer)
                .await
                .unwrap();
        }
        // Only the transitions below (not the ones the insert trigger added).
        sqlx::query("DELETE FROM challenge_transitions")
            .execute(&db.writer)
            .await
            .unwrap();
        sqlx::query("INSERT INTO challenge_transitions (challenge_id, at, state, presented, processing) VALUES (3, ?, 'pending', 0, 0), (3, ?, 'valid', 0, 0)")
            .bind(old)
            .bind(new)
            .execute(&db.writer)
            .await
            .unwrap();
        let cutoff = DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let deleted = prune(&db.writer, cutoff).await.unwrap();
        assert_eq!(
            deleted, 2,
            "the old deleted challenge and the old transition"
        );
        let left: Vec<String> = sqlx::query_scalar("SELECT uid FROM challenges ORDER BY uid")
            .fetch_all(&db.reader)
            .await
            .unwrap();
        assert_eq!(
            left,
            vec!["b", "c"],
            "live and recently deleted challenges stay"
        );
        let transitions: i64 = sqlx::query_scalar("SELECT count(*) FROM challenge_transitions")
            .fetch_one(&db.reader)
            .await
            .unwrap();
        assert_eq!(transitions, 1);
    }
}
