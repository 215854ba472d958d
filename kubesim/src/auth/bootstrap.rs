//! The roles and bindings an API server creates at start, after
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`: `cluster-admin` for
//! `system:masters`, discovery and public information for everyone, the self-reviews for
//! every authenticated user, and the aggregated `view` role (a small part of its rules: the
//! kinds kubesim serves).

use serde_json::{json, Value};

const API: &str = "rbac.authorization.k8s.io/v1";

fn labels() -> Value {
    json!({"kubernetes.io/bootstrapping": "rbac-defaults"})
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": API, "kind": "ClusterRole",
           "metadata": {"name": name, "labels": labels(),
                        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
           "rules": rules})
}

fn binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({"apiVersion": API, "kind": "ClusterRoleBinding",
           "metadata": {"name": name, "labels": labels(),
                        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
           "subjects": subjects})
}

/// `(plural, object)` for every default ClusterRole and ClusterRoleBinding.
pub fn objects() -> Vec<(&'static str, Value)> {
    const READ: [&str; 3] = ["get", "list", "watch"];
    let view = {
        let mut v = cluster_role("view", json!([]));
        v["aggregationRule"] = json!({"clusterRoleSelectors": [
            {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]});
        v
    };
    let aggregate_to_view = {
        let mut v = cluster_role(
            "system:aggregate-to-view",
            json!([
                {"verbs": READ, "apiGroups": [""], "resources": [
                    "configmaps", "events", "persistentvolumeclaims", "serviceaccounts",
                    "services", "namespaces"]},
                {"verbs": READ, "apiGroups": ["apps"], "resources": ["deployments"]},
                {"verbs": READ, "apiGroups": ["networking.k8s.io"],
                 "resources": ["ingresses", "networkpolicies"]},
                {"verbs": READ, "apiGroups": ["policy"], "resources": ["poddisruptionbudgets"]},
            ]),
        );
        v["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] = json!("true");
        v
    };
    vec![
        (
            "clusterroles",
            cluster_role(
                "cluster-admin",
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                       {"verbs": ["*"], "nonResourceURLs": ["*"]}]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:discovery",
                json!([{"verbs": ["get"], "nonResourceURLs": [
                    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                    "/openapi", "/openapi/*", "/readyz", "/version", "/version/"]}]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:public-info-viewer",
                json!([{"verbs": ["get"], "nonResourceURLs": [
                    "/healthz", "/livez", "/readyz", "/version", "/version/"]}]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:basic-user",
                json!([
                    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                     "resources": ["selfsubjectreviews"]},
                    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                ]),
            ),
        ),
        ("clusterroles", view),
        ("clusterroles", aggregate_to_view),
        (
            "clusterrolebindings",
            binding("cluster-admin", "cluster-admin", &["system:masters"]),
        ),
        (
            "clusterrolebindings",
            binding(
                "system:discovery",
                "system:discovery",
                &["system:authenticated"],
            ),
        ),
        (
            "clusterrolebindings",
            binding(
                "system:public-info-viewer",
                "system:public-info-viewer",
                &["system:authenticated", "system:unauthenticated"],
            ),
        ),
        (
            "clusterrolebindings",
            binding(
                "system:basic-user",
                "system:basic-user",
                &["system:authenticated"],
            ),
        ),
    ]
}
