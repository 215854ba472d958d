//! Retention: history older than the configured period goes, once an hour; SQLite's WAL is
//! checkpointed every five minutes.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use tokio_util::sync::CancellationToken;

use crate::clock::Now;
use crate::store::{stamp, Engine, Pool};

/// Deletes history older than `retention` (objects gone before the cutoff, transitions,
/// readiness and audit rows) every hour, and checkpoints SQLite's WAL every five minutes
/// (PostgreSQL's own autovacuum and checkpoints need nothing from Lookout).
pub async fn run_maintenance(
    pool: Pool,
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
        if Engine::of_pool(&pool) != Engine::Sqlite {
            continue;
        }
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&pool)
            .await
        {
            tracing::warn!(error = %e, "WAL checkpoint failed");
        }
    }
}

/// Deletes what is older than `cutoff`; returns the number of rows. On PostgreSQL the
/// deletions are one transaction that only one replica runs at a time: a replica that finds
/// another pruning skips this round (the other deletes the same rows).
pub async fn prune(pool: &Pool, cutoff: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    if Engine::of_pool(pool) == Engine::Postgres {
        let mut tx = pool.begin().await?;
        let leader: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(RETENTION_LOCK)
            .fetch_one(&mut *tx)
            .await?;
        if !leader {
            tracing::debug!("another replica is applying the retention now");
            return Ok(0);
        }
        let n = delete_older(&mut tx, cutoff).await?;
        tx.commit().await?;
        return Ok(n);
    }
    let mut conn = pool.acquire().await?;
    delete_older(&mut conn, cutoff).await
}

/// The advisory lock of the retention round on PostgreSQL ("Lookout" + 1).
const RETENTION_LOCK: i64 = crate::store::WRITERS_LOCK + 1;

/// Deletes what is older than `cutoff`, each table in its own statement.
async fn delete_older(conn: &mut AnyConnection, cutoff: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let c = stamp(cutoff);
    let mut n = 0;
    for sql in [
        "DELETE FROM challenge_transitions WHERE at < $1",
        "DELETE FROM challenges WHERE deleted_at IS NOT NULL AND deleted_at < $1",
        "DELETE FROM order_transitions WHERE at < $1",
        "DELETE FROM orders WHERE deleted_at IS NOT NULL AND deleted_at < $1",
        "DELETE FROM certificate_requests WHERE deleted_at IS NOT NULL AND deleted_at < $1",
        "DELETE FROM certificate_readiness WHERE at < $1",
        "DELETE FROM audit_log WHERE at < $1",
        "DELETE FROM probe_results WHERE at < $1",
        "DELETE FROM action_records WHERE at < $1",
    ] {
        n += sqlx::query(sql)
            .bind(&c)
            .execute(&mut *conn)
            .await?
            .rows_affected();
    }
    Ok(n)
}
