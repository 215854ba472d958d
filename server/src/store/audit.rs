//! The audit log: one row for every preview and every action taken through Lookout.

use std::time::Duration;

use crate::store::Pool;
use chrono::{DateTime, SecondsFormat, Utc};
use futures::future::BoxFuture;
use lookout_app::model::choice::Choice;
use lookout_app::model::history::AuditEntry;
use lookout_app::model::view::View;
use sqlx::Row;

use std::sync::Arc;

use tokio::sync::mpsc;

use super::writer::{Health, Stamped, Writer};
use super::SqlQuery;

/// What an action or preview did, to be recorded.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
    pub cluster: String,
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub dry_run: bool,
    pub diff: Option<String>,
    /// `ok`, `conflict`, `refused` or `error`.
    pub outcome: String,
    pub error: Option<String>,
}

const INSERT: &str = "INSERT INTO audit_log (at, actor, action, cluster, namespace, kind, name, dry_run, diff, outcome, error) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id";

fn insert(e: &NewEntry) -> crate::store::SqlQuery<'_> {
    sqlx::query(INSERT)
        .bind(e.at.to_rfc3339_opts(SecondsFormat::Millis, true))
        .bind(&e.actor)
        .bind(&e.action)
        .bind(&e.cluster)
        .bind(&e.namespace)
        .bind(&e.kind)
        .bind(&e.name)
        .bind(i64::from(e.dry_run))
        .bind(&e.diff)
        .bind(&e.outcome)
        .bind(&e.error)
}

/// Appends one row; returns its id.
pub async fn record(pool: &Pool, e: &NewEntry) -> Result<i64, sqlx::Error> {
    use sqlx::Row;
    Ok(insert(e).fetch_one(pool).await?.get(0))
}

/// Where actions write their audit rows: at once when the database takes them, else to the
/// audit writer, which holds them until it does.
#[derive(Debug, Clone)]
pub struct AuditLog {
    pub pool: Pool,
    pub held: mpsc::Sender<NewEntry>,
    pub health: Arc<Health>,
}

impl AuditLog {
    /// Records `e`; a refusal is reported to [`Health`] and the row handed to the writer.
    pub async fn append(&self, e: NewEntry) {
        // While the database refuses writes the row goes straight to the writer that holds
        // it: an action does not wait for a connection that will not come.
        if self.health.failing() {
            if let Err(e) = self.held.try_send(e) {
                tracing::error!(action = %e.into_inner().action, "could not write an audit row, and the audit writer holds no more");
            }
            return;
        }
        let Err(error) = record(&self.pool, &e).await else {
            self.health.wrote_directly();
            return;
        };
        self.health.failed("audit", &error, e.at);
        if let Err(e) = self.held.try_send(e) {
            tracing::error!(%error, action = %e.into_inner().action, "could not write an audit row, and the audit writer holds no more");
        }
    }
}

/// The writer of audit rows the database refused when the action happened: they are held
/// (up to 10,000) and written once it takes writes again, with their own times.
pub fn writer() -> Writer<NewEntry> {
    Writer {
        what: "audit",
        batch: 100,
        linger: Duration::ZERO,
        hold: 10_000,
        write: write_held,
    }
}

fn write_held<'a>(
    pool: &'a Pool,
    entries: &'a [Stamped<NewEntry>],
) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    Box::pin(async move {
        let mut tx = pool.begin().await?;
        for e in entries {
            insert(&e.item).execute(&mut *tx).await?;
        }
        tx.commit().await
    })
}

/// Filters and window of `/audit` and `/api/v1/audit`.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<String>,
    pub since: Option<DateTime<Utc>>,
    /// The caller's view as [`super::view_param`] writes it (None: everything).
    pub view: Option<String>,
    /// Rows skipped before the first returned (a page's start).
    pub offset: i64,
    /// At most this many rows (newest first).
    pub limit: i64,
}

impl AuditFilter {
    /// One page of a query, within what `view` sees.
    pub fn of(q: &lookout_app::model::read::views::AuditQuery, view: &View) -> Self {
        let (offset, limit) = super::page_window(q.page, q.per_page);
        AuditFilter {
            cluster: q.cluster.clone(),
            namespace: q.namespace.clone(),
            actor: q.actor.clone(),
            action: q.action.clone(),
            outcome: q.outcome.map(|o| o.label().to_string()),
            since: q.since,
            view: super::view_param(view),
            offset,
            limit,
        }
    }
}

/// The rows an [`AuditFilter`] matches (parameters $1 to $7, see [`bind_filter`]).
fn audit_matches(engine: super::Engine) -> String {
    format!(
        "($1 IS NULL OR cluster = $1) AND ($2 IS NULL OR namespace = $2) AND ($3 IS NULL OR actor = $3) \
         AND ($4 IS NULL OR action = $4) AND ($5 IS NULL OR outcome = $5) AND ($6 IS NULL OR at >= $6) AND {}",
        super::scope_clause(engine, 7)
    )
}

fn bind_filter<'q>(q: SqlQuery<'q>, f: &'q AuditFilter) -> SqlQuery<'q> {
    q.bind(&f.cluster)
        .bind(&f.namespace)
        .bind(&f.actor)
        .bind(&f.action)
        .bind(&f.outcome)
        .bind(
            f.since
                .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true)),
        )
        .bind(&f.view)
}

/// How many audit rows the filter matches (ignoring its window).
pub async fn count(pool: &Pool, f: &AuditFilter) -> Result<usize, sqlx::Error> {
    let sql = format!(
        "SELECT COUNT(*) FROM audit_log WHERE {}",
        audit_matches(super::Engine::of_pool(pool))
    );
    super::count(pool, bind_filter(sqlx::query(&sql), f)).await
}

/// Audit rows in the filter's window, newest first.
pub async fn list(pool: &Pool, f: &AuditFilter) -> Result<Vec<AuditEntry>, sqlx::Error> {
    let sql = format!(
        "SELECT id, at, actor, action, cluster, namespace, kind, name, dry_run, diff, outcome, error FROM audit_log \
         WHERE {} ORDER BY at DESC, id DESC LIMIT $8 OFFSET $9",
        audit_matches(super::Engine::of_pool(pool))
    );
    let rows = bind_filter(sqlx::query(&sql), f)
        .bind(f.limit)
        .bind(f.offset)
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| AuditEntry {
            id: r.get("id"),
            at: r.get("at"),
            actor: r.get("actor"),
            action: r.get("action"),
            cluster: r.get("cluster"),
            namespace: r.get("namespace"),
            kind: r.get("kind"),
            name: r.get("name"),
            dry_run: super::flag(&r, "dry_run"),
            diff: r.get("diff"),
            outcome: r.get("outcome"),
            error: r.get("error"),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lookout_app::model::scope::{Access, Grant, Role};

    fn entry(namespace: &str, name: &str, dry_run: bool, minute: u32) -> NewEntry {
        NewEntry {
            at: chrono::DateTime::parse_from_rfc3339(&format!("2026-06-01T10:{minute:02}:00Z"))
                .unwrap()
                .with_timezone(&Utc),
            actor: "sue".into(),
            action: "renew".into(),
            cluster: "zrh".into(),
            namespace: namespace.into(),
            kind: "Certificate".into(),
            name: name.into(),
            dry_run,
            diff: Some("+ spec".into()),
            outcome: "ok".into(),
            error: None,
        }
    }

    /// The audit log filtered, scoped, counted and paged the same way on both engines.
    #[tokio::test]
    async fn the_audit_log_is_filtered_scoped_and_paged() {
        for db in crate::store::testdb::engines().await {
            for (i, (ns, name, dry_run)) in [
                ("acme-shop", "a", true),
                ("acme-shop", "b", false),
                ("globex", "c", false),
                ("", "bulk", false),
            ]
            .into_iter()
            .enumerate()
            {
                let id = record(&db.writer, &entry(ns, name, dry_run, i as u32))
                    .await
                    .unwrap();
                assert!(id > 0);
            }
            let grant = Grant {
                clusters: vec!["zrh".into()],
                namespaces: vec!["acme-*".into()],
            };
            let tenant = View::new(&Access::new(vec![(Role::Viewer, grant)]), ["zrh"]);
            let mut f = AuditFilter {
                view: super::super::view_param(&tenant),
                limit: 10,
                ..Default::default()
            };
            assert_eq!(count(&db.reader, &f).await.unwrap(), 2, "{:?}", db.engine);
            let rows = list(&db.reader, &f).await.unwrap();
            let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
            assert_eq!(names, ["b", "a"], "newest first, only the tenant's");
            assert!(rows[1].dry_run && !rows[0].dry_run);
            f.view = None;
            f.limit = 2;
            f.offset = 2;
            let names: Vec<String> = list(&db.reader, &f)
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.name)
                .collect();
            assert_eq!(names, ["b", "a"], "the second page of everything");
            f.offset = 0;
            f.namespace = Some("globex".into());
            assert_eq!(count(&db.reader, &f).await.unwrap(), 1);
        }
    }
}
