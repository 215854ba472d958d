//! Multi-row inserts: a batch's rows sent a few hundred to a statement instead of one
//! statement (and one round trip) each.

use super::Engine;

/// The `VALUES` list of a multi-row insert of `rows` rows of `columns` values each, the only
/// parameters of its statement. PostgreSQL numbers them `$1` on (sqlx's query builder writes
/// `?`, which it refuses); SQLite gets plain `?`, because it looks a numbered parameter up by
/// a linear scan of the statement's names at every bind — quadratic in a statement of
/// thousands of values (measured: 6.5 % of a large fleet's start went to it).
pub(crate) fn values(engine: Engine, rows: usize, columns: usize) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(rows * columns * 6);
    for row in 0..rows {
        if row > 0 {
            out.push_str(", ");
        }
        out.push('(');
        for column in 0..columns {
            if column > 0 {
                out.push_str(", ");
            }
            match engine {
                Engine::Sqlite => out.push('?'),
                Engine::Postgres => {
                    let _ = write!(out, "${}", row * columns + column + 1);
                }
            }
        }
        out.push(')');
    }
    out
}

/// A query of the `Any` driver, as [`insert_rows`] binds one row into it.
pub(crate) type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// Inserts `rows` into `into` (`table (columns)`), `per_insert` rows a statement of `width`
/// values each, in order, each row's values bound by `bind`. The statements are not kept
/// prepared: one of hundreds of rows is large, and a batch's last chunk has a size of its
/// own each time (sqlx's cache of them held megabytes).
pub(crate) async fn insert_rows<R>(
    conn: &mut sqlx::AnyConnection,
    into: &str,
    width: usize,
    per_insert: usize,
    rows: &[R],
    bind: impl for<'q> Fn(AnyQuery<'q>, &'q R) -> AnyQuery<'q>,
) -> Result<(), sqlx::Error> {
    insert_rows_then(conn, into, width, per_insert, rows, "", bind).await
}

/// [`insert_rows`] with `then` after each statement's values (an `ON CONFLICT` clause).
pub(crate) async fn insert_rows_then<R>(
    conn: &mut sqlx::AnyConnection,
    into: &str,
    width: usize,
    per_insert: usize,
    rows: &[R],
    then: &str,
    bind: impl for<'q> Fn(AnyQuery<'q>, &'q R) -> AnyQuery<'q>,
) -> Result<(), sqlx::Error> {
    inserts(conn, into, (width, per_insert), rows, (then, false), bind)
        .await
        .map(drop)
}

/// [`insert_rows`] returning `columns` of each inserted row (`RETURNING`, which both engines
/// have). The rows come back in no promised order: match them by key.
pub(crate) async fn insert_rows_returning<R>(
    conn: &mut sqlx::AnyConnection,
    into: &str,
    (width, per_insert): (usize, usize),
    rows: &[R],
    columns: &str,
    bind: impl for<'q> Fn(AnyQuery<'q>, &'q R) -> AnyQuery<'q>,
) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
    let returning = format!("RETURNING {columns}");
    inserts(
        conn,
        into,
        (width, per_insert),
        rows,
        (&returning, true),
        bind,
    )
    .await
}

/// The multi-row inserts of [`insert_rows_then`] and [`insert_rows_returning`]: `then` after
/// each statement's values, and the rows it returns when `fetch`.
async fn inserts<R>(
    conn: &mut sqlx::AnyConnection,
    into: &str,
    (width, per_insert): (usize, usize),
    rows: &[R],
    (then, fetch): (&str, bool),
    bind: impl for<'q> Fn(AnyQuery<'q>, &'q R) -> AnyQuery<'q>,
) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
    let engine = Engine::of_connection(conn);
    let mut returned = Vec::new();
    for chunk in rows.chunks(per_insert) {
        let sql = format!(
            "INSERT INTO {into} VALUES {} {then}",
            values(engine, chunk.len(), width)
        );
        let mut insert = sqlx::query(&sql).persistent(false);
        for row in chunk {
            insert = bind(insert, row);
        }
        if fetch {
            returned.extend(insert.fetch_all(&mut *conn).await?);
        } else {
            insert.execute(&mut *conn).await?;
        }
    }
    Ok(returned)
}
