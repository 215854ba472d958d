//! Probe results (`probe_results`): one row per host × address each time what the probe sees
//! there changes, so the history shows when a host started serving something else without
//! a row per probe.

use crate::store::Pool;
use chrono::{DateTime, Utc};
use lookout_app::model::probe::Observation;
use sqlx::Row;

use super::stamp;

/// The latest stored outcome of each host × address of `cluster`: (host, address) → (first
/// seen, outcome JSON). The probe starts from these, so a restart does not store a change.
pub async fn latest(
    pool: &Pool,
    cluster: &str,
) -> sqlx::Result<Vec<(String, String, DateTime<Utc>, String)>> {
    let rows = sqlx::query(
        "SELECT host, address, at, outcome FROM probe_results p WHERE cluster = $1 AND id = \
         (SELECT MAX(id) FROM probe_results q WHERE q.cluster = p.cluster AND q.host = p.host AND q.address = p.address)",
    )
    .bind(cluster)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let at = DateTime::parse_from_rfc3339(&r.get::<String, _>("at"))
                .ok()?
                .with_timezone(&Utc);
            Some((r.get("host"), r.get("address"), at, r.get("outcome")))
        })
        .collect())
}

/// Stores the observations whose outcome changed, in one transaction.
pub async fn record(pool: &Pool, cluster: &str, changed: &[&Observation]) -> sqlx::Result<()> {
    if changed.is_empty() {
        return Ok(());
    }
    let mut tx = pool.begin().await?;
    for o in changed {
        let namespaces: Vec<&str> = o.sources.iter().map(|s| s.namespace.as_str()).collect();
        sqlx::query(
            "INSERT INTO probe_results (cluster, host, address, at, namespaces, outcome) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(cluster)
        .bind(&o.host)
        .bind(o.address.to_string())
        .bind(stamp(o.since))
        .bind(serde_json::to_string(&namespaces).unwrap_or_default())
        .bind(o.outcome())
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await
}

/// How many results are stored for one host × address (tests and the benchmark).
pub async fn count(pool: &Pool, cluster: &str, host: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM probe_results WHERE cluster = $1 AND host = $2")
        .bind(cluster)
        .bind(host)
        .fetch_one(pool)
        .await
}
