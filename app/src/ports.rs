//! The traits the server implements for the pages and the JSON API. Every read takes the
//! caller's [`Scope`]: there is no unscoped query.

use crate::model::{ClusterView, IngressView, ObjectKey, Page, Scope};

/// Filters of the Ingress list (`/ingresses`, `/api/v1/ingresses`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngressQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// Free text: name, namespace or host contains it.
    pub q: Option<String>,
    /// 1-based.
    pub page: usize,
    pub per_page: usize,
}

/// Reads the cached state of the fleet.
pub trait FleetReader: Send + Sync {
    /// The clusters the scope can see, in configuration order.
    fn clusters(&self, scope: &Scope) -> Vec<ClusterView>;
    /// Ingresses sorted by cluster, namespace, name.
    fn ingresses(&self, scope: &Scope, query: &IngressQuery) -> Page<IngressView>;
    /// One Ingress; None when it does not exist or is outside the scope (indistinguishable).
    fn ingress(&self, scope: &Scope, key: &ObjectKey) -> Option<IngressView>;
}
