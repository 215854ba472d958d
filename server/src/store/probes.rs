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
    let mut tx = super::begin_shared_write(pool).await?;
    for o in changed {
        let namespaces: Vec<&str> = o.sources.iter().map(|s| s.namespace.as_str()).collect();
        // A change another replica sharing the database recorded already is not recorded
        // again.
        sqlx::query(
            "INSERT INTO probe_results (cluster, host, address, at, namespaces, outcome) SELECT $1, $2, $3, $4, $5, $6 \
             WHERE (SELECT p.outcome FROM probe_results p WHERE p.cluster = $1 AND p.host = $2 AND p.address = $3 \
                    ORDER BY p.id DESC LIMIT 1) IS DISTINCT FROM $6",
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

#[cfg(test)]
mod tests {
    use super::*;
    use lookout_app::model::probe::ProbeSource;

    fn seen(tls_error: Option<&str>) -> Observation {
        serde_json::from_value(serde_json::json!({
            "host": "shop.example",
            "address": "192.0.2.1",
            "sources": [ProbeSource { namespace: "shop".into(), kind: "Ingress".into(), name: "web".into() }],
            "since": Utc::now(),
            "tls": null,
            "tls_error": tls_error.map(|_| serde_json::json!({"class": "refused"})),
            "needs_proxy_header": false,
            "acme": null,
            "acme_error": null,
        }))
        .unwrap()
    }

    /// Two replicas probing the same host each see its change: one row; a later change is
    /// another.
    #[tokio::test]
    async fn a_change_another_replica_recorded_is_not_recorded_again() {
        for db in crate::store::testdb::engines().await {
            let down = seen(Some("connection refused"));
            record(&db.writer, "zrh", &[&down]).await.unwrap();
            record(&db.writer, "zrh", &[&down]).await.unwrap();
            assert_eq!(count(&db.reader, "zrh", "shop.example").await.unwrap(), 1);
            let up = seen(None);
            record(&db.writer, "zrh", &[&up]).await.unwrap();
            assert_eq!(count(&db.reader, "zrh", "shop.example").await.unwrap(), 2);
        }
    }
}
