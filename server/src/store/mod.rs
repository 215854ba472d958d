//! SQLite through sqlx: WAL, `synchronous=NORMAL`, a busy timeout, embedded migrations applied
//! at start, one writer connection and a separate read pool.

pub mod audit;
pub mod history;
pub mod probes;
pub mod reads;
pub mod sessions;
pub mod sync_events;
mod timeline;
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
            sqlx::Error::Database(d) => {
                // SQLite's primary result codes: PERM, BUSY, LOCKED, READONLY, IOERR, FULL,
                // CANTOPEN.
                let code = d.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0) & 0xff;
                matches!(code, 3 | 5 | 6 | 8 | 10 | 13 | 14)
            }
            _ => false,
        }
    }
}

impl StoreError {
    /// The cause in SQLite's words, without the database URL (for the page banner).
    pub fn reason(&self) -> String {
        match self {
            StoreError::Open { source, .. } => {
                format!("cannot open the database: {}", writer::describe(source))
            }
            StoreError::Migrate(_) => self.to_string(),
        }
    }
}

/// A caller's view as one SQL parameter for [`scope_filter`]: NULL when it sees everything
/// (also the history of clusters since removed from the configuration), else the JSON array
/// of `[cluster, namespace pattern]` pairs, one per visible cluster and pattern — the
/// cluster by name, as the view resolved it against the configuration, the namespaces as
/// SQLite `GLOB` patterns (`*` for a cluster seen whole).
///
/// `GLOB` matches like [`lookout_app::model::view::Namespaces::contains`] (`*`, `?`,
/// case-sensitive) once `[` is escaped; one difference remains: `?` is one byte there and
/// one character here, which only matters for non-ASCII names (namespaces are ASCII by the
/// API server's validation).
pub fn view_param(view: &lookout_app::model::View) -> Option<String> {
    use lookout_app::model::view::Namespaces;
    if view.sees_everything() {
        return None;
    }
    let mut pairs: Vec<[String; 2]> = Vec::new();
    for (cluster, sight) in view.clusters() {
        match &sight.read {
            Namespaces::Every => pairs.push([cluster.to_string(), "*".into()]),
            Namespaces::Matching(patterns) => {
                pairs.extend(patterns.iter().map(|p| [cluster.to_string(), sql_glob(p)]))
            }
        }
    }
    Some(serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".into()))
}

/// SQL that holds for rows whose `cluster` and `namespace` columns are in the view bound as
/// parameter `?{n}` (see [`view_param`]).
pub fn scope_clause(n: usize) -> String {
    scope_filter(n, "cluster", "namespace", Rows::InNamespaces)
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
/// `cluster_column` and `namespace_column` are in the view bound as parameter `?{n}` (see
/// [`view_param`]).
pub fn scope_filter(n: usize, cluster_column: &str, namespace_column: &str, rows: Rows) -> String {
    let namespace = match rows {
        Rows::InNamespaces => format!("{namespace_column} GLOB json_extract(g.value, '$[1]')"),
        Rows::OfTheCluster => "1".to_string(),
    };
    format!(
        "(?{n} IS NULL OR EXISTS (SELECT 1 FROM json_each(?{n}) AS g \
           WHERE {cluster_column} = json_extract(g.value, '$[0]') AND {namespace}))"
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

/// A query with its parameters bound so far.
pub(crate) type SqlQuery<'q> =
    sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>;

/// Runs a `SELECT COUNT(*) …` query.
pub(crate) async fn count(pool: &SqlitePool, query: SqlQuery<'_>) -> Result<usize, sqlx::Error> {
    use sqlx::Row;
    let n: i64 = query.fetch_one(pool).await?.get(0);
    Ok(usize::try_from(n).unwrap_or_default())
}

/// A scope glob as a SQLite `GLOB` pattern: `[` starts a character class there, so it is
/// written as the class holding only `[`.
fn sql_glob(pattern: &str) -> String {
    pattern.replace('[', "[[]")
}

/// SQLite's page cache per connection, in KiB when negative (SQLite's default is 2,000 KiB).
/// The database file's pages stay in the operating system's cache, so a page SQLite no
/// longer holds costs a read call, not a disk access; a smaller cache keeps five connections'
/// caches from holding up to 10 MB that a burst of history writes or a few history pages
/// filled and nothing ever gives back.
const CACHE_SIZE: &str = "-512";

/// What the two pools connect with.
fn options(url: &str) -> Result<SqliteConnectOptions, StoreError> {
    Ok(SqliteConnectOptions::from_str(url)
        .map_err(|source| StoreError::Open {
            url: url.to_string(),
            source,
        })?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true)
        .pragma("cache_size", CACHE_SIZE))
}

fn writer_pool() -> SqlitePoolOptions {
    SqlitePoolOptions::new().max_connections(1)
}

fn reader_pool() -> SqlitePoolOptions {
    SqlitePoolOptions::new().max_connections(4)
}

/// The first pause before opening again a database that could not be opened; it doubles up
/// to a minute.
const REOPEN_MIN: Duration = Duration::from_secs(2);
const REOPEN_MAX: Duration = Duration::from_secs(60);

impl Db {
    /// Opens (creating if missing) the database at `url` and applies pending migrations.
    pub async fn open(url: &str) -> Result<Db, StoreError> {
        let open_err = |source| StoreError::Open {
            url: url.to_string(),
            source,
        };
        let options = options(url)?;
        let writer = writer_pool()
            .connect_with(options.clone())
            .await
            .map_err(open_err)?;
        sqlx::migrate!("../migrations").run(&writer).await?;
        let reader = reader_pool()
            .connect_with(options.read_only(true))
            .await
            .map_err(open_err)?;
        Ok(Db {
            writer,
            reader,
            health: Arc::default(),
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
        let options = options(url)?;
        // The log has the whole error with the URL; the banner, which every signed-in user
        // sees, only SQLite's reason.
        tracing::error!(%error, "the database cannot be opened now; serving live data and trying again");
        let health = Arc::new(writer::Health::default());
        health.failed_because("database", error.reason(), now());
        let db = Db {
            writer: writer_pool().connect_lazy_with(options.clone()),
            reader: reader_pool().connect_lazy_with(options.read_only(true)),
            health,
        };
        let (pool, health) = (db.writer.clone(), db.health.clone());
        tokio::spawn(async move {
            let mut pause = REOPEN_MIN;
            while !pool.is_closed() {
                tokio::time::sleep(pause).await;
                match sqlx::migrate!("../migrations").run(&pool).await {
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
            .filter(|(name, text)| name != "store/mod.rs" && text.contains("json_extract(g.value"))
            .map(|(name, _)| name.as_str())
            .collect();
        assert!(files.len() > 20, "the sources were found");
        assert!(
            copies.is_empty(),
            "scope filters written elsewhere: {copies:?}"
        );
        // And the rule of whole-cluster rows holds in SQL: a namespace grant does not see a
        // row without a namespace; a whole-cluster grant does.
        let filter = scope_filter(1, "cluster", "namespace", Rows::InNamespaces);
        assert!(filter.contains("namespace GLOB json_extract(g.value, '$[1]')"));
        assert!(!scope_filter(1, "c", "n", Rows::OfTheCluster).contains("n GLOB"));
    }

    #[tokio::test]
    async fn scope_filters_keep_whole_cluster_rows_for_whole_cluster_grants() {
        let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
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
        let sees = |view: &View, namespace: &str, rows: Rows| {
            let sql = format!(
                "SELECT {} FROM (SELECT 'zrh' AS cluster, ?2 AS namespace)",
                scope_filter(1, "cluster", "namespace", rows)
            );
            let (pool, param, namespace) = (pool.clone(), view_param(view), namespace.to_string());
            async move {
                sqlx::query_scalar::<_, bool>(&sql)
                    .bind(param)
                    .bind(namespace)
                    .fetch_one(&pool)
                    .await
                    .unwrap()
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
    }

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
        let patterns = words(&['a', '-', '*', '?', '[', ']'], 3);
        let names = words(&['a', 'b', '[', ']'], 3);
        let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
        let globs: Vec<String> = patterns.iter().map(|p| sql_glob(p)).collect();
        let matched: Vec<(i64, i64, bool)> = sqlx::query_as(
            "SELECT p.key, n.key, n.value GLOB p.value FROM json_each(?) AS p, json_each(?) AS n",
        )
        .bind(serde_json::to_string(&globs).unwrap())
        .bind(serde_json::to_string(&names).unwrap())
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(matched.len(), patterns.len() * names.len());
        for (p, n, sql) in matched {
            let (p, n) = (&patterns[p as usize], &names[n as usize]);
            let ours = lookout_app::model::scope::glob_match(p, n);
            assert_eq!(sql, ours, "{n:?} against {p:?}");
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
