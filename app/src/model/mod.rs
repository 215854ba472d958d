//! The domain: compact views of cluster objects, their correlation, and the health rules.

pub mod budget;
pub mod certificate;
pub mod chain;
pub mod choice;
pub mod cluster;
pub mod csr;
pub mod data;
pub mod failure;
pub mod finding;
pub mod history;
pub mod ids;
pub mod infra;
pub mod ingress;
pub mod interner;
pub mod issuer;
pub mod kind;
pub mod links;
pub mod object;
pub mod policy;
pub mod probe;
pub mod read;
pub mod reasons;
pub mod refs;
pub mod route;
pub mod rule;
pub mod rules;
pub mod scope;
pub mod shim;
pub mod solvers;
pub mod text;
pub mod thresholds;
pub mod timeline;
pub mod view;

pub use cluster::{ClusterView, KindState, KindStatus, SyncState};
pub use finding::{Finding, FindingRef, Severity, Subject};
pub use ids::{ClusterName, Namespace};
pub use ingress::{IngressView, IssuerRef, TlsEntry};
pub use kind::Kind;
pub use rule::Rule;
pub use view::View;

/// The field manager of every change Lookout makes, as managedFields name it.
pub const FIELD_MANAGER: &str = "lookout";

use serde::{Deserialize, Serialize};

/// Identifies one namespaced object in the fleet.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectKey {
    pub cluster: ClusterName,
    pub namespace: Namespace,
    pub name: String,
}

/// One page of a longer list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Rows matching the query, across all pages.
    pub total: usize,
    /// 1-based page number.
    pub page: usize,
    pub per_page: usize,
}

impl<T> Page<T> {
    /// Cuts `page` (1-based) of `per_page` rows out of everything that matched.
    pub fn of(all: Vec<T>, page: usize, per_page: usize) -> Self {
        let total = all.len();
        let items = all
            .into_iter()
            .skip(page.saturating_sub(1) * per_page)
            .take(per_page)
            .collect();
        Page {
            items,
            total,
            page,
            per_page,
        }
    }

    pub fn pages(&self) -> usize {
        self.total.div_ceil(self.per_page.max(1)).max(1)
    }
}
