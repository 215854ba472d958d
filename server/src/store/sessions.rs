//! Ended sign-ins (`ended_sessions`): written when someone signs out, read back at start so
//! that a copied session cookie stays refused across restarts — and, on PostgreSQL, followed
//! while running, so that it is refused by every replica. Rows go once the session would have
//! expired anyway.

use crate::store::Pool;

/// Where signing out is kept (the database's writer), and the clock that says which ended
/// sign-ins have expired.
#[derive(Clone)]
pub struct EndedSessions {
    pub pool: Pool,
    pub now: crate::clock::Now,
}

/// How often a sign-out the database refused is offered to it again.
const RETRY_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl EndedSessions {
    /// Keeps sign-in `id` ended until `expires`. A database that cannot take it now is told
    /// again every few seconds, in the background, until it does or the session would have
    /// expired anyway: meanwhile this server refuses the session (it keeps it in memory too),
    /// while other replicas and a restart would not know of it.
    pub async fn end(&self, id: &str, expires: i64) {
        let Err(e) = end(&self.pool, id, expires, (self.now)().timestamp()).await else {
            return;
        };
        tracing::error!(error = %e, "the end of a sign-in could not be stored; trying again until it is");
        let (this, id) = (self.clone(), id.to_string());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RETRY_EVERY).await;
                let now = (this.now)().timestamp();
                if now >= expires {
                    return;
                }
                if end(&this.pool, &id, expires, now).await.is_ok() {
                    tracing::info!("the end of a sign-in is stored now");
                    return;
                }
            }
        });
    }
}

/// How often a replica reads the sign-outs that other replicas stored.
pub const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Until `shutdown`, reads every [`FOLLOW_EVERY`] the sign-ins ended by any replica sharing
/// the database and hands them to `remember` (the sign-in settings' list of ended sessions),
/// so that a cookie signed out on one replica is refused by all within that time. `now` is
/// the time in Unix seconds.
pub async fn follow_ended(
    pool: Pool,
    now: impl Fn() -> i64,
    remember: impl Fn(Vec<(String, i64)>),
    shutdown: tokio_util::sync::CancellationToken,
) {
    let mut tick = tokio::time::interval(FOLLOW_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        match ended(&pool, now()).await {
            Ok(rows) => {
                failing = false;
                remember(rows);
            }
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, "the sign-outs of other replicas cannot be read now; trying again");
            }
            Err(_) => {}
        }
    }
}

/// Keeps that sign-in `id` ended until `expires` (Unix seconds), and forgets those expired
/// before `now`.
pub async fn end(pool: &Pool, id: &str, expires: i64, now: i64) -> sqlx::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM ended_sessions WHERE expires <= $1")
        .bind(now)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO ended_sessions (id, expires) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET expires = excluded.expires")
        .bind(id)
        .bind(expires)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// The sign-ins ended and not yet expired at `now`: (id, expiry).
pub async fn ended(pool: &Pool, now: i64) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as("SELECT id, expires FROM ended_sessions WHERE expires > $1")
        .bind(now)
        .fetch_all(pool)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ended_sessions_are_kept_until_they_expire() {
        for db in crate::store::testdb::engines().await {
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

    /// A sign-out the database refused (PostgreSQL stopped) is stored once it is back, so
    /// the other replicas and a restart refuse the cookie too.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_sign_out_the_database_refused_is_stored_once_it_is_back() {
        let Some(mut server) = crate::store::testdb::OwnServer::start().await else {
            return;
        };
        let db = crate::store::Db::open(&server.url()).await.unwrap();
        let sessions = EndedSessions {
            pool: db.writer.clone(),
            now: crate::clock::wall_clock(),
        };
        server.stop().await;
        let far = chrono::Utc::now().timestamp() + 3600;
        sessions.end("signed-out", far).await;
        server.start_again().await;
        let deadline = std::time::Instant::now() + RETRY_EVERY * 4;
        loop {
            if let Ok(rows) = ended(&db.reader, 0).await {
                if rows.iter().any(|(id, _)| id == "signed-out") {
                    break;
                }
            }
            assert!(std::time::Instant::now() < deadline, "never stored");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// A sign-out stored by another replica reaches this one's list of ended sessions within
    /// one round of following.
    #[tokio::test]
    async fn a_sign_out_elsewhere_is_followed() {
        for db in crate::store::testdb::engines().await {
            let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let token = tokio_util::sync::CancellationToken::new();
            let follower = tokio::spawn(follow_ended(
                db.reader.clone(),
                || 10,
                {
                    let seen = seen.clone();
                    move |rows| seen.lock().unwrap().extend(rows)
                },
                token.clone(),
            ));
            // The other replica signs someone out.
            end(&db.writer, "copied-cookie", 100, 10).await.unwrap();
            let deadline = std::time::Instant::now() + FOLLOW_EVERY * 3;
            while !seen
                .lock()
                .unwrap()
                .contains(&("copied-cookie".to_string(), 100))
            {
                assert!(std::time::Instant::now() < deadline, "{:?}", db.engine);
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            token.cancel();
            follower.await.unwrap();
        }
    }
}
