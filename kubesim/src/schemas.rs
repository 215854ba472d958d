//! The schemas of the built-in kinds, from k8s-openapi's generated types (its `schemars`
//! feature): served in the OpenAPI v3 documents (`kubectl explain` reads them) and used to
//! refuse what the real API server refuses — a field the schema does not declare, an object
//! where a list belongs, a word where a number belongs. Server-side apply always checks
//! (`failed to create typed patch object (…): .spec.replica: field not declared in schema`,
//! structured-merge-diff's `validate.go`); create and update check with
//! `fieldValidation=Strict`, as kubectl sends (`strict decoding error: unknown field "…"`).
//! Kinds from CRDs are checked against the `openAPIV3Schema` of their version, and a
//! non-strict create or update of one is pruned to what it declares (no `required` or `enum`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::store::Cluster;

fn of<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("a schema serialises")
}

/// The JSON schema (draft 2020-12, definitions under `$defs`) of a built-in kind.
pub fn builtin(rt: &ResourceType) -> Option<&'static Value> {
    static SCHEMAS: OnceLock<HashMap<(&'static str, &'static str), Value>> = OnceLock::new();
    let all = SCHEMAS.get_or_init(|| {
        use k8s_openapi::api::{apps, coordination, core, networking, policy, rbac};
        HashMap::from([
            (("", "Namespace"), of::<core::v1::Namespace>()),
            (("", "Service"), of::<core::v1::Service>()),
            (("", "ConfigMap"), of::<core::v1::ConfigMap>()),
            (("", "Secret"), of::<core::v1::Secret>()),
            (("", "ServiceAccount"), of::<core::v1::ServiceAccount>()),
            (
                ("", "PersistentVolumeClaim"),
                of::<core::v1::PersistentVolumeClaim>(),
            ),
            (("", "Event"), of::<core::v1::Event>()),
            (("apps", "Deployment"), of::<apps::v1::Deployment>()),
            (
                ("networking.k8s.io", "Ingress"),
                of::<networking::v1::Ingress>(),
            ),
            (
                ("networking.k8s.io", "IngressClass"),
                of::<networking::v1::IngressClass>(),
            ),
            (
                ("networking.k8s.io", "NetworkPolicy"),
                of::<networking::v1::NetworkPolicy>(),
            ),
            (
                ("policy", "PodDisruptionBudget"),
                of::<policy::v1::PodDisruptionBudget>(),
            ),
            (
                ("coordination.k8s.io", "Lease"),
                of::<coordination::v1::Lease>(),
            ),
            (
                ("rbac.authorization.k8s.io", "Role"),
                of::<rbac::v1::Role>(),
            ),
            (
                ("rbac.authorization.k8s.io", "ClusterRole"),
                of::<rbac::v1::ClusterRole>(),
            ),
            (
                ("rbac.authorization.k8s.io", "RoleBinding"),
                of::<rbac::v1::RoleBinding>(),
            ),
            (
                ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
                of::<rbac::v1::ClusterRoleBinding>(),
            ),
        ])
    });
    all.iter()
        .find(|((g, k), _)| *g == rt.group && *k == rt.kind)
        .map(|(_, s)| s)
}

/// The schema a kind's objects are checked against: a built-in kind's, or the
/// `openAPIV3Schema` its CustomResourceDefinition declares for `version` (the API server
/// builds the typed-patch type of a custom resource from it: `structuraltoschema` in
/// apiextensions-apiserver).
pub fn of_kind(cluster: &Cluster, rt: &ResourceType, version: &str) -> Option<Cow<'static, Value>> {
    if !rt.custom {
        return builtin(rt).map(Cow::Borrowed);
    }
    let crds = cluster.resolve("apiextensions.k8s.io", "customresourcedefinitions")?;
    let crd = cluster
        .get(&crds, None, &format!("{}.{}", rt.plural, rt.group))
        .ok()?;
    custom(&crd, version).map(Cow::Owned)
}

/// The `openAPIV3Schema` of one version of a CustomResourceDefinition.
pub fn custom(crd: &Value, version: &str) -> Option<Value> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?
        .pointer("/schema/openAPIV3Schema")
        .cloned()
}

/// Drops from a custom resource what its CRD's schema does not declare, as the API server
/// prunes a create or update that did not ask for strict validation (apiextensions-apiserver
/// `pkg/apiserver/schema/pruning`); `apiVersion`, `kind` and `metadata` are the API server's
/// own and kept.
fn prune(obj: &mut Value, schema: &Value) {
    let Value::Object(m) = obj else {
        return;
    };
    let own: Vec<(String, Value)> = ["apiVersion", "kind", "metadata"]
        .into_iter()
        .filter_map(|k| m.remove(k).map(|v| (k.to_string(), v)))
        .collect();
    prune_walk(obj, schema);
    if let Value::Object(m) = obj {
        m.extend(own);
    }
}

fn prune_walk(v: &mut Value, s: &Value) {
    if s.get("x-kubernetes-int-or-string").is_some() {
        return;
    }
    match v {
        Value::Object(m) => {
            let preserve =
                s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            let props = s.get("properties").and_then(Value::as_object);
            let extra = s.get("additionalProperties").filter(|a| a.is_object());
            m.retain(|k, _| preserve || extra.is_some() || props.is_none_or(|p| p.contains_key(k)));
            for (k, child) in m.iter_mut() {
                if let Some(cs) = props.and_then(|p| p.get(k)).or(extra) {
                    prune_walk(child, cs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.get("items") {
                for item in items {
                    prune_walk(item, is);
                }
            }
        }
        _ => {}
    }
}

/// What is wrong with `obj` against `schema`: each problem as (path, detail), the path as the
/// API server writes it (`.spec.template.spec.containers[0].foo`).
pub fn problems(obj: &Value, schema: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk(obj, schema, schema, String::new(), &mut out);
    out
}

fn resolve<'a>(mut s: &'a Value, root: &'a Value) -> &'a Value {
    for _ in 0..16 {
        match s
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
        {
            Some(name) => match root.pointer(&format!(
                "/$defs/{}",
                name.replace('~', "~0").replace('/', "~1")
            )) {
                Some(d) => s = d,
                None => return s,
            },
            None => return s,
        }
    }
    s
}

fn walk(v: &Value, schema: &Value, root: &Value, path: String, out: &mut Vec<(String, String)>) {
    let s = resolve(schema, root);
    if v.is_null() || s.get("x-kubernetes-int-or-string").is_some() {
        return;
    }
    let ty = s.get("type").and_then(Value::as_str);
    match (ty, v) {
        (Some("object"), Value::Object(m)) => {
            let props = s.get("properties").and_then(Value::as_object);
            let extra = s.get("additionalProperties").filter(|a| a.is_object());
            // A structural schema may keep what it does not declare.
            let preserve =
                s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            for (k, child) in m {
                let p = format!("{path}.{k}");
                match (props.and_then(|ps| ps.get(k)), extra) {
                    (Some(cs), _) | (None, Some(cs)) => walk(child, cs, root, p, out),
                    (None, None) if props.is_some() && !preserve => {
                        out.push((p, "field not declared in schema".into()))
                    }
                    (None, None) => {}
                }
            }
        }
        (Some("array"), Value::Array(items)) => {
            if let Some(is) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    walk(item, is, root, format!("{path}[{i}]"), out);
                }
            }
        }
        (Some("object"), other) => out.push((path, format!("expected map, got {}", name(other)))),
        (Some("array"), other) => out.push((path, format!("expected list, got {}", name(other)))),
        (Some("integer"), other) if !other.is_i64() && !other.is_u64() => out.push((
            path,
            format!("expected numeric (int or float), got {}", name(other)),
        )),
        (Some("boolean"), other) if !other.is_boolean() => {
            out.push((path, format!("expected boolean, got {}", name(other))))
        }
        (Some("string"), other @ (Value::Object(_) | Value::Array(_))) => {
            out.push((path, format!("expected string, got {}", name(other))))
        }
        _ => {}
    }
}

fn name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// The schemas of a built-in kind for an OpenAPI v3 document: the kind under its title
/// (`io.k8s.api.apps.v1.Deployment`) with its group-version-kind, and every definition it
/// uses, with `$ref`s pointing at `#/components/schemas/…`.
pub fn components(rt: &ResourceType, version: &str) -> Option<Vec<(String, Value)>> {
    let schema = builtin(rt)?;
    let rewrite = |v: &Value| -> Value {
        let text = serde_json::to_string(v).expect("JSON");
        serde_json::from_str(&text.replace("\"#/$defs/", "\"#/components/schemas/")).expect("JSON")
    };
    let mut out = Vec::new();
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for (k, d) in defs {
            out.push((k.clone(), rewrite(d)));
        }
    }
    let mut root = rewrite(schema);
    if let Some(m) = root.as_object_mut() {
        m.remove("$defs");
        m.remove("$schema");
        m.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": rt.group, "version": version, "kind": rt.kind}]),
        );
    }
    let title = root["title"].as_str().unwrap_or(&rt.kind).to_string();
    out.push((title, root));
    Some(out)
}

/// Server-side apply types the patch against the kind's schema first; what does not fit is
/// refused whatever `fieldValidation` says (structured-merge-diff).
pub fn typed_patch(
    cluster: &Cluster,
    rt: &ResourceType,
    version: &str,
    ns: Option<&str>,
    name: &str,
    applied: &Value,
) -> Result<(), ApiError> {
    let found = of_kind(cluster, rt, version).map_or_else(Vec::new, |s| problems(applied, &s));
    if found.is_empty() {
        return Ok(());
    }
    let details: Vec<String> = found.iter().map(|(p, d)| format!("{p}: {d}")).collect();
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({}/{name}; {}, Kind={}): {}",
            ns.unwrap_or(""),
            if rt.group.is_empty() {
                format!("/{}", version)
            } else {
                rt.api_version(version)
            },
            rt.kind,
            match details.as_slice() {
                [one] => one.clone(),
                many => format!("errors:\n  {}", many.join("\n  ")),
            }
        ),
    ))
}

/// A create or update against the kind's schema: under `fieldValidation=Strict` an undeclared
/// or mistyped field is a 400; otherwise a custom resource is pruned to what its CRD declares.
pub fn admit(
    cluster: &Cluster,
    rt: &ResourceType,
    version: &str,
    field_validation: Option<&str>,
    body: &mut Value,
) -> Result<(), ApiError> {
    let Some(schema) = of_kind(cluster, rt, version) else {
        return Ok(());
    };
    if field_validation != Some("Strict") {
        if rt.custom {
            prune(body, &schema);
        }
        return Ok(());
    }
    let found = problems(body, &schema);
    if found.is_empty() {
        return Ok(());
    }
    let fields: Vec<String> = found
        .iter()
        .map(|(p, d)| {
            let p = p.trim_start_matches('.');
            if d == "field not declared in schema" {
                format!("unknown field {p:?}")
            } else {
                format!("{p}: {d}")
            }
        })
        .collect();
    Err(ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
        fields.join(", "),
        kind = rt.kind,
        version = version,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> ResourceType {
        crate::resources::builtin_types()
            .into_iter()
            .find(|t| t.kind == "Deployment")
            .unwrap()
    }

    #[test]
    fn unknown_fields_and_wrong_shapes_are_named_by_path() {
        let schema = builtin(&deployment()).unwrap();
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "labels": {"a": "b"}},
            "spec": {"replica": 1, "replicas": "two", "selector": {"matchLabels": {"app": "x"}},
                     "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostIPs": []}],
                                  "resources": {"requests": {"cpu": "100m", "memory": 512}}}],
                                  "securityContext": {"runAsNonRoot": "yes"}}}}});
        let found = problems(&obj, schema);
        assert_eq!(
            found,
            vec![
                (
                    ".spec.replica".to_string(),
                    "field not declared in schema".to_string()
                ),
                (
                    ".spec.replicas".to_string(),
                    "expected numeric (int or float), got string".to_string()
                ),
                (
                    ".spec.template.spec.containers[0].ports[0].hostIPs".to_string(),
                    "field not declared in schema".to_string()
                ),
                (
                    ".spec.template.spec.securityContext.runAsNonRoot".to_string(),
                    "expected boolean, got string".to_string()
                ),
            ]
        );
    }

    #[test]
    fn a_valid_object_has_no_problems() {
        let schema = builtin(&deployment()).unwrap();
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i",
                       "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}},
                       "resources": {"limits": {"memory": "512Mi"}}}]}}}});
        assert_eq!(problems(&obj, schema), Vec::<(String, String)>::new());
    }
}
