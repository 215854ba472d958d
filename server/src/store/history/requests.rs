//! CertificateRequests in the history: one row per request, its outcome kept current. New
//! rows wait in the batch's [`Known`] and are inserted together (a start of a large fleet
//! sends one event per request, and a statement each was a round trip to the database).

use chrono::{DateTime, Utc};
use lookout_app::model::certificate::CertificateRequestView;
use sqlx::{AnyConnection, Row};

use crate::store::AnyQuery;

use super::known::{Known, KnownRequest, Place};
use super::{already_stored, mark_deleted, opt_stamp, outcome, stamp};

/// A request row not yet inserted, as the batch has seen it so far.
pub(super) struct NewRequest {
    cluster: String,
    namespace: String,
    name: String,
    uid: String,
    certificate: Option<String>,
    revision: Option<i64>,
    issuer_kind: Option<String>,
    issuer_name: Option<String>,
    acme_server: Option<String>,
    names: String,
    outcome: &'static str,
    reason: Option<String>,
    message: Option<String>,
    created_at: Option<String>,
    finished_at: Option<String>,
    last_seen: String,
    deleted_at: Option<String>,
    resource_version: Option<i64>,
}

/// Columns of a request row, in the order [`write_new`] binds them.
const COLUMNS: &str = "cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, \
     outcome, reason, message, created_at, finished_at, last_seen, deleted_at, resource_version";
/// Values per row.
const WIDTH: usize = 18;
/// Rows per `INSERT` (1,800 values, well within both engines' limits of parameters).
const PER_INSERT: usize = 100;

/// A CertificateRequest as seen at `now` (or its deletion): a new row, a changed outcome, or
/// nothing when the stored state is the same or newer.
pub(super) async fn request(
    conn: &mut AnyConnection,
    known: &mut Known,
    cluster: &str,
    v: &CertificateRequestView,
    acme_server: Option<&str>,
    (deleted, revision): (bool, Option<i64>),
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let uid = v.uid.to_string();
    let outcome = outcome(v);
    let condition = v.ready.as_ref();
    let reason = condition
        .and_then(|c| c.reason.as_deref())
        .map(str::to_string);
    let message = condition
        .and_then(|c| c.message.as_deref())
        .map(str::to_string);
    // When it ended as the request itself says (its failure time, or when its Ready
    // condition last turned), not when this Lookout first saw it: two instances that see it
    // at different times record the same time, and count it in the same windows.
    let ended = v
        .failure_time
        .or_else(|| condition.and_then(|c| c.last_transition));
    let finished = (outcome != "pending").then(|| stamp(ended.unwrap_or(now)));
    let key = (cluster.to_string(), uid);
    let Some(row) = known.requests.get_mut(&key) else {
        let names: Vec<&str> = v.names.iter().map(|n| &**n).collect();
        known.requests.insert(
            key.clone(),
            KnownRequest {
                place: Place::New(known.new_requests.len()),
                outcome: outcome.to_string(),
                reason: reason.clone(),
                message: message.clone(),
                revision,
            },
        );
        known.new_requests.push(NewRequest {
            cluster: key.0,
            namespace: v.namespace.to_string(),
            name: v.name.to_string(),
            uid: key.1,
            certificate: v.owner.as_ref().map(|o| o.name.to_string()),
            revision: v.revision,
            issuer_kind: v.issuer.as_ref().map(|i| i.kind.to_string()),
            issuer_name: v.issuer.as_ref().map(|i| i.name.to_string()),
            acme_server: acme_server.map(str::to_string),
            names: serde_json::to_string(&names).unwrap_or_else(|_| "[]".into()),
            outcome,
            reason,
            message,
            created_at: opt_stamp(v.created),
            finished_at: finished,
            last_seen: stamp(now),
            deleted_at: deleted.then(|| stamp(now)),
            resource_version: revision,
        });
        return Ok(());
    };
    if deleted {
        return match row.place {
            Place::Stored(id) => {
                mark_deleted(conn, "certificate_requests", id, (now, revision)).await
            }
            Place::New(i) => {
                let new = &mut known.new_requests[i];
                new.deleted_at = new.deleted_at.take().or_else(|| Some(stamp(now)));
                new.last_seen = stamp(now);
                new.resource_version = revision.or(new.resource_version);
                Ok(())
            }
        };
    }
    let same = row.outcome == outcome && row.reason == reason && row.message == message;
    if same || already_stored(revision, row.revision) {
        return Ok(());
    }
    match row.place {
        Place::Stored(id) => {
            sqlx::query("UPDATE certificate_requests SET outcome = $1, reason = $2, message = $3, finished_at = COALESCE(finished_at, $4), last_seen = $5, resource_version = $6 WHERE id = $7")
                .bind(outcome)
                .bind(&reason)
                .bind(&message)
                .bind(&finished)
                .bind(stamp(now))
                .bind(revision)
                .bind(id)
                .execute(&mut *conn)
                .await?;
        }
        Place::New(i) => {
            let new = &mut known.new_requests[i];
            new.outcome = outcome;
            new.reason = reason.clone();
            new.message = message.clone();
            new.finished_at = new.finished_at.take().or(finished);
            new.last_seen = stamp(now);
            new.resource_version = revision;
        }
    }
    (row.outcome, row.reason, row.message) = (outcome.to_string(), reason, message);
    row.revision = revision;
    Ok(())
}

/// An ACME issuer as now seen: the requests it issued that were recorded without their ACME
/// server (seen before the issuer was) get it — those waiting in the batch and those stored.
/// One named `Issuer` is matched in its namespace (an empty or missing kind is cert-manager's
/// default, `Issuer`); a `ClusterIssuer` in any.
pub(super) async fn issuer_seen(
    conn: &mut AnyConnection,
    known: &mut Known,
    cluster: &str,
    kind: lookout_app::model::Kind,
    (namespace, name): (&str, &str),
    acme_server: &str,
) -> Result<(), sqlx::Error> {
    let cluster_wide = kind == lookout_app::model::Kind::ClusterIssuer;
    let kind_matches = |k: Option<&str>| match k {
        Some("ClusterIssuer") => cluster_wide,
        Some("Issuer") | Some("") | None => !cluster_wide,
        Some(_) => false,
    };
    for r in known.new_requests.iter_mut().filter(|r| {
        r.acme_server.is_none()
            && r.cluster == cluster
            && r.issuer_name.as_deref() == Some(name)
            && kind_matches(r.issuer_kind.as_deref())
            && (cluster_wide || r.namespace == namespace)
    }) {
        r.acme_server = Some(acme_server.to_string());
    }
    let update = if cluster_wide {
        sqlx::query(
            "UPDATE certificate_requests SET acme_server = $1 \
             WHERE acme_server IS NULL AND cluster = $2 AND issuer_name = $3 AND issuer_kind = 'ClusterIssuer'",
        )
        .bind(acme_server)
        .bind(cluster)
        .bind(name)
    } else {
        sqlx::query(
            "UPDATE certificate_requests SET acme_server = $1 \
             WHERE acme_server IS NULL AND cluster = $2 AND issuer_name = $3 AND namespace = $4 \
             AND (issuer_kind IS NULL OR issuer_kind IN ('Issuer', ''))",
        )
        .bind(acme_server)
        .bind(cluster)
        .bind(name)
        .bind(namespace)
    };
    update.execute(&mut *conn).await?;
    Ok(())
}

/// Whether more of the batch follows the rows [`write_new`] writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Then {
    /// More events of the batch follow: the written rows stay known, by id.
    More,
    /// The batch ends: nothing reads what is known any more.
    End,
}

/// Inserts the batch's new request rows, in the order they were first seen. Called before
/// anything else in the batch reads the table, and at its end.
pub(super) async fn write_new(
    conn: &mut AnyConnection,
    known: &mut Known,
    then: Then,
) -> Result<(), sqlx::Error> {
    if known.new_requests.is_empty() {
        return Ok(());
    }
    let into = format!("certificate_requests ({COLUMNS})");
    let rows = &known.new_requests;
    if then == Then::End {
        crate::store::insert_rows(conn, &into, WIDTH, PER_INSERT, rows, bind).await?;
        known.new_requests.clear();
        return Ok(());
    }
    // The rows are stored now: a later event of the batch about one of them (a relist's
    // sweep writes them mid-batch) updates its row by id. Forgetting them instead made such
    // an event insert the request again, which the unique key refuses — the whole batch,
    // every time it is tried.
    let stored = crate::store::insert_rows_returning(
        conn,
        &into,
        (WIDTH, PER_INSERT),
        rows,
        "id, cluster, uid",
        bind,
    )
    .await?;
    for r in stored {
        let key: (String, String) = (r.get("cluster"), r.get("uid"));
        if let Some(known) = known.requests.get_mut(&key) {
            known.place = Place::Stored(r.get("id"));
        }
    }
    known.new_requests.clear();
    // Any left new (not returned: never expected) are forgotten; the next batch reads them
    // from the database.
    known
        .requests
        .retain(|_, r| matches!(r.place, Place::Stored(_)));
    Ok(())
}

/// Binds a new request's values, in the order of [`COLUMNS`].
fn bind<'q>(insert: AnyQuery<'q>, r: &'q NewRequest) -> AnyQuery<'q> {
    insert
        .bind(&r.cluster)
        .bind(&r.namespace)
        .bind(&r.name)
        .bind(&r.uid)
        .bind(&r.certificate)
        .bind(r.revision)
        .bind(&r.issuer_kind)
        .bind(&r.issuer_name)
        .bind(&r.acme_server)
        .bind(&r.names)
        .bind(r.outcome)
        .bind(&r.reason)
        .bind(&r.message)
        .bind(&r.created_at)
        .bind(&r.finished_at)
        .bind(&r.last_seen)
        .bind(&r.deleted_at)
        .bind(r.resource_version)
}
