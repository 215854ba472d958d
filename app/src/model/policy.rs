//! The policies that set the edit-in-place annotation on Ingresses for a platform team:
//! Espejote's ManagedResources (vshn/espejote `api/v1alpha1/managed_resource_types.go`).
//! What Lookout reads of one — its status, the field manager its applies carry, where it
//! reads Ingresses — and which Ingresses it covers.
//!
//! Espejote renders a Jsonnet template over its contexts and server-side applies what it
//! returns (`controllers/applygroup/applygroup.go`): the annotation it sets is owned by its
//! field manager (`spec.applyOptions.fieldManager`, default `managed-resource:<name>`).
//! Lookout does not evaluate the template; it reads which Ingresses the policy looks at
//! (its contexts and watches of kind Ingress: namespace, label selector, names) and whether
//! the template names the annotation at all.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use super::ingress::{IngressView, EDIT_IN_PLACE};
use super::interner::Interner;
use super::object::at;
use super::text::Text;

mod coverage;
pub use coverage::{covered, responsible, Covered, PolicyRef, Setters};

/// What Espejote's status says when the last reconcile worked (`recordReconcileErr`).
pub const READY: &str = "Ready";

/// A policy that may set the annotation — an Espejote ManagedResource, a Kyverno
/// ClusterPolicy, Policy or MutatingPolicy — as far as Lookout judges it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyView {
    /// `ManagedResource`, `ClusterPolicy`, `Policy` or `MutatingPolicy`.
    pub kind: super::kind::Kind,
    /// Empty for a cluster-scoped policy.
    pub namespace: Text,
    pub name: Text,
    /// `Ready`, or why not: Espejote's `status.status` (which step failed:
    /// `TemplateError`, `ApplyError`, …), Kyverno's `Not ready` with its condition's
    /// message; None before its controller's first status.
    pub status: Option<Text>,
    /// The field manager of its applies; empty where the engine names none (Kyverno mutates
    /// on admission inside the writer's own request, and in the background by update).
    pub field_manager: Text,
    /// It mutates on admission only (Kyverno without background mutation of existing
    /// Ingresses): an Ingress made before it, or not written since, does not get the
    /// annotation.
    pub admission_only: bool,
    /// `spec.applyOptions.force`: it takes fields over from any other manager.
    pub force: bool,
    /// `spec.serviceAccountRef.name` (default `default`): whose rights bound it.
    pub service_account: Text,
    /// Its template names the edit-in-place annotation.
    pub sets_edit_in_place: bool,
    /// Where it reads Ingresses: its contexts and watches of kind Ingress.
    pub scopes: Arc<[Scope]>,
    pub created: Option<DateTime<Utc>>,
}

/// Where a policy reads Ingresses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scope {
    /// None: every namespace.
    pub namespace: Option<Text>,
    /// The label selector; None selects every Ingress. A selector Lookout cannot read
    /// selects none (Espejote cannot build its cache from it either).
    pub selector: Option<Selector>,
    /// `name`, `matchNames`: only these (empty: any).
    pub names: Vec<Text>,
    /// `ignoreNames`.
    pub ignore: Vec<Text>,
}

/// A `metav1.LabelSelector`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selector {
    pub match_labels: Vec<(Text, Text)>,
    pub expressions: Vec<Expression>,
    /// In words, for evidence (`tls=letsencrypt, team in (a,b)`).
    pub text: Text,
    /// False when Lookout could not read it: it selects nothing.
    pub readable: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expression {
    pub key: Text,
    pub operator: Text,
    pub values: Vec<Text>,
}

impl Selector {
    fn read(v: &Value, strings: &mut Interner) -> Selector {
        let mut readable = true;
        let match_labels: Vec<(Text, Text)> = v
            .get("matchLabels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| match v.as_str() {
                Some(v) => Some((strings.get(k), strings.get(v))),
                None => {
                    readable = false;
                    None
                }
            })
            .collect();
        let expressions: Vec<Expression> = v
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| Expression {
                key: strings.get(e.get("key").and_then(Value::as_str).unwrap_or_default()),
                operator: strings.get(
                    e.get("operator")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
                values: e
                    .get("values")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|s| strings.get(s))
                    .collect(),
            })
            .collect();
        readable &= expressions
            .iter()
            .all(|e| matches!(&*e.operator, "In" | "NotIn" | "Exists" | "DoesNotExist"));
        let mut words: Vec<String> = match_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        words.extend(expressions.iter().map(|e| match &*e.operator {
            "Exists" => e.key.to_string(),
            "DoesNotExist" => format!("!{}", e.key),
            op => format!(
                "{} {} ({})",
                e.key,
                op.to_ascii_lowercase(),
                e.values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(",")
            ),
        }));
        Selector {
            match_labels,
            expressions,
            text: strings.get(&words.join(", ")),
            readable,
        }
    }

    /// Whether it selects an object with `labels`.
    pub fn matches(&self, labels: &[(Text, Text)]) -> bool {
        let get = |k: &str| labels.iter().find(|(l, _)| &**l == k).map(|(_, v)| v);
        self.readable
            && self.match_labels.iter().all(|(k, v)| get(k) == Some(v))
            && self.expressions.iter().all(|e| {
                let value = get(&e.key);
                match &*e.operator {
                    "In" => value.is_some_and(|v| e.values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
                    "Exists" => value.is_some(),
                    _ => value.is_none(),
                }
            })
    }
}

/// How a policy stands to one Ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// It reads the Ingress: its template decides.
    Selected,
    /// The Ingress is where the policy looks (its namespaces) but its selector or names
    /// leave it out.
    Missed,
    /// Nowhere it looks.
    Outside,
}

impl PolicyView {
    /// A policy of `kind` (ManagedResource, ClusterPolicy, Policy or MutatingPolicy) as
    /// Lookout judges it; None for another kind or an object without a name.
    pub fn of(
        kind: super::kind::Kind,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<Self> {
        use super::kind::Kind;
        match kind {
            Kind::ManagedResource => Self::project(meta, data, strings),
            Kind::ClusterPolicy | Kind::Policy => Self::kyverno(kind, meta, data, strings),
            Kind::MutatingPolicy => Self::mutating(meta, data, strings),
            _ => None,
        }
    }

    /// An Espejote ManagedResource (`espejote.io/v1alpha1`).
    pub fn project(meta: &ObjectMeta, data: &Value, strings: &mut Interner) -> Option<Self> {
        let namespace = strings.get(meta.namespace.as_deref()?);
        let name = meta.name.as_deref()?;
        let spec = at(data, "/spec");
        let field_manager = spec
            .and_then(|s| at(s, "/applyOptions/fieldManager"))
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map_or_else(|| format!("managed-resource:{name}"), str::to_string);
        let mut scopes = Vec::new();
        let resources = spec
            .and_then(|s| s.get("context"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("resource"))
            .chain(
                spec.and_then(|s| s.get("triggers"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.get("watchResource")),
            );
        for r in resources {
            let is_ingress = r.get("kind").and_then(Value::as_str) == Some("Ingress")
                && r.get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("networking.k8s.io/"));
            if !is_ingress {
                continue;
            }
            let mut names: Vec<Text> = r
                .get("matchNames")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|n| strings.get(n))
                .collect();
            if let Some(n) = r
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            {
                names.push(strings.get(n));
            }
            scopes.push(Scope {
                namespace: match r.get("namespace").and_then(Value::as_str) {
                    None => Some(namespace.clone()),
                    Some("") => None,
                    Some(ns) => Some(strings.get(ns)),
                },
                selector: r.get("labelSelector").map(|s| Selector::read(s, strings)),
                names,
                ignore: r
                    .get("ignoreNames")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|n| strings.get(n))
                    .collect(),
            });
        }
        Some(PolicyView {
            kind: super::kind::Kind::ManagedResource,
            admission_only: false,
            namespace,
            name: strings.get(name),
            status: at(data, "/status/status")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(|s| strings.get(s)),
            field_manager: strings.get(&field_manager),
            force: spec
                .and_then(|s| at(s, "/applyOptions/force"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            service_account: strings.get(
                spec.and_then(|s| at(s, "/serviceAccountRef/name"))
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .unwrap_or("default"),
            ),
            sets_edit_in_place: spec
                .and_then(|s| s.get("template"))
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains(EDIT_IN_PLACE)),
            scopes: scopes.into(),
            created: super::object::created(meta),
        })
    }

    /// Whether its last reconcile worked.
    pub fn ready(&self) -> bool {
        self.status.as_deref() == Some(READY)
    }

    /// The status in words: `Ready`, `TemplateError`, or that it has none yet.
    pub fn status_text(&self) -> &str {
        self.status.as_deref().unwrap_or("no status yet")
    }

    /// How it stands to `ing`.
    pub fn coverage(&self, ing: &IngressView) -> Coverage {
        let mut best = Coverage::Outside;
        for s in self.scopes.iter() {
            if s.namespace.as_ref().is_some_and(|ns| *ns != ing.namespace) {
                continue;
            }
            let named = (s.names.is_empty() || s.names.contains(&ing.name))
                && !s.ignore.contains(&ing.name);
            if named
                && s.selector
                    .as_ref()
                    .is_none_or(|sel| sel.matches(&ing.labels))
            {
                return Coverage::Selected;
            }
            best = Coverage::Missed;
        }
        best
    }

    /// Whether `manager` (a field manager of the annotation) is this policy's: its own, or
    /// with a suffix a template branch added (`esp.applyOptions(…, fieldManagerSuffix)`).
    pub fn owns_as(&self, manager: &str) -> bool {
        !self.field_manager.is_empty() && manager.starts_with(&*self.field_manager)
    }

    /// "Espejote ManagedResource platform/edit-in-place", "Kyverno ClusterPolicy add-edit-in-place".
    pub fn label(&self) -> String {
        let engine = match self.kind {
            super::kind::Kind::ManagedResource => "Espejote",
            _ => "Kyverno",
        };
        if self.namespace.is_empty() {
            format!("{engine} {} {}", self.kind, self.name)
        } else {
            format!("{engine} {} {}/{}", self.kind, self.namespace, self.name)
        }
    }

    /// A Kyverno ClusterPolicy or Policy (`kyverno.io/v1`): its mutate rules that name the
    /// annotation, where they match Ingresses (`match.any[]`/`match.all[]`/`match.resources`:
    /// `kinds`, `namespaces`, `names`, `selector`), whether they mutate existing Ingresses
    /// in the background (`mutate.targets` with `spec.background`, default true) and its
    /// `Ready` condition (kyverno/kyverno `api/kyverno/v1`: `spec_types.go`,
    /// `rule_types.go`, `common_types.go`, `policy_status.go`).
    pub fn kyverno(
        kind: super::kind::Kind,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<Self> {
        let name = meta.name.as_deref()?;
        let namespace = strings.get(meta.namespace.as_deref().unwrap_or(""));
        let spec = at(data, "/spec");
        let rules: Vec<&Value> = spec
            .and_then(|s| s.get("rules"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| {
                r.get("mutate")
                    .is_some_and(|m| m.to_string().contains(EDIT_IN_PLACE))
            })
            .collect();
        let background = spec
            .and_then(|s| s.get("background"))
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let mut scopes = Vec::new();
        for r in &rules {
            let m = r.get("match");
            let blocks = m
                .and_then(|m| m.get("any").or_else(|| m.get("all")))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_else(|| m.into_iter().cloned().collect());
            for b in &blocks {
                let Some(res) = b.get("resources") else {
                    continue;
                };
                let ingress = res.get("kinds").and_then(Value::as_array).is_some_and(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .any(|k| k == "Ingress" || k.ends_with("/Ingress"))
                });
                if !ingress {
                    continue;
                }
                let names: Vec<Text> = res
                    .get("names")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|n| strings.get(n))
                    .collect();
                let selector = res.get("selector").map(|s| Selector::read(s, strings));
                let listed: Vec<&str> = res
                    .get("namespaces")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                // A Policy matches in its own namespace only.
                let own = (!namespace.is_empty()).then(|| namespace.clone());
                let places: Vec<Option<Text>> = if listed.is_empty() || listed.contains(&"*") {
                    vec![own]
                } else {
                    listed.iter().map(|n| Some(strings.get(n))).collect()
                };
                for place in places {
                    scopes.push(Scope {
                        namespace: place,
                        selector: selector.clone(),
                        names: names.clone(),
                        ignore: Vec::new(),
                    });
                }
            }
        }
        let existing = rules.iter().any(|r| {
            r.pointer("/mutate/targets")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty())
        });
        let ready = at(data, "/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
        let status = ready.map(|c| {
            if c.get("status").and_then(Value::as_str) == Some("True") {
                strings.get(READY)
            } else {
                let message = c.get("message").and_then(Value::as_str).unwrap_or_default();
                strings.get(&format!("Not ready: {message}"))
            }
        });
        Some(PolicyView {
            kind,
            namespace,
            name: strings.get(name),
            status,
            field_manager: strings.get(""),
            admission_only: !(existing && background),
            force: false,
            service_account: strings.get(""),
            sets_edit_in_place: !rules.is_empty(),
            scopes: scopes.into(),
            created: super::object::created(meta),
        })
    }

    /// A Kyverno MutatingPolicy (`policies.kyverno.io`): mutations that name the annotation
    /// (`spec.mutations[]`: an `applyConfiguration` or `jsonPatch` expression), the Ingresses
    /// its `matchConstraints.resourceRules` reach (its `objectSelector`; a
    /// `namespaceSelector` reads namespace labels, which Lookout does not watch: every
    /// namespace), whether it mutates existing ones (`evaluation.mutateExisting.enabled`,
    /// default false) and `status.conditionStatus.ready` (kyverno/api
    /// `api/policies.kyverno.io/v1beta1/mutating_policy.go`, `conditions.go`).
    pub fn mutating(meta: &ObjectMeta, data: &Value, strings: &mut Interner) -> Option<Self> {
        let name = meta.name.as_deref()?;
        let spec = at(data, "/spec");
        let sets = spec
            .and_then(|s| s.get("mutations"))
            .is_some_and(|m| m.to_string().contains(EDIT_IN_PLACE));
        let ingresses = spec
            .and_then(|s| at(s, "/matchConstraints/resourceRules"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|r| {
                r.get("resources")
                    .and_then(Value::as_array)
                    .is_some_and(|v| {
                        v.iter()
                            .filter_map(Value::as_str)
                            .any(|x| x == "ingresses" || x == "*")
                    })
            });
        let selector = spec
            .and_then(|s| at(s, "/matchConstraints/objectSelector"))
            .map(|s| Selector::read(s, strings));
        let scopes: Vec<Scope> = if ingresses {
            vec![Scope {
                namespace: None,
                selector,
                names: Vec::new(),
                ignore: Vec::new(),
            }]
        } else {
            Vec::new()
        };
        let existing = spec
            .and_then(|s| at(s, "/evaluation/mutateExisting/enabled"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let status = at(data, "/status/conditionStatus").map(|c| {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                strings.get(READY)
            } else {
                let message = c.get("message").and_then(Value::as_str).unwrap_or_default();
                strings.get(&format!("Not ready: {message}"))
            }
        });
        Some(PolicyView {
            kind: super::kind::Kind::MutatingPolicy,
            namespace: strings.get(""),
            name: strings.get(name),
            status,
            field_manager: strings.get(""),
            admission_only: !existing,
            force: false,
            service_account: strings.get(""),
            sets_edit_in_place: sets,
            scopes: scopes.into(),
            created: super::object::created(meta),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(spec: Value) -> PolicyView {
        let meta = ObjectMeta {
            namespace: Some("platform".into()),
            name: Some("edit-in-place".into()),
            ..Default::default()
        };
        PolicyView::project(
            &meta,
            &json!({"spec": spec, "status": {"status": "TemplateError"}}),
            &mut Interner::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_policy_reads_its_manager_scopes_and_whether_it_sets_the_annotation() {
        let p = policy(json!({
            "context": [{"name": "ingresses", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": "", "labelSelector": {"matchLabels": {"tls": "letsencrypt"}}}},
                        {"name": "namespaces", "resource": {"apiVersion": "v1", "kind": "Namespace"}}],
            "triggers": [{"name": "shop", "watchResource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "ignoreNames": ["legacy"]}}],
            "template": "{metadata: {annotations: {'acme.cert-manager.io/http01-edit-in-place': 'true'}}}",
        }));
        assert_eq!(&*p.field_manager, "managed-resource:edit-in-place");
        assert_eq!(p.status.as_deref(), Some("TemplateError"));
        assert!(p.sets_edit_in_place && !p.ready() && !p.force);
        assert_eq!(&*p.service_account, "default");
        assert_eq!(
            p.scopes.len(),
            2,
            "the Ingress context and the Ingress watch"
        );
        assert_eq!(p.scopes[0].namespace, None, "\"\" is every namespace");
        assert_eq!(
            p.scopes[1].namespace.as_deref(),
            Some("platform"),
            "unset is its own"
        );
        assert_eq!(
            &*p.scopes[0].selector.as_ref().unwrap().text,
            "tls=letsencrypt"
        );
        let custom = policy(
            json!({"applyOptions": {"fieldManager": "platform-tls", "force": true}, "serviceAccountRef": {"name": "tls"}}),
        );
        assert_eq!(&*custom.field_manager, "platform-tls");
        assert!(custom.force && !custom.sets_edit_in_place && custom.scopes.is_empty());
        assert!(custom.owns_as("platform-tls-branch") && !custom.owns_as("lookout"));
    }

    #[test]
    fn selectors_match_as_the_api_server_does() {
        let mut strings = Interner::default();
        let sel = Selector::read(
            &json!({"matchLabels": {"tls": "le"}, "matchExpressions": [
                {"key": "team", "operator": "In", "values": ["a", "b"]},
                {"key": "legacy", "operator": "DoesNotExist"}]}),
            &mut strings,
        );
        let labels = |pairs: &[(&str, &str)]| -> Vec<(Text, Text)> {
            pairs
                .iter()
                .map(|(k, v)| (Text::from(*k), Text::from(*v)))
                .collect()
        };
        assert!(sel.matches(&labels(&[("tls", "le"), ("team", "a")])));
        assert!(!sel.matches(&labels(&[("tls", "le"), ("team", "c")])));
        assert!(!sel.matches(&labels(&[("tls", "le"), ("team", "a"), ("legacy", "")])));
        assert!(!sel.matches(&labels(&[("team", "a")])));
        let unreadable = Selector::read(
            &json!({"matchExpressions": [{"key": "x", "operator": "Gt"}]}),
            &mut strings,
        );
        assert!(
            !unreadable.matches(&labels(&[("x", "1")])),
            "selects nothing"
        );
    }
}
