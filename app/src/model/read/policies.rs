//! The policies list (`/policies`) and a policy's page: each Espejote ManagedResource that
//! sets edit-in-place, with the Ingresses it is responsible for — covered, lacking the
//! annotation, held by it at another value — as the reader sees them. A reader who does not
//! see the whole cluster sees a policy only through the Ingresses of theirs it covers, and
//! only those; its ServiceAccount, scopes, events and findings are the cluster's operators'.

use crate::model::chain::Index;
use crate::model::data::ClusterFacts;
use serde::Serialize;

use super::problems::Health;
use super::Visibility;
use crate::model::data::ClusterData;
use crate::model::finding::{Finding, Severity, Subject};
use crate::model::infra::EventView;
use crate::model::kind::Kind;
use crate::model::policy::{covered, Coverage, PolicyView, Setters};
use crate::model::text::{Text, Texts};

/// Filters of the policies list.
pub type PolicyQuery = super::views::NamedQuery;

/// One policy of the list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyRow {
    pub cluster: Text,
    pub namespace: Text,
    pub name: Text,
    /// `ManagedResource` (Espejote), `ClusterPolicy`, `Policy` or `MutatingPolicy` (Kyverno).
    pub kind: &'static str,
    /// `status.status`: `Ready` or the step that failed; None before its first reconcile.
    pub status: Option<Text>,
    pub ready: bool,
    /// The field manager its applies carry.
    pub field_manager: Text,
    /// It applies with `force`.
    pub force: bool,
    /// The Ingresses it is responsible for (those the reader sees).
    pub covered: usize,
    /// Of those, lacking `"true"`.
    pub lacking: usize,
    /// Of those, held by the policy itself at another value.
    pub held: usize,
    /// The worst health of the Ingresses it covers (the board's judgement of them).
    pub severity: Option<Severity>,
}

/// An Ingress a policy is responsible for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoveredIngress {
    pub namespace: Text,
    pub name: Text,
    /// `reads` (its selector takes it in) or `misses` (its selector leaves it out).
    pub coverage: &'static str,
    /// The annotation's value, if any.
    pub annotation: Option<Text>,
    /// Who owns the annotation (field managers).
    pub owners: Texts,
    pub lacking: bool,
    pub severity: Option<Severity>,
}

/// A policy's page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyDetail {
    #[serde(flatten)]
    pub row: PolicyRow,
    /// Its ServiceAccount (whole-cluster readers).
    pub service_account: Option<Text>,
    /// Where it reads Ingresses, in words (whole-cluster readers).
    pub scopes: Vec<String>,
    pub ingresses: Vec<CoveredIngress>,
    /// The findings about it (whole-cluster readers).
    pub findings: Vec<Finding>,
    /// Its events, newest first (whole-cluster readers).
    pub events: Vec<EventView>,
}

/// The rows of one cluster's policies `visible` may see and `q` selects, into `out`.
pub fn policy_rows(
    visible: &Visibility<'_>,
    cluster: &str,
    data: &ClusterData,
    health: &Health,
    q: &PolicyQuery,
    out: &mut Vec<PolicyRow>,
) {
    let text = q.q.as_deref().map(str::to_ascii_lowercase);
    let setters = Setters::of(data);
    for p in data.all_policies() {
        if text
            .as_deref()
            .is_some_and(|t| !p.name.to_ascii_lowercase().contains(t))
        {
            continue;
        }
        let ingresses = ingresses_seen(visible, data, &setters, health, p, q.namespace.as_deref());
        if let Some(row) = row(visible, cluster, p, &ingresses, q.namespace.is_some()) {
            out.push(row);
        }
    }
}

/// The Ingresses `p` is responsible for that `visible` sees (in `namespace`, when given).
fn ingresses_seen(
    visible: &Visibility<'_>,
    data: &ClusterData,
    setters: &Setters<'_>,
    health: &Health,
    p: &PolicyView,
    namespace: Option<&str>,
) -> Vec<CoveredIngress> {
    covered(data, setters, p)
        .into_iter()
        .filter(|c| visible.namespace(&c.ingress.namespace))
        .filter(|c| namespace.is_none_or(|ns| *c.ingress.namespace == *ns))
        .map(|c| CoveredIngress {
            namespace: c.ingress.namespace.clone(),
            name: c.ingress.name.clone(),
            coverage: match c.coverage {
                Coverage::Selected => "reads",
                _ => "misses",
            },
            annotation: c.ingress.edit_in_place.clone(),
            owners: c.ingress.edit_in_place_managers.clone(),
            lacking: c.lacking(),
            severity: health
                .get(&(
                    Subject::Object(Kind::Ingress),
                    c.ingress.namespace.clone(),
                    c.ingress.name.clone(),
                ))
                .copied(),
        })
        .collect()
}

/// A policy's row as `visible` sees it; None when the reader sees none of it: a reader who
/// does not see the whole cluster sees it only through Ingresses of theirs it covers (and a
/// namespace filter, for anyone, keeps only policies covering Ingresses there).
fn row(
    visible: &Visibility<'_>,
    cluster: &str,
    p: &PolicyView,
    ingresses: &[CoveredIngress],
    filtered: bool,
) -> Option<PolicyRow> {
    if ingresses.is_empty() && (filtered || !visible.whole_cluster()) {
        return None;
    }
    Some(PolicyRow {
        cluster: Text::from(cluster),
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        kind: p.kind.name(),
        status: p.status.clone(),
        ready: p.ready(),
        field_manager: p.field_manager.clone(),
        force: p.force,
        covered: ingresses.len(),
        lacking: ingresses.iter().filter(|i| i.lacking).count(),
        held: ingresses
            .iter()
            .filter(|i| i.lacking && i.owners.iter().any(|m| p.owns_as(m)))
            .count(),
        severity: ingresses.iter().filter_map(|i| i.severity).min(),
    })
}

/// The policies list's page: the most severe first, then not ready before ready, then in
/// configuration order of clusters, namespace and name.
pub fn policy_page(
    mut rows: Vec<PolicyRow>,
    q: &PolicyQuery,
    clusters: &[String],
) -> crate::model::Page<PolicyRow> {
    let at = |c: &str| clusters.iter().position(|n| n == c).unwrap_or(usize::MAX);
    rows.sort_by(|a, b| {
        let order = |r: &PolicyRow| (r.severity.is_none(), r.severity, r.ready);
        order(a)
            .cmp(&order(b))
            .then(at(&a.cluster).cmp(&at(&b.cluster)))
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.name.cmp(&b.name))
    });
    crate::model::Page::of(rows, q.page.max(1), q.per_page.max(1))
}

/// The policy `namespace`/`name` of one cluster as `visible` sees it; None when it does not
/// exist or the reader sees none of it (the two answer alike).
pub fn policy_detail(
    visible: &Visibility<'_>,
    cluster: &str,
    data: &ClusterData,
    findings: &[Finding],
    health: &Health,
    facts: &ClusterFacts,
    (namespace, name): (&str, &str),
) -> Option<PolicyDetail> {
    // A cluster-scoped policy's page names its namespace `_`.
    let ns = if namespace == "_" { "" } else { namespace };
    let p = data
        .all_policies()
        .find(|p| *p.namespace == *ns && *p.name == *name)?;
    let ingresses = ingresses_seen(visible, data, &Setters::of(data), health, p, None);
    let row = row(visible, cluster, p, &ingresses, false)?;
    let whole = visible.whole_cluster();
    Some(PolicyDetail {
        row,
        service_account: whole.then(|| p.service_account.clone()),
        scopes: if whole {
            p.scopes
                .iter()
                .map(|s| {
                    let mut words = match &s.namespace {
                        Some(ns) => format!("Ingresses of namespace {ns}"),
                        None => "Ingresses of every namespace".to_string(),
                    };
                    if let Some(sel) = &s.selector {
                        words.push_str(&format!(" labelled {}", sel.text));
                    }
                    if !s.names.is_empty() {
                        let names: Vec<&str> = s.names.iter().map(|n| &**n).collect();
                        words.push_str(&format!(" named {}", names.join(", ")));
                    }
                    if !s.ignore.is_empty() {
                        let names: Vec<&str> = s.ignore.iter().map(|n| &**n).collect();
                        words.push_str(&format!(", except {}", names.join(", ")));
                    }
                    words
                })
                .collect()
        } else {
            Vec::new()
        },
        ingresses,
        findings: findings
            .iter()
            .filter(|f| {
                f.kind == Subject::Object(p.kind)
                    && *f.namespace == *ns
                    && *f.name == *name
                    && visible.finding(f)
            })
            .cloned()
            .collect(),
        events: if whole {
            Index::new(facts, data).events_of(p.kind.name(), ns, name, 20)
        } else {
            Vec::new()
        },
    })
}
