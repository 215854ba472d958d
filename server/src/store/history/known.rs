//! What a batch of history events needs to know of the stored history, read once per batch.

use chrono::{DateTime, Utc};
use lookout_app::model::object::Condition;
use sqlx::{Row, SqliteConnection};

use super::super::stamp;
use super::super::writer::Stamped;
use super::HistoryEvent;

/// What a batch needs to know of the stored history before it writes, read in one query per
/// table for the whole batch rather than one per event (a start of a large fleet sends one
/// event per Certificate and CertificateRequest, and each query is a round trip to SQLite's
/// thread): the stored requests the batch names, and the last readiness of its Certificates.
/// Kept current as the batch writes; new readiness rows are written together at the end.
#[derive(Default)]
pub(super) struct Known {
    /// By (cluster, uid).
    pub(super) requests: std::collections::HashMap<(String, String), KnownRequest>,
    /// The last (status, reason) by (cluster, namespace, name).
    readiness: std::collections::HashMap<(String, String, String), (String, Option<String>)>,
    /// Readiness rows to insert, in order.
    new_readiness: Vec<NewReadiness>,
}

pub(super) struct KnownRequest {
    pub(super) id: i64,
    pub(super) outcome: String,
    pub(super) reason: Option<String>,
    pub(super) message: Option<String>,
}

struct NewReadiness {
    key: (String, String, String),
    at: String,
    status: String,
    reason: Option<String>,
    message: Option<String>,
}

/// Readiness rows per `INSERT` (7 values each, well within SQLite's limit of variables).
const READINESS_PER_INSERT: usize = 200;

impl Known {
    pub(super) async fn read(
        conn: &mut SqliteConnection,
        batch: &[Stamped<HistoryEvent>],
    ) -> Result<Known, sqlx::Error> {
        let mut requests = Vec::new();
        let mut certificates = Vec::new();
        for ev in batch {
            match &ev.item {
                HistoryEvent::Request { cluster, view, .. } => {
                    requests.push((cluster.as_str(), view.uid.to_string()))
                }
                HistoryEvent::Readiness {
                    cluster,
                    namespace,
                    name,
                    ..
                } => certificates.push((cluster.as_str(), namespace.as_str(), name.as_str())),
                _ => {}
            }
        }
        let mut known = Known::default();
        if !requests.is_empty() {
            let keys = serde_json::to_string(&requests).unwrap_or_else(|_| "[]".into());
            let rows = sqlx::query(
                "SELECT id, cluster, uid, outcome, reason, message FROM certificate_requests \
                 WHERE (cluster, uid) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))",
            )
            .bind(keys)
            .fetch_all(&mut *conn)
            .await?;
            for r in rows {
                known.requests.insert(
                    (r.get("cluster"), r.get("uid")),
                    KnownRequest {
                        id: r.get("id"),
                        outcome: r.get("outcome"),
                        reason: r.get("reason"),
                        message: r.get("message"),
                    },
                );
            }
        }
        if !certificates.is_empty() {
            certificates.sort_unstable();
            certificates.dedup();
            let keys = serde_json::to_string(&certificates).unwrap_or_else(|_| "[]".into());
            let rows = sqlx::query(
                "SELECT cluster, namespace, name, status, reason FROM certificate_readiness WHERE id IN \
                 (SELECT (SELECT r.id FROM certificate_readiness r \
                          WHERE r.cluster = j.value ->> 0 AND r.namespace = j.value ->> 1 AND r.name = j.value ->> 2 \
                          ORDER BY r.id DESC LIMIT 1) \
                  FROM json_each(?) j)",
            )
            .bind(keys)
            .fetch_all(&mut *conn)
            .await?;
            for r in rows {
                known.readiness.insert(
                    (r.get("cluster"), r.get("namespace"), r.get("name")),
                    (r.get("status"), r.get("reason")),
                );
            }
        }
        Ok(known)
    }

    /// A Certificate's Ready condition as seen at `now`: a row when it differs from the last.
    pub(super) fn readiness(
        &mut self,
        cluster: &str,
        ns: &str,
        name: &str,
        ready: Option<&Condition>,
        now: DateTime<Utc>,
    ) {
        let status = ready
            .map(|c| c.status.to_string())
            .unwrap_or_else(|| "absent".into());
        let reason = ready.and_then(|c| c.reason.as_deref()).map(str::to_string);
        let key = (cluster.to_string(), ns.to_string(), name.to_string());
        if self
            .readiness
            .get(&key)
            .is_some_and(|(s, r)| *s == status && *r == reason)
        {
            return;
        }
        self.readiness
            .insert(key.clone(), (status.clone(), reason.clone()));
        self.new_readiness.push(NewReadiness {
            key,
            at: stamp(ready.and_then(|c| c.last_transition).unwrap_or(now)),
            status,
            reason,
            message: ready.and_then(|c| c.message.as_deref()).map(str::to_string),
        });
    }

    /// Writes the readiness rows the batch found, in order.
    pub(super) async fn write_readiness(
        &mut self,
        conn: &mut SqliteConnection,
    ) -> Result<(), sqlx::Error> {
        for rows in self.new_readiness.chunks(READINESS_PER_INSERT) {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO certificate_readiness (cluster, namespace, name, at, status, reason, message) ",
            );
            insert.push_values(rows, |mut b, r| {
                b.push_bind(&r.key.0)
                    .push_bind(&r.key.1)
                    .push_bind(&r.key.2)
                    .push_bind(&r.at)
                    .push_bind(&r.status)
                    .push_bind(&r.reason)
                    .push_bind(&r.message);
            });
            insert.build().execute(&mut *conn).await?;
        }
        self.new_readiness.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::write_batch;
    use super::*;
    use crate::store::Db;
    use lookout_app::model::certificate::CertificateRequestView;

    fn ready(status: &str, reason: &str) -> Option<Condition> {
        Some(Condition {
            kind: "Ready".into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(format!("{reason} message").into()),
            last_transition: None,
        })
    }

    fn readiness(status: &str, reason: &str) -> HistoryEvent {
        HistoryEvent::Readiness {
            cluster: "zrh".into(),
            namespace: "shop".into(),
            name: "shop-tls".into(),
            ready: ready(status, reason),
        }
    }

    fn request(reason: &str, deleted: bool) -> HistoryEvent {
        let meta = kube::api::ObjectMeta {
            name: Some("shop-tls-1".into()),
            namespace: Some("shop".into()),
            uid: Some("3f1c7e9a-0000-4000-8000-000000000001".into()),
            ..Default::default()
        };
        let status = serde_json::json!({"status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": reason, "message": reason}
        ]}});
        let mut strings = lookout_app::model::interner::Interner::default();
        let view = CertificateRequestView::project(&meta, &status, &mut strings).unwrap();
        HistoryEvent::Request {
            cluster: "zrh".into(),
            view: std::sync::Arc::new(view),
            acme_server: None,
            deleted,
        }
    }

    /// A batch reads what is stored once, keeps it current as it writes (an object can
    /// change twice within one batch), and a second batch of the same states — a restart's
    /// relist — writes nothing new.
    #[tokio::test]
    async fn a_batch_compares_with_what_is_stored_and_with_itself() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&format!("sqlite://{}", dir.path().join("t.db").display()))
            .await
            .unwrap();
        let at = Utc::now();
        let stamped = |items: Vec<HistoryEvent>| -> Vec<Stamped<HistoryEvent>> {
            items.into_iter().map(|item| Stamped { at, item }).collect()
        };
        let first = stamped(vec![
            readiness("False", "Issuing"),
            request("Pending", false),
            readiness("False", "Issuing"),
            readiness("True", "Ready"),
            request("Failed", false),
            readiness("True", "Ready"),
        ]);
        write_batch(&db.writer, &first).await.unwrap();
        let states = || async {
            let readiness: Vec<(String, String)> =
                sqlx::query_as("SELECT status, reason FROM certificate_readiness ORDER BY id")
                    .fetch_all(&db.writer)
                    .await
                    .unwrap();
            let requests: Vec<(String, Option<String>, Option<String>)> =
                sqlx::query_as("SELECT outcome, reason, deleted_at FROM certificate_requests")
                    .fetch_all(&db.writer)
                    .await
                    .unwrap();
            (readiness, requests)
        };
        let (readiness_rows, requests) = states().await;
        assert_eq!(
            readiness_rows,
            [
                ("False".to_string(), "Issuing".to_string()),
                ("True".to_string(), "Ready".to_string())
            ]
        );
        assert_eq!(
            requests,
            [("failed".to_string(), Some("Failed".to_string()), None)],
            "one row, updated within the batch"
        );
        // A restart lists the same states again: nothing new is written.
        let again = stamped(vec![readiness("True", "Ready"), request("Failed", false)]);
        write_batch(&db.writer, &again).await.unwrap();
        assert_eq!(states().await, (readiness_rows.clone(), requests));
        // A deletion in a later batch finds the stored row.
        write_batch(&db.writer, &stamped(vec![request("Failed", true)]))
            .await
            .unwrap();
        let (_, requests) = states().await;
        assert!(requests[0].2.is_some(), "marked deleted: {requests:?}");
        assert_eq!(requests.len(), 1);
    }
}
