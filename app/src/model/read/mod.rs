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
pub mod issuer;
pub mod lists;
pub mod offer;
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
