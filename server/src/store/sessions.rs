//! Ended sign-ins (`ended_sessions`): written when someone signs out, read back at start so
//! that a copied session cookie stays refused across restarts. Rows go once the session
//! would have expired anyway.

use sqlx::SqlitePool;

/// Where signing out is kept (the database's writer), and the clock that says which ended
/// sign-ins have expired.
#[derive(Clone)]
pub struct EndedSessions {
    pub pool: SqlitePool,
    pub now: crate::clock::Now,
}

impl EndedSessions {
    /// Keeps sign-in `id` ended until `expires`. A database that cannot take it is logged:
    /// the running server refuses the session anyway (it keeps it in memory too), only a
    /// restart would forget it.
    pub async fn end(&self, id: &str, expires: i64) {
        if let Err(e) = end(&self.pool, id, expires, (self.now)().timestamp()).await {
            tracing::error!(error = %e, "the end of a sign-in could not be stored; a restart would forget it");
        }
    }
}

/// Keeps that sign-in `id` ended until `expires` (Unix seconds), and forgets those expired
/// before `now`.
pub async fn end(pool: &SqlitePool, id: &str, expires: i64, now: i64) -> sqlx::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM ended_sessions WHERE expires <= ?")
        .bind(now)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT OR REPLACE INTO ended_sessions (id, expires) VALUES (?, ?)")
        .bind(id)
        .bind(expires)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// The sign-ins ended and not yet expired at `now`: (id, expiry).
pub async fn ended(pool: &SqlitePool, now: i64) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as("SELECT id, expires FROM ended_sessions WHERE expires > ?")
        .bind(now)
        .fetch_all(pool)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ended_sessions_are_kept_until_they_expire() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::Db::open(&format!("sqlite://{}", dir.path().join("t.db").display()))
            .await
            .unwrap();
        end(&db.writer, "a", 100, 10).await.unwrap();
        end(&db.writer, "b", 50, 10).await.unwrap();
        assert_eq!(
            ended(&db.writer, 60).await.unwrap(),
            vec![("a".to_string(), 100)]
        );
        // Ending another one drops the expired rows.
        end(&db.writer, "c", 200, 60).await.unwrap();
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM ended_sessions")
            .fetch_one(&db.writer)
            .await
            .unwrap();
        assert_eq!(left, 2);
        db.close().await;
    }
}
