//! `lookout migrate-db`: copies a whole history from one database to another — SQLite to
//! PostgreSQL when an install outgrows one process, or back.
//!
//! Both databases are migrated to the same version first (so their tables and columns are
//! the same), then every table is copied in its dependency order, a batch of rows per
//! transaction, each row with its own id. A row whose id the target already holds is skipped,
//! so a copy that was interrupted (a lost connection, Ctrl-C, a full disk) is finished by
//! running the same command again, and nothing is copied twice. A target that holds a
//! *different* history (Lookout already ran on it) is refused before anything is written.
//!
//! The database fills in a Challenge's first transition when the Challenge is inserted (the
//! triggers of migration 0005); the copy removes the one it made for each Challenge it
//! inserts, in the same transaction, since the source's own transitions follow.

use std::ops::ControlFlow;

use sqlx::{Row, ValueRef};

use super::{Db, Engine, Pool};

/// Every table of the history, parents before the rows that refer to them. A test checks
/// that it names every table the migrations make.
pub const TABLES: [&str; 11] = [
    "cluster_sync_events",
    "challenges",
    "challenge_transitions",
    "orders",
    "order_transitions",
    "certificate_requests",
    "certificate_readiness",
    "audit_log",
    "ended_sessions",
    "probe_results",
    "action_records",
];

/// Rows per batch (each batch is one transaction on the target).
pub const BATCH: usize = 500;

/// How far the copy has come, for a progress line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub table: &'static str,
    /// Rows of this table read from the source so far.
    pub read: u64,
    /// Rows of this table in the source.
    pub total: u64,
    /// Rows of this table written now (the rest were there already).
    pub written: u64,
}

/// Why a copy stopped.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("{0}")]
    Open(#[from] super::StoreError),
    #[error("copying {table}: {source}")]
    Sql {
        table: &'static str,
        source: sqlx::Error,
    },
    #[error("the target already holds a different history ({table}: the row with id {id} differs from the source's); copy into an empty database")]
    Different { table: &'static str, id: String },
    #[error("stopped by request after {table}: run the same command again to finish")]
    Stopped { table: &'static str },
    #[error("there is no SQLite database at {0} to copy from")]
    NoSource(String),
}

/// What the copy did: rows written per table (rows already there are not counted).
pub type Copied = Vec<(&'static str, u64)>;

/// Copies the history of `from` into `to` (both URLs), telling `progress` after each batch;
/// `progress` may stop the copy (it can be run again).
pub async fn copy(
    from: &str,
    to: &str,
    mut progress: impl FnMut(&Progress) -> ControlFlow<()>,
) -> Result<Copied, CopyError> {
    // Opening a SQLite URL creates the file: a mistyped source would copy an empty history.
    if Engine::of(from) == Some(Engine::Sqlite) {
        use std::str::FromStr;
        let options = sqlx::sqlite::SqliteConnectOptions::from_str(from).map_err(|source| {
            super::StoreError::Open {
                url: from.to_string(),
                source,
            }
        })?;
        let file = options.get_filename();
        if !from.contains(":memory:") && !file.exists() {
            return Err(CopyError::NoSource(file.display().to_string()));
        }
    }
    let source = Db::open(from).await?;
    let target = Db::open(to).await?;
    let result = copy_between(&source, &target, &mut progress).await;
    source.close().await;
    target.close().await;
    result
}

async fn copy_between(
    source: &Db,
    target: &Db,
    progress: &mut impl FnMut(&Progress) -> ControlFlow<()>,
) -> Result<Copied, CopyError> {
    for table in TABLES {
        same_rows_where_both_have_them(source, target, table).await?;
    }
    let mut copied = Vec::new();
    for table in TABLES {
        let n = copy_table(source, target, table, progress).await?;
        copied.push((table, n));
    }
    if target.engine == Engine::Postgres {
        // Ids were given explicitly: the sequences start after the highest.
        for table in TABLES
            .iter()
            .filter(|t| !matches!(**t, "ended_sessions" | "action_records"))
        {
            sqlx::query(&format!(
                "SELECT setval(pg_get_serial_sequence('{table}', 'id'), \
                 COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
            ))
            .execute(&target.writer)
            .await
            .map_err(|source| CopyError::Sql { table, source })?;
        }
    }
    Ok(copied)
}

/// A column: its name, and whether it holds integers (a NULL is bound with its column's
/// type: PostgreSQL refuses a text NULL in an integer column).
#[derive(Debug, Clone)]
struct Column {
    name: String,
    integer: bool,
}

/// The columns of `table` in `db`'s order.
async fn columns(db: &Db, table: &'static str) -> Result<Vec<Column>, CopyError> {
    let sql = match db.engine {
        Engine::Sqlite => "SELECT name, type FROM pragma_table_info($1) ORDER BY cid",
        Engine::Postgres => {
            "SELECT column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position"
        }
    };
    let rows: Vec<(String, String)> = sqlx::query_as(sql)
        .bind(table)
        .fetch_all(&db.reader)
        .await
        .map_err(|source| CopyError::Sql { table, source })?;
    Ok(rows
        .into_iter()
        .map(|(name, kind)| {
            let kind = kind.to_ascii_lowercase();
            Column {
                name,
                integer: kind.contains("int"),
            }
        })
        .collect())
}

fn names(columns: &[Column]) -> String {
    columns
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One column's value, as both engines store it: an integer, a text, or nothing.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null { integer: bool },
    Integer(i64),
    Text(String),
}

fn values(row: &sqlx::any::AnyRow, columns: &[Column]) -> Result<Vec<Value>, sqlx::Error> {
    (0..columns.len())
        .map(|i| {
            if row.try_get_raw(i)?.is_null() {
                return Ok(Value::Null {
                    integer: columns[i].integer,
                });
            }
            match row.try_get::<i64, _>(i) {
                Ok(n) => Ok(Value::Integer(n)),
                Err(_) => row.try_get::<String, _>(i).map(Value::Text),
            }
        })
        .collect()
}

/// Rows of `table` after `after` (by its key, `id`), at most [`BATCH`].
async fn read_batch(
    db: &Db,
    table: &'static str,
    columns: &[Column],
    after: &Option<Value>,
) -> Result<Vec<Vec<Value>>, CopyError> {
    let list = names(columns);
    let sql = match after {
        None => format!("SELECT {list} FROM {table} ORDER BY id LIMIT {BATCH}"),
        Some(_) => format!("SELECT {list} FROM {table} WHERE id > $1 ORDER BY id LIMIT {BATCH}"),
    };
    let mut query = sqlx::query(&sql);
    if let Some(after) = after {
        query = bind(query, after);
    }
    let rows = query
        .fetch_all(&db.reader)
        .await
        .map_err(|source| CopyError::Sql { table, source })?;
    rows.iter()
        .map(|r| values(r, columns))
        .collect::<Result<_, _>>()
        .map_err(|source| CopyError::Sql { table, source })
}

fn bind<'q>(query: super::SqlQuery<'q>, value: &'q Value) -> super::SqlQuery<'q> {
    match value {
        Value::Null { integer: true } => query.bind(None::<i64>),
        Value::Null { integer: false } => query.bind(None::<String>),
        Value::Integer(n) => query.bind(*n),
        Value::Text(t) => query.bind(t.as_str()),
    }
}

/// Refuses a target whose rows differ from the source's under the same id: its first and
/// last rows are compared (a previous, interrupted copy matches; another history does not).
async fn same_rows_where_both_have_them(
    source: &Db,
    target: &Db,
    table: &'static str,
) -> Result<(), CopyError> {
    let columns = columns(source, table).await?;
    let list = names(&columns);
    for order in ["ASC", "DESC"] {
        let sql = format!("SELECT {list} FROM {table} ORDER BY id {order} LIMIT 1");
        let Some(theirs) = sqlx::query(&sql)
            .fetch_optional(&target.reader)
            .await
            .map_err(|source| CopyError::Sql { table, source })?
        else {
            return Ok(());
        };
        let theirs =
            values(&theirs, &columns).map_err(|source| CopyError::Sql { table, source })?;
        let id = theirs[0].clone();
        let sql = format!("SELECT {list} FROM {table} WHERE id = $1");
        let ours = bind(sqlx::query(&sql), &id)
            .fetch_optional(&source.reader)
            .await
            .map_err(|source| CopyError::Sql { table, source })?;
        let ours = match ours {
            Some(r) => {
                Some(values(&r, &columns).map_err(|source| CopyError::Sql { table, source })?)
            }
            None => None,
        };
        if ours.as_ref() != Some(&theirs) {
            return Err(CopyError::Different {
                table,
                id: match id {
                    Value::Integer(n) => n.to_string(),
                    Value::Text(t) => t,
                    Value::Null { .. } => "NULL".into(),
                },
            });
        }
    }
    Ok(())
}

async fn copy_table(
    source: &Db,
    target: &Db,
    table: &'static str,
    progress: &mut impl FnMut(&Progress) -> ControlFlow<()>,
) -> Result<u64, CopyError> {
    let sql_err = |source| CopyError::Sql { table, source };
    let columns = columns(source, table).await?;
    let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(&source.reader)
        .await
        .map_err(sql_err)?;
    let mut state = Progress {
        table,
        read: 0,
        total: u64::try_from(total).unwrap_or_default(),
        written: 0,
    };
    let mut after: Option<Value> = None;
    loop {
        let rows = read_batch(source, table, &columns, &after).await?;
        let Some(last) = rows.last() else {
            break;
        };
        after = Some(last[0].clone());
        state.written += write_batch(&target.writer, target.engine, table, &columns, &rows)
            .await
            .map_err(sql_err)?;
        state.read += rows.len() as u64;
        if progress(&state).is_break() {
            return Err(CopyError::Stopped { table });
        }
    }
    if state.total == 0 && progress(&state).is_break() {
        return Err(CopyError::Stopped { table });
    }
    Ok(state.written)
}

/// Writes one batch in one transaction; rows whose id is there already are skipped.
/// Returns how many were written.
async fn write_batch(
    pool: &Pool,
    engine: Engine,
    table: &'static str,
    columns: &[Column],
    rows: &[Vec<Value>],
) -> Result<u64, sqlx::Error> {
    let sql = format!(
        "INSERT INTO {table} ({}) VALUES {} ON CONFLICT (id) DO NOTHING RETURNING id",
        names(columns),
        super::values(engine, rows.len(), columns.len())
    );
    let mut query = sqlx::query(&sql).persistent(false);
    for row in rows {
        for value in row {
            query = bind(query, value);
        }
    }
    let mut tx = pool.begin().await?;
    let inserted = query.fetch_all(&mut *tx).await?;
    if table == "challenges" && !inserted.is_empty() {
        // The transitions the database made for the Challenges inserted now: the source's
        // own follow.
        let ids: Vec<i64> = inserted.iter().map(|r| r.get(0)).collect();
        sqlx::query(&format!(
            "DELETE FROM challenge_transitions WHERE challenge_id IN {}",
            engine.json_integers(1)
        ))
        .bind(serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(inserted.len() as u64)
}

#[cfg(test)]
mod tests;
