//! SQLite through sqlx: WAL, `synchronous=NORMAL`, a busy timeout, embedded migrations applied
//! at start, one writer connection and a separate read pool.

pub mod audit;
pub mod history;
pub mod sync_events;
pub mod writer;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// Why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the database {url}: {source}")]
    Open { url: String, source: sqlx::Error },
    #[error("database migration failed: {0} (the database was left at its previous version; fix the cause or restore a backup, then start again)")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// The two handles on the database.
#[derive(Debug, Clone)]
pub struct Db {
    /// Exactly one connection: every write goes through it, so writers never contend.
    pub writer: SqlitePool,
    /// Read-only connections for pages and the API.
    pub reader: SqlitePool,
    /// Whether the writers' writes go through.
    pub health: Arc<writer::Health>,
}

impl Db {
    /// Opens (creating if missing) the database at `url` and applies pending migrations.
    pub async fn open(url: &str) -> Result<Db, StoreError> {
        let open_err = |source| StoreError::Open {
            url: url.to_string(),
            source,
        };
        let options = SqliteConnectOptions::from_str(url)
            .map_err(open_err)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await
            .map_err(open_err)?;
        sqlx::migrate!("../migrations").run(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.read_only(true))
            .await
            .map_err(open_err)?;
        Ok(Db {
            writer,
            reader,
            health: Arc::default(),
        })
    }

    /// Closes both pools, checkpointing the WAL.
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn opens_in_wal_mode_and_migrates() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let db = Db::open(&url).await.unwrap();
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&db.reader)
            .await
            .unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(&db.writer)
            .await
            .unwrap();
        assert_eq!(sync, 1, "NORMAL");
        let tables: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM sqlite_master WHERE name = 'cluster_sync_events'",
        )
        .fetch_one(&db.reader)
        .await
        .unwrap();
        assert_eq!(tables, 1);
        let write = sqlx::query("CREATE TABLE x (a)").execute(&db.reader).await;
        assert!(write.is_err(), "the read pool cannot write");
        db.close().await;
        // Opening again applies nothing new and succeeds.
        Db::open(&url).await.unwrap().close().await;
    }

    #[tokio::test]
    async fn an_unopenable_path_is_a_clear_error() {
        let err = Db::open("sqlite:///nonexistent-dir/x/y.db")
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot open the database sqlite:///nonexistent-dir/x/y.db"),
            "{err}"
        );
    }
}
