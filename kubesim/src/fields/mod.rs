//! Field ownership (`metadata.managedFields`) and server-side apply.
//!
//! A simplified structured merge: maps merge by key; lists are atomic except the associative
//! ones a real API server keys (`conditions` by `type`, `ownerReferences` by `uid`, Gateway
//! API `listeners` by `name`), whose items are owned one by one. Ownership is tracked per
//! leaf path in the `FieldsV1` format.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

/// One step of a field path, as `FieldsV1` spells it (`f:name`, `k:{"type":"Ready"}`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    Field(String),
    /// An associative-list item, identified by its key fields (canonical JSON).
    Key(String),
    /// Anything else (`v:`, `i:`) read from a stored managedFields entry; kept opaque.
    Other(String),
}

/// A path from the object root to an owned field.
pub type Path = Vec<Step>;

/// The set of fields one manager owns.
pub type FieldSet = BTreeSet<Path>;

/// Top-level and metadata fields that no manager owns.
const IGNORED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Which part of an object a request may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything but `status` (for kinds with a status subresource).
    MainWithoutStatus,
    /// The whole object (kinds without a status subresource).
    Whole,
    /// Only `status` (the status subresource).
    StatusOnly,
}

impl Scope {
    fn admits(self, top: &str) -> bool {
        match self {
            Scope::MainWithoutStatus => top != "status",
            Scope::Whole => true,
            Scope::StatusOnly => top == "status",
        }
    }
    fn subresource(self) -> Option<&'static str> {
        (self == Scope::StatusOnly).then_some("status")
    }
}

/// The key fields of an associative list named `field`, if it is one.
fn list_keys(field: &str, items: &[Value]) -> Option<&'static [&'static str]> {
    let all_have = |k: &str| {
        items
            .iter()
            .all(|i| i.get(k).map(|v| v.is_string()).unwrap_or(false))
    };
    match field {
        "conditions" if all_have("type") => Some(&["type"]),
        "ownerReferences" if all_have("uid") => Some(&["uid"]),
        // Gateway API: a Gateway's and a ListenerSet's `spec.listeners` are keyed by name
        // (`x-kubernetes-list-map-keys: [name]` in their CRDs), so an apply of one listener
        // adds or changes that one and keeps the others.
        "listeners" if all_have("name") => Some(&["name"]),
        _ => None,
    }
}

fn item_key(item: &Value, keys: &[&str]) -> String {
    let mut m = Map::new();
    for k in keys {
        m.insert(k.to_string(), item.get(*k).cloned().unwrap_or(Value::Null));
    }
    Value::Object(m).to_string()
}

/// All leaf paths of `obj` that a manager can own, within `scope`.
pub fn field_set(obj: &Value, scope: Scope) -> FieldSet {
    let mut out = FieldSet::new();
    let Some(map) = obj.as_object() else {
        return out;
    };
    for (k, v) in map {
        if k == "apiVersion" || k == "kind" || !scope.admits(k) {
            continue;
        }
        let path = vec![Step::Field(k.clone())];
        if k == "metadata" {
            if let Some(meta) = v.as_object() {
                for (mk, mv) in meta {
                    if IGNORED_METADATA.contains(&mk.as_str()) {
                        continue;
                    }
                    let mut p = path.clone();
                    p.push(Step::Field(mk.clone()));
                    collect(mk, mv, p, &mut out);
                }
            }
            continue;
        }
        collect(k, v, path, &mut out);
    }
    out
}

fn collect(name: &str, v: &Value, path: Path, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                let mut p = path.clone();
                p.push(Step::Field(k.clone()));
                collect(k, child, p, out);
            }
        }
        Value::Array(items) if !items.is_empty() => match list_keys(name, items) {
            Some(keys) => {
                for item in items {
                    let mut p = path.clone();
                    p.push(Step::Key(item_key(item, keys)));
                    out.insert(p.clone());
                    if let Some(m) = item.as_object() {
                        for (k, child) in m {
                            let mut cp = p.clone();
                            cp.push(Step::Field(k.clone()));
                            collect(k, child, cp, out);
                        }
                    }
                }
            }
            None => {
                out.insert(path);
            }
        },
        _ => {
            out.insert(path);
        }
    }
}

/// The value at `path`, if present.
pub fn value_at<'a>(obj: &'a Value, path: &[Step]) -> Option<&'a Value> {
    let mut cur = obj;
    for step in path {
        cur = match step {
            Step::Field(f) => cur.get(f)?,
            Step::Key(k) => {
                let key: Map<String, Value> = serde_json::from_str(k).ok()?;
                cur.as_array()?
                    .iter()
                    .find(|item| key.iter().all(|(kk, kv)| item.get(kk) == Some(kv)))?
            }
            Step::Other(_) => return None,
        };
    }
    Some(cur)
}

/// Removes the field at `path` from `obj`; returns whether something was removed.
fn remove_at(obj: &mut Value, path: &[Step]) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        return false;
    };
    let mut cur = obj;
    for step in parent_path {
        cur = match step {
            Step::Field(f) => match cur.get_mut(f) {
                Some(v) => v,
                None => return false,
            },
            Step::Key(k) => {
                let Ok(key) = serde_json::from_str::<Map<String, Value>>(k) else {
                    return false;
                };
                let Some(items) = cur.as_array_mut() else {
                    return false;
                };
                match items
                    .iter_mut()
                    .find(|item| key.iter().all(|(kk, kv)| item.get(kk) == Some(kv)))
                {
                    Some(v) => v,
                    None => return false,
                }
            }
            Step::Other(_) => return false,
        };
    }
    match last {
        Step::Field(f) => cur.as_object_mut().and_then(|m| m.remove(f)).is_some(),
        Step::Key(k) => {
            let Ok(key) = serde_json::from_str::<Map<String, Value>>(k) else {
                return false;
            };
            let Some(items) = cur.as_array_mut() else {
                return false;
            };
            let before = items.len();
            items.retain(|item| !key.iter().all(|(kk, kv)| item.get(kk) == Some(kv)));
            before != items.len()
        }
        Step::Other(_) => false,
    }
}

/// Merges an apply configuration into the live object: maps by key, associative lists by
/// item key, everything else replaced.
pub fn merge(live: &mut Value, applied: &Value, field: &str) {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => {
            for (k, av) in a {
                match l.get_mut(k) {
                    Some(lv) => merge(lv, av, k),
                    None => {
                        l.insert(k.clone(), av.clone());
                    }
                }
            }
        }
        (Value::Array(l), Value::Array(a)) => match (list_keys(field, l), list_keys(field, a)) {
            (Some(keys), Some(_)) => {
                for item in a {
                    let key = item_key(item, keys);
                    match l.iter_mut().find(|li| item_key(li, keys) == key) {
                        Some(li) => merge(li, item, ""),
                        None => l.push(item.clone()),
                    }
                }
            }
            _ => *l = a.clone(),
        },
        (l, a) => *l = a.clone(),
    }
}

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedEntry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    pub time: String,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl ManagedEntry {
    fn same_owner(&self, manager: &str, operation: &str, sub: Option<&str>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.as_deref() == sub
    }
}

/// Reads `metadata.managedFields`; entries that cannot be read are dropped.
pub fn read_managed(obj: &Value) -> Vec<ManagedEntry> {
    let Some(entries) = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| {
            let mut fields = FieldSet::new();
            parse_fields_v1(e.get("fieldsV1")?, Vec::new(), &mut fields);
            Some(ManagedEntry {
                manager: e.get("manager")?.as_str()?.to_string(),
                operation: e
                    .get("operation")
                    .and_then(Value::as_str)
                    .unwrap_or("Update")
                    .to_string(),
                api_version: e
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                time: e
                    .get("time")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                subresource: e
                    .get("subresource")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                fields,
            })
        })
        .collect()
}

fn parse_fields_v1(node: &Value, path: Path, out: &mut FieldSet) {
    let Some(map) = node.as_object() else {
        return;
    };
    if map.is_empty() {
        if !path.is_empty() {
            out.insert(path);
        }
        return;
    }
    for (k, child) in map {
        if k == "." {
            out.insert(path.clone());
            continue;
        }
        let step = if let Some(f) = k.strip_prefix("f:") {
            Step::Field(f.to_string())
        } else if let Some(key) = k.strip_prefix("k:") {
            // Canonicalise through serde so key order matches `item_key`.
            match serde_json::from_str::<Value>(key) {
                Ok(v) => Step::Key(v.to_string()),
                Err(_) => Step::Other(k.clone()),
            }
        } else {
            Step::Other(k.clone())
        };
        let mut p = path.clone();
        p.push(step);
        parse_fields_v1(child, p, out);
    }
}

/// Renders a field set as `FieldsV1` JSON.
pub fn fields_v1(set: &FieldSet) -> Value {
    let mut root = Value::Object(Map::new());
    for path in set {
        let mut cur = &mut root;
        for step in path {
            let key = match step {
                Step::Field(f) => format!("f:{f}"),
                Step::Key(k) => format!("k:{k}"),
                Step::Other(o) => o.clone(),
            };
            cur = cur
                .as_object_mut()
                .expect("fieldsV1 nodes are objects")
                .entry(key)
                .or_insert_with(|| json!({}));
        }
        // A path that is also a prefix of others is marked with ".".
        if let Some(m) = cur.as_object_mut() {
            if matches!(path.last(), Some(Step::Key(_))) {
                m.insert(".".to_string(), json!({}));
            }
        }
    }
    root
}

/// Writes entries back into `metadata.managedFields`, dropping the empty ones.
pub fn write_managed(obj: &mut Value, entries: &[ManagedEntry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields_v1(&e.fields),
            });
            if let Some(s) = &e.subresource {
                v["subresource"] = json!(s);
            }
            v
        })
        .collect();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// A field another manager owns with a different value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub manager: String,
    /// `.metadata.annotations.foo`, as the real API server prints it.
    pub field: String,
}

/// Formats a path the way conflict messages print it.
pub fn dotted(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            Step::Key(k) => {
                s.push('[');
                s.push_str(k);
                s.push(']');
            }
            Step::Other(o) => {
                s.push('.');
                s.push_str(o);
            }
        }
    }
    s
}

/// Who applies, and how.
pub struct ApplyRequest<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub force: bool,
    pub scope: Scope,
    pub now: &'a str,
}

/// Server-side apply of `applied` onto `live` (None when the object does not exist yet).
/// Returns the new object with its managedFields, or the conflicts.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    req: &ApplyRequest<'_>,
) -> Result<Value, Vec<Conflict>> {
    let sub = req.scope.subresource();
    let applied_set = field_set(applied, req.scope);
    let mut entries = live.map(read_managed).unwrap_or_default();
    let empty = Value::Null;
    let live_obj = live.unwrap_or(&empty);

    let mut conflicts = Vec::new();
    for e in entries
        .iter_mut()
        .filter(|e| !e.same_owner(req.manager, "Apply", sub))
    {
        let clashing: Vec<Path> = e
            .fields
            .intersection(&applied_set)
            .filter(|p| !matches!(p.last(), Some(Step::Key(_))))
            .filter(|p| value_at(live_obj, p) != value_at(applied, p))
            .cloned()
            .collect();
        if req.force {
            for p in &clashing {
                e.fields.remove(p);
            }
        } else {
            conflicts.extend(clashing.iter().map(|p| Conflict {
                manager: e.manager.clone(),
                field: dotted(p),
            }));
        }
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }

    let mut result = live.cloned().unwrap_or_else(|| json!({}));
    let mut scoped = applied.clone();
    if let Some(m) = scoped.as_object_mut() {
        m.retain(|k, _| k == "apiVersion" || k == "kind" || k == "metadata" || req.scope.admits(k));
        if req.scope == Scope::StatusOnly {
            m.remove("metadata");
        }
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
            meta.remove("resourceVersion");
        }
    }
    merge(&mut result, &scoped, "");

    let previous = entries
        .iter()
        .find(|e| e.same_owner(req.manager, "Apply", sub))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    // Fields this manager applied before and no longer applies: removed unless co-owned.
    let mut dropped: Vec<&Path> = previous.difference(&applied_set).collect();
    dropped.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in dropped {
        let co_owned = entries
            .iter()
            .filter(|e| !e.same_owner(req.manager, "Apply", sub))
            .any(|e| e.fields.iter().any(|f| f.starts_with(p)));
        if !co_owned {
            remove_at(&mut result, p);
        }
    }

    entries.retain(|e| !e.same_owner(req.manager, "Apply", sub));
    entries.push(ManagedEntry {
        manager: req.manager.to_string(),
        operation: "Apply".into(),
        api_version: req.api_version.to_string(),
        time: req.now.to_string(),
        subresource: sub.map(str::to_string),
        fields: applied_set,
    });
    write_managed(&mut result, &entries);
    Ok(result)
}

/// Records a non-apply write (create, update, merge patch) by `manager`: the fields it changed
/// become its own, and are taken from every other manager.
pub fn track_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    api_version: &str,
    scope: Scope,
    now: &str,
) {
    let sub = scope.subresource();
    let empty = Value::Null;
    let old_obj = old.unwrap_or(&empty);
    let old_set = field_set(old_obj, scope);
    let new_set = field_set(new, scope);
    let changed: FieldSet = new_set
        .iter()
        .filter(|p| value_at(old_obj, p) != value_at(new, p))
        .cloned()
        .collect();
    let removed: FieldSet = old_set.difference(&new_set).cloned().collect();
    let mut entries = old.map(read_managed).unwrap_or_default();
    if changed.is_empty() && removed.is_empty() {
        write_managed(new, &entries);
        return;
    }
    for e in entries.iter_mut() {
        let mine = e.same_owner(manager, "Update", sub);
        e.fields.retain(|p| {
            !removed.iter().any(|r| p.starts_with(r)) && (mine || !changed.contains(p))
        });
    }
    match entries
        .iter_mut()
        .find(|e| e.same_owner(manager, "Update", sub))
    {
        Some(e) => {
            e.fields.extend(changed);
            e.time = now.to_string();
            e.api_version = api_version.to_string();
        }
        None => entries.push(ManagedEntry {
            manager: manager.to_string(),
            operation: "Update".into(),
            api_version: api_version.to_string(),
            time: now.to_string(),
            subresource: sub.map(str::to_string),
            fields: changed,
        }),
    }
    write_managed(new, &entries);
}

/// Groups conflicts by manager for the 409 message.
pub fn conflict_message(conflicts: &[Conflict], api_version: &str) -> String {
    let mut by_manager: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in conflicts {
        by_manager.entry(&c.manager).or_default().push(&c.field);
    }
    let mut lines = Vec::new();
    for (m, fields) in by_manager {
        for f in fields {
            lines.push(format!("conflict with \"{m}\" using {api_version}: {f}"));
        }
    }
    if lines.len() == 1 {
        format!("Apply failed with 1 conflict: {}", lines[0])
    } else {
        format!(
            "Apply failed with {} conflicts: {}",
            lines.len(),
            lines.join("\n")
        )
    }
}

#[cfg(test)]
mod tests;
