//! Which Ingresses a policy is responsible for: the ones it reads, and the ones its selector
//! misses while it sets the annotation on their neighbours (same namespace, same issuer).

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use super::{Coverage, PolicyView};
use crate::model::data::ClusterData;
use crate::model::ingress::IngressView;
use crate::model::refs::IssuerRef;
use crate::model::text::Text;

/// Who set `"true"` on the Ingresses of a namespace asking one issuer: for each field
/// manager of the annotation, how many such Ingresses it holds and one of their names.
/// Built once per reading of a cluster, so that finding the policy responsible for an
/// Ingress its selector misses is a few lookups, not a scan of its namespace.
#[derive(Default)]
pub struct Setters<'d> {
    by_place: HashMap<Place<'d>, HashMap<&'d str, Held<'d>>>,
}

/// A namespace and the issuer its Ingresses ask.
type Place<'d> = (&'d str, Option<&'d IssuerRef>);
/// How many Ingresses a manager holds `"true"` on there, and one of their names.
type Held<'d> = (usize, &'d str);

impl<'d> Setters<'d> {
    pub fn of(data: &'d ClusterData) -> Self {
        let mut by_place: HashMap<Place<'d>, HashMap<&str, Held<'d>>> = HashMap::new();
        // Only where a policy sets the annotation: otherwise nobody asks.
        if data.all_policies().any(|p| p.sets_edit_in_place) {
            for ing in data
                .ingresses
                .values()
                .filter(|i| i.edit_in_place.as_deref() == Some("true"))
            {
                let place = by_place
                    .entry((&*ing.namespace, ing.issuer.as_deref()))
                    .or_default();
                for m in ing.edit_in_place_managers.iter() {
                    let held = place.entry(&**m).or_insert((0, &*ing.name));
                    held.0 += 1;
                }
            }
        }
        Setters { by_place }
    }

    /// Whether `p` set `"true"` on an Ingress other than `ing` of its namespace asking the
    /// same issuer.
    fn set_beside(&self, p: &PolicyView, ing: &IngressView) -> bool {
        self.by_place
            .get(&(&*ing.namespace, ing.issuer.as_deref()))
            .is_some_and(|managers| {
                managers
                    .iter()
                    .any(|(m, (count, one))| p.owns_as(m) && (*count > 1 || *one != &*ing.name))
            })
    }
}

/// Whether an Ingress asks cert-manager for a certificate (what an edit-in-place policy is
/// for).
fn asks(ing: &IngressView) -> bool {
    ing.issuer.is_some() || ing.tls_acme
}

/// The policy responsible for `ing`'s edit-in-place annotation, and how it covers it: one
/// that sets the annotation and reads the Ingress; else one whose selector or names miss it
/// while it set the annotation on another Ingress of the same namespace asking the same
/// issuer (the Ingress is one it is meant for: a label the newer Ingresses lack, a name
/// list not kept up). None for an Ingress that asks for no certificate.
pub fn responsible<'d>(
    data: &'d ClusterData,
    setters: &Setters<'_>,
    ing: &IngressView,
) -> Option<(&'d Arc<PolicyView>, Coverage)> {
    if !asks(ing) {
        return None;
    }
    let setting = || data.all_policies().filter(|p| p.sets_edit_in_place);
    if let Some(p) = setting().find(|p| p.coverage(ing) == Coverage::Selected) {
        return Some((p, Coverage::Selected));
    }
    setting()
        .filter(|p| p.coverage(ing) == Coverage::Missed)
        .find(|p| setters.set_beside(p, ing))
        .map(|p| (p, Coverage::Missed))
}

/// The policy responsible for an Ingress's annotation, as its page names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyRef {
    /// "Espejote ManagedResource platform/edit-in-place".
    pub label: String,
    pub kind: &'static str,
    pub namespace: Text,
    pub name: Text,
    /// `Ready`, the step that failed, or "no status yet".
    pub status: String,
    pub ready: bool,
    /// `reads` (its selector takes the Ingress in) or `misses`.
    pub coverage: &'static str,
    /// Its field manager owns the annotation on this Ingress.
    pub owns: bool,
    /// The reader sees where the policy lives (its namespace; the whole cluster for a
    /// cluster-scoped one), so repairing it is theirs to lead; a tenant's own move is the
    /// stop-gap on their Ingress. Set by the read port for its reader.
    pub repairable: bool,
}

impl PolicyRef {
    /// The policy responsible for `ing` ([`responsible`]).
    pub fn of(data: &ClusterData, ing: &IngressView) -> Option<PolicyRef> {
        let (p, coverage) = responsible(data, &Setters::of(data), ing)?;
        Some(PolicyRef {
            label: p.label(),
            kind: p.kind.name(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            status: p.status_text().to_string(),
            ready: p.ready(),
            coverage: match coverage {
                Coverage::Selected => "reads",
                _ => "misses",
            },
            owns: ing.edit_in_place_managers.iter().any(|m| p.owns_as(m)),
            repairable: false,
        })
    }
}

/// An Ingress a policy is responsible for, and how it covers it.
pub struct Covered<'d> {
    pub ingress: &'d Arc<IngressView>,
    pub coverage: Coverage,
}

impl Covered<'_> {
    /// The Ingress lacks `"true"`: missing, or a value cert-manager ignores.
    pub fn lacking(&self) -> bool {
        self.ingress.edit_in_place.as_deref() != Some("true")
    }

    /// The policy itself holds the annotation at a value other than `"true"`.
    pub fn held_by(&self, p: &PolicyView) -> bool {
        self.lacking()
            && self.ingress.edit_in_place.is_some()
            && self
                .ingress
                .edit_in_place_managers
                .iter()
                .any(|m| p.owns_as(m))
    }
}

/// The Ingresses `p` is responsible for ([`responsible`]), in the data's order.
pub fn covered<'d>(
    data: &'d ClusterData,
    setters: &Setters<'_>,
    p: &PolicyView,
) -> Vec<Covered<'d>> {
    data.ingresses
        .values()
        .filter_map(|ing| {
            let (q, coverage) = responsible(data, setters, ing)?;
            (q.kind == p.kind && q.namespace == p.namespace && q.name == p.name).then_some(
                Covered {
                    ingress: ing,
                    coverage,
                },
            )
        })
        .collect()
}
