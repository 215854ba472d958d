//! The kinds Lookout watches (DESIGN.md §4), as a type: a misspelt kind does not compile, and
//! a `match` on it tells every place a new kind must be handled.

use serde::{Deserialize, Serialize};

/// One watched kind. Variants are in name order, so maps keyed by `Kind` list them as the
/// pages and `/api/v1/clusters` always have.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::VariantArray,
)]
pub enum Kind {
    Certificate,
    CertificateRequest,
    Challenge,
    ClusterIssuer,
    /// Kyverno's ClusterPolicy: a policy that may set the edit-in-place annotation.
    ClusterPolicy,
    /// Only `kube-system/cilium-config`.
    ConfigMap,
    Event,
    Gateway,
    /// Gateway API HTTPRoutes.
    HTTPRoute,
    Ingress,
    IngressClass,
    Issuer,
    /// Espejote's ManagedResource: a policy that may set the edit-in-place annotation.
    ManagedResource,
    /// Kyverno's MutatingPolicy.
    MutatingPolicy,
    Order,
    /// Kyverno's (namespaced) Policy.
    Policy,
    /// Only Cilium's LoadBalancer Services.
    Service,
}

impl Kind {
    /// Every kind, in name order.
    pub const ALL: &'static [Kind] = <Kind as strum::VariantArray>::VARIANTS;

    /// The Kubernetes kind name (`Ingress`, `CertificateRequest`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Certificate => "Certificate",
            Kind::CertificateRequest => "CertificateRequest",
            Kind::Challenge => "Challenge",
            Kind::ClusterIssuer => "ClusterIssuer",
            Kind::ClusterPolicy => "ClusterPolicy",
            Kind::ConfigMap => "ConfigMap",
            Kind::Event => "Event",
            Kind::Gateway => "Gateway",
            Kind::HTTPRoute => "HTTPRoute",
            Kind::Ingress => "Ingress",
            Kind::IngressClass => "IngressClass",
            Kind::Issuer => "Issuer",
            Kind::ManagedResource => "ManagedResource",
            Kind::MutatingPolicy => "MutatingPolicy",
            Kind::Policy => "Policy",
            Kind::Order => "Order",
            Kind::Service => "Service",
        }
    }
}

impl Kind {
    /// The kind named `name` (`Ingress`, …), if Lookout watches it.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_serializes_and_prints_as_its_kubernetes_name() {
        assert_eq!(
            serde_json::to_value(Kind::CertificateRequest).unwrap(),
            "CertificateRequest"
        );
        assert_eq!(Kind::IngressClass.to_string(), "IngressClass");
        assert_eq!(
            Kind::from_name("CertificateRequest"),
            Some(Kind::CertificateRequest)
        );
        assert_eq!(Kind::from_name("Cluster"), None);
        let mut sorted = [
            Kind::Service,
            Kind::Ingress,
            Kind::Certificate,
            Kind::ConfigMap,
        ];
        sorted.sort();
        let names: Vec<_> = sorted.iter().map(|k| k.name()).collect();
        let mut by_name = names.clone();
        by_name.sort();
        assert_eq!(names, by_name, "variants are declared in name order");
    }
}
