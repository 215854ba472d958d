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
            && (&*self.kind == "Issuer" || &*self.kind == "ClusterIssuer")
    }
}
