//! The audit log: one row for every preview and every action taken through Lookout.

use chrono::{DateTime, SecondsFormat, Utc};
use lookout_app::model::history::AuditEntry;
use sqlx::{Row, SqlitePool};

/// What an action or preview did, to be recorded.
#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    pub at: DateTime<Utc>,
    pub actor: &'a str,
    pub action: &'a str,
    pub cluster: &'a str,
    pub namespace: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub dry_run: bool,
    pub diff: Option<&'a str>,
    /// `ok`, `conflict`, `refused` or `error`.
    pub outcome: &'a str,
    pub error: Option<&'a str>,
}

/// Appends one row; returns its id.
pub async fn record(pool: &SqlitePool, e: &NewEntry<'_>) -> Result<i64, sqlx::Error> {
    let id = sqlx::query(
        "INSERT INTO audit_log (at, actor, action, cluster, namespace, kind, name, dry_run, diff, outcome, error) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(e.at.to_rfc3339_opts(SecondsFormat::Millis, true))
    .bind(e.actor)
    .bind(e.action)
    .bind(e.cluster)
    .bind(e.namespace)
    .bind(e.kind)
    .bind(e.name)
    .bind(e.dry_run)
    .bind(e.diff)
    .bind(e.outcome)
    .bind(e.error)
    .execute(pool)
    .await?
    .last_insert_rowid();
    Ok(id)
}

/// Filters of `/audit` and `/api/v1/audit`.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<String>,
    pub since: Option<DateTime<Utc>>,
    /// At most this many rows (newest first).
    pub limit: i64,
}

impl AuditFilter {
    /// The database part of a page's query, with a row limit.
    pub fn of(q: &lookout_app::ports::AuditQuery, limit: i64) -> Self {
        AuditFilter {
            cluster: q.cluster.clone(),
            namespace: q.namespace.clone(),
            actor: q.actor.clone(),
            action: q.action.clone(),
            outcome: q.outcome.clone(),
            since: q.since,
            limit,
        }
    }
}

/// Audit rows, newest first.
pub async fn list(pool: &SqlitePool, f: &AuditFilter) -> Result<Vec<AuditEntry>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, at, actor, action, cluster, namespace, kind, name, dry_run, diff, outcome, error FROM audit_log \
         WHERE (?1 IS NULL OR cluster = ?1) AND (?2 IS NULL OR namespace = ?2) AND (?3 IS NULL OR actor = ?3) \
           AND (?4 IS NULL OR action = ?4) AND (?5 IS NULL OR outcome = ?5) AND (?6 IS NULL OR at >= ?6) \
         ORDER BY at DESC, id DESC LIMIT ?7",
    )
    .bind(&f.cluster)
    .bind(&f.namespace)
    .bind(&f.actor)
    .bind(&f.action)
    .bind(&f.outcome)
    .bind(f.since.map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true)))
    .bind(f.limit)
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
            dry_run: r.get("dry_run"),
            diff: r.get("diff"),
            outcome: r.get("outcome"),
            error: r.get("error"),
        })
        .collect())
}
