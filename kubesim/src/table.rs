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

/// A Table of `objects` with Name and Age columns; `with_columns` is false for the second and
/// later events of a watch, as a real server sends them.
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
            json!({"cells": [o["metadata"]["name"], age], "object": object})
        })
        .collect();
    let mut t =
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "rows": rows});
    if with_columns {
        t["columnDefinitions"] = json!([
            {"name": "Name", "type": "string", "format": "name", "description": format!("Name of the {}", rt.singular), "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "Time since creation", "priority": 0},
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::short_age;

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(short_age(45), "45s");
        assert_eq!(short_age(192), "3m12s");
        assert_eq!(short_age(5 * 3600), "5h0m");
        assert_eq!(short_age(30 * 3600), "30h");
        assert_eq!(short_age(12 * 86400), "12d");
    }
}
