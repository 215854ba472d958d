//! Reading raw Kubernetes objects leniently: a field of the wrong type is treated as absent,
//! never as a reason to drop the object.

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use super::interner::Interner;
use super::text::{Text, Uid};

/// A status condition (`Ready`, `Issuing`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: Text,
    pub status: ConditionStatus,
    pub reason: Option<Text>,
    pub message: Option<Text>,
    pub last_transition: Option<DateTime<Utc>>,
}

impl Condition {
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

/// A condition's status, the API's `ConditionStatus`: `True`, `False` or `Unknown`. Any other
/// text (which the CRDs' schemas refuse) reads as `Unknown`. One byte where a string took 16:
/// every cached Certificate, CertificateRequest and issuer holds conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl From<&str> for ConditionStatus {
    fn from(text: &str) -> Self {
        match text {
            "True" => ConditionStatus::True,
            "False" => ConditionStatus::False,
            _ => ConditionStatus::Unknown,
        }
    }
}

/// Reads as its text (`&*c.status == "True"`).
impl std::ops::Deref for ConditionStatus {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ConditionStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The controller owner of an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Owner {
    pub kind: Text,
    pub name: Text,
    pub uid: Uid,
}

/// Parses an RFC 3339 time.
/// The value at a JSON pointer (`/status/conditions`), as `Value::pointer` finds it but
/// without copying each segment to unescape it (a projection looks up a dozen paths per
/// object; `pointer` made two strings per segment of each). A segment with an escape
/// (`~0`, `~1`) is left to `Value::pointer`.
pub fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.contains('~') {
        return v.pointer(pointer);
    }
    if pointer.is_empty() {
        return Some(v);
    }
    let mut here = v;
    for segment in pointer.strip_prefix('/')?.split('/') {
        here = match here {
            Value::Object(map) => map.get(segment)?,
            Value::Array(list) => list.get(index(segment)?)?,
            _ => return None,
        };
    }
    Some(here)
}

/// An array index of a JSON pointer: digits, without a sign or a leading zero.
fn index(segment: &str) -> Option<usize> {
    if segment.starts_with('+') || (segment.starts_with('0') && segment.len() > 1) {
        return None;
    }
    segment.parse().ok()
}

pub(crate) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The time at `pointer` in `v`, if it is a valid RFC 3339 string.
pub(crate) fn time_at(v: &Value, pointer: &str) -> Option<DateTime<Utc>> {
    at(v, pointer).and_then(Value::as_str).and_then(parse_time)
}

/// The string at `pointer`, if it is one.
pub(crate) fn str_at(v: &Value, pointer: &str) -> Option<String> {
    at(v, pointer).and_then(Value::as_str).map(str::to_string)
}

/// The strings of the array at `pointer` (non-strings skipped).
pub(crate) fn strings_at(v: &Value, pointer: &str) -> Vec<String> {
    at(v, pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The conditions at `pointer` (usually `/status/conditions`).
pub(crate) fn conditions_at(v: &Value, pointer: &str, strings: &mut Interner) -> Vec<Condition> {
    let Some(list) = at(v, pointer).and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|c| {
            Some(Condition {
                kind: strings.get(c.get("type")?.as_str()?),
                status: c
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("Unknown")
                    .into(),
                reason: c
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(|r| strings.get(r)),
                message: c
                    .get("message")
                    .and_then(Value::as_str)
                    .map(|m| strings.get(m)),
                last_transition: c
                    .get("lastTransitionTime")
                    .and_then(Value::as_str)
                    .and_then(parse_time),
            })
        })
        .collect()
}

/// The condition of `kind` in a list.
pub fn condition(list: &[Condition], kind: &str) -> Option<Condition> {
    list.iter().find(|c| &*c.kind == kind).cloned()
}

/// An annotation's value.
pub fn annotation(meta: &ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).cloned()
}

/// The creation time.
pub fn created(meta: &ObjectMeta) -> Option<DateTime<Utc>> {
    meta.creation_timestamp
        .as_ref()
        .and_then(|t| DateTime::from_timestamp(t.0.as_second(), 0))
}

/// When the object's spec or metadata were last written: the latest `time` of its
/// managedFields entries that are not about a subresource (a controller writing `status`
/// changes nothing the user asked for), else its creation. The API server sets an entry's
/// time at every write of that manager.
pub fn last_changed(meta: &ObjectMeta) -> Option<DateTime<Utc>> {
    meta.managed_fields
        .iter()
        .flatten()
        .filter(|e| e.subresource.as_deref().is_none_or(str::is_empty))
        .filter_map(|e| e.time.as_ref())
        .filter_map(|t| DateTime::from_timestamp(t.0.as_second(), 0))
        .max()
        .or_else(|| created(meta))
}

/// The owner reference marked `controller: true`.
pub(crate) fn controller_owner(meta: &ObjectMeta, strings: &mut Interner) -> Option<Owner> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| Owner {
            kind: strings.get(&r.kind),
            // The owner's own view holds the same name: one copy for both.
            name: strings.get(&r.name),
            uid: Uid::parse(&r.uid),
        })
}

/// The field managers that own `metadata.annotations[key]`.
pub(crate) fn annotation_managers(
    meta: &ObjectMeta,
    key: &str,
    strings: &mut Interner,
) -> Vec<Text> {
    let field = format!("f:{key}");
    let mut managers: Vec<Text> = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|e| {
            e.fields_v1
                .as_ref()
                .and_then(|f| f.0.get("f:metadata"))
                .and_then(|m| m.get("f:annotations"))
                .is_some_and(|a| a.get(&field).is_some())
        })
        .filter_map(|e| e.manager.as_deref().map(|m| strings.get(m)))
        .collect();
    managers.dedup();
    managers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `at` finds what `Value::pointer` finds, for every kind of path.
    #[test]
    fn at_reads_a_pointer_as_serde_json_does() {
        let v = json!({"status": {"conditions": [{"type": "Ready"}, {"type": "Issuing"}],
            "a/b": 1, "m~n": 2, "": {"": 3}, "01": 4, "n": null}});
        for path in [
            "",
            "/",
            "/status",
            "/status/conditions",
            "/status/conditions/1/type",
            "/status/conditions/01",
            "/status/conditions/+1",
            "/status/conditions/9",
            "/status/conditions/x",
            "/status/a~1b",
            "/status/m~0n",
            "/status//",
            "/status/01",
            "/status/n",
            "/status/n/x",
            "status",
            "/missing/deeper",
        ] {
            assert_eq!(at(&v, path), v.pointer(path), "{path:?}");
        }
    }

    #[test]
    fn the_last_change_is_the_latest_write_of_spec_or_metadata() {
        let meta: ObjectMeta = serde_json::from_value(json!({
            "creationTimestamp": "2026-12-01T00:00:00Z",
            "managedFields": [
                {"manager": "kubectl", "operation": "Update", "time": "2026-12-02T10:00:00Z"},
                {"manager": "cilium-operator", "operation": "Update", "subresource": "status", "time": "2026-12-03T10:00:00Z"},
                {"manager": "helm", "operation": "Apply", "time": "2026-12-02T12:00:00Z"},
            ]
        }))
        .unwrap();
        assert_eq!(
            last_changed(&meta).map(|t| t.to_rfc3339()),
            Some("2026-12-02T12:00:00+00:00".into())
        );
        let bare: ObjectMeta =
            serde_json::from_value(json!({"creationTimestamp": "2026-12-01T00:00:00Z"})).unwrap();
        assert_eq!(last_changed(&bare), created(&bare));
    }

    #[test]
    fn conditions_tolerate_missing_and_wrong_fields() {
        let v = json!({"status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "Failed", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"status": "True"},
            {"type": "Issuing", "lastTransitionTime": "not a time"}
        ]}});
        let c = conditions_at(&v, "/status/conditions", &mut Interner::default());
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].reason.as_deref(), Some("Failed"));
        assert_eq!(&*c[1].status, "Unknown");
        assert!(c[1].last_transition.is_none());
        // A status outside the API's three reads as Unknown, and each serializes as its text.
        let odd = json!({"status": {"conditions": [{"type": "Ready", "status": "true"},
            {"type": "Issuing", "status": "True"}, {"type": "X", "status": 1}]}});
        let c = conditions_at(&odd, "/status/conditions", &mut Interner::default());
        let statuses: Vec<_> = c.iter().map(|c| c.status).collect();
        assert_eq!(
            statuses,
            [
                ConditionStatus::Unknown,
                ConditionStatus::True,
                ConditionStatus::Unknown
            ]
        );
        assert!(c[1].is_true() && !c[0].is_true());
        assert_eq!(serde_json::to_value(&c[1]).unwrap()["status"], "True");
        assert!(conditions_at(
            &json!({"status": {"conditions": "x"}}),
            "/status/conditions",
            &mut Interner::default()
        )
        .is_empty());
    }

    #[test]
    fn managers_of_an_annotation_come_from_managed_fields() {
        let meta: ObjectMeta = serde_json::from_value(json!({"managedFields": [
            {"manager": "managed-resource:edit-in-place", "operation": "Apply", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:annotations": {"f:acme.cert-manager.io/http01-edit-in-place": {}}}}},
            {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}
        ]})).unwrap();
        let managers = annotation_managers(
            &meta,
            "acme.cert-manager.io/http01-edit-in-place",
            &mut Interner::default(),
        );
        assert_eq!(managers, vec![Text::from("managed-resource:edit-in-place")]);
    }
}
