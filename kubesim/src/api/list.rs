//! Lists: a page of a kind's objects, written straight from the stored objects, or as a
//! Table when asked.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{present, selection, wants_table, Target};
use crate::status::ApiError;
use crate::store::Cluster;
use crate::table;

pub(super) fn list(
    cluster: &Cluster,
    t: &Target,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Response {
    match list_page(cluster, t, q) {
        Err(e) => e.into_response(),
        Ok((page, meta)) if wants_table(headers) => {
            let items: Vec<Value> = (page.items.iter())
                .map(|o| present(Value::clone(o), t))
                .collect();
            let mut tbl = table::table(
                &t.rt,
                &items,
                true,
                &cluster.clock.now(),
                q.get("includeObject").map(String::as_str),
            );
            tbl["metadata"] = meta;
            Json(tbl).into_response()
        }
        Ok((page, meta)) => {
            // Written straight from the stored objects: a copy of each object's tree per
            // list was most of what serving a large fleet's lists cost.
            let api_version = t.rt.api_version(&t.version);
            let list = ListBody {
                kind: format!("{}List", t.rt.kind),
                api_version: &api_version,
                metadata: &meta,
                items: Presented {
                    items: &page.items,
                    api_version: &api_version,
                    kind: &t.rt.kind,
                },
            };
            match serde_json::to_vec(&list) {
                Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
                Err(e) => ApiError::new(500, "InternalError", e.to_string()).into_response(),
            }
        }
    }
}

/// A list's page and its metadata (resource version, continue token, remaining count).
fn list_page(
    cluster: &Cluster,
    t: &Target,
    q: &HashMap<String, String>,
) -> Result<(crate::store::ListPage, Value), ApiError> {
    let sel = selection(t, q)?;
    let limit = match q.get("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(l) => match l.parse::<usize>() {
            Ok(0) => None,
            Ok(n) => Some(n),
            Err(_) => {
                return Err(ApiError::bad_request(format!(
                    "limit: Invalid value: {l:?}: must be a non-negative integer"
                )))
            }
        },
    };
    let page = cluster.list(
        &t.rt,
        &sel,
        limit,
        q.get("continue")
            .filter(|c| !c.is_empty())
            .map(String::as_str),
    )?;
    let mut meta = json!({"resourceVersion": page.resource_version.to_string()});
    if let Some(c) = &page.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = page.remaining {
        meta["remainingItemCount"] = json!(r);
    }
    Ok((page, meta))
}

/// A list as the API server writes it.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ListBody<'a> {
    kind: String,
    api_version: &'a str,
    metadata: &'a Value,
    items: Presented<'a>,
}

/// Stored objects as [`present`] shows them (the version asked for and the kind), written
/// without copying them.
struct Presented<'a> {
    items: &'a [Arc<Value>],
    api_version: &'a str,
    kind: &'a str,
}

impl serde::Serialize for Presented<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct One<'a>(&'a Value, &'a Presented<'a>);
        impl serde::Serialize for One<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let Some(fields) = self.0.as_object() else {
                    return self.0.serialize(s);
                };
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("apiVersion", self.1.api_version)?;
                map.serialize_entry("kind", self.1.kind)?;
                for (k, v) in fields {
                    if k != "apiVersion" && k != "kind" {
                        map.serialize_entry(k, v)?;
                    }
                }
                map.end()
            }
        }
        let mut seq = s.serialize_seq(Some(self.items.len()))?;
        for item in self.items {
            seq.serialize_element(&One(item, self))?;
        }
        seq.end()
    }
}
