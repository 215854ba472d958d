//! `cluster_sync_events`: the writer task that records sync-state changes, and its reads.

use std::time::Duration;

use crate::store::Pool;
use chrono::{DateTime, SecondsFormat, Utc};
use futures::future::BoxFuture;

use super::writer::{Stamped, Writer};

pub use lookout_app::model::cluster::SyncEvent;

/// The sync-event writer: every change as it comes, up to 10,000 held while the database
/// refuses writes.
pub fn writer() -> Writer<SyncEvent> {
    Writer {
        what: "sync events",
        batch: 100,
        linger: Duration::ZERO,
        hold: 10_000,
        write: insert,
    }
}

fn insert<'a>(
    pool: &'a Pool,
    events: &'a [Stamped<SyncEvent>],
) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    Box::pin(async move {
        let mut tx = pool.begin().await?;
        for ev in events.iter().map(|s| &s.item) {
            sqlx::query(
                "INSERT INTO cluster_sync_events (cluster, state, error, at) VALUES ($1, $2, $3, $4)",
            )
            .bind(&ev.cluster)
            .bind(ev.state)
            .bind(&ev.error)
            .bind(ev.at.to_rfc3339_opts(SecondsFormat::Millis, true))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await
    })
}

/// The most recent `limit` changes of one cluster, newest first.
pub async fn recent(pool: &Pool, cluster: &str, limit: i64) -> Result<Vec<SyncEvent>, sqlx::Error> {
    let rows: Vec<(String, String, Option<String>, String)> =
        sqlx::query_as("SELECT cluster, state, error, at FROM cluster_sync_events WHERE cluster = $1 ORDER BY at DESC, id DESC LIMIT $2")
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
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    #[tokio::test]
    async fn queued_events_are_written_before_the_writer_stops() {
        for db in crate::store::testdb::engines().await {
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
            let health = std::sync::Arc::new(crate::store::writer::Health::default());
            crate::store::writer::run(
                writer(),
                db.writer.clone(),
                rx,
                token,
                crate::clock::wall_clock(),
                health,
            )
            .await;
            let rows = recent(&db.reader, "zrh", 10).await.unwrap();
            assert_eq!(rows.len(), 3);
        }
    }
}
