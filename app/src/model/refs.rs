//! References from one object to another, made of interned strings.

use serde::Serialize;

use super::text::Text;

/// Which issuer an object asks cert-manager for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct IssuerRef {
    /// `Issuer`, `ClusterIssuer`, or an external kind.
    pub kind: Text,
    pub name: Text,
    /// `cert-manager.io` for the built-in kinds.
    pub group: Text,
}

impl IssuerRef {
    /// Whether this names cert-manager's own Issuer or ClusterIssuer.
    pub fn is_cert_manager(&self) -> bool {
        (self.group.is_empty() || &*self.group == "cert-manager.io")
            && matches!(
                self.watched_kind(),
                Some(super::Kind::Issuer | super::Kind::ClusterIssuer)
            )
    }

    /// The kind it names, when Lookout watches it.
    pub fn watched_kind(&self) -> Option<super::Kind> {
        super::Kind::from_name(&self.kind)
    }

    /// Whether it names a ClusterIssuer (cluster-scoped: no namespace).
    pub fn cluster_scoped(&self) -> bool {
        self.watched_kind() == Some(super::Kind::ClusterIssuer)
    }
}
