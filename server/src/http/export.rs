//! "As CSV": the writer of every list's export (`/api/v1/<name>.csv`, defined with the list
//! in [`super::lists`]) — every row under the same filters as the page and the JSON — for
//! spreadsheets and tickets. The columns are the JSON API's fields: nested
//! objects flattened to `a.b`, lists of values joined by "; ", lists of objects given as
//! their length (each has its own list: the symptoms of a problem are `/findings`). A cell a
//! spreadsheet would take for a formula (`=`, `+`, `-`, `@` first) gets a leading
//! apostrophe: cluster objects are written by other people.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use lookout_app::model::read::views::paging::MAX_PER_PAGE;
use serde::Serialize;
use serde_json::Value;

use super::error::ApiError;
use super::AppError;

/// The most rows one export of the history holds (challenges, audit); past it the
/// response says so in `X-Lookout-Truncated`.
const HISTORY_ROWS: usize = 100_000;

/// An export that could not be written (it cannot happen with the API's own types).
fn internal(e: impl std::fmt::Display) -> AppError {
    AppError::Rejected {
        status: axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        message: format!("The export could not be written: {e}"),
    }
}

/// `v` as cells under `prefix`.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        // Absent rather than a column of its own (`issuer: null` beside `issuer.name`).
        Value::Null => {}
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&key(k), v, out);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
            out.push((prefix.to_string(), items.len().to_string()))
        }
        Value::Array(items) => out.push((
            prefix.to_string(),
            items.iter().map(scalar).collect::<Vec<_>>().join("; "),
        )),
        other => out.push((prefix.to_string(), scalar(other))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A cell as a spreadsheet will not evaluate it.
fn defused(cell: String) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell
    }
}

/// The rows as CSV: a header of every column any row has (in the order first seen), then
/// one line per row.
pub(crate) fn csv_of<T: Serialize>(items: &[T]) -> Result<String, AppError> {
    let mut rows: Vec<Vec<(String, String)>> = Vec::with_capacity(items.len());
    let mut columns: Vec<String> = Vec::new();
    let mut known = std::collections::HashMap::new();
    for item in items {
        let value = serde_json::to_value(item).map_err(internal)?;
        let mut cells = Vec::new();
        flatten("", &value, &mut cells);
        for (k, _) in &cells {
            if !known.contains_key(k) {
                known.insert(k.clone(), columns.len());
                columns.push(k.clone());
            }
        }
        rows.push(cells);
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&columns).map_err(internal)?;
    for cells in rows {
        let mut line = vec![String::new(); columns.len()];
        for (k, v) in cells {
            line[known[&k]] = defused(v);
        }
        w.write_record(&line).map_err(internal)?;
    }
    String::from_utf8(w.into_inner().map_err(internal)?).map_err(internal)
}

/// A CSV download named `lookout-<name>.csv`.
pub(super) fn download<T: Serialize>(
    name: &str,
    items: &[T],
    truncated: bool,
) -> Result<Response, ApiError> {
    let body = csv_of(items)?;
    let mut response = (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"lookout-{name}.csv\""),
            ),
        ],
        body,
    )
        .into_response();
    if truncated {
        response.headers_mut().insert(
            "x-lookout-truncated",
            axum::http::HeaderValue::from(HISTORY_ROWS),
        );
    }
    Ok(response)
}

/// Reads a history list page by page (`MAX_PER_PAGE` rows each) until it ends or holds
/// [`HISTORY_ROWS`]; says whether it stopped there.
pub(super) async fn every_page<T, Fut>(
    read: impl Fn(usize) -> Fut,
) -> Result<(Vec<T>, bool), AppError>
where
    Fut: std::future::Future<Output = Result<Vec<T>, AppError>>,
{
    let mut rows = Vec::new();
    for page in 1.. {
        let got = read(page).await?;
        let last = got.len() < MAX_PER_PAGE;
        rows.extend(got);
        if last || rows.len() >= HISTORY_ROWS {
            break;
        }
    }
    let truncated = rows.len() >= HISTORY_ROWS;
    Ok((rows, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_fields_flatten_lists_join_and_formulas_are_defused() {
        let rows = [
            json!({"name": "shop", "hosts": ["a.example", "b.example"], "issuer": {"kind": "ClusterIssuer", "name": "le"}, "symptoms": [{"x": 1}, {"x": 2}]}),
            json!({"name": "=HYPERLINK(\"http://evil\")", "extra": "only here", "hosts": [], "issuer": null}),
        ];
        let text = csv_of(&rows).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("name,hosts,issuer.kind,issuer.name,symptoms,extra")
        );
        assert_eq!(
            lines.next(),
            Some("shop,a.example; b.example,ClusterIssuer,le,2,")
        );
        // `issuer: null` leaves the issuer's cells empty; the formula is text.
        assert_eq!(
            lines.next(),
            Some("\"'=HYPERLINK(\"\"http://evil\"\")\",,,,,only here")
        );
    }
}
