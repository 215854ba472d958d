//! A Certificate's history as issuance attempts: the rows of its CertificateRequests, their
//! Orders and Challenges (matched by name: the history has no parent uids) and every state
//! change, grouped by `lookout_app::model::timeline::attempts`.

use crate::store::Pool;
use lookout_app::model::timeline::{attempts, Attempt, Change, ChildRow, ReadinessRow, RequestRow};
use sqlx::Row;

/// The requests of the Certificate, as a subquery taking (cluster, namespace, certificate).
const REQUEST_NAMES: &str = "SELECT name FROM certificate_requests WHERE cluster = $1 AND namespace = $2 AND certificate = $3";

pub(super) async fn certificate_attempts(
    pool: &Pool,
    cluster: &str,
    ns: &str,
    name: &str,
) -> Result<Vec<Attempt>, sqlx::Error> {
    // Every query below takes the Certificate as ?1 (cluster), ?2 (namespace), ?3 (name).
    let rows = |sql: String| async move {
        sqlx::query(&sql)
            .bind(cluster)
            .bind(ns)
            .bind(name)
            .fetch_all(pool)
            .await
    };
    let requests = rows(
        "SELECT name, outcome, message, COALESCE(created_at, last_seen) AS created, finished_at \
         FROM certificate_requests WHERE cluster = $1 AND namespace = $2 AND certificate = $3"
            .to_string(),
    )
    .await?
    .into_iter()
    .map(|r| RequestRow {
        name: r.get("name"),
        outcome: r.get("outcome"),
        message: r.get("message"),
        created: r.get("created"),
        finished: r.get("finished_at"),
    })
    .collect();
    let orders: Vec<ChildRow> = rows(format!(
        "SELECT id, name, request, COALESCE(created_at, last_seen) AS created FROM orders \
         WHERE cluster = $1 AND namespace = $2 AND request IN ({REQUEST_NAMES})"
    ))
    .await?
    .into_iter()
    .map(|r| ChildRow {
        id: r.get("id"),
        name: r.get("name"),
        label: None,
        parent: r.get::<Option<String>, _>("request").unwrap_or_default(),
        created: r.get("created"),
    })
    .collect();
    let order_names = format!(
        "SELECT name FROM orders WHERE cluster = $1 AND namespace = $2 AND request IN ({REQUEST_NAMES})"
    );
    // Order and challenge row ids come from two tables: kept apart by sign.
    let challenges: Vec<ChildRow> = rows(format!(
        "SELECT id, name, dns_name, order_name, COALESCE(created_at, last_seen) AS created \
         FROM challenges WHERE cluster = $1 AND namespace = $2 AND order_name IN ({order_names})"
    ))
    .await?
    .into_iter()
    .map(|r| ChildRow {
        id: -r.get::<i64, _>("id"),
        name: r.get("name"),
        label: Some(r.get("dns_name")),
        parent: r.get::<Option<String>, _>("order_name").unwrap_or_default(),
        created: r.get("created"),
    })
    .collect();
    let mut changes: Vec<Change> = Vec::new();
    let order_changes = format!(
        "SELECT order_id AS owner, at, state, reason FROM order_transitions WHERE order_id IN \
         (SELECT id FROM orders WHERE cluster = $1 AND namespace = $2 AND request IN ({REQUEST_NAMES}))"
    );
    let challenge_changes = format!(
        "SELECT challenge_id AS owner, at, state, reason FROM challenge_transitions WHERE challenge_id IN \
         (SELECT id FROM challenges WHERE cluster = $1 AND namespace = $2 AND order_name IN ({order_names}))"
    );
    for (sql, sign) in [(order_changes, 1), (challenge_changes, -1)] {
        changes.extend(rows(sql).await?.into_iter().map(|r| Change {
            owner: sign * r.get::<i64, _>("owner"),
            at: r.get("at"),
            state: r.get("state"),
            reason: r.get("reason"),
        }));
    }
    let readiness = rows(
        "SELECT at, status, reason FROM certificate_readiness WHERE cluster = $1 AND namespace = $2 AND name = $3"
            .to_string(),
    )
    .await?
    .into_iter()
    .map(|r| ReadinessRow {
        at: r.get("at"),
        status: r.get("status"),
        reason: r.get("reason"),
    })
    .collect();
    Ok(attempts(requests, &orders, &challenges, changes, readiness))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Twelve attempts under one request name (each deleted and recreated to restart the
    /// issuance) with one Order name: each attempt shows its own changes once.
    #[tokio::test]
    async fn namesake_requests_orders_and_challenges_are_each_their_own_attempt() {
        for db in crate::store::testdb::engines().await {
            let pool = &db.writer;
            for i in 0..12 {
                let t = |m: u32| format!("2026-01-01T{i:02}:{m:02}:00.000Z");
                sqlx::query("INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, names, outcome, created_at, last_seen, finished_at) VALUES ('zrh', 'shop', 'shop-tls-2', $1, 'shop-tls', '[]', 'failed', $2, $3, $4)")
                .bind(format!("cr-{i}")).bind(t(0)).bind(t(9)).bind(t(6))
                .execute(pool).await.unwrap();
                let order: i64 = sqlx::query_scalar("INSERT INTO orders (cluster, namespace, name, uid, request, state, created_at, last_seen) VALUES ('zrh', 'shop', 'shop-tls-2-77', $1, 'shop-tls-2', 'invalid', $2, $3) RETURNING id")
                .bind(format!("o-{i}")).bind(t(1)).bind(t(9))
                .fetch_one(pool).await.unwrap();
                let challenge: i64 = sqlx::query_scalar("INSERT INTO challenges (cluster, namespace, name, uid, order_name, dns_name, challenge_type, state, presented, processing, created_at, last_seen) VALUES ('zrh', 'shop', 'shop-tls-2-77-1', $1, 'shop-tls-2-77', 'shop.example', 'HTTP-01', '', 0, 0, $2, $3) RETURNING id")
                .bind(format!("c-{i}")).bind(t(2)).bind(t(2))
                .fetch_one(pool).await.unwrap();
                for (m, state) in [(1, "pending"), (5, "invalid")] {
                    sqlx::query(
                        "INSERT INTO order_transitions (order_id, at, state) VALUES ($1, $2, $3)",
                    )
                    .bind(order)
                    .bind(t(m))
                    .bind(state)
                    .execute(pool)
                    .await
                    .unwrap();
                }
                // presented/processing flips: the same state and reason twice.
                for (m, state, reason, presented) in [
                    (3, "pending", Some("404"), 0),
                    (4, "pending", Some("404"), 1),
                    (5, "invalid", Some("404"), 0),
                ] {
                    sqlx::query("INSERT INTO challenge_transitions (challenge_id, at, state, reason, presented, processing) VALUES ($1, $2, $3, $4, $5, 0)")
                    .bind(challenge).bind(t(m)).bind(state).bind(reason).bind(presented)
                    .execute(pool).await.unwrap();
                }
            }
            let attempts = certificate_attempts(pool, "zrh", "shop", "shop-tls")
                .await
                .unwrap();
            assert_eq!(attempts.len(), 12);
            for (i, a) in attempts.iter().enumerate() {
                assert_eq!(a.number, 12 - i);
                let rows: Vec<(&str, &str)> = a
                    .events
                    .iter()
                    .map(|e| (e.kind, e.state.as_str()))
                    .collect();
                assert_eq!(
                    rows,
                    vec![
                        ("request", "created"),
                        ("order", "pending"),
                        ("challenge", "created"),
                        ("challenge", "pending"),
                        ("order", "invalid"),
                        ("challenge", "invalid"),
                        ("request", "failed"),
                    ],
                    "attempt {}",
                    a.number
                );
            }
            db.close().await;
        }
    }
}
