//! `meta.k8s.io/v1` Table responses, which `kubectl get` asks for to print its columns.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::resources::ResourceType;

/// Kubernetes' short human duration: `45s`, `3m12s`, `5h`, `12d`.
pub fn short_age(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 8 * 3600 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// The value at a printer column's JSONPath, as the API server's table convertor finds it
/// (k8s.io/apiextensions-apiserver `pkg/registry/customresource/tableconvertor`): the
/// subset CRDs use — `.a.b`, `[N]`, `[*]` and `[?(@.key == "value")]`; several matches
/// joined by commas; None when nothing matches.
pub fn json_path(obj: &Value, path: &str) -> Option<Value> {
    let mut current: Vec<&Value> = vec![obj];
    let mut rest = path.trim();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let field = &after[..end];
            current = current.into_iter().filter_map(|v| v.get(field)).collect();
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inner = &after[..end];
            rest = &after[end + 1..];
            let items = current.into_iter().filter_map(Value::as_array).flatten();
            current = if inner == "*" {
                items.collect()
            } else if let Ok(i) = inner.parse::<usize>() {
                items
                    .enumerate()
                    .filter(|(n, _)| *n == i)
                    .map(|(_, v)| v)
                    .collect()
            } else {
                let filter = inner.strip_prefix("?(@.")?.strip_suffix(')')?;
                let (key, want) = filter.split_once("==")?;
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                items
                    .filter(|v| v.get(key.trim()).and_then(Value::as_str) == Some(want))
                    .collect()
            };
        } else {
            return None;
        }
    }
    match current.as_slice() {
        [] => None,
        [one] => Some((*one).clone()),
        many => Some(Value::String(
            many.iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(","),
        )),
    }
}

/// A Table of `objects`: Name and Age, or Name and a custom kind's printer columns (a
/// `date` column printed as an age, as kubectl does); `with_columns` is false for the
/// second and later events of a watch, as a real server sends them.
pub fn table(
    rt: &ResourceType,
    objects: &[Value],
    with_columns: bool,
    now: &DateTime<Utc>,
    include_object: Option<&str>,
) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let age = o
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| short_age((*now - t.with_timezone(&Utc)).num_seconds()))
                .unwrap_or_else(|| "<unknown>".into());
            let object = match include_object {
                Some("Object") => o.clone(),
                Some("None") => Value::Null,
                _ => json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}),
            };
            let mut cells = vec![o["metadata"]["name"].clone()];
            if rt.columns.is_empty() {
                cells.push(json!(age));
            } else {
                for c in &rt.columns {
                    let value = json_path(o, &c.json_path);
                    cells.push(match (c.kind.as_str(), value) {
                        ("date", Some(Value::String(t))) => DateTime::parse_from_rfc3339(&t)
                            .map(|t| json!(short_age((*now - t.with_timezone(&Utc)).num_seconds())))
                            .unwrap_or(Value::String(t)),
                        (_, Some(v)) => v,
                        (_, None) => Value::Null,
                    });
                }
            }
            json!({"cells": cells, "object": object})
        })
        .collect();
    let mut t =
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "rows": rows});
    if with_columns {
        let mut columns = vec![
            json!({"name": "Name", "type": "string", "format": "name", "description": format!("Name of the {}", rt.singular), "priority": 0}),
        ];
        if rt.columns.is_empty() {
            columns.push(json!({"name": "Age", "type": "string", "format": "", "description": "Time since creation", "priority": 0}));
        }
        columns.extend(rt.columns.iter().map(|c| {
            // kubectl prints a date as an age: the cell holds the age already.
            let kind = if c.kind == "date" { "string" } else { c.kind.as_str() };
            json!({"name": c.name, "type": kind, "format": "", "description": c.description, "priority": c.priority})
        }));
        t["columnDefinitions"] = Value::Array(columns);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::short_age;

    #[test]
    fn printer_column_paths_find_what_crds_ask_for() {
        let o = serde_json::json!({"status": {"status": "TemplateError", "conditions": [
            {"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False", "message": "Not Ready"}]},
            "spec": {"background": false}});
        let at = |p: &str| super::json_path(&o, p);
        assert_eq!(
            at(".status.status"),
            Some(serde_json::json!("TemplateError"))
        );
        assert_eq!(at(".spec.background"), Some(serde_json::json!(false)));
        assert_eq!(
            at(".status.conditions[?(@.type == \"Ready\")].status"),
            Some(serde_json::json!("False"))
        );
        assert_eq!(
            at(".status.conditions[?(@.type == \"Ready\")].message"),
            Some(serde_json::json!("Not Ready"))
        );
        assert_eq!(
            at(".status.conditions[*].type"),
            Some(serde_json::json!("Synced,Ready"))
        );
        assert_eq!(
            at(".status.conditions[0].status"),
            Some(serde_json::json!("True"))
        );
        assert_eq!(at(".spec.admission"), None);
    }

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(short_age(45), "45s");
        assert_eq!(short_age(192), "3m12s");
        assert_eq!(short_age(5 * 3600), "5h0m");
        assert_eq!(short_age(30 * 3600), "30h");
        assert_eq!(short_age(12 * 86400), "12d");
    }
}
