//! The previews and results of actions (`action_records`), kept so that `/actions/{id}`
//! answers on whichever replica the browser reaches, and after a restart. Written in order
//! by one task per process as a record is made and as a bulk run moves on.

use lookout_app::actions::ActionRecord;
use tokio::sync::{mpsc, oneshot};

use super::{stamp, Pool};

/// Stores `record` (again, as it changes).
pub async fn save(pool: &Pool, record: &ActionRecord) -> sqlx::Result<()> {
    let json = serde_json::to_string(record).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query(
        "INSERT INTO action_records (id, actor, at, record) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (id) DO UPDATE SET record = excluded.record",
    )
    .bind(&record.id)
    .bind(&record.actor)
    .bind(stamp(record.at))
    .bind(json)
    .execute(pool)
    .await?;
    Ok(())
}

/// The stored record `id`, if any.
pub async fn load(pool: &Pool, id: &str) -> sqlx::Result<Option<ActionRecord>> {
    let json: Option<String> =
        sqlx::query_scalar("SELECT record FROM action_records WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?;
    json.map(|j| serde_json::from_str(&j).map_err(|e| sqlx::Error::Decode(Box::new(e))))
        .transpose()
}

/// Records to store, each with whom to tell once it is (or could not be) stored.
pub type Saver = mpsc::UnboundedSender<(ActionRecord, Option<oneshot::Sender<()>>)>;

/// The task that stores records in the order they are sent; a record the database refuses
/// is logged (the replica that made it still shows it from memory).
pub fn saver(pool: Pool) -> Saver {
    let (tx, mut rx) = mpsc::unbounded_channel::<(ActionRecord, Option<oneshot::Sender<()>>)>();
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            // What queued up meanwhile (a bulk run's steps while the database was slow): only
            // each record's latest state is written.
            let mut latest: Vec<ActionRecord> = Vec::new();
            let mut waiting = Vec::new();
            let mut next = Some(first);
            while let Some((record, done)) = next {
                waiting.extend(done);
                match latest.iter_mut().find(|r| r.id == record.id) {
                    Some(r) => *r = record,
                    None => latest.push(record),
                }
                next = rx.try_recv().ok();
            }
            for record in &latest {
                if let Err(e) = save(&pool, record).await {
                    tracing::warn!(error = %e, id = %record.id, "an action's record could not be stored; other replicas will not show it");
                }
            }
            for done in waiting {
                let _ = done.send(());
            }
        }
    });
    tx
}
