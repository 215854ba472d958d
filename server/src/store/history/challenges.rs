//! Challenges in the history: one row per Challenge, its state kept current, each change a
//! transition (the database's triggers add it, migration 0005). Every event is an upsert
//! that writes nothing when the state is unchanged or older than the stored one; the
//! upserts of a batch wait in [`Pending`] and go out 100 to a statement (a statement each
//! was a round trip to the database per event: on PostgreSQL, most of the writer's time).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use lookout_app::model::certificate::ChallengeView;
use sqlx::{AnyConnection, Row as _};

use super::{mark_deleted, opt_stamp, stamp};

/// The batch's Challenge upserts not yet sent, in the order they were seen.
#[derive(Default)]
pub(super) struct Pending {
    rows: Vec<Upsert>,
    /// (cluster, uid) of `rows`: one statement may not change a row twice (PostgreSQL
    /// refuses it), so a second event of the same Challenge sends the ones before it first.
    keys: HashSet<(String, String)>,
}

struct Upsert {
    cluster: String,
    namespace: String,
    name: String,
    uid: String,
    order_name: Option<String>,
    dns_name: String,
    challenge_type: String,
    state: String,
    reason: Option<String>,
    presented: i64,
    processing: i64,
    created_at: Option<String>,
    last_seen: String,
    deleted_at: Option<String>,
    resource_version: Option<i64>,
}

const COLUMNS: &str =
    "cluster, namespace, name, uid, order_name, dns_name, challenge_type, state, reason, \
     presented, processing, created_at, last_seen, deleted_at, resource_version";
/// Values per row.
const WIDTH: usize = 15;
/// Rows per statement (1,500 values, well within both engines' limits of parameters).
const PER_UPSERT: usize = 100;
/// A new Challenge is inserted; a changed one updated; an unchanged one, or an observation
/// older than the stored state (another replica wrote it or a newer one), writes nothing.
const ON_CONFLICT: &str = "ON CONFLICT (cluster, uid) DO UPDATE SET state = excluded.state, reason = excluded.reason, \
       presented = excluded.presented, processing = excluded.processing, last_seen = excluded.last_seen, \
       deleted_at = NULL, resource_version = excluded.resource_version \
     WHERE (challenges.state, challenges.reason, challenges.presented, challenges.processing) \
       IS DISTINCT FROM (excluded.state, excluded.reason, excluded.presented, excluded.processing) \
       AND (challenges.resource_version IS NULL OR excluded.resource_version IS NULL \
            OR excluded.resource_version > challenges.resource_version)";

/// Records one observation of a Challenge: its upsert waits in `pending`; a deletion is
/// written at once (after what is pending, which may hold the Challenge's row).
pub(super) async fn challenge(
    conn: &mut AnyConnection,
    pending: &mut Pending,
    cluster: &str,
    v: &ChallengeView,
    (deleted, revision): (bool, Option<i64>),
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let uid = v.uid.to_string();
    if deleted {
        write(conn, pending).await?;
        let existing = sqlx::query("SELECT id FROM challenges WHERE cluster = $1 AND uid = $2")
            .bind(cluster)
            .bind(&uid)
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(row) = existing {
            return mark_deleted(conn, "challenges", row.get("id"), (now, revision)).await;
        }
    }
    let key = (cluster.to_string(), uid);
    if pending.keys.contains(&key) {
        write(conn, pending).await?;
    }
    pending.rows.push(Upsert {
        cluster: key.0.clone(),
        namespace: v.namespace.to_string(),
        name: v.name.to_string(),
        uid: key.1.clone(),
        order_name: v.owner.as_ref().map(|o| o.name.to_string()),
        dns_name: v.dns_name.to_string(),
        challenge_type: v.challenge_type.to_string(),
        state: v.state.to_string(),
        reason: v.reason.as_deref().map(str::to_string),
        presented: i64::from(v.presented),
        processing: i64::from(v.processing),
        created_at: opt_stamp(v.created),
        last_seen: stamp(now),
        deleted_at: deleted.then(|| stamp(now)),
        resource_version: revision,
    });
    pending.keys.insert(key);
    Ok(())
}

/// Sends the pending upserts, in order. Called before anything in the batch reads the table
/// (a deletion, a relist's sweep) and at its end.
pub(super) async fn write(
    conn: &mut AnyConnection,
    pending: &mut Pending,
) -> Result<(), sqlx::Error> {
    if pending.rows.is_empty() {
        return Ok(());
    }
    let into = format!("challenges ({COLUMNS})");
    crate::store::insert_rows_then(
        conn,
        &into,
        WIDTH,
        PER_UPSERT,
        &pending.rows,
        ON_CONFLICT,
        |insert, r| {
            insert
                .bind(&r.cluster)
                .bind(&r.namespace)
                .bind(&r.name)
                .bind(&r.uid)
                .bind(&r.order_name)
                .bind(&r.dns_name)
                .bind(&r.challenge_type)
                .bind(&r.state)
                .bind(&r.reason)
                .bind(r.presented)
                .bind(r.processing)
                .bind(&r.created_at)
                .bind(&r.last_seen)
                .bind(&r.deleted_at)
                .bind(r.resource_version)
        },
    )
    .await?;
    pending.rows.clear();
    pending.keys.clear();
    Ok(())
}
