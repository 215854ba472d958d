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
        let mut tx = super::begin_shared_write(pool).await?;
        for ev in events.iter().map(|s| &s.item) {
            // A change another replica sharing the database recorded already (the cluster
            // failed for both) is not recorded again.
            sqlx::query(
                "INSERT INTO cluster_sync_events (cluster, state, error, at) SELECT $1, $2, $3, $4 \
                 WHERE (SELECT e.state || ':' || COALESCE(e.error, '') FROM cluster_sync_events e \
                        WHERE e.cluster = $1 AND e.at <= $4 ORDER BY e.at DESC, e.id DESC LIMIT 1) \
                       IS DISTINCT FROM ($2 || ':' || COALESCE($3, ''))",
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
    use crate::store::writer::Stamped;
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

    /// Replicas sharing a database each see a cluster fail: the change is recorded once; a
    /// different error, or the recovery, is a change.
    #[tokio::test]
    async fn a_change_another_replica_recorded_is_not_recorded_again() {
        for db in crate::store::testdb::engines().await {
            let event = |state: &'static str, error: Option<&str>, secs: i64| Stamped {
                at: Utc::now(),
                item: SyncEvent {
                    cluster: "zrh".into(),
                    state,
                    error: error.map(str::to_string),
                    at: Utc::now() + chrono::Duration::seconds(secs),
                },
            };
            let refused = Some("connection refused");
            insert(&db.writer, &[event("failed", refused, 0)])
                .await
                .unwrap();
            // The other replica, a moment later.
            insert(&db.writer, &[event("failed", refused, 1)])
                .await
                .unwrap();
            assert_eq!(recent(&db.reader, "zrh", 10).await.unwrap().len(), 1);
            insert(
                &db.writer,
                &[
                    event("failed", Some("timed out"), 2),
                    event("synced", None, 3),
                ],
            )
            .await
            .unwrap();
            insert(&db.writer, &[event("synced", None, 4)])
                .await
                .unwrap();
            let states: Vec<_> = recent(&db.reader, "zrh", 10)
                .await
                .unwrap()
                .into_iter()
                .map(|e| (e.state, e.error))
                .collect();
            assert_eq!(
                states,
                vec![
                    ("synced", None),
                    ("failed", Some("timed out".to_string())),
                    ("failed", Some("connection refused".to_string())),
                ],
                "{:?}",
                db.engine
            );
        }
    }
}
