//! The kinds a simulated cluster serves: the built-in core kinds, plus whatever the
//! CustomResourceDefinitions stored in the cluster declare.

use serde_json::{json, Value};

/// One servable resource: what discovery lists and what the URL router resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// API group; empty for the core group.
    pub group: String,
    /// Served versions, storage version first.
    pub versions: Vec<String>,
    pub kind: String,
    /// The URL segment, e.g. `ingresses`.
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    /// Whether `/status` is a separate subresource (status is then ignored on the main resource).
    pub status_subresource: bool,
    pub short_names: Vec<String>,
    /// True for kinds declared by a CRD (no strategic merge patch, like the real API).
    pub custom: bool,
    /// True for the review kinds (`SelfSubjectAccessReview`, …): only `create`, nothing stored.
    pub create_only: bool,
    /// A custom kind's `additionalPrinterColumns` (of its storage version): what
    /// `kubectl get` prints after the name.
    pub columns: Vec<Column>,
}

/// One of a CRD's `additionalPrinterColumns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// `string`, `boolean`, `integer`, `number` or `date`.
    pub kind: String,
    pub json_path: String,
    pub description: String,
    pub priority: i64,
}

impl ResourceType {
    fn builtin(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        status: bool,
        short: &[&str],
    ) -> Self {
        ResourceType {
            group: group.to_string(),
            versions: vec![version.to_string()],
            kind: kind.to_string(),
            plural: plural.to_string(),
            singular: kind.to_ascii_lowercase(),
            namespaced,
            status_subresource: status,
            short_names: short.iter().map(|s| s.to_string()).collect(),
            custom: false,
            create_only: false,
            columns: Vec::new(),
        }
    }

    /// A kind that is only ever created and answered, never stored (the reviews).
    fn review(group: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        ResourceType {
            create_only: true,
            ..Self::builtin(group, "v1", kind, plural, namespaced, false, &[])
        }
    }

    /// `ingresses.networking.k8s.io`, or just `services` for the core group; used in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `networking.k8s.io/v1` or `v1`.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// Reads a resource type out of a CustomResourceDefinition object.
    pub fn from_crd(crd: &Value) -> Option<Self> {
        let spec = crd.get("spec")?;
        let names = spec.get("names")?;
        let served: Vec<&Value> = spec
            .get("versions")?
            .as_array()?
            .iter()
            .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(true))
            .collect();
        let mut versions: Vec<String> = Vec::new();
        let mut status = false;
        // Storage version first, so it is the preferred one in discovery.
        for v in served
            .iter()
            .filter(|v| v["storage"].as_bool() == Some(true))
        {
            versions.push(v.get("name")?.as_str()?.to_string());
        }
        for v in &served {
            let name = v.get("name")?.as_str()?.to_string();
            if !versions.contains(&name) {
                versions.push(name);
            }
            if v.pointer("/subresources/status").is_some() {
                status = true;
            }
        }
        if versions.is_empty() {
            return None;
        }
        let kind = names.get("kind")?.as_str()?.to_string();
        // The storage version's columns (kubectl asks the preferred version, the storage one
        // here).
        let columns = served
            .iter()
            .find(|v| v["storage"].as_bool() == Some(true))
            .and_then(|v| v.get("additionalPrinterColumns"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some(Column {
                    name: c.get("name")?.as_str()?.to_string(),
                    kind: c
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("string")
                        .to_string(),
                    json_path: c.get("jsonPath")?.as_str()?.to_string(),
                    description: c
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                })
            })
            .collect();
        Some(ResourceType {
            group: spec.get("group")?.as_str()?.to_string(),
            versions,
            plural: names.get("plural")?.as_str()?.to_string(),
            singular: names
                .get("singular")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| kind.to_ascii_lowercase()),
            kind,
            namespaced: spec.get("scope").and_then(Value::as_str) != Some("Cluster"),
            status_subresource: status,
            short_names: names
                .get("shortNames")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            custom: true,
            create_only: false,
            columns,
        })
    }
}

/// The kinds every simulated cluster serves without any CRD: what Lookout watches, what a
/// deployment of it creates (no pods run), RBAC, and the reviews the authorizer answers.
pub fn builtin_types() -> Vec<ResourceType> {
    use ResourceType as R;
    const NET: &str = "networking.k8s.io";
    const RBAC: &str = "rbac.authorization.k8s.io";
    const AUTHZ: &str = "authorization.k8s.io";
    vec![
        R::builtin("", "v1", "Namespace", "namespaces", false, true, &["ns"]),
        R::builtin("", "v1", "Service", "services", true, true, &["svc"]),
        R::builtin("", "v1", "ConfigMap", "configmaps", true, false, &["cm"]),
        R::builtin("", "v1", "Event", "events", true, false, &["ev"]),
        R::builtin("", "v1", "Secret", "secrets", true, false, &[]),
        R::builtin(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            true,
            false,
            &["sa"],
        ),
        R::builtin(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            true,
            true,
            &["pvc"],
        ),
        R::builtin(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
            true,
            &["deploy"],
        ),
        R::builtin(
            NET,
            "v1",
            "IngressClass",
            "ingressclasses",
            false,
            false,
            &[],
        ),
        R::builtin(NET, "v1", "Ingress", "ingresses", true, true, &["ing"]),
        R::builtin(
            NET,
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            true,
            false,
            &["netpol"],
        ),
        R::builtin(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            true,
            true,
            &["pdb"],
        ),
        R::builtin(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            true,
            false,
            &[],
        ),
        R::builtin(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            true,
            &["crd", "crds"],
        ),
        R::builtin(RBAC, "v1", "ClusterRole", "clusterroles", false, false, &[]),
        R::builtin(
            RBAC,
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            false,
            &[],
        ),
        R::builtin(RBAC, "v1", "Role", "roles", true, false, &[]),
        R::builtin(RBAC, "v1", "RoleBinding", "rolebindings", true, false, &[]),
        R::review(
            AUTHZ,
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
        ),
        R::review(
            AUTHZ,
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
        ),
        R::review(AUTHZ, "SubjectAccessReview", "subjectaccessreviews", false),
        R::review(
            AUTHZ,
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
        ),
        R::review(
            "authentication.k8s.io",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
        ),
    ]
}

/// The status a real API server gives an accepted CustomResourceDefinition.
pub fn crd_status(crd: &Value, now: &str) -> Value {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v["storage"].as_bool() == Some(true))
                .map(|v| v["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    json!({
        "acceptedNames": names,
        "storedVersions": stored,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_with_two_served_versions_lists_storage_version_first() {
        let crd = json!({"spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
        "names": {"kind": "Gateway", "plural": "gateways", "singular": "gateway", "shortNames": ["gtw"]},
        "versions": [
            {"name": "v1beta1", "served": true, "storage": false},
            {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}
        ]}});
        let t = ResourceType::from_crd(&crd).unwrap();
        assert_eq!(t.versions, vec!["v1", "v1beta1"]);
        assert!(t.namespaced && t.status_subresource && t.custom);
        assert_eq!(t.short_names, vec!["gtw"]);
        assert_eq!(t.qualified(), "gateways.gateway.networking.k8s.io");
    }

    #[test]
    fn crd_without_served_versions_is_not_servable() {
        let crd = json!({"spec": {"group": "x.io", "names": {"kind": "X", "plural": "xs"},
            "versions": [{"name": "v1", "served": false, "storage": true}]}});
        assert!(ResourceType::from_crd(&crd).is_none());
    }
}
