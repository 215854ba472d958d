//! The ACME history: one writer task fed by a bounded channel, committing in groups (one
//! write transaction about every 100 ms or 5,000 events, 500 on PostgreSQL), idempotent by comparing with the
//! stored state (read for a whole group at once, see [`Known`]) — also when several
//! replicas write the same database: a transaction holds the writers' lock, and an
//! observation older than the stored state (by resource version) adds nothing; retention
//! (in `retention`); and the queries the API reads.

use std::time::Duration;

use crate::store::Pool;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use lookout_app::model::certificate::{CertificateRequestView, OrderView};
use sqlx::{AnyConnection, Row};
use tokio_util::sync::CancellationToken;

use super::writer::{Stamped, Writer};

mod challenges;
mod known;
mod requests;
mod retention;

use crate::clock::Now;
use known::Known;
pub use lookout_app::model::history::{ChallengeRecord, HistoryEvent, TimelineEntry, Transition};
use lookout_app::model::kind::Kind;
pub use retention::{prune, run_maintenance};

/// Events a batch holds at most on SQLite. A batch is small when events trickle in (what
/// arrived within [`LINGER`]) and this large only when the writer is behind, as at the start
/// of a large fleet: every row inserted touches a leaf of each index of its table (the keys
/// are spread over clusters and random uids), and each commit writes every page it touched
/// twice (to the WAL, then to the database at the checkpoint) — 500 events a batch wrote
/// 3 GB for the 62 MB database of a 300-cluster start, 5,000 write 0.65 GB. A batch of
/// 5,000 commits in 0.2–0.5 s, which is as long as other writers wait for the lock.
const BATCH: usize = 5_000;
/// Events a batch holds at most on PostgreSQL. The server writes its own pages; what a
/// batch costs there is round trips (an Order's event is up to three), and the batch holds
/// the writers' lock the whole time: at a millisecond a round trip, 5,000 Orders would hold
/// it for 15 s, past another replica's lock timeout (10 s) and the in-process writers' wait
/// for the one connection (5 s).
const BATCH_POSTGRES: usize = 500;
/// How long the writer gathers a batch.
const LINGER: Duration = Duration::from_millis(100);
/// Events held in memory while the database refuses writes.
const HOLD: usize = 50_000;

use super::stamp;

fn opt_stamp(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(stamp)
}

/// The history's writer for `engine`: batches of up to 5,000 events on SQLite and 500 on
/// PostgreSQL gathered for 100 ms, up to 50,000 events held in memory while the database
/// refuses writes.
pub fn writer(engine: super::Engine) -> Writer<HistoryEvent> {
    Writer {
        what: "history",
        batch: match engine {
            super::Engine::Sqlite => BATCH,
            super::Engine::Postgres => BATCH_POSTGRES,
        },
        linger: LINGER,
        hold: HOLD,
        write: write_batch,
    }
}

/// Writes one batch in one write transaction (SQLite's `BEGIN IMMEDIATE`), each event at the
/// time it reached the writer; on any error the transaction is rolled back and the error
/// returned (the writer holds the batch and tries again).
fn write_batch<'a>(
    pool: &'a Pool,
    batch: &'a [Stamped<HistoryEvent>],
) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    Box::pin(async move {
        let mut writing = Writing(Some(pool.acquire().await?));
        let conn = writing.conn();
        let engine = super::Engine::of_connection(conn);
        if let Err(e) = sqlx::query(engine.begin_write()).execute(&mut *conn).await {
            writing.done();
            return Err(e);
        }
        let mut result = super::exclude_other_writers(conn).await;
        if result.is_ok() {
            result = write_events(conn, batch).await;
        }
        if result.is_ok() {
            result = sqlx::query("COMMIT").execute(&mut *conn).await.map(drop);
        }
        if result.is_err() {
            // Also after a failed COMMIT (a full disk), which can leave the transaction open.
            // An error here is expected when the database ended the transaction itself (SQLite
            // rolls back on some errors, a full disk among them).
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        } else {
            tracing::debug!(events = batch.len(), "history batch committed");
        }
        writing.done();
        result
    })
}

/// The connection of a batch being written, its transaction begun by hand. Dropped before
/// [`Writing::done`] — the writer's timeout dropped the write while it ran — the connection
/// is closed instead of going back to the pool: closing ends its transaction, which would
/// otherwise stay open for the next batch to run inside (and on PostgreSQL keep the writers'
/// lock from every other replica meanwhile). sqlx's own transactions are not used: after
/// SQLite rolled a transaction back by itself (a full disk), sqlx went on counting it as
/// open and refused every later BEGIN.
struct Writing(Option<sqlx::pool::PoolConnection<sqlx::Any>>);

impl Writing {
    fn conn(&mut self) -> &mut AnyConnection {
        self.0.as_mut().expect("the connection is held until done")
    }

    /// The transaction is over (committed or rolled back): the connection may be reused.
    fn done(mut self) {
        self.0.take();
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        if let Some(conn) = &mut self.0 {
            conn.close_on_drop();
        }
    }
}

/// Writes the events of a batch in order, within its transaction.
async fn write_events(
    conn: &mut AnyConnection,
    batch: &[Stamped<HistoryEvent>],
) -> Result<(), sqlx::Error> {
    let mut known = Known::read(conn, batch).await?;
    for ev in batch {
        apply(conn, &ev.item, ev.at, &mut known).await?;
    }
    challenges::write(conn, &mut known.challenges).await?;
    requests::write_new(conn, &mut known, requests::Then::End).await?;
    known.write_readiness(conn).await
}

async fn apply(
    conn: &mut AnyConnection,
    ev: &HistoryEvent,
    now: DateTime<Utc>,
    known: &mut Known,
) -> Result<(), sqlx::Error> {
    match ev {
        HistoryEvent::Challenge {
            cluster,
            view,
            deleted,
            revision,
        } => {
            let seen = (*deleted, *revision);
            challenges::challenge(conn, &mut known.challenges, cluster, view, seen, now).await
        }
        HistoryEvent::Order {
            cluster,
            view,
            deleted,
            revision,
        } => order(conn, cluster, view, (*deleted, *revision), now).await,
        HistoryEvent::Request {
            cluster,
            view,
            acme_server,
            deleted,
            revision,
        } => {
            let acme_server = acme_server.as_deref();
            let seen = (*deleted, *revision);
            requests::request(conn, known, cluster, view, acme_server, seen, now).await
        }
        HistoryEvent::Issuer {
            cluster,
            kind,
            namespace,
            name,
            acme_server,
        } => {
            requests::issuer_seen(conn, known, cluster, *kind, (namespace, name), acme_server).await
        }
        HistoryEvent::Readiness {
            cluster,
            namespace,
            name,
            ready,
            revision,
        } => {
            known.readiness((cluster, namespace, name), ready.as_ref(), *revision, now);
            Ok(())
        }
        HistoryEvent::Relisted {
            cluster,
            kind,
            live,
            listed_from,
        } => {
            // The sweep below judges every stored row: the batch's new ones first.
            requests::write_new(conn, known, requests::Then::More).await?;
            challenges::write(conn, &mut known.challenges).await?;
            let table = match kind {
                Kind::Challenge => "challenges",
                Kind::Order => "orders",
                Kind::CertificateRequest => "certificate_requests",
                // Only the kinds above have a table; the watcher sends no other.
                _ => return Ok(()),
            };
            let live_uids = super::Engine::of_connection(conn).json_texts(3);
            // Only what was stored before the list began: a row another replica wrote since
            // is of an object this list may be too old to hold.
            let sql = format!("UPDATE {table} SET deleted_at = $1 WHERE cluster = $2 AND deleted_at IS NULL AND uid NOT IN {live_uids} AND ($4 IS NULL OR last_seen < $4)");
            let live = serde_json::to_string(live).unwrap_or_else(|_| "[]".into());
            sqlx::query(&sql)
                .bind(stamp(now))
                .bind(cluster)
                .bind(live)
                .bind(listed_from.map(stamp))
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
    }
}

/// Marks row `id` deleted, at the deletion's `revision` when known: an observation from
/// before the deletion that another replica writes late is then older than the stored state
/// and does not bring the object back.
async fn mark_deleted(
    conn: &mut AnyConnection,
    table: &str,
    id: i64,
    (now, revision): (DateTime<Utc>, Option<i64>),
) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "UPDATE {table} SET deleted_at = COALESCE(deleted_at, $1), last_seen = $2, \
         resource_version = COALESCE($4, resource_version) WHERE id = $3"
    ))
    .bind(stamp(now))
    .bind(stamp(now))
    .bind(id)
    .bind(revision)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Whether an observation at `revision` is older than (or the same as) the state stored at
/// `stored`: another replica sharing the database wrote it or a newer one already. Unknown
/// revisions are never older.
pub(crate) fn already_stored(revision: Option<i64>, stored: Option<i64>) -> bool {
    matches!((revision, stored), (Some(r), Some(s)) if r <= s)
}

async fn order(
    conn: &mut AnyConnection,
    cluster: &str,
    v: &OrderView,
    (deleted, revision): (bool, Option<i64>),
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let uid = v.uid.to_string();
    let existing = sqlx::query(
        "SELECT id, state, reason, resource_version FROM orders WHERE cluster = $1 AND uid = $2",
    )
    .bind(cluster)
    .bind(&uid)
    .fetch_optional(&mut *conn)
    .await?;
    let (state, reason) = (v.state.to_string(), v.reason.as_deref().map(str::to_string));
    let id = match existing {
        Some(row) => {
            let id: i64 = row.get("id");
            if deleted {
                return mark_deleted(conn, "orders", id, (now, revision)).await;
            }
            let same = row.get::<String, _>("state") == state
                && row.get::<Option<String>, _>("reason") == reason;
            if same || already_stored(revision, row.get("resource_version")) {
                return Ok(());
            }
            sqlx::query("UPDATE orders SET state = $1, reason = $2, last_seen = $3, deleted_at = NULL, resource_version = $4 WHERE id = $5")
                .bind(&state)
                .bind(&reason)
                .bind(stamp(now))
                .bind(revision)
                .bind(id)
                .execute(&mut *conn)
                .await?;
            id
        }
        None => sqlx::query(
            "INSERT INTO orders (cluster, namespace, name, uid, request, state, reason, replaces, created_at, last_seen, deleted_at, resource_version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
        )
        .bind(cluster)
        .bind(&*v.namespace)
        .bind(&*v.name)
        .bind(&uid)
        .bind(v.owner.as_ref().map(|o| o.name.to_string()))
        .bind(&state)
        .bind(&reason)
        .bind(i64::from(v.replaces))
        .bind(opt_stamp(v.created))
        .bind(stamp(now))
        .bind(deleted.then(|| stamp(now)))
        .bind(revision)
        .fetch_one(&mut *conn)
        .await?
        .get("id"),
    };
    sqlx::query(
        "INSERT INTO order_transitions (order_id, at, state, reason) VALUES ($1, $2, $3, $4)",
    )
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

/// Issued certificates with a known ACME server since `since` (for budgets).
pub async fn issuances(
    pool: &Pool,
    since: DateTime<Utc>,
) -> Result<Vec<lookout_app::model::budget::Issuance>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT acme_server, names, COALESCE(finished_at, last_seen) AS at, cluster, namespace, certificate, name FROM certificate_requests \
         WHERE outcome = 'issued' AND acme_server IS NOT NULL AND COALESCE(finished_at, last_seen) >= $1",
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
            Some(lookout_app::model::budget::Issuance {
                server: r.get("acme_server"),
                names,
                at,
                origin: request_origin(&r),
            })
        })
        .filter(|i| !i.names.is_empty())
        .collect())
}

/// Challenges that became invalid since `since`, with the ACME server and account of their
/// request.
pub async fn failed_authorizations(
    pool: &Pool,
    since: DateTime<Utc>,
) -> Result<Vec<lookout_app::model::budget::FailedAuthorization>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT c.dns_name, t.at, c.cluster, c.namespace, c.name, r.acme_server, r.issuer_kind, r.issuer_name FROM challenge_transitions t \
         JOIN challenges c ON c.id = t.challenge_id \
         JOIN orders o ON o.cluster = c.cluster AND o.namespace = c.namespace AND o.name = c.order_name \
         JOIN certificate_requests r ON r.cluster = o.cluster AND r.namespace = o.namespace AND r.name = o.request \
         WHERE t.state = 'invalid' AND t.at >= $1 AND r.acme_server IS NOT NULL",
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
                account: account_of(&r),
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

/// The object a request row's budget event is shown on: its Certificate, else the request.
fn request_origin(r: &sqlx::any::AnyRow) -> lookout_app::model::budget::Origin {
    let certificate: Option<String> = r.get("certificate");
    lookout_app::model::budget::Origin {
        cluster: r.get("cluster"),
        namespace: r.get("namespace"),
        kind: if certificate.is_some() {
            "Certificate".into()
        } else {
            "CertificateRequest".into()
        },
        name: certificate.unwrap_or_else(|| r.get("name")),
    }
}

/// The ACME account of a request row (its issuer).
fn account_of(r: &sqlx::any::AnyRow) -> String {
    let kind: Option<String> = r.get("issuer_kind");
    let name: Option<String> = r.get("issuer_name");
    lookout_app::model::budget::account(
        &r.get::<String, _>("cluster"),
        &r.get::<String, _>("namespace"),
        kind.as_deref().unwrap_or("Issuer"),
        name.as_deref().unwrap_or_default(),
    )
}

/// Orders created since `since`, with their request's ACME server, account and names.
pub async fn new_orders(
    pool: &Pool,
    since: DateTime<Utc>,
) -> Result<Vec<lookout_app::model::budget::NewOrder>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT o.created_at, o.cluster, o.namespace, o.replaces, r.certificate, r.name, r.acme_server, r.issuer_kind, r.issuer_name, r.names FROM orders o \
         JOIN certificate_requests r ON r.cluster = o.cluster AND r.namespace = o.namespace AND r.name = o.request \
         WHERE o.created_at >= $1 AND r.acme_server IS NOT NULL",
    )
    .bind(stamp(since))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let at = DateTime::parse_from_rfc3339(&r.get::<Option<String>, _>("created_at")?)
                .ok()?
                .with_timezone(&Utc);
            Some(lookout_app::model::budget::NewOrder {
                server: r.get("acme_server"),
                account: account_of(&r),
                names: serde_json::from_str(&r.get::<String, _>("names")).unwrap_or_default(),
                at,
                replaces: super::flag(&r, "replaces"),
                origin: request_origin(&r),
            })
        })
        .filter(|o| !o.names.is_empty())
        .collect())
}

/// Requests the CA refused over a limit since `since`, with the retry time it named: a
/// failed request whose message carries "retry after".
pub async fn refusals(
    pool: &Pool,
    since: DateTime<Utc>,
) -> Result<Vec<lookout_app::model::budget::CaRefusal>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT finished_at, cluster, namespace, name, certificate, acme_server, issuer_kind, issuer_name, names, message FROM certificate_requests \
         WHERE outcome = 'failed' AND finished_at >= $1 AND acme_server IS NOT NULL AND lower(message) LIKE '%retry after%'",
    )
    .bind(stamp(since))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let at = DateTime::parse_from_rfc3339(&r.get::<Option<String>, _>("finished_at")?)
                .ok()?
                .with_timezone(&Utc);
            let names: Vec<String> =
                serde_json::from_str(&r.get::<String, _>("names")).unwrap_or_default();
            lookout_app::model::budget::CaRefusal::read(
                &r.get::<String, _>("acme_server"),
                &account_of(&r),
                &names,
                &r.get::<Option<String>, _>("message")?,
                at,
                request_origin(&r),
            )
        })
        .collect())
}

/// Recomputes the Let's Encrypt budgets every `interval` and hands them to `publish`.
pub async fn run_budgets(
    pool: Pool,
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
        // Renewal detection needs the sets issued in the 120 days before the oldest event
        // that still matters (a week), and the pausing buckets need the failures of the
        // last days (3 600 of them empty it; one comes back a day).
        let issued = issuances(&pool, at - chrono::Duration::days(127)).await;
        let failed = failed_authorizations(&pool, at - chrono::Duration::days(7)).await;
        let ordered = new_orders(&pool, at - chrono::Duration::hours(3)).await;
        // A retry time lies at most a week ahead (the longest period of a limit).
        let refused = refusals(&pool, at - chrono::Duration::days(7)).await;
        match (issued, failed, ordered, refused) {
            (Ok(issuances), Ok(failures), Ok(orders), Ok(refusals)) => {
                let history = lookout_app::model::budget::History {
                    orders,
                    issuances,
                    failures,
                    refusals,
                };
                publish(lookout_app::model::budget::compute(&history, at))
            }
            (Err(e), _, _, _) | (_, Err(e), _, _) | (_, _, Err(e), _) | (_, _, _, Err(e)) => {
                tracing::error!(error = %e, "could not compute the Let's Encrypt budgets")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Challenges of a batch go out in multi-row upserts: one Challenge seen new,
    /// pending, pending again (nothing changed), valid and deleted within one batch, among
    /// others, keeps every transition in order and ends deleted; a replayed older state
    /// (by resource version) adds nothing.
    #[tokio::test]
    async fn a_batch_of_challenge_events_keeps_each_transition_in_order() {
        use lookout_app::model::interner::Interner;
        let mut strings = Interner::default();
        let mut view = |i: usize, state: &str| {
            let meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta =
                serde_json::from_value(
                    serde_json::json!({"name": format!("ch-{i}"), "namespace": "shop",
                    "uid": format!("00000000-0000-4000-8000-{i:012x}")}),
                )
                .unwrap();
            let data = serde_json::json!({"spec": {"dnsName": format!("h{i}.example.com"), "type": "HTTP-01"},
                "status": {"state": state, "presented": !state.is_empty(), "processing": state == "pending"}});
            let view =
                lookout_app::model::certificate::ChallengeView::project(&meta, &data, &mut strings);
            std::sync::Arc::new(view.unwrap())
        };
        let at = |s: i64| DateTime::from_timestamp(1_780_000_000 + s, 0).unwrap();
        let event = |view, deleted, revision| HistoryEvent::Challenge {
            cluster: "zrh".into(),
            view,
            deleted,
            revision: Some(revision),
        };
        let mut batch = vec![];
        for (s, (i, state, deleted, revision)) in [
            (1, "", false, 10),
            (2, "", false, 11),
            (1, "pending", false, 12),
            (2, "pending", false, 13),
            (1, "pending", false, 14),
            (1, "valid", false, 15),
            (2, "", false, 12),
            (1, "valid", true, 16),
        ]
        .into_iter()
        .enumerate()
        {
            batch.push(Stamped {
                at: at(s as i64),
                item: event(view(i, state), deleted, revision),
            });
        }
        for db in crate::store::testdb::engines().await {
            write_batch(&db.writer, &batch).await.unwrap();
            let rows: Vec<(String, String, Option<String>, Option<i64>)> = sqlx::query_as(
                "SELECT name, state, deleted_at, resource_version FROM challenges ORDER BY name",
            )
            .fetch_all(&db.reader)
            .await
            .unwrap();
            assert_eq!(
                rows,
                vec![
                    ("ch-1".into(), "valid".into(), Some(stamp(at(7))), Some(16)),
                    ("ch-2".into(), "pending".into(), None, Some(13)),
                ],
                "{}",
                db.url
            );
            let transitions: Vec<(String, String, String)> = sqlx::query_as(
                "SELECT c.name, t.state, t.at FROM challenge_transitions t JOIN challenges c ON c.id = t.challenge_id ORDER BY t.id",
            )
            .fetch_all(&db.reader)
            .await
            .unwrap();
            assert_eq!(
                transitions,
                vec![
                    ("ch-1".into(), "".into(), stamp(at(0))),
                    ("ch-2".into(), "".into(), stamp(at(1))),
                    ("ch-1".into(), "pending".into(), stamp(at(2))),
                    ("ch-2".into(), "pending".into(), stamp(at(3))),
                    ("ch-1".into(), "valid".into(), stamp(at(5))),
                ],
                "{}",
                db.url
            );
        }
    }

    /// A writer that is behind (the start of a large fleet) takes what is queued in batches
    /// of up to 5,000 events on SQLite, each one transaction: a commit writes every page its
    /// rows touched, so batches of 500 wrote the database's pages over and over. PostgreSQL
    /// keeps batches of 500 (round trips, not pages, are its cost, and a batch holds the
    /// writers' lock).
    #[tokio::test]
    async fn a_writer_behind_writes_what_is_queued_in_few_large_batches() {
        for db in crate::store::testdb::engines().await {
            let (tx, rx) = tokio::sync::mpsc::channel(12_000);
            for i in 0..12_000 {
                tx.send(HistoryEvent::Readiness {
                    cluster: format!("c{}", i % 300),
                    namespace: "shop".into(),
                    name: format!("web-{i}"),
                    ready: None,
                    revision: Some(1),
                })
                .await
                .unwrap();
            }
            drop(tx);
            let committed = db.health.committed();
            super::super::writer::run(
                writer(db.engine),
                db.writer.clone(),
                rx,
                tokio_util::sync::CancellationToken::new(),
                crate::clock::wall_clock(),
                db.health.clone(),
            )
            .await;
            let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM certificate_readiness")
                .fetch_one(&db.reader)
                .await
                .unwrap();
            assert_eq!(rows, 12_000, "{}", db.url);
            let batches = match db.engine {
                crate::store::Engine::Sqlite => 3,
                crate::store::Engine::Postgres => 24,
            };
            assert_eq!(
                db.health.committed() - committed,
                batches,
                "5,000 + 5,000 + 2,000 on SQLite, 500 each on PostgreSQL ({})",
                db.url
            );
        }
    }

    /// A batch whose write is dropped while it runs (the writer's timeout) leaves no
    /// transaction open for the next batch: on PostgreSQL such a transaction held the
    /// writers' lock from every other replica until this writer's next batch happened to
    /// commit it, together with what the dropped batch had half written.
    #[tokio::test]
    async fn a_batch_dropped_mid_write_leaves_no_transaction_open() {
        use sqlx::Connection as _;
        let Some(db) = crate::store::testdb::engines()
            .await
            .into_iter()
            .find(|db| db.engine == crate::store::Engine::Postgres)
        else {
            return;
        };
        // Another replica holds the writers' lock: the batch waits for it inside its
        // transaction until the timeout drops it.
        let mut other = sqlx::AnyConnection::connect(&db.url).await.unwrap();
        sqlx::query("BEGIN").execute(&mut other).await.unwrap();
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(crate::store::WRITERS_LOCK)
            .execute(&mut other)
            .await
            .unwrap();
        let batch = [Stamped {
            at: Utc::now(),
            item: HistoryEvent::Readiness {
                cluster: "c".into(),
                namespace: "shop".into(),
                name: "web".into(),
                ready: None,
                revision: Some(1),
            },
        }];
        let dropped =
            tokio::time::timeout(Duration::from_millis(300), write_batch(&db.writer, &batch));
        assert!(dropped.await.is_err(), "the batch waits for the lock");
        sqlx::query("COMMIT").execute(&mut other).await.unwrap();

        // The writer's next connection (its pool has one) is outside any transaction:
        // PostgreSQL refuses a SAVEPOINT there.
        let mut conn = db.writer.acquire().await.unwrap();
        let in_transaction = sqlx::query("SAVEPOINT probe")
            .execute(&mut *conn)
            .await
            .is_ok();
        assert!(
            !in_transaction,
            "the dropped batch's transaction is still open"
        );
        drop(conn);
        // The server ends the closed session's transaction, and its lock, as it notices.
        let mut free = false;
        for _ in 0..50 {
            free = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                .bind(crate::store::WRITERS_LOCK)
                .fetch_one(&mut other)
                .await
                .unwrap();
            if free {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(free, "the dropped batch still holds the writers' lock");
        let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM certificate_readiness")
            .fetch_one(&db.reader)
            .await
            .unwrap();
        assert_eq!(rows, 0, "nothing of the dropped batch is written");
    }

    #[tokio::test]
    async fn retention_deletes_only_what_is_older_than_the_cutoff() {
        for db in crate::store::testdb::engines().await {
            let old = "2026-01-01T00:00:00.000Z";
            let new = "2026-06-01T00:00:00.000Z";
            for (uid, deleted) in [("a", Some(old)), ("b", Some(new)), ("c", None)] {
                sqlx::query("INSERT INTO challenges (cluster, namespace, name, uid, dns_name, challenge_type, state, presented, processing, last_seen, deleted_at) VALUES ('z', 'n', $1, $2, 'h', 'HTTP-01', 'valid', 0, 0, $3, $4)")
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
            sqlx::query("INSERT INTO challenge_transitions (challenge_id, at, state, presented, processing) VALUES (3, $1, 'pending', 0, 0), (3, $2, 'valid', 0, 0)")
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

    /// An Order's `spec.replaces` (ARI) reaches the budgets: such an order is exempt from
    /// the new-orders limit.
    #[tokio::test]
    async fn orders_are_read_for_the_budgets_with_their_account_and_ari_flag() {
        for db in crate::store::testdb::engines().await {
            let at = "2026-06-01T10:00:00.000Z";
            sqlx::query("INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, outcome, created_at, last_seen) \
                     VALUES ('zrh', 'shop', 'web-tls-1', 'r1', 'web-tls', 1, 'ClusterIssuer', 'letsencrypt-prod', 'https://acme-v02.api.letsencrypt.org/directory', '[\"web.example.com\"]', 'pending', $1, $2)")
            .bind(at)
            .bind(at)
            .execute(&db.writer)
            .await
            .unwrap();
            let mut interner = lookout_app::model::interner::Interner::default();
            let meta = |name: &str| {
                serde_json::from_value(serde_json::json!({"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                "creationTimestamp": "2026-06-01T10:00:00Z",
                "ownerReferences": [{"apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest", "name": "web-tls-1", "uid": "r1", "controller": true}]}))
            .unwrap()
            };
            let now = DateTime::parse_from_rfc3339("2026-06-01T10:00:05Z")
                .unwrap()
                .with_timezone(&Utc);
            let mut conn = db.writer.acquire().await.unwrap();
            for (name, spec) in [
                (
                    "plain",
                    serde_json::json!({"dnsNames": ["web.example.com"]}),
                ),
                (
                    "ari",
                    serde_json::json!({"dnsNames": ["web.example.com"], "replaces": "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"}),
                ),
            ] {
                let view = OrderView::project(
                    &meta(name),
                    &serde_json::json!({"spec": spec}),
                    &mut interner,
                )
                .unwrap();
                order(&mut conn, "zrh", &view, (false, None), now)
                    .await
                    .unwrap();
            }
            drop(conn);
            let since = DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
                .unwrap()
                .with_timezone(&Utc);
            let mut orders = new_orders(&db.reader, since).await.unwrap();
            orders.sort_by_key(|o| o.replaces);
            assert_eq!(orders.len(), 2);
            assert_eq!((orders[0].replaces, orders[1].replaces), (false, true));
            assert_eq!(orders[0].account, "ClusterIssuer letsencrypt-prod (zrh)");
            assert_eq!(orders[0].names, ["web.example.com"]);
            assert_eq!(orders[0].origin.name, "web-tls");
        }
    }

    #[tokio::test]
    async fn refused_requests_are_read_with_the_cas_retry_time() {
        for db in crate::store::testdb::engines().await {
            let at = "2026-06-01T10:00:00.000Z";
            let refused = "Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s, retry after 2026-06-01 17:30:00 UTC: see https://letsencrypt.org/docs/rate-limits/";
            for (name, outcome, message) in [
                ("promo-tls-1", "failed", refused),
                (
                    "web-tls-1",
                    "failed",
                    "Failed to finalize Order: 403 unauthorized",
                ),
                ("old-tls-1", "issued", refused),
            ] {
                sqlx::query("INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, outcome, reason, message, created_at, finished_at, last_seen) \
                         VALUES ('zrh', 'shop', $1, $2, $3, 1, 'ClusterIssuer', 'letsencrypt-prod', 'https://acme-v02.api.letsencrypt.org/directory', '[\"promo.example.com\"]', $4, 'Failed', $5, $6, $7, $8)")
                .bind(name)
                .bind(name)
                .bind(name.trim_end_matches("-1"))
                .bind(outcome)
                .bind(message)
                .bind(at)
                .bind(at)
                .bind(at)
                .execute(&db.writer)
                .await
                .unwrap();
            }
            let since = DateTime::parse_from_rfc3339("2026-05-30T00:00:00Z")
                .unwrap()
                .with_timezone(&Utc);
            let got = refusals(&db.reader, since).await.unwrap();
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].key, "promo.example.com");
            assert_eq!(got[0].origin.name, "promo-tls");
            assert_eq!(
                got[0].retry_after,
                DateTime::parse_from_rfc3339("2026-06-01T17:30:00Z").unwrap()
            );
        }
    }
}
