//! The read model: what a caller sees of the fleet's cached data — which objects make up a
//! chain, the findings of a chain, the rows of each list with their filters, sort orders and
//! pages, and the chain views. Pure: the server's registry hands in each cluster's data and
//! findings and gets back view types; pages and the JSON API show the same ones.
//!
//! [`Visibility`] is the one place where a caller's [`View`] meets the fleet's data: every
//! list, detail and count here goes through it.
//!
//! - [`views`]: the filters of each list and the rows and views returned.
//! - [`chain`]: the objects of an Ingress's or Certificate's chain, and their findings.
//! - [`lists`]: the Ingress rows kept per cluster, and each list and detail built from them.
//! - [`sort`]: the sort orders of the lists.
//! - [`problems`]: the findings grouped by root cause along the chain.
//! - [`offer`]: whether an action is offered on an object, and why not.

pub mod chain;
pub mod gateways;
pub mod issuer;
pub mod lists;
pub mod offer;
pub mod policies;
pub mod problems;
pub mod progress;
pub mod sort;
pub mod views;

use crate::model::view::{Sight, View};
use crate::model::Finding;

/// What one caller sees of one cluster.
#[derive(Debug, Clone, Copy)]
pub struct Visibility<'a> {
    sight: &'a Sight,
}

impl<'a> Visibility<'a> {
    /// What `view` sees of `cluster`; None when it sees nothing there.
    pub fn of(view: &'a View, cluster: &str) -> Option<Self> {
        view.sight(cluster).map(|sight| Visibility { sight })
    }

    /// Whether the caller sees every namespace of the cluster (object counts per kind, findings
    /// about cluster-scoped objects).
    pub fn whole_cluster(&self) -> bool {
        self.sight.whole()
    }

    /// Whether objects in `namespace` are visible.
    pub fn namespace(&self, namespace: &str) -> bool {
        self.sight.read.contains(namespace)
    }

    /// Whether a finding of this cluster is visible: a namespaced one by its namespace, a
    /// cluster-wide one only with the whole cluster (see [`Finding::needs_whole_cluster`]).
    pub fn finding(&self, f: &Finding) -> bool {
        if f.needs_whole_cluster() {
            self.whole_cluster()
        } else if f.namespace.is_empty() {
            true
        } else {
            self.namespace(&f.namespace)
        }
    }
}

impl Visibility<'_> {
    /// The cluster-scoped objects this reader reaches through its own objects, as
    /// (kind, name): the ClusterIssuers its Certificates and Ingresses name and the
    /// IngressClasses its Ingresses name. A namespace-scoped reader's live revision follows
    /// these of the cluster's scope and no other, so that another tenant's ClusterIssuer
    /// changing tells it nothing.
    pub fn cluster_scoped_reached(
        &self,
        data: &crate::model::data::ClusterData,
    ) -> std::collections::BTreeSet<(crate::model::Kind, crate::model::text::Text)> {
        use crate::model::Kind;
        let cluster_issuer = |r: &crate::model::IssuerRef| {
            (Kind::from_name(&r.kind) == Some(Kind::ClusterIssuer))
                .then(|| (Kind::ClusterIssuer, r.name.clone()))
        };
        let mut out = std::collections::BTreeSet::new();
        for ing in data
            .ingresses
            .values()
            .filter(|i| self.namespace(&i.namespace))
        {
            out.extend(ing.issuer.as_deref().and_then(cluster_issuer));
            out.extend(ing.class.clone().map(|c| (Kind::IngressClass, c)));
        }
        for c in data
            .certificates
            .values()
            .filter(|c| self.namespace(&c.namespace))
        {
            out.extend(c.issuer.as_deref().and_then(cluster_issuer));
        }
        out
    }

    /// A number that moves when a finding this reader sees appears, goes, or changes its
    /// rule, object or severity: what is judged of their objects may change without any of
    /// them changing (the platform's configuration, a load balancer they do not see).
    pub fn findings_fingerprint(&self, findings: &[Finding]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for f in findings.iter().filter(|f| self.finding(f)) {
            (f.rule, f.kind, &f.namespace, &f.name, f.severity).hash(&mut h);
        }
        h.finish()
    }
}
