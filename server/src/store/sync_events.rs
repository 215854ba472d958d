//! `cluster_sync_events`: the writer task that records sync-state changes, and its reads.

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::SqlitePool;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A cluster entered a new sync state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncEvent {
    pub cluster: String,
    /// `connecting`, `synced`, `stale` or `failed`.
    pub state: &'static str,
    pub error: Option<String>,
    pub at: DateTime<Utc>,
}

async fn insert(pool: &SqlitePool, ev: &SyncEvent) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO cluster_sync_events (cluster, state, error, at) VALUES (?, ?, ?, ?)")
        .bind(&ev.cluster)
        .bind(ev.state)
        .bind(&ev.error)
        .bind(ev.at.to_rfc3339_opts(SecondsFormat::Millis, true))
        .execute(pool)
        .await?;
    Ok(())
}

/// Drains `rx` into the database until `shutdown`, then writes what is still queued.
pub async fn run_writer(
    pool: SqlitePool,
    mut rx: mpsc::Receiver<SyncEvent>,
    shutdown: CancellationToken,
) {
    loop {
        let ev = tokio::select! {
            ev = rx.recv() => ev,
            _ = shutdown.cancelled() => break,
        };
        let Some(ev) = ev else { return };
        if let Err(e) = insert(&pool, &ev).await {
            tracing::error!(cluster = %ev.cluster, error = %e, "could not record a sync-state change");
        }
    }
    rx.close();
    while let Some(ev) = rx.recv().await {
        if let Err(e) = insert(&pool, &ev).await {
            tracing::error!(cluster = %ev.cluster, error = %e, "could not record a sync-state change at shutdown");
        }
    }
}

/// The most recent `limit` changes of one cluster, newest first.
pub async fn recent(
    pool: &SqlitePool,
    cluster: &str,
    limit: i64,
) -> Result<Vec<SyncEvent>, sqlx::Error> {
    let rows: Vec<(String, String, Option<String>, String)> =
        sqlx::query_as("SELECT cluster, state, error, at FROM cluster_sync_events WHERE cluster = ? ORDER BY at DESC, id DESC LIMIT ?")
            .bind(cluster)
            .bind(limit)
            .fetch_all(pool)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(cluster, state, error, at)| SyncEvent {
            cluster,
            state: match state.as_str() {
                "synced" => "synced",
                "stale" => "stale",
                "failed" => "failed",
                _ => "connecting",
            },
            error,
            at: DateTime::parse_from_rfc3339(&at)
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or_default(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Db;

    #[tokio::test]
    async fn queued_events_are_written_before_the_writer_stops() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&format!("sqlite://{}", dir.path().join("t.db").display()))
            .await
            .unwrap();
        let (tx, rx) = mpsc::channel(16);
        let token = CancellationToken::new();
        for state in ["connecting", "synced", "stale"] {
            tx.send(SyncEvent {
                cluster: "zrh".into(),
                state,
                error: None,
                at: Utc::now(),
            })
            .await
            .unwrap();
        }
        token.cancel();
        run_writer(db.writer.clone(), rx, token).await;
        let rows = recent(&db.reader, "zrh", 10).await.unwrap();
        assert_eq!(rows.len(), 3);
    }
}
