//! Enough of Kubernetes' protobuf encoding to read what kubectl's typed clients send: the
//! `k8s\0` envelope (`runtime.Unknown`) and, for the kinds listed in [`schema`], the fields
//! kubesim keeps, by their numbers in `staging/src/k8s.io/api/*/v1/generated.proto`. Other
//! kinds are refused with 415, naming the kind.

use base64::Engine;
use serde_json::{json, Map, Value};

const MAGIC: &[u8] = b"k8s\0";

/// Reads one varint; returns it and the bytes consumed.
fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, b) in buf.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// One field on the wire.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// The fields of a message, as (field number, value); fixed-width fields are skipped, and
/// None means the message is malformed.
fn fields(mut buf: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (tag, n) = varint(buf)?;
        buf = &buf[n..];
        match tag & 7 {
            0 => {
                let (v, n) = varint(buf)?;
                buf = &buf[n..];
                out.push((tag >> 3, Wire::Varint(v)));
            }
            1 => buf = buf.get(8..)?,
            5 => buf = buf.get(4..)?,
            2 => {
                let (len, n) = varint(buf)?;
                let len = usize::try_from(len).ok()?;
                let body = buf.get(n..n.checked_add(len)?)?;
                out.push((tag >> 3, Wire::Bytes(body)));
                buf = &buf[n + len..];
            }
            _ => return None,
        }
    }
    Some(out)
}

/// How one field of a message reads as JSON.
#[derive(Clone, Copy)]
enum Field {
    Str(&'static str),
    Strings(&'static str),
    Int(&'static str),
    Bool(&'static str),
    /// `map<string, string>` (labels, ConfigMap data).
    StrMap(&'static str),
    /// `map<string, bytes>` (Secret data), base64 in JSON.
    BytesMap(&'static str),
    Msg(&'static str, &'static [(u64, Field)]),
    Msgs(&'static str, &'static [(u64, Field)]),
}

const META: &[(u64, Field)] = &[
    (1, Field::Str("name")),
    (2, Field::Str("generateName")),
    (3, Field::Str("namespace")),
    (11, Field::StrMap("labels")),
    (12, Field::StrMap("annotations")),
];
const SELECTOR: &[(u64, Field)] = &[
    (1, Field::StrMap("matchLabels")),
    (
        2,
        Field::Msgs(
            "matchExpressions",
            &[
                (1, Field::Str("key")),
                (2, Field::Str("operator")),
                (3, Field::Strings("values")),
            ],
        ),
    ),
];
const RULE: &[(u64, Field)] = &[
    (1, Field::Strings("verbs")),
    (2, Field::Strings("apiGroups")),
    (3, Field::Strings("resources")),
    (4, Field::Strings("resourceNames")),
    (5, Field::Strings("nonResourceURLs")),
];
const ROLE: &[(u64, Field)] = &[
    (1, Field::Msg("metadata", META)),
    (2, Field::Msgs("rules", RULE)),
    (
        3,
        Field::Msg(
            "aggregationRule",
            &[(1, Field::Msgs("clusterRoleSelectors", SELECTOR))],
        ),
    ),
];
const BINDING: &[(u64, Field)] = &[
    (1, Field::Msg("metadata", META)),
    (
        2,
        Field::Msgs(
            "subjects",
            &[
                (1, Field::Str("kind")),
                (2, Field::Str("apiGroup")),
                (3, Field::Str("name")),
                (4, Field::Str("namespace")),
            ],
        ),
    ),
    (
        3,
        Field::Msg(
            "roleRef",
            &[
                (1, Field::Str("apiGroup")),
                (2, Field::Str("kind")),
                (3, Field::Str("name")),
            ],
        ),
    ),
];
const RESOURCE_ATTRIBUTES: &[(u64, Field)] = &[
    (1, Field::Str("namespace")),
    (2, Field::Str("verb")),
    (3, Field::Str("group")),
    (4, Field::Str("version")),
    (5, Field::Str("resource")),
    (6, Field::Str("subresource")),
    (7, Field::Str("name")),
];
const NON_RESOURCE_ATTRIBUTES: &[(u64, Field)] =
    &[(1, Field::Str("path")), (2, Field::Str("verb"))];
const ACCESS_REVIEW: &[(u64, Field)] = &[
    (1, Field::Msg("metadata", META)),
    (
        2,
        Field::Msg(
            "spec",
            &[
                (1, Field::Msg("resourceAttributes", RESOURCE_ATTRIBUTES)),
                (
                    2,
                    Field::Msg("nonResourceAttributes", NON_RESOURCE_ATTRIBUTES),
                ),
                (3, Field::Str("user")),
                (4, Field::Strings("groups")),
                (6, Field::Str("uid")),
            ],
        ),
    ),
];
const RULES_REVIEW: &[(u64, Field)] = &[
    (1, Field::Msg("metadata", META)),
    (2, Field::Msg("spec", &[(1, Field::Str("namespace"))])),
];
const TOKEN_REQUEST: &[(u64, Field)] = &[
    (1, Field::Msg("metadata", META)),
    (
        2,
        Field::Msg(
            "spec",
            &[
                (1, Field::Strings("audiences")),
                (4, Field::Int("expirationSeconds")),
            ],
        ),
    ),
];
const CONFIG_MAP: &[(u64, Field)] = &[
    (1, Field::Msg("metadata", META)),
    (2, Field::StrMap("data")),
    (3, Field::BytesMap("binaryData")),
    (4, Field::Bool("immutable")),
];
const SECRET: &[(u64, Field)] = &[
    (1, Field::Msg("metadata", META)),
    (2, Field::BytesMap("data")),
    (3, Field::Str("type")),
    (4, Field::StrMap("stringData")),
    (5, Field::Bool("immutable")),
];
/// Kinds whose only content kubesim keeps is their metadata (a Namespace's spec and status,
/// a ServiceAccount's secret references).
const METADATA_ONLY: &[(u64, Field)] = &[(1, Field::Msg("metadata", META))];

/// The schema of the kinds kubectl sends as protobuf and kubesim reads.
fn schema(api_version: &str, kind: &str) -> Option<&'static [(u64, Field)]> {
    Some(match (api_version, kind) {
        ("v1", "Namespace" | "ServiceAccount") => METADATA_ONLY,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Secret") => SECRET,
        ("rbac.authorization.k8s.io/v1", "ClusterRole" | "Role") => ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding" | "RoleBinding") => BINDING,
        (
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview",
        ) => ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => RULES_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => TOKEN_REQUEST,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => METADATA_ONLY,
        _ => return None,
    })
}

fn text(w: &Wire<'_>) -> Option<String> {
    match w {
        Wire::Bytes(b) => Some(std::str::from_utf8(b).ok()?.to_string()),
        Wire::Varint(_) => None,
    }
}

fn map_entry<'a>(w: &Wire<'a>) -> Option<(String, &'a [u8])> {
    let Wire::Bytes(b) = w else { return None };
    let (mut key, mut value) = (String::new(), &[][..]);
    for (n, f) in fields(b)? {
        match (n, f) {
            (1, f) => key = text(&f)?,
            (2, Wire::Bytes(v)) => value = v,
            _ => {}
        }
    }
    Some((key, value))
}

/// Decodes one message by its schema; fields outside the schema are dropped.
fn message(buf: &[u8], schema: &[(u64, Field)]) -> Option<Value> {
    let mut obj = Map::new();
    for (n, w) in fields(buf)? {
        let Some((_, field)) = schema.iter().find(|(num, _)| *num == n) else {
            continue;
        };
        match *field {
            Field::Str(name) => {
                obj.insert(name.into(), json!(text(&w)?));
            }
            Field::Strings(name) => {
                let list = obj.entry(name).or_insert_with(|| json!([]));
                list.as_array_mut()?.push(json!(text(&w)?));
            }
            Field::Int(name) => {
                let Wire::Varint(v) = w else { return None };
                obj.insert(name.into(), json!(v as i64));
            }
            Field::Bool(name) => {
                let Wire::Varint(v) = w else { return None };
                obj.insert(name.into(), json!(v != 0));
            }
            Field::StrMap(name) => {
                let (k, v) = map_entry(&w)?;
                let m = obj.entry(name).or_insert_with(|| json!({}));
                m.as_object_mut()?
                    .insert(k, json!(std::str::from_utf8(v).ok()?));
            }
            Field::BytesMap(name) => {
                let (k, v) = map_entry(&w)?;
                let m = obj.entry(name).or_insert_with(|| json!({}));
                m.as_object_mut()?.insert(
                    k,
                    json!(base64::engine::general_purpose::STANDARD.encode(v)),
                );
            }
            Field::Msg(name, inner) => {
                let Wire::Bytes(b) = w else { return None };
                obj.insert(name.into(), message(b, inner)?);
            }
            Field::Msgs(name, inner) => {
                let Wire::Bytes(b) = w else { return None };
                let item = message(b, inner)?;
                let list = obj.entry(name).or_insert_with(|| json!([]));
                list.as_array_mut()?.push(item);
            }
        }
    }
    Some(Value::Object(obj))
}

/// Decodes a protobuf body into the JSON object it stands for, or explains why not.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf envelope")?;
    let malformed = || "the protobuf body is malformed".to_string();
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, w) in fields(rest).ok_or_else(malformed)? {
        match (n, w) {
            (1, Wire::Bytes(type_meta)) => {
                for (tn, tw) in fields(type_meta).ok_or_else(malformed)? {
                    let value = text(&tw).ok_or_else(malformed)?;
                    if tn == 1 {
                        api_version = value;
                    } else if tn == 2 {
                        kind = value;
                    }
                }
            }
            (2, Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let schema = schema(&api_version, &kind).ok_or_else(|| {
        format!("kubesim reads protobuf only for the kinds kubectl sends that way (namespaces, service accounts, config maps, secrets, RBAC, reviews, token requests), not {api_version} {kind}; send JSON")
    })?;
    let mut obj = message(raw, schema).ok_or_else(malformed)?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    if obj.get("metadata").is_none() {
        obj["metadata"] = json!({});
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::decode;
    use serde_json::json;

    fn ld(field: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![(field << 3) | 2, body.len() as u8];
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn reads_a_namespace_that_kubectl_create_sends() {
        let type_meta = [ld(1, b"v1"), ld(2, b"Namespace")].concat();
        let meta = [
            ld(1, b"acme"),
            ld(11, &[ld(1, b"team"), ld(2, b"a")].concat()),
        ]
        .concat();
        let raw = [ld(1, &meta), ld(2, b""), ld(3, b"")].concat();
        let body = [b"k8s\0".to_vec(), ld(1, &type_meta), ld(2, &raw)].concat();
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme", "labels": {"team": "a"}}})
        );
    }

    #[test]
    fn reads_a_cluster_role_binding() {
        let type_meta = [
            ld(1, b"rbac.authorization.k8s.io/v1"),
            ld(2, b"ClusterRoleBinding"),
        ]
        .concat();
        let subject = [
            ld(1, b"ServiceAccount"),
            ld(3, b"lookout"),
            ld(4, b"lookout"),
        ]
        .concat();
        let role_ref = [
            ld(1, b"rbac.authorization.k8s.io"),
            ld(2, b"ClusterRole"),
            ld(3, b"lookout-read"),
        ]
        .concat();
        let raw = [
            ld(1, &ld(1, b"lookout-read")),
            ld(2, &subject),
            ld(3, &role_ref),
        ]
        .concat();
        let body = [b"k8s\0".to_vec(), ld(1, &type_meta), ld(2, &raw)].concat();
        assert_eq!(
            decode(&body).unwrap(),
            json!({"metadata": {"name": "lookout-read"},
                   "subjects": [{"kind": "ServiceAccount", "name": "lookout", "namespace": "lookout"}],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "lookout-read"},
                   "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding"})
        );
    }

    #[test]
    fn refuses_kinds_it_has_no_schema_for() {
        let type_meta = [ld(1, b"apps/v1"), ld(2, b"Deployment")].concat();
        let raw = [ld(1, &ld(1, b"x")), ld(2, &ld(1, b"data"))].concat();
        let body = [b"k8s\0".to_vec(), ld(1, &type_meta), ld(2, &raw)].concat();
        assert!(decode(&body).unwrap_err().contains("apps/v1 Deployment"));
    }
}
