//! The history's database through sqlx's `Any` driver, one set of queries for two engines:
//! SQLite (the embedded default: WAL, `synchronous=NORMAL`, a busy timeout, one writer
//! connection and a separate read pool) and PostgreSQL (`database_url = "postgres://…"`,
//! for several replicas sharing one database). Each engine has its migrations
//! (`migrations/sqlite`, `migrations/postgres`: the same tables, columns and versions), applied
//! at start. Queries number their parameters (`$1`), which both engines read; the few places
//! where the dialects differ ask [`Engine`] for their SQL.

pub mod action_records;
pub mod audit;
pub mod copy;
pub mod history;
mod inserts;
pub mod probes;
pub mod reads;
pub mod sessions;
pub mod sync_events;
#[cfg(test)]
#[allow(dead_code)] // Its restartable server serves the integration tests.
pub(crate) mod testdb;
mod timeline;
pub mod writer;

pub(crate) use inserts::{insert_rows, insert_rows_returning, insert_rows_then, values, AnyQuery};

use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

/// A pool of either engine's connections.
pub type Pool = AnyPool;

/// Which database server the history lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// The engine a `database_url` names: `postgres://` or `postgresql://` for PostgreSQL,
    /// `sqlite:` for SQLite.
    pub fn of(url: &str) -> Option<Engine> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Engine::Postgres)
        } else if url.starts_with("sqlite:") {
            Some(Engine::Sqlite)
        } else {
            None
        }
    }

    /// The engine behind a pool.
    pub fn of_pool(pool: &Pool) -> Engine {
        match pool.connect_options().database_url.scheme() {
            "postgres" | "postgresql" => Engine::Postgres,
            _ => Engine::Sqlite,
        }
    }

    /// The engine behind a connection.
    pub fn of_connection(conn: &sqlx::AnyConnection) -> Engine {
        if conn.backend_name() == "PostgreSQL" {
            Engine::Postgres
        } else {
            Engine::Sqlite
        }
    }

    /// SQL that holds when text `column` ends with `.` and the text bound as `$n`.
    pub fn is_subdomain(self, column: &str, n: usize) -> String {
        match self {
            Engine::Sqlite => format!(
                "(length({column}) > length(${n}) AND substr({column}, -length(${n}) - 1) = '.' || ${n})"
            ),
            Engine::Postgres => format!(
                "(length({column}) > length(${n}) AND right({column}, length(${n}) + 1) = '.' || ${n})"
            ),
        }
    }

    /// The statement that starts a transaction that will write: SQLite takes the write lock
    /// at once (`IMMEDIATE`), so a busy database waits at the start, not at the first write.
    pub fn begin_write(self) -> &'static str {
        match self {
            Engine::Sqlite => "BEGIN IMMEDIATE",
            Engine::Postgres => "BEGIN",
        }
    }

    /// What a write transaction of the history runs right after it begins so that no other
    /// process writes the history at the same time: on PostgreSQL, several replicas share
    /// one database and each compares what it saw with what is stored before it writes
    /// (a state change already recorded by another replica is not recorded again), which
    /// holds only if those comparisons and writes do not interleave — a transaction-scoped
    /// advisory lock, released at COMMIT or ROLLBACK. SQLite's `BEGIN IMMEDIATE` already
    /// excludes every other writer.
    pub fn exclude_other_writers(self) -> Option<&'static str> {
        match self {
            Engine::Sqlite => None,
            Engine::Postgres => Some("SELECT pg_advisory_xact_lock($1)"),
        }
    }

    /// The rows of the JSON array bound as parameter `$n`, as a table `alias` whose `value`
    /// column holds each element as JSON (read its parts with `alias.value ->> i`).
    pub fn json_rows(self, n: usize, alias: &str) -> String {
        match self {
            Engine::Sqlite => format!("json_each(${n}) AS {alias}"),
            Engine::Postgres => format!("json_array_elements(${n}::json) AS {alias}(value)"),
        }
    }

    /// A subquery of the text elements of the JSON array bound as `$n` (for `IN (…)`).
    pub fn json_texts(self, n: usize) -> String {
        match self {
            Engine::Sqlite => format!("(SELECT value FROM json_each(${n}))"),
            Engine::Postgres => {
                format!("(SELECT value FROM json_array_elements_text(${n}::json) AS j(value))")
            }
        }
    }

    /// A subquery of the integer elements of the JSON array bound as `$n`.
    pub fn json_integers(self, n: usize) -> String {
        match self {
            Engine::Sqlite => format!("(SELECT value FROM json_each(${n}))"),
            Engine::Postgres => format!(
                "(SELECT value::bigint FROM json_array_elements_text(${n}::json) AS j(value))"
            ),
        }
    }

    fn migrator(self) -> sqlx::migrate::Migrator {
        match self {
            Engine::Sqlite => sqlx::migrate!("../migrations/sqlite"),
            Engine::Postgres => sqlx::migrate!("../migrations/postgres"),
        }
    }
}

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
    /// Exactly one connection: every write of this process goes through it, so its writers
    /// never contend with each other.
    pub writer: Pool,
    /// Read-only connections for pages and the API.
    pub reader: Pool,
    /// Whether the writers' writes go through.
    pub health: Arc<writer::Health>,
    /// Which engine the pools talk to.
    pub engine: Engine,
}

impl StoreError {
    /// Whether the cause may go away by itself or by an operator's hand while Lookout runs:
    /// the file cannot be opened or created, the filesystem is read-only or full, another
    /// process holds a lock, an I/O error. A bad URL or a migration that does not fit the
    /// database is not.
    pub fn is_transient(&self) -> bool {
        let sql = match self {
            StoreError::Open { source, .. } => source,
            StoreError::Migrate(
                sqlx::migrate::MigrateError::Execute(e)
                | sqlx::migrate::MigrateError::ExecuteMigration(e, _),
            ) => e,
            StoreError::Migrate(_) => return false,
        };
        match sql {
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut => true,
            sqlx::Error::Database(d) => d.code().is_some_and(|c| transient_code(&c)),
            _ => false,
        }
    }
}

/// Whether a database error code names a cause that may pass. SQLite's codes are numbers
/// below 10,000 (primary code in the low byte): PERM, BUSY, LOCKED, READONLY, IOERR, FULL and
/// CANTOPEN. PostgreSQL's are five-character SQLSTATEs: classes 08 (connection exception), 53
/// (insufficient resources: disk full, too many connections) and 57P (the server shutting
/// down, starting, or crashed), and 25006 (a read-only transaction: a server in recovery).
fn transient_code(code: &str) -> bool {
    if code.len() == 5 {
        return code.starts_with("08")
            || code.starts_with("53")
            || code.starts_with("57P")
            || code == "25006";
    }
    let n = code.parse::<i32>().unwrap_or(0) & 0xff;
    matches!(n, 3 | 5 | 6 | 8 | 10 | 13 | 14)
}

impl StoreError {
    /// The cause in the database's words, without the database URL (for the page banner).
    pub fn reason(&self) -> String {
        match self {
            StoreError::Open { source, .. } => {
                format!("cannot open the database: {}", writer::describe(source))
            }
            StoreError::Migrate(_) => self.to_string(),
        }
    }
}

pub use reads::view_param;

/// SQL that holds for rows whose `cluster` and `namespace` columns are in the view bound as
/// parameter `${n}` (see [`view_param`]).
pub fn scope_clause(engine: Engine, n: usize) -> String {
    scope_filter(engine, n, "cluster", "namespace", Rows::InNamespaces)
}

/// What a table's rows are about, for [`scope_filter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Rows of a namespace, or (namespace `''`) of the whole cluster: an empty namespace is
    /// seen only through a whole-cluster grant (namespace pattern `*`).
    InNamespaces,
    /// Rows about the cluster itself (its sync state), told to anyone who sees any of it.
    OfTheCluster,
}

/// The one place the history's scope filter is written: SQL that holds for rows whose
/// `cluster_column` and `namespace_column` are in the view bound as parameter `${n}` (see
/// [`view_param`]).
pub fn scope_filter(
    engine: Engine,
    n: usize,
    cluster_column: &str,
    namespace_column: &str,
    rows: Rows,
) -> String {
    let namespace = match (rows, engine) {
        (Rows::InNamespaces, Engine::Sqlite) => format!("{namespace_column} GLOB (g.value ->> 1)"),
        (Rows::InNamespaces, Engine::Postgres) => {
            format!("{namespace_column} LIKE (g.value ->> 2)")
        }
        (Rows::OfTheCluster, _) => "1 = 1".to_string(),
    };
    let triples = engine.json_rows(n, "g");
    let null = match engine {
        Engine::Sqlite => format!("${n} IS NULL"),
        Engine::Postgres => format!("${n}::text IS NULL"),
    };
    format!(
        "({null} OR EXISTS (SELECT 1 FROM {triples} \
           WHERE {cluster_column} = (g.value ->> 0) AND {namespace}))"
    )
}

/// A time as the history stores it: RFC 3339 in UTC with milliseconds, so that text order is
/// time order.
pub(crate) fn stamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The `(OFFSET, LIMIT)` of 1-based `page` of `per_page` rows.
pub fn page_window(page: usize, per_page: usize) -> (i64, i64) {
    let int = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    (
        int(page.saturating_sub(1).saturating_mul(per_page)),
        int(per_page),
    )
}

/// The advisory lock that history writers hold while they write (see
/// [`Engine::exclude_other_writers`]): "Lookout" in ASCII.
pub(crate) const WRITERS_LOCK: i64 = 0x004c_6f6f_6b6f_7574;

/// A transaction for writes that replicas sharing a PostgreSQL database may make at the same
/// time and compare with what is stored first: it holds the writers' lock (see
/// [`Engine::exclude_other_writers`]).
pub(crate) async fn begin_shared_write(
    pool: &Pool,
) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    exclude_other_writers(&mut tx).await?;
    Ok(tx)
}

/// Takes the writers' lock in the transaction open on `conn` (nothing on SQLite, whose
/// write transactions exclude each other already; see [`Engine::exclude_other_writers`]).
pub(crate) async fn exclude_other_writers(
    conn: &mut sqlx::AnyConnection,
) -> Result<(), sqlx::Error> {
    if let Some(lock) = Engine::of_connection(conn).exclude_other_writers() {
        sqlx::query(lock).bind(WRITERS_LOCK).execute(conn).await?;
    }
    Ok(())
}

/// A yes/no column, stored as 0 or 1 in both engines.
pub(crate) fn flag(row: &sqlx::any::AnyRow, column: &str) -> bool {
    use sqlx::Row;
    row.get::<i64, _>(column) != 0
}

/// A query with its parameters bound so far.
pub(crate) type SqlQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// Runs a `SELECT COUNT(*) …` query.
pub(crate) async fn count(pool: &Pool, query: SqlQuery<'_>) -> Result<usize, sqlx::Error> {
    use sqlx::Row;
    let n: i64 = query.fetch_one(pool).await?.get(0);
    Ok(usize::try_from(n).unwrap_or_default())
}

/// A scope glob as a SQLite `GLOB` pattern: `[` starts a character class there, so it is
/// written as the class holding only `[`.
fn sql_glob(pattern: &str) -> String {
    pattern.replace('[', "[[]")
}

/// A scope glob as a PostgreSQL `LIKE` pattern (backslash its escape): `*` any run, `?` one
/// character, and `%`, `_` and `\` themselves.
fn sql_like(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// SQLite's page cache per connection, in KiB when negative (SQLite's default is 2,000 KiB).
/// The database file's pages stay in the operating system's cache, so a page SQLite no
/// longer holds costs a read call, not a disk access; a smaller cache keeps five connections'
/// caches from holding up to 10 MB that a burst of history writes or a few history pages
/// filled and nothing ever gives back.
const CACHE_SIZE: &str = "-512";

/// What one of the two pools connects with: for SQLite the file is created when missing
/// (the writer) or opened read-only (the readers).
fn options(url: &str, engine: Engine, read_only: bool) -> Result<AnyConnectOptions, StoreError> {
    let url = match engine {
        Engine::Sqlite if !url.contains("mode=") && !url.contains(":memory:") => {
            let mode = if read_only { "ro" } else { "rwc" };
            let joint = if url.contains('?') { '&' } else { '?' };
            format!("{url}{joint}mode={mode}")
        }
        _ => url.to_string(),
    };
    url.parse().map_err(|source| StoreError::Open {
        url: url.to_string(),
        source,
    })
}

/// The settings every connection of a pool starts with.
fn pool(engine: Engine, read_only: bool) -> AnyPoolOptions {
    let mut pool = AnyPoolOptions::new().max_connections(if read_only { 4 } else { 1 });
    if engine == Engine::Postgres {
        // A server that is down or restarting is tried again by the writers (which hold what
        // they cannot write) and answered without history by the pages: neither waits the
        // pool's default 30 s for a connection.
        pool = pool.acquire_timeout(if read_only {
            Duration::from_secs(2)
        } else {
            Duration::from_secs(5)
        });
    }
    pool.after_connect(move |conn, _| {
        Box::pin(async move {
            match (engine, read_only) {
                (Engine::Sqlite, false) => {
                    conn.execute(
                        format!(
                            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                             PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; \
                             PRAGMA cache_size = {CACHE_SIZE};"
                        )
                        .as_str(),
                    )
                    .await?;
                }
                (Engine::Sqlite, true) => {
                    conn.execute(
                        format!(
                            "PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; \
                             PRAGMA cache_size = {CACHE_SIZE};"
                        )
                        .as_str(),
                    )
                    .await?;
                }
                (Engine::Postgres, false) => {
                    // The server ends what a stalled replica holds: a transaction left open
                    // (its lock with it) after 30 s, a lock wait after 10 s, a statement
                    // after a minute — each an error the writers hold and retry.
                    conn.execute(
                        "SET idle_in_transaction_session_timeout = '30s'; \
                         SET lock_timeout = '10s'; SET statement_timeout = '60s'",
                    )
                    .await?;
                }
                (Engine::Postgres, true) => {
                    conn.execute("SET default_transaction_read_only = on")
                        .await?;
                }
            }
            Ok(())
        })
    })
}

/// The engine of `url`, with sqlx's drivers for both installed.
fn engine(url: &str) -> Result<Engine, StoreError> {
    sqlx::any::install_default_drivers();
    Engine::of(url).ok_or_else(|| StoreError::Open {
        url: url.to_string(),
        source: sqlx::Error::Configuration(
            "the database URL must start with sqlite: or postgres:// (or postgresql://)".into(),
        ),
    })
}

/// The first pause before opening again a database that could not be opened; it doubles up
/// to a minute.
const REOPEN_MIN: Duration = Duration::from_secs(2);
const REOPEN_MAX: Duration = Duration::from_secs(60);

impl Db {
    /// Opens (creating if missing, for SQLite) the database at `url` and applies pending
    /// migrations.
    pub async fn open(url: &str) -> Result<Db, StoreError> {
        let engine = engine(url)?;
        let open_err = |source| StoreError::Open {
            url: url.to_string(),
            source,
        };
        let writer = pool(engine, false)
            .connect_with(options(url, engine, false)?)
            .await
            .map_err(open_err)?;
        engine.migrator().run(&writer).await?;
        let reader = pool(engine, true)
            .connect_with(options(url, engine, true)?)
            .await
            .map_err(open_err)?;
        Ok(Db {
            writer,
            reader,
            health: Arc::default(),
            engine,
        })
    }

    /// Like [`Db::open`], but a database that cannot be opened for a transient reason (see
    /// [`StoreError::is_transient`]) does not stop Lookout: it serves the live data, shows the
    /// fault (as writer `database` in [`writer::Health`]), lets its writers hold what they
    /// cannot write, and tries again — after 2 s, doubling to a minute — until the database
    /// opens and is migrated. Any other error is returned.
    pub async fn open_or_retry(url: &str, now: crate::clock::Now) -> Result<Db, StoreError> {
        let error = match Db::open(url).await {
            Ok(db) => return Ok(db),
            Err(e) if e.is_transient() => e,
            Err(e) => return Err(e),
        };
        let engine = engine(url)?;
        // The log has the whole error with the URL; the banner, which every signed-in user
        // sees, only the database's reason.
        tracing::error!(%error, "the database cannot be opened now; serving live data and trying again");
        let health = Arc::new(writer::Health::default());
        health.failed_because("database", error.reason(), now());
        let db = Db {
            writer: pool(engine, false).connect_lazy_with(options(url, engine, false)?),
            reader: pool(engine, true).connect_lazy_with(options(url, engine, true)?),
            health,
            engine,
        };
        let (pool, health) = (db.writer.clone(), db.health.clone());
        tokio::spawn(async move {
            let mut pause = REOPEN_MIN;
            while !pool.is_closed() {
                tokio::time::sleep(pause).await;
                match engine.migrator().run(&pool).await {
                    Ok(()) => {
                        health.recovered("database");
                        return;
                    }
                    Err(e) => {
                        health.failed_because("database", StoreError::from(e).reason(), now());
                        pause = (pause * 2).min(REOPEN_MAX);
                    }
                }
            }
        });
        Ok(db)
    }

    /// A writer pool of its own on PostgreSQL, for work on another tokio runtime (the probe's
    /// thread: a connection belongs to the runtime that opened it) or that holds its
    /// connection long (retention), so the writers' connection stays free; SQLite's single
    /// writer connection is shared as before.
    pub fn separate_writer(&self) -> Pool {
        match self.engine {
            Engine::Sqlite => self.writer.clone(),
            Engine::Postgres => pool(self.engine, false)
                .max_connections(1)
                .connect_lazy_with((*self.writer.connect_options()).clone()),
        }
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

    /// Who sees which history rows is decided in one function: no other source file of the
    /// server writes a scope filter of its own (the form every copy would take).
    #[test]
    fn the_scope_filter_is_written_in_one_place() {
        let files = crate::source_scan::product_sources();
        let copies: Vec<&str> = files
            .iter()
            .filter(|(name, text)| name != "store/mod.rs" && text.contains("g.value ->> "))
            .map(|(name, _)| name.as_str())
            .collect();
        assert!(files.len() > 20, "the sources were found");
        assert!(
            copies.is_empty(),
            "scope filters written elsewhere: {copies:?}"
        );
        // And the rule of whole-cluster rows holds in SQL: a namespace grant does not see a
        // row without a namespace; a whole-cluster grant does.
        for engine in [Engine::Sqlite, Engine::Postgres] {
            let filter = scope_filter(engine, 1, "cluster", "namespace", Rows::InNamespaces);
            assert!(filter.contains("namespace GLOB") || filter.contains("namespace LIKE"));
            let whole = scope_filter(engine, 1, "c", "n", Rows::OfTheCluster);
            assert!(!whole.contains("n GLOB") && !whole.contains("n LIKE"));
        }
    }

    #[tokio::test]
    async fn scope_filters_keep_whole_cluster_rows_for_whole_cluster_grants() {
        use lookout_app::model::scope::{Access, Grant, Role};
        use lookout_app::model::View;
        let view = |clusters: &str, namespaces: &str| {
            let grant = Grant {
                clusters: vec![clusters.into()],
                namespaces: vec![namespaces.into()],
            };
            View::new(&Access::new(vec![(Role::Viewer, grant)]), ["zrh", "gva"])
        };
        let (tenant, whole) = (view("zrh", "acme-*"), view("zrh", "*"));
        let elsewhere = view("gva", "*");
        let odd = view("zrh", "a_b%c\\d*");
        for db in testdb::engines().await {
            let sees = |view: &View, namespace: &str, rows: Rows| {
                let sql = format!(
                    "SELECT CASE WHEN {} THEN 1 ELSE 0 END FROM (SELECT 'zrh' AS cluster, $2 AS namespace) AS r",
                    scope_filter(db.engine, 1, "cluster", "namespace", rows)
                );
                let (pool, param, namespace) =
                    (db.reader.clone(), view_param(view), namespace.to_string());
                async move {
                    let seen: i32 = sqlx::query_scalar(&sql)
                        .bind(param)
                        .bind(namespace)
                        .fetch_one(&pool)
                        .await
                        .unwrap();
                    seen == 1
                }
            };
            assert!(sees(&tenant, "acme-shop", Rows::InNamespaces).await);
            assert!(!sees(&tenant, "globex", Rows::InNamespaces).await);
            assert!(
                !sees(&tenant, "", Rows::InNamespaces).await,
                "a whole-cluster run"
            );
            assert!(sees(&whole, "", Rows::InNamespaces).await);
            assert!(
                sees(&tenant, "", Rows::OfTheCluster).await,
                "the cluster's own state"
            );
            assert!(!sees(&elsewhere, "acme-shop", Rows::InNamespaces).await);
            assert!(!sees(&elsewhere, "", Rows::OfTheCluster).await);
            assert!(!sees(&View::nothing(), "", Rows::OfTheCluster).await);
            let fleet = View::whole_fleet(["gva"]);
            assert!(
                sees(&fleet, "acme-shop", Rows::InNamespaces).await,
                "the whole fleet reads every row, also of clusters since removed"
            );
            // The other engine's special characters are themselves.
            assert!(sees(&odd, "a_b%c\\dx", Rows::InNamespaces).await);
            assert!(!sees(&odd, "aXb%c\\dx", Rows::InNamespaces).await);
            assert!(!sees(&odd, "a_bXc\\dx", Rows::InNamespaces).await);
        }
    }

    /// The two migration sets are one schema: the same versions, tables, columns and
    /// indexes in SQLite and in PostgreSQL.
    #[tokio::test]
    async fn both_engines_have_the_same_schema() {
        let versions =
            |engine: Engine| -> Vec<i64> { engine.migrator().iter().map(|m| m.version).collect() };
        assert_eq!(versions(Engine::Sqlite), versions(Engine::Postgres));
        let Some(url) = testdb::postgres_url().await else {
            return;
        };
        let sqlite = testdb::sqlite().await;
        let postgres = Db::open(&url).await.unwrap();
        let columns = |pool: Pool, sql: &'static str| async move {
            let mut rows: Vec<(String, String)> =
                sqlx::query_as(sql).fetch_all(&pool).await.unwrap();
            rows.sort();
            rows
        };
        let sqlite_columns = columns(
            sqlite.reader.clone(),
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p \
             WHERE m.type = 'table' AND m.name NOT LIKE '\\_%' ESCAPE '\\' AND m.name NOT LIKE 'sqlite%'",
        )
        .await;
        let postgres_columns = columns(
            postgres.reader.clone(),
            "SELECT table_name::text, column_name::text FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name NOT LIKE '\\_%'",
        )
        .await;
        assert!(sqlite_columns.len() > 50, "{sqlite_columns:?}");
        assert_eq!(sqlite_columns, postgres_columns);
        let sqlite_indexes = columns(
            sqlite.reader.clone(),
            "SELECT tbl_name, name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL",
        )
        .await;
        let postgres_indexes = columns(
            postgres.reader.clone(),
            "SELECT tablename::text, indexname::text FROM pg_indexes WHERE schemaname = 'public' \
             AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = indexname)",
        )
        .await;
        assert_eq!(sqlite_indexes, postgres_indexes);
        postgres.close().await;
    }

    #[tokio::test]
    async fn opens_in_wal_mode_and_migrates() {
        let db = testdb::sqlite().await;
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
        Db::open(&db.url).await.unwrap().close().await;
    }

    /// Every pattern and name up to three characters over an alphabet with the special
    /// characters of both matchers: SQLite agrees with the scope's own matcher.
    #[tokio::test]
    async fn sql_globs_match_exactly_what_scopes_match() {
        fn words(alphabet: &[char], max: usize) -> Vec<String> {
            let mut out = vec![String::new()];
            let mut last = vec![String::new()];
            for _ in 0..max {
                last = last
                    .iter()
                    .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                    .collect();
                out.extend(last.iter().cloned());
            }
            out
        }
        let patterns = words(&['a', '-', '*', '?', '[', ']', '%', '_', '\\'], 3);
        let names = words(&['a', 'b', '[', ']', '%', '_', '\\'], 3);
        for db in testdb::engines().await {
            let (translated, sql): (Vec<String>, &str) = match db.engine {
                Engine::Sqlite => (
                    patterns.iter().map(|p| sql_glob(p)).collect(),
                    "SELECT p.key, n.key, CASE WHEN n.value GLOB p.value THEN 1 ELSE 0 END \
                     FROM json_each($1) AS p, json_each($2) AS n",
                ),
                Engine::Postgres => (
                    patterns.iter().map(|p| sql_like(p)).collect(),
                    "SELECT p.i - 1, n.i - 1, CASE WHEN n.v LIKE p.v THEN 1 ELSE 0 END \
                     FROM json_array_elements_text($1::json) WITH ORDINALITY AS p(v, i), \
                          json_array_elements_text($2::json) WITH ORDINALITY AS n(v, i)",
                ),
            };
            let matched: Vec<(i64, i64, i32)> = sqlx::query_as(sql)
                .bind(serde_json::to_string(&translated).unwrap())
                .bind(serde_json::to_string(&names).unwrap())
                .fetch_all(&db.reader)
                .await
                .unwrap();
            assert_eq!(matched.len(), patterns.len() * names.len());
            for (p, n, sql) in matched {
                let (p, n) = (&patterns[p as usize], &names[n as usize]);
                let ours = lookout_app::model::scope::glob_match(p, n);
                assert_eq!(sql == 1, ours, "{:?}: {n:?} against {p:?}", db.engine);
            }
        }
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
