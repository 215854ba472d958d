//! Kubernetes RBAC as the API server evaluates it: bindings whose subjects match the user,
//! the rules of the roles they grant, aggregated ClusterRoles, and the `system:masters`
//! short-circuit. Upstream: `plugin/pkg/auth/authorizer/rbac/rbac.go` (subjects, visiting
//! bindings), `pkg/apis/rbac/v1/evaluation_helpers.go` (rule matching),
//! `pkg/controller/clusterroleaggregation` (aggregation) and
//! `pkg/kubeapiserver/authorizer` (the privileged group).

use serde_json::{json, Value};

use super::{Attributes, Identity};
use crate::selectors::LabelSelector;
use crate::store::{Cluster, Selection};

const GROUP: &str = "rbac.authorization.k8s.io";
/// The group that every authorizer lets do anything.
pub const PRIVILEGED_GROUP: &str = "system:masters";

/// The answer to one question, with the API server's reason when it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// The RBAC objects of a cluster at one moment.
struct Policy {
    cluster_roles: Vec<Value>,
    cluster_role_bindings: Vec<Value>,
    roles: Vec<Value>,
    role_bindings: Vec<Value>,
}

impl Policy {
    fn load(cluster: &Cluster) -> Policy {
        let all = |plural: &str| {
            cluster
                .resolve(GROUP, plural)
                .and_then(|rt| cluster.list(&rt, &Selection::default(), None, None).ok())
                .map(|page| {
                    page.items
                        .into_iter()
                        .map(std::sync::Arc::unwrap_or_clone)
                        .collect()
                })
                .unwrap_or_default()
        };
        Policy {
            cluster_roles: all("clusterroles"),
            cluster_role_bindings: all("clusterrolebindings"),
            roles: all("roles"),
            role_bindings: all("rolebindings"),
        }
    }

    fn cluster_role(&self, name: &str) -> Option<&Value> {
        self.cluster_roles.iter().find(|r| meta(r, "name") == name)
    }

    /// A ClusterRole's rules; an aggregated one has the rules of every ClusterRole its
    /// selectors pick (what the aggregation controller writes into it).
    fn cluster_role_rules(&self, role: &Value, depth: u8) -> Vec<Value> {
        let mut rules = rules_of(role);
        let Some(selectors) = role
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            return rules;
        };
        if depth > 4 {
            return rules;
        }
        let selectors: Vec<LabelSelector> = selectors
            .iter()
            .filter_map(|s| LabelSelector::from_object(s).ok())
            .collect();
        for other in &self.cluster_roles {
            if meta(other, "name") != meta(role, "name")
                && selectors.iter().any(|s| s.matches(other))
            {
                for rule in self.cluster_role_rules(other, depth + 1) {
                    if !rules.contains(&rule) {
                        rules.push(rule);
                    }
                }
            }
        }
        rules
    }

    /// Every grant that applies to `who` in `namespace` ("" for cluster scope only): where it
    /// comes from, and its rules.
    fn grants(&self, who: &Identity, namespace: &str) -> Vec<(String, Vec<Value>)> {
        let mut out = Vec::new();
        for b in &self.cluster_role_bindings {
            let Some(subject) = matching_subject(b, who, "") else {
                continue;
            };
            let role = b
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if let Some(r) = self.cluster_role(role) {
                let source = format!(
                    "ClusterRoleBinding {:?} of ClusterRole {role:?} to {subject}",
                    meta(b, "name")
                );
                out.push((source, self.cluster_role_rules(r, 0)));
            }
        }
        if namespace.is_empty() {
            return out;
        }
        for b in self
            .role_bindings
            .iter()
            .filter(|b| meta(b, "namespace") == namespace)
        {
            let Some(subject) = matching_subject(b, who, namespace) else {
                continue;
            };
            let kind = b
                .pointer("/roleRef/kind")
                .and_then(Value::as_str)
                .unwrap_or("");
            let role = b
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let rules = match kind {
                "ClusterRole" => self
                    .cluster_role(role)
                    .map(|r| self.cluster_role_rules(r, 0)),
                "Role" => self
                    .roles
                    .iter()
                    .find(|r| meta(r, "name") == role && meta(r, "namespace") == namespace)
                    .map(rules_of),
                _ => None,
            };
            if let Some(rules) = rules {
                let source = format!(
                    "RoleBinding \"{}/{namespace}\" of {kind} {role:?} to {subject}",
                    meta(b, "name")
                );
                out.push((source, rules));
            }
        }
        out
    }
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn rules_of(role: &Value) -> Vec<Value> {
    role.get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The first subject of `binding` that is `who`, described as the API server describes it.
fn matching_subject(binding: &Value, who: &Identity, binding_ns: &str) -> Option<String> {
    let subjects = binding.get("subjects")?.as_array()?;
    subjects.iter().find_map(|s| {
        let name = s.get("name")?.as_str()?;
        match s.get("kind")?.as_str()? {
            "User" if who.user == name => Some(format!("User {name:?}")),
            "Group" if who.groups.iter().any(|g| g == name) => Some(format!("Group {name:?}")),
            "ServiceAccount" => {
                let ns = s
                    .get("namespace")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .unwrap_or(binding_ns);
                (who.user == format!("system:serviceaccount:{ns}:{name}"))
                    .then(|| format!("ServiceAccount \"{name}/{ns}\""))
            }
            _ => None,
        }
    })
}

fn strings<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    rule.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Whether one PolicyRule allows the request (`RuleAllows` in rbac.go).
pub fn rule_allows(rule: &Value, a: &Attributes) -> bool {
    let verb = strings(rule, "verbs").any(|v| v == "*" || v == a.verb);
    if !verb {
        return false;
    }
    if !a.resource_request {
        return strings(rule, "nonResourceURLs").any(|u| {
            u == "*"
                || u == a.path
                || u.strip_suffix('*')
                    .is_some_and(|prefix| a.path.starts_with(prefix))
        });
    }
    let group = strings(rule, "apiGroups").any(|g| g == "*" || g == a.group);
    let combined = a.combined_resource();
    let resource = strings(rule, "resources").any(|r| {
        r == "*"
            || r == combined
            || (!a.subresource.is_empty() && r.strip_prefix("*/") == Some(a.subresource.as_str()))
    });
    let names: Vec<&str> = strings(rule, "resourceNames").collect();
    group && resource && (names.is_empty() || names.contains(&a.name.as_str()))
}

/// Whether `who` may do `a`.
pub fn decide(cluster: &Cluster, who: &Identity, a: &Attributes) -> Decision {
    if who.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let policy = Policy::load(cluster);
    for (source, rules) in policy.grants(who, &a.namespace) {
        if rules.iter().any(|r| rule_allows(r, a)) {
            return Decision {
                allowed: true,
                reason: format!("RBAC: allowed by {source}"),
            };
        }
    }
    Decision {
        allowed: false,
        reason: String::new(),
    }
}

/// What `who` may do in `namespace`, as SelfSubjectRulesReview lists it
/// (`resourceRules`, `nonResourceRules`).
pub fn rules_for(cluster: &Cluster, who: &Identity, namespace: &str) -> (Vec<Value>, Vec<Value>) {
    let mut rules: Vec<Value> = Vec::new();
    if who.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
        rules.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
    }
    for (_, granted) in Policy::load(cluster).grants(who, namespace) {
        rules.extend(granted);
    }
    let (mut resource, mut non_resource) = (Vec::new(), Vec::new());
    for r in rules {
        let pick = |f: &str| json!(strings(&r, f).collect::<Vec<_>>());
        if r.get("nonResourceURLs")
            .is_some_and(|u| u.as_array().is_some_and(|a| !a.is_empty()))
        {
            non_resource
                .push(json!({"verbs": pick("verbs"), "nonResourceURLs": pick("nonResourceURLs")}));
        } else {
            let mut out = json!({"verbs": pick("verbs"), "apiGroups": pick("apiGroups"), "resources": pick("resources")});
            if r.get("resourceNames")
                .is_some_and(|n| n.as_array().is_some_and(|a| !a.is_empty()))
            {
                out["resourceNames"] = pick("resourceNames");
            }
            resource.push(out);
        }
    }
    (resource, non_resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn rules_match_verbs_groups_resources_subresources_and_names() {
        let rule = json!({"verbs": ["update"], "apiGroups": ["cert-manager.io"], "resources": ["certificates/status"]});
        assert!(rule_allows(
            &rule,
            &req("update", "cert-manager.io", "certificates", "status", "x")
        ));
        assert!(!rule_allows(
            &rule,
            &req("update", "cert-manager.io", "certificates", "", "x")
        ));
        assert!(!rule_allows(
            &rule,
            &req("patch", "cert-manager.io", "certificates", "status", "x")
        ));
        assert!(!rule_allows(
            &rule,
            &req("update", "", "certificates", "status", "x")
        ));
        let any_status = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]});
        assert!(rule_allows(
            &any_status,
            &req("get", "x.io", "things", "status", "")
        ));
        assert!(!rule_allows(
            &any_status,
            &req("get", "x.io", "things", "", "")
        ));
        let named = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["tls"]});
        assert!(rule_allows(&named, &req("get", "", "secrets", "", "tls")));
        assert!(!rule_allows(
            &named,
            &req("get", "", "secrets", "", "other")
        ));
        assert!(!rule_allows(&named, &req("list", "", "secrets", "", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_trailing_star() {
        let rule = json!({"verbs": ["get"], "nonResourceURLs": ["/version", "/apis/*"]});
        let path = |p: &str| Attributes {
            verb: "get".into(),
            path: p.into(),
            ..Attributes::default()
        };
        assert!(rule_allows(&rule, &path("/version")));
        assert!(rule_allows(&rule, &path("/apis/cert-manager.io/v1")));
        assert!(!rule_allows(&rule, &path("/apis")));
        assert!(!rule_allows(&rule, &path("/version/x")));
    }
}
