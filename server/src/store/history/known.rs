//! What a batch of history events needs to know of the stored history, read once per batch.

use chrono::{DateTime, Utc};
use lookout_app::model::object::Condition;
use sqlx::{AnyConnection, Row};

use crate::store::Engine;

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
    /// Request rows to insert, in order (see `requests::write_new`).
    pub(super) new_requests: Vec<super::requests::NewRequest>,
    /// The last (status, reason, resource version) by (cluster, namespace, name).
    readiness: std::collections::HashMap<Key, (String, Option<String>, Option<i64>)>,
    /// Readiness rows to insert, in order.
    new_readiness: Vec<NewReadiness>,
    /// Challenge upserts to send, in order.
    pub(super) challenges: super::challenges::Pending,
}

/// Where a request's row is.
#[derive(Debug, Clone, Copy)]
pub(super) enum Place {
    /// Stored, with this id.
    Stored(i64),
    /// Waiting in [`Known::new_requests`] at this index.
    New(usize),
}

/// A Certificate: (cluster, namespace, name).
type Key = (String, String, String);

pub(super) struct KnownRequest {
    pub(super) place: Place,
    pub(super) outcome: String,
    pub(super) reason: Option<String>,
    pub(super) message: Option<String>,
    /// The resource version the stored state was seen in.
    pub(super) revision: Option<i64>,
}

struct NewReadiness {
    key: Key,
    at: String,
    status: String,
    reason: Option<String>,
    message: Option<String>,
    revision: Option<i64>,
}

/// Readiness rows per `INSERT` (8 values each, well within both engines' limits of
/// parameters: SQLite's 32,766 and PostgreSQL's 65,535).
const READINESS_PER_INSERT: usize = 200;

impl Known {
    pub(super) async fn read(
        conn: &mut AnyConnection,
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
            let keys_table = Engine::of_connection(conn).json_rows(1, "k");
            let rows = sqlx::query(&format!(
                "SELECT id, cluster, uid, outcome, reason, message, resource_version FROM certificate_requests \
                 WHERE (cluster, uid) IN (SELECT k.value ->> 0, k.value ->> 1 FROM {keys_table})"
            ))
            .bind(keys)
            .fetch_all(&mut *conn)
            .await?;
            for r in rows {
                known.requests.insert(
                    (r.get("cluster"), r.get("uid")),
                    KnownRequest {
                        place: Place::Stored(r.get("id")),
                        outcome: r.get("outcome"),
                        reason: r.get("reason"),
                        message: r.get("message"),
                        revision: r.get("resource_version"),
                    },
                );
            }
        }
        if !certificates.is_empty() {
            certificates.sort_unstable();
            certificates.dedup();
            let keys = serde_json::to_string(&certificates).unwrap_or_else(|_| "[]".into());
            let keys_table = Engine::of_connection(conn).json_rows(1, "j");
            let rows = sqlx::query(&format!(
                "SELECT cluster, namespace, name, status, reason, resource_version FROM certificate_readiness WHERE id IN \
                 (SELECT (SELECT r.id FROM certificate_readiness r \
                          WHERE r.cluster = j.value ->> 0 AND r.namespace = j.value ->> 1 AND r.name = j.value ->> 2 \
                          ORDER BY r.id DESC LIMIT 1) \
                  FROM {keys_table})"
            ))
            .bind(keys)
            .fetch_all(&mut *conn)
            .await?;
            for r in rows {
                known.readiness.insert(
                    (r.get("cluster"), r.get("namespace"), r.get("name")),
                    (r.get("status"), r.get("reason"), r.get("resource_version")),
                );
            }
        }
        Ok(known)
    }

    /// A Certificate's Ready condition as seen at `now` in its resource version `revision`:
    /// a row when it differs from the last and is not older than it.
    pub(super) fn readiness(
        &mut self,
        (cluster, ns, name): (&str, &str, &str),
        ready: Option<&Condition>,
        revision: Option<i64>,
        now: DateTime<Utc>,
    ) {
        let status = ready
            .map(|c| c.status.to_string())
            .unwrap_or_else(|| "absent".into());
        let reason = ready.and_then(|c| c.reason.as_deref()).map(str::to_string);
        let key = (cluster.to_string(), ns.to_string(), name.to_string());
        if self.readiness.get(&key).is_some_and(|(s, r, stored)| {
            (*s == status && *r == reason) || super::already_stored(revision, *stored)
        }) {
            return;
        }
        self.readiness
            .insert(key.clone(), (status.clone(), reason.clone(), revision));
        self.new_readiness.push(NewReadiness {
            key,
            at: stamp(ready.and_then(|c| c.last_transition).unwrap_or(now)),
            status,
            reason,
            message: ready.and_then(|c| c.message.as_deref()).map(str::to_string),
            revision,
        });
    }

    /// Writes the readiness rows the batch found, in order.
    pub(super) async fn write_readiness(
        &mut self,
        conn: &mut AnyConnection,
    ) -> Result<(), sqlx::Error> {
        crate::store::insert_rows(
            conn,
            "certificate_readiness (cluster, namespace, name, at, status, reason, message, resource_version)",
            8,
            READINESS_PER_INSERT,
            &self.new_readiness,
            |insert, r| {
                insert
                    .bind(&r.key.0)
                    .bind(&r.key.1)
                    .bind(&r.key.2)
                    .bind(&r.at)
                    .bind(&r.status)
                    .bind(&r.reason)
                    .bind(&r.message)
                    .bind(r.revision)
            },
        )
        .await?;
        self.new_readiness.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::write_batch;
    use super::*;
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
            revision: None,
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
            revision: None,
        }
    }

    fn challenge(state: &str, deleted: bool) -> HistoryEvent {
        let meta = kube::api::ObjectMeta {
            name: Some("shop-tls-1-77-0".into()),
            namespace: Some("shop".into()),
            uid: Some("3f1c7e9a-0000-4000-8000-000000000002".into()),
            ..Default::default()
        };
        let data = serde_json::json!({
            "spec": {"dnsName": "shop.example", "type": "HTTP-01"},
            "status": {"state": state, "processing": state == "pending", "presented": false}
        });
        let mut strings = lookout_app::model::interner::Interner::default();
        let view =
            lookout_app::model::certificate::ChallengeView::project(&meta, &data, &mut strings)
                .unwrap();
        HistoryEvent::Challenge {
            cluster: "zrh".into(),
            view: std::sync::Arc::new(view),
            deleted,
            revision: None,
        }
    }

    /// Writes one batch, each event at its resource version.
    async fn at_revisions(pool: &crate::store::Pool, items: Vec<(HistoryEvent, i64)>) {
        let at = Utc::now();
        let batch: Vec<Stamped<HistoryEvent>> = items
            .into_iter()
            .map(|(e, rv)| Stamped {
                at,
                item: e.at_revision(Some(&rv.to_string())),
            })
            .collect();
        write_batch(pool, &batch).await.unwrap();
    }

    /// New request rows wait for the end of their batch: a deletion within the batch is
    /// written with the row, and a relist's sweep in the same batch judges them as stored.
    #[tokio::test]
    async fn new_requests_of_a_batch_are_written_together_as_last_seen() {
        for db in crate::store::testdb::engines().await {
            let at = Utc::now();
            let relisted = HistoryEvent::Relisted {
                cluster: "zrh".into(),
                kind: lookout_app::model::kind::Kind::CertificateRequest,
                live: Vec::new(),
                listed_from: None,
            };
            let batch: Vec<Stamped<HistoryEvent>> = vec![
                request("Pending", false),
                request("Failed", false),
                request("Failed", true),
                request("Failed", true),
            ]
            .into_iter()
            .map(|item| Stamped { at, item })
            .collect();
            write_batch(&db.writer, &batch).await.unwrap();
            let rows = || async {
                let rows: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
                    "SELECT outcome, finished_at, deleted_at FROM certificate_requests",
                )
                .fetch_all(&db.writer)
                .await
                .unwrap();
                rows
            };
            let stored = rows().await;
            assert_eq!(stored.len(), 1, "{:?}: {stored:?}", db.engine);
            assert_eq!(stored[0].0, "failed");
            assert!(stored[0].1.is_some(), "finished: {stored:?}");
            assert!(
                stored[0].2.is_some(),
                "deleted within the batch: {stored:?}"
            );
            // Another request, then a relist that does not hold it, in one batch.
            sqlx::query("DELETE FROM certificate_requests")
                .execute(&db.writer)
                .await
                .unwrap();
            let batch = vec![
                Stamped {
                    at,
                    item: request("Pending", false),
                },
                Stamped { at, item: relisted },
            ];
            write_batch(&db.writer, &batch).await.unwrap();
            let stored = rows().await;
            assert_eq!(stored.len(), 1);
            assert!(stored[0].2.is_some(), "swept by the relist: {stored:?}");
        }
    }

    /// An issued request is recorded as issued when its Ready condition turned, not when
    /// this Lookout first saw it: a second instance, or one started later, records the same
    /// time, and the budgets count it in the same windows.
    #[tokio::test]
    async fn an_issued_request_is_stamped_when_it_was_issued_not_when_seen() {
        for db in crate::store::testdb::engines().await {
            let meta = kube::api::ObjectMeta {
                name: Some("shop-tls-1".into()),
                namespace: Some("shop".into()),
                uid: Some("3f1c7e9a-0000-4000-8000-000000000009".into()),
                ..Default::default()
            };
            let status = serde_json::json!({"status": {"conditions": [
                {"type": "Ready", "status": "True", "reason": "Issued", "message": "Certificate fetched from issuer successfully", "lastTransitionTime": "2026-12-01T08:00:00Z"}
            ]}});
            let mut strings = lookout_app::model::interner::Interner::default();
            let view = CertificateRequestView::project(&meta, &status, &mut strings).unwrap();
            let item = HistoryEvent::Request {
                cluster: "zrh".into(),
                view: std::sync::Arc::new(view),
                acme_server: None,
                deleted: false,
                revision: None,
            };
            write_batch(
                &db.writer,
                &[Stamped {
                    at: Utc::now(),
                    item,
                }],
            )
            .await
            .unwrap();
            let (outcome, finished): (String, Option<String>) =
                sqlx::query_as("SELECT outcome, finished_at FROM certificate_requests")
                    .fetch_one(&db.writer)
                    .await
                    .unwrap();
            assert_eq!(outcome, "issued", "{:?}", db.engine);
            assert!(
                finished
                    .as_deref()
                    .is_some_and(|f| f.starts_with("2026-12-01T08:00:00")),
                "{:?}: {finished:?}",
                db.engine
            );
        }
    }

    /// A relist's sweep writes the batch's new requests mid-batch; a later event of the
    /// same request in that batch changes the stored row (it used to insert the request a
    /// second time, which the unique key refused: the batch failed every time it was tried).
    #[tokio::test]
    async fn a_request_seen_again_after_a_relist_in_its_batch_updates_its_row() {
        for db in crate::store::testdb::engines().await {
            let at = Utc::now();
            let elsewhere = HistoryEvent::Relisted {
                cluster: "gva".into(),
                kind: lookout_app::model::kind::Kind::CertificateRequest,
                live: Vec::new(),
                listed_from: None,
            };
            let batch: Vec<Stamped<HistoryEvent>> = vec![
                request("Pending", false),
                elsewhere,
                request("Failed", false),
                request("Failed", true),
            ]
            .into_iter()
            .map(|item| Stamped { at, item })
            .collect();
            write_batch(&db.writer, &batch).await.unwrap();
            let rows: Vec<(String, Option<String>)> =
                sqlx::query_as("SELECT outcome, deleted_at FROM certificate_requests")
                    .fetch_all(&db.reader)
                    .await
                    .unwrap();
            assert_eq!(rows.len(), 1, "{:?}: {rows:?}", db.engine);
            assert_eq!(rows[0].0, "failed", "{:?}", db.engine);
            assert!(rows[0].1.is_some(), "deleted: {rows:?}");
        }
    }

    /// A relist's sweep takes for deleted only what was stored before the list began: a row
    /// written since (by another replica, of an object this list is too old to hold) stays.
    #[tokio::test]
    async fn a_relist_sweeps_only_what_was_stored_before_it_began() {
        for db in crate::store::testdb::engines().await {
            let now = Utc::now();
            let batch = |items: Vec<HistoryEvent>| -> Vec<Stamped<HistoryEvent>> {
                items
                    .into_iter()
                    .map(|item| Stamped { at: now, item })
                    .collect()
            };
            write_batch(&db.writer, &batch(vec![challenge("pending", false)]))
                .await
                .unwrap();
            let relisted = |from: chrono::DateTime<Utc>| HistoryEvent::Relisted {
                cluster: "zrh".into(),
                kind: lookout_app::model::kind::Kind::Challenge,
                live: Vec::new(),
                listed_from: Some(from),
            };
            let deleted = || async {
                let d: Option<String> = sqlx::query_scalar("SELECT deleted_at FROM challenges")
                    .fetch_one(&db.reader)
                    .await
                    .unwrap();
                d.is_some()
            };
            // A list that began before the row was written does not hold it: not deleted.
            let earlier = now - chrono::Duration::seconds(30);
            write_batch(&db.writer, &batch(vec![relisted(earlier)]))
                .await
                .unwrap();
            assert!(!deleted().await, "{:?}", db.engine);
            // A list that began after it and does not hold it: deleted.
            let later = now + chrono::Duration::seconds(30);
            write_batch(&db.writer, &batch(vec![relisted(later)]))
                .await
                .unwrap();
            assert!(deleted().await);
        }
    }

    /// A deletion stored at its revision keeps a late, older observation of the object
    /// (another replica's) from bringing it back.
    #[tokio::test]
    async fn a_late_observation_from_before_the_deletion_does_not_bring_it_back() {
        for db in crate::store::testdb::engines().await {
            let write = |items: Vec<(HistoryEvent, i64)>| at_revisions(&db.writer, items);
            write(vec![
                (challenge("pending", false), 5),
                (challenge("pending", true), 7),
            ])
            .await;
            write(vec![(challenge("valid", false), 6)]).await;
            let (state, deleted): (String, Option<String>) =
                sqlx::query_as("SELECT state, deleted_at FROM challenges")
                    .fetch_one(&db.reader)
                    .await
                    .unwrap();
            assert_eq!(state, "pending", "{:?}", db.engine);
            assert!(deleted.is_some(), "still deleted");
        }
    }

    /// On PostgreSQL a history write that waits for the writers' lock gives up after the
    /// session's lock timeout — an error the writer holds and retries — rather than waiting
    /// for as long as another, stalled, replica holds it.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_write_waiting_for_another_replicas_lock_gives_up() {
        let Some(url) = crate::store::testdb::postgres_url().await else {
            return;
        };
        let db = crate::store::Db::open(&url).await.unwrap();
        let other = crate::store::Db::open(&url).await.unwrap();
        let mut stalled = other.writer.begin().await.unwrap();
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(crate::store::WRITERS_LOCK)
            .execute(&mut *stalled)
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let batch = vec![Stamped {
            at: Utc::now(),
            item: challenge("pending", false),
        }];
        let err = write_batch(&db.writer, &batch).await.unwrap_err();
        assert!(err.to_string().contains("lock timeout"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        drop(stalled);
    }

    /// Two replicas sharing a database each write what they saw: one that writes late
    /// (its batch after the other's) finds newer states stored and adds nothing, while a
    /// change newer than what is stored is recorded whoever writes it.
    #[tokio::test]
    async fn an_observation_older_than_the_stored_state_adds_nothing() {
        for db in crate::store::testdb::engines().await {
            let write = |items: Vec<(HistoryEvent, i64)>| at_revisions(&db.writer, items);
            let counts = || {
                let pool = db.reader.clone();
                async move {
                    let mut out = Vec::new();
                    for sql in [
                        "SELECT COUNT(*) FROM certificate_readiness",
                        "SELECT COUNT(*) FROM challenge_transitions",
                        "SELECT COUNT(*) FROM certificate_requests WHERE reason = 'Failed'",
                    ] {
                        let n: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
                        out.push(n);
                    }
                    out
                }
            };
            // The first replica saw and wrote all three steps.
            write(vec![
                (readiness("False", "Issuing"), 10),
                (challenge("pending", false), 11),
                (request("Pending", false), 12),
                (readiness("True", "Ready"), 13),
                (challenge("valid", false), 14),
                (request("Failed", false), 15),
            ])
            .await;
            assert_eq!(counts().await, vec![2, 2, 1]);
            // The second, late, writes the same observations: nothing is added, and the
            // older states do not come back.
            write(vec![
                (readiness("False", "Issuing"), 10),
                (challenge("pending", false), 11),
                (request("Pending", false), 12),
            ])
            .await;
            assert_eq!(counts().await, vec![2, 2, 1], "{:?}", db.engine);
            let state: String = sqlx::query_scalar("SELECT state FROM challenges")
                .fetch_one(&db.reader)
                .await
                .unwrap();
            assert_eq!(state, "valid");
            // A newer change is recorded, whoever sees it.
            write(vec![
                (readiness("False", "Issuing"), 20),
                (challenge("invalid", false), 21),
            ])
            .await;
            assert_eq!(counts().await, vec![3, 3, 1]);
        }
    }

    /// A batch reads what is stored once, keeps it current as it writes (an object can
    /// change twice within one batch), and a second batch of the same states — a restart's
    /// relist — writes nothing new.
    #[tokio::test]
    async fn a_batch_compares_with_what_is_stored_and_with_itself() {
        for db in crate::store::testdb::engines().await {
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
}
