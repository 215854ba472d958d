//! Discovery and OpenAPI documents: what kubectl and kube-rs read before they talk to a kind.

use serde_json::{json, Value};

use crate::resources::ResourceType;

/// `GET /version`.
pub fn version() -> Value {
    json!({
        "major": "1", "minor": "32", "gitVersion": "v1.32.0-kubesim",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23", "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `GET /api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

fn group_versions(types: &[ResourceType], group: &str) -> Vec<String> {
    let mut versions: Vec<String> = Vec::new();
    for t in types.iter().filter(|t| t.group == group) {
        for v in &t.versions {
            if !versions.contains(v) {
                versions.push(v.clone());
            }
        }
    }
    versions
}

/// The `APIGroup` document of one group, if any kind of it is served.
pub fn api_group(types: &[ResourceType], group: &str) -> Option<Value> {
    let versions = group_versions(types, group);
    let preferred = versions.first()?.clone();
    Some(json!({
        "kind": "APIGroup", "apiVersion": "v1", "name": group,
        "versions": versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect::<Vec<_>>(),
        "preferredVersion": {"groupVersion": format!("{group}/{preferred}"), "version": preferred},
    }))
}

/// `GET /apis`.
pub fn api_group_list(types: &[ResourceType]) -> Value {
    let mut groups: Vec<&str> = Vec::new();
    for t in types.iter().filter(|t| !t.group.is_empty()) {
        if !groups.contains(&t.group.as_str()) {
            groups.push(&t.group);
        }
    }
    let docs: Vec<Value> = groups
        .iter()
        .filter_map(|g| api_group(types, g))
        .map(|mut g| {
            if let Some(m) = g.as_object_mut() {
                m.remove("kind");
                m.remove("apiVersion");
            }
            g
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": docs})
}

/// `GET /api/v1` or `/apis/{group}/{version}`; None when nothing is served there.
pub fn resource_list(types: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceType> = types
        .iter()
        .filter(|t| t.group == group && t.versions.iter().any(|v| v == version))
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for t in served {
        let verbs: &[&str] = if t.create_only {
            &["create"]
        } else {
            &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]
        };
        let mut entry = json!({
            "name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
            "kind": t.kind, "verbs": verbs,
        });
        if !t.short_names.is_empty() {
            entry["shortNames"] = json!(t.short_names);
        }
        resources.push(entry);
        if t.group.is_empty() && t.plural == "serviceaccounts" {
            resources.push(json!({
                "name": "serviceaccounts/token", "singularName": "", "namespaced": true,
                "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest",
                "verbs": ["create"],
            }));
        }
        if t.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced,
                "kind": t.kind, "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// The `api/v1` or `apis/{group}/{version}` key of an OpenAPI v3 path.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `GET /openapi/v3`: one document per group-version. The hash changes with the set of kinds.
pub fn openapi_v3_root(types: &[ResourceType], hash: u64) -> Value {
    let mut paths = serde_json::Map::new();
    for t in types {
        for v in &t.versions {
            let p = gv_path(&t.group, v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash:016X}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/{api/v1 | apis/group/version}`: enough for kubectl to see that the
/// server validates fields itself (the PATCH operations accept `fieldValidation`), and the
/// built-in kinds' schemas (`kubectl explain`).
pub fn openapi_v3_group_version(types: &[ResourceType], gv: &str) -> Option<Value> {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for t in types {
        for v in t.versions.iter().filter(|v| gv_path(&t.group, v) == gv) {
            let gvk = json!({"group": t.group, "version": v, "kind": t.kind});
            let prefix = if t.group.is_empty() {
                format!("/api/{v}")
            } else {
                format!("/apis/{}/{v}", t.group)
            };
            let item = if t.namespaced {
                format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
            } else {
                format!("{prefix}/{}/{{name}}", t.plural)
            };
            let query =
                |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string"}});
            let op = |id: &str| {
                json!({
                    "operationId": format!("{id}{}", t.kind),
                    "x-kubernetes-group-version-kind": gvk,
                    "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation"), query("force")],
                    "responses": {"200": {"description": "OK"}}
                })
            };
            paths.insert(
                item,
                json!({"get": op("read"), "put": op("replace"), "patch": op("patch"), "delete": op("delete")}),
            );
            // A built-in kind's real schema (k8s-openapi's); any other an open one.
            match crate::schemas::components(t, v) {
                Some(parts) => {
                    for (name, schema) in parts {
                        schemas.insert(name, schema);
                    }
                }
                None => {
                    let schema_name = format!("kubesim.{}.{v}.{}", t.group, t.kind);
                    schemas.insert(
                        schema_name,
                        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                               "x-kubernetes-group-version-kind": [gvk]}),
                    );
                }
            }
        }
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (kubesim)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas}
    }))
}

/// `GET /openapi/v2`: an empty but valid Swagger document.
pub fn openapi_v2() -> Value {
    json!({"swagger": "2.0", "info": {"title": "Kubernetes (kubesim)", "version": "v1.32.0"}, "paths": {}, "definitions": {}})
}
