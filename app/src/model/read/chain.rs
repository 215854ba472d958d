//! The objects that make up a chain (Ingress → Certificates → requests → Orders →
//! Challenges, and the issuers), the findings about them and their Events.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use super::Visibility;
use crate::model::certificate::CertificateView;
use crate::model::chain::Index;
use crate::model::infra::EventView;
use crate::model::{Finding, IngressView, IssuerRef};

/// (namespace, kind, name) of an object a finding can be about.
pub(crate) type ObjectRef = (String, String, String);

fn object(namespace: &str, kind: &str, name: &str) -> ObjectRef {
    (namespace.to_string(), kind.to_string(), name.to_string())
}

/// The issuer an object names: a ClusterIssuer has no namespace.
fn issuer(namespace: &str, r: &IssuerRef) -> ObjectRef {
    let namespace = if r.cluster_scoped() { "" } else { namespace };
    object(namespace, &r.kind, &r.name)
}

/// Adds the objects of a Certificate's chain: itself, its requests, Orders and Challenges,
/// and its issuer.
pub(crate) fn certificate_objects(
    idx: &Index<'_>,
    c: &CertificateView,
    out: &mut HashSet<ObjectRef>,
) {
    out.insert(object(&c.namespace, "Certificate", &c.name));
    if let Some(r) = &c.issuer {
        out.insert(issuer(&c.namespace, r));
    }
    for r in idx.requests_of(c) {
        out.insert(object(&r.namespace, "CertificateRequest", &r.name));
        for o in idx.orders_of(r) {
            out.insert(object(&o.namespace, "Order", &o.name));
            for ch in idx.challenges_of(o) {
                out.insert(object(&ch.namespace, "Challenge", &ch.name));
            }
        }
    }
}

/// The objects of an Ingress's chain: itself, the issuer it names and every Certificate's.
pub(crate) fn ingress_objects(idx: &Index<'_>, ing: &IngressView) -> HashSet<ObjectRef> {
    let mut out = HashSet::new();
    out.insert(object(&ing.namespace, "Ingress", &ing.name));
    if let Some(r) = &ing.issuer {
        out.insert(issuer(&ing.namespace, r));
    }
    // The policy meant to set its edit-in-place, while it is not "true": why it lacks it.
    if ing.edit_in_place.as_deref() != Some("true") {
        if let Some((p, _)) = crate::model::policy::responsible(idx.data, idx.setters(), ing) {
            out.insert(object(&p.namespace, p.kind.name(), &p.name));
        }
    }
    for c in idx.certificates_of(ing) {
        certificate_objects(idx, c, &mut out);
    }
    out
}

/// A cluster's findings by the object they are about, so a chain's findings are a few
/// lookups rather than a scan of every finding of the cluster per object.
pub(crate) struct FindingIndex<'a>(HashMap<(&'a str, &'a str, &'a str), Vec<&'a Finding>>);

impl<'a> FindingIndex<'a> {
    pub fn new(findings: &'a [Finding]) -> Self {
        Self::from_iter(findings)
    }

    /// The index of some of the findings (e.g. those a caller may see).
    pub fn from_refs(findings: &[&'a Finding]) -> Self {
        Self::from_iter(findings.iter().copied())
    }

    fn from_iter(findings: impl IntoIterator<Item = &'a Finding>) -> Self {
        let mut map: HashMap<_, Vec<&Finding>> = HashMap::new();
        for f in findings {
            map.entry((&*f.namespace, f.kind.name(), &*f.name))
                .or_default()
                .push(f);
        }
        FindingIndex(map)
    }

    /// The findings about any of `objects`, whoever may see them (for rows cached for every
    /// caller, which keep what each caller's visibility needs).
    pub fn of<'s>(
        &'s self,
        objects: &'s HashSet<ObjectRef>,
    ) -> impl Iterator<Item = &'a Finding> + 's {
        objects
            .iter()
            .filter_map(|(ns, kind, name)| self.0.get(&(ns.as_str(), kind.as_str(), name.as_str())))
            .flatten()
            .copied()
    }

    /// The findings about any of `objects` that the caller may see.
    pub fn about(&self, visible: &Visibility<'_>, objects: &HashSet<ObjectRef>) -> Vec<Finding> {
        self.of(objects)
            .filter(|f| visible.finding(f))
            .cloned()
            .collect()
    }
}

/// The Events about every object of a chain that `visible` sees, newest first, at most
/// 50: a cluster-scoped object's (its issuer) only with the whole cluster.
pub(crate) fn chain_events(
    idx: &Index<'_>,
    visible: &Visibility<'_>,
    objects: &HashSet<ObjectRef>,
) -> Vec<EventView> {
    let mut events = Vec::new();
    for (ns, kind, name) in objects {
        let seen = if ns.is_empty() {
            visible.whole_cluster()
        } else {
            visible.namespace(ns)
        };
        if seen {
            events.extend(idx.events_of(kind, ns, name, 20));
        }
    }
    events.sort_by_key(|e| std::cmp::Reverse(e.last_seen));
    events.truncate(50);
    events
}
